/*
 * http.c - the gateway's side of the heads (the pure part is lib/http.c):
 * http_parser callbacks that keep a head and stream the bodies, the
 * bounded byte queues, and the heads written into them (rewritten request
 * and response, the gateway's own answers) with the body re-framed.
 */
#include <sys/mman.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "activate.h"

static int	on_begin(http_parser *);
static int	on_url(http_parser *, const char *, size_t);
static int	on_status(http_parser *, const char *, size_t);
static int	on_field(http_parser *, const char *, size_t);
static int	on_value(http_parser *, const char *, size_t);
static int	on_req_headers(http_parser *);
static int	on_req_body(http_parser *, const char *, size_t);
static int	on_req_done(http_parser *);
static int	on_resp_headers(http_parser *);
static int	on_resp_body(http_parser *, const char *, size_t);
static int	on_resp_done(http_parser *);
static int	emit_response(struct conn *, struct xbuf *);
static void	out_begin(struct xbuf *, struct http_out *);
static int	out_end(struct xbuf *, const struct http_out *, int);
static int	frame(struct xbuf *, const char *, size_t, int);
static int	frame_end(struct xbuf *, int);

const http_parser_settings req_settings = {
	.on_url = on_url,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_req_headers,
	.on_body = on_req_body,
	.on_message_complete = on_req_done,
};

const http_parser_settings resp_settings = {
	.on_message_begin = on_begin,
	.on_status = on_status,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_resp_headers,
	.on_body = on_resp_body,
	.on_message_complete = on_resp_done,
};

size_t
xbuf_room(const struct xbuf *b)
{
	return sizeof(b->data) - b->len;
}

size_t
xbuf_used(const struct xbuf *b)
{
	return b->len - b->off;
}

void
xbuf_reset(struct xbuf *b)
{
	b->off = b->len = 0;
}

/*
 * An empty buffer's pages past its first go back to the kernel (they read
 * as zeros when next touched), so that a buffer whose contents moved
 * elsewhere (a spooled body, body.c) does not stay resident for nothing.
 */
void
xbuf_release(struct xbuf *b)
{
	uintptr_t page = (uintptr_t)getpagesize(), from, to;

	from = ((uintptr_t)b->data + 2 * page - 1) & ~(page - 1);
	to = ((uintptr_t)b->data + sizeof(b->data)) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_DONTNEED);
}

int
xbuf_add(struct xbuf *b, const void *p, size_t n)
{
	if (b->off > 0 && xbuf_room(b) < n) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (xbuf_room(b) < n)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void
xbuf_consumed(struct xbuf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
	else if (b->off > sizeof(b->data) / 2) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
}

/* Heads are written straight into a queue's free room. */
static void
out_begin(struct xbuf *b, struct http_out *o)
{
	if (b->off > 0) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	o->buf = b->data + b->len;
	o->size = xbuf_room(b);
	o->len = 0;
}

static int
out_end(struct xbuf *b, const struct http_out *o, int r)
{
	if (r == 0)
		b->len += o->len;
	return r;
}

static int
on_begin(http_parser *p)
{
	struct conn *c = p->data;

	http_head_reset(&c->head);
	return 0;
}

static int
on_url(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	return http_head_url(&c->head, at, n) == -1;
}

static int
on_status(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	return http_head_status(&c->head, at, n) == -1;
}

static int
on_field(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	return http_head_field(&c->head, at, n) == -1;
}

static int
on_value(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	return http_head_value(&c->head, at, n) == -1;
}

static int
on_req_headers(http_parser *p)
{
	struct conn *c = p->data;

	c->head_done = 1;
	http_head_done(&c->head);	/* trailers are dropped */
	http_parser_pause(p, 1);
	return 0;
}

static int
on_req_body(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	c->bytes_in += n;
	if (gw->cfg.max_body_bytes >= 0 &&
	    c->bytes_in > (uint64_t)gw->cfg.max_body_bytes) {
		c->overlimit = 1;
		return 1;
	}
	if (c->buffering)
		return body_store(c, at, n) == -1;
	if (c->up_broken)
		return 0;	/* read to its end, and dropped */
	return frame(&c->up, at, n, c->chunked_in) == -1;
}

static int
on_req_done(http_parser *p)
{
	struct conn *c = p->data;

	if (c->chunked_in && !c->buffering && !c->up_broken &&
	    frame_end(&c->up, 1) == -1)
		return 1;
	c->req_done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static int
on_resp_headers(http_parser *p)
{
	struct conn *c = p->data;
	int st = p->status_code;

	if (st >= 100 && st < 200 && st != 101) {
		c->interim = 1;
		if (st == 100 && c->sent_100)
			return 0;
		c->sent_100 = c->sent_100 || st == 100;
		return emit_response(c, &c->out) == -1 ? -1 : 0;
	}
	c->interim = 0;
	if (st == 101 && !c->upgrade)
		return -1;
	http_head_done(&c->head);	/* trailers are dropped */
	c->status = st;
	stats_first_byte(c);
	c->resp_nobody = st == 101 || st == 204 || st == 304 ||
	    c->req.method == HTTP_HEAD;
	if (emit_response(c, &c->out) == -1)
		return -1;
	c->resp_started = 1;
	return c->resp_nobody ? 1 : 0;
}

static int
on_resp_body(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (c->splicing)
		return 0;	/* the bytes are on the pipe already */
	return frame(&c->out, at, n, c->chunked_out) == -1;
}

static int
on_resp_done(http_parser *p)
{
	struct conn *c = p->data;

	if (c->interim)
		return 0;
	if (c->chunked_out && frame_end(&c->out, 1) == -1)
		return 1;
	c->resp_done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static int
frame(struct xbuf *b, const char *p, size_t n, int chunked)
{
	char line[24];
	int len;

	if (n == 0)
		return 0;
	if (!chunked)
		return xbuf_add(b, p, n);
	len = snprintf(line, sizeof(line), "%zx\r\n", n);
	if (xbuf_room(b) + b->off < (size_t)len + n + 2)
		return -1;
	xbuf_add(b, line, (size_t)len);
	xbuf_add(b, p, n);
	return xbuf_add(b, "\r\n", 2);
}

static int
frame_end(struct xbuf *b, int chunked)
{
	return chunked ? xbuf_add(b, "0\r\n\r\n", 5) : 0;
}

/*
 * The request as the backend sees it (http_request_head), in front of the
 * body b may hold already (one read whole): with its Content-Length, and
 * spilled to the spool first if head and body do not fit together.
 */
int
emit_request(struct conn *c, struct xbuf *b)
{
	static char head[XBUF_SIZE];
	struct http_fwd f;
	struct http_out o = { head, sizeof(head), 0 };
	size_t body;

	f.peer = c->client;
	f.trusted = c->trusted;
	f.host = c->svc->endpoint;
	f.strip = c->strip;
	f.chunked = c->chunked_in && !c->buffering;
	f.length = c->buffering ? (int64_t)c->bytes_in : -1;
	f.upgrade = c->upgrade;
	if (http_request_head(&o, &c->head, &c->req, &f) == -1)
		return -1;
	if (o.len + xbuf_used(b) > sizeof(b->data) && body_spill(c) == -1)
		return -2;
	body = xbuf_used(b);
	memmove(b->data + o.len, b->data + b->off, body);
	memcpy(b->data, head, o.len);
	b->off = 0;
	b->len = o.len + body;
	return 0;
}

/* The response as the client sees it; its framing decides the conn's. */
static int
emit_response(struct conn *c, struct xbuf *b)
{
	struct http_resp r;
	struct http_out o;
	char extra[48];
	int st = c->resp.status_code;

	/* cold_start_header: what the request waited, as the KEDA add-on */
	r.extra = NULL;
	if (gw->cfg.cold_start_header && c->cold && st >= 200) {
		snprintf(extra, sizeof(extra), "Hk-Cold-Start: %lld\r\n",
		    (long long)(c->wait_us / 1000));
		r.extra = extra;
	}
	r.old = c->req.http_minor == 0;
	r.nobody = c->resp_nobody;
	r.close = c->close_after || !c->keepalive || gw->draining ||
	    c->upgrade;	/* refused upgrade: bytes? */
	r.chunked = c->chunked_out;
	r.until_close = 0;
	out_begin(b, &o);
	if (http_response_head(&o, &c->head, &c->resp, &r) == -1)
		return -1;
	if (st >= 200) {
		c->chunked_out = r.chunked;
		c->resp_close = c->resp_close || r.until_close;
		c->close_after = r.close;
	} else if (st == 101)
		c->chunked_out = 0;
	return out_end(b, &o, 0);
}

/* The gateway's own answer: a short text/plain line. */
int
emit_answer(struct xbuf *b, int status, const char *msg, int retry,
    int close, int head_only)
{
	struct http_out o;

	out_begin(b, &o);
	return out_end(b, &o, http_answer(&o, status, msg, retry, close,
	    head_only));
}

int
emit_answer_html(struct xbuf *b, int status, const char *body, size_t len,
    int retry, int close, int head_only)
{
	struct http_out o;

	out_begin(b, &o);
	return out_end(b, &o, http_answer_html(&o, status, body, len, retry,
	    close, head_only));
}
