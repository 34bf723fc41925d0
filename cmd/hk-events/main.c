/*
 * hk-events - the event and request log.  With no command it is the
 * daemon: it takes event and request records on events.sock (datagrams)
 * and writes them to the store in batches, logs each event on stderr,
 * and keeps both tables within their retention.  With a command (list,
 * tail, requests) it reads the store and prints; no daemon is needed.
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
#include "events.h"
#include "ipc.h"
#include "leader.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "store.h"

static const char usage_text[] =
    "usage: hk-events [-nv] [-d fd] [-f config]\n"
    "       hk-events [-v] [-f config] list [--json] [--kind kind] "
    "[--service service]\n"
    "                 [--since time] [-n count]\n"
    "       hk-events [-v] [-f config] tail [-f] [--json] [-n count]\n"
    "       hk-events [-v] [-f config] requests [--json] "
    "[--service service]\n"
    "                 [--since time] [--status code] [-n count]\n";

static void	usage(int) __attribute__((noreturn));
static void	setup(struct evd *);
static void	on_signal(struct loop *, int, void *);
static void	reload_config(struct evd *);
static int	serve(struct evd *, int);

static void
usage(int code)
{
	fputs(usage_text, code == EX_OK ? stdout : stderr);
	exit(code);
}

static void
setup(struct evd *d)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT };
	char err[STORE_ERR_LEN];

	signal(SIGPIPE, SIG_IGN);
	d->fd = -1;
	if ((d->rbuf = malloc(IPC_MSG_MAX + 1)) == NULL ||
	    (d->loop = loop_new()) == NULL)
		fatal(EX_OSERR, "unable to set up");
	if (loop_signals(d->loop, sigs, sizeof(sigs) / sizeof(sigs[0]),
	    on_signal, d) == -1)
		fatal(EX_OSERR, "unable to set up signals");
	loop_before_sleep(d->loop, ingest_before_sleep, d);
	if ((d->store = store_open(d->cfg.state, err, sizeof(err))) == NULL)
		fatalx(errno == EAGAIN ? EX_TEMPFAIL : EX_UNAVAILABLE,
		    "unable to open store %s: %s", d->cfg.state, err);
	if (leader_fence(d->store, err, sizeof(err)) == -1)
		fatalx(EX_CONFIG, "%s", err);
	if (mkdir(d->cfg.runtime_dir, 0755) == -1 && errno != EEXIST)
		fatal(EX_OSERR, "unable to create %s", d->cfg.runtime_dir);
	if (ingest_listen(d, err, sizeof(err)) == -1)
		fatalx(EX_OSERR, "unable to listen: %s", err);
	stats_listen(d);
}

static void
on_signal(struct loop *l, int sig, void *arg)
{
	struct evd *d = arg;

	if (sig == SIGHUP) {
		reload_config(d);
		return;
	}
	log_info("%s: stopping", strsignal(sig));
	notify_stopping();
	d->stopping = 1;
	loop_stop(l);
}

/* SIGHUP: reloadable keys (retention among them) apply, then a prune. */
static void
reload_config(struct evd *d)
{
	log_info("reloading");
	notify_reloading();
	if (config_reload(&d->cfg, d->config_path) == 0)
		ingest_prune(d->loop, d);
	notify_ready(-1);
}

static int
serve(struct evd *d, int fd)
{
	setup(d);
	if (notify_ready(fd) == -1)
		log_warn("unable to signal readiness");
	log_info("ready: listening on %s", d->sock_path);
	if (loop_run(d->loop) == -1)
		fatal(EX_OSERR, "unable to wait for events");
	ingest_close(d);
	stats_close(d);
	ingest_log_stats(d, "stopped");
	store_close(d->store);
	loop_free(d->loop);
	free(d->rbuf);
	return EX_OK;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct evd d;
	const char *errstr;
	int ch, check = 0, verbose = 0, fd = -1, daemon_flags = 0, code;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	memset(&d, 0, sizeof(d));
	while ((ch = getopt_long(argc, argv, "+d:f:hnv", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'd':
			fd = (int)strtonum(optarg, 0, INT_MAX, &errstr);
			if (errstr != NULL || notify_fd_valid(fd) == -1) {
				log_errorx("-d %s: not an open descriptor "
				    "above 2", optarg);
				usage(EX_USAGE);
			}
			daemon_flags = 1;
			break;
		case 'f':
			d.config_path = optarg;
			break;
		case 'h':
			usage(EX_OK);
		case 'n':
			check = daemon_flags = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage(EX_USAGE);
		}
	}
	log_verbose(verbose);
	if (optind < argc) {
		if (daemon_flags)
			usage(EX_USAGE);
		return query_main(d.config_path, argc - optind, argv + optind);
	}
	/* -n: say "configuration OK" and exit; a bad config exits at once. */
	if ((code = config_load_daemon(&d.cfg, d.config_path, check,
	    verbose)) != -1)
		return code;
	return serve(&d, fd);
}
