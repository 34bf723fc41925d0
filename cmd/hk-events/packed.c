/*
 * packed.c - request records as the gateway sends them, packed:
 *
 *	{"op":"requests","packed":"<base64 of a batch value>"}
 *
 * the value in the stored form of lib/reqbatch.h.  A record as JSON is
 * about 230 bytes that hk-events must parse; packed, it is about 36, and
 * reading it is unpacking it: a third of the log's cost in the gateway
 * and in hk-events went.  Every record is checked by the same rules as
 * one sent as JSON (record_check(), with its app and service as names);
 * one that fails them is refused and counted, the others are taken.
 * When every record passes unchanged, as the gateway's do, the value's
 * bytes are copied into the batch rather than packed again
 * (reqbatch_append()).  A
 * value that does not unpack (bad base64, a damaged batch) refuses the
 * whole datagram, and nothing of it is taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "events.h"

struct take {
	struct rec_sink	*k;
	char		*err;
	size_t		 errlen;
	const char	*seen[RB_NSTR];	/* as_is(): the strings checked last */
};

static int	decode(const char *, size_t, unsigned char **, size_t *, char *,
		    size_t);
static int	take_value(const unsigned char *, size_t, struct rec_sink *,
		    char *, size_t);

/*
 * A record to copy as it is: one that passes the rules unchanged.  A
 * string the value does not write again keeps its place, so a record
 * whose strings are all where the last checked one's were needs only its
 * numbers checked: most records of a batch repeat the one before but
 * for the path.
 */
static int
as_is(const struct reqbatch_rec *v, uint64_t i, void *arg)
{
	struct take *t = arg;
	struct reqbatch_rec r = *v;
	size_t k;

	if (i > 0 && memcmp(t->seen, v->s, sizeof(t->seen)) == 0)
		return record_check_numbers(v, t->err, t->errlen) == -1;
	if (record_check(&r, 1, t->err, t->errlen) == -1 ||
	    r.len[RB_PATH] != v->len[RB_PATH])
		return 1;
	for (k = 0; k < RB_NSTR; k++)
		t->seen[k] = v->s[k];
	return 0;
}

static int
take_one(const struct reqbatch_rec *v, uint64_t i, void *arg)
{
	struct take *t = arg;
	struct reqbatch_rec r = *v;

	(void)i;
	if (record_check(&r, 1, t->err, t->errlen) == -1)
		t->k->bad++;
	else
		rec_put(t->k, &r);
	return 0;
}

/* The value of the base64 in *value (malloc'd): 0, or -1. */
static int
decode(const char *b64, size_t len, unsigned char **value, size_t *n,
    char *err, size_t errlen)
{
	long m;

	if ((*value = malloc(len / 4 * 3 + 1)) == NULL) {
		(void)snprintf(err, errlen, "requests: out of memory");
		return -1;
	}
	if ((m = b64_decode(b64, len, *value, len / 4 * 3)) == -1) {
		(void)snprintf(err, errlen, "requests: packed: not base64");
		free(*value);
		*value = NULL;
		return -1;
	}
	*n = (size_t)m;
	return 0;
}

/*
 * Whole when every record passes as it is (the gateway's always do);
 * else a record at a time, the ones that fail refused and counted.
 */
static int
take_value(const unsigned char *value, size_t n, struct rec_sink *sink,
    char *err, size_t errlen)
{
	struct reqbatch_pos mark = reqbatch_mark(sink->b);
	struct rec_sink k = *sink;
	struct take t = { &k, err, errlen, { NULL } };
	int r;

	if ((r = reqbatch_append(sink->b, value, n, sink->cap, as_is, &t,
	    err, errlen)) == -1)
		return -1;
	if (r == 1) {
		sink->n += sink->b->pos.n - mark.n;
		return 0;
	}
	if (reqbatch_each(value, n, take_one, &t, err, errlen) == -1) {
		reqbatch_rewind(sink->b, mark);
		return -1;
	}
	*sink = k;
	return 0;
}

int
packed_requests(const char *b64, size_t len, struct rec_sink *sink,
    char *err, size_t errlen)
{
	unsigned char *value;
	size_t n;
	int r;

	if (decode(b64, len, &value, &n, err, errlen) == -1)
		return -1;
	r = take_value(value, n, sink, err, errlen);
	free(value);
	return r;
}

/*
 * The envelope exactly as the gateway writes it; anything else (spaces,
 * keys in another order, an escape in the string) goes to jansson.  The
 * string is searched for a quote or a backslash only when it is not
 * base64: base64 has neither.
 */
int
fast_packed(const char *buf, size_t len, struct rec_sink *sink, char *err,
    size_t errlen)
{
	static const char head[] = REQBATCH_MSG_HEAD;
	static const char tail[] = REQBATCH_MSG_TAIL;
	const size_t hlen = sizeof(head) - 1, tlen = sizeof(tail) - 1;
	unsigned char *value;
	size_t blen, i, n;
	int r;

	if (len < hlen + tlen || memcmp(buf, head, hlen) != 0 ||
	    memcmp(buf + len - tlen, tail, tlen) != 0)
		return -2;
	blen = len - hlen - tlen;
	if (decode(buf + hlen, blen, &value, &n, err, errlen) == -1) {
		for (i = 0; i < blen; i++)
			if (buf[hlen + i] == '"' || buf[hlen + i] == '\\')
				return -2;
		return -1;
	}
	r = take_value(value, n, sink, err, errlen);
	free(value);
	return r;
}
