/*
 * watchdog.c - the deadlines that keep prog from outliving the lease,
 * kept by the kernel rather than by the loop.  The next holder starts its
 * own prog once this lease's expiry plus the grace period has passed
 * (store.h), so prog must have had SIGTERM when the TTL ran out without a
 * renewal and SIGKILL a grace period later, even while the loop is stuck
 * in a store call (a renewal on a dead socket, a hung file system).
 *
 * Two POSIX timers on CLOCK_MONOTONIC raise SIGALRM at those deadlines,
 * and the handler sends prog whichever signal is due.  It is hk-lease's
 * one handler that acts (the other signals come through the loop's
 * signalfd): kill(2) and clock_gettime(2) are async-signal-safe, it reads
 * the deadlines from the clock rather than from the timer that fired, so a
 * late SIGALRM finds nothing due, and the rest of hk-lease changes what it
 * reads only with SIGALRM blocked.  Each signal goes once.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "lease.h"
#include "log.h"

enum {
	WD_NONE,
	WD_TERM,		/* SIGTERM sent */
	WD_KILL,		/* SIGKILL sent */
};

static struct {
	timer_t			 term;
	timer_t			 kill;
	struct sigaction	 old;		/* SIGALRM as inherited */
	volatile pid_t		 pid;		/* prog, 0 = none */
	volatile int64_t	 term_at;	/* monotonic ms */
	volatile int64_t	 kill_at;
	volatile sig_atomic_t	 sent;
	int			 ready;
} wd;

static int64_t	wd_clock(void);
static void	wd_send(int64_t);
static void	on_alarm(int, siginfo_t *, void *);
static void	wd_hold(sigset_t *);
static void	wd_arm(timer_t, int64_t);

static int64_t
wd_clock(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whatever is due at now; with SIGALRM blocked or inside its handler. */
static void
wd_send(int64_t now)
{
	if (wd.pid <= 0)
		return;
	if (now >= wd.kill_at && wd.sent != WD_KILL) {
		(void)kill(wd.pid, SIGKILL);
		wd.sent = WD_KILL;
	} else if (now >= wd.term_at && wd.sent == WD_NONE) {
		(void)kill(wd.pid, SIGTERM);
		wd.sent = WD_TERM;
	}
}

static void
on_alarm(int sig, siginfo_t *si, void *ctx)
{
	int e = errno;

	(void)sig;
	(void)ctx;
	if (si->si_code == SI_TIMER)
		wd_send(wd_clock());
	errno = e;
}

static void
wd_hold(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	(void)sigprocmask(SIG_BLOCK, &set, old);
}

static void
wd_arm(timer_t t, int64_t at)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = at / 1000;
	its.it_value.tv_nsec = (at % 1000) * 1000000;
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;	/* zero would disarm */
	(void)timer_settime(t, TIMER_ABSTIME, &its, NULL);
}

/* Once, before any deadline; SIGALRM is unblocked for good. */
int
watchdog_init(void)
{
	struct sigevent sev;
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGALRM;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	if (timer_create(CLOCK_MONOTONIC, &sev, &wd.term) == -1)
		return -1;
	if (timer_create(CLOCK_MONOTONIC, &sev, &wd.kill) == -1) {
		(void)timer_delete(wd.term);
		return -1;
	}
	wd.term_at = wd.kill_at = INT64_MAX;
	if (sigaction(SIGALRM, &sa, &wd.old) == -1 ||
	    sigprocmask(SIG_UNBLOCK, &set, NULL) == -1) {
		(void)timer_delete(wd.term);
		(void)timer_delete(wd.kill);
		return -1;
	}
	wd.ready = 1;
	return 0;
}

/*
 * Moves the deadlines to term_at and kill_at, unless the old SIGTERM
 * deadline has passed (-1): once due, the deadlines only come closer.
 */
int
watchdog_extend(int64_t term_at, int64_t kill_at)
{
	sigset_t old;
	int r = 0;

	wd_hold(&old);
	if (wd_clock() >= wd.term_at || wd.sent != WD_NONE)
		r = -1;
	else {
		wd.term_at = term_at;
		wd.kill_at = kill_at;
		if (wd.ready) {
			wd_arm(wd.term, term_at);
			wd_arm(wd.kill, kill_at);
		}
	}
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* The lease is lost: SIGTERM now (if not sent), SIGKILL at kill_at. */
void
watchdog_stop(int64_t kill_at)
{
	sigset_t old;
	int64_t now;

	wd_hold(&old);
	now = wd_clock();
	if (wd.term_at > now)
		wd.term_at = now;
	if (wd.kill_at > kill_at)
		wd.kill_at = kill_at;
	if (wd.ready)
		wd_arm(wd.kill, wd.kill_at);
	wd_send(now);
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
}

/* prog's pid once spawned, 0 once reaped; a deadline past acts at once. */
void
watchdog_child(pid_t pid)
{
	sigset_t old;

	wd_hold(&old);
	wd.pid = pid;
	wd.sent = WD_NONE;
	wd_send(wd_clock());
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
}

/* SIGALRM blocked (1) or as before (0), around reaping prog. */
void
watchdog_hold(int on, sigset_t *old)
{
	if (on)
		wd_hold(old);
	else
		(void)sigprocmask(SIG_SETMASK, old, NULL);
}

/* In prog, before exec: SIGALRM as hk-lease was given it. */
void
watchdog_child_reset(void)
{
	if (wd.ready)
		(void)sigaction(SIGALRM, &wd.old, NULL);
}
