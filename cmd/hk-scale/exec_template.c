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
 * over a SOCK_SEQPACKET socketpair (its fd 3).  The protocol is the
 * script's own (libexec/hk-python-template.py).  At a start we send the
 * command, its directory and environment, with the instance's output
 * pipe, exec pipe and listener by SCM_RIGHTS; the template forks the
 * instance as our child (CLONE_PARENT; elsewhere than x86_64 by a child
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
 * hk-scale's start and at each reload: template_load()), so that the
 * first wake already forks from it; a start that comes before it is
 * ready runs a bare exec.  It is restarted TMPL_RESTART_MS after it dies
 * (twice as long each time while it dies before it is ready, up to
 * TMPL_RESTART_MAX); ended when no loaded service wants it any more, and
 * with hk-scale.  It ends by itself at EOF on its socket, when hk-scale
 * dies: a new hk-scale replaces it with its own and never finds a
 * second one.  Its memory is reported by the metrics
 * (hk_template_memory_bytes) and by hk ps (template_status()).
 *
 * The templates are this file's list, tmpls, alone.
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
#include "log.h"
#include "proc.h"
#include "libexec.h"
#include "scale.h"

#define TMPL_PROGRAM	"hk-python-template"
#define TMPL_ANSWER_S	"5"
#define TMPL_ANSWER_MS	5000	/* a spawn's answer */
#define TMPL_RESTART_MS	1000	/* after a death */
#define TMPL_RESTART_MAX 60000	/* doubled up to, while none is ready */
#define TMPL_MSG_MAX	(1 << 20)	/* the script's MSG_MAX */
#define TMPL_PYTHON_MAX	256

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
	TAILQ_ENTRY(tmpl)	 entry;
	TAILQ_HEAD(, tmpl_wait)	 waits;
	TAILQ_HEAD(, tmpl_wait)	 spared;	/* sent to the spare */
	struct scale		*sc;
	char			 python[TMPL_PYTHON_MAX];
	struct user_ids		 user;
	int			 switch_user;
	pid_t			 pid;		/* 0: not running */
	int			 sock;		/* -1: not running */
	int			 ready;		/* said "ready" */
	pid_t			 spare;		/* its spare fork, or 0 */
	int			 sparefd;	/* its socket, or -1 */
	int64_t			 backoff;	/* ms before the next start */
	int			 wanted;	/* by a loaded service */
	int			 seen;		/* at this load */
	char			 cg[FZ_PATH_MAX];	/* "": none */
	struct loop_timer	 restart;
	struct loop_timer	 answer;	/* the first wait's deadline */
	struct loop_timer	 spared_now;	/* ends the spared list */
};

static TAILQ_HEAD(, tmpl) tmpls = TAILQ_HEAD_INITIALIZER(tmpls);

static struct tmpl *tmpl_find(const char *, const struct user_ids *);
static void	tmpl_start(struct tmpl *);
static void	tmpl_child(const struct tmpl *, int, int, const char *,
		    char **) __attribute__((noreturn));
static char	**tmpl_env(const struct tmpl *);
static void	tmpl_read(struct loop *, int, int, void *);
static void	tmpl_down(struct tmpl *, const char *);
static void	tmpl_restart(struct loop *, void *);
static void	tmpl_late(struct loop *, void *);
static void	tmpl_spared(struct loop *, void *);
static int	spare_take(struct tmpl *, int, const char *);
static int	spare_send(struct tmpl *, const struct service_spec *,
		    const char *, size_t, const int *, int, pid_t *);
static void	tmpl_run(struct tmpl *);
static int	wants(struct scale *, const struct service_spec *,
		    struct user_ids *, int *);
static void	tmpl_answered(struct tmpl *, const char *);
static void	wait_end(struct tmpl *, struct tmpl_wait *, pid_t,
		    const char *);
static void	wait_free(struct tmpl_wait *);
static struct tmpl *tmpl_get(struct scale *, const char *,
		    const struct user_ids *, int);
static char	*request(const struct service_spec *, char **, size_t *);
static int	send_request(int, const char *, size_t, const int *, int,
		    char *, size_t);

static struct tmpl *
tmpl_find(const char *python, const struct user_ids *u)
{
	struct tmpl *t;

	TAILQ_FOREACH(t, &tmpls, entry)
		if (strcmp(t->python, python) == 0 && user_ids_same(&t->user, u))
			return t;
	return NULL;
}

/* The template's own environment: the instance's replaces it. */
static char **
tmpl_env(const struct tmpl *t)
{
	const char *path = getenv("PATH"), *lang = getenv("LANG");
	char **env;

	if ((env = calloc(6, sizeof(*env))) == NULL)
		return NULL;
	if (asprintf(&env[0], "PATH=%s", path != NULL ? path :
	    "/usr/local/bin:/usr/bin:/bin") == -1 ||
	    asprintf(&env[1], "HOME=%s", t->user.home) == -1 ||
	    asprintf(&env[2], "USER=%s", t->user.name) == -1 ||
	    asprintf(&env[3], "LOGNAME=%s", t->user.name) == -1 ||
	    asprintf(&env[4], "LANG=%s", lang != NULL ? lang : "C.UTF-8") ==
	    -1) {
		command_env_free(env);
		return NULL;
	}
	return env;
}

/*
 * After fork: its cgroup, a session, /dev/null as stdin, our stderr as
 * stdout and stderr (its own failures are hk-scale's to log), the socket
 * as fd 3, the user's ids without privileges, then the interpreter.
 */
static void
tmpl_child(const struct tmpl *t, int sock, int procs, const char *prog,
    char **env)
{
	sigset_t none;
	char *argv[3];
	int null;

	sigemptyset(&none);
	if (procs != -1 && write(procs, "0", 1) != 1) {
		dprintf(2, "hk-scale: template: join its cgroup: %s\n",
		    strerror(errno));
		_exit(127);
	}
	if (sigprocmask(SIG_SETMASK, &none, NULL) == -1 ||
	    signal(SIGPIPE, SIG_DFL) == SIG_ERR || setsid() == -1 ||
	    (null = open("/dev/null", O_RDONLY)) == -1 ||
	    dup2(null, 0) == -1 || dup2(2, 1) == -1 ||
	    (sock != 3 ? dup2(sock, 3) : fcntl(3, F_SETFD, 0)) == -1 ||
	    syscall(SYS_close_range, 4, ~0U, CLOSE_RANGE_CLOEXEC) == -1) {
		dprintf(2, "hk-scale: template: set up: %s\n",
		    strerror(errno));
		_exit(127);
	}
	if (exec_drop(&t->user, t->switch_user) == -1)
		_exit(127);
	argv[0] = (char *)(uintptr_t)t->python;
	argv[1] = (char *)(uintptr_t)prog;
	argv[2] = NULL;
	execvpe(t->python, argv, env);
	dprintf(2, "hk-scale: template: exec %s: %s\n", t->python,
	    strerror(errno));
	_exit(127);
}

/* Starts t; a failure is logged and retried as a death is. */
static void
tmpl_start(struct tmpl *t)
{
	char prog[PATH_MAX], err[SCALE_REASON_MAX];
	int sv[2], cg[2] = { -1, -1 };
	char **env;
	pid_t pid;

	if (libexec_find(TMPL_PROGRAM, R_OK, prog, sizeof(prog)) == -1) {
		log_warnx("python template: %s not found beside hk-scale nor "
		    "in %s", TMPL_PROGRAM, libexec_dir());
		return;
	}
	if ((env = tmpl_env(t)) == NULL) {
		log_warnx("python template: out of memory");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("python template: socketpair");
		command_env_free(env);
		return;
	}
	if (freezer_make(t->sc, t->cg, sizeof(t->cg), cg, err,
	    sizeof(err)) == -1) {
		log_warnx("python template: %s", err);
		goto fail;
	}
	if ((pid = fork()) == -1) {
		log_warn("python template: fork");
		goto fail;
	}
	if (pid == 0)
		tmpl_child(t, sv[1], cg[0], prog, env);
	close(sv[1]);
	if (cg[0] != -1)
		close(cg[0]);
	if (cg[1] != -1)
		close(cg[1]);
	command_env_free(env);
	t->pid = pid;
	t->sock = sv[0];
	t->ready = 0;
	if (loop_add_fd(t->sc->loop, t->sock, LOOP_READ, tmpl_read, t) == -1)
		log_warn("python template: unable to watch pid %ld",
		    (long)pid);
	log_info("python template %s for %s: started pid %ld", t->python,
	    t->user.name, (long)pid);
	return;
fail:
	close(sv[0]);
	close(sv[1]);
	if (cg[0] != -1)
		close(cg[0]);
	if (cg[1] != -1)
		close(cg[1]);
	if (t->cg[0] != '\0')
		freezer_remove(t->sc, t->cg);
	t->cg[0] = '\0';
	command_env_free(env);
}

/*
 * "ready"; "pid N" or "error WHY", the answer to the first waiting start;
 * or EOF: it died (or said what it must not).
 */
static void
tmpl_read(struct loop *l, int fd, int mask, void *arg)
{
	struct tmpl *t = arg;
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

	(void)l;
	(void)mask;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n >= 0 && (c = CMSG_FIRSTHDR(&mh)) != NULL &&
	    c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&passed, CMSG_DATA(c), sizeof(int));
	if (n > 0)
		buf[n] = '\0';
	if (n > 6 && memcmp(buf, "spare ", 6) == 0 && t->ready &&
	    passed != -1 && !(mh.msg_flags & MSG_CTRUNC)) {
		if (spare_take(t, passed, buf + 6) == 0)
			return;
		passed = -1;	/* closed */
	}
	if (passed != -1)
		close(passed);
	if (n == 5 && memcmp(buf, "ready", 5) == 0 && !t->ready) {
		t->ready = 1;
		t->backoff = TMPL_RESTART_MS;
		log_info("python template %s for %s: pid %ld ready, %lld kB",
		    t->python, t->user.name, (long)t->pid,
		    (long long)(proc_rss_bytes(t->pid) / 1024));
		return;
	}
	if (n > 0 && t->ready && !TAILQ_EMPTY(&t->waits) &&
	    (strncmp(buf, "pid ", 4) == 0 || strncmp(buf, "error ", 6) ==
	    0)) {
		tmpl_answered(t, buf);
		return;
	}
	/* One that never got ready (no python3, an import that fails)
	 * is tried less and less often. */
	if (!t->ready)
		t->backoff = t->backoff * 2 > TMPL_RESTART_MAX ?
		    TMPL_RESTART_MAX : t->backoff * 2;
	tmpl_down(t, n == 0 ? "exited" : "broke the protocol");
	if (!t->sc->stopping && t->wanted)
		loop_timer_at(t->sc->loop, &t->restart,
		    loop_now_ms(t->sc->loop) + t->backoff);
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
		loop_timer_at(t->sc->loop, &t->answer, next->deadline);
	else
		loop_timer_cancel(t->sc->loop, &t->answer);
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

	tmpl_down(t, "no answer within " TMPL_ANSWER_S " s: replaced");
	if (!t->sc->stopping && t->wanted)
		loop_timer_at(l, &t->restart, loop_now_ms(l) +
		    TMPL_RESTART_MS);
}

/* Ends t's process (and what of it is left in its cgroup). */
static void
tmpl_down(struct tmpl *t, const char *why)
{
	struct tmpl_wait *w;
	char err[SCALE_REASON_MAX];

	if (t->sock == -1)
		return;
	log_info("python template %s for %s: pid %ld %s", t->python,
	    t->user.name, (long)t->pid, why);
	loop_close_fd(t->sc->loop, &t->sock);
	loop_timer_cancel(t->sc->loop, &t->answer);
	if (t->pid > 0)
		kill(t->pid, SIGKILL);	/* inst_reap() reaps it */
	t->pid = 0;
	t->ready = 0;
	if (t->sparefd != -1)
		close(t->sparefd);	/* EOF: the spare ends */
	t->sparefd = -1;
	t->spare = 0;
	if (t->cg[0] != '\0') {
		freezer_end(t->cg);
		freezer_remove(t->sc, t->cg);
		t->cg[0] = '\0';
	}
	snprintf(err, sizeof(err), "python template: %s", why);
	while ((w = TAILQ_FIRST(&t->waits)) != NULL) {
		TAILQ_REMOVE(&t->waits, w, entry);
		wait_end(t, w, 0, err);
	}
}

static void
tmpl_restart(struct loop *l, void *arg)
{
	struct tmpl *t = arg;

	(void)l;
	if (t->sock == -1 && !t->sc->stopping && t->wanted)
		tmpl_start(t);
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

/* The template of python and u, made if there is none (NULL: no memory). */
static struct tmpl *
tmpl_get(struct scale *sc, const char *python, const struct user_ids *u,
    int switch_user)
{
	struct tmpl *t;

	if ((t = tmpl_find(python, u)) != NULL)
		return t;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->sc = sc;
	strlcpy(t->python, python, sizeof(t->python));
	t->user = *u;
	t->switch_user = switch_user;
	t->sock = -1;
	t->sparefd = -1;
	t->backoff = TMPL_RESTART_MS;
	TAILQ_INIT(&t->waits);
	TAILQ_INIT(&t->spared);
	loop_timer_init(&t->restart, tmpl_restart, t);
	loop_timer_init(&t->answer, tmpl_late, t);
	loop_timer_init(&t->spared_now, tmpl_spared, t);
	TAILQ_INSERT_TAIL(&tmpls, t, entry);
	return t;
}

/* Started unless it runs or waits for its restart. */
static void
tmpl_run(struct tmpl *t)
{
	if (t->sock != -1 || loop_timer_armed(&t->restart) ||
	    t->sc->stopping)
		return;
	tmpl_start(t);
	if (t->sock == -1) {	/* logged; not at every start */
		loop_timer_at(t->sc->loop, &t->restart,
		    loop_now_ms(t->sc->loop) + t->backoff);
		t->backoff = t->backoff * 2 > TMPL_RESTART_MAX ?
		    TMPL_RESTART_MAX : t->backoff * 2;
	}
}

/* The whether and whom of sp's template; 0: it has none. */
static int
wants(struct scale *sc, const struct service_spec *sp, struct user_ids *u,
    int *switch_user)
{
	char err[SCALE_REASON_MAX];

	if (sp->backend != BACKEND_EXEC || !sp->serverless ||
	    backend_find(BACKEND_EXEC) == NULL ||
	    sp->policy.start_from != START_FROM_PYTHON ||
	    !spec_python_command(sp->command, sp->ncommand) ||
	    strlen(sp->command[0]) >= TMPL_PYTHON_MAX)
		return 0;
	if (command_user(sc, sp, u, switch_user, err, sizeof(err)) == -1)
		return 0;	/* its start says why */
	return u->uid != 0;	/* never root: a bare start */
}

/*
 * At a load of the services (hk-scale's start, a reload): first NULL
 * and 0, then each service, then NULL and 1 (a load that read every
 * service), which ends the templates no service wants.  The
 * template of a service that wants one is started now, so that its
 * first wake forks from it.
 */
void
template_load(struct scale *sc, const struct service_spec *sp, int end)
{
	struct user_ids u;
	struct tmpl *t, *tmp;
	int sw;

	if (sp != NULL) {
		if (!wants(sc, sp, &u, &sw) || (t = tmpl_get(sc,
		    sp->command[0], &u, sw)) == NULL)
			return;
		t->wanted = t->seen = 1;
		tmpl_run(t);
		return;
	}
	TAILQ_FOREACH_SAFE(t, &tmpls, entry, tmp) {
		if (!end)
			t->seen = 0;
		else if (!(t->wanted = t->seen) && TAILQ_EMPTY(&t->waits) &&
		    TAILQ_EMPTY(&t->spared)) {
			loop_timer_cancel(sc->loop, &t->restart);
			loop_timer_cancel(sc->loop, &t->spared_now);
			tmpl_down(t, "no longer wanted: ended");
			TAILQ_REMOVE(&tmpls, t, entry);
			free(t);
		}
	}
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
		    t->python, t->user.name, pid, e);
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
	log_debug("python template %s for %s: spare pid %ld %s", t->python,
	    t->user.name, (long)t->spare, r == 0 ? "takes the start" :
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
		if (send(t->sock, next, nlen, MSG_NOSIGNAL | MSG_DONTWAIT) ==
		    -1)
			log_debug("python template %s for %s: next: %s",
			    t->python, t->user.name, strerror(errno));
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
	struct tmpl *t;
	int fds[4], go[2], nfds = 3, r;
	char *msg;
	size_t len;

	if (u->uid == 0 || strlen(sp->command[0]) >= TMPL_PYTHON_MAX)
		return 0;	/* never root: a bare start */
	if ((t = tmpl_get(sc, sp->command[0], u, switch_user)) == NULL)
		return 0;
	t->wanted = 1;
	tmpl_run(t);
	if (!t->ready)
		return 0;
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
	r = send_request(t->sock, msg, len, fds, nfds, err, errlen);
	close(go[0]);
	if (r == 1)			/* busy: a bare start */
		r = 0;
	else if (r == -1) {
		tmpl_down(t, "failed a start: replaced");
		loop_timer_at(sc->loop, &t->restart, loop_now_ms(sc->loop) +
		    TMPL_RESTART_MS);
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

/* hk_template_memory_bytes: each running template's resident memory. */
void
template_metrics(struct metrics_out *o)
{
	const char *l[] = { "runtime", NULL, "user", NULL, "pid", NULL, NULL };
	char pid[16];
	struct tmpl *t;

	metrics_family(o, "hk_template_memory_bytes", "gauge",
	    "Resident memory of each Python template (start_from = "
	    "\"python-template\"), shared by the instances it forks.");
	TAILQ_FOREACH(t, &tmpls, entry) {
		if (t->pid <= 0)
			continue;
		snprintf(pid, sizeof(pid), "%ld", (long)t->pid);
		l[1] = t->python;
		l[3] = t->user.name;
		l[5] = pid;
		metrics_u64(o, "hk_template_memory_bytes", l,
		    (uint64_t)proc_rss_bytes(t->pid));
	}
}

/*
 * For the status of scale.sock (hk ps): each template, running or
 * waiting for its restart, with its resident memory.
 */
json_t *
template_status(void)
{
	json_t *all = json_array();
	struct tmpl *t;

	TAILQ_FOREACH(t, &tmpls, entry)
		json_array_append_new(all, json_pack("{s:s, s:s, s:I, s:b, "
		    "s:I}", "runtime", t->python, "user", t->user.name, "pid",
		    (json_int_t)t->pid, "ready", t->ready, "memory_bytes",
		    (json_int_t)(t->pid > 0 ? proc_rss_bytes(t->pid) : 0)));
	return all;
}

/* The end: every template goes with hk-scale. */
void
template_shutdown(struct scale *sc)
{
	struct tmpl_wait *w;
	struct tmpl *t;

	while ((t = TAILQ_FIRST(&tmpls)) != NULL) {
		loop_timer_cancel(sc->loop, &t->restart);
		loop_timer_cancel(sc->loop, &t->spared_now);
		tmpl_down(t, "ended");
		while ((w = TAILQ_FIRST(&t->spared)) != NULL) {
			TAILQ_REMOVE(&t->spared, w, entry);
			wait_end(t, w, 0, "python template: ended");
		}
		TAILQ_REMOVE(&tmpls, t, entry);
		free(t);
	}
}
