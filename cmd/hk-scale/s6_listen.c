/*
 * s6_listen.c - the one listening socket that the s6 replicas of a
 * service with a fixed port share (hk.toml(5) replicas), served to them
 * over a Unix socket of hk-scale's: an s6-supervised process is not our
 * child, so the socket cannot be inherited across fork as the exec
 * backend's is.  The TCP socket is exec_listen.c's (bound once, counted
 * per instance); this file serves it at
 *
 *	RUNTIME_DIR/scale-listen.PORT/socket
 *
 * a directory of mode 0700 and a socket of mode 0600 owned by the
 * service's user, so that only that user (and root) can connect, and a
 * peer whose SO_PEERCRED uid is not the service's is refused too.  A
 * connection is answered with one byte and the socket (SCM_RIGHTS), then
 * closed: the replica's run script execs hk-listen (cmd/hk-listen), which
 * makes it fd 3 with LISTEN_FDS and execs the command.  The port names
 * the path: one service at a time holds a fixed port of this host.
 *
 * A restarted hk-scale serves again at the same path the socket that
 * exec_listen.c took back from an adopted replica (pidfd_getfd(2)): the
 * same socket, so that a replica started after the restart joins the
 * same accept queue as the ones that kept running.  Once the rows are
 * adopted, the directories of a killed hk-scale that no replica needs
 * any more are removed (s6listen_prune()).
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "scale.h"
#include "xlisten.h"

#define SL_PATH_MAX	sizeof(((struct sockaddr_un *)0)->sun_path)

struct s6listen {
	TAILQ_ENTRY(s6listen)	 entry;
	char			 id[SCALE_ID_MAX];
	int			 port;
	uid_t			 uid;		/* the only peer served */
	int			 srv;		/* the Unix socket */
	char			 dir[SL_PATH_MAX];
	char			 path[SL_PATH_MAX];	/* dir/socket */
	int			 refs;
	struct loop		*loop;
};

static TAILQ_HEAD(, s6listen) s6listens = TAILQ_HEAD_INITIALIZER(s6listens);

static struct s6listen	*sl_find(const char *, int);
static struct s6listen	*sl_serve(struct inst *, int, const struct user_ids *,
			    char *, size_t);
static int		 sl_own(struct s6listen *, const struct user_ids *);
static void		 sl_accept(struct loop *, int, int, void *);
static void		 sl_answer(struct s6listen *, int);
static void		 sl_unref(struct s6listen *);
static int		 sl_served_port(const char *);

static struct s6listen *
sl_find(const char *id, int port)
{
	struct s6listen *x;

	TAILQ_FOREACH(x, &s6listens, entry)
		if (x->port == port && strcmp(x->id, id) == 0)
			return x;
	return NULL;
}

/* The directory and the socket given to the service's user. */
static int
sl_own(struct s6listen *x, const struct user_ids *u)
{
	if (chown(x->dir, u->uid, u->gid) == -1 ||
	    chown(x->path, u->uid, u->gid) == -1)
		return -1;
	x->uid = u->uid;
	return 0;
}

/*
 * The Unix socket that serves the port of in's service, made if none
 * is: a reference to it (not to the TCP socket, which the caller holds).
 */
static struct s6listen *
sl_serve(struct inst *in, int port, const struct user_ids *u, char *err,
    size_t errlen)
{
	struct sockaddr_un sun;
	struct s6listen *x;
	const char *fail;

	if ((x = sl_find(in->id, port)) != NULL) {
		if (x->uid != u->uid && sl_own(x, u) == -1) {
			snprintf(err, errlen, "%s: %s", x->path,
			    strerror(errno));
			return NULL;
		}
		x->refs++;
		return x;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	strlcpy(x->id, in->id, sizeof(x->id));
	x->port = port;
	x->loop = in->sc->loop;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(x->dir, sizeof(x->dir), "%s/scale-listen.%d",
	    in->sc->cfg.runtime_dir, port) >= sizeof(x->dir) ||
	    (size_t)snprintf(x->path, sizeof(x->path), "%s/socket", x->dir) >=
	    sizeof(x->path)) {
		snprintf(err, errlen, "%s/scale-listen.%d/socket: path too "
		    "long for a Unix socket", in->sc->cfg.runtime_dir, port);
		free(x);
		return NULL;
	}
	strlcpy(sun.sun_path, x->path, sizeof(sun.sun_path));
	fail = x->dir;
	if ((mkdir(x->dir, 0700) == -1 && errno != EEXIST) ||
	    chmod(x->dir, 0700) == -1)
		goto bad;
	fail = x->path;
	/* an earlier hk-scale's, which nobody serves any more */
	if ((unlink(x->path) == -1 && errno != ENOENT) ||
	    (x->srv = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		goto bad;
	if (bind(x->srv, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(x->path, 0600) == -1 || sl_own(x, u) == -1 ||
	    listen(x->srv, 16) == -1 ||
	    loop_add_fd(x->loop, x->srv, LOOP_READ, sl_accept, x) == -1) {
		close(x->srv);
		goto bad;
	}
	x->refs = 1;
	TAILQ_INSERT_TAIL(&s6listens, x, entry);
	log_debug("service=%s: port %d served to its s6 replicas at %s",
	    in->id, port, x->path);
	return x;
bad:
	snprintf(err, errlen, "%s: %s", fail, strerror(errno));
	free(x);
	return NULL;
}

/* Connections from replicas: each answered at once, never waited on. */
static void
sl_accept(struct loop *l, int fd, int ev, void *arg)
{
	struct s6listen *x = arg;
	int c;

	(void)l;
	(void)ev;
	while ((c = accept4(fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) != -1) {
		sl_answer(x, c);
		close(c);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
	    errno != ECONNABORTED)
		log_warn("service=%s: accept on %s", x->id, x->path);
}

/* The TCP socket to a peer of the service's uid; nothing to another. */
static void
sl_answer(struct s6listen *x, int c)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct msghdr msg;
	struct cmsghdr *h;
	struct iovec iov;
	char byte = 'L';
	int lfd;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("service=%s: %s: SO_PEERCRED", x->id, x->path);
		return;
	}
	if (cred.uid != x->uid) {
		log_warnx("service=%s: %s: pid %ld of uid %lu refused: not the "
		    "service's user (uid %lu)", x->id, x->path,
		    (long)cred.pid, (unsigned long)cred.uid,
		    (unsigned long)x->uid);
		return;
	}
	if ((lfd = xlisten_fd(x->id, x->port)) == -1) {
		log_warnx("service=%s: no listening socket on port %d to hand "
		    "pid %ld", x->id, x->port, (long)cred.pid);
		return;
	}
	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = &byte;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	h = CMSG_FIRSTHDR(&msg);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &lfd, sizeof(lfd));
	if (sendmsg(c, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		log_warn("service=%s: unable to hand pid %ld its listening "
		    "socket", x->id, (long)cred.pid);
	else
		log_debug("service=%s: listening socket on port %d handed to "
		    "pid %ld", x->id, x->port, (long)cred.pid);
}

static void
sl_unref(struct s6listen *x)
{
	if (--x->refs > 0)
		return;
	TAILQ_REMOVE(&s6listens, x, entry);
	loop_close_fd(x->loop, &x->srv);
	unlink(x->path);
	rmdir(x->dir);
	free(x);
}

/*
 * A new replica of in's service: the shared socket on port (bound if no
 * instance holds it) and the Unix socket that serves it, whose path goes
 * in path.  in holds a reference to both until s6listen_drop().
 */
int
s6listen_take(struct inst *in, int port, const struct user_ids *u,
    char *path, size_t pathlen, char *err, size_t errlen)
{
	struct s6listen *x;
	int lfd;

	if (xlisten_take(in, port, &lfd, err, errlen) == -1)
		return -1;
	if ((x = sl_serve(in, port, u, err, errlen)) == NULL) {
		xlisten_drop(in, port);
		return -1;
	}
	if (strlcpy(path, x->path, pathlen) >= pathlen) {
		snprintf(err, errlen, "%s: path too long", x->path);
		s6listen_drop(in, port);
		return -1;
	}
	return 0;
}

/*
 * An adopted replica (its pid, and its start time if known): the socket
 * taken back from it if no other instance holds it, and served again.
 * 0 when in holds a reference; -1 when it holds none (logged).
 */
int
s6listen_adopt(struct inst *in, int port, pid_t pid, int64_t start,
    const struct user_ids *u, char *path, size_t pathlen)
{
	char err[SCALE_REASON_MAX];
	struct s6listen *x;

	if (xlisten_adopt_pid(in, port, pid, start) == -1)
		return -1;
	if ((x = sl_serve(in, port, u, err, sizeof(err))) == NULL) {
		log_warnx("service=%s: unable to serve the socket on port %d "
		    "to its s6 replicas: %s", in->id, port, err);
		xlisten_drop(in, port);
		return -1;
	}
	strlcpy(path, x->path, pathlen);
	return 0;
}

/* in's references go: the last closes the Unix socket, then the port. */
void
s6listen_drop(const struct inst *in, int port)
{
	struct s6listen *x;

	if ((x = sl_find(in->id, port)) != NULL)
		sl_unref(x);
	xlisten_drop(in, port);
}

/* The port of a directory name scale-listen.PORT that no entry serves. */
static int
sl_served_port(const char *name)
{
	const char *errstr;
	struct s6listen *x;
	int port;

	if (strncmp(name, "scale-listen.", 13) != 0)
		return 0;
	port = (int)strtonum(name + 13, 1, 65535, &errstr);
	if (errstr != NULL)
		return 0;
	TAILQ_FOREACH(x, &s6listens, entry)
		if (x->port == port)
			return 0;
	return port;
}

/*
 * Once the rows are adopted: what a killed hk-scale left in runtime_dir
 * for a port no replica shares any more (its service removed or scaled
 * down meanwhile) goes, so that no stale socket waits there.
 */
void
s6listen_prune(const char *runtime_dir)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	DIR *dp;
	int port;

	if ((dp = opendir(runtime_dir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if ((port = sl_served_port(de->d_name)) == 0 ||
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", runtime_dir,
		    de->d_name) >= sizeof(dir) ||
		    (size_t)snprintf(path, sizeof(path), "%s/socket", dir) >=
		    sizeof(path))
			continue;
		if ((unlink(path) == -1 && errno != ENOENT) ||
		    rmdir(dir) == -1)
			log_warn("unable to remove %s", dir);
		else
			log_info("removed %s: no replica shares port %d any "
			    "more", dir, port);
	}
	closedir(dp);
}
