/*
 * hk-activate - the HTTP/1.1 activation gateway: routes public serverless
 * services by Host and /fn/<app>/<service>/, enforces the limits and
 * deadlines, parks requests during a cold start and forwards each request
 * exactly once.  Options, config, setup, readiness and the loop; the rest
 * is in the files named in activate.h.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "activate.h"
#include "evsink.h"
#include "leader.h"
#include "log.h"
#include "notify.h"

static const char usage_text[] =
    "usage: hk-activate [-mnv] [-d fd] [-f config] [-l address] "
    "[-t seconds]\n";

/* What a run does, besides serving (0): -n, -n -v, -m. */
#define RUN_CHECK	1
#define RUN_CHECK_KEYS	2
#define RUN_MOVE	3

struct gw		*gw;
static struct gw	 gw_state;

static void	usage(int) __attribute__((noreturn));
static int	options(int, char *[], const char **, int *);
static void	load_config(const char *);
static void	on_signal(struct loop *, int, void *);
static void	before_sleep(struct loop *, void *);
static void	drain_expired(struct loop *, void *);
static void	reload(void);
static void	setup(void);
static void	move(void) __attribute__((noreturn));

static void
usage(int code)
{
	fputs(usage_text, code == 0 ? stdout : stderr);
	exit(code);
}

static void
load_config(const char *listen)
{
	char err[PROXYPROTO_ERR_LEN];
	struct config_diag d;
	int code;

	if ((code = config_load_daemon(&gw->cfg, gw->cfg_path, 0, 0)) != -1)
		exit(code);
	memset(&d, 0, sizeof(d));
	if (listen != NULL && config_set_flag(&gw->cfg, "serverless_listen",
	    listen, &d) == -1) {
		log_errorx("-l %s: %s", listen, d.count > 0 ? d.msg[0] :
		    "invalid address");
		usage(EX_USAGE);
	}
	if (config_listen_address(&gw->cfg)[0] == '\0' &&
	    getenv("LISTEN_FDS") == NULL) {
		log_errorx("server.serverless_address: unset: nothing to "
		    "listen on");
		exit(EX_CONFIG);
	}
	if (conn_trust_load(err, sizeof(err)) == -1) {
		log_errorx("server.trusted_proxies: %s", err);	/* checked */
		exit(EX_CONFIG);
	}
}

/*
 * SIGHUP: the config's reloadable keys, then the routes; a move of the
 * gateway is refused (logged) and the rest goes on.
 */
static void
reload(void)
{
	char err[SPEC_ERR_LEN];

	log_info("reloading");
	notify_reloading();
	gwmove_reload();
	(void)config_reload(&gw->cfg, gw->cfg_path);
	page_load(1, 0);
	if (conn_trust_load(err, sizeof(err)) == -1)
		log_warnx("server.trusted_proxies: %s: kept as it was", err);
	(void)ctl_reload(err, sizeof(err));
	notify_ready(-1);
}

static void
drain_expired(struct loop *l, void *arg)
{
	(void)arg;
	log_info("drain period over: %zu connections closed", conn_count());
	loop_stop(l);
}

static void
on_signal(struct loop *l, int sig, void *arg)
{
	(void)arg;
	if (sig == SIGHUP) {
		reload();
		return;
	}
	if (gw->draining)
		return;
	log_info("stopping: draining for %d s", gw->drain_s);
	notify_stopping();
	gw->draining = 1;
	if (gw->lfd != -1) {
		loop_del_fd(l, gw->lfd);
		close(gw->lfd);
		gw->lfd = -1;
	}
	ctl_close_listener();
	conn_close_idle();
	if (conn_count() == 0)
		loop_stop(l);
	loop_timer_init(&gw->drain_timer, drain_expired, NULL);
	loop_timer_at(l, &gw->drain_timer, loop_now_ms(l) +
	    (int64_t)gw->drain_s * 1000);
}

static void
before_sleep(struct loop *l, void *arg)
{
	(void)arg;
	(void)l;
	records_flush(0);
	conn_trim();
}

static void
setup(void)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGTERM };
	char err[STORE_ERR_LEN];
	int bad;

	signal(SIGPIPE, SIG_IGN);
	if ((gw->loop = loop_new()) == NULL ||
	    loop_signals(gw->loop, sigs, 3, on_signal, NULL) == -1)
		fatal(EX_OSERR, "unable to set up the event loop");
	if ((gw->store = store_open(gw->cfg.state, err, sizeof(err))) == NULL)
		fatalx(EX_UNAVAILABLE, "unable to open store %s: %s",
		    gw->cfg.state, err);
	if (leader_fence(gw->store, err, sizeof(err)) == -1)
		fatalx(EX_CONFIG, "%s", err);
	gwmove_start(0);	/* before the listener: a refused move binds none */
	if ((gw->lfd = conn_listen(config_listen_address(&gw->cfg), err,
	    sizeof(err), &bad)) == -1)
		fatalx(bad ? EX_CONFIG : EX_OSERR, "unable to listen: %s",
		    err);
	if (route_reload(NULL, err, sizeof(err)) == -1)	/* none waits */
		fatalx(EX_UNAVAILABLE, "unable to load routes: %s", err);
	if ((gw->ev = evsink_open(gw->cfg.runtime_dir)) == NULL)
		fatal(EX_OSERR, "unable to open the event sink");
	if (ctl_listen(err, sizeof(err)) == -1)
		fatalx(EX_OSERR, "unable to listen on activate.sock: %s", err);
	ctl_scale_start();
	if (loop_add_fd(gw->loop, gw->lfd, LOOP_READ, conn_accept, NULL) == -1)
		fatal(EX_OSERR, "unable to watch the listener");
	loop_before_sleep(gw->loop, before_sleep, NULL);
	stats_listen();
}

/* -m: the gateway moved on purpose to this configuration's address. */
static void
move(void)
{
	char err[STORE_ERR_LEN];

	if ((gw->store = store_open(gw->cfg.state, err, sizeof(err))) == NULL)
		fatalx(EX_UNAVAILABLE, "unable to open store %s: %s",
		    gw->cfg.state, err);
	gwmove_start(1);
	store_close(gw->store);
	exit(EX_OK);
}

/* The command line; returns -d's fd (-1 if none). */
static int
options(int argc, char *argv[], const char **listen, int *check)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *errstr;
	int ch, verbose = 0, dfd = -1;

	while ((ch = getopt_long(argc, argv, "d:f:hl:mnt:v", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'd':
			dfd = (int)strtonum(optarg, 0, 1024, &errstr);
			if (errstr != NULL || notify_fd_valid(dfd) == -1) {
				log_errorx("-d %s: not an open fd", optarg);
				usage(EX_USAGE);
			}
			break;
		case 'f':
			gw->cfg_path = optarg;
			break;
		case 'h':
			usage(EX_OK);
		case 'l':
			*listen = optarg;
			break;
		case 'm':
		case 'n':
			if (*check != 0)
				usage(EX_USAGE);	/* one of -m and -n */
			*check = ch == 'm' ? RUN_MOVE : RUN_CHECK;
			break;
		case 't':
			gw->drain_s = (int)strtonum(optarg, 0, 3600, &errstr);
			if (errstr != NULL) {
				log_errorx("-t %s: drain seconds %s", optarg,
				    errstr);
				usage(EX_USAGE);
			}
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
	if (*check == RUN_CHECK && verbose)
		*check = RUN_CHECK_KEYS;	/* also print the effective keys */
	return dfd;
}

int
main(int argc, char *argv[])
{
	const char *listen = NULL;
	int i, check = 0, dfd;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	gw = &gw_state;
	gw->drain_s = DRAIN_DEFAULT_S;
	dfd = options(argc, argv, &listen, &check);
	load_config(listen);
	gw->listen_flag = listen;
	if (check == RUN_MOVE)
		move();
	page_load(0, check);
	if (check) {
		gwmove_check();
		if (check == RUN_CHECK_KEYS)
			config_print(stderr, &gw->cfg);
		fprintf(stderr, "configuration OK\n");
		return EX_OK;
	}
	gw->lfd = gw->ctl_fd = gw->sub_fd = gw->wake_fd = -1;
	gw->start_wall = wall_ms();
	for (i = 0; i < CS_COUNT; i++)
		TAILQ_INIT(&gw->conns[i]);
	TAILQ_INIT(&gw->free_conns);
	TAILQ_INIT(&gw->ctls);
	RB_INIT(&gw->services);
	setup();
	if (notify_ready(dfd) == -1)
		log_warn("unable to signal readiness");
	notify_status("serving %zu hosts", gw->nroutes);
	if (loop_run(gw->loop) == -1)
		fatal(EX_OSERR, "event loop");
	records_flush(1);
	stats_close();
	conn_free_all();
	splice_free_all();
	ctl_close();
	route_free();
	if (gw->lfd != -1)
		close(gw->lfd);
	evsink_close(gw->ev);
	store_close(gw->store);
	loop_free(gw->loop);
	log_info("stopped");
	return EX_OK;
}
