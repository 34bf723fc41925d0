/*
 * request.c - a run's request to the gateway's listener and its response,
 * on the loop: a non-blocking connect, the request written as the socket
 * takes it, the response read through http_parser (which also undoes a
 * chunked body), the first runs_body_bytes of the body kept.
 */
#include <sys/socket.h>

#include <netdb.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"
#include "log.h"

#define REQ_READ_MAX	16384

static int	addr_split(const char *, char *, size_t, char *, size_t);
static void	req_io(struct loop *, int, int, void *);
static int	req_write(struct run *);
static void	req_read(struct run *);
static void	req_done(struct run *);
static int	on_body(http_parser *, const char *, size_t);
static int	on_complete(http_parser *);

/* "host:port" or "[v6]:port" of serverless_address. */
static int
addr_split(const char *addr, char *host, size_t hlen, char *port,
    size_t plen)
{
	const char *colon = strrchr(addr, ':');
	size_t n;

	if (colon == NULL || strlcpy(port, colon + 1, plen) >= plen)
		return -1;
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n == 0 || n >= hlen)
		return -1;
	memcpy(host, addr, n);
	host[n] = '\0';
	return 0;
}

int
req_start(struct run *r, char *err, size_t errlen)
{
	struct addrinfo hints, *ai;
	char host[CONFIG_ADDR_MAX + 1], port[16];
	int e, fd;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	/* Numeric only: a name would block the loop on a resolver. */
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (addr_split(r->jx->cfg.serverless_address, host, sizeof(host),
	    port, sizeof(port)) == -1 ||
	    (e = getaddrinfo(host, port, &hints, &ai)) != 0) {
		snprintf(err, errlen, "serverless_address \"%s\": not a "
		    "numeric host:port", r->jx->cfg.serverless_address);
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1 || (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1 &&
	    errno != EINPROGRESS)) {
		snprintf(err, errlen, "connect %s: %s",
		    r->jx->cfg.serverless_address, strerror(errno));
		if (fd != -1)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	r->fd = fd;
	http_parser_init(&r->parser, HTTP_RESPONSE);
	r->parser.data = r;
	http_parser_settings_init(&r->settings);
	r->settings.on_body = on_body;
	r->settings.on_message_complete = on_complete;
	if (loop_add_fd(r->jx->loop, fd, LOOP_WRITE, req_io, r) == -1) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		req_close(r);
		return -1;
	}
	return 0;
}

void
req_close(struct run *r)
{
	loop_close_fd(r->jx->loop, &r->fd);
}

static void
req_io(struct loop *l, int fd, int mask, void *arg)
{
	struct run *r = arg;
	char why[CONFIG_ADDR_MAX + 160];

	(void)l;
	(void)fd;
	if (r->sent < r->outlen) {
		if (!(mask & LOOP_WRITE))
			return;
		if (req_write(r) == -1) {
			snprintf(why, sizeof(why), "gateway %s: %s",
			    r->jx->cfg.serverless_address, strerror(errno));
			run_end(r, RUN_FAILED, why);
		}
		return;
	}
	if (mask & LOOP_READ)
		req_read(r);
}

/* 0 (more later, or all sent and now reading), -1 with errno. */
static int
req_write(struct run *r)
{
	ssize_t n;

	n = send(r->fd, r->out + r->sent, r->outlen - r->sent, MSG_NOSIGNAL);
	if (n == -1)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	r->sent += (size_t)n;
	if (r->sent == r->outlen &&
	    loop_mod_fd(r->jx->loop, r->fd, LOOP_READ) == -1)
		return -1;
	return 0;
}

static void
req_read(struct run *r)
{
	char buf[REQ_READ_MAX];
	ssize_t n;
	size_t used;

	n = recv(r->fd, buf, sizeof(buf), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		snprintf(buf, sizeof(buf), "gateway: %s", strerror(errno));
		run_end(r, RUN_FAILED, buf);
		return;
	}
	/* n == 0 tells the parser of the close: it ends a close-framed body */
	used = http_parser_execute(&r->parser, &r->settings, buf, (size_t)n);
	if (r->complete) {
		req_done(r);
		return;
	}
	if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK || used != (size_t)n) {
		run_end(r, RUN_FAILED, "gateway: malformed response");
		return;
	}
	if (n == 0)
		run_end(r, RUN_FAILED, "gateway closed the connection before "
		    "the response ended");
}

/* The response is whole: 2xx succeeded, any other status failed. */
static void
req_done(struct run *r)
{
	char why[64];
	int st = (int)r->parser.status_code;

	r->row.status = st;
	if (st >= 200 && st <= 299) {
		run_end(r, RUN_SUCCEEDED, NULL);
		return;
	}
	snprintf(why, sizeof(why), "HTTP status %d", st);
	run_end(r, RUN_FAILED, why);
}

/* The first body_max bytes are kept; the rest is read and dropped. */
static int
on_body(http_parser *p, const char *at, size_t len)
{
	struct run *r = p->data;
	unsigned char *nb;
	size_t take;

	if (r->row.body_len >= r->body_max)
		return 0;
	take = r->body_max - r->row.body_len;
	if (take > len)
		take = len;
	if (r->row.body == NULL &&
	    (r->row.body = malloc(r->body_max + 1)) == NULL)
		return 0;
	nb = r->row.body;
	memcpy(nb + r->row.body_len, at, take);
	r->row.body_len += take;
	return 0;
}

static int
on_complete(http_parser *p)
{
	struct run *r = p->data;

	r->complete = 1;
	/* Stop here: what might follow the response is not ours. */
	http_parser_pause(p, 1);
	return 0;
}
