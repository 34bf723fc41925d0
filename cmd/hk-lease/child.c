/*
 * child.c - prog as hk-lease's child.  It is spawned only once the lease
 * is taken and the previous holder's prog may no longer run (the start
 * timer); an exec failure comes back through a close-on-exec pipe, so it
 * is reported (126, 127) after the acquisition.  prog gets the signal mask
 * hk-lease inherited and every fd hk-lease did not open itself, and dies
 * with SIGTERM if hk-lease dies first (PR_SET_PDEATHSIG): it never runs on
 * without a holder.  Its status maps to an exit code as in execline.
 */
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>
#include <unistd.h>

#include "lease.h"
#include "log.h"

static void	child_exec(char **, int, pid_t, const sigset_t *)
		    __attribute__((noreturn));

/*
 * The start timer: the lease is ours and nothing else runs under it.  Past
 * the TTL (the loop was held up), the next renewal finds the lease lost.
 */
void
child_start(struct loop *loop, void *arg)
{
	struct lease *l = arg;

	if (l->lost || l->started || renew_clock() >= l->valid_until)
		return;
	if (l->prev_pid > 0 && local_alive(l->prev_pid, l->prev_start)) {
		/* Past its grace: what its own hk-lease would have done. */
		log_warnx("the previous holder's prog, pid %ld, still runs "
		    "past its grace period: killing it",
		    (long)l->prev_pid);
		(void)kill(l->prev_pid, SIGKILL);
		(void)loop_timer_at(loop, &l->start, loop_now_ms(loop) +
		    LEASE_LOCAL_POLL_MS);
		return;
	}
	l->started = 1;
	if ((l->code = child_spawn(l, l->argv)) != 0)
		loop_stop(loop);
	else if (!l->join)
		local_record(l);	/* the holder's: a joiner's is not */
}

/* The previous holder's prog ran here: start once it is gone. */
void
child_poll_previous(struct loop *loop, void *arg)
{
	struct lease *l = arg;

	if (l->started || l->lost)
		return;
	if (!local_alive(l->prev_pid, l->prev_start)) {
		log_info("the previous holder's prog, pid %ld, is gone: "
		    "prog starts", (long)l->prev_pid);
		l->prev_pid = 0;
		(void)loop_timer_at(loop, &l->start, loop_now_ms(loop));
		return;
	}
	(void)loop_timer_at(loop, &l->poll, loop_now_ms(loop) +
	    LEASE_LOCAL_POLL_MS);
}

/*
 * Descriptors passed by the supervisor (sd_listen_fds(3): systemd's fd
 * store, given back to a restarted unit) pass through as the others do;
 * they are prog's, so LISTEN_PID, which names hk-lease, names prog.
 */
static void
child_listen_pid(pid_t parent)
{
	char buf[24];
	const char *v = getenv("LISTEN_PID");

	if (v == NULL || strtol(v, NULL, 10) != (long)parent)
		return;
	(void)snprintf(buf, sizeof(buf), "%ld", (long)getpid());
	(void)setenv("LISTEN_PID", buf, 1);
}

/*
 * Once prog has them: the descriptors LISTEN_FDS passed (3 and up) are
 * closed here, so that a listening socket prog closes is closed (its
 * port free to bind again), as if prog had been given it directly.
 */
static void
child_drop_listen_fds(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	long i, count;

	if (pid == NULL || n == NULL || strtol(pid, NULL, 10) !=
	    (long)getpid())
		return;
	count = strtol(n, NULL, 10);
	for (i = 0; i < count && i < 1024; i++)
		(void)close(3 + (int)i);
	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
}

/* In the child, between fork and exec (hk-lease has one thread). */
static void
child_exec(char **argv, int fd, pid_t parent, const sigset_t *mask)
{
	int e;

	watchdog_child_reset();
	child_listen_pid(parent);
	(void)sigprocmask(SIG_SETMASK, mask, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != parent)
		_exit(EX_TEMPFAIL);
	execvp(argv[0], argv);
	e = errno;
	if (write(fd, &e, sizeof(e)) == -1)
		_exit(126);
	_exit(e == ENOENT ? 127 : 126);
}

/* 0 when prog runs, else the exit code for a failure already logged. */
int
child_spawn(struct lease *l, char **argv)
{
	pid_t pid, self = getpid();
	ssize_t n;
	int p[2], e = 0;

	if (pipe2(p, O_CLOEXEC) == -1) {
		log_error("unable to create pipe");
		return EX_OSERR;
	}
	if ((pid = fork()) == -1) {
		log_error("unable to fork");
		(void)close(p[0]);
		(void)close(p[1]);
		return EX_OSERR;
	}
	if (pid == 0) {
		(void)close(p[0]);
		child_exec(argv, p[1], self, &l->mask);
	}
	(void)close(p[1]);
	do
		n = read(p[0], &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	(void)close(p[0]);
	if (n != (ssize_t)sizeof(e)) {
		l->child = pid;
		child_drop_listen_fds();
		watchdog_child(pid);
		log_debug("prog %s runs as pid %ld", argv[0], (long)pid);
		return 0;
	}
	(void)waitpid(pid, NULL, 0);
	errno = e;
	log_error("unable to %s %s", e == ENOENT ? "find" : "run", argv[0]);
	return e == ENOENT ? 127 : 126;
}

void
child_signal(struct lease *l, int sig)
{
	if (l->child > 0 && kill(l->child, sig) == -1 && errno != ESRCH)
		log_warn("unable to signal prog pid %ld", (long)l->child);
}

/*
 * SIGCHLD: reaps every child; prog's status is kept.  The watchdog must
 * not signal a pid once it is free for reuse: SIGALRM waits meanwhile.
 */
void
child_reap(struct lease *l)
{
	sigset_t old;
	pid_t pid;
	int st;

	watchdog_hold(1, &old);
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		if (pid == l->child) {
			l->status = st;
			l->child = -1;
			watchdog_child(0);
		}
	watchdog_hold(0, &old);
}

/* execline's rule: signal n is 128+n, prog's own 128+ becomes 128. */
int
child_exit_code(int st)
{
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	if (WIFEXITED(st))
		return WEXITSTATUS(st) >= 128 ? 128 : WEXITSTATUS(st);
	return EX_SOFTWARE;
}
