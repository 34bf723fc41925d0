/*
 * hget.h - one GET of a path, and its answer read to its end: hk-scale's
 * readiness probe (probe.c there) and hk-idle's idle_check (check.c).
 * The caller owns the connection, its loop and its deadlines; hget sends
 * the request and reads what comes back, so that both ask the same way
 * and neither leaves the server a reset by closing early.
 */
#ifndef HK_HGET_H
#define HK_HGET_H

#include <stddef.h>

#include <http_parser.h>

/* The request: a path of at most 1024 bytes (hk.toml(5)) and a host. */
#define HGET_REQ_MAX	2048

struct hget {
	http_parser	 parser;
	int		 status;	/* 0 until the head is in */
	int		 done;		/* read to its end */
	size_t		 len;		/* bytes read */
	size_t		 max;		/* read no more than this */
	void		(*on_head)(void *);	/* the head is in: the
						   caller arms the rest's
						   deadline */
	void		*arg;
};

enum hget_step {
	HGET_MORE,	/* nothing decided: read again when readable */
	HGET_END,	/* the answer's end is read */
	HGET_FAILED,	/* *why says what: an error, a close before the end */
	HGET_CUT,	/* max bytes read before its end */
};

void		hget_init(struct hget *, size_t, void (*)(void *), void *);
int		hget_send(int, const char *, const char *, const char *);
enum hget_step	hget_read(struct hget *, int, const char **);

#endif
