/*
 * http_lex.c - strict framing of request bytes (lib/http_lex.c): what the
 * gateway refuses before http_parser sees it, byte by byte as it arrives.
 *
 * Each case is a whole request, head and body.  The driver feeds it in
 * one piece and one byte at a time; at the head's end it names the body's
 * framing as the gateway would (from the head's Transfer-Encoding and
 * Content-Length), with a limit of LIMIT bytes of declared chunk sizes.
 * A request taken must end exactly at its last byte (msg_end); a refused
 * one must be refused with the same status both ways.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "tap.h"

#define LIMIT	1000
#define H	"Host: a\r\n"
#define TE	"Transfer-Encoding: chunked\r\n"
#define POST	"POST / HTTP/1.1\r\n" H TE "\r\n"
#define BIN(s)	s, sizeof(s) - 1	/* bytes with a NUL among them */

static const struct {
	const char	*name;
	const char	*bytes;
	size_t		 len;		/* 0: strlen */
	int		 want;		/* 0 taken, else the refusal */
} cases[] = {
	{ "a GET", "GET / HTTP/1.1\r\n" H "\r\n", 0, 0 },
	{ "empty lines before it", "\r\n\r\nGET / HTTP/1.1\r\n" H "\r\n",
	  0, 0 },
	{ "LF alone ends head lines", "GET / HTTP/1.1\n" H "X: y\n\n", 0, 0 },
	{ "HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", 0, 0 },
	{ "HTTP/1.2 is read as 1.x", "GET / HTTP/1.2\r\n" H "\r\n", 0, 0 },
	{ "an empty value", "GET / HTTP/1.1\r\n" H "X:\r\n\r\n", 0, 0 },
	{ "tabs and obs-text in a value", "GET / HTTP/1.1\r\n" H
	  "X: a\tb \xc3\xa9\r\n\r\n", 0, 0 },
	{ "tchar names", "GET / HTTP/1.1\r\n" H "X-!#$%&'*+.^_`|~9: v\r\n\r\n",
	  0, 0 },
	{ "an absolute URL", "GET http://a/x?y=1 HTTP/1.1\r\n" H "\r\n", 0, 0 },
	{ "a Content-Length body", "POST / HTTP/1.1\r\n" H
	  "Content-Length: 5\r\n\r\nhello", 0, 0 },
	{ "chunked", POST "5\r\nhello\r\n0\r\n\r\n", 0, 0 },
	{ "chunked, upper-case hex and leading zeros",
	  POST "00A\r\n0123456789\r\n000\r\n\r\n", 0, 0 },
	{ "chunk extensions", POST "5;a\r\nhello\r\n"
	  "5 ; b = c ;d=\"q \\\" x\"\r\nhello\r\n0;e\r\n\r\n", 0, 0 },
	{ "trailer fields", POST "5\r\nhello\r\n0\r\nT: x\r\nU:\r\n\r\n",
	  0, 0 },
	{ "chunk data holding CR and LF", POST "4\r\n\r\n\r\n\r\n0\r\n\r\n",
	  0, 0 },
	{ "chunks up to the limit", POST "1f4\r\n" "%500" "\r\n1f4\r\n"
	  "%500" "\r\n0\r\n\r\n", 0, 0 },

	{ "whitespace before a colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
	  0, 400 },
	{ "a tab before a colon", "GET / HTTP/1.1\r\n" H "X\t: y\r\n\r\n",
	  0, 400 },
	{ "a space in a name", "GET / HTTP/1.1\r\n" H "X Y: z\r\n\r\n",
	  0, 400 },
	{ "an empty name", "GET / HTTP/1.1\r\n" H ": z\r\n\r\n", 0, 400 },
	{ "obs-fold", "GET / HTTP/1.1\r\n" H "X: a\r\n b\r\n\r\n", 0, 400 },
	{ "obs-fold with a tab", "GET / HTTP/1.1\r\n" H "X: a\r\n\tb\r\n\r\n",
	  0, 400 },
	{ "obs-fold in Host", "GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n",
	  0, 400 },
	{ "a space before the first field",
	  "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 0, 400 },
	{ "a bare CR in a value", "GET / HTTP/1.1\r\n" H "X: a\rb\r\n\r\n",
	  0, 400 },
	{ "a bare CR ending a field line", "GET / HTTP/1.1\r\n" H "X: a\r"
	  "Y: b\r\n\r\n", 0, 400 },
	{ "a bare CR in the request line", "GET /\r HTTP/1.1\r\n" H "\r\n",
	  0, 400 },
	{ "a bare CR after the version", "GET / HTTP/1.1\rX\n" H "\r\n",
	  0, 400 },
	{ "a bare CR before the request", "\rGET / HTTP/1.1\r\n" H "\r\n",
	  0, 400 },
	{ "a bare CR as the empty line", "GET / HTTP/1.1\r\n" H "\r\r\n",
	  0, 400 },
	{ "a control character in a value",
	  "GET / HTTP/1.1\r\n" H "X: a\x01\r\n\r\n", 0, 400 },
	{ "DEL in a value", "GET / HTTP/1.1\r\n" H "X: a\x7f\r\n\r\n", 0, 400 },
	{ "NUL in a value", BIN("GET / HTTP/1.1\r\nX: a\0b\r\n" H "\r\n"),
	  400 },
	{ "NUL in a name", BIN("GET / HTTP/1.1\r\nX\0: b\r\n" H "\r\n"),
	  400 },
	{ "two spaces after the method", "GET  / HTTP/1.1\r\n" H "\r\n",
	  0, 400 },
	{ "a space in the target", "GET /a b HTTP/1.1\r\n" H "\r\n", 0, 400 },
	{ "obs-text in the target", "GET /\xc3\xa9 HTTP/1.1\r\n" H "\r\n",
	  0, 400 },
	{ "a space after the version", "GET / HTTP/1.1 \r\n" H "\r\n", 0, 400 },
	{ "a lower-case version", "GET / http/1.1\r\n" H "\r\n", 0, 400 },
	{ "a two-digit minor version", "GET / HTTP/1.10\r\n" H "\r\n", 0, 400 },
	{ "no version", "GET /\r\n\r\n", 0, 400 },
	{ "a method with a slash", "G/T / HTTP/1.1\r\n" H "\r\n", 0, 400 },
	{ "HTTP/9.9", "GET / HTTP/9.9\r\n" H "\r\n", 0, 505 },
	{ "HTTP/2.0", "GET / HTTP/2.0\r\n" H "\r\n", 0, 505 },
	{ "HTTP/0.9", "GET / HTTP/0.9\r\n" H "\r\n", 0, 505 },

	{ "a bare CR in a chunk size", POST "5\rhello\r\n0\r\n\r\n", 0, 400 },
	{ "a bare CR in a chunk extension", POST "5;a\rb\r\nhello\r\n0\r\n\r\n",
	  0, 400 },
	{ "a CR in a quoted extension", POST "5;a=\"x\ry\"\r\nhello\r\n"
	  "0\r\n\r\n", 0, 400 },
	{ "LF alone after a chunk size", POST "5\nhello\r\n0\r\n\r\n", 0, 400 },
	{ "LF alone after chunk data", POST "5\r\nhello\n0\r\n\r\n", 0, 400 },
	{ "other bytes after chunk data", POST "5\r\nhelloXX0\r\n\r\n", 0, 400 },
	{ "whitespace after a chunk size", POST "5 \r\nhello\r\n0\r\n\r\n",
	  0, 400 },
	{ "no chunk size", POST "\r\nhello\r\n0\r\n\r\n", 0, 400 },
	{ "a chunk size with a sign", POST "+5\r\nhello\r\n0\r\n\r\n", 0, 400 },
	{ "an extension without a name", POST "5;\r\nhello\r\n0\r\n\r\n",
	  0, 400 },
	{ "an extension with an empty value", POST "5;a=\r\nhello\r\n"
	  "0\r\n\r\n", 0, 400 },
	{ "whitespace ending an extension", POST "5;a \r\nhello\r\n0\r\n\r\n",
	  0, 400 },
	{ "obs-fold in a trailer", POST "5\r\nhello\r\n0\r\nT: x\r\n y\r\n"
	  "\r\n", 0, 400 },
	{ "whitespace before a trailer's colon", POST "5\r\nhello\r\n0\r\n"
	  "T : x\r\n\r\n", 0, 400 },
	{ "LF alone in a trailer", POST "5\r\nhello\r\n0\r\nT: x\n\r\n",
	  0, 400 },
	{ "LF alone ending a chunked body", POST "5\r\nhello\r\n0\r\n\n",
	  0, 400 },
	{ "one chunk over the limit", POST "3e9\r\n", 0, 413 },
	{ "chunks adding up over the limit", POST "1f4\r\n" "%500" "\r\n1f5\r\n",
	  0, 413 },
	{ "a chunk size of twenty hex digits", POST "ffffffffffffffffffff\r\n",
	  0, 413 },
};

static char	*expand(const char *, size_t, size_t *);
static int	 run(const char *, size_t, size_t, size_t *);
static int	 framing(const char *, size_t, uint64_t *);

/* "%N" stands for N bytes of 'x' (a body too long to write out). */
static char *
expand(const char *s, size_t len, size_t *out)
{
	char *buf, *p;
	size_t i, n;

	if ((buf = malloc(len + 4096)) == NULL)
		abort();
	for (i = 0, p = buf; i < len; i++) {
		if (s[i] == '%' && len - i > 1 && s[i + 1] >= '0' &&
		    s[i + 1] <= '9') {
			n = strtoul(s + i + 1, NULL, 10);
			memset(p, 'x', n);
			p += n;
			while (i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9')
				i++;
		} else
			*p++ = s[i];
	}
	*out = (size_t)(p - buf);
	return buf;
}

/* The framing the gateway gives the body of the head in buf[0..len). */
static int
framing(const char *buf, size_t len, uint64_t *length)
{
	const char *p = buf, *end = buf + len, *eol;

	*length = 0;
	for (; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		if ((size_t)(eol - p) >= 26 &&
		    strncasecmp(p, "transfer-encoding: chunked", 26) == 0)
			return HTTP_LEX_CHUNKED;
		if ((size_t)(eol - p) > 16 &&
		    strncasecmp(p, "content-length: ", 16) == 0) {
			*length = strtoull(p + 16, NULL, 10);
			return HTTP_LEX_LENGTH;
		}
	}
	return HTTP_LEX_NONE;
}

/* Feeds buf in pieces of step bytes; the result, *end the message end. */
static int
run(const char *buf, size_t len, size_t step, size_t *end)
{
	struct http_lex lx;
	uint64_t length;
	size_t off = 0, n, used;
	int r, framed = 0;

	http_lex_init(&lx);
	while (off < len) {
		n = len - off < step ? len - off : step;
		if ((r = http_lex(&lx, buf + off, n, &used)) != 0)
			return r;
		off += used;
		if (http_lex_head_done(&lx)) {
			if (framed)
				return -1;	/* a second head: not a case */
			r = framing(buf, off, &length);
			http_lex_body(&lx, r, length, LIMIT);
			framed = 1;
		} else if (used < n)
			return -2;	/* stopped, not at a head's end */
	}
	*end = (size_t)lx.msg_end;
	return framed && http_lex_idle(&lx) ? 0 : -3;
}

int
main(void)
{
	size_t i, len, end1, endn;
	char *buf;
	int r1, rn;

	plan((int)(sizeof(cases) / sizeof(cases[0])) * 2);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf = expand(cases[i].bytes, cases[i].len ? cases[i].len :
		    strlen(cases[i].bytes), &len);
		end1 = endn = 0;
		r1 = run(buf, len, len, &end1);
		rn = run(buf, len, 1, &endn);
		ok(r1 == cases[i].want && rn == cases[i].want,
		    "%s: %s", cases[i].name, cases[i].want == 0 ? "taken" :
		    cases[i].want == 400 ? "400" : cases[i].want == 413 ?
		    "413" : "505");
		if (r1 != cases[i].want || rn != cases[i].want)
			diag("whole: %d, byte by byte: %d", r1, rn);
		ok(cases[i].want != 0 || (end1 == len && endn == len),
		    "%s: the message ends at its last byte", cases[i].name);
		free(buf);
	}
	return done();
}
