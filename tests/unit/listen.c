/*
 * listen.c - lib/listen.c: host:port bound (IPv4, bracketed IPv6), the
 * addresses refused as wrong and told from a call that failed, and the
 * listener systemd passes on fd 3 taken only when it is ours and alone.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "listen.h"
#include "log.h"
#include "tap.h"

#define X32		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define LONG_HOST	X32 X32 X32 X32 X32 X32 X32 X32	/* 256 bytes */

static const struct {
	const char	*what, *addr, *err;
} wrong[] = {
	{ "no port", "127.0.0.1", "127.0.0.1: not host:port" },
	{ "a port by name", "127.0.0.1:http", NULL },
	{ "a host longer than CONFIG_ADDR_MAX", LONG_HOST ":80", NULL },
};

/* Listening, non-blocking and close-on-exec: what every caller relies on. */
static int
listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 &&
	    on && (fcntl(fd, F_GETFL) & O_NONBLOCK) &&
	    (fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

static int
port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return -1;
	return ss.ss_family == AF_INET ?
	    ntohs(((struct sockaddr_in *)&ss)->sin_port) :
	    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static void
t_tcp(void)
{
	char err[256], addr[64];
	size_t i;
	int fd, fd2, bad;

	fd = listen_tcp("127.0.0.1:0", 8, err, sizeof(err), &bad);
	ok(fd != -1 && bad == 0 && listening(fd) && port_of(fd) > 0,
	    "IPv4 host:port: bound, listening, non-blocking, close-on-exec");
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port_of(fd));
	fd2 = listen_tcp(addr, 8, err, sizeof(err), &bad);
	ok(fd2 == -1 && bad == 0 && strstr(err, strerror(EADDRINUSE)),
	    "a port in use is a failed call, not a wrong address: %s", err);
	close(fd);

	/* ::1 is this machine's as 127.0.0.1 is: its absence fails */
	fd = listen_tcp("[::1]:0", 8, err, sizeof(err), &bad);
	ok(fd != -1 && listening(fd) && port_of(fd) > 0,
	    "a bracketed IPv6 host: %s", fd != -1 ? "[::1]" : err);
	if (fd != -1)
		close(fd);

	for (i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		err[0] = '\0';
		fd = listen_tcp(wrong[i].addr, 8, err, sizeof(err), &bad);
		ok(fd == -1 && bad == 1 && err[0] != '\0' &&
		    (wrong[i].err == NULL || strcmp(err, wrong[i].err) == 0),
		    "wrong address: %s", wrong[i].what);
	}
}

/* systemd's variables as it sets them; pid 0: some other process's. */
static void
pass(int pid, const char *fds)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", pid != 0 ? pid : (int)getpid() + 1);
	setenv("LISTEN_PID", buf, 1);
	setenv("LISTEN_FDS", fds, 1);
	setenv("LISTEN_FDNAMES", "gateway", 1);
}

static void
t_inherit(void)
{
	int s, me = (int)getpid();

	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	isint(listen_inherit(), -1, "nothing passed: none");

	pass(0, "1");
	isint(listen_inherit(), -1, "passed to another process: none");
	ok(getenv("LISTEN_FDS") != NULL, "and its variables are left");

	pass(me, "2");
	isint(listen_inherit(), -1, "two passed: none used");
	ok(getenv("LISTEN_PID") == NULL && getenv("LISTEN_FDS") == NULL &&
	    getenv("LISTEN_FDNAMES") == NULL, "and the variables are unset");

	/* fd 3 as systemd leaves it: a blocking listener, inherited */
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s == -1 || listen(s, 1) == -1 ||
	    (s != LISTEN_INHERITED_FD && dup2(s, LISTEN_INHERITED_FD) == -1)) {
		ok(0, "a listening socket on fd 3: %s", strerror(errno));
		ok(0, "so nothing inherited was checked");
		return;
	}
	if (s != LISTEN_INHERITED_FD)
		close(s);
	pass(me, "1");
	isint(listen_inherit(), LISTEN_INHERITED_FD, "one passed: fd 3");
	ok(listening(LISTEN_INHERITED_FD) && getenv("LISTEN_PID") == NULL,
	    "made non-blocking and close-on-exec, the variables unset");
	close(LISTEN_INHERITED_FD);
}

int
main(void)
{
	log_init("listen-test", 0);
	plan(13);
	t_tcp();
	t_inherit();
	return done();
}
