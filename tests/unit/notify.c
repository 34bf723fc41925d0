/*
 * notify.c - readiness both ways: a newline on the s6 notification fd, and
 * READY=1 / RELOADING=1 / STOPPING=1 datagrams on a NOTIFY_SOCKET, as
 * systemd would read them (here a socket of the test's own, path and
 * abstract).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "notify.h"
#include "tap.h"

static int
bind_dgram(const char *name, int abstract)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strlcpy(sun.sun_path + (abstract ? 1 : 0), name,
	    sizeof(sun.sun_path) - 1);
	len = sizeof(sun.sun_family) + strlen(name) + (abstract ? 1 : 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sun, len) == -1)
		return -1;
	return fd;
}

static void
recv_is(int fd, const char *want, const char *name)
{
	char buf[256];
	ssize_t n;

	n = recv(fd, buf, sizeof(buf) - 1, 0);
	buf[n < 0 ? 0 : n] = '\0';
	is(buf, want, "%s", name);
}

int
main(void)
{
	char path[64], abs[64], buf[8], env[80];
	int p[2], fd, afd;
	ssize_t n;

	plan(8);
	snprintf(path, sizeof(path), "/tmp/hk-notify-test.%d", (int)getpid());
	snprintf(abs, sizeof(abs), "hk-notify-test.%d", (int)getpid());
	unlink(path);
	fd = bind_dgram(path, 0);
	afd = bind_dgram(abs, 1);
	ok(fd != -1 && afd != -1, "test sockets bound");

	pipe(p);
	setenv("NOTIFY_SOCKET", path, 1);
	ok(notify_ready(p[1]) == 0, "notify_ready succeeds");
	n = read(p[0], buf, sizeof(buf));
	ok(n == 1 && buf[0] == '\n', "a newline reaches the s6 notification fd");
	ok(read(p[0], buf, sizeof(buf)) == 0,
	    "and the fd is closed afterwards");
	recv_is(fd, "READY=1", "READY=1 reaches NOTIFY_SOCKET");
	notify_stopping();
	recv_is(fd, "STOPPING=1", "STOPPING=1");

	snprintf(env, sizeof(env), "@%s", abs);
	setenv("NOTIFY_SOCKET", env, 1);
	notify_reloading();
	n = recv(afd, buf, 8, 0);
	ok(n == 8 && memcmp(buf, "RELOADIN", 8) == 0,
	    "an abstract NOTIFY_SOCKET gets RELOADING=1");
	unsetenv("NOTIFY_SOCKET");
	ok(notify_ready(-1) == 0, "without NOTIFY_SOCKET or fd, nothing fails");
	unlink(path);
	return done();
}
