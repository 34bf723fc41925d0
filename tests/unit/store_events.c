/*
 * store_events.c - events and the request log in the state store
 * (lib/store_events.c), on both engines (store_suite.h): lists, filters,
 * retention, and the request log's migrations (SQLite).
 *
 * Batches of events go through each engine's batch path, on PostgreSQL
 * arrays of text: strings that would break an array literal must come
 * back as they went, NULL as NULL.  A batch of requests is one packed
 * value (lib/reqbatch.h), a blob on SQLite and hex bytea on PostgreSQL:
 * every byte of every field must come back as it went.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

#define BATCH_AT	7000		/* after t_retention's rows */
#define BATCH_BIG	2500		/* rows of the big batch */
#define SIZES_AT	8000		/* t_batch_sizes(), after BATCH_AT */
#define DAY_MS		(24LL * 3600 * 1000)

static void	 t_events(const char *, struct store *);
static void	 t_requests(const char *, struct store *);
static void	 t_retention(const char *, struct store *);
static void	 t_batch_requests(const char *, struct store *,
		    const char *);
static void	 t_batch_events(const char *, struct store *, const char *);
static void	 fill_requests(struct store_request *, size_t, const char *,
		    int64_t);
static void	 t_batch_sizes(const char *, struct store *);
static void	 t_request_log(const char *, struct store *, const char *);
static void	 t_request_damage(const char *, struct store *,
		    const char *);
static struct store_request rq_one(int64_t);
static void	 t_migrate_requests(const char *);
static void	 checks(const char *, struct store *, const char *);

static void
t_events(const char *E, struct store *s)
{
	static const struct {
		int64_t		 at;
		const char	*app, *service, *kind, *detail;
	} evs[] = {
		{ 1000, "fn", "py", "HTTPIdleWake", "{\"why\":\"request\"}" },
		{ 2000, "fn", "py", "HTTPIdleSleep", NULL },
		{ 3000, "fn", "db", "Started", "{\"x\":1}" },
		{ 4000, "alpha", "zeta", "HTTPIdleWake", NULL },
		{ 5000, "fn", "py", "HTTPIdleWake", "{\"n\":2}" },
	};
	struct store_event ev, *v = NULL;
	size_t i, n = 0;
	int good = 1;

	for (i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		memset(&ev, 0, sizeof(ev));
		ev.at = evs[i].at;
		(void)strlcpy(ev.app, evs[i].app, sizeof(ev.app));
		(void)strlcpy(ev.service, evs[i].service, sizeof(ev.service));
		(void)strlcpy(ev.kind, evs[i].kind, sizeof(ev.kind));
		ev.detail_json = (char *)evs[i].detail;
		good &= store_event_add(s, &ev) == 0;
	}
	ok(good, "%s: event add", E);
	memset(&ev, 0, sizeof(ev));
	ok(store_event_add(s, &ev) == -1, "%s: an event needs a kind", E);

	ok(store_event_list(s, NULL, NULL, NULL, 0, 0, &v, &n) == 0 && n == 5,
	    "%s: event list: all", E);
	for (i = 0; i < n; i++)
		good &= v[i].at == evs[i].at &&
		    (i == 0 || v[i].id > v[i - 1].id) &&
		    strcmp(v[i].kind, evs[i].kind) == 0 &&
		    strcmp(v[i].app, evs[i].app) == 0 &&
		    strcmp(v[i].service, evs[i].service) == 0 &&
		    (evs[i].detail == NULL ? v[i].detail_json == NULL :
		    v[i].detail_json != NULL &&
		    strcmp(v[i].detail_json, evs[i].detail) == 0);
	ok(good && n == 5, "%s: event list: oldest first, fields and ids", E);
	store_event_free(v, n);

	ok(store_event_list(s, "fn", NULL, NULL, 0, 0, &v, &n) == 0 && n == 4,
	    "%s: events of an app", E);
	store_event_free(v, n);
	ok(store_event_list(s, "fn", "py", NULL, 0, 0, &v, &n) == 0 && n == 3,
	    "%s: events of a service", E);
	store_event_free(v, n);
	ok(store_event_list(s, NULL, NULL, "HTTPIdleWake", 0, 0, &v,
	    &n) == 0 && n == 3, "%s: events of a kind", E);
	store_event_free(v, n);
	ok(store_event_list(s, "fn", NULL, "HTTPIdleWake", 0, 0, &v,
	    &n) == 0 && n == 2, "%s: events of an app and a kind", E);
	store_event_free(v, n);
	ok(store_event_list(s, NULL, NULL, NULL, 3000, 0, &v, &n) == 0 &&
	    n == 3 && v[0].at == 3000, "%s: events since", E);
	store_event_free(v, n);
	ok(store_event_list(s, NULL, NULL, NULL, 0, 2, &v, &n) == 0 &&
	    n == 2 && v[0].at == 4000 && v[1].at == 5000,
	    "%s: a limit keeps the newest, oldest first", E);
	store_event_free(v, n);
	ok(store_event_list(s, "fn", "nope", NULL, 0, 0, &v, &n) == 0 &&
	    n == 0 && v == NULL, "%s: no events", E);
	store_event_free(v, n);
}

static void
t_requests(const char *E, struct store *s)
{
	static const struct {
		int64_t		 at;
		const char	*app, *service, *method, *path, *outcome;
		int		 status;
		int64_t		 wake;
	} rqs[] = {
		{ 1000, "fn", "py", "GET", "/a", "ok", 200, 7 },
		{ 2000, "fn", "py", "POST", "/b", "ok", 201, 0 },
		{ 3000, "fn", "db", "GET", "/", "unavailable", 503, 0 },
		{ 4000, "", "", "GET", "/nope", "not_found", 404, 0 },
		{ 5000, "fn", "py", "GET", "/c", "ok", 200, 0 },
	};
	struct store_request v[5], *o = NULL, bad;
	size_t i, n = 0;
	int good = 1;

	memset(v, 0, sizeof(v));
	for (i = 0; i < 5; i++) {
		v[i].at = rqs[i].at;
		(void)strlcpy(v[i].app, rqs[i].app, sizeof(v[i].app));
		(void)strlcpy(v[i].service, rqs[i].service,
		    sizeof(v[i].service));
		(void)strlcpy(v[i].method, rqs[i].method, sizeof(v[i].method));
		(void)strlcpy(v[i].host, "py.fn.localhost", sizeof(v[i].host));
		(void)strlcpy(v[i].path, rqs[i].path, sizeof(v[i].path));
		(void)strlcpy(v[i].outcome, rqs[i].outcome,
		    sizeof(v[i].outcome));
		v[i].status = rqs[i].status;
		v[i].duration_us = 1000 + (int64_t)i;
		v[i].wait_us = (int64_t)i;
		v[i].wake_id = rqs[i].wake;
		v[i].bytes_in = 10;
		v[i].bytes_out = 20 + (int64_t)i;
	}
	ok(store_request_add(s, v, 5) == 0, "%s: request add, a batch of 5",
	    E);
	ok(store_request_add(s, v, 0) == 0, "%s: an empty batch is fine", E);
	bad = v[0];
	memset(bad.path, 'x', sizeof(bad.path));
	ok(store_request_add(s, &bad, 1) == -1 &&
	    strstr(store_error(s), "path") != NULL,
	    "%s: an unterminated field is refused: %s", E, store_error(s));
	ok(store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 && n == 5,
	    "%s: request list: all", E);
	for (i = 0; i < n; i++)
		good &= o[i].at == rqs[i].at && o[i].status == rqs[i].status &&
		    (i == 0 || o[i].id > o[i - 1].id) &&
		    strcmp(o[i].app, rqs[i].app) == 0 &&
		    strcmp(o[i].path, rqs[i].path) == 0 &&
		    strcmp(o[i].method, rqs[i].method) == 0 &&
		    strcmp(o[i].outcome, rqs[i].outcome) == 0 &&
		    strcmp(o[i].host, "py.fn.localhost") == 0 &&
		    o[i].duration_us == 1000 + (int64_t)i &&
		    o[i].wait_us == (int64_t)i && o[i].wake_id == rqs[i].wake &&
		    o[i].bytes_in == 10 && o[i].bytes_out == 20 + (int64_t)i;
	ok(good && n == 5, "%s: request list: oldest first, every field", E);
	free(o);
	ok(store_request_list(s, "fn", "py", 0, 0, 0, &o, &n) == 0 && n == 3,
	    "%s: requests of a service", E);
	free(o);
	ok(store_request_list(s, NULL, NULL, 200, 0, 0, &o, &n) == 0 &&
	    n == 2, "%s: requests of a status", E);
	free(o);
	ok(store_request_list(s, "fn", NULL, 0, 3000, 0, &o, &n) == 0 &&
	    n == 2 && o[0].at == 3000, "%s: requests since", E);
	free(o);
	ok(store_request_list(s, NULL, NULL, 0, 0, 2, &o, &n) == 0 &&
	    n == 2 && o[0].at == 4000 && o[1].at == 5000,
	    "%s: a limit keeps the newest requests, oldest first", E);
	free(o);
}

/* After t_events and t_requests: 5 rows in each table. */
static void
t_retention(const char *E, struct store *s)
{
	struct store_event *ev = NULL;
	struct store_request *rq = NULL;
	int64_t gone = -1, first;
	size_t n = 0;

	ok(store_event_after(s, 0, 0, &ev, &n) == 0 && n == 5,
	    "%s: events after id 0: all", E);
	first = n > 0 ? ev[0].id : 0;
	store_event_free(ev, n);
	ok(store_event_after(s, first, 2, &ev, &n) == 0 && n == 2 &&
	    ev[0].id > first && ev[1].id > ev[0].id,
	    "%s: events after an id, by id, limited", E);
	store_event_free(ev, n);
	ok(store_event_prune(s, 0, 0, &gone) == 0 && gone == 0,
	    "%s: no limit prunes nothing", E);
	ok(store_event_prune(s, 2500, 0, &gone) == 0 && gone == 2,
	    "%s: events pruned by age", E);
	ok(store_event_prune(s, 0, 2, &gone) == 0 && gone == 1 &&
	    store_event_list(s, NULL, NULL, NULL, 0, 0, &ev, &n) == 0 &&
	    n == 2 && ev[0].at == 4000, "%s: events pruned by rows", E);
	store_event_free(ev, n);
	ok(store_event_prune(s, 0, 1000, &gone) == 0 && gone == 0,
	    "%s: fewer rows than the limit: nothing pruned", E);
	/* The 5 requests are one batch, which goes whole or stays. */
	ok(store_request_prune(s, 3500, 1, &gone) == 0 && gone == 0 &&
	    store_request_list(s, NULL, NULL, 0, 0, 0, &rq, &n) == 0 &&
	    n == 5, "%s: a batch with a young or a newest record stays "
	    "whole", E);
	free(rq);
	rq = NULL;
	if (n > 0) {
		struct store_request one = rq_one(6000);

		ok(store_request_add(s, &one, 1) == 0 &&
		    store_request_prune(s, 0, 1, &gone) == 0 && gone == 5 &&
		    store_request_list(s, NULL, NULL, 0, 0, 0, &rq, &n) == 0 &&
		    n == 1 && rq[0].at == 6000,
		    "%s: the older batch goes whole, by rows", E);
		free(rq);
	}
}

/*
 * A batch of requests whose strings hold what delimits or quotes an
 * array literal, then a big one (buffers grow); all at BATCH_AT, so that
 * "oldest first" is id order, which must be batch order.
 */
static void
t_batch_requests(const char *E, struct store *s, const char *url)
{
	static const struct {
		const char	*app, *service, *method, *host, *path;
		const char	*outcome;
		int64_t		 wake;
	} rqs[] = {
		{ "b", "q", "GET", "h\"quote", "/a\"b\"", "ok", 0 },
		{ "b", "bs", "GET", "back\\slash", "/\\", "x\\", 42 },
		{ "b", "c", "PUT", "{,}", "/a,b{c}d,{},", "{}", 0 },
		{ "", "", "GET", "", "", "", 0 },
		{ "b", "n", "GET", "NULL", "NULL", "null", 0 },
		{ "b", "u", "GET", "caf\xc3\xa9.example",
		    "/\xe2\x82\xac/\xf0\x9f\x98\x80/\xe6\x97\xa5\xe6\x9c\xac",
		    "ok", 7 },
		{ "b", "w", "GET", " spaced ", " \t{\"\\,\" NULL} ", " ", 0 },
		{ "b", "e", "GET", "\\\"", "\"\\\"\\", "\\\"", 0 },
	};
	const size_t nr = sizeof(rqs) / sizeof(rqs[0]);
	struct store_request v[sizeof(rqs) / sizeof(rqs[0])], *big, *o = NULL;
	char sql[160];
	size_t i, n = 0;
	int good = 1;

	memset(v, 0, sizeof(v));
	for (i = 0; i < nr; i++) {
		v[i].at = BATCH_AT;
		(void)strlcpy(v[i].app, rqs[i].app, sizeof(v[i].app));
		(void)strlcpy(v[i].service, rqs[i].service,
		    sizeof(v[i].service));
		(void)strlcpy(v[i].method, rqs[i].method, sizeof(v[i].method));
		(void)strlcpy(v[i].host, rqs[i].host, sizeof(v[i].host));
		(void)strlcpy(v[i].path, rqs[i].path, sizeof(v[i].path));
		(void)strlcpy(v[i].outcome, rqs[i].outcome,
		    sizeof(v[i].outcome));
		v[i].status = 200 + (int)i;
		v[i].duration_us = INT64_MAX - (int64_t)i;
		v[i].wait_us = (int64_t)i;
		v[i].wake_id = rqs[i].wake;
		v[i].bytes_in = 0;
		v[i].bytes_out = (int64_t)1 << 40;
	}
	/* The longest path, every byte of it escaped on PostgreSQL. */
	for (i = 0; i < STORE_PATH_MAX; i++)
		v[nr - 1].path[i] = i % 2 == 0 ? '"' : '\\';
	v[nr - 1].path[STORE_PATH_MAX] = '\0';
	if (!ok(store_request_add(s, v, nr) == 0,
	    "%s: a batch with quotes, backslashes, commas, braces, UTF-8 and "
	    "empty strings", E))
		diag("%s", store_error(s));
	ok(store_request_list(s, NULL, NULL, 0, BATCH_AT, 0, &o, &n) == 0 &&
	    n == nr, "%s: batch: every row is there", E);
	for (i = 0; i < n && i < nr; i++)
		if (!ok(strcmp(o[i].app, v[i].app) == 0 &&
		    strcmp(o[i].service, v[i].service) == 0 &&
		    strcmp(o[i].method, v[i].method) == 0 &&
		    strcmp(o[i].host, v[i].host) == 0 &&
		    strcmp(o[i].path, v[i].path) == 0 &&
		    strcmp(o[i].outcome, v[i].outcome) == 0 &&
		    o[i].at == BATCH_AT && o[i].status == v[i].status &&
		    o[i].duration_us == v[i].duration_us &&
		    o[i].wait_us == v[i].wait_us &&
		    o[i].wake_id == v[i].wake_id && o[i].bytes_in == 0 &&
		    o[i].bytes_out == v[i].bytes_out &&
		    (i == 0 || o[i].id > o[i - 1].id),
		    "%s: batch row %zu comes back as it went, in order", E, i))
			diag("host [%s] path [%.40s] outcome [%s]", o[i].host,
			    o[i].path, o[i].outcome);
	free(o);
	(void)snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM requests "
	    "WHERE n = %zu AND min_at = %d AND max_at = %d", nr, BATCH_AT,
	    BATCH_AT);
	isint(sql_count(url, sql), 1, "%s: batch: one row, its count and "
	    "times", E);

	if ((big = calloc(BATCH_BIG, sizeof(*big))) == NULL) {
		ok(0, "%s: calloc: %s", E, strerror(errno));
		return;
	}
	for (i = 0; i < BATCH_BIG; i++) {
		big[i].at = BATCH_AT + 1;
		(void)strlcpy(big[i].app, "big", sizeof(big[i].app));
		(void)strlcpy(big[i].method, "GET", sizeof(big[i].method));
		memset(big[i].path, i % 3 == 0 ? '"' : 'p', i % 500);
		(void)snprintf(big[i].outcome, sizeof(big[i].outcome), "r%zu",
		    i);
		big[i].wake_id = (int64_t)i % 2;
	}
	ok(store_request_add(s, big, BATCH_BIG) == 0 &&
	    store_request_list(s, "big", NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == BATCH_BIG, "%s: a batch of %d", E, BATCH_BIG);
	for (i = 0; good && i < n; i++)
		good = strcmp(o[i].path, big[i].path) == 0 &&
		    strcmp(o[i].outcome, big[i].outcome) == 0 &&
		    o[i].wake_id == big[i].wake_id;
	ok(good && n == BATCH_BIG, "%s: ... every row as it went, in order",
	    E);
	free(o);
	/* Unterminated: store_request_add() checks before it writes. */
	memset(big[BATCH_BIG - 1].host, 'h', sizeof(big->host));
	ok(store_request_add(s, big, BATCH_BIG) == -1 &&
	    strstr(store_error(s), "request 2499: host") != NULL,
	    "%s: a bad row refuses its whole batch", E);
	diag("%s", store_error(s));
	ok(store_request_list(s, "big", NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == BATCH_BIG, "%s: ... of which no row is written", E);
	free(o);
	free(big);
}

/* n requests of app/service, at at, path "/i" and outcome "o<i>". */
static void
fill_requests(struct store_request *v, size_t n, const char *service,
    int64_t at)
{
	size_t i;

	memset(v, 0, n * sizeof(*v));
	for (i = 0; i < n; i++) {
		v[i].at = at;
		(void)strlcpy(v[i].app, "sz", sizeof(v[i].app));
		(void)strlcpy(v[i].service, service, sizeof(v[i].service));
		(void)strlcpy(v[i].method, "GET", sizeof(v[i].method));
		(void)snprintf(v[i].host, sizeof(v[i].host), "h%zu", i % 7);
		(void)snprintf(v[i].path, sizeof(v[i].path), "/%zu", i);
		(void)snprintf(v[i].outcome, sizeof(v[i].outcome), "o%zu", i);
		v[i].status = 200 + (int)(i % 300);
		v[i].duration_us = (int64_t)i * 1000;
		v[i].wake_id = (int64_t)(i % 3);
		v[i].bytes_out = (int64_t)i;
	}
}

/* One request at at. */
static struct store_request
rq_one(int64_t at)
{
	struct store_request r;

	fill_requests(&r, 1, "one", at);
	return r;
}

/*
 * Batches of many sizes come back whole and in order, ids following each
 * other, and a refused record, early or late in its batch, leaves
 * nothing of the batch.
 */
static void
t_batch_sizes(const char *E, struct store *s)
{
	static const size_t sizes[] = { 1, 15, 16, 17, 31, 32, 33, 65 };
	struct store_request v[70], *o = NULL;
	char svc[32];
	size_t i, k, n = 0;
	int good;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		(void)snprintf(svc, sizeof(svc), "n%zu", sizes[k]);
		fill_requests(v, sizes[k], svc, SIZES_AT);
		ok(store_request_add(s, v, sizes[k]) == 0 &&
		    store_request_list(s, "sz", svc, 0, 0, 0, &o, &n) == 0 &&
		    n == sizes[k], "%s: a batch of %zu", E, sizes[k]);
		for (i = 0, good = n == sizes[k]; good && i < n; i++)
			good = strcmp(o[i].path, v[i].path) == 0 &&
			    strcmp(o[i].outcome, v[i].outcome) == 0 &&
			    strcmp(o[i].host, v[i].host) == 0 &&
			    o[i].status == v[i].status &&
			    o[i].duration_us == v[i].duration_us &&
			    o[i].wake_id == v[i].wake_id &&
			    o[i].bytes_out == v[i].bytes_out &&
			    (i == 0 || o[i].id == o[i - 1].id + 1);
		ok(good, "%s: ... every row as it went, ids in batch order", E);
		free(o);
		o = NULL;
	}
	/* A refused record early (40) and last (65) in its batch. */
	for (k = 40; k <= 65; k += 25) {
		(void)snprintf(svc, sizeof(svc), "bad%zu", k);
		fill_requests(v, 66, svc, SIZES_AT);
		memset(v[k].host, 'h', sizeof(v[k].host));
		(void)snprintf(svc, sizeof(svc), "request %zu: host", k);
		ok(store_request_add(s, v, 66) == -1 &&
		    strstr(store_error(s), svc) != NULL,
		    "%s: row %zu refused: %s", E, k, store_error(s));
		ok(store_request_list(s, "sz", v[0].service, 0, 0, 0, &o,
		    &n) == 0 && n == 0, "%s: ... and nothing of its batch", E);
		free(o);
		o = NULL;
		ok(store_begin(s) == 0 && store_request_add(s, v, 66) == -1 &&
		    store_rollback(s) == 0 &&
		    store_request_list(s, "sz", v[0].service, 0, 0, 0, &o,
		    &n) == 0 && n == 0,
		    "%s: ... nor in the caller's transaction, rolled back", E);
		free(o);
		o = NULL;
	}
}

/* Adds v[0..n) a record a batch: -1 if one is refused. */
static int
add_singly(struct store *s, const struct store_request *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (store_request_add(s, &v[i], 1) == -1)
			return -1;
	return 0;
}

/*
 * The request log is a row per batch, with no index but its primary key
 * (migration 4): retention drops whole batches, walking them from the
 * oldest, queries walk from the newest, and ids follow each other.
 */
static void
t_request_log(const char *E, struct store *s, const char *url)
{
	struct store_request v[6], *o = NULL;
	int64_t now = store_now_ms(), gone = -1, top = 0;
	size_t i, n = 0, n0;

	isint(sql_count(url, store_engine(s) == STORE_SQLITE ?
	    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND "
	    "tbl_name = 'requests'" :
	    "SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'requests' "
	    "AND indexname <> 'requests_pkey'"), 0,
	    "%s: requests: no index but the primary key", E);
	ok(store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 && n > 0,
	    "%s: %zu requests so far", E, n);
	for (i = 0; i < n; i++)
		top = o[i].id > top ? o[i].id : top;
	free(o);
	n0 = n;

	/* By rows: the batches that end before the newest max_rows ids. */
	fill_requests(v, 5, "one", now);
	ok(add_singly(s, v, 5) == 0 && store_request_prune(s, 0, 3,
	    &gone) == 0 && gone == (int64_t)n0 + 2 &&
	    store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == 3 && o[0].id == top + 3 && o[2].id == top + 5,
	    "%s: by rows, the newest 3 ids kept", E);
	free(o);
	fill_requests(v, 4, "four", now);
	ok(store_request_add(s, v, 4) == 0 &&
	    store_request_list(s, NULL, "four", 0, 0, 0, &o, &n) == 0 &&
	    n == 4 && o[0].id == top + 6 && o[3].id == top + 9,
	    "%s: after pruning, the next id is still the next one", E);
	free(o);
	ok(store_request_prune(s, 0, 2, &gone) == 0 && gone == 3 &&
	    store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == 4, "%s: a batch that holds one of the newest 2 stays "
	    "whole", E);
	free(o);

	/* By age, in id order: the walk stops at a young batch. */
	ok(store_request_prune(s, now + DAY_MS / 2, 0, &gone) == 0 &&
	    gone == 4, "%s: every batch older than the limit is pruned", E);
	fill_requests(v, 6, "age", 0);
	v[0].at = now - 10 * DAY_MS;
	v[1].at = now + 2 * DAY_MS;	/* a clock set wrong: no stop */
	v[2].at = now - 9 * DAY_MS;
	v[3].at = now - DAY_MS;		/* young: retention stops here */
	v[4].at = now - 10 * DAY_MS;	/* written late: goes later */
	v[5].at = now;
	ok(add_singly(s, v, 6) == 0 &&
	    store_request_prune(s, now - 7 * DAY_MS, 0, &gone) == 0 &&
	    gone == 3 && store_request_list(s, NULL, "age", 0, 0, 0, &o,
	    &n) == 0 && n == 3 && o[0].at == v[4].at && o[1].at == v[3].at &&
	    o[2].at == v[5].at,
	    "%s: by age, walking the batches from the oldest to the first "
	    "young one; listed by time", E);
	free(o);
	ok(store_request_list(s, NULL, NULL, 0, now - 2 * DAY_MS, 0, &o,
	    &n) == 0 && n == 2, "%s: requests since, without an index", E);
	free(o);
	ok(store_request_list(s, NULL, NULL, 0, 0, 2, &o, &n) == 0 &&
	    n == 2 && o[0].at == v[4].at && o[1].at == v[5].at,
	    "%s: a limit keeps the newest written, in time order", E);
	free(o);
	fill_requests(v, 2, "mixed", now - 10 * DAY_MS);
	v[1].at = now;
	ok(store_request_add(s, v, 2) == 0 &&
	    store_request_prune(s, now - 7 * DAY_MS, 0, &gone) == 0 &&
	    gone == 0 && store_request_list(s, NULL, "mixed", 0, 0, 0, &o,
	    &n) == 0 && n == 2, "%s: an old record in a young batch stays "
	    "with it", E);
	free(o);
	t_request_damage(E, s, url);

	ok(store_durable(s, 0) == 0, "%s: commits that do not wait", E);
	fill_requests(v, 2, "lazy", now);
	ok(store_request_add(s, v, 2) == 0 &&
	    store_request_list(s, NULL, "lazy", 0, 0, 0, &o, &n) == 0 &&
	    n == 2, "%s: ... are written all the same", E);
	free(o);
	ok(store_begin(s) == 0 && store_durable(s, 1) == -1 &&
	    store_rollback(s) == 0, "%s: not changed inside a transaction",
	    E);
	ok(store_durable(s, 1) == 0, "%s: commits that wait again", E);
}

/*
 * A damaged batch (written by something else than hk) makes a list
 * that reaches it fail and say which batch, rather than read garbage.
 */
static void
t_request_damage(const char *E, struct store *s, const char *url)
{
	struct store_request v[1], *o = NULL;
	char want[64];
	int64_t id = 0;
	size_t n = 0;

	fill_requests(v, 1, "damaged", store_now_ms());
	if (!ok(store_request_add(s, v, 1) == 0 &&
	    store_request_list(s, NULL, "damaged", 0, 0, 0, &o, &n) == 0 &&
	    n == 1, "%s: a batch to damage", E))
		return;
	id = o[0].id;
	free(o);
	o = NULL;
	isint(sql_count(url, store_engine(s) == STORE_SQLITE ?
	    "UPDATE requests SET records = X'0102' WHERE id = "
	    "(SELECT MAX(id) FROM requests) RETURNING n" :
	    "UPDATE requests SET records = '\\x0102'::bytea WHERE id = "
	    "(SELECT MAX(id) FROM requests) RETURNING n"), 1,
	    "%s: ... damaged", E);
	(void)snprintf(want, sizeof(want), "request batch %jd, record 0",
	    (intmax_t)id);
	ok(store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == -1 &&
	    strstr(store_error(s), want) != NULL,
	    "%s: a damaged batch fails the list: %s", E, store_error(s));
	free(o);
	o = NULL;
	ok(store_request_prune(s, store_now_ms() + DAY_MS / 2, 0, NULL) ==
	    0 && store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == 0, "%s: ... until retention drops it", E);
	free(o);
}

/*
 * A store at schema version 2 with requests in it (the SQL of those
 * migrations as released), opened: migration 3 rebuilds SQLite's
 * requests table without AUTOINCREMENT and the indexes, ids kept.
 */
static void
t_migrate_requests(const char *dir)
{
	static const char v2[] =
	    "CREATE TABLE schema_migrations (version BIGINT NOT NULL "
	    "PRIMARY KEY, applied_at BIGINT NOT NULL);"
	    "INSERT INTO schema_migrations VALUES (1, 1), (2, 2);"
	    "CREATE TABLE apps (name TEXT NOT NULL PRIMARY KEY, path TEXT "
	    "NOT NULL, applied_at BIGINT NOT NULL);"
	    "CREATE TABLE services (app TEXT NOT NULL REFERENCES apps (name) "
	    "ON DELETE CASCADE, name TEXT NOT NULL, spec TEXT NOT NULL, "
	    "revision BIGINT NOT NULL, desired TEXT NOT NULL DEFAULT 'auto' "
	    "CHECK (desired IN ('auto', 'stopped')), serverless INTEGER NOT "
	    "NULL DEFAULT 0, created_at BIGINT NOT NULL, updated_at BIGINT "
	    "NOT NULL, PRIMARY KEY (app, name));"
	    "CREATE TABLE instances (app TEXT NOT NULL, service TEXT NOT "
	    "NULL, revision BIGINT NOT NULL, state TEXT NOT NULL, endpoint "
	    "TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', pid "
	    "BIGINT NOT NULL DEFAULT 0, pid_start BIGINT NOT NULL DEFAULT 0, "
	    "started_at BIGINT NOT NULL DEFAULT 0, ready_at BIGINT NOT NULL "
	    "DEFAULT 0, updated_at BIGINT NOT NULL, PRIMARY KEY (app, "
	    "service), FOREIGN KEY (app, service) REFERENCES services (app, "
	    "name) ON DELETE CASCADE);"
	    "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, at "
	    "BIGINT NOT NULL, app TEXT NOT NULL DEFAULT '', service TEXT NOT "
	    "NULL DEFAULT '', kind TEXT NOT NULL, detail TEXT);"
	    "CREATE INDEX events_at ON events (at);"
	    "CREATE INDEX events_service_at ON events (app, service, at);"
	    "CREATE TABLE requests (id INTEGER PRIMARY KEY AUTOINCREMENT, at "
	    "BIGINT NOT NULL, app TEXT NOT NULL DEFAULT '', service TEXT NOT "
	    "NULL DEFAULT '', method TEXT NOT NULL DEFAULT '', host TEXT NOT "
	    "NULL DEFAULT '', path TEXT NOT NULL DEFAULT '', status INTEGER "
	    "NOT NULL DEFAULT 0, duration_us BIGINT NOT NULL DEFAULT 0, "
	    "wait_us BIGINT NOT NULL DEFAULT 0, wake_id BIGINT, bytes_in "
	    "BIGINT NOT NULL DEFAULT 0, bytes_out BIGINT NOT NULL DEFAULT 0, "
	    "outcome TEXT NOT NULL DEFAULT '');"
	    "CREATE INDEX requests_at ON requests (at);"
	    "CREATE INDEX requests_service_at ON requests (service, at);"
	    "CREATE TABLE leases (name TEXT NOT NULL PRIMARY KEY, holder "
	    "TEXT NOT NULL, epoch BIGINT NOT NULL, acquired_at BIGINT NOT "
	    "NULL, expires_at BIGINT NOT NULL);"
	    "CREATE TABLE settings (key TEXT NOT NULL PRIMARY KEY, value "
	    "TEXT NOT NULL);"
	    "ALTER TABLE leases ADD COLUMN grace_ms BIGINT NOT NULL DEFAULT 0;"
	    "INSERT INTO requests (id, at, app, service, method, host, path, "
	    "status, wake_id, outcome) VALUES "
	    "(5, 1000, 'm', 'a', 'GET', 'h', '/5', 200, NULL, 'ok'), "
	    "(7, 2000, 'm', 'b', 'PUT', 'h', '/7', 404, 3, 'not_found'), "
	    "(9, 3000, 'm', 'a', 'GET', 'h', '/9', 200, NULL, 'ok');"
	    /* an instance, replica 0 once migration 11 numbers them */
	    "INSERT INTO apps VALUES ('m', '/m', 1);"
	    "INSERT INTO services (app, name, spec, revision, created_at, "
	    "updated_at) VALUES ('m', 'a', '{}', 4, 1, 1);"
	    "INSERT INTO instances (app, service, revision, state, endpoint, "
	    "pid, pid_start, updated_at) VALUES ('m', 'a', 4, 'running', "
	    "'127.0.0.1:8080', 4242, 77, 5);";
	char path[URL_MAX], url[URL_MAX + 16], err[STORE_ERR_LEN];
	struct store_request v[1], *o = NULL;
	struct store_instance *inst = NULL;
	struct store *s;
	sqlite3 *db;
	int64_t ver = 0, gone = -1;
	size_t n = 0;

	(void)snprintf(path, sizeof(path), "%s/v2.db", dir);
	(void)snprintf(url, sizeof(url), "sqlite://%s", path);
	if (!ok(sqlite3_open(path, &db) == SQLITE_OK &&
	    sqlite3_exec(db, v2, NULL, NULL, NULL) == SQLITE_OK,
	    "sqlite: a store at version 2, with requests"))
		diag("%s", sqlite3_errmsg(db));
	sqlite3_close(db);
	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "sqlite: migrate from version 2: %s", err);
		goto out;
	}
	if (store_schema_version(s, &ver) == -1)
		ver = -1;
	ok(ver >= 3, "sqlite: migrated from version 2 to %jd", (intmax_t)ver);
	ok(store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == 3 && o[0].id == 5 && o[1].id == 7 && o[2].id == 9 &&
	    strcmp(o[1].path, "/7") == 0 && o[1].status == 404 &&
	    o[1].wake_id == 3 && strcmp(o[1].outcome, "not_found") == 0,
	    "sqlite: the requests are kept, with their ids");
	free(o);
	ok(store_instance_list(s, &inst, &n) == 0 && n == 1 &&
	    inst[0].replica == 0 && inst[0].pid == 4242 &&
	    inst[0].pid_start == 77 && inst[0].revision == 4 &&
	    strcmp(inst[0].endpoint, "127.0.0.1:8080") == 0,
	    "sqlite: the instance is kept, as replica 0 (migration 11)");
	free(inst);
	isint(sql_count(url, "SELECT COUNT(*) FROM sqlite_master WHERE "
	    "tbl_name = 'requests' AND (type = 'index' OR "
	    "sql LIKE '%AUTOINCREMENT%')"), 0,
	    "sqlite: requests: no AUTOINCREMENT, no index");
	isint(sql_count(url, "SELECT COUNT(*) FROM sqlite_sequence WHERE "
	    "name = 'requests'"), 0, "sqlite: ... nor its sequence");
	fill_requests(v, 1, "new", 4000);
	ok(store_request_add(s, v, 1) == 0 &&
	    store_request_list(s, NULL, "new", 0, 0, 0, &o, &n) == 0 &&
	    n == 1 && o[0].id == 10, "sqlite: the next id follows the last");
	free(o);
	ok(store_request_prune(s, 2500, 2, &gone) == 0 && gone == 2 &&
	    store_request_list(s, NULL, NULL, 0, 0, 0, &o, &n) == 0 &&
	    n == 2 && o[0].id == 9 && o[1].id == 10,
	    "sqlite: retention by age and rows after the migration");
	free(o);
	ok(store_job_put(s, "m", "j", "a", SPEC_J1, 0) == 0 &&
	    store_schedule_put(s, "m", "a", "t", SPEC_S1, 0) == 0,
	    "sqlite: jobs and schedules after the migration from version 2");
	store_close(s);
out:
	(void)unlink(path);
	(void)snprintf(path, sizeof(path), "%s/v2.db-wal", dir);
	(void)unlink(path);
	(void)snprintf(path, sizeof(path), "%s/v2.db-shm", dir);
	(void)unlink(path);
}

/* Events in one batch: details NULL, empty, the word NULL, quoted. */
static void
t_batch_events(const char *E, struct store *s, const char *url)
{
	static const struct {
		const char	*app, *service, *kind, *detail;
	} evs[] = {
		{ "b", "q", "Kind", NULL },
		{ "b", "e", "Kind", "" },
		{ "b", "n", "NULL", "NULL" },
		{ "", "", "Lease",
		    "{\"a\":\"x\\\"y,{}\\\\\",\"b\":\"\xc3\xa9\"}" },
		{ "b", "w", "K,{}", " {\\\" , } " },
	};
	const size_t ne = sizeof(evs) / sizeof(evs[0]);
	struct store_event v[sizeof(evs) / sizeof(evs[0])], *o = NULL;
	char sql[128];
	size_t i, n = 0;

	memset(v, 0, sizeof(v));
	for (i = 0; i < ne; i++) {
		v[i].at = BATCH_AT;
		(void)strlcpy(v[i].app, evs[i].app, sizeof(v[i].app));
		(void)strlcpy(v[i].service, evs[i].service,
		    sizeof(v[i].service));
		(void)strlcpy(v[i].kind, evs[i].kind, sizeof(v[i].kind));
		v[i].detail_json = (char *)evs[i].detail;
	}
	ok(store_events_add(s, v, 0) == 0, "%s: an empty event batch", E);
	if (!ok(store_events_add(s, v, ne) == 0, "%s: an event batch", E))
		diag("%s", store_error(s));
	ok(store_event_list(s, NULL, NULL, NULL, BATCH_AT, 0, &o, &n) == 0 &&
	    n == ne, "%s: event batch: every event is there", E);
	for (i = 0; i < n && i < ne; i++)
		ok(strcmp(o[i].app, v[i].app) == 0 &&
		    strcmp(o[i].service, v[i].service) == 0 &&
		    strcmp(o[i].kind, v[i].kind) == 0 && o[i].at == BATCH_AT &&
		    (i == 0 || o[i].id > o[i - 1].id) &&
		    (v[i].detail_json == NULL ? o[i].detail_json == NULL :
		    o[i].detail_json != NULL &&
		    strcmp(o[i].detail_json, v[i].detail_json) == 0),
		    "%s: batch event %zu comes back as it went, in order", E,
		    i);
	store_event_free(o, n);
	(void)snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM events "
	    "WHERE at = %d AND detail IS NULL", BATCH_AT);
	isint(sql_count(url, sql), 1, "%s: event batch: NULL stays NULL", E);
	v[2].kind[0] = '\0';
	ok(store_events_add(s, v, ne) == -1 &&
	    strstr(store_error(s), "event 2: event kind") != NULL,
	    "%s: an event without a kind refuses its batch", E);
	diag("%s", store_error(s));
	ok(store_event_list(s, NULL, NULL, NULL, BATCH_AT, 0, &o, &n) == 0 &&
	    n == ne, "%s: ... of which no event is written", E);
	store_event_free(o, n);
}

/*
 * Retention deletes a few thousand rows a statement (store_prune()):
 * more than that many old rows still go, all of them, in one call.
 */
#define MANY	12345

static void
t_prune_many(const char *E, struct store *s)
{
	struct store_event *ev, *left = NULL;
	struct store_request *rq, *o = NULL;
	int64_t gone = -1;
	size_t i, n = 0;
	int added;

	if ((ev = calloc(MANY, sizeof(*ev))) == NULL ||
	    (rq = calloc(MANY, sizeof(*rq))) == NULL)
		abort();
	for (i = 0; i < MANY; i++) {
		ev[i].at = 100;
		(void)strlcpy(ev[i].app, "old", sizeof(ev[i].app));
		(void)strlcpy(ev[i].kind, "Started", sizeof(ev[i].kind));
		rq[i] = rq_one(150);
	}
	ok(store_events_add(s, ev, MANY) == 0 &&
	    store_event_prune(s, 200, 0, &gone) == 0 && gone == MANY,
	    "%s: %d old events pruned by age in one call", E, MANY);
	ok(store_event_list(s, "old", NULL, NULL, 0, 0, &left, &n) == 0 &&
	    n == 0, "%s: ... none of them left", E);
	store_event_free(left, n);
	free(ev);
	added = store_begin(s) == 0 && add_singly(s, rq, MANY) == 0 &&
	    store_commit(s) == 0;
	ok(added && store_request_prune(s, 0, 1, &gone) == 0 &&
	    gone >= MANY && store_request_list(s, NULL, NULL, 0, 0, 0, &o,
	    &n) == 0 && n == 1, "%s: %d batches of requests pruned by rows "
	    "in one call, the newest kept", E, MANY);
	free(o);
	free(rq);
}

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	t_events(E, s);
	t_requests(E, s);
	t_retention(E, s);
	t_batch_requests(E, s, url);
	t_batch_events(E, s, url);
	t_batch_sizes(E, s);
	t_request_log(E, s, url);
	t_prune_many(E, s);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_events",
		.checks = checks,
		.sqlite = t_migrate_requests,
	};

	return store_suite_main(&t);
}
