/*
 * http_accept.c - does a request come from a browser that would rather
 * read a page than wait?  A pure function over the bytes of its Accept
 * fields (RFC 9110 12.5.1), for the gateway's waiting page (hk-activate(8)).
 *
 * A browser names text/html first and at full weight; a script asks for
 * "*" "/" "*", application/json, or nothing.  So the answer is yes only when
 * text/html itself is listed with a weight above 0 and at least as high as
 * every other range listed (a wildcard does not count as text/html).
 * Anything malformed is no: such a client waits, as every client did
 * before the page existed.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "http.h"

static int	is_tchar(int);
static int	is_ows(int);
static size_t	skip_ows(const char *, size_t, size_t);
static size_t	token(const char *, size_t, size_t);
static int	qvalue(const char *, size_t, int *);
static int	element(const char *, size_t, size_t *, int *, int *);

static int
is_tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' &&
	    strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
is_ows(int c)
{
	return c == ' ' || c == '\t';
}

static size_t
skip_ows(const char *v, size_t n, size_t i)
{
	while (i < n && is_ows((unsigned char)v[i]))
		i++;
	return i;
}

/* The end of a token starting at i (i itself if there is none). */
static size_t
token(const char *v, size_t n, size_t i)
{
	while (i < n && is_tchar((unsigned char)v[i]))
		i++;
	return i;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in 1/1000. */
static int
qvalue(const char *s, size_t len, int *q)
{
	size_t i;
	int v, scale = 100;

	if (len == 0 || (s[0] != '0' && s[0] != '1') || len > 5 ||
	    (len > 1 && s[1] != '.'))
		return -1;
	v = (s[0] - '0') * 1000;
	for (i = 2; i < len; i++, scale /= 10) {
		if (s[i] < '0' || s[i] > '9' || (s[0] == '1' && s[i] != '0'))
			return -1;
		v += (s[i] - '0') * scale;
	}
	*q = v;
	return 0;
}

/*
 * One list element from *pos: media-range *( OWS ";" OWS parameter ),
 * its weight from "q=" (1000 without), *html when it is text/html.
 * 1 with *pos past it (and its comma), 0 for an empty element, -1 when
 * malformed.
 */
static int
element(const char *v, size_t n, size_t *pos, int *q, int *html)
{
	size_t i = skip_ows(v, n, *pos), t, s, e, name, nl;
	int weighted = 0;

	if (i == n || v[i] == ',') {
		*pos = i < n ? i + 1 : n;
		return 0;
	}
	t = i;
	if ((i = token(v, n, i)) == t || i == n || v[i] != '/')
		return -1;
	s = ++i;
	if ((i = token(v, n, i)) == s)
		return -1;
	*html = i - t == 9 && strncasecmp(v + t, "text/html", 9) == 0;
	*q = 1000;
	for (;;) {
		i = skip_ows(v, n, i);
		if (i == n || v[i] == ',')
			break;
		if (v[i] != ';')
			return -1;
		i = skip_ows(v, n, i + 1);
		if (i == n || v[i] == ',' || v[i] == ';')
			continue;	/* an empty parameter */
		name = i;
		if ((i = token(v, n, i)) == name || i == n || v[i] != '=')
			return -1;
		nl = i - name;
		e = ++i;
		if (i < n && v[i] == '"') {
			for (i++; i < n && v[i] != '"'; i++)
				if (v[i] == '\\' && ++i == n)
					return -1;
			if (i++ == n)
				return -1;
		} else if ((i = token(v, n, i)) == e)
			return -1;
		/* the first q is the weight; what follows are extensions */
		if (nl == 1 && (v[name] == 'q' || v[name] == 'Q') &&
		    !weighted++ && qvalue(v + e, i - e, q) == -1)
			return -1;
	}
	*pos = i < n ? i + 1 : n;
	return 1;
}

/*
 * Accumulates one Accept field value into the best weights seen so far
 * of text/html and of every other range (-1: none yet); -1 if malformed.
 */
int
http_accept_scan(const char *v, size_t n, int *html_q, int *other_q)
{
	size_t pos = 0;
	int r, q, html;

	while (pos < n) {
		if ((r = element(v, n, &pos, &q, &html)) == -1)
			return -1;
		if (r == 0)
			continue;
		if (html && q > *html_q)
			*html_q = q;
		else if (!html && q > *other_q)
			*other_q = q;
	}
	return 0;
}

/*
 * A GET or HEAD whose Accept fields (all of them, as one list) prefer
 * text/html: see above.
 */
int
http_wants_html(const struct http_head *h, const http_parser *p)
{
	int i, html_q = -1, other_q = -1;

	if (p->method != HTTP_GET && p->method != HTTP_HEAD)
		return 0;
	for (i = 0; i < h->nhdr; i++) {
		if (h->hdr[i].name_len != 6 || strncasecmp(h->buf +
		    h->hdr[i].name_off, "accept", 6) != 0)
			continue;
		if (http_accept_scan(h->buf + h->hdr[i].val_off,
		    h->hdr[i].val_len, &html_q, &other_q) == -1)
			return 0;
	}
	return html_q > 0 && html_q >= other_q;
}
