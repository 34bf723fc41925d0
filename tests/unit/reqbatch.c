/*
 * reqbatch.c - lib/reqbatch.c: records packed into a batch value come
 * back field for field, ids counted from first_id; strings at their
 * limits and numbers at theirs survive; a damaged value (every proper
 * prefix, trailing bytes, a NUL or overlong string, a status out of
 * range, a varint over 64 bits) is an error, never a wrong record; and a
 * typical batch is small.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request_same.h"
#include "reqbatch.h"
#include "tap.h"

#define NVARIED		48
#define NTYPICAL	1000
#define FIRST_ID	1000

/* The records fn was given; stop_at > 0 stops at that many with 7. */
struct got {
	struct store_request	*v;
	size_t			 n, cap;
	size_t			 stop_at;
};

static int	collect(const struct store_request *, void *);
static void	fill(char *, int, size_t);
static uint64_t	rnd(void);
static int64_t	rnd_int(void);
static void	varied(struct store_request *, size_t);
static size_t	put_uint(unsigned char *, uint64_t);
static size_t	one_string(unsigned char *, int, size_t);
static int	decode(const unsigned char *, size_t, struct got *, char *,
		    size_t);
static void	t_round_trip(void);
static void	t_repeat(void);
static void	t_empty(void);
static void	t_unterminated(void);
static void	t_prefixes(void);
static void	t_damaged(void);
static void	t_limits(void);
static void	t_varint(void);
static void	t_version1(void);
static void	t_stop(void);
static void	t_compact(void);
static void	rec_of(const struct store_request *, struct reqbatch_rec *);
static int	same_as_encoded(struct reqbatch_build *,
		    const struct store_request *, size_t);
static void	t_build(void);
static void	t_build_refuses(void);
static int	take_all(const struct reqbatch_rec *, uint64_t, void *);
static int	refuse_at(const struct reqbatch_rec *, uint64_t, void *);
static int	append_range(struct reqbatch_build *,
		    const struct store_request *, size_t, size_t, size_t);
static void	t_append(void);
static void	t_append_declines(void);

static uint64_t	rnd_state = 0x9e3779b97f4a7c15ULL;

static int
collect(const struct store_request *r, void *arg)
{
	struct got *g = arg;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		if ((g->v = realloc(g->v, g->cap * sizeof(*g->v))) == NULL)
			exit(1);
	}
	g->v[g->n++] = *r;
	if (g->stop_at != 0 && g->n == g->stop_at)
		return 7;
	return 0;
}


/* len bytes of c, terminated: the field must hold len + 1. */
static void
fill(char *field, int c, size_t len)
{
	memset(field, c, len);
	field[len] = '\0';
}

/* xorshift64: the same "random" records on every run. */
static uint64_t
rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Mostly small numbers of either sign, sometimes the extremes. */
static int64_t
rnd_int(void)
{
	switch (rnd() % 6) {
	case 0:
		return INT64_MIN;
	case 1:
		return INT64_MAX;
	case 2:
		return (int64_t)rnd();
	case 3:
		return -(int64_t)(rnd() % 1000);
	default:
		return (int64_t)(rnd() % 100000);
	}
}

/*
 * n >= 7.  Hand-picked records first (empty, every string at its limit, the same
 * again, back to empty, a string changing back, a prefix of the one
 * before), then random picks from small pools so that strings repeat.
 */
static void
varied(struct store_request *v, size_t n)
{
	static const char *const apps[] = { "", "fn", "f", "http-functions" };
	static const char *const paths[] = { "/", "/a", "/a/b", "" };
	static const char *const outcomes[] = { "ok", "timeout", "" };
	size_t i;

	memset(v, 0, n * sizeof(*v));
	/* v[0]: all empty, all zero */
	fill(v[1].app, 'a', STORE_NAME_MAX);
	fill(v[1].service, 's', STORE_NAME_MAX);
	fill(v[1].method, 'M', STORE_METHOD_MAX);
	fill(v[1].host, 'h', STORE_HOST_MAX);
	fill(v[1].path, 'p', STORE_PATH_MAX);
	fill(v[1].outcome, 'o', STORE_OUTCOME_MAX);
	fill(v[1].client, 'c', STORE_CLIENT_MAX);
	v[1].at = INT64_MAX;
	v[1].status = 999;
	v[1].duration_us = INT64_MIN;
	v[1].wait_us = -1;
	v[1].wake_id = INT64_MIN;
	v[1].bytes_in = INT64_MAX;
	v[1].bytes_out = INT64_MIN;
	v[2] = v[1];
	v[2].at = INT64_MIN;
	v[2].duration_us = INT64_MAX;
	v[2].bytes_in = INT64_MIN;
	v[2].bytes_out = INT64_MAX;
	v[3].at = -5;
	strcpy(v[4].app, "fn");
	strcpy(v[4].method, "GET");
	strcpy(v[4].path, "/abc");
	v[4].at = 1700000000000;
	v[5] = v[4];
	strcpy(v[5].app, "other");
	strcpy(v[5].path, "/ab");
	v[5].at = 1699999999999;
	v[6] = v[5];
	strcpy(v[6].app, "fn");
	strcpy(v[6].path, "/abc");
	v[6].at = 1700000000001;
	for (i = 7; i < n; i++) {
		v[i].at = rnd_int();
		strcpy(v[i].app, apps[rnd() % 4]);
		strcpy(v[i].service, apps[rnd() % 4]);
		strcpy(v[i].method, rnd() % 2 ? "GET" : "POST");
		strcpy(v[i].host, rnd() % 2 ? "x.localhost" : "");
		strcpy(v[i].path, paths[rnd() % 4]);
		strcpy(v[i].outcome, outcomes[rnd() % 3]);
		v[i].status = (int)(rnd() % 1000);
		v[i].duration_us = rnd_int();
		v[i].wait_us = rnd_int();
		v[i].wake_id = rnd_int();
		v[i].bytes_in = rnd_int();
		v[i].bytes_out = rnd_int();
	}
}

static size_t
put_uint(unsigned char *p, uint64_t u)
{
	size_t n = 0;

	while (u >= 0x80) {
		p[n++] = (unsigned char)(u | 0x80);
		u >>= 7;
	}
	p[n++] = (unsigned char)u;
	return n;
}

/*
 * A value of one record, written by hand: string field f of len bytes
 * 'x', every other string empty, every number 0.
 */
static size_t
one_string(unsigned char *buf, int f, size_t len)
{
	size_t n = 0;
	int i;

	buf[n++] = REQBATCH_VERSION;
	buf[n++] = 1;			/* records */
	buf[n++] = 0;			/* at */
	for (i = 0; i < RB_NSTR; i++) {
		if (i != f) {
			buf[n++] = 0;
			continue;
		}
		n += put_uint(buf + n, len + 1);
		memset(buf + n, 'x', len);
		n += len;
	}
	memset(buf + n, 0, 6);		/* the numbers */
	return n + 6;
}

/* Decodes a copy of exactly len bytes, so that ASan sees an overread. */
static int
decode(const unsigned char *buf, size_t len, struct got *g, char *err,
    size_t errlen)
{
	unsigned char *copy;
	int r;

	if ((copy = malloc(len ? len : 1)) == NULL)
		exit(1);
	memcpy(copy, buf, len);
	g->n = 0;
	err[0] = '\0';
	r = reqbatch_decode(copy, len, FIRST_ID, collect, g, err, errlen);
	free(copy);
	return r;
}

static void
t_round_trip(void)
{
	struct store_request *v;
	struct got g = { NULL, 0, 0, 0 };
	struct reqbatch b;
	char err[256];
	int64_t lo, hi;
	size_t i, good = 0;

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL)
		exit(1);
	varied(v, NVARIED);
	ok(reqbatch_encode(v, NVARIED, &b, err, sizeof(err)) == 0,
	    "%d varied records encode", NVARIED);
	isint(reqbatch_count(b.buf, b.len), NVARIED, "reqbatch_count");
	isint(decode(b.buf, b.len, &g, err, sizeof(err)), 0, "and decode");
	isint(g.n, NVARIED, "every record passed to fn");
	lo = hi = v[0].at;
	for (i = 0; i < NVARIED && i < g.n; i++) {
		v[i].id = FIRST_ID + (int64_t)i;
		if (request_same(&v[i], &g.v[i], 1))
			good++;
		else
			diag("record %zu differs", i);
		lo = v[i].at < lo ? v[i].at : lo;
		hi = v[i].at > hi ? v[i].at : hi;
	}
	isint(good, NVARIED, "each field for field, id first_id + index");
	ok(b.min_at == lo && b.max_at == hi && lo == INT64_MIN &&
	    hi == INT64_MAX, "min_at and max_at of out of order at");
	free(b.buf);
	free(g.v);
	free(v);
}

/* A record as its predecessor costs a byte a string, whatever its size. */
static void
t_repeat(void)
{
	struct store_request *v;
	struct reqbatch one, two, three;
	char err[256];

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL)
		exit(1);
	varied(v, NVARIED);
	v[0] = v[1];
	v[2] = v[1];
	ok(reqbatch_encode(v, 1, &one, err, sizeof(err)) == 0 &&
	    reqbatch_encode(v, 2, &two, err, sizeof(err)) == 0 &&
	    reqbatch_encode(v, 3, &three, err, sizeof(err)) == 0,
	    "records of strings at their limits encode");
	ok(one.len > STORE_PATH_MAX && two.len - one.len < 64 &&
	    three.len - two.len == two.len - one.len,
	    "a repeated record takes %zu bytes, the first %zu",
	    two.len - one.len, one.len);
	free(one.buf);
	free(two.buf);
	free(three.buf);
	free(v);
}

static void
t_empty(void)
{
	struct got g = { NULL, 0, 0, 0 };
	struct reqbatch b;
	char err[256];

	ok(reqbatch_encode(NULL, 0, &b, err, sizeof(err)) == 0 &&
	    b.len == 2 && b.buf[0] == REQBATCH_VERSION && b.buf[1] == 0 &&
	    b.min_at == 0 && b.max_at == 0,
	    "no records: the version and a count of 0");
	isint(reqbatch_count(b.buf, b.len), 0, "count 0");
	ok(decode(b.buf, b.len, &g, err, sizeof(err)) == 0 && g.n == 0,
	    "decodes to no records");
	free(b.buf);
	free(g.v);
}

/* A field filled to its last byte has no terminator: refused, named. */
static void
t_unterminated(void)
{
	static const char *const names[] = { "app", "service", "method",
	    "host", "path", "outcome" };
	struct store_request v[2];
	struct reqbatch b;
	char err[256], want[16];
	int f, r;

	for (f = 0; f < 6; f++) {
		memset(v, 0, sizeof(v));
		switch (f) {
		case 0:
			memset(v[1].app, 'a', sizeof(v[1].app));
			break;
		case 1:
			memset(v[1].service, 'a', sizeof(v[1].service));
			break;
		case 2:
			memset(v[1].method, 'a', sizeof(v[1].method));
			break;
		case 3:
			memset(v[1].host, 'a', sizeof(v[1].host));
			break;
		case 4:
			memset(v[1].path, 'a', sizeof(v[1].path));
			break;
		case 5:
			memset(v[1].outcome, 'a', sizeof(v[1].outcome));
			break;
		}
		err[0] = '\0';
		r = reqbatch_encode(v, 2, &b, err, sizeof(err));
		(void)snprintf(want, sizeof(want), "%s: ", names[f]);
		ok(r == -1 && b.buf == NULL && strstr(err, want) != NULL,
		    "%s unterminated: refused: %s", names[f], err);
	}
}

/* The count is in the header, so no proper prefix is a whole value. */
static void
t_prefixes(void)
{
	struct store_request *v;
	struct got g = { NULL, 0, 0, 0 };
	struct reqbatch b;
	char err[256];
	size_t k, bad = 0, silent = 0;

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL)
		exit(1);
	varied(v, NVARIED);
	if (reqbatch_encode(v, NVARIED, &b, err, sizeof(err)) == -1)
		exit(1);
	for (k = 0; k < b.len; k++) {
		if (decode(b.buf, k, &g, err, sizeof(err)) != -1) {
			if (bad++ == 0)
				diag("a prefix of %zu bytes decodes", k);
		} else if (err[0] == '\0')
			silent++;
	}
	ok(bad == 0 && silent == 0,
	    "all %zu proper prefixes refused with a reason", b.len);
	free(b.buf);
	free(g.v);
	free(v);
}

static void
t_damaged(void)
{
	struct store_request v[2];
	struct got g = { NULL, 0, 0, 0 };
	struct reqbatch b;
	unsigned char *buf, *p;
	char err[256];

	memset(v, 0, sizeof(v));
	strcpy(v[0].app, "abc");
	v[1].at = 9;
	if (reqbatch_encode(v, 2, &b, err, sizeof(err)) == -1 ||
	    (buf = malloc(b.len + 1)) == NULL)
		exit(1);

	memcpy(buf, b.buf, b.len);
	buf[0] = REQBATCH_VERSION + 1;
	ok(decode(buf, b.len, &g, err, sizeof(err)) == -1 && g.n == 0 &&
	    strstr(err, "format") != NULL, "version 3 refused: %s", err);
	isint(reqbatch_count(buf, b.len), -1, "version 3 has no count");
	buf[0] = 0;
	ok(decode(buf, b.len, &g, err, sizeof(err)) == -1,
	    "version 0 refused");
	ok(reqbatch_decode(NULL, 0, 1, collect, &g, err, sizeof(err)) == -1 &&
	    reqbatch_count(NULL, 0) == -1, "no value refused");

	memcpy(buf, b.buf, b.len);
	buf[b.len] = 0;
	ok(decode(buf, b.len + 1, &g, err, sizeof(err)) == -1 &&
	    strstr(err, "after") != NULL && g.n == 2,
	    "a trailing byte refused, after the records: %s", err);

	memcpy(buf, b.buf, b.len);
	p = memmem(buf, b.len, "abc", 3);
	p[1] = '\0';
	ok(decode(buf, b.len, &g, err, sizeof(err)) == -1 &&
	    strstr(err, "app") != NULL && g.n == 0,
	    "a NUL in a string refused: %s", err);

	buf[0] = REQBATCH_VERSION;
	buf[1] = 100;
	ok(reqbatch_count(buf, 2) == -1, "a count over the length refused");

	free(buf);
	free(b.buf);
	free(g.v);
}

/* Each string at its limit decodes; a byte more does not. */
static void
t_limits(void)
{
	static const size_t max[] = { STORE_NAME_MAX, STORE_NAME_MAX,
	    STORE_METHOD_MAX, STORE_HOST_MAX, STORE_PATH_MAX,
	    STORE_OUTCOME_MAX, STORE_CLIENT_MAX };
	static const char *const names[] = { "app", "service", "method",
	    "host", "path", "outcome", "client" };
	struct store_request v[2];
	struct got g = { NULL, 0, 0, 0 };
	struct reqbatch b;
	unsigned char buf[STORE_PATH_MAX + 64];
	char err[256];
	size_t n;
	int f, at, over;

	for (f = 0; f < RB_NSTR; f++) {
		n = one_string(buf, f, max[f]);
		at = decode(buf, n, &g, err, sizeof(err)) == 0 && g.n == 1;
		n = one_string(buf, f, max[f] + 1);
		over = decode(buf, n, &g, err, sizeof(err)) == -1 &&
		    g.n == 0 && strstr(err, names[f]) != NULL;
		ok(at && over, "%s: %zu bytes decode, %zu refused: %s",
		    names[f], max[f], max[f] + 1, err);
	}

	/*
	 * The encoder refuses a status out of 0..999, and so does the
	 * decoder, in a value made by hand: one record of zeros but status
	 * 999 is 02 01, at 00, seven strings 00, status ce 0f (zigzag 1998),
	 * five numbers 00; 1000 is d0 0f.
	 */
	memset(v, 0, sizeof(v));
	v[0].status = 999;
	v[1].status = 1000;
	ok(reqbatch_encode(v, 2, &b, err, sizeof(err)) == -1 &&
	    strstr(err, "request 1: status 1000") != NULL,
	    "encode refuses status 1000: %s", err);
	v[1].status = -1;
	ok(reqbatch_encode(v, 2, &b, err, sizeof(err)) == -1 &&
	    strstr(err, "status -1") != NULL, "... and -1: %s", err);
	if (ok(reqbatch_encode(v, 1, &b, err, sizeof(err)) == 0 &&
	    b.len == 17 && b.buf[10] == 0xce && b.buf[11] == 0x0f,
	    "status 999 encodes as expected")) {
		ok(decode(b.buf, b.len, &g, err, sizeof(err)) == 0 &&
		    g.n == 1 && g.v[0].status == 999, "... and decodes");
		b.buf[10] = 0xd0;
		ok(decode(b.buf, b.len, &g, err, sizeof(err)) == -1 &&
		    g.n == 0 && strstr(err, "status 1000") != NULL,
		    "decode refuses status 1000: %s", err);
	}
	free(b.buf);
	free(g.v);
}

/*
 * A value of version 1, before the client was recorded, still decodes:
 * six strings, the client empty.  Made by hand: two records, the second
 * repeating the first's strings.
 */
static void
t_version1(void)
{
	static const unsigned char v1[] = { 1, 2,
	    0x14, 2, 'a', 2, 's', 4, 'G', 'E', 'T', 1, 2, '/', 3, 'o', 'k',
	    0x92, 0x03, 0, 0, 0, 0, 0,
	    0x02, 0, 0, 0, 0, 0, 0,
	    0x92, 0x03, 0, 0, 0, 0, 0 };
	struct got g = { NULL, 0, 0, 0 };
	char err[256];

	ok(decode(v1, sizeof(v1), &g, err, sizeof(err)) == 0 && g.n == 2 &&
	    strcmp(g.v[1].method, "GET") == 0 && g.v[1].at == 11 &&
	    strcmp(g.v[1].outcome, "ok") == 0 && g.v[0].status == 201 &&
	    g.v[0].client[0] == '\0' && g.v[1].client[0] == '\0',
	    "a version 1 value decodes, with no client: %s", err);
	isint(reqbatch_count(v1, sizeof(v1)), 2, "... and counts");
	free(g.v);
}

/* at as a varint of 10 bytes: 64 bits decode, 65 or 11 bytes do not. */
static void
t_varint(void)
{
	static const unsigned char max64[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0x01 };
	static const unsigned char bit65[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0x02 };
	static const unsigned char long0[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
	    0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	struct got g = { NULL, 0, 0, 0 };
	unsigned char buf[64];
	char err[256];
	int r;

	/* version, 1 record, at, 7 empty strings, 6 zero numbers */
	buf[0] = REQBATCH_VERSION;
	buf[1] = 1;
	memcpy(buf + 2, max64, sizeof(max64));
	memset(buf + 2 + sizeof(max64), 0, 13);
	r = decode(buf, 2 + sizeof(max64) + 13, &g, err, sizeof(err));
	ok(r == 0 && g.n == 1 && g.v[0].at == INT64_MIN,
	    "a 64-bit varint decodes (at %jd)",
	    g.n ? (intmax_t)g.v[0].at : 0);
	memcpy(buf + 2, bit65, sizeof(bit65));
	ok(decode(buf, 2 + sizeof(bit65) + 13, &g, err, sizeof(err)) == -1 &&
	    strstr(err, "at: ") != NULL, "a 65-bit varint refused: %s", err);
	memcpy(buf + 2, long0, sizeof(long0));
	memset(buf + 2 + sizeof(long0), 0, 13);
	ok(decode(buf, 2 + sizeof(long0) + 13, &g, err, sizeof(err)) == -1,
	    "an 11-byte varint refused, though its value is 0");
	free(g.v);
}

static void
t_stop(void)
{
	struct store_request v[NVARIED];
	struct got g = { NULL, 0, 0, 3 };
	struct reqbatch b;
	char err[256];

	varied(v, NVARIED);
	if (reqbatch_encode(v, NVARIED, &b, err, sizeof(err)) == -1)
		exit(1);
	ok(decode(b.buf, b.len, &g, err, sizeof(err)) == 7 && g.n == 3,
	    "fn's 7 at the third record stops decoding and is returned");
	free(b.buf);
	free(g.v);
}

/* A gateway's batch: strings repeat, at steps by 1, numbers are small. */
static void
t_compact(void)
{
	struct store_request *v;
	struct got g = { NULL, 0, 0, 0 };
	struct reqbatch b;
	char err[256];
	size_t i, good = 0;
	int64_t now = 1735689600000;

	if ((v = calloc(NTYPICAL, sizeof(*v))) == NULL)
		exit(1);
	for (i = 0; i < NTYPICAL; i++) {
		v[i].id = FIRST_ID + (int64_t)i;
		v[i].at = now + (int64_t)i;
		strcpy(v[i].app, "bench");
		strcpy(v[i].service, "api");
		strcpy(v[i].method, "GET");
		strcpy(v[i].host, "api.bench.localhost");
		(void)snprintf(v[i].path, sizeof(v[i].path), "/items/%zu",
		    i % 1000);
		v[i].status = 200;
		v[i].duration_us = 800 + (int64_t)(i * 7919 % 100);
		v[i].bytes_in = 120;
		v[i].bytes_out = 512;
		strcpy(v[i].outcome, "ok");
	}
	if (reqbatch_encode(v, NTYPICAL, &b, err, sizeof(err)) == -1)
		exit(1);
	diag("%d typical records: %zu bytes, %.1f a record", NTYPICAL, b.len,
	    (double)b.len / NTYPICAL);
	ok(b.len < 40 * NTYPICAL, "under 40 bytes a record");
	ok(b.min_at == now && b.max_at == now + NTYPICAL - 1,
	    "min_at and max_at");
	if (decode(b.buf, b.len, &g, err, sizeof(err)) == 0)
		for (i = 0; i < g.n && i < NTYPICAL; i++)
			good += request_same(&v[i], &g.v[i], 1);
	isint(good, NTYPICAL, "they decode the same");
	free(b.buf);
	free(g.v);
	free(v);
}

/* A record of the store's form as one to pack (terminated, in tests). */
static void
rec_of(const struct store_request *q, struct reqbatch_rec *r)
{
	char err[96];

	if (reqbatch_rec_of(q, r, err, sizeof(err)) == -1) {
		diag("%s", err);
		exit(1);
	}
}

/* The builder's value is, byte for byte, reqbatch_encode() of v[0..n). */
static int
same_as_encoded(struct reqbatch_build *b, const struct store_request *v,
    size_t n)
{
	struct reqbatch got, want;
	char err[256];
	int same;

	reqbatch_view(b, &got);
	if (reqbatch_encode(v, n, &want, err, sizeof(err)) == -1)
		return 0;
	same = got.len == want.len && got.n == n && want.n == n &&
	    got.min_at == want.min_at && got.max_at == want.max_at &&
	    memcmp(got.buf, want.buf, got.len) == 0;
	free(want.buf);
	return same;
}

/*
 * Built a record at a time, as hk-events does: the value after each one
 * is the batch of those so far; a rewind to a mark forgets what came
 * after it; a cleared builder starts a new batch; a buffer that grows
 * keeps what it holds.
 */
static void
t_build(void)
{
	struct store_request *v, *big;
	struct reqbatch_build b;
	struct reqbatch_pos mark;
	struct reqbatch_rec r;
	char err[256];
	size_t i, good = 0;

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL ||
	    (big = calloc(80, sizeof(*big))) == NULL)
		exit(1);
	varied(v, NVARIED);
	reqbatch_build_init(&b);
	ok(same_as_encoded(&b, v, 0), "an empty builder: a value of none");
	for (i = 0; i < NVARIED; i++) {
		rec_of(&v[i], &r);
		if (reqbatch_add(&b, &r, err, sizeof(err)) == 0 &&
		    same_as_encoded(&b, v, i + 1))
			good++;
		else
			diag("record %zu: %s", i, err);
	}
	isint(good, NVARIED, "after each record, the value of those so far");
	reqbatch_build_clear(&b);
	for (i = 0; i < 10; i++) {
		rec_of(&v[i], &r);
		(void)reqbatch_add(&b, &r, err, sizeof(err));
	}
	mark = reqbatch_mark(&b);
	for (i = 20; i < 30; i++) {
		rec_of(&v[i], &r);
		(void)reqbatch_add(&b, &r, err, sizeof(err));
	}
	reqbatch_rewind(&b, mark);
	ok(same_as_encoded(&b, v, 10), "cleared, then rewound to a mark");
	for (i = 10; i < NVARIED; i++) {
		rec_of(&v[i], &r);
		(void)reqbatch_add(&b, &r, err, sizeof(err));
	}
	ok(same_as_encoded(&b, v, NVARIED),
	    "records after the mark pack as if none had been forgotten");
	reqbatch_build_free(&b);
	/* Strings at their limits, every other record: about 50 KiB. */
	for (i = 0; i < 80; i++)
		big[i] = v[i % 2 ? 1 : 3];
	reqbatch_build_init(&b);
	for (i = 0, good = 0; i < 80; i++) {
		rec_of(&big[i], &r);
		good += reqbatch_add(&b, &r, err, sizeof(err)) == 0;
	}
	ok(good == 80 && b.cap > 40000 && same_as_encoded(&b, big, 80),
	    "a buffer grown to %zu bytes keeps every record", b.cap);
	reqbatch_build_free(&b);
	free(big);
	free(v);
}

/* What the decoder would refuse is refused, and nothing is appended. */
static void
t_build_refuses(void)
{
	struct store_request *v;
	struct reqbatch_build b;
	struct reqbatch_rec r;
	char err[256];

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL)
		exit(1);
	varied(v, NVARIED);
	reqbatch_build_init(&b);
	rec_of(&v[4], &r);
	(void)reqbatch_add(&b, &r, err, sizeof(err));
	rec_of(&v[5], &r);
	r.num[RB_STATUS] = 1000;
	ok(reqbatch_add(&b, &r, err, sizeof(err)) == -1 &&
	    strcmp(err, "status 1000") == 0, "status 1000 refused: %s", err);
	rec_of(&v[5], &r);
	r.len[RB_HOST] = STORE_HOST_MAX + 1;
	r.s[RB_HOST] = v[1].path;
	ok(reqbatch_add(&b, &r, err, sizeof(err)) == -1 &&
	    strstr(err, "host: longer than 255 bytes") != NULL,
	    "a host of 256 bytes refused: %s", err);
	rec_of(&v[5], &r);
	r.num[RB_STATUS] = -1;
	ok(reqbatch_add(&b, &r, err, sizeof(err)) == -1,
	    "status -1 refused");
	rec_of(&v[5], &r);
	ok(reqbatch_add(&b, &r, err, sizeof(err)) == 0 &&
	    same_as_encoded(&b, v + 4, 2),
	    "the refused records left nothing behind");
	reqbatch_build_free(&b);
	free(v);
}

static int
take_all(const struct reqbatch_rec *r, uint64_t i, void *arg)
{
	(void)r;
	(void)i;
	(void)arg;
	return 0;
}

static int
refuse_at(const struct reqbatch_rec *r, uint64_t i, void *arg)
{
	(void)r;
	return i == *(const uint64_t *)arg;
}

/* v[from..to) packed as a value of its own, appended whole: its result. */
static int
append_range(struct reqbatch_build *b, const struct store_request *v,
    size_t from, size_t to, size_t cap)
{
	struct reqbatch one;
	char err[256];
	int r;

	if (reqbatch_encode(v + from, to - from, &one, err, sizeof(err)) == -1)
		return -2;
	r = reqbatch_append(b, one.buf, one.len, cap, take_all, NULL, err,
	    sizeof(err));
	free(one.buf);
	return r;
}

/*
 * Values appended whole, as hk-events takes the gateway's, make the same
 * bytes as the records packed one at a time: cut anywhere, into an
 * empty builder or after other records, and with records added one at a
 * time after them (the strings last written are found in the copy).
 */
static void
t_append(void)
{
	struct store_request *v;
	struct reqbatch_build b;
	struct reqbatch_rec r;
	char err[256];
	size_t k, m, i, good = 0;

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL)
		exit(1);
	varied(v, NVARIED);
	reqbatch_build_init(&b);
	for (k = 0; k <= NVARIED; k++) {
		m = k + (NVARIED - k) / 2;
		reqbatch_build_clear(&b);
		if (append_range(&b, v, 0, k, SIZE_MAX) != 1 ||
		    append_range(&b, v, k, m, SIZE_MAX) != 1) {
			diag("cut at %zu: not appended", k);
			continue;
		}
		for (i = m; i < NVARIED; i++) {
			rec_of(&v[i], &r);
			(void)reqbatch_add(&b, &r, err, sizeof(err));
		}
		if (same_as_encoded(&b, v, NVARIED))
			good++;
		else
			diag("cut at %zu and %zu: other bytes", k, m);
	}
	isint(good, NVARIED + 1, "appended whole at every cut, then added: "
	    "the bytes of all packed at once");
	good = 0;
	for (k = 1; k < NVARIED; k++) {
		reqbatch_build_clear(&b);
		for (i = 0; i < k; i++) {
			rec_of(&v[i], &r);
			(void)reqbatch_add(&b, &r, err, sizeof(err));
		}
		if (append_range(&b, v, k, NVARIED, SIZE_MAX) == 1 &&
		    same_as_encoded(&b, v, NVARIED))
			good++;
		else
			diag("added %zu, then the rest appended: wrong", k);
	}
	isint(good, NVARIED - 1, "added, then appended whole: the same bytes");
	reqbatch_build_free(&b);
	free(v);
}

/*
 * What reqbatch_append() leaves to the caller, the builder unchanged: a
 * record its function refuses (the first, a middle one, the last), more
 * than cap, a value of an older version; and a damaged value, an error.
 */
static void
t_append_declines(void)
{
	static const unsigned char v1[] = { 1, 0 };
	struct store_request *v;
	struct reqbatch_build b;
	struct reqbatch one;
	char err[256];
	uint64_t at[] = { 0, 5, NVARIED - 11 };
	size_t i, good = 0;

	if ((v = calloc(NVARIED, sizeof(*v))) == NULL)
		exit(1);
	varied(v, NVARIED);
	reqbatch_build_init(&b);
	(void)append_range(&b, v, 0, 10, SIZE_MAX);
	if (reqbatch_encode(v + 10, NVARIED - 10, &one, err,
	    sizeof(err)) == -1)
		exit(1);
	for (i = 0; i < 3; i++)
		if (reqbatch_append(&b, one.buf, one.len, SIZE_MAX, refuse_at,
		    &at[i], err, sizeof(err)) == 0 &&
		    same_as_encoded(&b, v, 10))
			good++;
	isint(good, 3, "a record refused (first, middle, last): declined, "
	    "nothing appended");
	ok(reqbatch_append(&b, one.buf, one.len, NVARIED - 1, take_all, NULL,
	    err, sizeof(err)) == 0 && same_as_encoded(&b, v, 10),
	    "one record over cap: declined, nothing appended");
	ok(reqbatch_append(&b, one.buf, one.len, NVARIED, take_all, NULL,
	    err, sizeof(err)) == 1 && same_as_encoded(&b, v, NVARIED),
	    "exactly cap: appended");
	reqbatch_build_clear(&b);
	(void)append_range(&b, v, 0, 10, SIZE_MAX);
	ok(reqbatch_append(&b, v1, sizeof(v1), SIZE_MAX, take_all, NULL, err,
	    sizeof(err)) == 0 && same_as_encoded(&b, v, 10),
	    "a value of version 1: declined");
	good = 0;
	for (i = 1; i < one.len; i++)
		if (reqbatch_append(&b, one.buf, i, SIZE_MAX, take_all, NULL,
		    err, sizeof(err)) == -1 && same_as_encoded(&b, v, 10))
			good++;
	isint(good, one.len - 1, "every proper prefix: damaged, nothing "
	    "appended");
	one.buf[0] = REQBATCH_VERSION + 1;
	ok(reqbatch_append(&b, one.buf, one.len, SIZE_MAX, take_all, NULL,
	    err, sizeof(err)) == -1 && same_as_encoded(&b, v, 10),
	    "a version newer than ours: damaged, nothing appended");
	one.buf[0] = REQBATCH_VERSION;
	ok(reqbatch_append(&b, one.buf, 0, SIZE_MAX, take_all, NULL, err,
	    sizeof(err)) == -1 && strstr(err, "not of format") != NULL,
	    "no bytes: damaged: %s", err);
	free(one.buf);
	reqbatch_build_free(&b);
	free(v);
}

int
main(void)
{
	plan(64);
	t_round_trip();
	t_repeat();
	t_empty();
	t_unterminated();
	t_prefixes();
	t_damaged();
	t_limits();
	t_varint();
	t_version1();
	t_stop();
	t_compact();
	t_build();
	t_build_refuses();
	t_append();
	t_append_declines();
	return done();
}
