/*
 * http.h - HTTP/1.1 heads, pure functions over bytes (no sockets, no
 * clock): a head kept within HTTP_HEAD_MAX bytes and HTTP_HDR_MAX header
 * lines as http_parser reads it, the checks for ambiguous framing, and the
 * heads a proxy writes (the request as the backend sees it, the response
 * as the client sees it, a short answer of its own), with the hop-by-hop
 * headers removed.
 */
#ifndef HK_HTTP_H
#define HK_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

#define HTTP_HEAD_MAX	16384	/* bytes of a head: 431 beyond */
#define HTTP_HDR_MAX	128	/* header lines of a head: 431 beyond */

/* Results of http_head_parse(); the others are status codes. */
#define HTTP_HEAD_DONE	0
#define HTTP_HEAD_MORE	1

struct http_hdr {
	uint16_t	name_off, name_len;
	uint16_t	val_off, val_len;
};

/* A parsed head: every byte of it kept once, within HTTP_HEAD_MAX. */
struct http_head {
	char		buf[HTTP_HEAD_MAX];
	size_t		len;
	struct http_hdr	hdr[HTTP_HDR_MAX];
	int		nhdr;
	int		in_value;
	int		overflow;	/* over a limit: 431 */
	int		complete;	/* later fields (trailers) dropped */
	uint16_t	url_off, url_len;	/* request */
	uint16_t	st_off, st_len;		/* response reason */
	size_t		raw;		/* bytes read (http_head_parse) */
};

/* Bytes written to buf[len..size); nothing is written past size. */
struct http_out {
	char		*buf;
	size_t		 size;
	size_t		 len;
};

/* How a request is forwarded (http_request_head). */
struct http_fwd {
	const char	*peer;		/* the client: X-Forwarded-For */
	int		 trusted;	/* the peer is a trusted proxy: its
					   X-Forwarded-For is appended to, its
					   other forwarding headers kept; else
					   all are replaced or removed */
	const char	*host;		/* Host of a request without one */
	size_t		 strip;		/* bytes of the URL removed (/fn/) */
	int		 chunked;	/* the body is sent chunked */
	int64_t		 length;	/* >= 0: sent with this Content-Length
					   (the client's framing removed) */
	int		 upgrade;	/* Upgrade is passed on */
};

/* How a response is framed for the client (http_response_head). */
struct http_resp {
	int		 old;		/* in: an HTTP/1.0 client */
	int		 nobody;	/* in: no body (status or HEAD) */
	int		 close;		/* in/out: close after the response */
	int		 chunked;	/* out: the body is sent chunked */
	int		 until_close;	/* out: the backend's close ends it */
	const char	*extra;		/* in: a field line to add, or NULL */
};

/*
 * Building a head; http_parser callbacks call these.  -1 on a limit.
 * Once http_head_done() marks the head complete, fields (a chunked
 * body's trailer section) are dropped: never merged into the head.
 */
void	http_head_reset(struct http_head *);
void	http_head_done(struct http_head *);
int	http_head_url(struct http_head *, const char *, size_t);
int	http_head_status(struct http_head *, const char *, size_t);
int	http_head_field(struct http_head *, const char *, size_t);
int	http_head_value(struct http_head *, const char *, size_t);

/*
 * Feeds a head to p (http_parser_init'ed, its data pointer is taken) in
 * one or more calls.  HTTP_HEAD_DONE with *used bytes taken (the parser
 * may leave the head's last byte: feed it the rest), HTTP_HEAD_MORE
 * (all taken), 431 (over a limit) or 400 (malformed).
 */
int	http_head_parse(http_parser *, struct http_head *, const char *,
	    size_t, size_t *);
/* The status of a head the parser refused after raw bytes: 431 or 400. */
int	http_head_error(const struct http_head *, size_t, int);

/* The first header of that name, trimmed: 0 and its value, or -1. */
int	http_head_find(const struct http_head *, const char *, const char **,
	    size_t *);
int	http_head_count(const struct http_head *, const char *);

/*
 * Strict framing of a complete request head, what the lexer cannot see
 * line by line: 0, 400 (Content-Length with Transfer-Encoding, more than
 * one Content-Length or Transfer-Encoding, a coding other than chunked,
 * Transfer-Encoding in HTTP/1.0, more than one Host, a Host or an absolute
 * target's authority that is not host[:port], a target neither
 * origin-form, absolute http(s) nor "*" of OPTIONS, HTTP/1.1 without
 * Host, Connection naming more than 16 fields, or Host or Content-Length)
 * or 405 (CONNECT).
 */
int	http_check_request(const struct http_head *, const http_parser *);
/*
 * An absolute-form target, http:// or https:// (RFC 9112 3.2.2): 1 with
 * its authority and the offset of what follows it (path, query), else 0.
 * The authority is then the request's host, and the request is forwarded
 * in origin-form with it as Host.
 */
int	http_target_absolute(const char *, size_t, const char **, size_t *,
	    size_t *);
/* Host (or an absolute target's authority) without port, lower case,
 * printable, no trailing dot ("" if none). */
void	http_request_host(const struct http_head *, char *, size_t);
/* The path of a URL without query or fragment, controls as '?'. */
void	http_request_path(const char *, size_t, char *, size_t);
/* Expect: 100-continue from an HTTP/1.1 client. */
int	http_expects_continue(const struct http_head *, const http_parser *);
/*
 * A browser's GET or HEAD: its Accept fields list text/html with a weight
 * above 0 and at least that of any other range (lib/http_accept.c).
 * http_accept_scan() takes one field value into the best weights so far
 * (in 1/1000, -1 = none; -1 returned when malformed).
 */
int	http_wants_html(const struct http_head *, const http_parser *);
int	http_accept_scan(const char *, size_t, int *, int *);

/*
 * Strict framing (lib/http_lex.c): the one place that decides whether a
 * client's request bytes are well-formed.  A lexer follows a connection's
 * bytes ahead of http_parser, which is lenient where RFC 9112 forbids:
 * request line "METHOD SP target SP HTTP/1.d" (another major version:
 * 505), field names of tchar directly followed by ':', values without
 * control characters, no obs-fold, no CR but in CRLF; chunk lines with
 * strict sizes and extensions, CRLF after every chunk's data.
 */
#define HTTP_LEX_NONE		0	/* framing of a body (http_lex_body) */
#define HTTP_LEX_LENGTH		1
#define HTTP_LEX_CHUNKED	2
#define HTTP_LEX_STOP		3	/* an upgrade: no more HTTP */

struct http_lex {
	uint8_t		state;
	uint8_t		n;		/* bytes of "HTTP/d.d" matched */
	uint8_t		major;
	uint8_t		trailer;	/* in a trailer section */
	uint64_t	left;		/* of a Content-Length body or chunk */
	uint64_t	size;		/* chunk-size being read */
	uint64_t	declared;	/* chunk sizes of this body so far */
	uint64_t	limit;		/* declared beyond it: 413 */
	uint64_t	pos;		/* bytes taken since http_lex_init */
	uint64_t	msg_end;	/* pos where the last message ended */
};

void	http_lex_init(struct http_lex *);
/*
 * 0 with *used bytes taken, or 400, 413 or 505.  It stops at a head's end
 * (until http_lex_body()) and at a message's end (until http_lex_next()),
 * so that a next request is judged only once the current one is done.
 */
int	http_lex(struct http_lex *, const char *, size_t, size_t *);
int	http_lex_head_done(const struct http_lex *);
/* Nothing of a next request seen yet: at most empty lines. */
int	http_lex_idle(const struct http_lex *);
/* The next request may start (after a message's end). */
void	http_lex_next(struct http_lex *);
/* n bytes of line ends between requests taken past the lexer. */
void	http_lex_skip(struct http_lex *, size_t);
/* After a head: how its body is framed; chunk sizes over limit are 413. */
void	http_lex_body(struct http_lex *, int, uint64_t, uint64_t);

int	http_out_add(struct http_out *, const void *, size_t);
int	http_out_printf(struct http_out *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* The heads a proxy writes; -1 when out has no room (nothing to use). */
int	http_request_head(struct http_out *, const struct http_head *,
	    const http_parser *, const struct http_fwd *);
int	http_response_head(struct http_out *, const struct http_head *,
	    const http_parser *, struct http_resp *);
int	http_answer(struct http_out *, int, const char *, int, int, int);
/* The same with an HTML body of its own, never cached (a waiting page). */
int	http_answer_html(struct http_out *, int, const char *, size_t, int,
	    int, int);
const char *http_reason(int);

#endif
