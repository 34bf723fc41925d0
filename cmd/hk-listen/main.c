/*
 * hk-listen - the s6 backend's helper (hk-scale(8), The listen helper):
 * what each replica of a service with a fixed port runs, from its run
 * script, as the service's user.  It has one job: connect to the Unix
 * socket hk-scale serves for the port, receive the one listening socket
 * the replicas share, place it at fd 3 with LISTEN_FDS=1 and LISTEN_PID
 * its own pid (socket activation's protocol, sd_listen_fds(3)), and exec
 * the service's command, which keeps that pid.
 *
 * An s6-supervised process is not hk-scale's child, so hk-scale cannot
 * give it the socket across fork as the exec backend does; s6's
 * notification-fd of such a service is another number, so fd 3 is free.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#define PROG		"hk-listen"
#define LISTEN_FD	3	/* SD_LISTEN_FDS_START */

/* Exactly its SYNOPSIS in hk-scale(8), The listen helper. */
static const char usage_text[] =
    "usage: hk-listen socket command [argument ...]\n";

static int	receive_fd(const char *);
static int	is_listener(int);
static int	place_fd(int);
static int	usage_error(const char *, const char *);

/* The one fd hk-scale sends on connection to path; -1 with a message. */
static int
receive_fd(const char *path)
{
	struct sockaddr_un sun;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr msg;
	struct cmsghdr *c;
	struct iovec iov;
	char byte;
	ssize_t n;
	int s, fd = -1;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "%s: error: %s: path too long\n", PROG, path);
		return -1;
	}
	strncpy(sun.sun_path, path, sizeof(sun.sun_path) - 1);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "%s: error: connect %s: %s\n", PROG, path,
		    strerror(errno));
		if (s != -1)
			close(s);
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = &byte;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	do
		n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	close(s);
	if (n == -1) {
		fprintf(stderr, "%s: error: receive from %s: %s\n", PROG, path,
		    strerror(errno));
		return -1;
	}
	c = CMSG_FIRSTHDR(&msg);
	if (n != 1 || (msg.msg_flags & MSG_CTRUNC) || c == NULL ||
	    c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int))) {
		fprintf(stderr, "%s: error: %s: no socket received "
		    "(refused: not the service's user?)\n", PROG, path);
		return -1;
	}
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

/* A listening stream socket: anything else is not what hk-scale sends. */
static int
is_listener(int fd)
{
	int acc = 0;
	socklen_t len = sizeof(acc);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 &&
	    acc;
}

/* fd made LISTEN_FD, open across exec. */
static int
place_fd(int fd)
{
	if (fd != LISTEN_FD) {
		if (dup2(fd, LISTEN_FD) == -1)
			return -1;
		close(fd);
	}
	return fcntl(LISTEN_FD, F_SETFD, 0);
}

/* "hk-listen: error: WHY" then the usage, as every hk program says it. */
static int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: error: ", PROG);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	fputs(usage_text, stderr);
	return EX_USAGE;
}

int
main(int argc, char *argv[])
{
	char pid[24];
	int fd;

	if (argc == 2 && (strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0)) {
		fputs(usage_text, stdout);
		return EX_OK;
	}
	if (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-')
		return usage_error("unrecognized option '%s'", argv[1]);
	if (argc > 1 && argv[1][0] == '-')
		return usage_error("invalid option -- '%.1s'", argv[1] + 1);
	if (argc < 3)
		return usage_error("%s", argc < 2 ? "no socket and no command" :
		    "no command");
	if ((fd = receive_fd(argv[1])) == -1)
		return EX_UNAVAILABLE;
	if (!is_listener(fd)) {
		fprintf(stderr, "%s: error: %s: the fd received is not a "
		    "listening socket\n", PROG, argv[1]);
		return EX_PROTOCOL;
	}
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (place_fd(fd) == -1 || setenv("LISTEN_FDS", "1", 1) == -1 ||
	    setenv("LISTEN_PID", pid, 1) == -1) {
		fprintf(stderr, "%s: error: fd %d: %s\n", PROG, LISTEN_FD,
		    strerror(errno));
		return EX_OSERR;
	}
	unsetenv("LISTEN_FDNAMES");
	execvp(argv[2], argv + 2);
	fprintf(stderr, "%s: error: %s: %s\n", PROG, argv[2], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
