/*
 * exec_listen.c - the one listening socket that the replicas of a service
 * with a fixed port share (hk.toml(5) replicas): hk-scale binds
 * 127.0.0.1:PORT once and hands the same socket to each replica as fd 3
 * (LISTEN_FDS), so that N processes accept from one queue: the exec
 * backend to its children, the systemd backend to each replica's unit.
 * Not SO_REUSEPORT, which would let any process of the same user join
 * the port.  The socket is kept while an instance of the service holds a
 * reference, and closed with the last: a replica started meanwhile (a
 * restart after an exit, one more after a reload) gets the same socket.
 *
 * A restarted hk-scale finds the replicas running but not the socket.
 * Under systemd with a file descriptor store (fdstore.c) each socket was
 * handed to systemd when bound, as hk.APP.SVC.PORT, and is had back at
 * start (xlisten_restore()); those no adopted replica claims are closed
 * once every row is adopted (xlisten_prune()).  Otherwise it takes a copy
 * of fd 3 from the first adopted replica (pidfd_getfd(2), Linux 5.6,
 * which asks the rights of ptrace), checked to be a TCP socket listening
 * on that port, so that a replica started later shares it again rather
 * than failing to bind a port its siblings hold.
 *
 * The list is this file's alone, as the freezer's state is
 * exec_freezer.c's: a few entries, one per service with shared replicas.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "scale.h"
#include "xlisten.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd	438
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif
#define XLISTEN_BACKLOG	128

struct xlisten {
	TAILQ_ENTRY(xlisten)	 entry;
	char			 id[SCALE_ID_MAX];
	int			 port;
	int			 fd;
	int			 refs;
};

static TAILQ_HEAD(, xlisten) xlistens = TAILQ_HEAD_INITIALIZER(xlistens);

static struct xlisten	*xl_find(const char *, int);
static struct xlisten	*xl_add(const char *, int, int);
static void		 xl_free(struct xlisten *);
static void		 xl_store_name(char *, size_t, const char *, int);
static void		 xl_stored(const char *, int);
static int		 xl_is_listener(int, int);

static struct xlisten *
xl_find(const char *id, int port)
{
	struct xlisten *x;

	TAILQ_FOREACH(x, &xlistens, entry)
		if (x->port == port && strcmp(x->id, id) == 0)
			return x;
	return NULL;
}

static struct xlisten *
xl_add(const char *id, int port, int fd)
{
	struct xlisten *x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	strlcpy(x->id, id, sizeof(x->id));
	x->port = port;
	x->fd = fd;
	TAILQ_INSERT_TAIL(&xlistens, x, entry);
	return x;
}

/* Out of the list, closed, and out of systemd's fd store. */
static void
xl_free(struct xlisten *x)
{
	char name[FDSTORE_NAME_MAX];

	xl_store_name(name, sizeof(name), x->id, x->port);
	fdstore_remove(name);
	TAILQ_REMOVE(&xlistens, x, entry);
	close(x->fd);
	free(x);
}

/* Its name in systemd's fd store: hk.APP.SVC.PORT (names have no dot). */
static void
xl_store_name(char *buf, size_t len, const char *id, int port)
{
	char *p;

	snprintf(buf, len, "hk.%s.%d", id, port);
	if ((p = strchr(buf, '/')) != NULL)
		*p = '.';
}

/*
 * A TCP socket of this host's loopback, 127.0.0.1:port (0: a port the
 * kernel picks), listening with backlog unless that is 0 (bound only:
 * the port is kept for the child to bind): the fd, and its port in
 * *got when got is not NULL; -1 with the reason.
 */
int
xlisten_bind(int port, int backlog, int *got, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, on = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1 ||
	    (backlog > 0 && listen(fd, backlog) == -1)) {
		snprintf(err, errlen, "bind 127.0.0.1:%d: %s", port,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (got != NULL)
		*got = ntohs(sin.sin_port);
	return fd;
}

/* 1 if fd is an IPv4 TCP socket listening on port. */
static int
xl_is_listener(int fd, int port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int acc = 0;
	socklen_t alen = sizeof(acc);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) == -1 ||
	    !acc || getsockname(fd, (struct sockaddr *)&sin, &len) == -1 ||
	    sin.sin_family != AF_INET)
		return 0;
	return ntohs(sin.sin_port) == port;
}

/*
 * The shared socket of in's service on port, bound now if no instance
 * holds it: *fd is the list's (the caller does not close it), and in
 * holds a reference until xlisten_drop().
 */
int
xlisten_take(struct inst *in, int port, int *fd, char *err, size_t errlen)
{
	char name[FDSTORE_NAME_MAX];
	struct xlisten *x;
	int lfd;

	if ((x = xl_find(in->id, port)) == NULL) {
		if ((lfd = xlisten_bind(port, XLISTEN_BACKLOG, NULL, err,
		    errlen)) == -1)
			return -1;
		if ((x = xl_add(in->id, port, lfd)) == NULL) {
			close(lfd);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		xl_store_name(name, sizeof(name), in->id, port);
		fdstore_put(name, lfd);
		log_debug("service=%s: listening on 127.0.0.1:%d for its "
		    "replicas", in->id, port);
	}
	x->refs++;
	*fd = x->fd;
	return 0;
}

/*
 * An adopted replica (pidfd) shares its service's socket on port: a
 * reference for it, and the socket copied from it if none is known.
 * 0 when it holds one; -1 when the socket could not be had (a replica
 * started later binds the port again, and fails while it is held).
 */
int
xlisten_adopt(struct inst *in, int port, int pidfd)
{
	char name[FDSTORE_NAME_MAX];
	struct xlisten *x;
	int fd;

	if ((x = xl_find(in->id, port)) != NULL) {
		x->refs++;
		return 0;
	}
	if ((fd = (int)syscall(SYS_pidfd_getfd, pidfd, 3, 0)) == -1) {
		log_warn("service=%s: unable to take the listening socket of "
		    "%s", in->id, in->what);
		return -1;
	}
	if (!xl_is_listener(fd, port) || (x = xl_add(in->id, port,
	    fd)) == NULL) {
		log_warnx("service=%s: fd 3 of %s is not its listening socket "
		    "on port %d", in->id, in->what, port);
		close(fd);
		return -1;
	}
	log_info("service=%s: listening socket on port %d taken back from "
	    "%s", in->id, port, in->what);
	xl_store_name(name, sizeof(name), in->id, port);
	fdstore_put(name, fd);
	x->refs = 1;
	return 0;
}

/*
 * xlisten_adopt() of a replica known by its pid and its start time (a
 * unit's main process): the pid is checked to be that process still.
 */
int
xlisten_adopt_pid(struct inst *in, int port, pid_t pid, int64_t start)
{
	struct xlisten *x;
	int64_t now;
	int pidfd, r;

	if ((x = xl_find(in->id, port)) != NULL) {
		x->refs++;
		return 0;
	}
	if (pid <= 0 || (pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1) {
		log_warnx("service=%s: no process of %s to take its listening "
		    "socket from", in->id, in->what);
		return -1;
	}
	if (start != 0 && (proc_starttime(pid, &now) == -1 || now != start)) {
		log_warnx("service=%s: pid %ld is no longer %s", in->id,
		    (long)pid, in->what);
		close(pidfd);
		return -1;
	}
	r = xlisten_adopt(in, port, pidfd);
	close(pidfd);
	return r;
}

/* The shared socket of id's service on port, or -1 if none is held. */
int
xlisten_fd(const char *id, int port)
{
	struct xlisten *x;

	return (x = xl_find(id, port)) != NULL ? x->fd : -1;
}

/* in no longer holds its reference: the last one closes the socket. */
void
xlisten_drop(const struct inst *in, int port)
{
	struct xlisten *x;

	if ((x = xl_find(in->id, port)) == NULL || --x->refs > 0)
		return;
	xl_free(x);
}

/*
 * A socket systemd kept for an earlier hk-scale: known again, held by no
 * instance until an adopted replica or a new one takes it.  A name not
 * ours, or an fd that is not such a socket, is closed.
 */
static void
xl_stored(const char *name, int fd)
{
	char id[SCALE_ID_MAX], *dot, *end;
	struct xlisten *x;
	long port;

	if (strncmp(name, "hk.", 3) != 0 ||
	    strlcpy(id, name + 3, sizeof(id)) >= sizeof(id) ||
	    (dot = strrchr(id, '.')) == NULL)
		goto bad;
	*dot++ = '\0';
	port = strtol(dot, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535 || !xl_is_listener(fd,
	    (int)port) || (dot = strchr(id, '.')) == NULL)
		goto bad;
	*dot = '/';
	if ((x = xl_find(id, (int)port)) != NULL) {
		/* kept twice: the name's fds go, the first is kept again */
		fdstore_remove(name);
		fdstore_put(name, x->fd);
		close(fd);
		return;
	}
	if (xl_add(id, (int)port, fd) == NULL)
		goto bad;
	log_info("service=%s: listening socket on port %d kept by systemd",
	    id, (int)port);
	return;
bad:
	log_warnx("fd store: %s is not a listening socket of hk's: closed",
	    name);
	fdstore_remove(name);
	close(fd);
}

/* At start, before the rows are adopted: the sockets systemd kept. */
void
xlisten_restore(void)
{
	fdstore_take(xl_stored);
}

/* Once the rows are adopted: a kept socket no replica claimed is closed. */
void
xlisten_prune(void)
{
	struct xlisten *x, *tmp;

	TAILQ_FOREACH_SAFE(x, &xlistens, entry, tmp)
		if (x->refs == 0) {
			log_info("service=%s: listening socket on port %d "
			    "closed: no replica holds it", x->id, x->port);
			xl_free(x);
		}
}
