/*
 * exec_template.c - the exec backend's Python template: an interpreter
 * that has already imported what the starters' handlers need, which
 * forks an instance at a wake (start_from = "python-template",
 * hk.toml(5)).  A fork of it answers in a few milliseconds where a new
 * interpreter takes tens.
 *
 * One template runs per interpreter (the command's first word) and user
 * (uid, gid and groups): hk-python-template, as that user (never root),
 * in a session and cgroup of its own, with no_new_privs, talking to us
 * over a SOCK_SEQPACKET socketpair (its fd 3): an entry of the exec
 * pool (exec_pool.c), which starts, restarts and ends it.  The protocol
 * is the script's own (libexec/hk-python-template.py).  At a start we
 * send the command, its directory and environment, with the instance's
 * output pipe, exec pipe and listener by SCM_RIGHTS; the template forks
 * the instance as our child (CLONE_PARENT; elsewhere than x86_64 by a child
 * that exits, reparented to us: PR_SET_CHILD_SUBREAPER, main.c), and
 * backend_exec.c supervises it as any child: its waitpid, stop, freeze,
 * deadlines and output.  The template forks ahead: a spare fork waits
 * for the next request (an unknown child of ours until then: inst_reap()
 * reaps it if it ends), and the template hands us its socket ("spare N"),
 * so that a start sends its request to the spare straight: neither the
 * template nor a fork is on its path, and its pid is known at once.  We
 * tell the template ("next", with the command but not its environment)
 * that we used it, or lost it: it makes the next one.  A start that
 * finds no spare asks the template itself, which forks.  The instance
 * waits for a byte on a pipe of ours until we have moved it into its
 * cgroup: no code of the service runs outside it.
 *
 * The exchange runs on hk-scale's loop: a request is sent without
 * waiting (a template that cannot take it at once gets none: the start
 * is bare), and the answer, in the order of the requests, comes to
 * tmpl_read() like any other event; the start waits for it, the loop
 * does not.  A template that does not answer within TMPL_ANSWER_MS is
 * replaced, and the starts waiting on it fail.
 *
 * A template is started when a service that wants it is loaded (at
 * hk-scale's start and at each reload: pool_load()), so that the first
 * wake already forks from it; a start that comes before it is ready runs
 * a bare exec.  It is restarted POOL_RESTART_MS after it dies (twice as
 * long each time while it dies before it is ready, up to
 * POOL_RESTART_MAX); ended when no loaded service wants it any more (and
 * no start waits on it), and with hk-scale.  It ends by itself at EOF on
 * its socket, when hk-scale dies: a new hk-scale replaces it with its own
 * and never finds a second one.  Its memory is reported by the metrics
 * (hk_template_memory_bytes) and by hk ps (pool_status()).
 *
 * The templates are entries of exec_pool.c's list; this file keeps what
 * is a template's own: its fds, its protocol and the starts waiting on
 * it (template_pool, its struct pool_ops).
 */
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "exec_pool.h"
#include "log.h"
#include "scale.h"

#define TMPL_ANSWER_S	"5"
#define TMPL_ANSWER_MS	5000	/* a spawn's answer */

/* A start waiting for its answer, in the order of the requests. */
struct tmpl_wait {
	TAILQ_ENTRY(tmpl_wait)	 entry;
	template_fn		*fn;		/* NULL: cancelled */
	void			*arg;
	struct tmpl_wait	**owner;	/* cleared when freed */
	int			 refused;	/* stopped: must not run */
	int			 procs;		/* its cgroup.procs, or -1 */
	int			 go;		/* a byte: run */
	pid_t			 pid;		/* a spare's: known */
	int64_t			 deadline;
};

struct tmpl {
	struct pool		 p;		/* first: the pool's entry */
	TAILQ_HEAD(, tmpl_wait)	 waits;
	TAILQ_HEAD(, tmpl_wait)	 spared;	/* sent to the spare */
	pid_t			 spare;		/* its spare fork, or 0 */
	int			 sparefd;	/* its socket, or -1 */
	struct loop_timer	 answer;	/* the first wait's deadline */
	struct loop_timer	 spared_now;	/* ends the spared list */
};

static struct tmpl *tmpl_of(struct pool *);
static void	tmpl_init(struct pool *);
static int	tmpl_fds(const struct pool *, int);
static const char *tmpl_read(struct pool *, int);
static void	tmpl_gone(struct pool *, const char *);
static int	tmpl_busy(const struct pool *);
static void	tmpl_drop(struct pool *);
static void	tmpl_late(struct loop *, void *);
static void	tmpl_spared(struct loop *, void *);
static int	spare_take(struct tmpl *, int, const char *);
static int	spare_send(struct tmpl *, const struct service_spec *,
		    const char *, size_t, const int *, int, pid_t *);
static void	tmpl_answered(struct tmpl *, const char *);
static void	wait_end(struct tmpl *, struct tmpl_wait *, pid_t,
		    const char *);
static void	wait_free(struct tmpl_wait *);
static char	*request(const struct service_spec *, char **, size_t *);
static int	send_request(int, const char *, size_t, const int *, int,
		    char *, size_t);

/* A template, for the pool: its interpreter as the runtime. */
const struct pool_ops template_pool = {
	.name =		"python template",
	.child_name =	"template",
	.program =	"hk-python-template",
	.env_extra =	NULL,
	.start_from =	START_FROM_PYTHON,
	.command =	spec_python_command,
	.socktype =	SOCK_SEQPACKET,
	.size =		sizeof(struct tmpl),
	.init =		tmpl_init,
	.prepare =	NULL,
	.child =	tmpl_fds,
	.spawned =	NULL,
	.read =		tmpl_read,
	.gone =		tmpl_gone,
	.busy =		tmpl_busy,
	.drop =		tmpl_drop,
};

/* The template whose pool entry p is (its first member). */
static struct tmpl *
tmpl_of(struct pool *p)
{
	return (struct tmpl *)(void *)p;
}

static void
tmpl_init(struct pool *p)
{
	struct tmpl *t = tmpl_of(p);

	t->sparefd = -1;
	TAILQ_INIT(&t->waits);
	TAILQ_INIT(&t->spared);
	loop_timer_init(&t->answer, tmpl_late, t);
	loop_timer_init(&t->spared_now, tmpl_spared, t);
}

/*
 * In the child: /dev/null as stdin, our stderr as stdout and stderr (its
 * own failures are hk-scale's to log), the socket as fd 3.
 */
static int
tmpl_fds(const struct pool *p, int sock)
{
	int null;

	(void)p;
	if ((null = open("/dev/null", O_RDONLY)) == -1 ||
	    dup2(null, 0) == -1 || dup2(2, 1) == -1 ||
	    (sock != 3 ? dup2(sock, 3) : fcntl(3, F_SETFD, 0)) == -1 ||
	    syscall(SYS_close_range, 4, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		return -1;
	return 0;
}

/*
 * "ready"; "pid N" or "error WHY", the answer to the first waiting start;
 * "spare N" with its socket; or EOF: it died (or said what it must not),
 * and the pool restarts it.
 */
static const char *
tmpl_read(struct pool *p, int fd)
{
	struct tmpl *t = tmpl_of(p);
	char buf[SCALE_REASON_MAX];
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr mh;
	struct cmsghdr *c;
	int passed = -1;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return NULL;
	if (n >= 0 && (c = CMSG_FIRSTHDR(&mh)) != NULL &&
	    c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&passed, CMSG_DATA(c), sizeof(int));
	if (n > 0)
		buf[n] = '\0';
	if (n > 6 && memcmp(buf, "spare ", 6) == 0 && p->ready &&
	    passed != -1 && !(mh.msg_flags & MSG_CTRUNC)) {
		if (spare_take(t, passed, buf + 6) == 0)
			return NULL;
		passed = -1;	/* closed */
	}
	if (passed != -1)
		close(passed);
	if (n == 5 && memcmp(buf, "ready", 5) == 0 && !p->ready) {
		pool_ready(p);
		return NULL;
	}
	if (n > 0 && p->ready && !TAILQ_EMPTY(&t->waits) &&
	    (strncmp(buf, "pid ", 4) == 0 || strncmp(buf, "error ", 6) ==
	    0)) {
		tmpl_answered(t, buf);
		return NULL;
	}
	return n == 0 ? "exited" : "broke the protocol";
}

/* The answer to the first waiting start: its pid, or why it failed. */
static void
tmpl_answered(struct tmpl *t, const char *answer)
{
	struct tmpl_wait *w = TAILQ_FIRST(&t->waits), *next;
	char err[SCALE_REASON_MAX];
	const char *e;
	long long v = 0;

	TAILQ_REMOVE(&t->waits, w, entry);
	if ((next = TAILQ_FIRST(&t->waits)) != NULL)
		loop_timer_at(t->p.sc->loop, &t->answer, next->deadline);
	else
		loop_timer_cancel(t->p.sc->loop, &t->answer);
	err[0] = '\0';
	if (strncmp(answer, "error ", 6) == 0)
		snprintf(err, sizeof(err), "python template: %.400s",
		    answer + 6);
	else if ((v = strtonum(answer + 4, 2, INT_MAX, &e)), e != NULL)
		snprintf(err, sizeof(err), "python template: pid %.32s: %s",
		    answer + 4, e);
	wait_end(t, w, err[0] == '\0' ? (pid_t)v : 0, err[0] == '\0' ?
	    NULL : err);
}

/*
 * w's outcome (w out of t's list): pid moved into its cgroup and let go
 * by a byte on go, then told to its caller's fn, whose bookkeeping (the
 * store's row, the gateway's news) runs beside the instance's start, not
 * before it; or err to fn.  A pid that must not run (a start cancelled,
 * or refused: stopped meanwhile) is killed before it runs anything of
 * its service (inst_reap() reaps it).
 */
static void
wait_end(struct tmpl *t, struct tmpl_wait *w, pid_t pid, const char *err)
{
	char pidbuf[16], why[SCALE_REASON_MAX];

	(void)t;
	if (err == NULL && (w->fn == NULL || w->refused)) {
		kill(pid, SIGKILL);
		err = "stopped before it ran";
	}
	if (err == NULL && w->procs != -1) {
		snprintf(pidbuf, sizeof(pidbuf), "%ld", (long)pid);
		if (write(w->procs, pidbuf, strlen(pidbuf)) == -1) {
			snprintf(why, sizeof(why), "cgroup of pid %ld: %s",
			    (long)pid, strerror(errno));
			kill(pid, SIGKILL);
			err = why;
		}
	}
	if (err == NULL && write(w->go, "g", 1) != 1) {
		snprintf(why, sizeof(why), "pid %ld: %s", (long)pid,
		    strerror(errno));
		kill(pid, SIGKILL);
		err = why;
	}
	if (w->fn != NULL)
		w->fn(w->arg, err == NULL ? pid : 0, err);
	wait_free(w);
}

static void
wait_free(struct tmpl_wait *w)
{
	if (w->owner != NULL)
		*w->owner = NULL;
	if (w->procs != -1)
		close(w->procs);
	close(w->go);	/* EOF: an instance not let go ends */
	free(w);
}

/* The first start waited TMPL_ANSWER_MS: the template is replaced. */
static void
tmpl_late(struct loop *l, void *arg)
{
	struct tmpl *t = arg;

	(void)l;
	pool_down(&t->p, "no answer within " TMPL_ANSWER_S " s: replaced");
	pool_restart_in(&t->p, POOL_RESTART_MS);
}

/*
 * Its process is gone (the pool ended it: why): its spare fork with it,
 * and the starts waiting on it fail.
 */
static void
tmpl_gone(struct pool *p, const char *why)
{
	struct tmpl *t = tmpl_of(p);
	struct tmpl_wait *w;
	char err[SCALE_REASON_MAX];

	loop_timer_cancel(p->sc->loop, &t->answer);
	if (t->sparefd != -1)
		close(t->sparefd);	/* EOF: the spare ends */
	t->sparefd = -1;
	t->spare = 0;
	snprintf(err, sizeof(err), "python template: %s", why != NULL ? why :
	    "ended");
	while ((w = TAILQ_FIRST(&t->waits)) != NULL) {
		TAILQ_REMOVE(&t->waits, w, entry);
		wait_end(t, w, 0, err);
	}
}

/* Starts wait on it: kept, unwanted, until they have their answers. */
static int
tmpl_busy(const struct pool *p)
{
	const struct tmpl *t = (const struct tmpl *)(const void *)p;

	return !TAILQ_EMPTY(&t->waits) || !TAILQ_EMPTY(&t->spared);
}

/* Before it is freed: the starts sent to its spare are told it ended. */
static void
tmpl_drop(struct pool *p)
{
	struct tmpl *t = tmpl_of(p);
	struct tmpl_wait *w;

	loop_timer_cancel(p->sc->loop, &t->spared_now);
	while ((w = TAILQ_FIRST(&t->spared)) != NULL) {
		TAILQ_REMOVE(&t->spared, w, entry);
		wait_end(t, w, 0, "python template: ended");
	}
}

/*
 * "spawn" NUL directory NUL argc NUL argv... env...: each string ends
 * with a NUL.  NULL when out of memory; wiped by the caller (secrets).
 */
static char *
request(const struct service_spec *sp, char **env, size_t *lenp)
{
	char argc[16], *buf, *p;
	size_t len, i;

	snprintf(argc, sizeof(argc), "%zu", sp->ncommand);
	len = sizeof("spawn") + strlen(sp->directory != NULL ?
	    sp->directory : "") + 1 + strlen(argc) + 1;
	for (i = 0; i < sp->ncommand; i++)
		len += strlen(sp->command[i]) + 1;
	for (i = 0; env[i] != NULL; i++)
		len += strlen(env[i]) + 1;
	if ((p = buf = malloc(len)) == NULL)
		return NULL;
#define PUT(s)	do { size_t n_ = strlen(s) + 1; memcpy(p, s, n_); \
		    p += n_; } while (0)
	PUT("spawn");
	PUT(sp->directory != NULL ? sp->directory : "");
	PUT(argc);
	for (i = 0; i < sp->ncommand; i++)
		PUT(sp->command[i]);
	for (i = 0; env[i] != NULL; i++)
		PUT(env[i]);
#undef PUT
	*lenp = len;
	return buf;
}

/*
 * Sends the request with its fds, without waiting: 0; 1 when the
 * template cannot take it now (its socket is full: a bare start then);
 * -1 with err.
 */
static int
send_request(int sock, const char *msg, size_t len, const int *fds,
    int nfds, char *err, size_t errlen)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct iovec iov = { (void *)(uintptr_t)msg, len };
	struct msghdr mh;

	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
	cm.hdr.cmsg_level = SOL_SOCKET;
	cm.hdr.cmsg_type = SCM_RIGHTS;
	cm.hdr.cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(&cm.hdr), fds, (size_t)nfds * sizeof(int));
	if (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != -1)
		return 0;
	if (errno == EAGAIN || errno == EMSGSIZE)
		return 1;
	snprintf(err, errlen, "python template: send: %s", strerror(errno));
	return -1;
}

/* "spare N" with its socket: kept until a start sends it its request. */
static int
spare_take(struct tmpl *t, int fd, const char *pid)
{
	const char *e;
	long long v;

	v = strtonum(pid, 2, INT_MAX, &e);
	if (e != NULL) {
		log_warnx("python template %s for %s: spare %.32s: %s",
		    t->p.key, t->p.user.name, pid, e);
		close(fd);
		return -1;
	}
	if (t->sparefd != -1)	/* not asked for: the older one goes */
		close(t->sparefd);
	t->sparefd = fd;
	t->spare = (pid_t)v;
	return 0;
}

/*
 * The request to t's spare, whose pid is then *pidp: 0.  -1 when there
 * is none or it is gone (the template forks, then).  Either way the
 * template hears "next" (what the spare runs, without its environment),
 * to make the next spare and compile the script for it.
 */
static int
spare_send(struct tmpl *t, const struct service_spec *sp, const char *msg,
    size_t len, const int *fds, int nfds, pid_t *pidp)
{
	char *next, *p;
	size_t nlen;
	int r;

	if (t->sparefd == -1)
		return -1;
	r = send_request(t->sparefd, msg, len, fds, nfds, NULL, 0) == 0 ?
	    0 : -1;
	log_debug("python template %s for %s: spare pid %ld %s", t->p.key,
	    t->p.user.name, (long)t->spare, r == 0 ? "takes the start" :
	    "is gone");
	close(t->sparefd);
	t->sparefd = -1;
	*pidp = t->spare;
	t->spare = 0;
	/* "spawn" NUL directory NUL argc NUL argv...: "next" and its head */
	nlen = sizeof("next");
	p = (char *)(uintptr_t)msg + sizeof("spawn");
	{
		size_t i, fields = 2 + sp->ncommand;

		for (i = 0; i < fields; i++)
			p += strlen(p) + 1;
	}
	nlen += (size_t)(p - (msg + sizeof("spawn")));
	if ((next = malloc(nlen)) != NULL) {
		memcpy(next, "next", sizeof("next"));
		memcpy(next + sizeof("next"), msg + sizeof("spawn"),
		    nlen - sizeof("next"));
		if (send(t->p.sock, next, nlen, MSG_NOSIGNAL | MSG_DONTWAIT) ==
		    -1)
			log_debug("python template %s for %s: next: %s",
			    t->p.key, t->p.user.name, strerror(errno));
		free(next);
	}
	return r;
}

/* The starts sent to a spare: their outcome, on the loop as an answer. */
static void
tmpl_spared(struct loop *l, void *arg)
{
	struct tmpl *t = arg;
	struct tmpl_wait *w;

	(void)l;
	while ((w = TAILQ_FIRST(&t->spared)) != NULL) {
		TAILQ_REMOVE(&t->spared, w, entry);
		wait_end(t, w, w->pid, NULL);
	}
}

/*
 * Starts an instance from the template of sp's interpreter and user u,
 * with env, stdout and stderr on outw, execw as the exec backend's child
 * has it (EOF once the instance runs the service's code, a byte if it
 * failed) and lfd (or -1) as fd 3; moved into its cgroup by procs (its
 * cgroup.procs, or -1: none) before it runs.  1: asked; fn(arg, pid,
 * NULL) follows on the loop once the instance runs, or fn(arg, 0, why),
 * unless template_cancel(*wp) comes first; template_refuse(*wp) makes
 * it the latter.  0 when no template is ready (one is started: the
 * caller execs meanwhile); -1 with err.
 */
int
template_spawn(struct scale *sc, const struct service_spec *sp,
    const struct user_ids *u, int switch_user, char **env, int outw,
    int execw, int lfd, int procs, template_fn *fn, void *arg,
    struct tmpl_wait **wp, char *err, size_t errlen)
{
	struct tmpl_wait *w;
	struct pool *p;
	struct tmpl *t;
	int fds[4], go[2], nfds = 3, r;
	char *msg;
	size_t len;

	/* never root, and ready: else a bare start */
	if ((p = pool_wake(&template_pool, sc, sp, u, switch_user)) == NULL)
		return 0;
	t = tmpl_of(p);
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (msg = request(sp, env, &len)) == NULL) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->procs = w->go = -1;
	if (pipe2(go, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		r = -1;
		goto done;
	}
	w->go = go[1];
	if (procs != -1 && (w->procs = fcntl(procs, F_DUPFD_CLOEXEC,
	    0)) == -1) {
		snprintf(err, errlen, "cgroup: %s", strerror(errno));
		close(go[0]);
		r = -1;
		goto done;
	}
	fds[0] = outw;
	fds[1] = execw;
	fds[2] = go[0];
	if (lfd != -1)
		fds[nfds++] = lfd;
	if (spare_send(t, sp, msg, len, fds, nfds, &w->pid) == 0) {
		close(go[0]);
		w->fn = fn;
		w->arg = arg;
		w->owner = wp;
		*wp = w;
		TAILQ_INSERT_TAIL(&t->spared, w, entry);
		loop_timer_at(sc->loop, &t->spared_now, loop_now_ms(sc->loop));
		w = NULL;
		r = 1;
		goto done;
	}
	r = send_request(t->p.sock, msg, len, fds, nfds, err, errlen);
	close(go[0]);
	if (r == 1)			/* busy: a bare start */
		r = 0;
	else if (r == -1) {
		pool_down(p, "failed a start: replaced");
		loop_timer_at(sc->loop, &p->restart, loop_now_ms(sc->loop) +
		    POOL_RESTART_MS);
	} else {
		w->fn = fn;
		w->arg = arg;
		w->owner = wp;
		*wp = w;
		w->deadline = loop_now_ms(sc->loop) + TMPL_ANSWER_MS;
		if (TAILQ_EMPTY(&t->waits))
			loop_timer_at(sc->loop, &t->answer, w->deadline);
		TAILQ_INSERT_TAIL(&t->waits, w, entry);
		w = NULL;
		r = 1;
	}
done:
	if (w != NULL) {
		if (w->procs != -1)
			close(w->procs);
		if (w->go != -1)
			close(w->go);
		free(w);
	}
	explicit_bzero(msg, len);
	free(msg);
	return r;
}

/*
 * The start waiting on w is stopped: its pid, when it comes, is killed
 * before it runs, and fn hears that it failed.
 */
void
template_refuse(struct tmpl_wait *w)
{
	if (w != NULL)
		w->refused = 1;
}

/*
 * The start waiting on w is given up (its instance is released): its fn
 * is never called, and its pid, when it comes, is killed.
 */
void
template_cancel(struct tmpl_wait *w)
{
	if (w == NULL)
		return;
	w->fn = NULL;
	w->arg = NULL;
	if (w->owner != NULL)
		*w->owner = NULL;
	w->owner = NULL;
}
