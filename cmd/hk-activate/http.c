/*
 * http.c - request and response heads: http_parser callbacks that keep a
 * head within HEAD_MAX, the checks for ambiguous framing, and the heads
 * the gateway writes (rewritten request and response, its own answers),
 * with the hop-by-hop headers removed and the body re-framed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "activate.h"

#define CONN_TOKENS	16	/* header names listed in Connection */

struct tokens {
	const char	*p[CONN_TOKENS];
	size_t		 len[CONN_TOKENS];
	size_t		 n;
};

static int	head_add(struct head *, const char *, size_t);
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
static int	name_is(const struct head *, int, const char *);
static void	conn_tokens(const struct head *, struct tokens *);
static int	skip_header(const struct head *, int, const struct tokens *,
		    int);
static int	copy_headers(const struct head *, struct xbuf *,
		    const struct tokens *, int);
static int	xbuf_printf(struct xbuf *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

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

/* Hop-by-hop headers, removed in both directions (RFC 9110 7.6.1). */
static const char *const hop_headers[] = {
	"connection", "keep-alive", "proxy-connection", "te", "trailer",
	"transfer-encoding", "upgrade", "expect",
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

static int
xbuf_printf(struct xbuf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -1;
	return xbuf_add(b, line, (size_t)n);
}

void
head_reset(struct head *h)
{
	h->len = 0;
	h->nhdr = 0;
	h->in_value = 0;
	h->overflow = 0;
	h->url_off = h->url_len = h->st_off = h->st_len = 0;
}

static int
head_add(struct head *h, const char *p, size_t n)
{
	if (n > sizeof(h->buf) - h->len) {
		h->overflow = 1;
		return -1;
	}
	memcpy(h->buf + h->len, p, n);
	h->len += n;
	return 0;
}

static int
on_begin(http_parser *p)
{
	struct conn *c = p->data;

	head_reset(&c->head);
	return 0;
}

static int
on_url(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (c->head.url_len == 0)
		c->head.url_off = (uint16_t)c->head.len;
	if (head_add(&c->head, at, n) == -1)
		return 1;
	c->head.url_len += (uint16_t)n;
	return 0;
}

static int
on_status(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (c->head.st_len == 0)
		c->head.st_off = (uint16_t)c->head.len;
	if (head_add(&c->head, at, n) == -1)
		return 1;
	c->head.st_len += (uint16_t)n;
	return 0;
}

static int
on_field(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct head *h = &c->head;

	if (h->nhdr == 0 || h->in_value) {
		if (h->nhdr == HDR_MAX) {
			h->overflow = 1;
			return 1;
		}
		h->hdr[h->nhdr].name_off = (uint16_t)h->len;
		h->hdr[h->nhdr].name_len = 0;
		h->hdr[h->nhdr].val_off = (uint16_t)h->len;
		h->hdr[h->nhdr].val_len = 0;
		h->nhdr++;
		h->in_value = 0;
	}
	if (head_add(h, at, n) == -1)
		return 1;
	h->hdr[h->nhdr - 1].name_len += (uint16_t)n;
	return 0;
}

static int
on_value(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct head *h = &c->head;

	if (h->nhdr == 0)
		return 1;
	if (!h->in_value) {
		h->hdr[h->nhdr - 1].val_off = (uint16_t)h->len;
		h->in_value = 1;
	}
	if (head_add(h, at, n) == -1)
		return 1;
	h->hdr[h->nhdr - 1].val_len += (uint16_t)n;
	return 0;
}

static int
name_is(const struct head *h, int i, const char *name)
{
	return strlen(name) == h->hdr[i].name_len &&
	    strncasecmp(h->buf + h->hdr[i].name_off, name,
	    h->hdr[i].name_len) == 0;
}

/* The first header of that name: 0 and its value, or -1. */
int
head_find(const struct head *h, const char *name, const char **v, size_t *n)
{
	int i;

	for (i = 0; i < h->nhdr; i++)
		if (name_is(h, i, name)) {
			*v = h->buf + h->hdr[i].val_off;
			*n = h->hdr[i].val_len;
			while (*n > 0 && (**v == ' ' || **v == '\t')) {
				(*v)++;
				(*n)--;
			}
			while (*n > 0 && ((*v)[*n - 1] == ' ' ||
			    (*v)[*n - 1] == '\t'))
				(*n)--;
			return 0;
		}
	return -1;
}

int
head_count(const struct head *h, const char *name)
{
	int i, n = 0;

	for (i = 0; i < h->nhdr; i++)
		n += name_is(h, i, name);
	return n;
}

static int
on_req_headers(http_parser *p)
{
	struct conn *c = p->data;

	c->head_done = 1;
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
	return http_frame(&c->up, at, n, c->chunked_in) == -1;
}

static int
on_req_done(http_parser *p)
{
	struct conn *c = p->data;

	if (c->chunked_in && http_frame_end(&c->up, 1) == -1)
		return 1;
	c->req_done = 1;
	http_parser_pause(p, 1);
	return 0;
}

/*
 * Strict framing (DESIGN.md): Content-Length with Transfer-Encoding, a
 * repeated Content-Length and a transfer coding other than "chunked" are
 * refused, as is an HTTP/1.1 request without exactly one Host.  0 or 400.
 */
int
http_check_request(struct conn *c)
{
	const struct head *h = &c->head;
	const char *v;
	size_t n;
	int te;

	te = head_count(h, "transfer-encoding");
	if (head_count(h, "content-length") > 1 || te > 1)
		return 400;
	if (te == 1 && head_count(h, "content-length") > 0)
		return 400;
	if (te == 1 && (head_find(h, "transfer-encoding", &v, &n) == -1 ||
	    n != 7 || strncasecmp(v, "chunked", 7) != 0))
		return 400;
	if (head_count(h, "host") > 1)
		return 400;
	if (c->req.method == HTTP_CONNECT)
		return 405;
	if (c->req.http_major == 1 && c->req.http_minor >= 1 &&
	    head_count(h, "host") == 0)
		return 400;
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
		return http_emit_response(c, &c->out) == -1 ? -1 : 0;
	}
	c->interim = 0;
	if (st == 101 && !c->upgrade)
		return -1;
	c->status = st;
	c->resp_nobody = st == 101 || st == 204 || st == 304 ||
	    c->req.method == HTTP_HEAD;
	if (http_emit_response(c, &c->out) == -1)
		return -1;
	c->resp_started = 1;
	return c->resp_nobody ? 1 : 0;
}

static int
on_resp_body(http_parser *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	return http_frame(&c->out, at, n, c->chunked_out) == -1;
}

static int
on_resp_done(http_parser *p)
{
	struct conn *c = p->data;

	if (c->interim)
		return 0;
	if (c->chunked_out && http_frame_end(&c->out, 1) == -1)
		return 1;
	c->resp_done = 1;
	http_parser_pause(p, 1);
	return 0;
}

int
http_frame(struct xbuf *b, const char *p, size_t n, int chunked)
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

int
http_frame_end(struct xbuf *b, int chunked)
{
	return chunked ? xbuf_add(b, "0\r\n\r\n", 5) : 0;
}

static void
conn_tokens(const struct head *h, struct tokens *t)
{
	const char *v, *e, *s;
	int i;

	t->n = 0;
	for (i = 0; i < h->nhdr; i++) {
		if (!name_is(h, i, "connection"))
			continue;
		v = h->buf + h->hdr[i].val_off;
		e = v + h->hdr[i].val_len;
		while (v < e && t->n < CONN_TOKENS) {
			while (v < e && (*v == ' ' || *v == '\t' || *v == ','))
				v++;
			for (s = v; v < e && *v != ',' && *v != ' ' &&
			    *v != '\t'; v++)
				;
			if (v > s) {
				t->p[t->n] = s;
				t->len[t->n++] = (size_t)(v - s);
			}
		}
	}
}

/* Hop-by-hop, named by Connection, or set by the gateway itself. */
static int
skip_header(const struct head *h, int i, const struct tokens *t, int request)
{
	size_t k;

	for (k = 0; k < sizeof(hop_headers) / sizeof(hop_headers[0]); k++)
		if (name_is(h, i, hop_headers[k]))
			return 1;
	for (k = 0; k < t->n; k++)
		if (t->len[k] == h->hdr[i].name_len && strncasecmp(t->p[k],
		    h->buf + h->hdr[i].name_off, t->len[k]) == 0)
			return 1;
	if (request && name_is(h, i, "x-forwarded-for"))
		return 1;
	return 0;
}

static int
copy_headers(const struct head *h, struct xbuf *b, const struct tokens *t,
    int request)
{
	const struct hdr *x;
	int i;

	for (i = 0; i < h->nhdr; i++) {
		if (skip_header(h, i, t, request))
			continue;
		x = &h->hdr[i];
		if (xbuf_add(b, h->buf + x->name_off, x->name_len) == -1 ||
		    xbuf_add(b, ": ", 2) == -1 ||
		    xbuf_add(b, h->buf + x->val_off, x->val_len) == -1 ||
		    xbuf_add(b, "\r\n", 2) == -1)
			return -1;
	}
	return 0;
}

/*
 * The request as the backend sees it: HTTP/1.1, the /fn/app/svc prefix
 * stripped, hop-by-hop headers gone, X-Forwarded-* added, the body framed
 * by Content-Length (kept) or re-chunked.
 */
int
http_emit_request(struct conn *c, struct xbuf *b)
{
	const struct head *h = &c->head;
	struct tokens t;
	const char *url = h->buf + h->url_off, *v, *up;
	size_t ulen = h->url_len, n;

	conn_tokens(h, &t);
	url += c->strip;
	ulen -= c->strip;
	if (xbuf_printf(b, "%s ", http_method_str(c->req.method)) == -1)
		return -1;
	if (ulen == 0 || url[0] != '/')
		xbuf_add(b, "/", 1);
	if (xbuf_add(b, url, ulen) == -1 || xbuf_add(b, " HTTP/1.1\r\n",
	    11) == -1 || copy_headers(h, b, &t, 1) == -1)
		return -1;
	if (head_find(h, "x-forwarded-for", &v, &n) == 0 && n > 0 &&
	    n < 1024) {
		if (xbuf_printf(b, "X-Forwarded-For: %.*s, %s\r\n", (int)n, v,
		    c->peer) == -1)
			return -1;
	} else if (xbuf_printf(b, "X-Forwarded-For: %s\r\n", c->peer) == -1)
		return -1;
	if (head_count(h, "x-forwarded-proto") == 0 &&
	    xbuf_printf(b, "X-Forwarded-Proto: http\r\n") == -1)
		return -1;
	if (head_count(h, "x-forwarded-host") == 0 &&
	    head_find(h, "host", &v, &n) == 0 && n < 256 &&
	    xbuf_printf(b, "X-Forwarded-Host: %.*s\r\n", (int)n, v) == -1)
		return -1;
	if (c->chunked_in && xbuf_printf(b,
	    "Transfer-Encoding: chunked\r\n") == -1)
		return -1;
	if (head_count(h, "host") == 0 && xbuf_printf(b, "Host: %s\r\n",
	    c->svc->endpoint) == -1)
		return -1;	/* HTTP/1.0 without Host */
	if (c->upgrade && head_find(h, "upgrade", &up, &n) == 0 && n < 256) {
		if (xbuf_printf(b, "Connection: upgrade\r\nUpgrade: %.*s\r\n",
		    (int)n, up) == -1)
			return -1;
	}
	return xbuf_add(b, "\r\n", 2);
}

/*
 * The response as the client sees it.  Decides the framing: Content-Length
 * kept, chunked kept for HTTP/1.1 clients, a body delimited by the
 * backend's close re-chunked for HTTP/1.1 clients; HTTP/1.0 clients get
 * the bare body and the connection closes after it.
 */
int
http_emit_response(struct conn *c, struct xbuf *b)
{
	const http_parser *p = &c->resp;
	const struct head *h = &c->head;
	struct tokens t;
	const char *up;
	size_t n;
	int st = p->status_code, old = c->req.http_minor == 0, final;

	final = st >= 200 || st == 101;
	conn_tokens(h, &t);
	if (xbuf_printf(b, "HTTP/1.%d %d %.*s\r\n", old ? 0 : 1, st,
	    (int)h->st_len, h->buf + h->st_off) == -1 ||
	    copy_headers(h, b, &t, 0) == -1)
		return -1;
	if (!final)
		return xbuf_add(b, "\r\n", 2);
	c->chunked_out = 0;
	if (st == 101) {
		if (head_find(h, "upgrade", &up, &n) == -1 || n >= 256)
			return -1;
		return xbuf_printf(b, "Connection: upgrade\r\nUpgrade: %.*s\r\n"
		    "\r\n", (int)n, up);
	}
	if (!c->resp_nobody && !(p->flags & F_CONTENTLENGTH)) {
		if ((p->flags & F_CHUNKED) == 0)
			c->resp_close = 1;	/* backend closes to end it */
		if (old)
			c->close_after = 1;
		else
			c->chunked_out = 1;
	}
	if (c->chunked_out && xbuf_printf(b,
	    "Transfer-Encoding: chunked\r\n") == -1)
		return -1;
	if (!c->keepalive || gw->draining || c->upgrade)
		c->close_after = 1;	/* refused upgrade: bytes? */
	if (c->close_after)
		return xbuf_printf(b, "Connection: close\r\n\r\n");
	if (old)
		return xbuf_printf(b, "Connection: keep-alive\r\n\r\n");
	return xbuf_add(b, "\r\n", 2);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* The gateway's own answer: a short text/plain line. */
int
http_emit_answer(struct xbuf *b, int status, const char *msg, int retry,
    int close, int head_only)
{
	char extra[64] = "";

	if (retry > 0)
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n", retry);
	if (xbuf_printf(b, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
	    "charset=utf-8\r\nContent-Length: %zu\r\n%s%s\r\n", status,
	    http_reason(status), strlen(msg) + 1, extra, close ?
	    "Connection: close\r\n" : "") == -1)
		return -1;
	if (head_only)
		return 0;
	if (xbuf_add(b, msg, strlen(msg)) == -1)
		return -1;
	return xbuf_add(b, "\n", 1);
}
