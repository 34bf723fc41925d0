/*
 * http.c - HTTP/1.1 heads over bytes (see http.h): a head kept within
 * bounds as http_parser reads it, strict framing checks, and the heads a
 * proxy writes, hop-by-hop headers removed and the body re-framed.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http.h"

#define CONN_TOKENS	16	/* header names listed in Connection */
#define XFF_MAX		1024	/* bytes of a trusted X-Forwarded-For kept */

struct tokens {
	const char	*p[CONN_TOKENS];
	size_t		 len[CONN_TOKENS];
	size_t		 n;
};

static int	head_add(struct http_head *, const char *, size_t);
static int	host_valid(const char *, size_t);
static int	name_is(const struct http_head *, int, const char *);
static int	is_fwd_header(const struct http_head *, int);
static int	conn_tokens(const struct http_head *, struct tokens *);
static int	conn_names_framing(const struct tokens *);
static int	skip_header(const struct http_head *, int,
		    const struct tokens *, int);
static int	copy_headers(const struct http_head *, struct http_out *,
		    const struct tokens *, int);
static int	out_length(struct http_out *, uint64_t);
static void	trim_ows(const char **, size_t *);
static int	out_xff(struct http_out *, const struct http_head *,
		    const struct http_fwd *);
static int	cb_begin(http_parser *);
static int	cb_url(http_parser *, const char *, size_t);
static int	cb_status(http_parser *, const char *, size_t);
static int	cb_field(http_parser *, const char *, size_t);
static int	cb_value(http_parser *, const char *, size_t);
static int	cb_headers(http_parser *);

/* Hop-by-hop headers, removed in both directions (RFC 9110 7.6.1). */
static const char *const hop_headers[] = {
	"connection", "keep-alive", "proxy-connection", "te", "trailer",
	"transfer-encoding", "upgrade", "expect",
};

/*
 * What a proxy says of the client and of the request it received, beside
 * the X-Forwarded-* prefix: taken only from a trusted proxy, since anyone
 * else may write anything there (a backend deciding on https by
 * X-Forwarded-Proto would be fooled).
 */
static const char *const fwd_headers[] = {
	"forwarded", "x-real-ip", "x-client-ip", "true-client-ip",
	"x-cluster-client-ip",
};
#define FWD_PREFIX	"x-forwarded-"

/* A head alone: the parser pauses once it is complete. */
static const http_parser_settings head_req_settings = {
	.on_url = cb_url,
	.on_header_field = cb_field,
	.on_header_value = cb_value,
	.on_headers_complete = cb_headers,
};

static const http_parser_settings head_resp_settings = {
	.on_message_begin = cb_begin,
	.on_status = cb_status,
	.on_header_field = cb_field,
	.on_header_value = cb_value,
	.on_headers_complete = cb_headers,
};

void
http_head_reset(struct http_head *h)
{
	h->len = 0;
	h->nhdr = 0;
	h->in_value = 0;
	h->overflow = 0;
	h->complete = 0;
	h->url_off = h->url_len = h->st_off = h->st_len = 0;
	h->raw = 0;
}

void
http_head_done(struct http_head *h)
{
	h->complete = 1;
}

static int
head_add(struct http_head *h, const char *p, size_t n)
{
	if (n > sizeof(h->buf) - h->len) {
		h->overflow = 1;
		return -1;
	}
	memcpy(h->buf + h->len, p, n);
	h->len += n;
	return 0;
}

int
http_head_url(struct http_head *h, const char *at, size_t n)
{
	if (h->url_len == 0)
		h->url_off = (uint16_t)h->len;
	if (head_add(h, at, n) == -1)
		return -1;
	h->url_len += (uint16_t)n;
	return 0;
}

int
http_head_status(struct http_head *h, const char *at, size_t n)
{
	if (h->st_len == 0)
		h->st_off = (uint16_t)h->len;
	if (head_add(h, at, n) == -1)
		return -1;
	h->st_len += (uint16_t)n;
	return 0;
}

int
http_head_field(struct http_head *h, const char *at, size_t n)
{
	if (h->complete)
		return 0;
	if (h->nhdr == 0 || h->in_value) {
		if (h->nhdr == HTTP_HDR_MAX) {
			h->overflow = 1;
			return -1;
		}
		h->hdr[h->nhdr].name_off = (uint16_t)h->len;
		h->hdr[h->nhdr].name_len = 0;
		h->hdr[h->nhdr].val_off = (uint16_t)h->len;
		h->hdr[h->nhdr].val_len = 0;
		h->nhdr++;
		h->in_value = 0;
	}
	if (head_add(h, at, n) == -1)
		return -1;
	h->hdr[h->nhdr - 1].name_len += (uint16_t)n;
	return 0;
}

int
http_head_value(struct http_head *h, const char *at, size_t n)
{
	if (h->complete)
		return 0;
	if (h->nhdr == 0)
		return -1;
	if (!h->in_value) {
		h->hdr[h->nhdr - 1].val_off = (uint16_t)h->len;
		h->in_value = 1;
	}
	if (head_add(h, at, n) == -1)
		return -1;
	h->hdr[h->nhdr - 1].val_len += (uint16_t)n;
	return 0;
}

static int
cb_begin(http_parser *p)
{
	http_head_reset(p->data);
	return 0;
}

static int
cb_url(http_parser *p, const char *at, size_t n)
{
	return http_head_url(p->data, at, n) == -1;
}

static int
cb_status(http_parser *p, const char *at, size_t n)
{
	return http_head_status(p->data, at, n) == -1;
}

static int
cb_field(http_parser *p, const char *at, size_t n)
{
	return http_head_field(p->data, at, n) == -1;
}

static int
cb_value(http_parser *p, const char *at, size_t n)
{
	return http_head_value(p->data, at, n) == -1;
}

static int
cb_headers(http_parser *p)
{
	http_head_done(p->data);
	http_parser_pause(p, 1);
	return 0;
}

int
http_head_error(const struct http_head *h, size_t raw, int done)
{
	if (h->overflow || (!done && raw > HTTP_HEAD_MAX))
		return 431;
	return 400;
}

int
http_head_parse(http_parser *p, struct http_head *h, const char *buf,
    size_t len, size_t *used)
{
	size_t raw, n;
	enum http_errno e;

	p->data = h;
	raw = h->raw;
	n = http_parser_execute(p, p->type == HTTP_REQUEST ?
	    &head_req_settings : &head_resp_settings, buf, len);
	/* a response's on_message_begin resets the head, raw with it */
	h->raw = raw + n;
	*used = n;
	e = HTTP_PARSER_ERRNO(p);
	if (e == HPE_PAUSED) {
		http_parser_pause(p, 0);
		return h->overflow ? 431 : HTTP_HEAD_DONE;
	}
	if (e != HPE_OK || h->overflow || h->raw > HTTP_HEAD_MAX)
		return http_head_error(h, h->raw, 0);
	return HTTP_HEAD_MORE;
}

static int
name_is(const struct http_head *h, int i, const char *name)
{
	return strlen(name) == h->hdr[i].name_len &&
	    strncasecmp(h->buf + h->hdr[i].name_off, name,
	    h->hdr[i].name_len) == 0;
}

int
http_head_find(const struct http_head *h, const char *name, const char **v,
    size_t *n)
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
http_head_count(const struct http_head *h, const char *name)
{
	int i, n = 0;

	for (i = 0; i < h->nhdr; i++)
		n += name_is(h, i, name);
	return n;
}

/* uri-host [ ":" port ] (RFC 9110 7.2), or nothing. */
static int
host_valid(const char *v, size_t n)
{
	size_t i = 0;

	if (n > 0 && v[0] == '[') {
		for (i = 1; i < n && v[i] != ']'; i++)
			if (!isxdigit((unsigned char)v[i]) && v[i] != ':' &&
			    v[i] != '.' && v[i] != 'v' && v[i] != 'V')
				return 0;
		if (i == n)
			return 0;
		i++;
	} else
		for (; i < n && v[i] != ':'; i++)
			if (!isalnum((unsigned char)v[i]) && (v[i] == '\0' ||
			    strchr("-._~%!$&'()*+,;=", v[i]) == NULL))
				return 0;
	if (i == n)
		return 1;
	if (v[i++] != ':')
		return 0;
	for (; i < n; i++)
		if (!isdigit((unsigned char)v[i]))
			return 0;
	return 1;
}

int
http_check_request(const struct http_head *h, const http_parser *p)
{
	struct tokens t;
	const char *v;
	size_t n, path;
	int te;

	te = http_head_count(h, "transfer-encoding");
	if (http_head_count(h, "content-length") > 1 || te > 1)
		return 400;
	if (te == 1 && http_head_count(h, "content-length") > 0)
		return 400;
	if (te == 1 && (http_head_find(h, "transfer-encoding", &v, &n) == -1 ||
	    n != 7 || strncasecmp(v, "chunked", 7) != 0))
		return 400;
	if (te == 1 && p->http_major == 1 && p->http_minor == 0)
		return 400;	/* RFC 9112 6.1: faulty framing in 1.0 */
	if (http_head_count(h, "host") > 1)
		return 400;
	if (http_head_find(h, "host", &v, &n) == 0 && !host_valid(v, n))
		return 400;
	if (p->method == HTTP_CONNECT)
		return 405;
	if (http_target_absolute(h->buf + h->url_off, h->url_len, &v, &n,
	    &path)) {
		if (n == 0 || !host_valid(v, n))
			return 400;	/* userinfo@ (RFC 9110 4.2.4) */
	} else if (h->url_len == 1 && h->buf[h->url_off] == '*') {
		if (p->method != HTTP_OPTIONS)
			return 400;
	} else if (h->url_len == 0 || h->buf[h->url_off] != '/')
		return 400;	/* another scheme, or no form at all */
	if (conn_tokens(h, &t) == -1 || conn_names_framing(&t))
		return 400;
	if (p->http_major == 1 && p->http_minor >= 1 &&
	    http_head_count(h, "host") == 0)
		return 400;
	return 0;
}

void
http_request_host(const struct http_head *h, char *host, size_t size)
{
	const char *v;
	size_t n, i, j = 0;

	if (size == 0)
		return;
	if (http_target_absolute(h->buf + h->url_off, h->url_len, &v, &n,
	    &i) || http_head_find(h, "host", &v, &n) == 0) {
		for (i = 0; i < n && j < size - 1; i++) {
			if (v[i] == ':' && v[0] != '[')
				break;
			if (v[i] < 0x21 || v[i] > 0x7e)
				continue;
			host[j++] = (v[i] >= 'A' && v[i] <= 'Z') ?
			    v[i] - 'A' + 'a' : v[i];
			if (v[i] == ']')
				break;
		}
	}
	while (j > 0 && host[j - 1] == '.')
		j--;
	host[j] = '\0';
}

void
http_request_path(const char *url, size_t len, char *path, size_t size)
{
	size_t i, j;

	if (size == 0)
		return;
	for (i = 0, j = 0; i < len && url[i] != '?' && url[i] != '#' &&
	    j < size - 1; i++)
		path[j++] = (url[i] < 0x21 || url[i] > 0x7e) ? '?' : url[i];
	path[j] = '\0';
}

int
http_expects_continue(const struct http_head *h, const http_parser *p)
{
	const char *v;
	size_t n;

	return http_head_find(h, "expect", &v, &n) == 0 && n == 12 &&
	    strncasecmp(v, "100-continue", 12) == 0 && p->http_minor > 0;
}

int
http_out_add(struct http_out *o, const void *p, size_t n)
{
	if (n > o->size - o->len)
		return -1;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

int
http_out_printf(struct http_out *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -1;
	return http_out_add(o, line, (size_t)n);
}

static int
out_str(struct http_out *o, const char *s)
{
	return http_out_add(o, s, strlen(s));
}

/* "Name: value\r\n" without printf: the gateway writes these per request. */
static int
out_header(struct http_out *o, const char *name, const char *v, size_t n)
{
	if (out_str(o, name) == -1 || http_out_add(o, ": ", 2) == -1 ||
	    http_out_add(o, v, n) == -1)
		return -1;
	return http_out_add(o, "\r\n", 2);
}

/* The names Connection lists; -1 if more than CONN_TOKENS (the rest
 * are not kept: a request with them is refused, http_check_request). */
/* A header of the forwarding kind: X-Forwarded-*, or one of fwd_headers. */
static int
is_fwd_header(const struct http_head *h, int i)
{
	size_t k, n = sizeof(FWD_PREFIX) - 1;

	if (h->hdr[i].name_len >= n &&
	    strncasecmp(h->buf + h->hdr[i].name_off, FWD_PREFIX, n) == 0)
		return 1;
	for (k = 0; k < sizeof(fwd_headers) / sizeof(fwd_headers[0]); k++)
		if (name_is(h, i, fwd_headers[k]))
			return 1;
	return 0;
}

static int
conn_tokens(const struct http_head *h, struct tokens *t)
{
	const char *v, *e, *s;
	int i;

	t->n = 0;
	for (i = 0; i < h->nhdr; i++) {
		if (!name_is(h, i, "connection"))
			continue;
		v = h->buf + h->hdr[i].val_off;
		e = v + h->hdr[i].val_len;
		while (v < e) {
			while (v < e && (*v == ' ' || *v == '\t' || *v == ','))
				v++;
			for (s = v; v < e && *v != ',' && *v != ' ' &&
			    *v != '\t'; v++)
				;
			if (v == s)
				continue;
			if (t->n == CONN_TOKENS)
				return -1;
			t->p[t->n] = s;
			t->len[t->n++] = (size_t)(v - s);
		}
	}
	return 0;
}

/*
 * Connection names Host or Content-Length: removing either would change
 * the request the backend reads (its framing, its host), so such a
 * request is refused rather than forwarded.
 */
static int
conn_names_framing(const struct tokens *t)
{
	size_t k;

	for (k = 0; k < t->n; k++)
		if ((t->len[k] == 4 && strncasecmp(t->p[k], "host", 4) == 0) ||
		    (t->len[k] == 14 && strncasecmp(t->p[k], "content-length",
		    14) == 0))
			return 1;
	return 0;
}

int
http_target_absolute(const char *url, size_t len, const char **a,
    size_t *alen, size_t *path)
{
	size_t i, s;

	if (len >= 7 && strncasecmp(url, "http://", 7) == 0)
		s = 7;
	else if (len >= 8 && strncasecmp(url, "https://", 8) == 0)
		s = 8;
	else
		return 0;
	for (i = s; i < len && url[i] != '/' && url[i] != '?' &&
	    url[i] != '#'; i++)
		;
	*a = url + s;
	*alen = i - s;
	*path = i;
	return 1;
}

/*
 * Hop-by-hop, named by Connection, or set by the gateway itself: request
 * bit 1 is a request's X-Forwarded-For, bit 2 its Content-Length, bit 4
 * its Host, bit 8 every forwarding header (an untrusted peer's).
 */
static int
skip_header(const struct http_head *h, int i, const struct tokens *t,
    int request)
{
	size_t k;

	for (k = 0; k < sizeof(hop_headers) / sizeof(hop_headers[0]); k++)
		if (name_is(h, i, hop_headers[k]))
			return 1;
	/* a response's Content-Length stays whatever Connection says: the
	 * gateway frames the body by it */
	for (k = 0; k < t->n && !name_is(h, i, "content-length"); k++)
		if (t->len[k] == h->hdr[i].name_len && strncasecmp(t->p[k],
		    h->buf + h->hdr[i].name_off, t->len[k]) == 0)
			return 1;
	if ((request & 1) && name_is(h, i, "x-forwarded-for"))
		return 1;
	if ((request & 2) && name_is(h, i, "content-length"))
		return 1;
	if ((request & 4) && name_is(h, i, "host"))
		return 1;
	if ((request & 8) && is_fwd_header(h, i))
		return 1;
	return 0;
}

static int
copy_headers(const struct http_head *h, struct http_out *o,
    const struct tokens *t, int request)
{
	const struct http_hdr *x;
	int i;

	for (i = 0; i < h->nhdr; i++) {
		if (skip_header(h, i, t, request))
			continue;
		x = &h->hdr[i];
		if (http_out_add(o, h->buf + x->name_off, x->name_len) == -1 ||
		    http_out_add(o, ": ", 2) == -1 ||
		    http_out_add(o, h->buf + x->val_off, x->val_len) == -1 ||
		    http_out_add(o, "\r\n", 2) == -1)
			return -1;
	}
	return 0;
}

/* "Content-Length: n\r\n" without printf. */
static int
out_length(struct http_out *o, uint64_t n)
{
	char d[20];
	size_t i = sizeof(d);

	do
		d[--i] = (char)('0' + n % 10);
	while ((n /= 10) > 0);
	if (out_str(o, "Content-Length: ") == -1 ||
	    http_out_add(o, d + i, sizeof(d) - i) == -1)
		return -1;
	return http_out_add(o, "\r\n", 2);
}

/* v[0..n) without the blanks around it. */
static void
trim_ows(const char **v, size_t *n)
{
	while (*n > 0 && (**v == ' ' || **v == '\t')) {
		(*v)++;
		(*n)--;
	}
	while (*n > 0 && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
		(*n)--;
}

/*
 * X-Forwarded-For: the client, after the list a trusted proxy sent (each
 * such header in order, XFF_MAX bytes at most); anyone else's list is
 * dropped, as a client may write any address there.  A client the proxy
 * already put last (HAProxy's option forwardfor beside its PROXY header)
 * is not repeated.
 */
static int
out_xff(struct http_out *o, const struct http_head *h,
    const struct http_fwd *f)
{
	const char *v, *item = NULL;
	size_t n, in = 0, total = 0;
	int i;

	if (out_str(o, "X-Forwarded-For: ") == -1)
		return -1;
	for (i = 0; f->trusted && i < h->nhdr; i++) {
		if (!name_is(h, i, "x-forwarded-for"))
			continue;
		v = h->buf + h->hdr[i].val_off;
		n = h->hdr[i].val_len;
		trim_ows(&v, &n);
		if (n == 0)
			continue;
		if ((total += n + 2) > XFF_MAX)
			break;
		if ((item != NULL && http_out_add(o, ", ", 2) == -1) ||
		    http_out_add(o, v, n) == -1)
			return -1;
		for (item = v + n; item > v && item[-1] != ','; item--)
			;
		in = (size_t)(v + n - item);
		trim_ows(&item, &in);
	}
	if (item != NULL && in == strlen(f->peer) &&
	    memcmp(item, f->peer, in) == 0)
		return http_out_add(o, "\r\n", 2);
	if ((item != NULL && http_out_add(o, ", ", 2) == -1) ||
	    out_str(o, f->peer) == -1)
		return -1;
	return http_out_add(o, "\r\n", 2);
}

/*
 * The request as the backend sees it: HTTP/1.1, f->strip bytes of the URL
 * removed, hop-by-hop headers gone, the body framed by Content-Length
 * (kept) or chunked.  The forwarding headers a trusted proxy sent are
 * kept, with X-Forwarded-Proto and X-Forwarded-Host added where it sent
 * none; anyone else's are removed (Forwarded, X-Real-IP and the like)
 * or replaced by the gateway's own (X-Forwarded-For the peer,
 * X-Forwarded-Proto http, X-Forwarded-Host the request's Host).
 */
int
http_request_head(struct http_out *o, const struct http_head *h,
    const http_parser *p, const struct http_fwd *f)
{
	struct tokens t;
	const char *url = h->buf + h->url_off, *v, *up, *auth = NULL;
	size_t ulen = h->url_len, n, strip, alen = 0, path;
	int skip = (f->length >= 0 ? 3 : 1) | (f->trusted ? 0 : 8);
	int keep = f->trusted;	/* the proxy's own X-Forwarded-* */

	(void)conn_tokens(h, &t);
	if (http_target_absolute(url, ulen, &auth, &alen, &path)) {
		url += path;	/* origin-form; the authority is the Host */
		ulen -= path;
		skip |= 4;
	}
	strip = f->strip < ulen ? f->strip : ulen;
	url += strip;
	ulen -= strip;
	if (out_str(o, http_method_str(p->method)) == -1 ||
	    http_out_add(o, " ", 1) == -1)
		return -1;
	if ((ulen == 0 || url[0] != '/') && !(ulen == 1 && url[0] == '*') &&
	    http_out_add(o, "/", 1) == -1)
		return -1;	/* what is left after /fn/app/svc, or ?query */
	if (http_out_add(o, url, ulen) == -1 ||
	    http_out_add(o, " HTTP/1.1\r\n", 11) == -1 ||
	    copy_headers(h, o, &t, skip) == -1)
		return -1;
	if (auth != NULL && out_header(o, "Host", auth, alen) == -1)
		return -1;
	if (f->length >= 0 && out_length(o, (uint64_t)f->length) == -1)
		return -1;
	if (out_xff(o, h, f) == -1)
		return -1;
	if ((!keep || http_head_count(h, "x-forwarded-proto") == 0) &&
	    out_str(o, "X-Forwarded-Proto: http\r\n") == -1)
		return -1;
	if (auth != NULL) {
		v = auth;
		n = alen;
	} else if (http_head_find(h, "host", &v, &n) == -1)
		n = 256;
	if ((!keep || http_head_count(h, "x-forwarded-host") == 0) && n < 256 &&
	    out_header(o, "X-Forwarded-Host", v, n) == -1)
		return -1;
	if (f->chunked && out_str(o, "Transfer-Encoding: chunked\r\n") == -1)
		return -1;
	if (auth == NULL && http_head_count(h, "host") == 0 &&
	    out_header(o, "Host", f->host, strlen(f->host)) == -1)
		return -1;	/* HTTP/1.0 without Host */
	if (f->upgrade && http_head_find(h, "upgrade", &up, &n) == 0 &&
	    n < 256) {
		if (out_str(o, "Connection: upgrade\r\n") == -1 ||
		    out_header(o, "Upgrade", up, n) == -1)
			return -1;
	}
	return http_out_add(o, "\r\n", 2);
}

/*
 * The response as the client sees it.  Decides the framing: Content-Length
 * kept, chunked kept for HTTP/1.1 clients, a body delimited by the
 * backend's close re-chunked for HTTP/1.1 clients; HTTP/1.0 clients get
 * the bare body and the connection closes after it.  An interim (1xx) head
 * and a 101 leave r->close as it was.
 */
int
http_response_head(struct http_out *o, const struct http_head *h,
    const http_parser *p, struct http_resp *r)
{
	struct tokens t;
	const char *up;
	char line[4];
	size_t n;
	int st = p->status_code;

	conn_tokens(h, &t);
	if (st < 100 || st > 999)
		return -1;	/* http_parser allows no other */
	line[0] = (char)('0' + st / 100);
	line[1] = (char)('0' + st / 10 % 10);
	line[2] = (char)('0' + st % 10);
	line[3] = ' ';
	if (out_str(o, r->old ? "HTTP/1.0 " : "HTTP/1.1 ") == -1 ||
	    http_out_add(o, line, 4) == -1 ||
	    http_out_add(o, h->buf + h->st_off, h->st_len) == -1 ||
	    http_out_add(o, "\r\n", 2) == -1 ||
	    copy_headers(h, o, &t, 0) == -1)
		return -1;
	if (st < 200 && st != 101)
		return http_out_add(o, "\r\n", 2);
	if (r->extra != NULL && out_str(o, r->extra) == -1)
		return -1;
	r->chunked = r->until_close = 0;
	if (st == 101) {
		if (http_head_find(h, "upgrade", &up, &n) == -1 || n >= 256)
			return -1;
		if (out_str(o, "Connection: upgrade\r\n") == -1 ||
		    out_header(o, "Upgrade", up, n) == -1)
			return -1;
		return http_out_add(o, "\r\n", 2);
	}
	if (!r->nobody && !(p->flags & F_CONTENTLENGTH)) {
		if ((p->flags & F_CHUNKED) == 0)
			r->until_close = 1;	/* backend closes to end it */
		if (r->old)
			r->close = 1;
		else
			r->chunked = 1;
	}
	if (r->chunked && out_str(o, "Transfer-Encoding: chunked\r\n") == -1)
		return -1;
	if (r->close)
		return out_str(o, "Connection: close\r\n\r\n");
	if (r->old)
		return out_str(o, "Connection: keep-alive\r\n\r\n");
	return http_out_add(o, "\r\n", 2);
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
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

/* A proxy's own answer: a short text/plain line. */
int
http_answer(struct http_out *o, int status, const char *msg, int retry,
    int close, int head_only)
{
	char extra[64] = "";

	if (retry > 0)
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n", retry);
	if (http_out_printf(o, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
	    "charset=utf-8\r\nContent-Length: %zu\r\n%s%s\r\n", status,
	    http_reason(status), strlen(msg) + 1, extra, close ?
	    "Connection: close\r\n" : "") == -1)
		return -1;
	if (head_only)
		return 0;
	if (http_out_add(o, msg, strlen(msg)) == -1)
		return -1;
	return http_out_add(o, "\n", 1);
}

int
http_answer_html(struct http_out *o, int status, const char *body,
    size_t len, int retry, int close, int head_only)
{
	char extra[64] = "";

	if (retry > 0)
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n", retry);
	if (http_out_printf(o, "HTTP/1.1 %d %s\r\nContent-Type: text/html; "
	    "charset=utf-8\r\nContent-Length: %zu\r\nCache-Control: "
	    "no-store\r\n%s%s\r\n", status, http_reason(status), len, extra,
	    close ? "Connection: close\r\n" : "") == -1)
		return -1;
	return head_only ? 0 : http_out_add(o, body, len);
}
