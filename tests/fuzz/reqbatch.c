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
 * once and is returned.  Appended whole after a record
 * (reqbatch_append()), a value of the current version that decodes gives
 * that record and its own, and a record added after them comes back too;
 * one that does not decode is refused with the builder unchanged; one of
 * version 1 is left to the caller.
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
static int	take_all(const struct reqbatch_rec *, uint64_t, void *);
static void	appended(const uint8_t *, size_t, int, const struct got *);

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

static int
take_all(const struct reqbatch_rec *r, uint64_t i, void *arg)
{
	(void)r;
	(void)i;
	(void)arg;
	return 0;
}

/* r, g: how data decoded on its own. */
static void
appended(const uint8_t *data, size_t len, int r, const struct got *g)
{
	static const struct reqbatch_rec before = { 5, { "fn", "svc", "GET",
	    "h", "/", "ok", "c" }, { 2, 3, 3, 1, 1, 2, 1 }, { 200, 1, 0, 0,
	    0, 0 } };
	struct got all = { NULL, 0, 0, 0 };
	struct reqbatch_build b;
	struct reqbatch v;
	char err[256];
	size_t i;
	int a;

	reqbatch_build_init(&b);
	check(reqbatch_add(&b, &before, err, sizeof(err)) == 0, "add");
	a = reqbatch_append(&b, data, len, SIZE_MAX, take_all, NULL, err,
	    sizeof(err));
	if (r == 0)
		check(a == (data[0] == 1 ? 0 : 1), "decodes: appended, "
		    "version 1 left to the caller");
	else
		check(a == -1 || (a == 0 && data[0] == 1), "damaged: "
		    "refused, version 1 left to the caller");
	if (a == 1)
		check(reqbatch_add(&b, &before, err, sizeof(err)) == 0,
		    "a record added after the copy");
	reqbatch_view(&b, &v);
	check(reqbatch_decode(v.buf, v.len, FIRST_ID, collect, &all, err,
	    sizeof(err)) == 0, "the builder's value decodes");
	check(all.n == (a == 1 ? g->n + 2 : 1), "as many records");
	for (i = 0; a == 1 && i < g->n; i++) {
		all.v[i + 1].id = g->v[i].id;
		check(request_same(&all.v[i + 1], &g->v[i], 1),
		    "the value's records, after the first");
	}
	check(strcmp(all.v[all.n - 1].host, "h") == 0 &&
	    strcmp(all.v[all.n - 1].client, "c") == 0 &&
	    all.v[all.n - 1].at == 5, "the record added after");
	reqbatch_build_free(&b);
	free(all.v);
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
	appended(data, len, r, &g);

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
