/*
 * hget.c - one GET of a path on a connection of the caller's, and its
 * answer read to its end (hget.h).  HTTP/1.0 with Connection: close, so
 * that the server ends the answer by closing and needs no keep-alive; the
 * answer's end is http_parser's to find (a body by Content-Length,
 * chunks, or the close), and what follows it is not read.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hget.h"

static int	hget_on_head(http_parser *);
static int	hget_on_end(http_parser *);

static const http_parser_settings hget_settings = {
	.on_headers_complete = hget_on_head,
	.on_message_complete = hget_on_end,
};

/* on_head(arg) is called once the head is in, with status set. */
void
hget_init(struct hget *g, size_t max, void (*on_head)(void *), void *arg)
{
	memset(g, 0, sizeof(*g));
	http_parser_init(&g->parser, HTTP_RESPONSE);
	g->parser.data = g;
	g->max = max;
	g->on_head = on_head;
	g->arg = arg;
}

/* The request, in one send on a connected socket: 0, or -1. */
int
hget_send(int fd, const char *path, const char *host, const char *agent)
{
	char req[HGET_REQ_MAX];
	int n;

	n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n"
	    "User-Agent: %s\r\nConnection: close\r\n\r\n", path, host, agent);
	if (n < 0 || (size_t)n >= sizeof(req))
		return -1;
	return send(fd, req, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

static int
hget_on_head(http_parser *p)
{
	struct hget *g = p->data;

	g->status = p->status_code;
	if (g->on_head != NULL)
		g->on_head(g->arg);
	return 0;
}

static int
hget_on_end(http_parser *p)
{
	struct hget *g = p->data;

	g->done = 1;
	http_parser_pause(p, 1);	/* the rest is not the answer */
	return 0;
}

/*
 * One read of the answer from fd.  A failure's *why is static text: an
 * errno's, the parser's, or a close before the end.
 */
enum hget_step
hget_read(struct hget *g, int fd, const char **why)
{
	char buf[4096];
	ssize_t n;

	*why = NULL;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return HGET_MORE;
	if (n == -1) {
		*why = strerror(errno);
		return HGET_FAILED;
	}
	/* 0 bytes tell the parser of the close, which may end a body */
	(void)http_parser_execute(&g->parser, &hget_settings, buf, (size_t)n);
	g->len += (size_t)n;
	if (g->done)
		return HGET_END;
	if (HTTP_PARSER_ERRNO(&g->parser) != HPE_OK) {
		*why = http_errno_description(HTTP_PARSER_ERRNO(&g->parser));
		return HGET_FAILED;
	}
	if (n == 0) {
		*why = "closed before its end";
		return HGET_FAILED;
	}
	return g->len >= g->max ? HGET_CUT : HGET_MORE;
}
