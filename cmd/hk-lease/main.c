/*
 * hk-lease - runs prog only while it holds the installation-wide lease
 * NAME: takes it in the state store (a second holder is refused with 75),
 * waits until the previous holder's prog may no longer run if that holder
 * did not release the lease, runs prog as its child with
 * HAKOPOD_LEASE_EPOCH and HAKOPOD_LEASE_NAME, renews the lease, stops prog
 * if the lease is lost (75), and exits with prog's status once it ends,
 * releasing the lease.  A chainloader in the s6-setlock manner: fds it did
 * not open pass through to prog untouched.
 *
 * main.c: options, config, store, acquisition, the loop; nothing else.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "evsink.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "store.h"

static const char usage_text[] =
    "usage: hk-lease [-v] [-j | -w] [-f config] [-t ttl] [-g grace] name prog "
    "[argument ...]\n";

static void	usage(int) __attribute__((noreturn));
static int64_t	seconds(const char *, long long, long long, const char *);
static int	valid_name(const char *);
static int	open_store(struct lease *, const char *);
static void	rfc3339(int64_t, char *, size_t);
static int64_t	acquire(struct lease *, const char *);
static int	acquire_try(struct lease *, const char *, const char *,
		    struct store_lease *);
static int	run(struct lease *, char **, int64_t);
static void	on_signal(struct loop *, int, void *);
static int	options(struct lease *, int, char **, const char **);
static void	release(struct lease *, int);

static void
usage(int code)
{
	fputs(usage_text, code == EX_OK ? stdout : stderr);
	exit(code);
}

static int64_t
seconds(const char *arg, long long min, long long max, const char *what)
{
	const char *errstr;
	long long v;

	v = strtonum(arg, min, max, &errstr);
	if (errstr != NULL) {
		log_errorx("%s %s: %s (%lld..%lld seconds)", what, arg, errstr,
		    min, max);
		usage(EX_USAGE);
	}
	return (int64_t)v * 1000;
}

/* As the store wants it (store.h): it also names a lock file. */
static int
valid_name(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= STORE_NAME_MAX &&
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") == n && strchr("._-", name[0]) == NULL;
}

/* The operator config names the store; this process gets its own. */
static int
open_store(struct lease *l, const char *config_path)
{
	struct server_config cfg;
	struct config_diag diag;
	char err[STORE_ERR_LEN];
	size_t i;
	int missing = 0;

	memset(&diag, 0, sizeof(diag));
	if (config_load_server(&cfg, config_path, &diag, &missing) == -1) {
		for (i = 0; i < diag.count && i < CONFIG_DIAG_MAX; i++)
			fprintf(stderr, "%s\n", diag.msg[i]);
		return missing ? EX_NOINPUT : EX_CONFIG;
	}
	if ((l->store = store_open(cfg.state, err, sizeof(err))) == NULL) {
		log_errorx("unable to open store: %s", err);
		return errno == EINVAL ? EX_CONFIG : errno == EAGAIN ?
		    EX_TEMPFAIL : EX_UNAVAILABLE;
	}
	/*
	 * A holder's waits are bounded once it holds the lock; a joiner
	 * holds none, and a standby none yet: a store cut off must not hold
	 * their checks past the TTL either.
	 */
	store_bound(l->store, STORE_LEASE_WAIT(l->ttl_ms));
	l->ev = evsink_open(cfg.runtime_dir);
	(void)strlcpy(l->rundir, cfg.runtime_dir, sizeof(l->rundir));
	return EX_OK;
}

static void
rfc3339(int64_t ms, char *buf, size_t size)
{
	struct tm tm;
	time_t t = (time_t)(ms / 1000);

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(buf, size, "@%jd", (intmax_t)t);
}

/*
 * One attempt: 0 taken, or 1 held elsewhere (-w: the caller tries again);
 * else it exits, 75 when the lease is held elsewhere or the store busy.
 */
static int
acquire_try(struct lease *l, const char *name, const char *holder,
    struct store_lease *cur)
{
	char msg[STORE_ERR_LEN + STORE_HOLDER_MAX + 128], since[32];
	int r, code = EX_SOFTWARE;

	r = store_lease_acquire(l->store, name, holder, l->ttl_ms, l->grace_ms,
	    cur);
	if (r == -1) {
		(void)snprintf(msg, sizeof(msg), "unable to acquire lease %s: "
		    "%s", name, store_error(l->store));
		code = store_busy(l->store) ? EX_TEMPFAIL : EX_UNAVAILABLE;
	} else if (r == 1 && cur->holder[0] != '\0') {
		rfc3339(cur->acquired_at, since, sizeof(since));
		(void)snprintf(msg, sizeof(msg), "lease %s is held by %s since "
		    "%s (epoch %jd%s)", name, cur->holder, since,
		    (intmax_t)cur->epoch, cur->expires_at > store_now_ms() ?
		    "" : "; its row has expired: a new holder may not have "
		    "written it yet");
		code = EX_TEMPFAIL;
	} else if (r == 1) {
		(void)snprintf(msg, sizeof(msg), "lease %s is held by a "
		    "holder that has not written its row yet", name);
		code = EX_TEMPFAIL;
	}
	if (r == 0)
		return 0;
	if (l->wait && (r == 1 || store_busy(l->store))) {
		log_debug("%s: waiting", msg);
		return 1;
	}
	store_close(l->store);
	evsink_close(l->ev);
	fatalx(code, "%s", msg);
}

/*
 * Takes the lease, or exits: 75 when it is held elsewhere.  With -w, a
 * standby: tries again every third of the TTL until the lease is free.
 * Returns when the attempt that took it began, from which its TTL runs.
 */
static int64_t
acquire(struct lease *l, const char *name)
{
	char host[HOST_NAME_MAX + 1], holder[STORE_HOLDER_MAX + 1];
	struct store_lease cur;
	struct timespec ts;
	int64_t start, every = l->ttl_ms / 3 > 0 ? l->ttl_ms / 3 : 1;
	int told = 0;

	if (gethostname(host, sizeof(host)) == -1)
		(void)strlcpy(host, "unknown", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	(void)snprintf(holder, sizeof(holder), "host=%s pid=%ld", host,
	    (long)getpid());
	ts.tv_sec = every / 1000;
	ts.tv_nsec = (every % 1000) * 1000000L;
	for (;;) {
		start = renew_clock();
		if (acquire_try(l, name, holder, &cur) == 0)
			break;
		if (!told++)
			log_info("lease %s is held by %s (epoch %jd): waiting "
			    "for it", name, cur.holder[0] != '\0' ?
			    cur.holder : "a holder with no row yet",
			    (intmax_t)cur.epoch);
		(void)nanosleep(&ts, NULL);
	}
	l->row = cur;
	/* Whole ms: a deadline of the loop may fire up to 1 ms early. */
	l->start_at = renew_clock() + (cur.wait_ms > 0 ? cur.wait_ms + 1 : 0);
	log_info("lease %s acquired by %s (epoch %jd)", name, holder,
	    (intmax_t)cur.epoch);
	if (cur.wait_ms > 0)
		log_info("lease %s was not released: prog starts in %jd ms, "
		    "once the previous holder's may no longer run", name,
		    (intmax_t)cur.wait_ms);
	if (cur.wait_ms > 0 && local_previous(l, &l->prev_pid,
	    &l->prev_start))
		log_info("lease %s: the previous holder's prog ran here as "
		    "pid %ld: prog starts as soon as it is gone", name,
		    (long)l->prev_pid);
	renew_event(l, "LeaseAcquired", NULL);
	return start;
}

static void
on_signal(struct loop *loop, int sig, void *arg)
{
	struct lease *l = arg;

	if (sig != SIGCHLD && l->started) {
		log_debug("passing signal %d to prog", sig);
		child_signal(l, sig);
	} else if (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT) {
		log_info("lease %s: signal %d before prog started: giving "
		    "the lease up", l->row.name, sig);
		l->quit = sig;
		loop_stop(loop);
	} else if (sig == SIGCHLD) {
		child_reap(l);
		if (l->started && l->child == -1) {
			renew_prog_ended(l);
			loop_stop(loop);
		}
	}
}

/* From the acquisition to prog's end: the exit code. */
static int
run(struct lease *l, char **argv, int64_t start)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP,
	    SIGQUIT, SIGUSR1, SIGUSR2 };
	char epoch[24], ttl[24];

	(void)snprintf(epoch, sizeof(epoch), "%jd", (intmax_t)l->row.epoch);
	(void)snprintf(ttl, sizeof(ttl), "%jd", (intmax_t)l->ttl_ms);
	if (sigprocmask(SIG_BLOCK, NULL, &l->mask) == -1 ||
	    (l->loop = loop_new()) == NULL ||
	    loop_signals(l->loop, sigs, sizeof(sigs) / sizeof(sigs[0]),
	    on_signal, l) == -1 ||
	    setenv("HAKOPOD_LEASE_EPOCH", epoch, 1) == -1 ||
	    setenv("HAKOPOD_LEASE_NAME", l->row.name, 1) == -1 ||
	    setenv("HAKOPOD_LEASE_TTL_MS", ttl, 1) == -1 ||
	    watchdog_init() == -1) {
		log_error("unable to set up");
		return EX_OSERR;
	}
	l->argv = argv;
	loop_timer_init(&l->start, child_start, l);
	if (renew_start(l, start) == -1) {
		renew_lose(l, "the TTL passed during the acquisition");
		return EX_TEMPFAIL;
	}
	(void)loop_timer_at(l->loop, &l->start, l->start_at);
	if (l->prev_pid > 0) {
		loop_timer_init(&l->poll, child_poll_previous, l);
		(void)loop_timer_at(l->loop, &l->poll, loop_now_ms(l->loop));
	}
	if (loop_run(l->loop) == -1) {
		log_error("unable to run the loop");
		renew_lose(l, "the event loop failed");
		return EX_OSERR;
	}
	if (l->quit != 0)
		return 128 + l->quit;
	if (l->code != 0)
		return l->code;
	return l->lost ? EX_TEMPFAIL : child_exit_code(l->status);
}

/* The command line; returns the index of name in argv. */
static int
options(struct lease *l, int argc, char *argv[], const char **config_path)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, verbose = 0;

	while ((ch = getopt_long(argc, argv, "+f:g:hjt:vw", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'f':
			*config_path = optarg;
			break;
		case 'g':
			l->grace_ms = seconds(optarg, 0, LEASE_GRACE_MAX,
			    "grace");
			break;
		case 'h':
			usage(EX_OK);
		case 'j':
			l->join = 1;
			break;
		case 't':
			l->ttl_ms = seconds(optarg, 1, LEASE_TTL_MAX, "ttl");
			break;
		case 'v':
			verbose = 1;
			break;
		case 'w':
			l->wait = 1;
			break;
		default:
			usage(EX_USAGE);
		}
	}
	if (argc - optind < 2)
		usage(EX_USAGE);
	if (l->join && l->wait) {
		log_errorx("-j and -w: a joiner always waits for this host's "
		    "holder");
		usage(EX_USAGE);
	}
	log_verbose(verbose);
	if (!valid_name(argv[optind])) {
		log_errorx("lease name %s: expected 1..%d characters of "
		    "[A-Za-z0-9._-], the first a letter or digit",
		    argv[optind], STORE_NAME_MAX);
		usage(EX_USAGE);
	}
	return optind;
}

/*
 * After prog: the lease goes back, unless it is already lost.  Given up
 * before prog started, it is not marked released: closing the store drops
 * the lock, and the row still makes the next holder wait as long as this
 * one had to (store.h).
 */
static void
release(struct lease *l, int code)
{
	if (l->lost || l->join)
		return;
	if (!l->started) {
		log_info("lease %s given up (epoch %jd)", l->row.name,
		    (intmax_t)l->row.epoch);
		return;
	}
	if (store_lease_release(l->store, &l->row) == -1)
		log_warnx("unable to release lease %s: %s", l->row.name,
		    store_error(l->store));
	else
		log_info("lease %s released (epoch %jd): exit %d",
		    l->row.name, (intmax_t)l->row.epoch, code);
}

int
main(int argc, char *argv[])
{
	struct lease l;
	const char *config_path = NULL;
	int64_t start;
	int i, code;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	memset(&l, 0, sizeof(l));
	l.child = -1;
	l.ttl_ms = LEASE_TTL_DEFAULT * 1000;
	l.grace_ms = LEASE_GRACE_DEFAULT * 1000;
	i = options(&l, argc, argv, &config_path);
	if ((code = open_store(&l, config_path)) != EX_OK)
		return code;
	if (l.join) {
		(void)strlcpy(l.row.name, argv[i], sizeof(l.row.name));
		(void)join_wait(&l);
		start = renew_clock();
		l.start_at = start;
	} else
		start = acquire(&l, argv[i]);
	code = run(&l, argv + i + 1, start);
	release(&l, code);
	store_close(l.store);
	evsink_close(l.ev);
	loop_free(l.loop);
	return code;
}
