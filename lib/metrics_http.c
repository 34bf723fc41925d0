/*
 * metrics_http.c - the private listener of [metrics]: HTTP/1.1 enough for
 * a scraper.  GET /metrics answers 200 with the daemon's families, any
 * other path 404, any other method 405; every answer closes the
 * connection.  A request head is at most REQ_MAX bytes and must arrive
 * within READ_MS; at most CONNS_MAX scrapers at once, more are closed at
 * once.  Everything is non-blocking on the daemon's own loop: a slow
 * scraper waits for its own socket, never the daemon.  The address is
 * bound as the gateway's own listener is (listen_tcp, listen.h).
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "listen.h"
#include "loop.h"
#include "metrics.h"

#define REQ_MAX		2048	/* a request head */
#define READ_MS		5000	/* to send it */
#define WRITE_MS	10000	/* to take the answer */
#define CONNS_MAX	8
#define BACKLOG		16	/* scrapers waiting for an accept */
#define CTYPE		"text/plain; version=0.0.4; charset=utf-8"

struct mconn {
	struct metrics_srv	*srv;
	int			 fd;	/* -1: slot free */
	struct loop_timer	 timer;
	char			 in[REQ_MAX];
	size_t			 inlen;
	char			*out;	/* head and body, malloc'd */
	size_t			 outlen, outoff;
};

struct metrics_srv {
	struct loop		*loop;
	int			 fd;
	metrics_collect_fn	*collect;
	void			*arg;
	struct mconn		 conns[CONNS_MAX];
};

static void	on_accept(struct loop *, int, int, void *);
static void	on_read(struct loop *, int, int, void *);
static void	on_write(struct loop *, int, int, void *);
static void	on_deadline(struct loop *, void *);
static void	mconn_close(struct mconn *);
static void	respond(struct mconn *);
static int	answer(struct mconn *, int, const char *, const char *,
		    size_t);

struct metrics_srv *
metrics_listen(struct loop *l, const char *addr, metrics_collect_fn *fn,
    void *arg, char *err, size_t errlen, int *bad)
{
	struct metrics_srv *s;
	size_t i;

	*bad = 0;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		(void)snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	s->loop = l;
	s->collect = fn;
	s->arg = arg;
	for (i = 0; i < CONNS_MAX; i++) {
		s->conns[i].srv = s;
		s->conns[i].fd = -1;
		loop_timer_init(&s->conns[i].timer, on_deadline,
		    &s->conns[i]);
	}
	if ((s->fd = listen_tcp(addr, BACKLOG, err, errlen, bad)) == -1 ||
	    loop_add_fd(l, s->fd, LOOP_READ, on_accept, s) == -1) {
		if (s->fd != -1) {
			(void)snprintf(err, errlen, "%s", strerror(errno));
			close(s->fd);
		}
		free(s);
		return NULL;
	}
	return s;
}

void
metrics_close(struct metrics_srv *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < CONNS_MAX; i++)
		mconn_close(&s->conns[i]);
	loop_del_fd(s->loop, s->fd);
	close(s->fd);
	free(s);
}

static void
on_accept(struct loop *l, int fd, int mask, void *arg)
{
	struct metrics_srv *s = arg;
	struct mconn *c = NULL;
	size_t i;
	int cfd;

	(void)mask;
	if ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1)
		return;		/* EAGAIN, or a scraper gone already */
	for (i = 0; i < CONNS_MAX && c == NULL; i++)
		if (s->conns[i].fd == -1)
			c = &s->conns[i];
	if (c == NULL || loop_add_fd(l, cfd, LOOP_READ, on_read, c) == -1) {
		close(cfd);	/* too many scrapers: this one tries later */
		return;
	}
	c->fd = cfd;
	c->inlen = 0;
	loop_timer_at(l, &c->timer, loop_now_ms(l) + READ_MS);
}

static void
mconn_close(struct mconn *c)
{
	if (c->fd == -1)
		return;
	loop_timer_cancel(c->srv->loop, &c->timer);
	loop_close_fd(c->srv->loop, &c->fd);
	free(c->out);
	c->out = NULL;
	c->outlen = c->outoff = 0;
}

static void
on_deadline(struct loop *l, void *arg)
{
	(void)l;
	mconn_close(arg);
}

static void
on_read(struct loop *l, int fd, int mask, void *arg)
{
	struct mconn *c = arg;
	ssize_t n;

	(void)l;
	(void)mask;
	n = read(fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		mconn_close(c);
		return;
	}
	c->inlen += (size_t)n;
	c->in[c->inlen] = '\0';
	if (strstr(c->in, "\r\n\r\n") != NULL ||
	    strstr(c->in, "\n\n") != NULL)
		respond(c);
	else if (c->inlen == sizeof(c->in) - 1 && answer(c, 431,
	    "Request Header Fields Too Large", "too large\n", 10) == -1)
		mconn_close(c);
}

/* The request line only: the headers say nothing we use. */
static void
respond(struct mconn *c)
{
	struct metrics_out o;
	char *sp, *target, *end;
	int rc;

	memset(&o, 0, sizeof(o));
	sp = strchr(c->in, ' ');
	target = sp != NULL ? sp + 1 : NULL;
	end = target != NULL ? strchr(target, ' ') : NULL;
	if (end == NULL || strncmp(end + 1, "HTTP/1.", 7) != 0)
		rc = answer(c, 400, "Bad Request", "bad request\n", 12);
	else if ((size_t)(sp - c->in) != 3 || strncmp(c->in, "GET", 3) != 0)
		rc = answer(c, 405, "Method Not Allowed", "GET only\n", 9);
	else if ((size_t)(end - target) < 8 ||
	    strncmp(target, "/metrics", 8) != 0 ||
	    (end - target > 8 && target[8] != '?'))
		rc = answer(c, 404, "Not Found", "not found: try /metrics\n",
		    24);
	else {
		c->srv->collect(&o, c->srv->arg);
		rc = o.full ? answer(c, 500, "Internal Server Error",
		    "metrics too large\n", 18) : answer(c, 200, "OK", o.buf,
		    o.len);
		metrics_out_free(&o);
	}
	if (rc == -1)
		mconn_close(c);
}

/* Head and body into c->out, then written as the socket takes them. */
static int
answer(struct mconn *c, int code, const char *reason, const char *body,
    size_t len)
{
	char head[256];
	int n;

	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n%s"
	    "Connection: close\r\n\r\n", code, reason,
	    code == 200 ? CTYPE : "text/plain; charset=utf-8", len,
	    code == 405 ? "Allow: GET\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head) ||
	    (c->out = malloc((size_t)n + len)) == NULL)
		return -1;
	memcpy(c->out, head, (size_t)n);
	if (len > 0)
		memcpy(c->out + n, body, len);
	c->outlen = (size_t)n + len;
	c->outoff = 0;
	if (loop_add_fd(c->srv->loop, c->fd, LOOP_WRITE, on_write, c) == -1)
		return -1;
	loop_timer_at(c->srv->loop, &c->timer, loop_now_ms(c->srv->loop) +
	    WRITE_MS);
	return 0;
}

static void
on_write(struct loop *l, int fd, int mask, void *arg)
{
	struct mconn *c = arg;
	ssize_t n;

	(void)l;
	(void)mask;
	n = send(fd, c->out + c->outoff, c->outlen - c->outoff,
	    MSG_NOSIGNAL);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		mconn_close(c);
		return;
	}
	c->outoff += (size_t)n;
	if (c->outoff == c->outlen) {
		(void)shutdown(fd, SHUT_WR);
		mconn_close(c);
	}
}
