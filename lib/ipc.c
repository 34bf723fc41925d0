/*
 * ipc.c - strict JSON messages over Unix sockets (see ipc.h).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ipc.h"
#include "log.h"

static int	deadline_left(const struct timespec *);
static int	unix_addr(struct sockaddr_un *, const char *, char *, size_t);

/* Fills a sockaddr_un for path; -1 with ENAMETOOLONG if it does not fit. */
static int
unix_addr(struct sockaddr_un *sun, const char *path, char *err, size_t errlen)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun->sun_path, path, strlen(path) + 1);
	return 0;
}

json_t *
ipc_decode(const char *buf, size_t len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *msg;

	if (len > IPC_MSG_MAX) {
		snprintf(err, errlen, "message of %zu bytes exceeds %d", len,
		    IPC_MSG_MAX);
		return NULL;
	}
	msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (msg == NULL) {
		snprintf(err, errlen, "invalid JSON: %s", jerr.text);
		return NULL;
	}
	if (!json_is_object(msg)) {
		snprintf(err, errlen, "message is not an object");
		json_decref(msg);
		return NULL;
	}
	return msg;
}

const char *
ipc_op(const json_t *msg)
{
	return json_string_value(json_object_get(msg, "op"));
}

int
ipc_connect(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int fd, saved;

	if (unix_addr(&sun, path, err, errlen) == -1)
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* A local connect does not block; ipc_recv() waits with poll. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int
ipc_send(int fd, const json_t *msg, char *err, size_t errlen)
{
	return ipc_send_fd(fd, msg, -1, err, errlen);
}

/*
 * As ipc_send, with a descriptor passed along (SCM_RIGHTS) when pass is
 * not -1.  The sender keeps its own copy, to close.
 */
int
ipc_send_fd(int fd, const json_t *msg, int pass, char *err, size_t errlen)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *c;
	char *text;
	size_t len;
	ssize_t n;

	text = json_dumps(msg, JSON_COMPACT);
	if (text == NULL) {
		snprintf(err, errlen, "cannot encode message");
		errno = ENOMEM;
		return -1;
	}
	len = strlen(text);
	if (len > IPC_MSG_MAX) {
		snprintf(err, errlen, "message of %zu bytes exceeds %d", len,
		    IPC_MSG_MAX);
		free(text);
		errno = EMSGSIZE;
		return -1;
	}
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = text;
	iov.iov_len = len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (pass != -1) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass, sizeof(int));
	}
	n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	free(text);
	if (n == -1 || (size_t)n != len) {
		snprintf(err, errlen, "send: %s",
		    n == -1 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

/*
 * recv(2) of one message that may carry descriptors: the first is
 * returned in *fd (close-on-exec), -1 when none came; any more, and any
 * of a message cut short, are closed.
 */
ssize_t
ipc_recv_fd(int sock, char *buf, size_t len, int *fd)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct iovec iov = { buf, len };
	struct msghdr mh;
	struct cmsghdr *c;
	size_t i, nfd;
	ssize_t n;
	int got;

	*fd = -1;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	if ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) == -1)
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			    sizeof(int));
			if (*fd == -1 && !(mh.msg_flags & MSG_TRUNC))
				*fd = got;
			else
				close(got);
		}
	}
	return n;
}

static int
deadline_left(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000LL +
	    (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

json_t *
ipc_recv(int fd, int timeout_ms, char *err, size_t errlen)
{
	struct timespec deadline;
	struct pollfd pfd;
	char *buf;
	ssize_t n;
	json_t *msg;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	for (;;) {
		r = poll(&pfd, 1, deadline_left(&deadline));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return NULL;
		}
		if (r == 0) {
			snprintf(err, errlen, "no reply within %d ms",
			    timeout_ms);
			errno = ETIMEDOUT;
			return NULL;
		}
		break;
	}
	/* One byte more than allowed tells an oversized message apart. */
	if ((buf = malloc(IPC_MSG_MAX + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n = recv(fd, buf, IPC_MSG_MAX + 1, 0);
	if (n <= 0) {
		snprintf(err, errlen, "recv: %s",
		    n == 0 ? "connection closed" : strerror(errno));
		free(buf);
		if (n == 0)
			errno = ECONNRESET;
		return NULL;
	}
	msg = ipc_decode(buf, (size_t)n, err, errlen);
	free(buf);
	return msg;
}

int
ipc_call(const char *path, const json_t *req, json_t **reply, int timeout_ms,
    char *err, size_t errlen)
{
	int fd, saved;

	if ((fd = ipc_connect(path, err, errlen)) == -1)
		return -1;
	if (ipc_send(fd, req, err, errlen) == -1 ||
	    (*reply = ipc_recv(fd, timeout_ms, err, errlen)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * Binds a listening socket of the given type (SOCK_SEQPACKET, SOCK_DGRAM)
 * at path, mode 0660.  A stale socket file is replaced only when nobody
 * answers on it, so a second daemon cannot steal a live one's socket.
 */
int
ipc_listen(const char *path, int type, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int fd, probe, saved;

	if (unix_addr(&sun, path, err, errlen) == -1)
		return -1;
	probe = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (probe != -1 && connect(probe, (struct sockaddr *)&sun,
	    sizeof(sun)) == 0) {
		close(probe);
		snprintf(err, errlen, "%s: another process listens there",
		    path);
		errno = EADDRINUSE;
		return -1;
	}
	if (probe != -1)
		close(probe);
	unlink(path);
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(path, 0660) == -1 ||
	    (type != SOCK_DGRAM && listen(fd, 128) == -1)) {
		saved = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* Root, our uid, or our group as the peer's primary one. */
static int
cred_allowed(const struct ucred *c)
{
	return c->uid == 0 || c->uid == geteuid() || c->gid == getegid();
}

/* Our group among n groups. */
static int
groups_have_ours(const gid_t *g, size_t n)
{
	gid_t ours = getegid();
	size_t i;

	for (i = 0; i < n; i++)
		if (g[i] == ours)
			return 1;
	return 0;
}

int
ipc_peer_allowed(int fd)
{
	struct ucred cred;
	gid_t some[64], *g = some;
	socklen_t len = sizeof(cred), glen = sizeof(some);
	int ok;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		return 0;
	if (cred_allowed(&cred))
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &glen) == -1) {
		/* ERANGE: glen says how many there are */
		if (errno != ERANGE || (g = malloc(glen)) == NULL)
			return 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &glen) == -1) {
			free(g);
			return 0;
		}
	}
	ok = groups_have_ours(g, glen / sizeof(*g));
	if (g != some)
		free(g);
	return ok;
}

/*
 * A datagram carries no supplementary groups: they are read from the
 * sender's /proc/PID/status ("Groups:"), which SCM_CREDENTIALS names.
 */
int
ipc_sender_allowed(const struct ucred *c)
{
	char path[64], *line = NULL, *p, *end;
	size_t cap = 0;
	FILE *f;
	int ok = 0;
	unsigned long v;

	if (cred_allowed(c))
		return 1;
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)c->pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (getline(&line, &cap, f) != -1) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (p = line + 7; !ok; p = end) {
			errno = 0;
			v = strtoul(p, &end, 10);
			if (end == p || errno != 0)
				break;
			ok = (gid_t)v == getegid();
		}
		break;
	}
	free(line);
	fclose(f);
	return ok;
}

/*
 * A connection on the listening socket sock names, non-blocking, from root
 * or our own uid; -1 when there is none to take (logged unless it is only
 * EAGAIN or EINTR) or its peer is refused.
 */
int
ipc_accept(int listenfd, const char *sock)
{
	static int spare = -2;	/* kept for EMFILE; -2: not opened yet */
	int fd;

	if (spare == -2)
		spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if ((fd = accept4(listenfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1) {
		if ((errno == EMFILE || errno == ENFILE) && spare >= 0) {
			close(spare);
			if ((fd = accept(listenfd, NULL, NULL)) != -1)
				close(fd);
			spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
			log_warnx("%s: a connection refused: no descriptor "
			    "left", sock);
		} else if (errno != EAGAIN && errno != EINTR)
			log_warn("%s: accept", sock);
		return -1;
	}
	if (!ipc_peer_allowed(fd)) {
		log_warnx("%s: peer refused: not root, our uid or a member "
		    "of our group", sock);
		close(fd);
		return -1;
	}
	return fd;
}
