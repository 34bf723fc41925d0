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
 * one that fails them is refused and counted, the others are taken.  A
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
};

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

int
packed_requests(const char *b64, size_t len, struct rec_sink *sink,
    char *err, size_t errlen)
{
	struct reqbatch_pos mark = reqbatch_mark(sink->b);
	struct rec_sink k = *sink;
	struct take t = { &k, err, errlen };
	unsigned char *value;
	long n;
	int r = -1;

	if ((value = malloc(len / 4 * 3 + 1)) == NULL) {
		(void)snprintf(err, errlen, "requests: out of memory");
		return -1;
	}
	if ((n = b64_decode(b64, len, value, len / 4 * 3)) == -1)
		(void)snprintf(err, errlen, "requests: packed: not base64");
	else if (reqbatch_each(value, (size_t)n, take_one, &t, err,
	    errlen) == -1)
		reqbatch_rewind(sink->b, mark);
	else {
		*sink = k;
		r = 0;
	}
	free(value);
	return r;
}

/*
 * The envelope exactly as the gateway writes it; anything else (spaces,
 * keys in another order, an escape in the string) goes to jansson.
 */
int
fast_packed(const char *buf, size_t len, struct rec_sink *sink, char *err,
    size_t errlen)
{
	static const char head[] = REQBATCH_MSG_HEAD;
	static const char tail[] = REQBATCH_MSG_TAIL;
	const size_t hlen = sizeof(head) - 1, tlen = sizeof(tail) - 1;
	size_t blen, i;

	if (len < hlen + tlen || memcmp(buf, head, hlen) != 0 ||
	    memcmp(buf + len - tlen, tail, tlen) != 0)
		return -2;
	blen = len - hlen - tlen;
	for (i = 0; i < blen; i++)
		if (buf[hlen + i] == '"' || buf[hlen + i] == '\\')
			return -2;
	return packed_requests(buf + hlen, blen, sink, err, errlen);
}
