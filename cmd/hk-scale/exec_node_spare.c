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
 * A spare is an entry of the exec pool (exec_pool.c), as a template is:
 * started when a service that wants it is loaded (pool_load()),
 * SPARE_NEXT_MS after one was handed over (not at once: the new
 * interpreter's start would take the CPU from the instance starting),
 * and POOL_RESTART_MS after one died (twice as long each time while it
 * dies before it is ready, up to POOL_RESTART_MAX); ended when no loaded
 * service wants it, and with hk-scale.  It ends by itself at EOF on its
 * channel, when hk-scale dies.  A wake that finds no spare ready is a
 * bare start.
 *
 * The spares are entries of exec_pool.c's list; this file keeps what is
 * a spare's own: its fds, its output pipe, its messages and the handover
 * (spare_pool, its struct pool_ops).
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
#include "exec_pool.h"
#include "log.h"
#include "scale.h"
#include "spare.h"

#define SPARE_NEXT_MS	500	/* after a handover */
#define SPARE_FD	4	/* its channel */
#define SPARE_FD_S	"4"

struct spare {
	struct pool		 p;		/* first: the pool's entry */
	int			 outr;		/* its stdout and stderr */
	int			 outw;		/* their write end, until the fork */
	char			 line[64];	/* what it said, so far */
	size_t			 nline;
};

static struct spare *spare_of(struct pool *);
static void	spare_init(struct pool *);
static int	spare_prepare(struct pool *);
static int	spare_fds(const struct pool *, int);
static void	spare_spawned(struct pool *, int);
static const char *spare_read(struct pool *, int);
static void	spare_gone(struct pool *, const char *);
static char	*message(const struct service_spec *, char **, int,
		    size_t *);
static int	send_message(struct spare *, const char *, size_t, int);

/* A spare, for the pool: its node binary as the runtime. */
const struct pool_ops spare_pool = {
	.name =		"node spare",
	.child_name =	"node spare",
	.program =	"hk-node-spare",
	.env_extra =	"NODE_CHANNEL_FD=" SPARE_FD_S,
	.start_from =	START_FROM_NODE,
	.command =	spec_node_command,
	.socktype =	SOCK_STREAM,
	.size =		sizeof(struct spare),
	.init =		spare_init,
	.prepare =	spare_prepare,
	.child =	spare_fds,
	.spawned =	spare_spawned,
	.read =		spare_read,
	.gone =		spare_gone,
	.busy =		NULL,
	.drop =		NULL,
};

/* The spare whose pool entry p is (its first member). */
static struct spare *
spare_of(struct pool *p)
{
	return (struct spare *)(void *)p;
}

static void
spare_init(struct pool *p)
{
	struct spare *s = spare_of(p);

	s->outr = s->outw = -1;
}

/* Before the fork: the pipe of its stdout and stderr. */
static int
spare_prepare(struct pool *p)
{
	struct spare *s = spare_of(p);
	int out[2];

	if (pipe2(out, O_CLOEXEC) == -1) {
		log_warn("node spare: pipe");
		return -1;
	}
	s->outr = out[0];
	s->outw = out[1];
	return 0;
}

/*
 * In the child: /dev/null as stdin and as fd 3 (the place of the
 * listener, which the script frees once Node has opened its own
 * descriptors), the pipe as stdout and stderr, the channel as fd 4.
 */
static int
spare_fds(const struct pool *p, int sock)
{
	const struct spare *s = (const struct spare *)(const void *)p;
	int null, outw;

	if ((null = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (sock = fcntl(sock, F_DUPFD_CLOEXEC, 5)) == -1 ||
	    (outw = fcntl(s->outw, F_DUPFD_CLOEXEC, 5)) == -1 ||
	    dup2(null, 0) == -1 || dup2(outw, 1) == -1 ||
	    dup2(outw, 2) == -1 || dup2(null, 3) == -1 ||
	    dup2(sock, SPARE_FD) == -1 ||
	    syscall(SYS_close_range, SPARE_FD + 1, ~0U,
	    CLOSE_RANGE_CLOEXEC) == -1)
		return -1;
	return 0;
}

/* After the fork (ok 0), the pipe's write end is the child's; else none. */
static void
spare_spawned(struct pool *p, int ok)
{
	struct spare *s = spare_of(p);

	if (ok == 0) {
		close(s->outw);
		s->nline = 0;
	} else if (s->outr != -1) {
		close(s->outr);
		close(s->outw);
		s->outr = -1;
	}
	s->outw = -1;
}

/* "ready" (a JSON string, one line); anything else or EOF: it is ended. */
static const char *
spare_read(struct pool *p, int fd)
{
	struct spare *s = spare_of(p);
	char buf[64];
	ssize_t n;

	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return NULL;
	if (n > 0 && !p->ready && s->nline + (size_t)n <= sizeof(s->line)) {
		memcpy(s->line + s->nline, buf, (size_t)n);
		s->nline += (size_t)n;
		if (s->nline < sizeof("\"ready\"\n") - 1 && memcmp(s->line,
		    "\"ready\"\n", s->nline) == 0)
			return NULL;
		if (s->nline == sizeof("\"ready\"\n") - 1 &&
		    memcmp(s->line, "\"ready\"\n", s->nline) == 0) {
			pool_ready(p);
			return NULL;
		}
	}
	return n == 0 ? "exited" : "broke the protocol";
}

/* s no longer has a process of its own (ended, or handed over). */
static void
spare_gone(struct pool *p, const char *why)
{
	struct spare *s = spare_of(p);

	(void)why;
	if (s->outr != -1)
		close(s->outr);
	s->outr = -1;
	s->nline = 0;
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
	if ((n = sendmsg(s->p.sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT)) == -1)
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
	struct pool *p;
	size_t len, i;
	pid_t pid;

	if (!sp->serverless || sp->policy.start_from != START_FROM_NODE ||
	    !spec_node_command(sp->command, sp->ncommand))
		return 0;
	for (i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], "NODE_OPTIONS=", 13) == 0)
			return 0;	/* for a new node: a bare start */
	/* never root, and ready: else a bare start */
	if ((p = pool_wake(&spare_pool, sc, sp, u, switch_user)) == NULL)
		return 0;
	s = spare_of(p);
	if ((msg = message(sp, env, lfd != -1, &len)) == NULL)
		return 0;
	pid = p->pid;
	snprintf(pidbuf, sizeof(pidbuf), "%ld", (long)pid);
	/* Its cgroup first: no code of the service runs outside it. */
	if (procs != -1 && write(procs, pidbuf, strlen(pidbuf)) == -1) {
		log_warn("node spare %s for %s: cgroup of pid %ld", p->key,
		    p->user.name, (long)pid);
		pool_down(p, "not moved: replaced");
		pid = 0;
	} else if (send_message(s, msg, len, lfd) == -1) {
		log_warn("node spare %s for %s: send to pid %ld", p->key,
		    p->user.name, (long)pid);
		pool_down(p, "not handed over: replaced");
		pid = 0;
	} else if (dup3(s->outr, outr, O_CLOEXEC) == -1) {
		log_warn("node spare %s for %s: output of pid %ld", p->key,
		    p->user.name, (long)pid);
		kill(pid, SIGKILL);	/* its service's code runs: no log */
		pool_forget(p);
		pid = 0;
	} else {
		log_info("node spare %s for %s: pid %ld handed over",
		    p->key, p->user.name, (long)pid);
		pool_forget(p);	/* EOF on its channel: it lets go */
	}
	explicit_bzero(msg, len);
	free(msg);
	if (!loop_timer_armed(&p->restart))
		pool_restart_in(p, pid != 0 ? SPARE_NEXT_MS : POOL_RESTART_MS);
	return pid;
}
