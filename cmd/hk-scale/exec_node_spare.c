/*
 * exec_node_spare.c - the exec backend's Node spares: a Node process
 * started ahead, idle in its event loop, that becomes an instance at a
 * wake (start_from = "node-spare", hk.toml(5)).  V8 cannot fork once it
 * runs, so where the Python template forks (exec_template.c), a spare is
 * handed over whole, and another is started for the next wake.
 *
 * One spare waits per node binary (the command's first word) and user
 * (uid, gid and groups): hk-node-spare, as that user (never root), in a
 * session and cgroup of its own, with no_new_privs; our child, as an
 * instance is.  Its stdout and stderr are a pipe whose read end we keep:
 * the log of the instance it becomes.  fd 4 is Node's own IPC channel
 * (NODE_CHANNEL_FD), a socketpair: JSON lines, a descriptor beside a
 * line {"cmd":"NODE_HANDLE","type":"net.Native","msg":...} (Node's
 * child_process wire format).  The script (libexec/hk-node-spare.js)
 * says "ready"; at a wake we move it into the instance's cgroup, send
 * the instance's directory, argv and environment, with its listening
 * socket, then close our end: no code of the service runs before the
 * move, and the spare is from then on the instance's pid, which
 * backend_exec.c supervises as any child (stop, freeze, deadlines,
 * output: the instance's output pipe's read end is made the spare's by
 * dup3, before anything watches it).
 *
 * A spare is started when a service that wants it is loaded (spare_load(),
 * as template_load()), SPARE_NEXT_MS after one was handed over (not at
 * once: the new interpreter's start would take the CPU from the instance
 * starting), and SPARE_RESTART_MS after one died (twice as long each time
 * while it dies before it is ready, up to SPARE_RESTART_MAX); ended when
 * no loaded service wants it, and with hk-scale.  It ends by itself at
 * EOF on its channel, when hk-scale dies.  A wake that finds no spare
 * ready is a bare start.
 *
 * The spares are this file's list, spares, alone.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "spare.h"

#define SPARE_PROGRAM	"hk-node-spare"
#define SPARE_NEXT_MS	500	/* after a handover */
#define SPARE_RESTART_MS 1000	/* after a death */
#define SPARE_RESTART_MAX 60000	/* doubled up to, while none is ready */
#define SPARE_NODE_MAX	256
#define SPARE_FD	4	/* its channel */

struct spare {
	TAILQ_ENTRY(spare)	 entry;
	struct scale		*sc;
	char			 node[SPARE_NODE_MAX];
	struct user_ids		 user;
	int			 switch_user;
	pid_t			 pid;		/* 0: not running */
	int			 sock;		/* -1: not running */
	int			 outr;		/* its stdout and stderr */
	int			 ready;		/* said "ready" */
	char			 line[64];	/* what it said, so far */
	size_t			 nline;
	int64_t			 backoff;	/* ms before the next start */
	int			 wanted;	/* by a loaded service */
	int			 seen;		/* at this load */
	char			 cg[FZ_PATH_MAX];	/* "": none */
	struct loop_timer	 restart;
};

static TAILQ_HEAD(, spare) spares = TAILQ_HEAD_INITIALIZER(spares);

static char	**spare_env(const struct spare *);
static void	spare_child(const struct spare *, int, int, int, const char *,
		    char **) __attribute__((noreturn));
static void	spare_start(struct spare *);
static void	spare_read(struct loop *, int, int, void *);
static void	spare_down(struct spare *, const char *);
static void	spare_forget(struct spare *);
static void	spare_restart(struct loop *, void *);
static void	spare_run(struct spare *);
static struct spare *spare_get(struct scale *, const char *,
		    const struct user_ids *, int);
static int	wants(struct scale *, const struct service_spec *,
		    struct user_ids *, int *);
static char	*message(const struct service_spec *, char **, int,
		    size_t *);
static int	send_message(struct spare *, const char *, size_t, int);

/* The spare's own environment until a wake, which replaces it. */
static char **
spare_env(const struct spare *s)
{
	const char *path = getenv("PATH"), *lang = getenv("LANG");
	char **env;

	if ((env = calloc(7, sizeof(*env))) == NULL)
		return NULL;
	if (asprintf(&env[0], "PATH=%s", path != NULL ? path :
	    "/usr/local/bin:/usr/bin:/bin") == -1 ||
	    asprintf(&env[1], "HOME=%s", s->user.home) == -1 ||
	    asprintf(&env[2], "USER=%s", s->user.name) == -1 ||
	    asprintf(&env[3], "LOGNAME=%s", s->user.name) == -1 ||
	    asprintf(&env[4], "LANG=%s", lang != NULL ? lang : "C.UTF-8") ==
	    -1 || asprintf(&env[5], "NODE_CHANNEL_FD=%d", SPARE_FD) == -1) {
		command_env_free(env);
		return NULL;
	}
	return env;
}

/*
 * After fork: its cgroup, a session, /dev/null as stdin and as fd 3 (the
 * place of the listener, which the script frees once Node has opened
 * its own descriptors), the pipe as stdout and stderr, the channel as
 * fd 4, the user's ids without privileges, then node.
 */
static void
spare_child(const struct spare *s, int sock, int outw, int procs,
    const char *prog, char **env)
{
	sigset_t none;
	char *argv[3];
	int null;

	sigemptyset(&none);
	if (procs != -1 && write(procs, "0", 1) != 1) {
		dprintf(2, "hk-scale: node spare: join its cgroup: %s\n",
		    strerror(errno));
		_exit(127);
	}
	if (sigprocmask(SIG_SETMASK, &none, NULL) == -1 ||
	    signal(SIGPIPE, SIG_DFL) == SIG_ERR || setsid() == -1 ||
	    (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (sock = fcntl(sock, F_DUPFD_CLOEXEC, 5)) == -1 ||
	    (outw = fcntl(outw, F_DUPFD_CLOEXEC, 5)) == -1 ||
	    dup2(null, 0) == -1 || dup2(outw, 1) == -1 ||
	    dup2(outw, 2) == -1 || dup2(null, 3) == -1 ||
	    dup2(sock, SPARE_FD) == -1 ||
	    syscall(SYS_close_range, SPARE_FD + 1, ~0U,
	    CLOSE_RANGE_CLOEXEC) == -1) {
		dprintf(2, "hk-scale: node spare: set up: %s\n",
		    strerror(errno));
		_exit(127);
	}
	if (exec_drop(&s->user, s->switch_user) == -1)
		_exit(127);
	argv[0] = (char *)(uintptr_t)s->node;
	argv[1] = (char *)(uintptr_t)prog;
	argv[2] = NULL;
	execvpe(s->node, argv, env);
	dprintf(2, "hk-scale: node spare: exec %s: %s\n", s->node,
	    strerror(errno));
	_exit(127);
}

/* Starts s; a failure is logged and retried as a death is. */
static void
spare_start(struct spare *s)
{
	char prog[PATH_MAX], err[SCALE_REASON_MAX];
	int sv[2], out[2] = { -1, -1 }, cg[2] = { -1, -1 };
	char **env;
	pid_t pid;

	if (libexec_find(SPARE_PROGRAM, R_OK, prog, sizeof(prog)) == -1) {
		log_warnx("node spare: %s not found beside hk-scale nor in %s",
		    SPARE_PROGRAM, libexec_dir());
		return;
	}
	if ((env = spare_env(s)) == NULL) {
		log_warnx("node spare: out of memory");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("node spare: socketpair");
		command_env_free(env);
		return;
	}
	if (pipe2(out, O_CLOEXEC) == -1) {
		log_warn("node spare: pipe");
		goto fail;
	}
	if (freezer_make(s->sc, s->cg, sizeof(s->cg), cg, err,
	    sizeof(err)) == -1) {
		log_warnx("node spare: %s", err);
		goto fail;
	}
	if ((pid = fork()) == -1) {
		log_warn("node spare: fork");
		goto fail;
	}
	if (pid == 0)
		spare_child(s, sv[1], out[1], cg[0], prog, env);
	close(sv[1]);
	close(out[1]);
	if (cg[0] != -1)
		close(cg[0]);
	if (cg[1] != -1)
		close(cg[1]);
	command_env_free(env);
	s->pid = pid;
	s->sock = sv[0];
	s->outr = out[0];
	s->ready = 0;
	s->nline = 0;
	if (loop_add_fd(s->sc->loop, s->sock, LOOP_READ, spare_read, s) == -1)
		log_warn("node spare: unable to watch pid %ld", (long)pid);
	log_info("node spare %s for %s: started pid %ld", s->node,
	    s->user.name, (long)pid);
	return;
fail:
	close(sv[0]);
	close(sv[1]);
	if (out[0] != -1) {
		close(out[0]);
		close(out[1]);
	}
	if (cg[0] != -1)
		close(cg[0]);
	if (cg[1] != -1)
		close(cg[1]);
	if (s->cg[0] != '\0')
		freezer_remove(s->sc, s->cg);
	s->cg[0] = '\0';
	command_env_free(env);
}

/* "ready" (a JSON string, one line); anything else or EOF: it is ended. */
static void
spare_read(struct loop *l, int fd, int mask, void *arg)
{
	struct spare *s = arg;
	char buf[64];
	ssize_t n;

	(void)l;
	(void)mask;
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && !s->ready && s->nline + (size_t)n <= sizeof(s->line)) {
		memcpy(s->line + s->nline, buf, (size_t)n);
		s->nline += (size_t)n;
		if (s->nline < sizeof("\"ready\"\n") - 1 && memcmp(s->line,
		    "\"ready\"\n", s->nline) == 0)
			return;
		if (s->nline == sizeof("\"ready\"\n") - 1 &&
		    memcmp(s->line, "\"ready\"\n", s->nline) == 0) {
			s->ready = 1;
			s->backoff = SPARE_RESTART_MS;
			log_info("node spare %s for %s: pid %ld ready, %lld kB",
			    s->node, s->user.name, (long)s->pid,
			    (long long)(proc_rss_bytes(s->pid) / 1024));
			return;
		}
	}
	if (!s->ready)
		s->backoff = s->backoff * 2 > SPARE_RESTART_MAX ?
		    SPARE_RESTART_MAX : s->backoff * 2;
	spare_down(s, n == 0 ? "exited" : "broke the protocol");
	if (!s->sc->stopping && s->wanted)
		loop_timer_at(s->sc->loop, &s->restart,
		    loop_now_ms(s->sc->loop) + s->backoff);
}

/* Ends s's process (inst_reap() reaps it) and what is left of it. */
static void
spare_down(struct spare *s, const char *why)
{
	if (s->sock == -1)
		return;
	log_info("node spare %s for %s: pid %ld %s", s->node, s->user.name,
	    (long)s->pid, why);
	if (s->pid > 0)
		kill(s->pid, SIGKILL);
	if (s->cg[0] != '\0')
		freezer_end(s->cg);
	spare_forget(s);
}

/* s no longer has a process of its own (ended, or handed over). */
static void
spare_forget(struct spare *s)
{
	loop_close_fd(s->sc->loop, &s->sock);
	if (s->outr != -1)
		close(s->outr);
	s->outr = -1;
	s->pid = 0;
	s->ready = 0;
	s->nline = 0;
	if (s->cg[0] != '\0')
		freezer_remove(s->sc, s->cg);
	s->cg[0] = '\0';
}

static void
spare_restart(struct loop *l, void *arg)
{
	struct spare *s = arg;

	(void)l;
	if (s->sock == -1 && !s->sc->stopping && s->wanted)
		spare_start(s);
}

/* Started unless it runs or waits for its (re)start. */
static void
spare_run(struct spare *s)
{
	if (s->sock != -1 || loop_timer_armed(&s->restart) ||
	    s->sc->stopping)
		return;
	spare_start(s);
	if (s->sock == -1) {	/* logged; not at every start */
		loop_timer_at(s->sc->loop, &s->restart,
		    loop_now_ms(s->sc->loop) + s->backoff);
		s->backoff = s->backoff * 2 > SPARE_RESTART_MAX ?
		    SPARE_RESTART_MAX : s->backoff * 2;
	}
}

/* The spare of node and u, made if there is none (NULL: no memory). */
static struct spare *
spare_get(struct scale *sc, const char *node, const struct user_ids *u,
    int switch_user)
{
	struct spare *s;

	TAILQ_FOREACH(s, &spares, entry)
		if (strcmp(s->node, node) == 0 && user_ids_same(&s->user, u))
			return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->sc = sc;
	strlcpy(s->node, node, sizeof(s->node));
	s->user = *u;
	s->switch_user = switch_user;
	s->sock = s->outr = -1;
	s->backoff = SPARE_RESTART_MS;
	loop_timer_init(&s->restart, spare_restart, s);
	TAILQ_INSERT_TAIL(&spares, s, entry);
	return s;
}

/* Whether sp starts from a spare, and as whom; 0: it does not. */
static int
wants(struct scale *sc, const struct service_spec *sp, struct user_ids *u,
    int *switch_user)
{
	char err[SCALE_REASON_MAX];

	if (sp->backend != BACKEND_EXEC || !sp->serverless ||
	    backend_find(BACKEND_EXEC) == NULL ||
	    sp->policy.start_from != START_FROM_NODE ||
	    !spec_node_command(sp->command, sp->ncommand) ||
	    strlen(sp->command[0]) >= SPARE_NODE_MAX)
		return 0;
	if (command_user(sc, sp, u, switch_user, err, sizeof(err)) == -1)
		return 0;	/* its start says why */
	return u->uid != 0;	/* never root: a bare start */
}

/* At a load of the services: as template_load() (exec_template.c). */
void
spare_load(struct scale *sc, const struct service_spec *sp, int end)
{
	struct user_ids u;
	struct spare *s, *tmp;
	int sw;

	if (sp != NULL) {
		if (!wants(sc, sp, &u, &sw) || (s = spare_get(sc,
		    sp->command[0], &u, sw)) == NULL)
			return;
		s->wanted = s->seen = 1;
		spare_run(s);
		return;
	}
	TAILQ_FOREACH_SAFE(s, &spares, entry, tmp) {
		if (!end)
			s->seen = 0;
		else if (!(s->wanted = s->seen)) {
			loop_timer_cancel(sc->loop, &s->restart);
			spare_down(s, "no longer wanted: ended");
			TAILQ_REMOVE(&spares, s, entry);
			free(s);
		}
	}
}

/* Appends str to *p as a JSON string; the room was counted by the caller. */
static char *
put_json(char *p, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *c;

	*p++ = '"';
	for (c = (const unsigned char *)str; *c != '\0'; c++) {
		if (*c == '"' || *c == '\\') {
			*p++ = '\\';
			*p++ = (char)*c;
		} else if (*c < 0x20 || *c == 0x7f) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[*c >> 4];
			p[5] = hex[*c & 0xf];
			p += 6;
		} else
			*p++ = (char)*c;
	}
	*p++ = '"';
	return p;
}

static size_t
json_room(const char *str)
{
	return 2 + strlen(str) * 6;
}

/*
 * The spawn message, one JSON line, inside Node's NODE_HANDLE envelope
 * when a socket goes with it.  Written here, not by jansson, so that the
 * caller can wipe every copy of the environment (secrets).  NULL: no
 * memory.
 */
static char *
message(const struct service_spec *sp, char **env, int handle, size_t *lenp)
{
	static const char head[] =
	    "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Native\",\"msg\":";
	const char *dir = sp->directory != NULL ? sp->directory : "";
	size_t len = sizeof(head) + 64 + json_room(dir), i;
	char *buf, *p;

	for (i = 0; i < sp->ncommand; i++)
		len += json_room(sp->command[i]) + 1;
	for (i = 0; env[i] != NULL; i++)
		len += json_room(env[i]) + 1;
	if ((p = buf = malloc(len)) == NULL)
		return NULL;
	if (handle) {
		memcpy(p, head, sizeof(head) - 1);
		p += sizeof(head) - 1;
	}
	p = stpcpy(p, "{\"hk\":\"spawn\",\"dir\":");
	p = put_json(p, dir);
	p = stpcpy(p, ",\"argv\":[");
	for (i = 0; i < sp->ncommand; i++) {
		if (i > 0)
			*p++ = ',';
		p = put_json(p, sp->command[i]);
	}
	p = stpcpy(p, "],\"env\":[");
	for (i = 0; env[i] != NULL; i++) {
		if (i > 0)
			*p++ = ',';
		p = put_json(p, env[i]);
	}
	p = stpcpy(p, handle ? "]}}\n" : "]}\n");
	*lenp = (size_t)(p - buf);
	return buf;
}

/* The whole message, with lfd unless -1: 0, or -1 (errno). */
static int
send_message(struct spare *s, const char *msg, size_t len, int lfd)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { (void *)(uintptr_t)msg, len };
	struct msghdr mh;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (lfd != -1) {
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		cm.hdr.cmsg_level = SOL_SOCKET;
		cm.hdr.cmsg_type = SCM_RIGHTS;
		cm.hdr.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&cm.hdr), &lfd, sizeof(int));
	}
	if ((n = sendmsg(s->sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT)) == -1)
		return -1;
	if ((size_t)n != len) {		/* a channel it does not read */
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

pid_t
spare_spawn(struct scale *sc, const struct service_spec *sp,
    const struct user_ids *u, int switch_user, char **env, int outr,
    int lfd, int procs)
{
	char pidbuf[16], *msg;
	struct spare *s;
	size_t len, i;
	pid_t pid;

	if (!sp->serverless || sp->policy.start_from != START_FROM_NODE ||
	    !spec_node_command(sp->command, sp->ncommand) || u->uid == 0 ||
	    strlen(sp->command[0]) >= SPARE_NODE_MAX)
		return 0;	/* never root: a bare start */
	for (i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], "NODE_OPTIONS=", 13) == 0)
			return 0;	/* for a new node: a bare start */
	if ((s = spare_get(sc, sp->command[0], u, switch_user)) == NULL)
		return 0;
	s->wanted = 1;
	spare_run(s);
	if (!s->ready)
		return 0;
	if ((msg = message(sp, env, lfd != -1, &len)) == NULL)
		return 0;
	pid = s->pid;
	snprintf(pidbuf, sizeof(pidbuf), "%ld", (long)pid);
	/* Its cgroup first: no code of the service runs outside it. */
	if (procs != -1 && write(procs, pidbuf, strlen(pidbuf)) == -1) {
		log_warn("node spare %s for %s: cgroup of pid %ld", s->node,
		    s->user.name, (long)pid);
		spare_down(s, "not moved: replaced");
		pid = 0;
	} else if (send_message(s, msg, len, lfd) == -1) {
		log_warn("node spare %s for %s: send to pid %ld", s->node,
		    s->user.name, (long)pid);
		spare_down(s, "not handed over: replaced");
		pid = 0;
	} else if (dup3(s->outr, outr, O_CLOEXEC) == -1) {
		log_warn("node spare %s for %s: output of pid %ld", s->node,
		    s->user.name, (long)pid);
		kill(pid, SIGKILL);	/* its service's code runs: no log */
		spare_forget(s);
		pid = 0;
	} else {
		log_info("node spare %s for %s: pid %ld handed over",
		    s->node, s->user.name, (long)pid);
		spare_forget(s);	/* EOF on its channel: it lets go */
	}
	explicit_bzero(msg, len);
	free(msg);
	if (!sc->stopping && s->wanted && !loop_timer_armed(&s->restart))
		loop_timer_at(sc->loop, &s->restart, loop_now_ms(sc->loop) +
		    (pid != 0 ? SPARE_NEXT_MS : SPARE_RESTART_MS));
	return pid;
}

/* hk_template_memory_bytes, after the Python templates': each spare's. */
void
spare_metrics(struct metrics_out *o)
{
	const char *l[] = { "runtime", NULL, "user", NULL, "pid", NULL, NULL };
	char pid[16];
	struct spare *s;

	TAILQ_FOREACH(s, &spares, entry) {
		if (s->pid <= 0)
			continue;
		snprintf(pid, sizeof(pid), "%ld", (long)s->pid);
		l[1] = s->node;
		l[3] = s->user.name;
		l[5] = pid;
		metrics_u64(o, "hk_template_memory_bytes", l,
		    (uint64_t)proc_rss_bytes(s->pid));
	}
}

/* For the status of scale.sock (hk ps), beside the Python templates. */
void
spare_status(json_t *all)
{
	struct spare *s;

	if (all == NULL)
		return;
	TAILQ_FOREACH(s, &spares, entry)
		json_array_append_new(all, json_pack("{s:s, s:s, s:I, s:b, "
		    "s:I}", "runtime", s->node, "user", s->user.name, "pid",
		    (json_int_t)s->pid, "ready", s->ready, "memory_bytes",
		    (json_int_t)(s->pid > 0 ? proc_rss_bytes(s->pid) : 0)));
}

/* The end: every spare goes with hk-scale. */
void
spare_shutdown(struct scale *sc)
{
	struct spare *s;

	while ((s = TAILQ_FIRST(&spares)) != NULL) {
		loop_timer_cancel(sc->loop, &s->restart);
		spare_down(s, "ended");
		TAILQ_REMOVE(&spares, s, entry);
		free(s);
	}
}
