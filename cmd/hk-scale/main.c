/*
 * hk-scale - the actuator: starts and stops service instances through
 * their backends, probes their readiness, limits concurrent starts, keeps
 * always-on services up, and tells its subscribers on scale.sock.
 *
 * main.c: options, config, setup, readiness, the loop; nothing else.
 */
#include <sys/prctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
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
#include "ipc.h"
#include "leader.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "scale.h"
#include "secret_check.h"
#include "store.h"
#include "xlisten.h"

static const char usage_text[] =
    "usage: hk-scale [-nv] [-d fd] [-f config] [-g seconds]\n";

static void	usage(int) __attribute__((noreturn));
static void	open_stdio(void);
static void	setup(struct scale *);
static void	on_signal(struct loop *, int, void *);
static void	reload_config(struct scale *);
static void	before_sleep(struct loop *, void *);
static void	teardown(struct scale *);

static void
usage(int code)
{
	fputs(usage_text, code == EX_OK ? stdout : stderr);
	exit(code);
}

/* Closed standard fds would be taken by pipes and given to children. */
static void
open_stdio(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", O_RDWR) != fd)
			fatal(EX_OSERR, "unable to open /dev/null");
}

static void
setup(struct scale *sc)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT, SIGCHLD };
	char err[STORE_ERR_LEN], kerr[SECRET_ERR_LEN];
	struct service *s;

	TAILQ_INIT(&sc->services);
	TAILQ_INIT(&sc->queue);
	TAILQ_INIT(&sc->insts);
	TAILQ_INIT(&sc->conns);
	open_stdio();
	signal(SIGPIPE, SIG_IGN);
	/* Orphans of our services are reaped by us, not PID 1. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("unable to become a subreaper");
	/* Instances run as other users: root, or the capabilities. */
	if (!(sc->can_switch = user_can_switch()))
		log_info("neither root nor CAP_SETUID and CAP_SETGID: "
		    "instances run as our own user");
	else if (!user_can_kill())
		log_warnx("no CAP_KILL: instances of other users cannot be "
		    "stopped");
	if (gethostname(sc->node, sizeof(sc->node)) == -1)
		strlcpy(sc->node, "localhost", sizeof(sc->node));
	sc->node[sizeof(sc->node) - 1] = '\0';
	if ((sc->rbuf = malloc(IPC_MSG_MAX + 1)) == NULL ||
	    (sc->loop = loop_new()) == NULL)
		fatal(EX_OSERR, "unable to set up");
	if (loop_signals(sc->loop, sigs, sizeof(sigs) / sizeof(sigs[0]),
	    on_signal, sc) == -1)
		fatal(EX_OSERR, "unable to set up signals");
	loop_before_sleep(sc->loop, before_sleep, sc);
	if ((sc->store = store_open(sc->cfg.state, err, sizeof(err))) == NULL)
		fatalx(EX_UNAVAILABLE, "unable to open store %s: %s",
		    sc->cfg.state, err);
	if (leader_fence(sc->store, err, sizeof(err)) == -1)
		fatalx(EX_CONFIG, "%s", err);
	/* Its instances stopped within the grace of a lost lease. */
	leader_bound(sc->store, 1);
	switch (secret_key_check(sc->store, sc->cfg.secret_key_file, 0, NULL,
	    kerr, sizeof(kerr))) {
	case 1:
		fatalx(EX_CONFIG, "secret_key_file: %s", kerr);
	case -1:
		fatalx(EX_UNAVAILABLE, "%s", kerr);
	}
	if (due_init(sc) == -1)
		fatal(EX_OSERR, "unable to set up");
	if (mkdir(sc->cfg.runtime_dir, 0755) == -1 && errno != EEXIST)
		fatal(EX_OSERR, "unable to create %s", sc->cfg.runtime_dir);
	if ((sc->ev = evsink_open(sc->cfg.runtime_dir)) == NULL)
		log_warn("unable to open the event sink: events are dropped");
	if (backends_setup(sc, err, sizeof(err)) == -1)
		fatalx(EX_CONFIG, "%s", err);
	if (scale_reload(sc, 0) == -1)
		fatalx(EX_UNAVAILABLE, "unable to read services from the "
		    "store");
	xlisten_restore();
	adopt_all(sc);
	backends_init(sc);
	if (ctl_listen(sc, err, sizeof(err)) == -1)
		fatalx(EX_OSERR, "unable to listen: %s", err);
	stats_listen(sc);
	TAILQ_FOREACH(s, &sc->services, entry)
		service_converge(s);
}

static void
on_signal(struct loop *l, int sig, void *arg)
{
	struct scale *sc = arg;

	(void)l;
	switch (sig) {
	case SIGCHLD:
		inst_reap(sc);
		break;
	case SIGHUP:
		reload_config(sc);
		break;
	default:
		log_info("%s: stopping", strsignal(sig));
		scale_shutdown(sc);
		break;
	}
}

/* SIGHUP: max_concurrent_starts applies; state and runtime_dir do not. */
static void
reload_config(struct scale *sc)
{
	if (sc->stopping)
		return;
	log_info("reloading");
	notify_reloading();
	(void)config_reload(&sc->cfg, sc->config_path);
	scale_reload(sc, 1);
	notify_ready(-1);
}

static void
before_sleep(struct loop *l, void *arg)
{
	struct scale *sc = arg;

	(void)l;
	queue_kick(sc);
	ctl_reap(sc);
}

static void
teardown(struct scale *sc)
{
	struct service *s;

	ctl_close(sc);
	ctl_reap(sc);
	stats_close(sc);
	sc->stopping = 2;
	while ((s = TAILQ_FIRST(&sc->services)) != NULL)
		service_free(s);
	inst_teardown(sc);
	backends_teardown(sc);
	evsink_close(sc->ev);
	owed_free(sc->owed);
	store_close(sc->store);
	loop_free(sc->loop);
	free(sc->rbuf);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct scale sc;
	const char *errstr;
	int ch, check = 0, verbose = 0, fd = -1, code;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	memset(&sc, 0, sizeof(sc));
	sc.grace = SCALE_GRACE_DEFAULT;
	sc.listenfd = -1;
	while ((ch = getopt_long(argc, argv, "d:f:g:hnv", longopts,
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
			sc.config_path = optarg;
			break;
		case 'g':
			sc.grace = (int)strtonum(optarg, 1, 3600, &errstr);
			if (errstr != NULL) {
				log_errorx("-g %s: %s (1..3600)", optarg,
				    errstr);
				usage(EX_USAGE);
			}
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
	if ((code = config_load_daemon(&sc.cfg, sc.config_path, check,
	    verbose)) != -1)
		return code;
	setup(&sc);
	if (notify_ready(fd) == -1)
		log_warn("unable to signal readiness");
	log_info("ready: listening on %s", sc.sock_path);
	if (loop_run(sc.loop) == -1)
		fatal(EX_OSERR, "unable to wait for events");
	teardown(&sc);
	log_info("stopped");
	return EX_OK;
}
