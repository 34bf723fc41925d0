/*
 * body.c - request bodies read whole before they are forwarded
 * (request_buffering, the default): many backends cannot read a chunked
 * body (Python's http.server gives its handler none), and none should see
 * a body the gateway may still refuse.  The body is de-chunked as it
 * arrives and sent on with a Content-Length once it is complete.
 *
 * Up to BODY_MEM_MAX bytes stay in the connection's buffer to the backend
 * (c->up), where the head is put in front of them when the request is
 * forwarded.  A larger body goes to a spool file: an unnamed file
 * (O_TMPFILE) in spool_dir, gone when it is closed, sent to the backend
 * by sendfile(2).  So the gateway's memory does not grow with bodies: 128
 * requests of 4 MiB in flight are 512 MiB on disk, not in the process.
 */
#include <sys/sendfile.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activate.h"
#include "log.h"

#define SENDFILE_MAX	(1 << 20)	/* bytes per call */

static int	spool_open(void);
static int	spool_write(struct conn *, const char *, size_t);

/* An unnamed file in spool_dir; mkostemp and unlink where O_TMPFILE is
 * not supported.  -1 with errno. */
static int
spool_open(void)
{
	char path[CONFIG_URL_MAX + 32];
	int fd, saved;

	fd = open(gw->cfg.spool_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd != -1 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd;
	if ((size_t)snprintf(path, sizeof(path), "%s/hk-body.XXXXXX",
	    gw->cfg.spool_dir) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkostemp(path, O_CLOEXEC)) == -1)
		return -1;
	if (unlink(path) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int
spool_write(struct conn *c, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(c->spool_fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		c->spool_len += (uint64_t)w;
	}
	return 0;
}

/*
 * Moves what c->up holds of the body into a new spool file.  -1 on a
 * failure, logged, with c->refuse set to the answer.
 */
int
body_spill(struct conn *c)
{
	if (c->spool_fd != -1)
		return 0;
	if ((c->spool_fd = spool_open()) == -1 ||
	    spool_write(c, c->up.data + c->up.off, xbuf_used(&c->up)) == -1) {
		log_warn("unable to spool a request body in %s",
		    gw->cfg.spool_dir);
		c->refuse = 503;
		return -1;
	}
	/* only the request's head uses c->up now, mostly under a page */
	xbuf_reset(&c->up);
	xbuf_release(&c->up);
	return 0;
}

/* Keeps n more bytes of a body being read whole.  -1 as body_spill. */
int
body_store(struct conn *c, const char *p, size_t n)
{
	if (c->spool_fd == -1 && xbuf_used(&c->up) + n <= BODY_MEM_MAX)
		return xbuf_add(&c->up, p, n);
	if (body_spill(c) == -1)
		return -1;
	if (spool_write(c, p, n) == -1) {
		log_warn("unable to spool a request body in %s",
		    gw->cfg.spool_dir);
		c->refuse = 503;
		return -1;
	}
	return 0;
}

/* Spooled bytes not yet sent to the backend. */
int
body_pending(const struct conn *c)
{
	return c->spool_fd != -1 && c->spool_off < c->spool_len;
}

/*
 * Sends spooled bytes to the backend's socket fd until it would block.
 * 0, or -1 with errno on a failure of the socket.
 */
int
body_send(struct conn *c, int fd)
{
	off_t off;
	size_t want;
	ssize_t n;

	while (body_pending(c)) {
		off = (off_t)c->spool_off;
		want = c->spool_len - c->spool_off > SENDFILE_MAX ?
		    SENDFILE_MAX : (size_t)(c->spool_len - c->spool_off);
		n = sendfile(fd, c->spool_fd, &off, want);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n == -1)
			return -1;
		if (n == 0) {	/* the file is shorter: it was changed */
			errno = EIO;
			return -1;
		}
		c->spool_off = (uint64_t)off;
	}
	return 0;
}

void
body_close(struct conn *c)
{
	if (c->spool_fd != -1)
		close(c->spool_fd);
	c->spool_fd = -1;
	c->spool_len = c->spool_off = 0;
}
