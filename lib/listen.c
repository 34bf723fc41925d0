/*
 * listen.c - TCP listeners (listen.h): the one a supervisor passed, or
 * one bound to host:port.  The gateway and every [metrics] listener bind
 * through listen_tcp, so that an address means the same to all of them.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "listen.h"
#include "log.h"

int
listen_inherit(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int fl;

	if (pid == NULL || fds == NULL ||
	    strtonum(pid, 1, INT32_MAX, NULL) != getpid())
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (strcmp(fds, "1") != 0) {
		log_warnx("LISTEN_FDS=%s: only one listener is used", fds);
		return -1;
	}
	if ((fl = fcntl(LISTEN_INHERITED_FD, F_GETFL)) == -1 ||
	    fcntl(LISTEN_INHERITED_FD, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(LISTEN_INHERITED_FD, F_SETFD, FD_CLOEXEC) == -1)
		return -2;
	return LISTEN_INHERITED_FD;
}

int
listen_tcp(const char *addr, int backlog, char *err, size_t errlen, int *bad)
{
	struct addrinfo hints, *res;
	char host[CONFIG_ADDR_MAX + 1];
	const char *colon;
	size_t hl;
	int fd, one = 1, r;

	*bad = 1;
	if ((colon = strrchr(addr, ':')) == NULL ||
	    (hl = (size_t)(colon - addr)) >= sizeof(host)) {
		(void)snprintf(err, errlen, "%s: not host:port", addr);
		return -1;
	}
	memcpy(host, addr, hl);
	host[hl] = '\0';
	if (hl > 1 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((r = getaddrinfo(host, colon + 1, &hints, &res)) != 0) {
		(void)snprintf(err, errlen, "%s: %s", addr, gai_strerror(r));
		return -1;
	}
	*bad = 0;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) == -1 || bind(fd, res->ai_addr,
	    res->ai_addrlen) == -1 || listen(fd, backlog) == -1) {
		(void)snprintf(err, errlen, "%s: %s", addr, strerror(errno));
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}
