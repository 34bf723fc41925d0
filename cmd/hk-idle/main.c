/*
 * hk-idle - the idle policy: one timer per awake service; when it fires,
 * the gateway fences the service if it has been idle long enough, and
 * hk-scale puts it to sleep.
 *
 * main.c: options, config, setup, readiness, the loop; nothing else.
 */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "config.h"
#include "evsink.h"
#include "idle.h"
#include "ipc.h"
#include "leader.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "store.h"

static const char usage_text[] =
    "usage: hk-idle [-nv] [-d fd] [-f config]\n";

static void	usage(int) __attribute__((noreturn));
static void	sock_path(char *, const char *, const char *);
static void	setup(struct idle *);
static void	on_signal(struct loop *, int, void *);
static void	reload_config(struct idle *);
static void	teardown(struct idle *);

static void
usage(int code)
{
	fputs(usage_text, code == EX_OK ? stdout : stderr);
	exit(code);
}

/* runtime_dir is at most 80 bytes (hakopod.toml(5)): a name fits. */
static void
sock_path(char *dst, const char *dir, const char *name)
{
	if ((size_t)snprintf(dst, IDLE_PATH_MAX, "%s/%s", dir, name) >=
	    IDLE_PATH_MAX)
		fatalx(EX_SOFTWARE, "%s/%s: path too long", dir, name);
}

static void
setup(struct idle *ix)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT };
	char err[STORE_ERR_LEN];

	TAILQ_INIT(&ix->services);
	TAILQ_INIT(&ix->ctls);
	signal(SIGPIPE, SIG_IGN);
	if ((ix->rbuf = malloc(IPC_MSG_MAX + 1)) == NULL ||
	    (ix->loop = loop_new()) == NULL)
		fatal(EX_OSERR, "unable to set up");
	if (loop_signals(ix->loop, sigs, sizeof(sigs) / sizeof(sigs[0]),
	    on_signal, ix) == -1)
		fatal(EX_OSERR, "unable to set up signals");
	if ((ix->store = store_open(ix->cfg.state, err, sizeof(err))) == NULL)
		fatalx(EX_UNAVAILABLE, "unable to open store %s: %s",
		    ix->cfg.state, err);
	if (leader_fence(ix->store, err, sizeof(err)) == -1)
		fatalx(EX_CONFIG, "%s", err);
	if (mkdir(ix->cfg.runtime_dir, 0755) == -1 && errno != EEXIST)
		fatal(EX_OSERR, "unable to create %s", ix->cfg.runtime_dir);
	sock_path(ix->idle_path, ix->cfg.runtime_dir, "idle.sock");
	sock_path(ix->scale_path, ix->cfg.runtime_dir, "scale.sock");
	sock_path(ix->gw_path, ix->cfg.runtime_dir, "activate.sock");
	if ((ix->ev = evsink_open(ix->cfg.runtime_dir)) == NULL)
		fatal(EX_OSERR, "unable to open the events socket");
	if (policy_reload(ix) == -1)
		fatalx(EX_UNAVAILABLE, "unable to read services from the "
		    "store");
	if (ctl_listen(ix, err, sizeof(err)) == -1)
		fatalx(EX_OSERR, "unable to listen: %s", err);
	stats_listen(ix);
	sub_start(ix);
}

static void
on_signal(struct loop *l, int sig, void *arg)
{
	struct idle *ix = arg;

	(void)l;
	if (sig == SIGHUP) {
		reload_config(ix);
		return;
	}
	if (ix->stopping)
		return;
	log_info("%s: stopping", strsignal(sig));
	notify_stopping();
	ctl_close(ix);
	sub_close(ix);
	isvc_stop_all(ix);
}

/* SIGHUP: the configuration (config_reload), then the policies. */
static void
reload_config(struct idle *ix)
{
	log_info("reloading");
	notify_reloading();
	(void)config_reload(&ix->cfg, ix->config_path);
	policy_reload(ix);
	notify_ready(-1);
}

static void
teardown(struct idle *ix)
{
	struct isvc *s;

	ctl_close(ix);
	sub_close(ix);
	stats_close(ix);
	loop_timer_cancel(ix->loop, &ix->stop_timer);
	while ((s = TAILQ_FIRST(&ix->services)) != NULL)
		isvc_free(s);
	store_close(ix->store);
	evsink_close(ix->ev);
	loop_free(ix->loop);
	free(ix->rbuf);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct idle ix;
	const char *errstr;
	int ch, check = 0, verbose = 0, fd = -1, code;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	memset(&ix, 0, sizeof(ix));
	ix.listenfd = -1;
	ix.subfd = -1;
	while ((ch = getopt_long(argc, argv, "d:f:hnv", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'd':
			fd = (int)strtonum(optarg, 0, INT_MAX, &errstr);
			if (errstr != NULL || notify_fd_valid(fd) == -1) {
				log_errorx("-d %s: not an open descriptor "
				    "above 2", optarg);
				usage(EX_USAGE);
			}
			break;
		case 'f':
			ix.config_path = optarg;
			break;
		case 'h':
			usage(EX_OK);
		case 'n':
			check = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage(EX_USAGE);
		}
	}
	if (optind != argc)
		usage(EX_USAGE);
	log_verbose(verbose);
	/* -n: say "configuration OK" and exit; a bad config exits at once. */
	if ((code = config_load_daemon(&ix.cfg, ix.config_path, check,
	    verbose)) != -1)
		return code;
	setup(&ix);
	if (notify_ready(fd) == -1)
		log_warn("unable to signal readiness");
	log_info("ready: listening on %s", ix.idle_path);
	if (loop_run(ix.loop) == -1)
		fatal(EX_OSERR, "unable to wait for events");
	teardown(&ix);
	log_info("stopped");
	return EX_OK;
}
