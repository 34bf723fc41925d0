/*
 * http.c - request and response heads (lib/http.c): what the gateway
 * accepts and refuses (400 framing, 405, 431), the facts it takes from a
 * head, and the heads it writes: hop-by-hop headers removed, X-Forwarded-*
 * set, the body re-framed for HTTP/1.1 and HTTP/1.0 clients.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "tap.h"

#define HOST	"Host: a.fn.localhost\r\n"

static const struct {
	const char	*name;
	const char	*head;
	int		 want;	/* parse, then http_check_request */
} requests[] = {
	{ "a GET", "GET / HTTP/1.1\r\n" HOST "\r\n", 0 },
	{ "a POST with Content-Length",
	  "POST /p HTTP/1.1\r\n" HOST "Content-Length: 3\r\n\r\n", 0 },
	{ "a chunked POST",
	  "POST /p HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n", 0 },
	{ "chunked, any case", "POST /p HTTP/1.1\r\n" HOST
	  "transfer-encoding: Chunked\r\n\r\n", 0 },
	{ "HTTP/1.0 without Host", "GET /old HTTP/1.0\r\n\r\n", 0 },
	{ "an absolute URL", "GET http://a.fn.localhost/x HTTP/1.1\r\n"
	  HOST "\r\n", 0 },
	{ "Expect: 100-continue", "PUT /e HTTP/1.1\r\n" HOST
	  "Expect: 100-continue\r\nContent-Length: 5\r\n\r\n", 0 },
	{ "an Upgrade", "GET /ws HTTP/1.1\r\n" HOST
	  "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 0 },
	{ "Content-Length with Transfer-Encoding", "POST / HTTP/1.1\r\n" HOST
	  "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
	{ "Transfer-Encoding with Content-Length", "POST / HTTP/1.1\r\n" HOST
	  "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400 },
	{ "two equal Content-Length", "POST / HTTP/1.1\r\n" HOST
	  "Content-Length: 3\r\nContent-Length: 3\r\n\r\n", 400 },
	{ "two different Content-Length", "POST / HTTP/1.1\r\n" HOST
	  "Content-Length: 3\r\nContent-Length: 4\r\n\r\n", 400 },
	{ "a list in Content-Length", "POST / HTTP/1.1\r\n" HOST
	  "Content-Length: 3, 3\r\n\r\n", 400 },
	{ "a negative Content-Length", "POST / HTTP/1.1\r\n" HOST
	  "Content-Length: -1\r\n\r\n", 400 },
	{ "a coding other than chunked", "POST / HTTP/1.1\r\n" HOST
	  "Transfer-Encoding: gzip\r\n\r\n", 400 },
	{ "gzip, chunked", "POST / HTTP/1.1\r\n" HOST
	  "Transfer-Encoding: gzip, chunked\r\n\r\n", 400 },
	{ "two Transfer-Encoding lines", "POST / HTTP/1.1\r\n" HOST
	  "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	  400 },
	{ "two Host", "GET / HTTP/1.1\r\n" HOST HOST "\r\n", 400 },
	{ "HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400 },
	{ "CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 405 },
	{ "Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", 400 },
	{ "a Host with a path", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400 },
	{ "a Host with a space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400 },
	{ "a Host with a bad port", "GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n",
	  400 },
	{ "a Host in brackets", "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	  0 },
	{ "an empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 0 },
	{ "userinfo in an absolute target", "GET http://u@a/ HTTP/1.1\r\n"
	  HOST "\r\n", 400 },
	{ "an absolute target without a host", "GET http:///x HTTP/1.1\r\n"
	  HOST "\r\n", 400 },
	{ "Connection naming 16 fields", "GET / HTTP/1.1\r\n" HOST
	  "Connection: a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p\r\n\r\n", 0 },
	{ "Connection naming Host", "GET / HTTP/1.1\r\n" HOST
	  "Connection: close, Host\r\n\r\n", 400 },
	{ "Connection naming Content-Length", "POST / HTTP/1.1\r\n" HOST
	  "Content-Length: 3\r\nConnection: content-length\r\n\r\n", 400 },
	{ "a target of another scheme", "GET ftp://a/ HTTP/1.1\r\n" HOST
	  "\r\n", 400 },
	{ "OPTIONS *", "OPTIONS * HTTP/1.1\r\n" HOST "\r\n", 0 },
	{ "GET *", "GET * HTTP/1.1\r\n" HOST "\r\n", 400 },
	{ "Connection naming 17 fields", "GET / HTTP/1.1\r\n" HOST
	  "Connection: a,b,c,d,e,f,g,h,i,j,k,l,m,n,o\r\nConnection: p, q\r\n"
	  "\r\n", 400 },
	{ "a bad request line", "GET / HTTP/1.1 x\r\n" HOST "\r\n", 400 },
	{ "a bad version", "GET / HTTP/9x\r\n" HOST "\r\n", 400 },
	{ "a control character in a header name", "GET / HTTP/1.1\r\n" HOST
	  "Bad\x01Name: x\r\n\r\n", 400 },
	{ "a bare line feed in a value", "GET / HTTP/1.1\r\n" HOST
	  "X: a\rb\r\n\r\n", 400 },
	{ "not HTTP", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400 },
	{ "a head not finished", "GET / HTTP/1.1\r\n" HOST, HTTP_HEAD_MORE },
};

static const struct {
	const char	*name;
	const char	*head;
	long		 strip;		/* < 0: a body of -strip read whole */
	const char	*want;
	int		 trusted;	/* from a trusted proxy */
} forwards[] = {
	{ "hop-by-hop headers and those named by Connection are removed",
	  "GET /h HTTP/1.1\r\n" HOST "Connection: X-Hop, keep-alive\r\n"
	  "X-Hop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
	  "Proxy-Connection: x\r\nTrailer: X-T\r\nUpgrade: h2c\r\n"
	  "X-Kept: yes\r\n\r\n", 0,
	  "GET /h HTTP/1.1\r\n" HOST "X-Kept: yes\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
	  "X-Forwarded-Host: a.fn.localhost\r\n\r\n", 0 },
	{ "an untrusted peer's X-Forwarded-For is replaced",
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarded-For: 192.0.2.1\r\n\r\n", 0,
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: a.fn.localhost\r\n"
	  "\r\n", 0 },
	{ "a trusted proxy's X-Forwarded-Proto and -Host are kept",
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarded-Proto: https\r\n"
	  "X-Forwarded-Host: api.example.com\r\n\r\n", 0,
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarded-Proto: https\r\n"
	  "X-Forwarded-Host: api.example.com\r\nX-Forwarded-For: 127.0.0.1\r\n"
	  "\r\n", 1 },
	{ "anyone else's are replaced by the gateway's",
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarded-Proto: https\r\n"
	  "X-Forwarded-Host: api.example.com\r\n\r\n", 0,
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: a.fn.localhost\r\n"
	  "\r\n", 0 },
	{ "an untrusted peer's forwarding headers are removed, any case",
	  "GET / HTTP/1.1\r\n" HOST "forwarded: for=192.0.2.1;proto=https\r\n"
	  "X-Real-IP: 192.0.2.1\r\nx-FORWARDED-port: 443\r\n"
	  "X-Forwarded-Server: evil\r\nX-Forwarded-: x\r\n"
	  "X-Client-IP: 192.0.2.1\r\nTrue-Client-IP: 192.0.2.1\r\n"
	  "X-Cluster-Client-IP: 192.0.2.1\r\nX-Forwarder: kept\r\n\r\n", 0,
	  "GET / HTTP/1.1\r\n" HOST "X-Forwarder: kept\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: a.fn.localhost\r\n"
	  "\r\n", 0 },
	{ "a trusted proxy's are kept, X-Forwarded-Proto added if it has none",
	  "GET / HTTP/1.1\r\n" HOST "Forwarded: for=192.0.2.1\r\n"
	  "X-Real-IP: 192.0.2.1\r\nX-Forwarded-Port: 443\r\n\r\n", 0,
	  "GET / HTTP/1.1\r\n" HOST "Forwarded: for=192.0.2.1\r\n"
	  "X-Real-IP: 192.0.2.1\r\nX-Forwarded-Port: 443\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: a.fn.localhost\r\n"
	  "\r\n", 1 },
	{ "the /fn/app/service prefix is stripped, the query kept",
	  "GET /fn/fn/web/deep/path?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", 10,
	  "GET /deep/path?q=1 HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 127.0.0.1"
	  "\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: x\r\n\r\n", 0 },
	{ "/fn/app/service alone forwards /",
	  "GET /fn/fn/web HTTP/1.1\r\nHost: x\r\n\r\n", 14,
	  "GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: x\r\n\r\n", 0 },
	{ "HTTP/1.0 without Host: HTTP/1.1 with the endpoint as Host",
	  "GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0,
	  "GET /old HTTP/1.1\r\nX-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nHost: 127.0.0.1:8080\r\n\r\n", 0 },
	{ "a chunked body stays chunked, Expect is the gateway's",
	  "POST /c HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n"
	  "Expect: 100-continue\r\n\r\n", 0,
	  "POST /c HTTP/1.1\r\n" HOST "X-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: a.fn.localhost\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", 0 },
	{ "Content-Length is kept",
	  "POST /p HTTP/1.1\r\n" HOST "Content-Length: 3\r\n\r\n", 0,
	  "POST /p HTTP/1.1\r\n" HOST "Content-Length: 3\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
	  "X-Forwarded-Host: a.fn.localhost\r\n\r\n", 0 },
	{ "an Upgrade is passed on",
	  "GET /ws HTTP/1.1\r\n" HOST "Connection: Upgrade\r\n"
	  "Upgrade: websocket\r\n\r\n", 0,
	  "GET /ws HTTP/1.1\r\n" HOST "X-Forwarded-For: 127.0.0.1\r\n"
	  "X-Forwarded-Proto: http\r\nX-Forwarded-Host: a.fn.localhost\r\n"
	  "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n", 0 },
	{ "an absolute target: origin-form, its authority the Host",
	  "GET http://a.fn.localhost:8082/x?q=1 HTTP/1.1\r\nHost: other\r\n"
	  "\r\n", 0,
	  "GET /x?q=1 HTTP/1.1\r\nHost: a.fn.localhost:8082\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
	  "X-Forwarded-Host: a.fn.localhost:8082\r\n\r\n", 0 },
	{ "an absolute https target without a path forwards /",
	  "GET HTTPS://a.fn.localhost HTTP/1.0\r\n\r\n", 0,
	  "GET / HTTP/1.1\r\nHost: a.fn.localhost\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
	  "X-Forwarded-Host: a.fn.localhost\r\n\r\n", 0 },
	{ "a body read whole: its Content-Length is the gateway's",
	  "POST /p HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n",
	  -7,
	  "POST /p HTTP/1.1\r\n" HOST "Content-Length: 7\r\n"
	  "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
	  "X-Forwarded-Host: a.fn.localhost\r\n\r\n", 0 },
};

static const struct {
	const char	*name;
	const char	*head;
	int		 old, nobody, close;	/* in */
	int		 chunked, until_close, closes;	/* out */
	const char	*want;
} responses[] = {
	{ "Content-Length kept, Keep-Alive removed",
	  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\n"
	  "\r\n", 0, 0, 0, 0, 0, 0,
	  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" },
	{ "chunked kept for HTTP/1.1",
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	  0, 0, 0, 1, 0, 0,
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" },
	{ "a body to the backend's close is chunked for HTTP/1.1",
	  "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", 0, 0, 0, 1, 1, 0,
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" },
	{ "a chunked body goes bare to HTTP/1.0, which is closed",
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	  1, 0, 0, 0, 0, 1,
	  "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n" },
	{ "HTTP/1.0 keep-alive with a Content-Length",
	  "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, 0, 0, 0, 0, 0,
	  "HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n"
	  "\r\n" },
	{ "a closing client gets Connection: close",
	  "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
	  0, 0, 1, 0, 0, 1,
	  "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n"
	  "\r\n" },
	{ "204 has no body to frame",
	  "HTTP/1.1 204 No Content\r\n\r\n", 0, 1, 0, 0, 0, 0,
	  "HTTP/1.1 204 No Content\r\n\r\n" },
	{ "an interim 100 Continue",
	  "HTTP/1.1 100 Continue\r\n\r\n", 0, 0, 0, 0, 0, 0,
	  "HTTP/1.1 100 Continue\r\n\r\n" },
	{ "101 names its Upgrade",
	  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	  "Connection: Upgrade\r\n\r\n", 0, 1, 0, 0, 0, 0,
	  "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
	  "Upgrade: websocket\r\n\r\n" },
};

static const struct {
	const char	*host;
	const char	*want;
} hosts[] = {
	{ "API.Example.COM", "api.example.com" },
	{ "a.fn.localhost:8080", "a.fn.localhost" },
	{ "a.fn.localhost.", "a.fn.localhost" },
	{ "[::1]:8080", "[::1]" },
	{ " a b ", "ab" },
};

static const struct {
	const char	*url;
	const char	*want;
} paths[] = {
	{ "/p?secret=1", "/p" },
	{ "/a/b#frag", "/a/b" },
	{ "/x\x01y", "/x?y" },
	{ "", "" },
};

static struct http_head	head;
static char		buf[HTTP_HEAD_MAX + 4096];

static int	parse(enum http_parser_type, const char *, http_parser *);
static int	verdict(const char *, http_parser *);
static int	limits(void);
static void	facts(void);
static void	rewrites(void);
static void	framing(void);
static void	bodies(void);

static int
parse(enum http_parser_type t, const char *s, http_parser *p)
{
	size_t used;

	http_parser_init(p, t);
	http_head_reset(&head);
	return http_head_parse(p, &head, s, strlen(s), &used);
}

static int
verdict(const char *s, http_parser *p)
{
	int r;

	if ((r = parse(HTTP_REQUEST, s, p)) != HTTP_HEAD_DONE)
		return r;
	return http_check_request(&head, p);
}

/* 431: bytes and lines of a head; the limits themselves pass. */
static int
limits(void)
{
	http_parser p;
	char *s;
	size_t n, used, i;
	int r, k;

	s = malloc(HTTP_HEAD_MAX * 2);
	n = (size_t)snprintf(s, HTTP_HEAD_MAX, "GET / HTTP/1.1\r\n" HOST);
	for (k = 1; k < HTTP_HDR_MAX; k++)
		n += (size_t)snprintf(s + n, 32, "X-%d: v\r\n", k);
	strcpy(s + n, "\r\n");
	isint(verdict(s, &p), 0, "%d header lines pass", HTTP_HDR_MAX);
	strcpy(s + n, "X-Last: v\r\n\r\n");
	isint(verdict(s, &p), 431, "%d header lines: 431", HTTP_HDR_MAX + 1);

	n = (size_t)snprintf(s, 64, "GET / HTTP/1.1\r\n" HOST "X-Big: ");
	memset(s + n, 'v', HTTP_HEAD_MAX);
	strcpy(s + n + HTTP_HEAD_MAX, "\r\n\r\n");
	isint(verdict(s, &p), 431, "a head over %d bytes: 431", HTTP_HEAD_MAX);

	/* the same head a byte at a time: 431 as soon as it is too big */
	http_parser_init(&p, HTTP_REQUEST);
	http_head_reset(&head);
	for (i = 0, r = HTTP_HEAD_MORE; r == HTTP_HEAD_MORE && s[i]; i++)
		r = http_head_parse(&p, &head, s + i, 1, &used);
	isint(r, 431, "a byte at a time, too");
	ok(i <= HTTP_HEAD_MAX + 1, "refused within the limit (%zu bytes)", i);
	free(s);
	return 0;
}

static void
facts(void)
{
	http_parser p;
	char s[256], out[128], name[128];
	size_t i, used;
	int r;

	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		snprintf(s, sizeof(s), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n",
		    hosts[i].host);
		parse(HTTP_REQUEST, s, &p);
		http_request_host(&head, out, sizeof(out));
		snprintf(name, sizeof(name), "Host '%s' routes as '%s'",
		    hosts[i].host, hosts[i].want);
		is(out, hosts[i].want, "%s", name);
	}
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		http_request_path(paths[i].url, strlen(paths[i].url), out,
		    sizeof(out));
		snprintf(name, sizeof(name), "path '%s' recorded as '%s'",
		    paths[i].url, paths[i].want);
		is(out, paths[i].want, "%s", name);
	}
	http_request_path("/abcdef", 7, out, 4);
	is(out, "/ab", "a path is cut to its buffer");

	parse(HTTP_REQUEST, "PUT /e HTTP/1.1\r\n" HOST
	    "Expect:  100-continue \r\n\r\n", &p);
	ok(http_expects_continue(&head, &p), "Expect: 100-continue seen");
	parse(HTTP_REQUEST, "PUT /e HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
	    &p);
	ok(!http_expects_continue(&head, &p),
	    "not from an HTTP/1.0 client");
	parse(HTTP_REQUEST, "GET /old HTTP/1.0\r\n\r\n", &p);
	ok(!http_should_keep_alive(&p), "HTTP/1.0: closed after the response");
	parse(HTTP_REQUEST, "GET /old HTTP/1.0\r\nConnection: keep-alive\r\n"
	    "\r\n", &p);
	ok(http_should_keep_alive(&p), "HTTP/1.0 keep-alive when asked");

	/* a head cut anywhere parses the same */
	snprintf(s, sizeof(s), "POST /p HTTP/1.1\r\n" HOST
	    "Content-Length: 3\r\n\r\nabc");
	http_parser_init(&p, HTTP_REQUEST);
	http_head_reset(&head);
	r = http_head_parse(&p, &head, s, 20, &used);
	isint(r, HTTP_HEAD_MORE, "a head cut in two: more wanted");
	r = http_head_parse(&p, &head, s + 20, strlen(s) - 20, &used);
	isint(r, HTTP_HEAD_DONE, "then complete");
	ok(20 + used <= strlen(s) - 3, "the body is not taken");
	ok(head.nhdr == 2 && p.content_length == 3,
	    "two headers, Content-Length 3");
}

/* X-Forwarded-For as the service gets it, from a trusted proxy or not. */
static const struct {
	const char	*name;
	int		 trusted;
	const char	*hdrs;		/* the request's */
	const char	*want;		/* the value sent */
} xffs[] = {
	{ "untrusted, none: the peer", 0, "", "127.0.0.3" },
	{ "untrusted, forged: replaced", 0,
	  "X-Forwarded-For: 10.9.9.9\r\nX-Forwarded-For: 10.8.8.8\r\n",
	  "127.0.0.3" },
	{ "trusted, none: the client", 1, "", "127.0.0.3" },
	{ "trusted: appended to", 1, "X-Forwarded-For: 192.0.2.1\r\n",
	  "192.0.2.1, 127.0.0.3" },
	{ "trusted, two headers: joined in order, then the client", 1,
	  "X-Forwarded-For: 192.0.2.1, 192.0.2.2\r\n"
	  "X-Forwarded-For:  192.0.2.9 \r\n",
	  "192.0.2.1, 192.0.2.2, 192.0.2.9, 127.0.0.3" },
	{ "trusted, the client already last: not repeated", 1,
	  "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-For: 127.0.0.3\r\n",
	  "192.0.2.1, 127.0.0.3" },
	{ "trusted, the client last of a list: not repeated", 1,
	  "X-Forwarded-For: 192.0.2.1,127.0.0.3\r\n",
	  "192.0.2.1,127.0.0.3" },
	{ "trusted, the client only inside: appended", 1,
	  "X-Forwarded-For: 127.0.0.3, 192.0.2.1\r\n",
	  "127.0.0.3, 192.0.2.1, 127.0.0.3" },
	{ "trusted, an empty one: skipped", 1,
	  "X-Forwarded-For: \r\nX-Forwarded-For: 192.0.2.1\r\n",
	  "192.0.2.1, 127.0.0.3" },
};

static void
xff(void)
{
	struct http_fwd f;
	struct http_out o;
	http_parser p;
	char req[512], want[256];
	const char *v, *e;
	size_t i;
	int r;

	for (i = 0; i < sizeof(xffs) / sizeof(xffs[0]); i++) {
		snprintf(req, sizeof(req), "GET / HTTP/1.1\r\n" HOST "%s\r\n",
		    xffs[i].hdrs);
		r = parse(HTTP_REQUEST, req, &p);
		memset(&f, 0, sizeof(f));
		f.peer = "127.0.0.3";
		f.trusted = xffs[i].trusted;
		f.host = "127.0.0.1:8080";
		f.length = -1;
		o.buf = buf;
		o.size = sizeof(buf) - 1;
		o.len = 0;
		if (r == HTTP_HEAD_DONE)
			r = http_request_head(&o, &head, &p, &f);
		buf[o.len] = '\0';
		v = r == 0 ? strstr(buf, "X-Forwarded-For: ") : NULL;
		e = v != NULL ? strstr(v, "\r\n") : NULL;
		snprintf(want, sizeof(want), "%.*s", e != NULL ?
		    (int)(e - v - 17) : 8, e != NULL ? v + 17 : "(failed)");
		is(want, xffs[i].want, "X-Forwarded-For: %s", xffs[i].name);
		ok(v == NULL || strstr(v + 1, "X-Forwarded-For") == NULL,
		    "X-Forwarded-For: %s: one header", xffs[i].name);
	}
}

static void
rewrites(void)
{
	struct http_fwd f;
	struct http_out o;
	http_parser p;
	size_t i;
	int r;

	for (i = 0; i < sizeof(forwards) / sizeof(forwards[0]); i++) {
		r = parse(HTTP_REQUEST, forwards[i].head, &p);
		f.peer = "127.0.0.1";
		f.trusted = forwards[i].trusted;
		f.host = "127.0.0.1:8080";
		f.strip = forwards[i].strip > 0 ? (size_t)forwards[i].strip : 0;
		f.chunked = (p.flags & F_CHUNKED) != 0;
		f.length = -1;
		if (forwards[i].strip < 0) {	/* read whole: its length */
			f.chunked = 0;
			f.length = -forwards[i].strip;
		}
		f.upgrade = p.upgrade;
		o.buf = buf;
		o.size = sizeof(buf) - 1;
		o.len = 0;
		if (r == HTTP_HEAD_DONE)
			r = http_request_head(&o, &head, &p, &f);
		buf[o.len] = '\0';
		is(r == 0 ? buf : "(failed)", forwards[i].want, "forward: %s",
		    forwards[i].name);
	}
	parse(HTTP_REQUEST, forwards[0].head, &p);
	o.buf = buf;
	o.size = 40;
	o.len = 0;
	isint(http_request_head(&o, &head, &p, &f), -1,
	    "no room: -1, nothing past the buffer");
	ok(o.len <= 40, "written %zu of 40", o.len);
}

static void
framing(void)
{
	struct http_resp rs;
	struct http_out o;
	http_parser p;
	size_t i;
	int r;

	for (i = 0; i < sizeof(responses) / sizeof(responses[0]); i++) {
		r = parse(HTTP_RESPONSE, responses[i].head, &p);
		rs.old = responses[i].old;
		rs.nobody = responses[i].nobody;
		rs.close = responses[i].close;
		rs.chunked = rs.until_close = 0;
		rs.extra = NULL;
		o.buf = buf;
		o.size = sizeof(buf) - 1;
		o.len = 0;
		if (r == HTTP_HEAD_DONE)
			r = http_response_head(&o, &head, &p, &rs);
		buf[o.len] = '\0';
		is(r == 0 ? buf : "(failed)", responses[i].want,
		    "response: %s", responses[i].name);
		ok(rs.chunked == responses[i].chunked &&
		    rs.until_close == responses[i].until_close &&
		    rs.close == responses[i].closes,
		    "framing: chunked %d, until close %d, close %d",
		    rs.chunked, rs.until_close, rs.close);
	}
	o.buf = buf;
	o.size = sizeof(buf) - 1;
	o.len = 0;
	r = http_answer(&o, 503, "service stopped", 3, 1, 0);
	buf[o.len] = '\0';
	is(buf, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain;"
	    " charset=utf-8\r\nContent-Length: 16\r\nRetry-After: 3\r\n"
	    "Connection: close\r\n\r\nservice stopped\n",
	    "the gateway's own answer");
	is(http_reason(431), "Request Header Fields Too Large", "431 reason");
}

/* Bodies go through http_parser itself: chunk sizes are checked there. */
static const struct {
	const char	*name;
	const char	*body;
	int		 want;
} chunks[] = {
	{ "a good chunked body", "5\r\nhello\r\n0\r\n\r\n", HPE_OK },
	{ "a bad chunk size is refused (400)", "zz\r\nhello\r\n",
	  HPE_INVALID_CHUNK_SIZE },
	{ "an overflowing chunk size is refused (400)",
	  "fffffffffffffffff\r\n", HPE_INVALID_CONTENT_LENGTH },
};

static void
bodies(void)
{
	static const http_parser_settings none;
	http_parser p;
	size_t i, used, n;
	int r;

	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		n = (size_t)snprintf(buf, sizeof(buf), "POST /c HTTP/1.1\r\n"
		    HOST "Transfer-Encoding: chunked\r\n\r\n%s",
		    chunks[i].body);
		http_parser_init(&p, HTTP_REQUEST);
		http_head_reset(&head);
		r = http_head_parse(&p, &head, buf, n, &used);
		if (r == HTTP_HEAD_DONE)
			r = http_check_request(&head, &p);
		if (r == 0)
			http_parser_execute(&p, &none, buf + used, n - used);
		isint(r == 0 ? (int)HTTP_PARSER_ERRNO(&p) : -1, chunks[i].want,
		    "%s", chunks[i].name);
	}
}

/* Accept values: 1 = a browser's, 0 = wait, as a script does. */
static const struct {
	const char	*accept;
	int		 want;
} accepts[] = {
	{ "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
	  "image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;"
	  "q=0.7", 1 },					/* Chromium */
	{ "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
	  1 },						/* Firefox */
	{ "text/html", 1 },
	{ "TEXT/HTML ; charset=utf-8", 1 },
	{ "application/json, text/html", 1 },		/* a tie is html */
	{ "text/html;level=1;q=0.5, */*;q=0.4", 1 },
	{ "text/html;q=1.000", 1 },
	{ "text/html;q=0.001", 1 },
	{ " , text/html ,", 1 },			/* empty elements */
	{ "text/html;foo=\"a,b;q=0\"", 1 },		/* quoted */
	{ "text/html;q=0.5;q=0", 1 },			/* then an extension */
	{ "*/*", 0 },					/* curl */
	{ "", 0 },
	{ "application/json", 0 },
	{ "text/*", 0 },				/* not text/html */
	{ "text/html;q=0", 0 },
	{ "text/html;q=0.000, */*", 0 },
	{ "text/html;q=0.5, application/json", 0 },
	{ "text/html;q=0.8, */*;q=0.9", 0 },
	{ "text/htmlx", 0 },
	{ "text/html;q=2", 0 },				/* malformed: wait */
	{ "text/html;q=1.5", 0 },
	{ "text/html;q=0.1234", 0 },
	{ "text/html;q=", 0 },
	{ "text/html;q", 0 },
	{ "text/html q=1", 0 },
	{ "text/", 0 },
	{ "/html", 0 },
	{ "text/html;a=\"open", 0 },
	{ "text/html;q=0.", 0 },			/* 0.: weight 0 */
	{ "text/html;q=1.", 1 },
};

static void
accept_values(void)
{
	size_t i;
	int h, o, r;

	for (i = 0; i < sizeof(accepts) / sizeof(accepts[0]); i++) {
		h = o = -1;
		r = http_accept_scan(accepts[i].accept,
		    strlen(accepts[i].accept), &h, &o);
		isint(r == 0 && h > 0 && h >= o, accepts[i].want,
		    "Accept: %s", accepts[i].accept);
	}
}

/* Method and every Accept field, as one list. */
static void
browsers(void)
{
	static const struct {
		const char	*head;
		int		 want;
	} t[] = {
		{ "GET / HTTP/1.1\r\n" HOST "Accept: text/html\r\n\r\n", 1 },
		{ "HEAD / HTTP/1.1\r\n" HOST "Accept: text/html\r\n\r\n", 1 },
		{ "POST / HTTP/1.1\r\n" HOST "Accept: text/html\r\n"
		  "Content-Length: 0\r\n\r\n", 0 },
		{ "GET / HTTP/1.1\r\n" HOST "\r\n", 0 },
		{ "GET / HTTP/1.1\r\n" HOST "Accept: text/html;q=0.5\r\n"
		  "accept: application/json\r\n\r\n", 0 },
		{ "GET / HTTP/1.1\r\n" HOST "Accept: application/json;q=0.1\r\n"
		  "Accept: text/html\r\n\r\n", 1 },
		{ "GET / HTTP/1.1\r\n" HOST "Accept: text/html\r\n"
		  "Accept: ;;q=x\r\n\r\n", 0 },
	};
	http_parser p;
	size_t i, used;
	int r;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		http_parser_init(&p, HTTP_REQUEST);
		http_head_reset(&head);
		r = http_head_parse(&p, &head, t[i].head, strlen(t[i].head),
		    &used);
		isint(r == HTTP_HEAD_DONE ? http_wants_html(&head, &p) : -1,
		    t[i].want, "browser request %zu", i);
	}
}

int
main(void)
{
	http_parser p;
	size_t i;

	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		isint(verdict(requests[i].head, &p), requests[i].want,
		    "request: %s", requests[i].name);
	limits();
	facts();
	rewrites();
	xff();
	framing();
	bodies();
	accept_values();
	browsers();
	return done();
}
