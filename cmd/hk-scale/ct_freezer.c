/*
 * ct_freezer.c - idle_action = "suspend" of a container whose engine is
 * on this host: its own cgroup frozen and thawed here, as the exec
 * backend freezes a process's (exec_freezer.c), instead of the engine's
 * pause and unpause.  A thaw is then one write(2): about 0.2 ms to
 * cgroup2's cgroup.freeze here, where the engine's unpause took about
 * 146 ms (podman 4.3 and runc, which fork and exec on every call).
 *
 * The cgroup is found from the container's first process (State.Pid of
 * the engine's inspect): its line in /proc/PID/cgroup for cgroup2, else
 * for cgroup v1's freezer (what runc's own pause writes; a thaw there
 * took 3 to 15 ms on this kernel, cgroup2's 0.2: where runc keeps the
 * container in both, as on a hybrid host, cgroup2 is taken), and only
 * if its path names the
 * container's ID (libpod-ID, docker/ID, docker-ID.scope): the
 * container's own, never a parent that others share.  A node whose
 * engine is elsewhere (tcp://), or a container whose cgroup is not found
 * or not writable here (a rootless engine's), is paused by the engine.
 *
 * The engine is not told: its inspect and list say "running" for a
 * container frozen this way, and its stop would wait, the signal
 * pending, for the grace period.  So the backend thaws the cgroup before
 * any stop, kill or removal of its own (backend_container.c), and a
 * restart of hk-scale reads the freezer's state when it adopts one.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "exec.h"
#include "log.h"

static int	cg_ours(struct ct *, int);
static int	cg_file(const struct ct *, char *, size_t);

/*
 * Where the container's freezer is, into x->cg ("" if it is to be
 * paused by the engine): once its pid is known, at its start or
 * adoption.
 */
void
ct_cg_find(struct ct *x)
{
	char file[sizeof(x->cg) + 32];

	ct_cg_close(x);
	if (!x->node->local || x->pid <= 0 || strlen(x->id) < 12)
		return;
	if ((cg_ours(x, 0) == 0 || cg_ours(x, 1) == 0) &&
	    cg_file(x, file, sizeof(file)) == 0 &&
	    (x->cg_fd = open(file, O_WRONLY | O_CLOEXEC)) != -1)
		return;
	x->cg[0] = '\0';
}

/* Its freezer's file closed: the container is gone, or found anew. */
void
ct_cg_close(struct ct *x)
{
	if (x->cg_fd != -1)
		close(x->cg_fd);
	x->cg_fd = -1;
	x->cg[0] = '\0';
}

/* The container's cgroup in cgroup v1's freezer (v1) or cgroup2: 0. */
static int
cg_ours(struct ct *x, int v1)
{
	char file[sizeof(x->cg) + 32];

	if (freezer_cgroup_of((pid_t)x->pid, v1, x->cg, sizeof(x->cg)) == -1 ||
	    strstr(x->cg, x->id) == NULL)
		return -1;
	x->cg_v1 = v1;
	if (cg_file(x, file, sizeof(file)) == -1 ||
	    access(file, W_OK) == -1)
		return -1;
	return 0;
}

/* The freezer's file of the container's cgroup. */
static int
cg_file(const struct ct *x, char *file, size_t len)
{
	if ((size_t)snprintf(file, len, "%s/%s", x->cg, x->cg_v1 ?
	    "freezer.state" : "cgroup.freeze") >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * Frozen (on) or thawed: NULL, or why not.  cgroup v1 says FREEZING
 * until every task has stopped; the write has asked it, and a thaw
 * after it undoes it all the same.  The file is kept open from the
 * container's start: a thaw is one write(2), no path walked.
 */
const char *
ct_cg_set(struct ct *x, int on)
{
	const char *text;
	ssize_t n;

	if (x->cg_fd == -1)
		return "no cgroup";
	text = x->cg_v1 ? (on ? "FROZEN" : "THAWED") : (on ? "1" : "0");
	if ((n = write(x->cg_fd, text, strlen(text))) != (ssize_t)strlen(text))
		return strerror(n == -1 ? errno : EIO);
	x->cg_frozen = on;
	return NULL;
}

/* Whether the container's cgroup is frozen (or freezing) now. */
int
ct_cg_frozen(const struct ct *x)
{
	char file[sizeof(x->cg) + 32], buf[16];
	ssize_t n;
	int fd;

	if (x->cg[0] == '\0' || cg_file(x, file, sizeof(file)) == -1 ||
	    (fd = open(file, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return x->cg_v1 ? strncmp(buf, "THAWED", 6) != 0 : buf[0] == '1';
}

/*
 * Before a stop, kill or removal: a container frozen here runs again,
 * so that its signal is acted on at once.
 */
void
ct_cg_release(struct ct *x)
{
	const char *err;

	if (!x->cg_frozen)
		return;
	if ((err = ct_cg_set(x, 0)) != NULL && x->in != NULL)
		log_warnx("service=%s: unable to thaw the cgroup of %s: %s",
		    x->in->id, x->in->what, err);
}
