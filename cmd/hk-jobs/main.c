/*
 * hk-jobs - runs: one-shot invocations of a service with a JSON event,
 * each sent through the gateway's listener as a client's request, owned
 * here from Pending to their end and recorded in the store's runs table.
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
#include "ipc.h"
#include "jobs.h"
#include "leader.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "store.h"

static const char usage_text[] =
    "usage: hk-jobs [-nv] [-d fd] [-f config]\n";

static void	usage(int) __attribute__((noreturn));
static void	setup(struct jobs *);
static void	on_signal(struct loop *, int, void *);
static void	teardown(struct jobs *);
static int	reload_retry(void *);

static void
usage(int code)
{
	fputs(usage_text, code == EX_OK ? stdout : stderr);
	exit(code);
}

static void
setup(struct jobs *jx)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT };
	char err[STORE_ERR_LEN];

	TAILQ_INIT(&jx->runs);
	TAILQ_INIT(&jx->conns);
	signal(SIGPIPE, SIG_IGN);
	if ((jx->rbuf = malloc(IPC_MSG_MAX + 1)) == NULL ||
	    (jx->loop = loop_new()) == NULL)
		fatal(EX_OSERR, "unable to set up");
	if (loop_signals(jx->loop, sigs, sizeof(sigs) / sizeof(sigs[0]),
	    on_signal, jx) == -1)
		fatal(EX_OSERR, "unable to set up signals");
	if ((jx->store = store_open(jx->cfg.state, err, sizeof(err))) == NULL)
		fatalx(EX_UNAVAILABLE, "unable to open store %s: %s",
		    jx->cfg.state, err);
	if (leader_fence(jx->store, err, sizeof(err)) == -1)
		fatalx(EX_CONFIG, "%s", err);
	if (record_init(jx) == -1)
		fatal(EX_OSERR, "unable to set up");
	retry_init(&jx->reload_retry, jx->loop, reload_retry, jx,
	    "jobs and schedules");
	if (mkdir(jx->cfg.runtime_dir, 0755) == -1 && errno != EEXIST)
		fatal(EX_OSERR, "unable to create %s", jx->cfg.runtime_dir);
	/* runtime_dir is at most 80 bytes (hakopod.toml(5)): a name fits. */
	if ((size_t)snprintf(jx->jobs_path, sizeof(jx->jobs_path),
	    "%s/jobs.sock", jx->cfg.runtime_dir) >= sizeof(jx->jobs_path))
		fatalx(EX_SOFTWARE, "%s/jobs.sock: path too long",
		    jx->cfg.runtime_dir);
	/* Before the socket: no run of ours is in flight yet. */
	run_recover(jx);
	if (ctl_listen(jx, err, sizeof(err)) == -1)
		fatalx(EX_OSERR, "unable to listen: %s", err);
	stats_listen(jx);
	if (sched_init(jx, err, sizeof(err)) == -1)
		fatalx(EX_OSERR, "unable to set up schedules: %s", err);
	loop_timer_init(&jx->prune_timer, run_prune, jx);
	loop_timer_at(jx->loop, &jx->prune_timer, loop_now_ms(jx->loop));
	(void)jobs_reload(jx);
}

/*
 * SIGTERM: no new run; the runs in flight end as Failed now, recorded,
 * rather than being found unfinished by the next start.
 */
static void
on_signal(struct loop *l, int sig, void *arg)
{
	struct jobs *jx = arg;
	struct run *r;

	if (sig == SIGHUP) {
		log_info("reloading");
		notify_reloading();
		(void)config_reload(&jx->cfg, jx->config_path);
		(void)jobs_reload(jx);
		notify_ready(-1);
		return;
	}
	if (jx->stopping)
		return;
	jx->stopping = 1;
	log_info("%s: stopping", strsignal(sig));
	notify_stopping();
	ctl_close(jx);
	while ((r = TAILQ_FIRST(&jx->runs)) != NULL)
		run_end(r, RUN_FAILED, "hk-jobs stopped during the run");
	loop_stop(l);
}

/*
 * The jobs' new run_ids started and the schedules read again; what the
 * store refused (it was away: a PostgreSQL restart) is asked again until
 * it answers (lib/retry.h).
 */
int
jobs_reload(struct jobs *jx)
{
	int r = declared_dispatch(jx);

	if (sched_load(jx) == -1)
		r = -1;
	if (r == -1)
		retry_later(&jx->reload_retry);
	return r;
}

static int
reload_retry(void *arg)
{
	return jobs_reload(arg);
}

static void
teardown(struct jobs *jx)
{
	struct conn *c;

	ctl_close(jx);
	while ((c = TAILQ_FIRST(&jx->conns)) != NULL) {
		TAILQ_REMOVE(&jx->conns, c, entry);
		close(c->fd);
		free(c);
	}
	loop_timer_cancel(jx->loop, &jx->prune_timer);
	retry_cancel(&jx->reload_retry);
	stats_close(jx);
	sched_close(jx);
	owed_free(jx->owed);
	store_close(jx->store);
	loop_free(jx->loop);
	free(jx->rbuf);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct jobs jx;
	const char *errstr;
	int ch, check = 0, verbose = 0, fd = -1, code;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	memset(&jx, 0, sizeof(jx));
	jx.listenfd = -1;
	jx.sched_fd = -1;
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
			jx.config_path = optarg;
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
	if ((code = config_load_daemon(&jx.cfg, jx.config_path, check,
	    verbose)) != -1)
		return code;
	if (jx.cfg.serverless_address[0] == '\0')
		log_warnx("serverless_address unset: every run will fail");
	setup(&jx);
	if (notify_ready(fd) == -1)
		log_warn("unable to signal readiness");
	log_info("ready: listening on %s", jx.jobs_path);
	if (loop_run(jx.loop) == -1)
		fatal(EX_OSERR, "unable to wait for events");
	teardown(&jx);
	log_info("stopped");
	return EX_OK;
}
