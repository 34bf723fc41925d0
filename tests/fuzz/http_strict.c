/*
 * http_strict.c - differential libFuzzer target: what the gateway would
 * forward must parse to the same request under a strict reference reading
 * of RFC 9112, and what that reading refuses the gateway must refuse.
 *
 * The gateway side is the gateway's own pieces, driven as hk-activate
 * drives them (cmd/hk-activate/conn.c): the lexer of lib/http_lex.c checks
 * bytes ahead of http_parser, which is given only what the lexer took; the
 * head is kept by lib/http.c's callbacks and checked by
 * http_check_request; the body is de-chunked as request_buffering does;
 * the request is written by http_request_head with its Content-Length.
 * The input is cut in up to three pieces (by its first two bytes).
 *
 * The reference, ref_parse() below, is written apart from all of that,
 * from the RFC's grammar, over the whole input at once.  The checks:
 *  - the gateway takes a request only if the reference does, and then
 *    the bytes it forwards read, under the reference, as the same method,
 *    target and body, with the same fields but those the gateway removes
 *    (hop-by-hop, X-Forwarded-For, Content-Length) and with those it adds;
 *  - the reference's refusals (400, 413, 505) are the gateway's too;
 *  - a request the reference takes the gateway takes too, unless
 *    http_parser refuses it for a reason of its own that the reference does
 *    not model (a method it does not know, a URL it does not parse), or it
 *    passes the gateway's head limits (431).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

#define LIMIT		4096		/* max_body_bytes */
#define FIELDS_MAX	256
#define OUT_MAX		(HTTP_HEAD_MAX + 8192 + LIMIT)

enum { REF_OK = 0, REF_MORE = 1 };	/* else a status */

struct field {
	const char	*name;
	size_t		 nlen;
	const char	*val;
	size_t		 vlen;
};

struct req {
	const char	*method, *target;
	size_t		 mlen, tlen;
	int		 minor;
	struct field	 f[FIELDS_MAX];
	int		 nf;
	char		 body[LIMIT];
	size_t		 blen;
	int		 upgrade;	/* Connection: upgrade and Upgrade */
};

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static int	ref_parse(const char *, size_t, struct req *);
static int	gw_run(const char *, size_t, const size_t *, struct req *,
		    char *, size_t *, int *);
static int	conn_names(const struct req *, const char *, size_t);

static struct req	in_ref, gw_req, out_ref;
static char		out[OUT_MAX];
static char		ext[HTTP_HEAD_MAX + LIMIT + 8];

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "http_strict fuzz: %s\n", what);
		abort();
	}
}

/*
 * The reference reading.
 */
static int
tchar(unsigned char c)
{
	return isalnum(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
fieldch(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* A line from *pos ending in CRLF (or LF alone when lf_ok); no other CR.
 * REF_OK with [*s, *s + *n), REF_MORE, or 400. */
static int
line(const char *b, size_t len, size_t *pos, const char **s, size_t *n,
    int lf_ok)
{
	const char *nl = memchr(b + *pos, '\n', len - *pos), *cr;
	size_t end;

	if (nl == NULL) {
		cr = memchr(b + *pos, '\r', len - *pos);
		/* a CR not last can never be followed by LF */
		return cr != NULL && cr + 1 < b + len ? 400 : REF_MORE;
	}
	end = (size_t)(nl - b);
	*s = b + *pos;
	*n = end - *pos;
	if (*n > 0 && (*s)[*n - 1] == '\r')
		(*n)--;
	else if (!lf_ok)
		return 400;
	if (memchr(*s, '\r', *n) != NULL)
		return 400;
	*pos = end + 1;
	return REF_OK;
}

static int
ref_request_line(const char *s, size_t n, struct req *r)
{
	const char *sp1, *sp2, *v;
	size_t i;

	if ((sp1 = memchr(s, ' ', n)) == NULL)
		return 400;
	if ((sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - s))) == NULL)
		return 400;
	r->method = s;
	r->mlen = (size_t)(sp1 - s);
	r->target = sp1 + 1;
	r->tlen = (size_t)(sp2 - sp1 - 1);
	if (r->mlen == 0 || r->tlen == 0)
		return 400;
	for (i = 0; i < r->mlen; i++)
		if (!tchar((unsigned char)s[i]))
			return 400;
	for (i = 0; i < r->tlen; i++)
		if ((unsigned char)r->target[i] <= 0x20 ||
		    (unsigned char)r->target[i] >= 0x7f)
			return 400;
	v = sp2 + 1;
	if ((size_t)(s + n - v) != 8 || memcmp(v, "HTTP/", 5) != 0 ||
	    !isdigit((unsigned char)v[5]) || v[6] != '.' ||
	    !isdigit((unsigned char)v[7]))
		return 400;
	r->minor = v[7] - '0';
	return v[5] != '1' ? 505 : REF_OK;
}

static int
ref_field(const char *s, size_t n, struct req *r)
{
	const char *colon = memchr(s, ':', n), *v, *e;
	size_t i;

	if (colon == NULL || colon == s)
		return 400;
	for (i = 0; s + i < colon; i++)
		if (!tchar((unsigned char)s[i]))
			return 400;
	for (v = colon + 1; v < s + n; v++)
		if (!fieldch((unsigned char)*v))
			return 400;
	if (r->nf == FIELDS_MAX)
		return 431;
	for (v = colon + 1; v < s + n && (*v == ' ' || *v == '\t'); v++)
		;
	for (e = s + n; e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
		;
	r->f[r->nf].name = s;
	r->f[r->nf].nlen = (size_t)(colon - s);
	r->f[r->nf].val = v;
	r->f[r->nf].vlen = (size_t)(e - v);
	r->nf++;
	return REF_OK;
}

/* Fields up to the empty line; the head's lines may end in LF alone. */
static int
ref_fields(const char *b, size_t len, size_t *pos, struct req *r, int lf_ok)
{
	const char *s;
	size_t n;
	int st;

	for (;;) {
		if ((st = line(b, len, pos, &s, &n, lf_ok)) != REF_OK)
			return st;
		if (n == 0)
			return REF_OK;
		if (s[0] == ' ' || s[0] == '\t')
			return 400;	/* obs-fold */
		if ((st = ref_field(s, n, r)) != REF_OK)
			return st;
	}
}

static int
name_eq(const struct field *f, const char *name)
{
	return f->nlen == strlen(name) && strncasecmp(f->name, name,
	    f->nlen) == 0;
}

static int
count(const struct req *r, const char *name, const struct field **last)
{
	int i, n = 0;

	for (i = 0; i < r->nf; i++)
		if (name_eq(&r->f[i], name)) {
			n++;
			*last = &r->f[i];
		}
	return n;
}

static int
host_ok(const char *v, size_t n)
{
	size_t i = 0;

	if (n > 0 && v[0] == '[') {
		while (++i < n && v[i] != ']')
			if (!isxdigit((unsigned char)v[i]) && v[i] != ':' &&
			    v[i] != '.' && v[i] != 'v' && v[i] != 'V')
				return 0;
		if (i++ == n)
			return 0;
	} else
		for (; i < n && v[i] != ':'; i++)
			if (!isalnum((unsigned char)v[i]) && (v[i] == 0 ||
			    strchr("-._~%!$&'()*+,;=", v[i]) == NULL))
				return 0;
	if (i < n && v[i++] != ':')
		return 0;
	for (; i < n; i++)
		if (!isdigit((unsigned char)v[i]))
			return 0;
	return 1;
}

/* An absolute-form target, http or https: its authority, where its
 * origin-form starts. */
static int
absolute(const struct req *r, const char **a, size_t *alen, size_t *path)
{
	size_t s, i;

	if (r->tlen >= 7 && strncasecmp(r->target, "http://", 7) == 0)
		s = 7;
	else if (r->tlen >= 8 && strncasecmp(r->target, "https://", 8) == 0)
		s = 8;
	else
		return 0;
	for (i = s; i < r->tlen && strchr("/?#", r->target[i]) == NULL; i++)
		;
	*a = r->target + s;
	*alen = i - s;
	*path = i;
	return 1;
}

/*
 * The names the Connection fields list: how many, or, given a name,
 * whether it is one of them.
 */
static int
conn_names(const struct req *r, const char *name, size_t nlen)
{
	const char *v, *e, *s;
	int k, n = 0;

	for (k = 0; k < r->nf; k++) {
		if (!name_eq(&r->f[k], "connection"))
			continue;
		v = r->f[k].val;
		e = v + r->f[k].vlen;
		while (v < e) {
			while (v < e && (*v == ' ' || *v == '\t' || *v == ','))
				v++;
			for (s = v; v < e && *v != ',' && *v != ' ' &&
			    *v != '\t'; v++)
				;
			if (v == s)
				continue;
			n++;
			if (name != NULL && (size_t)(v - s) == nlen &&
			    strncasecmp(s, name, nlen) == 0)
				return 1;
		}
	}
	return name == NULL ? n : 0;
}

/* What a complete head says of the body: -1 chunked, else its length. */
static int
ref_semantics(const struct req *r, int64_t *length)
{
	const struct field *te = NULL, *cl = NULL, *host = NULL;
	int nte = count(r, "transfer-encoding", &te);
	int ncl = count(r, "content-length", &cl);
	int nhost = count(r, "host", &host);
	const char *a;
	size_t i, alen, path;

	*length = 0;
	if (nte > 1 || ncl > 1 || (nte && ncl))
		return 400;
	if (nte && (te->vlen != 7 || strncasecmp(te->val, "chunked", 7) != 0))
		return 400;
	if (nte && r->minor == 0)
		return 400;
	if (nhost > 1 || (nhost && !host_ok(host->val, host->vlen)))
		return 400;
	if (r->mlen == 7 && memcmp(r->method, "CONNECT", 7) == 0)
		return 405;	/* the gateway's order: 405 before the rest */
	if (absolute(r, &a, &alen, &path)) {
		if (alen == 0 || !host_ok(a, alen))
			return 400;
	} else if (r->tlen == 1 && r->target[0] == '*') {
		if (r->mlen != 7 || memcmp(r->method, "OPTIONS", 7) != 0)
			return 400;
	} else if (r->target[0] != '/')
		return 400;
	if (conn_names(r, NULL, 0) > 16 || conn_names(r, "host", 4) ||
	    conn_names(r, "content-length", 14))
		return 400;	/* hk-activate(8): at most 16, not those */
	if (r->minor > 0 && nhost == 0)
		return 400;
	if (nte) {
		*length = -1;
		return REF_OK;
	}
	if (ncl) {
		if (cl->vlen == 0)
			return 400;
		for (i = 0; i < cl->vlen; i++)
			if (!isdigit((unsigned char)cl->val[i]))
				return 400;
		if (cl->vlen > 18)
			return 413;
		*length = strtoll(cl->val, NULL, 10);
		return *length > LIMIT ? 413 : REF_OK;
	}
	return REF_OK;
}

/* chunk-ext, token or quoted-string values, as RFC 9112 7.1.1 has it. */
static int
ref_ext(const char *s, size_t n)
{
	size_t i = 0;

#define WS()	while (i < n && (s[i] == ' ' || s[i] == '\t')) i++
	for (;;) {
		WS();
		if (i == n)
			return i == 0 || (s[i - 1] != ' ' && s[i - 1] != '\t') ?
			    REF_OK : 400;
		if (s[i++] != ';')
			return 400;
		WS();
		if (i == n || !tchar((unsigned char)s[i]))
			return 400;
		while (i < n && tchar((unsigned char)s[i]))
			i++;
		WS();
		if (i == n || s[i] != '=') {
			if (i < n && s[i] != ';')
				return 400;
			if (i == n && (s[i - 1] == ' ' || s[i - 1] == '\t'))
				return 400;
			continue;
		}
		i++;
		WS();
		if (i == n)
			return 400;
		if (s[i] == '"') {
			for (i++; i < n && s[i] != '"'; i++) {
				if (s[i] == '\\' && ++i == n)
					return 400;
				if (!fieldch((unsigned char)s[i]))
					return 400;
			}
			if (i++ == n)
				return 400;
		} else {
			if (!tchar((unsigned char)s[i]))
				return 400;
			while (i < n && tchar((unsigned char)s[i]))
				i++;
		}
	}
#undef WS
}

static int
ref_chunked(const char *b, size_t len, size_t *pos, struct req *r)
{
	struct req trailer;
	const char *s;
	size_t n, i, size;
	int st;

	for (;;) {
		/* a declared size over the limit is 413 whatever follows */
		s = b + *pos;
		n = len - *pos;
		for (i = 0, size = 0; i < n && isxdigit((unsigned char)s[i]);
		    i++) {
			size = size * 16 + (size_t)(isdigit((unsigned char)s[i]) ?
			    s[i] - '0' : (tolower((unsigned char)s[i]) - 'a' + 10));
			if (size + r->blen > LIMIT)
				return 413;
		}
		if ((st = line(b, len, pos, &s, &n, 0)) != REF_OK)
			return st;
		if (i == 0 || i > n || ref_ext(s + i, n - i) != REF_OK)
			return 400;
		if (size == 0)
			break;
		if (len - *pos < size + 2)
			return REF_MORE;
		memcpy(r->body + r->blen, b + *pos, size);
		r->blen += size;
		*pos += size;
		if (b[*pos] != '\r' || b[*pos + 1] != '\n')
			return 400;
		*pos += 2;
	}
	trailer.nf = 0;
	return ref_fields(b, len, pos, &trailer, 0);
}

/*
 * Reads one request from the start of b: REF_OK (r filled), REF_MORE, or
 * the status of a refusal.
 */
static int
ref_parse(const char *b, size_t len, struct req *r)
{
	const struct field *c = NULL, *u = NULL;
	const char *s;
	size_t pos = 0, n;
	int64_t length;
	int st;

	r->nf = 0;
	r->blen = 0;
	for (;;) {
		if ((st = line(b, len, &pos, &s, &n, 1)) != REF_OK)
			return st;
		if (n > 0)
			break;
	}
	if ((st = ref_request_line(s, n, r)) != REF_OK ||
	    (st = ref_fields(b, len, &pos, r, 1)) != REF_OK ||
	    (st = ref_semantics(r, &length)) != REF_OK)
		return st;
	r->upgrade = count(r, "upgrade", &u) > 0 &&
	    count(r, "connection", &c) > 0;
	if (length == -1)
		return ref_chunked(b, len, &pos, r);
	if ((size_t)length > len - pos)
		return REF_MORE;
	memcpy(r->body, b + pos, (size_t)length);
	r->blen = (size_t)length;
	return REF_OK;
}

/*
 * The gateway's side.
 */
struct gw_body {
	struct http_head	*h;
	struct req		*r;
	int			 done, over;
};

static int
gw_url(http_parser *p, const char *at, size_t n)
{
	return http_head_url(((struct gw_body *)p->data)->h, at, n) == -1;
}

static int
gw_field(http_parser *p, const char *at, size_t n)
{
	return http_head_field(((struct gw_body *)p->data)->h, at, n) == -1;
}

static int
gw_value(http_parser *p, const char *at, size_t n)
{
	return http_head_value(((struct gw_body *)p->data)->h, at, n) == -1;
}

static int
gw_headers(http_parser *p)
{
	http_head_done(((struct gw_body *)p->data)->h);
	http_parser_pause(p, 1);
	return 0;
}

static int
gw_data(http_parser *p, const char *at, size_t n)
{
	struct gw_body *g = p->data;

	if (g->r->blen + n > LIMIT) {
		g->over = 1;
		return 1;
	}
	memcpy(g->r->body + g->r->blen, at, n);
	g->r->blen += n;
	return 0;
}

static int
gw_done(http_parser *p)
{
	((struct gw_body *)p->data)->done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings gw_settings = {
	.on_url = gw_url,
	.on_header_field = gw_field,
	.on_header_value = gw_value,
	.on_headers_complete = gw_headers,
	.on_body = gw_data,
	.on_message_complete = gw_done,
};

static struct http_head	gw_head;

/* After the head: the gateway's checks, then the lexer told the framing. */
static int
gw_dispatch(http_parser *p, struct http_lex *lx, struct req *r, int *upgrade)
{
	int st;

	if (gw_head.overflow)
		return 431;
	if ((st = http_check_request(&gw_head, p)) != 0)
		return st;
	if ((p->flags & F_CONTENTLENGTH) && p->content_length > LIMIT)
		return 413;
	*upgrade = p->upgrade;
	http_lex_body(lx, p->upgrade ? HTTP_LEX_STOP : (p->flags & F_CHUNKED) ?
	    HTTP_LEX_CHUNKED : (p->flags & F_CONTENTLENGTH) &&
	    p->content_length > 0 ? HTTP_LEX_LENGTH : HTTP_LEX_NONE,
	    (p->flags & F_CONTENTLENGTH) ? p->content_length : 0, LIMIT);
	(void)r;
	return REF_OK;
}

/* The forwarded request in fwd (*fwdlen), or the status the gateway
 * answers; *perr the parser's errno when the parser refused. */
static int
gw_run(const char *b, size_t len, const size_t *cuts, struct req *r,
    char *fwd, size_t *fwdlen, int *perr)
{
	struct gw_body g = { &gw_head, r, 0, 0 };
	struct http_lex lx;
	struct http_fwd f;
	struct http_out o = { fwd, OUT_MAX, 0 };
	http_parser p;
	size_t off = 0, end = 0, lexed = 0, used, give, n, head = 0;
	int st, piece = 0, upgrade = 0, head_done = 0;

	*perr = 0;
	r->blen = 0;
	http_lex_init(&lx);
	http_head_reset(&gw_head);
	http_parser_init(&p, HTTP_REQUEST);
	p.data = &g;
	while (!g.done) {
		if (off == end) {	/* the next piece arrives */
			if (end == len)
				return REF_MORE;
			end = piece < 2 && cuts[piece] > end ? cuts[piece] : len;
			piece++;
		}
		give = end - off;
		if (lexed < give) {
			if ((st = http_lex(&lx, b + off + lexed, give - lexed,
			    &used)) != 0)
				return st;
			lexed += used;
		}
		if ((give = lexed < give ? lexed : give) == 0)
			return REF_MORE;	/* the lexer waits: never */
		n = http_parser_execute(&p, &gw_settings, b + off, give);
		off += n;
		lexed -= n;
		if (!head_done)
			head += n;
		if (HTTP_PARSER_ERRNO(&p) == HPE_PAUSED) {
			http_parser_pause(&p, 0);
			if (g.done)
				break;
			head_done = 1;
			if ((st = gw_dispatch(&p, &lx, r, &upgrade)) != REF_OK)
				return st;
			continue;
		}
		if (HTTP_PARSER_ERRNO(&p) != HPE_OK) {
			*perr = HTTP_PARSER_ERRNO(&p);
			return g.over ? 413 : http_head_error(&gw_head, head,
			    head_done);
		}
		if (!head_done && head > HTTP_HEAD_MAX)
			return 431;
		if (n < give)
			return REF_MORE;
	}
	check(off == lx.msg_end, "the lexer and the parser end together");
	f.peer = "192.0.2.1";
	f.trusted = 1;
	f.host = "127.0.0.1:8080";
	f.strip = 0;
	f.chunked = 0;
	f.length = upgrade ? -1 : (int64_t)r->blen;
	f.upgrade = upgrade;
	if (http_request_head(&o, &gw_head, &p, &f) == -1)
		return 431;
	check(o.len + r->blen <= OUT_MAX, "room for the body");
	memcpy(fwd + o.len, r->body, r->blen);
	*fwdlen = o.len + r->blen;
	return REF_OK;
}

/*
 * The comparison.
 */
static int
removed(const struct req *r, const struct field *f)
{
	static const char *const hop[] = { "connection", "keep-alive",
	    "proxy-connection", "te", "trailer", "transfer-encoding",
	    "upgrade", "expect", "x-forwarded-for", "content-length" };
	const char *a;
	size_t i, alen, path;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (name_eq(f, hop[i]))
			return 1;
	if (name_eq(f, "host") && absolute(r, &a, &alen, &path))
		return 1;	/* its authority is the Host */
	return conn_names(r, f->name, f->nlen);
}


static void
compare(const struct req *in, const struct req *gw, const struct req *o)
{
	const struct field *x = NULL;
	const char *a, *t = in->target;
	size_t alen, path, tlen = in->tlen;
	int i, j = 0, added = 0, slash = 0;

	check(o->mlen == in->mlen && memcmp(o->method, in->method,
	    in->mlen) == 0, "same method");
	if (absolute(in, &a, &alen, &path)) {	/* now in origin-form */
		t = in->target + path;
		tlen = in->tlen - path;
		slash = tlen == 0 || t[0] != '/';
	}
	check(o->tlen == tlen + slash && (!slash || o->target[0] == '/') &&
	    memcmp(o->target + slash, t, tlen) == 0, "same target");
	check(gw->blen == in->blen && memcmp(gw->body, in->body,
	    in->blen) == 0, "the gateway read the same body");
	check(o->blen == in->blen && memcmp(o->body, in->body, in->blen) == 0,
	    "the same body forwarded");
	for (i = 0; i < in->nf; i++) {
		if (removed(in, &in->f[i]))
			continue;
		check(j < o->nf, "a field kept");
		check(o->f[j].nlen == in->f[i].nlen && o->f[j].vlen ==
		    in->f[i].vlen && memcmp(o->f[j].name, in->f[i].name,
		    in->f[i].nlen) == 0 && memcmp(o->f[j].val, in->f[i].val,
		    in->f[i].vlen) == 0, "a field kept as it was, in order");
		j++;
	}
	for (; j < o->nf; j++, added++)
		check(name_eq(&o->f[j], "x-forwarded-for") ||
		    name_eq(&o->f[j], "x-forwarded-proto") ||
		    name_eq(&o->f[j], "x-forwarded-host") ||
		    name_eq(&o->f[j], "content-length") ||
		    name_eq(&o->f[j], "host") ||
		    (in->upgrade && (name_eq(&o->f[j], "connection") ||
		    name_eq(&o->f[j], "upgrade"))), "only known fields added");
	check(count(o, "content-length", &x) == (in->upgrade ? 0 : 1),
	    "one Content-Length");
	check(count(o, "transfer-encoding", &x) == 0, "no Transfer-Encoding");
	check(added > 0, "X-Forwarded-For added");
}

/*
 * What http_parser refuses that the reference does not model: methods it
 * does not know, URLs it does not parse, and any field whose name starts
 * with "Transfer-Encoding" (2.9.4 takes "Transfer-Encodingx" for one).
 */
static int
parser_own(int perr)
{
	return perr == HPE_INVALID_METHOD || perr == HPE_INVALID_URL ||
	    perr == HPE_INVALID_CONSTANT || perr == HPE_INVALID_CONTENT_LENGTH ||
	    perr == HPE_HEADER_OVERFLOW ||
	    perr == HPE_INVALID_TRANSFER_ENCODING;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char *b = (const char *)data + 2;
	size_t cuts[2], fwdlen = 0;
	int ref, gw, fwd, perr;

	if (len < 2 || len - 2 > HTTP_HEAD_MAX + LIMIT)
		return 0;
	len -= 2;
	cuts[0] = len ? data[0] % (len + 1) : 0;
	cuts[1] = len ? data[1] * (len + 1) / 256 : 0;
	if (cuts[1] < cuts[0])
		cuts[1] = cuts[0];
	ref = ref_parse(b, len, &in_ref);
	gw = gw_run(b, len, cuts, &gw_req, out, &fwdlen, &perr);
	if (gw == REF_OK) {
		check(ref == REF_OK, "what the gateway takes, the reference "
		    "takes");
		if (in_ref.upgrade)
			return 0;	/* a tunnel follows, not a body */
		fwd = ref_parse(out, fwdlen, &out_ref);
		check(fwd == REF_OK, "what it forwards reads as a request");
		compare(&in_ref, &gw_req, &out_ref);
		return 0;
	}
	if (ref == 400 || ref == 413 || ref == 505 || ref == 405) {
		check(gw == ref || (gw == 400 && perr != 0) || gw == 431,
		    "the reference's refusal is the gateway's");
		return 0;
	}
	if (ref == 431) {	/* its own cap of fields, over the gateway's */
		check(gw == 431 || gw == 400, "too many fields: refused");
		return 0;
	}
	if (ref == REF_MORE) {
		if (gw == REF_MORE || gw == 431 || parser_own(perr))
			return 0;
		/* refused early: no ending can make it a request */
		check(len + 4 <= sizeof(ext), "room to end it");
		memcpy(ext, b, len);
		memcpy(ext + len, "\r\n\r\n", 4);
		ref = ref_parse(ext, len + 4, &in_ref);
		check(ref != REF_OK, "the lexer refuses only what cannot "
		    "become a request");
		return 0;
	}
	/* the reference takes it: the parser alone may refuse, or a limit */
	check(gw == 431 || parser_own(perr), "the gateway refuses what the "
	    "reference takes only for the parser's own reasons");
	return 0;
}
