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
	const char	*peer;		/* appended to X-Forwarded-For */
	const char	*host;		/* Host of a request without one */
	size_t		 strip;		/* bytes of the URL removed (/fn/) */
	int		 chunked;	/* the body is sent chunked */
	int		 upgrade;	/* Upgrade is passed on */
};

/* How a response is framed for the client (http_response_head). */
struct http_resp {
	int		 old;		/* in: an HTTP/1.0 client */
	int		 nobody;	/* in: no body (status or HEAD) */
	int		 close;		/* in/out: close after the response */
	int		 chunked;	/* out: the body is sent chunked */
	int		 until_close;	/* out: the backend's close ends it */
};

/* Building a head; http_parser callbacks call these.  -1 on a limit. */
void	http_head_reset(struct http_head *);
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
 * Strict framing of a complete request head: 0, 400 (Content-Length with
 * Transfer-Encoding, more than one Content-Length or Transfer-Encoding, a
 * coding other than chunked, more than one Host, HTTP/1.1 without Host) or
 * 405 (CONNECT).
 */
int	http_check_request(const struct http_head *, const http_parser *);
/* Host without port, lower case, printable, no trailing dot ("" if none). */
void	http_request_host(const struct http_head *, char *, size_t);
/* The path of a URL without query or fragment, controls as '?'. */
void	http_request_path(const char *, size_t, char *, size_t);
/* Expect: 100-continue from an HTTP/1.1 client. */
int	http_expects_continue(const struct http_head *, const http_parser *);

int	http_out_add(struct http_out *, const void *, size_t);
int	http_out_printf(struct http_out *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* The heads a proxy writes; -1 when out has no room (nothing to use). */
int	http_request_head(struct http_out *, const struct http_head *,
	    const http_parser *, const struct http_fwd *);
int	http_response_head(struct http_out *, const struct http_head *,
	    const http_parser *, struct http_resp *);
int	http_answer(struct http_out *, int, const char *, int, int, int);
const char *http_reason(int);

#endif
