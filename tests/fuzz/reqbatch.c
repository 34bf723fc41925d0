/*
 * reqbatch.c - libFuzzer target for reqbatch_decode() (lib/reqbatch.c).
 *
 * Any bytes: the decoder must not crash, leak or read out of bounds, and
 * every record it passes to fn, before damage or not, is one the store
 * could hold: strings terminated within their fields, status 0..999, id
 * first_id plus its index.  A damaged value gets a reason.  A value it
 * accepts has reqbatch_count() records and, encoded again, decodes to
 * the same records field for field, in no more bytes (the encoder writes
 * the shortest varints and repeats strings by code; a value of version 1
 * gains a byte a record, its empty client), and encodes once
 * more to the very same bytes.  fn's nonzero return stops decoding at
 * once and is returned.
 *
 *	make build/fuzz/reqbatch && build/fuzz/reqbatch \
 *	    tests/fuzz/corpus/reqbatch
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../request_same.h"
#include "reqbatch.h"

#define FIRST_ID	1000
#define STOP		7

struct got {
	struct store_request	*v;
	size_t			 n, cap;
	size_t			 stop_at;	/* 0 = never */
};

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static int	collect(const struct store_request *, void *);
static void	valid(const struct got *);
static void	again(const uint8_t *, size_t, const struct got *);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "reqbatch fuzz: invariant broken: %s\n", what);
		abort();
	}
}

static int
collect(const struct store_request *r, void *arg)
{
	struct got *g = arg;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		g->v = realloc(g->v, g->cap * sizeof(*g->v));
		check(g->v != NULL, "memory");
	}
	g->v[g->n++] = *r;
	return g->n == g->stop_at ? STOP : 0;
}


#define ENDS(f)	(memchr((f), '\0', sizeof(f)) != NULL)

static void
valid(const struct got *g)
{
	const struct store_request *r;
	size_t i;

	for (i = 0; i < g->n; i++) {
		r = &g->v[i];
		check(r->id == FIRST_ID + (int64_t)i, "id first_id + index");
		check(ENDS(r->app) && ENDS(r->service) && ENDS(r->method) &&
		    ENDS(r->host) && ENDS(r->path) && ENDS(r->outcome) &&
		    ENDS(r->client),
		    "strings end within their fields");
		check(r->status >= 0 && r->status <= 999, "status 0..999");
	}
}

/* g: the records of data, which decoded whole. */
static void
again(const uint8_t *data, size_t len, const struct got *g)
{
	struct got g2 = { NULL, 0, 0, 0 };
	struct reqbatch b, b2;
	char err[256];
	int64_t lo = 0, hi = 0;
	size_t i;

	check(reqbatch_count(data, len) == (int64_t)g->n, "count as decoded");
	check(reqbatch_encode(g->v, g->n, &b, err, sizeof(err)) == 0,
	    "what decodes encodes");
	/* a version 1 value gains the empty client: a byte a record */
	check(b.len <= len + (data[0] == 1 ? g->n : 0),
	    "encoded again in no more bytes");
	check(reqbatch_count(b.buf, b.len) == (int64_t)g->n,
	    "count encoded again");
	check(reqbatch_decode(b.buf, b.len, FIRST_ID, collect, &g2, err,
	    sizeof(err)) == 0, "encoded again, decodes");
	check(g2.n == g->n, "as many records");
	for (i = 0; i < g->n; i++) {
		check(request_same(&g->v[i], &g2.v[i], 1), "the same records");
		if (i == 0 || g->v[i].at < lo)
			lo = g->v[i].at;
		if (i == 0 || g->v[i].at > hi)
			hi = g->v[i].at;
	}
	check(b.min_at == lo && b.max_at == hi, "min_at and max_at");
	check(reqbatch_encode(g2.v, g2.n, &b2, err, sizeof(err)) == 0 &&
	    b2.len == b.len && memcmp(b2.buf, b.buf, b.len) == 0,
	    "encoded a third time, the same bytes");
	free(b.buf);
	free(b2.buf);
	free(g2.v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct got g = { NULL, 0, 0, 0 }, stop = { NULL, 0, 0, 1 };
	char err[256];
	int r, rs;

	memset(err, 'x', sizeof(err));
	r = reqbatch_decode(data, len, FIRST_ID, collect, &g, err,
	    sizeof(err));
	check(r == 0 || r == -1, "0 or -1 when fn never stops it");
	valid(&g);
	if (r == -1) {
		check(memchr(err, '\0', sizeof(err)) != NULL, "reason ends");
		check(err[0] != '\0', "reason given");
	} else
		again(data, len, &g);

	/* Stopped at its first record, if it reaches one. */
	rs = reqbatch_decode(data, len, FIRST_ID, collect, &stop, err,
	    sizeof(err));
	if (g.n > 0)
		check(rs == STOP && stop.n == 1 &&
		    request_same(&stop.v[0], &g.v[0], 1),
		    "fn's return stops decoding and is returned");
	else
		check(rs == r && stop.n == 0, "no record, no stop");
	free(g.v);
	free(stop.v);
	return 0;
}
