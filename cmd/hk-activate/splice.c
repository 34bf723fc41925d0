/*
 * splice.c - a large response body goes from the backend's socket to the
 * client's through a pipe, by splice(2), without being copied into the
 * gateway and out again.
 *
 * A response takes this path once its head has been parsed, when its body
 * has a Content-Length with at least SPLICE_MIN bytes still to come and
 * goes to the client as it is (not re-framed as chunks).  Everything else
 * (chunked bodies, bodies read to the close, a 1.0 client's unchunked
 * copy, tunnels) goes through c->out as before.  Once a response is on the
 * pipe it stays there to its end: body bytes already in c->out are older
 * and go first (client_write), and nothing is added to c->out behind them.
 * The parser still counts the body, fed with the spliced length (it reads
 * no body byte in that state), so that the end of the response is found
 * where it always is.
 *
 * Pipes are kept in gw->pipes for the next response; one holding bytes of
 * an aborted exchange is closed instead.  A pipe that cannot be had (the
 * descriptor limit) or a kernel that refuses the splice leaves the
 * response on the copying path: the first refusal turns splicing off for
 * the life of the process, with a warning.
 */
#include <errno.h>
#include <fcntl.h>	/* splice, pipe2, F_GETPIPE_SZ: _GNU_SOURCE */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "activate.h"
#include "log.h"

static int	pipe_get(struct conn *);

/* The response may go on the pipe from here on (after its head). */
int
splice_begin(struct conn *c)
{
	if (c->splicing)
		return 1;
	if (gw->splice_off || c->state != CS_FORWARD || !c->resp_started ||
	    c->resp_done || c->resp_nobody || c->chunked_out ||
	    (c->resp.flags & F_CHUNKED) ||
	    c->resp.content_length == ULLONG_MAX ||
	    c->resp.content_length < SPLICE_MIN)
		return 0;
	if (pipe_get(c) == -1)
		return 0;
	c->splicing = 1;
	return 1;
}

static int
pipe_get(struct conn *c)
{
	int p[2];

	if (gw->npipes > 0) {
		gw->npipes--;
		c->pipe_r = gw->pipes[gw->npipes][0];
		c->pipe_w = gw->pipes[gw->npipes][1];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	if (gw->pipe_size == 0) {
		int sz = fcntl(p[0], F_GETPIPE_SZ);

		gw->pipe_size = sz > 0 ? (size_t)sz : 4096;
	}
	c->pipe_r = p[0];
	c->pipe_w = p[1];
	return 0;
}

/* The pipe back to the pool, or closed if it still holds bytes. */
void
splice_end(struct conn *c)
{
	c->splicing = c->pipe_full = 0;
	if (c->pipe_r == -1)
		return;
	if (c->piped == 0 && gw->npipes < PIPES_MAX) {
		gw->pipes[gw->npipes][0] = c->pipe_r;
		gw->pipes[gw->npipes][1] = c->pipe_w;
		gw->npipes++;
	} else {
		close(c->pipe_r);
		close(c->pipe_w);
	}
	c->pipe_r = c->pipe_w = -1;
	c->piped = 0;
}

/* Bytes the pipe may still take for this response. */
size_t
splice_room(const struct conn *c)
{
	if (c->pipe_full || c->piped >= gw->pipe_size)
		return 0;
	return gw->pipe_size - c->piped;
}

/*
 * From the backend into the pipe, at most the rest of the body: bytes
 * moved, 0 at the backend's end, -1 with errno (EAGAIN: nothing now).
 */
ssize_t
splice_in(struct conn *c, int fd)
{
	size_t want = splice_room(c);
	ssize_t n;

	if (want > c->resp.content_length)
		want = (size_t)c->resp.content_length;
	if (want == 0) {
		errno = EAGAIN;
		return -1;
	}
	do
		n = splice(fd, NULL, c->pipe_w, NULL, want,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	while (n == -1 && errno == EINTR);
	if (n == -1 && errno == EAGAIN && c->piped > 0)
		c->pipe_full = 1;	/* its slots, not its bytes, ran out */
	if (n == -1 && errno == EINVAL && c->piped == 0) {
		/* not for these descriptors: copy, now and from now on */
		log_warnx("splice: %s; response bodies are copied instead",
		    strerror(errno));
		gw->splice_off = 1;
		splice_end(c);
		errno = EAGAIN;
	}
	if (n > 0)
		c->piped += (size_t)n;
	return n;
}

/* From the pipe to the client: 0 (done or EAGAIN), -1 on a failed send. */
int
splice_out(struct conn *c)
{
	ssize_t n;

	while (c->piped > 0) {
		n = splice(c->pipe_r, NULL, c->fd, NULL, c->piped,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		c->piped -= (size_t)n;
		c->bytes_out += (uint64_t)n;
		c->pipe_full = 0;
	}
	return 0;
}

void
splice_free_all(void)
{
	while (gw->npipes > 0) {
		gw->npipes--;
		close(gw->pipes[gw->npipes][0]);
		close(gw->pipes[gw->npipes][1]);
	}
}
