/*
 * http.c - libFuzzer target for lib/http.c: the request-head and the
 * response-head parser, and the heads written from what they accept.
 *
 * The first byte chooses a request (bit 0 clear) or a response (set), an
 * HTTP/1.0 client for the response (bit 1) and where the rest, the head,
 * is cut into two calls.  http_head_parse()
 * must not crash or read out of bounds, must take no more than it was
 * given, and must end in DONE, MORE, 400 or 431.  A complete head keeps
 * every offset within its bytes and its limits, and the heads written from
 * it (the request for the backend, the response for the client, the
 * gateway's answer) fit their buffer and end with an empty line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define OUT_MAX	(HTTP_HEAD_MAX + 4096)

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	check_head(const struct http_head *);
static void	check_out(const struct http_out *, int);
static void	request(struct http_head *, const http_parser *);
static void	response(struct http_head *, const http_parser *, int);

static struct http_head	head;
static char		outbuf[OUT_MAX];

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "http fuzz: invariant broken: %s\n", what);
		abort();
	}
}

static void
check_head(const struct http_head *h)
{
	int i;

	check(h->len <= HTTP_HEAD_MAX, "head within HTTP_HEAD_MAX");
	check(h->nhdr >= 0 && h->nhdr <= HTTP_HDR_MAX, "lines bounded");
	check((size_t)h->url_off + h->url_len <= h->len, "url in the head");
	check((size_t)h->st_off + h->st_len <= h->len, "reason in the head");
	for (i = 0; i < h->nhdr; i++) {
		check((size_t)h->hdr[i].name_off + h->hdr[i].name_len <=
		    h->len, "name in the head");
		check((size_t)h->hdr[i].val_off + h->hdr[i].val_len <=
		    h->len, "value in the head");
	}
}

static void
check_out(const struct http_out *o, int r)
{
	check(o->len <= o->size, "output within its buffer");
	if (r == 0)
		check(o->len >= 2 && memcmp(o->buf + o->len - 2, "\r\n", 2) ==
		    0, "a written head ends a line");
}

static void
request(struct http_head *h, const http_parser *p)
{
	struct http_out o = { outbuf, sizeof(outbuf), 0 };
	struct http_fwd f;
	char host[128], path[256];
	const char *v;
	size_t n;
	int st, r;

	st = http_check_request(h, p);
	check(st == 0 || st == 400 || st == 405, "check: 0, 400 or 405");
	http_request_host(h, host, sizeof(host));
	check(strlen(host) < sizeof(host), "host terminated");
	http_request_path(h->buf + h->url_off, h->url_len, path,
	    sizeof(path));
	check(strlen(path) < sizeof(path) && strchr(path, '#') == NULL,
	    "path terminated, without a fragment");
	(void)http_expects_continue(h, p);
	if (http_head_find(h, "host", &v, &n) == 0)
		check(v >= h->buf && v + n <= h->buf + h->len,
		    "found value in the head");
	if (st != 0)
		return;
	f.peer = "192.0.2.1";
	f.trusted = h->nhdr % 2;
	f.host = "127.0.0.1:8080";
	f.strip = h->url_len > 4 ? 4 : 0;
	f.chunked = (p->flags & F_CHUNKED) != 0;
	f.length = -1;
	f.upgrade = p->upgrade;
	r = http_request_head(&o, h, p, &f);
	check_out(&o, r);
	if (r == 0)
		check(memmem(o.buf, o.len, " HTTP/1.1\r\n", 11) != NULL,
		    "backend request is HTTP/1.1");
}

static void
response(struct http_head *h, const http_parser *p, int old)
{
	struct http_out o = { outbuf, sizeof(outbuf), 0 };
	struct http_resp r;
	int rv;

	r.old = old;
	r.nobody = p->status_code == 204 || p->status_code == 304;
	r.close = 0;
	r.chunked = r.until_close = 0;
	r.extra = NULL;
	rv = http_response_head(&o, h, p, &r);
	check_out(&o, rv);
	check(!(r.chunked && r.old), "no chunks to an HTTP/1.0 client");
	o.len = 0;
	rv = http_answer(&o, p->status_code, "fuzz", 1, old, 0);
	check(rv == 0 && o.len <= o.size, "an answer fits");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	http_parser p;
	const char *buf = (const char *)data + 1;
	size_t cut, used, used2;
	int r;

	if (len < 1)
		return 0;
	len--;
	cut = len == 0 ? 0 : (data[0] >> 1) % (len + 1);
	http_parser_init(&p, data[0] & 1 ? HTTP_RESPONSE : HTTP_REQUEST);
	http_head_reset(&head);
	r = HTTP_HEAD_MORE;
	if (cut > 0) {		/* no call with 0 bytes: that is EOF */
		r = http_head_parse(&p, &head, buf, cut, &used);
		check(used <= cut, "took no more than given");
		if (r == HTTP_HEAD_MORE)
			check(used == cut, "MORE takes all");
	}
	if (r == HTTP_HEAD_MORE && len > cut) {
		r = http_head_parse(&p, &head, buf + cut, len - cut, &used2);
		check(used2 <= len - cut, "took no more than given");
	}
	check(r == HTTP_HEAD_DONE || r == HTTP_HEAD_MORE || r == 400 ||
	    r == 431, "DONE, MORE, 400 or 431");
	check_head(&head);
	if (r != HTTP_HEAD_DONE)
		return 0;
	if (p.type == HTTP_REQUEST)
		request(&head, &p);
	else
		response(&head, &p, data[0] & 2 ? 1 : 0);
	return 0;
}
