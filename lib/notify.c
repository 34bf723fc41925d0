/*
 * notify.c - readiness to s6 and to systemd (see notify.h).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"

int
notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	socklen_t len;
	ssize_t n;
	int fd;

	if (path == NULL || path[0] == '\0')
		return 0;
	if ((path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sun.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	len = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	else
		len++;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	n = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, len);
	close(fd);
	return n == (ssize_t)strlen(msg) ? 0 : -1;
}

int
notify_fd_valid(int fd)
{
	return fd > 2 && fcntl(fd, F_GETFD) != -1 ? 0 : -1;
}

int
notify_ready(int fd)
{
	int rc = 0;

	if (fd >= 0) {
		if (write(fd, "\n", 1) != 1)
			rc = -1;
		close(fd);
	}
	if (notify_send("READY=1") == -1)
		rc = -1;
	return rc;
}

int
notify_reloading(void)
{
	struct timespec ts;
	char msg[96];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%lld",
	    (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	return notify_send(msg);
}

int
notify_stopping(void)
{
	return notify_send("STOPPING=1");
}

int
notify_status(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	return notify_send(msg);
}
