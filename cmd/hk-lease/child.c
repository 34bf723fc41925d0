/*
 * child.c - prog as hk-lease's child.  It is spawned only once the lease
 * is taken; an exec failure comes back through a close-on-exec pipe, so it
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
#include <sysexits.h>
#include <unistd.h>

#include "lease.h"
#include "log.h"

static void	child_exec(char **, int, pid_t, const sigset_t *)
		    __attribute__((noreturn));

/* In the child, between fork and exec (hk-lease has one thread). */
static void
child_exec(char **argv, int fd, pid_t parent, const sigset_t *mask)
{
	int e;

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

/* SIGCHLD: reaps every child; prog's status is kept. */
void
child_reap(struct lease *l)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		if (pid == l->child) {
			l->status = st;
			l->child = -1;
		}
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
