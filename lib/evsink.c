/*
 * evsink.c - records to events.sock that never block the sender.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evsink.h"
#include "ipc.h"

struct evsink {
	int			fd;
	struct sockaddr_un	addr;
	uint64_t		dropped;
};

struct evsink *
evsink_open(const char *runtime_dir)
{
	struct evsink *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->addr.sun_family = AF_UNIX;
	if ((size_t)snprintf(s->addr.sun_path, sizeof(s->addr.sun_path),
	    "%s/events.sock", runtime_dir) >= sizeof(s->addr.sun_path)) {
		free(s);
		errno = ENAMETOOLONG;
		return NULL;
	}
	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1) {
		free(s);
		return NULL;
	}
	return s;
}

void
evsink_close(struct evsink *s)
{
	if (s == NULL)
		return;
	close(s->fd);
	free(s);
}

int
evsink_send(struct evsink *s, const json_t *rec)
{
	char *text;
	int rc;

	if (s == NULL)
		return -1;
	if ((text = json_dumps(rec, JSON_COMPACT)) == NULL) {
		s->dropped++;
		return -1;
	}
	rc = evsink_send_raw(s, text, strlen(text));
	free(text);
	return rc;
}

int
evsink_send_raw(struct evsink *s, const char *text, size_t len)
{
	ssize_t n;

	if (s == NULL)
		return -1;
	n = len > IPC_MSG_MAX ? -1 : sendto(s->fd, text, len, MSG_NOSIGNAL,
	    (struct sockaddr *)&s->addr, sizeof(s->addr));
	if (n != (ssize_t)len) {
		s->dropped++;
		return -1;
	}
	return 0;
}

void
evsink_event(struct evsink *s, const char *kind, const char *service,
    json_t *detail)
{
	struct timespec ts;
	json_t *rec;

	clock_gettime(CLOCK_REALTIME, &ts);
	rec = json_pack("{s:s, s:s, s:s, s:I, s:o}", "op", "event",
	    "kind", kind, "service", service,
	    "at", (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
	    "detail", detail != NULL ? detail : json_object());
	if (rec == NULL) {
		if (s != NULL)
			s->dropped++;
		return;
	}
	evsink_send(s, rec);
	json_decref(rec);
}

uint64_t
evsink_dropped(const struct evsink *s)
{
	return s == NULL ? 0 : s->dropped;
}
