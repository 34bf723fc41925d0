/*
 * store.c - the state store: the same checks on both engines
 * (store_suite.h).
 *
 * Batches of events go through each engine's batch path, on PostgreSQL
 * arrays of text: strings that would break an array literal must come
 * back as they went, NULL as NULL.  A batch of requests is one packed
 * value (lib/reqbatch.h), a blob on SQLite and hex bytea on PostgreSQL:
 * every byte of every field must come back as it went.
 *
 * Each engine also runs two races between processes: three processes
 * opening (and migrating) a fresh store at once, and two writers doing
 * NWRITES service updates and NWRITES read-modify-write increments each.
 */
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

#define NWRITES		200
#define NOPENERS	3
#define BATCH_AT	7000		/* after t_retention's rows */
#define BATCH_BIG	2500		/* rows of the big batch */
#define SIZES_AT	8000		/* t_batch_sizes(), after BATCH_AT */
#define DAY_MS		(24LL * 3600 * 1000)

#define NCLAIMS		50		/* t_claim_race() */

static int	 child_open(const char *, int);
static int	 child_writer(const char *, int);
static int	 increment(struct store *);
static int64_t	 mono_ms(void);
static struct store *t_open(const char *, enum store_engine, const char *,
		    const char *);
static void	 t_services(const char *, struct store *);
static void	 t_instances(const char *, struct store *);
static void	 t_prune(const char *, struct store *);
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
static void	 t_settings(const char *, struct store *);
static void	 t_secrets(const char *, struct store *);
static void	 t_runs(const char *, struct store *);
static void	 run_row(struct store_run *, const char *, const char *,
		    const char *);
static void	 join_jobs(struct store *, const char *, char *, size_t);
static void	 join_schedules(struct store *, const char *, char *,
		    size_t);
static void	 t_jobs(const char *, struct store *);
static void	 t_job_claims(const char *, struct store *);
static void	 t_schedules(const char *, struct store *);
static int	 child_claimer(const char *, int);
static void	 t_claim_race(const char *, const char *);
static void	 t_migrate_v7(const char *, const char *);
static void	 t_code(const char *, struct store *);
static void	 t_tx(const char *, struct store *);
static void	 t_busy(const char *, struct store *, const char *);
static void	 t_race(const char *, const char *);
static void	 t_urls(void);
static int	 pg_kill_store(PGconn *, const char *);
static void	 t_pg_lost(PGconn *, const char *, const char *);
static void	 checks(const char *, struct store *, const char *);
static void	 after(const char *, const char *);

static int
child_open(const char *url, int id)
{
	char err[STORE_ERR_LEN];
	struct store *s;
	int64_t v = 0;
	int r;

	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		fprintf(stderr, "# opener %d: %s\n", id, err);
		return 1;
	}
	if ((r = store_schema_version(s, &v)) == -1 || v < 1)
		fprintf(stderr, "# opener %d: version %jd: %s\n", id,
		    (intmax_t)v, store_error(s));
	store_close(s);
	return r == 0 && v >= 1 ? 0 : 1;
}

/* One read-modify-write of the counter, in a transaction. */
static int
increment(struct store *s)
{
	char *v = NULL, num[32];
	const char *errstr;
	long long n;
	int r;

	if (store_begin(s) == -1)
		return -1;
	if ((r = store_setting_get(s, "counter", &v)) != 0) {
		if (r == 1)
			fprintf(stderr, "# counter missing\n");
		return -1;
	}
	n = strtonum(v, 0, LLONG_MAX, &errstr);
	free(v);
	if (errstr != NULL) {
		fprintf(stderr, "# counter: %s\n", errstr);
		return -1;
	}
	(void)snprintf(num, sizeof(num), "%lld", n + 1);
	if (store_setting_put(s, "counter", num) == -1)
		return -1;
	return store_commit(s);
}

static int
child_writer(const char *url, int id)
{
	char err[STORE_ERR_LEN], spec[64];
	struct store *s;
	int64_t rev;
	int changed, i, tries = 0;

	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		fprintf(stderr, "# writer %d: %s\n", id, err);
		return 1;
	}
	for (i = 0; i < NWRITES; i++) {
		(void)snprintf(spec, sizeof(spec), "{\"writer\":%d,\"i\":%d}",
		    id, i);
		while (store_service_put(s, "race", "svc", spec, 0, &rev,
		    &changed) == -1)
			if (!store_busy(s) || ++tries > MAXTRIES)
				goto fail;
		if (!changed) {
			fprintf(stderr, "# writer %d: put %d changed nothing\n",
			    id, i);
			goto fail;
		}
		while (increment(s) == -1) {
			if (!store_busy(s) || ++tries > MAXTRIES)
				goto fail;
			(void)store_rollback(s);
		}
	}
	store_close(s);
	return 0;
fail:
	fprintf(stderr, "# writer %d: %s\n", id, store_error(s));
	store_close(s);
	return 1;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The races on a fresh store, then open, reopen, unreachable. */
static struct store *
t_open(const char *E, enum store_engine want, const char *url,
    const char *unreachable)
{
	char err[STORE_ERR_LEN];
	struct store *s;
	int64_t v1 = -1, v2 = -2;
	int r;

	isint(fork_race(NOPENERS, child_open, url), NOPENERS,
	    "%s: %d processes open and migrate a fresh store at once", E,
	    NOPENERS);
	s = store_open(url, err, sizeof(err));
	if (!ok(s != NULL, "%s: open", E)) {
		diag("%s", err);
		return NULL;
	}
	ok(store_engine(s) == want, "%s: engine", E);
	r = store_schema_version(s, &v1);
	ok(r == 0 && v1 >= 1, "%s: schema version %jd", E, (intmax_t)v1);
	store_close(s);
	s = store_open(url, err, sizeof(err));
	if (!ok(s != NULL, "%s: open again", E)) {
		diag("%s", err);
		return NULL;
	}
	r = store_schema_version(s, &v2);
	ok(r == 0 && v2 == v1, "%s: open again leaves the schema version "
	    "at %jd", E, (intmax_t)v2);

	ok(store_open(unreachable, err, sizeof(err)) == NULL &&
	    strstr(err, "does not exist") != NULL,
	    "%s: a store that cannot exist is refused clearly", E);
	diag("%s", err);
	return s;
}

static void
t_services(const char *E, struct store *s)
{
	struct store_service v;
	char buf[512];
	int64_t rev = 0, n = -1;
	int changed = -1;

	ok(store_app_put(s, "fn", "/srv/fn.toml") == 0 &&
	    store_app_put(s, "alpha", "/srv/alpha.toml") == 0 &&
	    store_app_put(s, "fn", "/srv/fn2.toml") == 0, "%s: app put", E);

	ok(store_service_put(s, "fn", "py", SPEC_PY1, 1, &rev, &changed) == 0 &&
	    rev == 1 && changed == 1,
	    "%s: a new service is revision 1, changed", E);
	rev = 0;
	ok(store_service_put(s, "fn", "py", SPEC_PY1, 1, &rev, &changed) == 0 &&
	    rev == 1 && changed == 0,
	    "%s: the same spec keeps revision 1, unchanged", E);
	ok(store_service_put(s, "fn", "py", SPEC_PY2, 1, &rev, &changed) == 0 &&
	    rev == 2 && changed == 1,
	    "%s: a changed spec makes revision 2", E);

	ok(store_service_get(s, "fn", "py", &v) == 0, "%s: get", E);
	is(v.spec_json, SPEC_PY2, "%s: get: spec", E);
	isint(v.revision, 2, "%s: get: revision", E);
	ok(strcmp(v.app, "fn") == 0 && strcmp(v.name, "py") == 0 &&
	    v.desired == STORE_DESIRED_AUTO && v.serverless == 1 &&
	    v.created_at > 0 && v.updated_at >= v.created_at,
	    "%s: get: app, name, desired, serverless, times", E);
	store_service_clear(&v);
	ok(store_service_get(s, "fn", "nope", &v) == 1,
	    "%s: get of an unknown service is 1", E);

	ok(store_service_put(s, "nope", "x", SPEC_DB, 0, NULL, NULL) == -1 &&
	    !store_busy(s) && *store_error(s) != '\0',
	    "%s: a service of an unknown app is refused, not busy", E);
	diag("%s", store_error(s));
	ok(store_service_put(s, "fn", "a123456789012345678901234567890123456789"
	    "012345678901234567890123", SPEC_DB, 0, NULL, NULL) == -1,
	    "%s: a name over %d bytes is refused", E, STORE_NAME_MAX);

	ok(store_service_put(s, "fn", "web", SPEC_DB, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "fn", "db", SPEC_DB, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "fn", "api", SPEC_DB, 1, NULL, NULL) == 0 &&
	    store_service_put(s, "alpha", "zeta", SPEC_DB, 1, NULL,
	    NULL) == 0, "%s: more services", E);
	join_services(s, buf, sizeof(buf));
	is(buf, "alpha/zeta fn/api fn/db fn/py fn/web",
	    "%s: list is ordered by app, then name", E);

	ok(store_count_serverless(s, NULL, &n) == 0 && n == 3,
	    "%s: serverless services: 3", E);
	ok(store_count_serverless(s, "fn", &n) == 0 && n == 1,
	    "%s: serverless services outside fn: 1", E);
	ok(store_count_serverless(s, "alpha", &n) == 0 && n == 2,
	    "%s: serverless services outside alpha: 2", E);

	ok(store_service_set_desired(s, "fn", "py",
	    STORE_DESIRED_STOPPED) == 0, "%s: set desired stopped", E);
	ok(store_service_get(s, "fn", "py", &v) == 0 &&
	    v.desired == STORE_DESIRED_STOPPED && v.revision == 2,
	    "%s: desired is stopped, revision unchanged", E);
	store_service_clear(&v);
	ok(store_service_set_desired(s, "fn", "nope",
	    STORE_DESIRED_STOPPED) == 1, "%s: set desired of unknown is 1", E);
	ok(store_service_set_desired(s, "fn", "py", STORE_DESIRED_AUTO) == 0 &&
	    store_service_get(s, "fn", "py", &v) == 0 &&
	    v.desired == STORE_DESIRED_AUTO, "%s: set desired auto", E);
	store_service_clear(&v);
}

static void
t_instances(const char *E, struct store *s)
{
	struct store_instance in, got, *v;
	size_t n = 0;

	memset(&in, 0, sizeof(in));
	(void)strlcpy(in.app, "fn", sizeof(in.app));
	(void)strlcpy(in.service, "py", sizeof(in.service));
	(void)strlcpy(in.state, "running", sizeof(in.state));
	(void)strlcpy(in.endpoint, "127.0.0.1:8081", sizeof(in.endpoint));
	(void)strlcpy(in.node, "node-1", sizeof(in.node));
	in.revision = 2;
	in.pid = 4242;
	in.pid_start = 123456789;
	in.started_at = 1000;
	in.ready_at = 2000;
	in.updated_at = 3000;
	ok(store_instance_put(s, &in) == 0, "%s: instance put", E);
	ok(store_instance_get(s, "fn", "py", &got) == 0 &&
	    memcmp(&in, &got, sizeof(in)) == 0,
	    "%s: instance get returns what was put", E);

	(void)strlcpy(in.state, "draining", sizeof(in.state));
	in.updated_at = 0;
	ok(store_instance_put(s, &in) == 0 &&
	    store_instance_get(s, "fn", "py", &got) == 0 &&
	    strcmp(got.state, "draining") == 0 && got.updated_at > 3000,
	    "%s: instance put again updates, stamps updated_at", E);

	(void)strlcpy(in.service, "db", sizeof(in.service));
	ok(store_instance_put(s, &in) == 0, "%s: second instance", E);
	(void)strlcpy(in.service, "ghost", sizeof(in.service));
	ok(store_instance_put(s, &in) == -1 && !store_busy(s),
	    "%s: an instance of an unknown service is refused", E);
	ok(store_instance_list(s, &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].service, "db") == 0 &&
	    strcmp(v[1].service, "py") == 0,
	    "%s: instance list, ordered", E);
	free(v);
	ok(store_instance_get(s, "fn", "web", &got) == 1,
	    "%s: instance get of none is 1", E);
	ok(store_instance_delete(s, "fn", "db") == 0 &&
	    store_instance_get(s, "fn", "db", &got) == 1 &&
	    store_instance_list(s, &v, &n) == 0 && n == 1,
	    "%s: instance delete", E);
	free(v);
}

static void
t_prune(const char *E, struct store *s)
{
	char *const keep[] = { "py", "db" };
	struct store_instance in, got;
	char **names = NULL, buf[512];
	size_t n = 9, i;

	memset(&in, 0, sizeof(in));
	(void)strlcpy(in.app, "fn", sizeof(in.app));
	(void)strlcpy(in.service, "api", sizeof(in.service));
	(void)strlcpy(in.state, "running", sizeof(in.state));
	(void)store_instance_put(s, &in);

	ok(store_service_prune(s, "fn", keep, 2, &names, &n) == 0 && n == 2 &&
	    strcmp(names[0], "api") == 0 && strcmp(names[1], "web") == 0,
	    "%s: prune removes the services not kept, and names them", E);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	join_services(s, buf, sizeof(buf));
	is(buf, "alpha/zeta fn/db fn/py", "%s: prune keeps the others", E);
	ok(store_instance_get(s, "fn", "api", &got) == 1,
	    "%s: prune removes their instances", E);
	ok(store_instance_get(s, "fn", "py", &got) == 0,
	    "%s: prune keeps the other instances", E);
	ok(store_service_prune(s, "fn", keep, 2, &names, &n) == 0 && n == 0 &&
	    names == NULL, "%s: prune again removes nothing", E);
	ok(store_service_prune(s, "alpha", NULL, 0, NULL, &n) == 0 && n == 1,
	    "%s: prune keeping nothing, names not wanted", E);
	join_services(s, buf, sizeof(buf));
	is(buf, "fn/db fn/py", "%s: prune of another app", E);
}

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
	    "(9, 3000, 'm', 'a', 'GET', 'h', '/9', 200, NULL, 'ok');";
	char path[URL_MAX], url[URL_MAX + 16], err[STORE_ERR_LEN];
	struct store_request v[1], *o = NULL;
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

static void
t_settings(const char *E, struct store *s)
{
	char *v = NULL;

	ok(store_setting_get(s, "greeting", &v) == 1 && v == NULL,
	    "%s: setting get of unknown is 1", E);
	ok(store_setting_put(s, "greeting", "hello") == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    strcmp(v, "hello") == 0, "%s: setting put, get", E);
	free(v);
	ok(store_setting_put(s, "greeting", "") == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    *v == '\0', "%s: setting overwritten, empty value", E);
	free(v);
}

/* Runs of hk-jobs: a row per run, rewritten at each phase. */
static void
t_runs(const char *E, struct store *s)
{
	struct store_run r, g, *v = NULL;
	size_t n = 0;
	int64_t k = 0;

	memset(&r, 0, sizeof(r));
	strlcpy(r.id, "00000000000000a1", sizeof(r.id));
	strlcpy(r.app, "fn", sizeof(r.app));
	strlcpy(r.service, "echo", sizeof(r.service));
	strlcpy(r.trigger, "manual", sizeof(r.trigger));
	strlcpy(r.method, "POST", sizeof(r.method));
	strlcpy(r.path, "/", sizeof(r.path));
	strlcpy(r.phase, "Pending", sizeof(r.phase));
	r.created_at = 1000;
	r.event_bytes = 2;
	ok(store_run_get(s, r.id, &g) == 1, "%s: run get of unknown is 1", E);
	ok(store_run_put(s, &r) == 0, "%s: run put (Pending)", E);
	strlcpy(r.phase, "Succeeded", sizeof(r.phase));
	r.status = 200;
	r.body = (unsigned char *)"ok\n";
	r.body_len = 3;
	r.finished_at = 2000;
	ok(store_run_put(s, &r) == 0 && store_run_get(s, r.id, &g) == 0 &&
	    strcmp(g.phase, "Succeeded") == 0 && g.status == 200 &&
	    g.body_len == 3 && memcmp(g.body, "ok\n", 3) == 0 &&
	    g.created_at == 1000 && g.event_bytes == 2,
	    "%s: run put again: the phase, status and body change", E);
	store_run_clear(&g);
	r.body = NULL;
	r.body_len = 0;
	strlcpy(r.id, "00000000000000a2", sizeof(r.id));
	strlcpy(r.phase, "Running", sizeof(r.phase));
	r.created_at = 3000;
	ok(store_run_put(s, &r) == 0 &&
	    store_run_abandon(s, "Running", "gone", &k) == 0 && k == 1 &&
	    store_run_get(s, r.id, &g) == 0 &&
	    strcmp(g.phase, "Failed") == 0 && strcmp(g.reason, "gone") == 0,
	    "%s: run abandon fails what was left Running, with the reason",
	    E);
	store_run_clear(&g);
	ok(store_run_list(s, "fn", NULL, 0, &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].id, "00000000000000a1") == 0,
	    "%s: run list: oldest first", E);
	store_run_free(v, n);
	ok(store_run_list(s, NULL, NULL, 1, &v, &n) == 0 && n == 1 &&
	    strcmp(v[0].id, "00000000000000a2") == 0,
	    "%s: run list with a limit: the newest", E);
	store_run_free(v, n);
	ok(store_run_prune(s, 0, 1, &k) == 0 && k == 1 &&
	    store_run_get(s, "00000000000000a1", &g) == 1,
	    "%s: run retention by rows keeps the newest", E);
	ok(store_run_prune(s, 5000, 0, &k) == 0 && k == 1,
	    "%s: run retention by age", E);
}

/* A run row for a claim: app, path and id as given, Pending. */
static void
run_row(struct store_run *r, const char *app, const char *id,
    const char *path)
{
	memset(r, 0, sizeof(*r));
	(void)strlcpy(r->id, id, sizeof(r->id));
	(void)strlcpy(r->app, app, sizeof(r->app));
	(void)strlcpy(r->service, "echo", sizeof(r->service));
	(void)strlcpy(r->trigger, "job", sizeof(r->trigger));
	(void)strlcpy(r->method, "POST", sizeof(r->method));
	(void)strlcpy(r->path, path, sizeof(r->path));
	(void)strlcpy(r->phase, "Pending", sizeof(r->phase));
	r->created_at = store_now_ms();
}

/* "app/name:run_id:done_run_id app/name..." in list order. */
static void
join_jobs(struct store *s, const char *app, char *buf, size_t size)
{
	struct store_job *v;
	char one[200];
	size_t n, i;

	buf[0] = '\0';
	if (store_job_list(s, app, &v, &n) == -1) {
		(void)snprintf(buf, size, "error: %s", store_error(s));
		return;
	}
	for (i = 0; i < n; i++) {
		(void)snprintf(one, sizeof(one), "%s%s/%s:%jd:%jd",
		    i > 0 ? " " : "", v[i].app, v[i].name,
		    (intmax_t)v[i].run_id, (intmax_t)v[i].done_run_id);
		(void)strlcat(buf, one, size);
	}
	store_job_free(v, n);
}

/* "app/service/name:last_fire ..." in list order. */
static void
join_schedules(struct store *s, const char *app, char *buf, size_t size)
{
	struct store_schedule *v;
	char one[240];
	size_t n, i;

	buf[0] = '\0';
	if (store_schedule_list(s, app, &v, &n) == -1) {
		(void)snprintf(buf, size, "error: %s", store_error(s));
		return;
	}
	for (i = 0; i < n; i++) {
		(void)snprintf(one, sizeof(one), "%s%s/%s/%s:%jd",
		    i > 0 ? " " : "", v[i].app, v[i].service, v[i].name,
		    (intmax_t)v[i].last_fire);
		(void)strlcat(buf, one, size);
	}
	store_schedule_free(v, n);
}

/* Jobs: hk apply's rows, put, listed and pruned. */
static void
t_jobs(const char *E, struct store *s)
{
	char *const keep[] = { "hourly" };
	struct store_job j;
	char buf[512];
	int64_t k = -1, t0 = store_now_ms();

	ok(store_job_get(s, "ja", "nightly", &j) == 1,
	    "%s: job get of unknown is 1", E);
	ok(store_job_put(s, "ja", "nightly", "echo", SPEC_J1, 0) == 0 &&
	    store_job_put(s, "ja", "hourly", "echo", SPEC_J1, 3) == 0 &&
	    store_job_put(s, "jb", "x", "api", SPEC_J2, 7) == 0,
	    "%s: job put, three jobs of two apps", E);
	ok(store_job_get(s, "ja", "nightly", &j) == 0 &&
	    strcmp(j.service, "echo") == 0 && j.spec_json != NULL &&
	    strcmp(j.spec_json, SPEC_J1) == 0 && j.run_id == 0 &&
	    j.done_run_id == -1 && j.run[0] == '\0' && j.updated_at >= t0,
	    "%s: job get: as put, never run (done_run_id -1, no run)", E);
	store_job_clear(&j);
	join_jobs(s, "ja", buf, sizeof(buf));
	is(buf, "ja/hourly:3:-1 ja/nightly:0:-1", "%s: job list of an app, "
	    "by name", E);
	join_jobs(s, NULL, buf, sizeof(buf));
	is(buf, "ja/hourly:3:-1 ja/nightly:0:-1 jb/x:7:-1",
	    "%s: job list of every app, by app then name", E);
	join_jobs(s, "none", buf, sizeof(buf));
	is(buf, "", "%s: job list of an app without jobs", E);
	ok(store_job_put(s, "ja", "nightly", "echo", NULL, 1) == -1 &&
	    store_job_put(s, "ja", "nightly", "echo", SPEC_J1, -1) == -1 &&
	    store_job_put(s, "ja", "", "echo", SPEC_J1, 1) == -1,
	    "%s: job put refuses no spec, a negative run_id, no name", E);
	diag("%s", store_error(s));
	ok(store_job_prune(s, "ja", keep, 1, &k) == 0 && k == 1,
	    "%s: job prune removes the job not kept", E);
	join_jobs(s, NULL, buf, sizeof(buf));
	is(buf, "ja/hourly:3:-1 jb/x:7:-1", "%s: ... of that app only", E);
	ok(store_job_prune(s, "jb", NULL, 0, &k) == 0 && k == 1 &&
	    store_job_prune(s, "ja", keep, 1, &k) == 0 && k == 0 &&
	    store_job_prune(s, "ja", keep, 1, NULL) == 0,
	    "%s: job prune keeping none, keeping all", E);
	join_jobs(s, NULL, buf, sizeof(buf));
	is(buf, "ja/hourly:3:-1", "%s: job prune: what is left", E);
	ok(store_begin(s) == 0 &&
	    store_job_prune(s, "ja", NULL, 0, &k) == 0 && k == 1 &&
	    store_rollback(s) == 0 && store_job_get(s, "ja", "hourly",
	    &j) == 0, "%s: job prune in the caller's transaction", E);
	store_job_clear(&j);
}

/* Claims of a job: each run_id once, with its run row. */
static void
t_job_claims(const char *E, struct store *s)
{
	struct store_run r1, r2, g;
	struct store_job j;

	run_row(&r1, "jc", "00000000000000c1", "/night");
	run_row(&r2, "jc", "00000000000000c2", "/night");
	ok(store_job_put(s, "jc", "nightly", "echo", SPEC_J1, 0) == 0 &&
	    store_job_claim(s, "jc", "nightly", 0, &r1) == 0,
	    "%s: job claim of a new run_id is 0", E);
	ok(store_job_get(s, "jc", "nightly", &j) == 0 &&
	    j.done_run_id == 0 && strcmp(j.run, r1.id) == 0,
	    "%s: ... it sets done_run_id and run", E);
	store_job_clear(&j);
	ok(store_run_get(s, r1.id, &g) == 0 && strcmp(g.app, "jc") == 0 &&
	    strcmp(g.path, "/night") == 0 && strcmp(g.phase, "Pending") == 0,
	    "%s: ... and writes the run row", E);
	store_run_clear(&g);
	ok(store_job_claim(s, "jc", "nightly", 0, &r2) == 1 &&
	    store_run_get(s, r2.id, &g) == 1,
	    "%s: a second claim of the run_id is 1, and writes no run", E);
	ok(store_job_put(s, "jc", "nightly", "api", SPEC_J2, 1) == 0 &&
	    store_job_get(s, "jc", "nightly", &j) == 0 && j.run_id == 1 &&
	    j.done_run_id == 0 && strcmp(j.run, r1.id) == 0 &&
	    strcmp(j.service, "api") == 0 && strcmp(j.spec_json, SPEC_J2) == 0,
	    "%s: job put of a new run_id keeps done_run_id and run", E);
	store_job_clear(&j);
	ok(store_job_claim(s, "jc", "nightly", 0, &r2) == 1 &&
	    store_job_claim(s, "jc", "nightly", 2, &r2) == 1 &&
	    store_run_get(s, r2.id, &g) == 1,
	    "%s: a claim of a run_id other than the job's is 1", E);
	ok(store_job_claim(s, "jc", "none", 1, &r2) == 1,
	    "%s: a claim of an unknown job is 1", E);
	ok(store_job_claim(s, "jc", "nightly", 1, NULL) == -1,
	    "%s: a claim without a run row is refused", E);
	r2.phase[0] = '\0';
	ok(store_job_claim(s, "jc", "nightly", 1, &r2) == -1 &&
	    !store_busy(s), "%s: a claim with a bad run row fails", E);
	diag("%s", store_error(s));
	(void)strlcpy(r2.phase, "Pending", sizeof(r2.phase));
	ok(store_begin(s) == 0 &&
	    store_job_claim(s, "jc", "nightly", 1, &r2) == -1 &&
	    store_rollback(s) == 0,
	    "%s: a claim inside the caller's transaction is refused", E);
	ok(store_job_get(s, "jc", "nightly", &j) == 0 && j.done_run_id == 0 &&
	    store_run_get(s, r2.id, &g) == 1,
	    "%s: ... neither writes anything", E);
	store_job_clear(&j);
	ok(store_job_claim(s, "jc", "nightly", 1, &r2) == 0 &&
	    store_job_get(s, "jc", "nightly", &j) == 0 && j.done_run_id == 1 &&
	    strcmp(j.run, r2.id) == 0 && store_run_get(s, r2.id, &g) == 0,
	    "%s: the job's new run_id is claimed once", E);
	store_job_clear(&j);
	store_run_clear(&g);
	ok(store_job_prune(s, "jc", NULL, 0, NULL) == 0,
	    "%s: job prune of the claims' app", E);
}

/* Schedules: put keeps last_fire; a firing is claimed once. */
static void
t_schedules(const char *E, struct store *s)
{
	char *const ksvc[] = { "echo", "api" }, *const knames[] = { "tick",
	    "daily" };
	struct store_schedule *v = NULL;
	struct store_run r1, r2, g;
	char buf[512];
	size_t n = 0;
	int64_t k = -1;

	ok(store_schedule_put(s, "sa", "echo", "tick", SPEC_S1, 1000) == 0 &&
	    store_schedule_put(s, "sa", "echo", "daily", SPEC_S1, 1000) == 0 &&
	    store_schedule_put(s, "sa", "api", "tick", SPEC_S1, 1000) == 0 &&
	    store_schedule_put(s, "sb", "echo", "tick", SPEC_S1, 2000) == 0,
	    "%s: schedule put, four of two apps", E);
	join_schedules(s, "sa", buf, sizeof(buf));
	is(buf, "sa/api/tick:1000 sa/echo/daily:1000 sa/echo/tick:1000",
	    "%s: schedule list of an app, by service then name, last_fire "
	    "the time of the put", E);
	join_schedules(s, NULL, buf, sizeof(buf));
	is(buf, "sa/api/tick:1000 sa/echo/daily:1000 sa/echo/tick:1000 "
	    "sb/echo/tick:2000", "%s: schedule list of every app", E);
	ok(store_schedule_put(s, "sa", "echo", "tick", SPEC_S2, 5000) == 0 &&
	    store_schedule_list(s, "sa", &v, &n) == 0 && n == 3 &&
	    strcmp(v[2].name, "tick") == 0 && v[2].last_fire == 1000 &&
	    v[2].updated_at == 5000 && strcmp(v[2].spec_json, SPEC_S2) == 0 &&
	    v[0].updated_at == 1000,
	    "%s: schedule put again changes the spec, keeps last_fire", E);
	store_schedule_free(v, n);
	v = NULL;
	n = 0;
	ok(store_schedule_put(s, "sa", "echo", "tick", NULL, 1) == -1 &&
	    store_schedule_put(s, "sa", "", "tick", SPEC_S1, 1) == -1,
	    "%s: schedule put refuses no spec, no service", E);

	run_row(&r1, "sc", "00000000000000d1", "/tick");
	run_row(&r2, "sc", "00000000000000d2", "/tick");
	ok(store_schedule_claim(s, "sa", "echo", "tick", 2000, &r1) == 0 &&
	    store_run_get(s, r1.id, &g) == 0 && strcmp(g.app, "sc") == 0,
	    "%s: schedule claim of a later firing is 0, with its run", E);
	store_run_clear(&g);
	join_schedules(s, "sa", buf, sizeof(buf));
	is(buf, "sa/api/tick:1000 sa/echo/daily:1000 sa/echo/tick:2000",
	    "%s: ... last_fire is the firing", E);
	ok(store_schedule_claim(s, "sa", "echo", "tick", 2000, &r2) == 1 &&
	    store_schedule_claim(s, "sa", "echo", "tick", 1500, &r2) == 1 &&
	    store_run_get(s, r2.id, &g) == 1,
	    "%s: a claim of the same or an earlier firing is 1, no run", E);
	ok(store_schedule_claim(s, "sa", "echo", "tick", 3000, NULL) == 0 &&
	    store_schedule_claim(s, "sa", "echo", "tick", 3000, NULL) == 1,
	    "%s: a claim without a run row, once", E);
	ok(store_schedule_claim(s, "sa", "echo", "none", 9000, &r2) == 1 &&
	    store_run_get(s, r2.id, &g) == 1,
	    "%s: a claim of an unknown schedule is 1", E);
	r2.method[0] = '\0';
	ok(store_schedule_claim(s, "sa", "echo", "tick", 4000, &r2) == -1,
	    "%s: a claim with a bad run row fails", E);
	ok(store_begin(s) == 0 &&
	    store_schedule_claim(s, "sa", "echo", "tick", 4000, NULL) == -1 &&
	    store_rollback(s) == 0,
	    "%s: a claim inside the caller's transaction is refused", E);
	join_schedules(s, "sa", buf, sizeof(buf));
	is(buf, "sa/api/tick:1000 sa/echo/daily:1000 sa/echo/tick:3000",
	    "%s: ... neither moves last_fire", E);

	/* pairs: api/tick is not kept by (echo, tick) and (api, daily) */
	ok(store_schedule_prune(s, "sa", ksvc, knames, 2, &k) == 0 && k == 2,
	    "%s: schedule prune keeps the pairs named", E);
	join_schedules(s, NULL, buf, sizeof(buf));
	is(buf, "sa/echo/tick:3000 sb/echo/tick:2000",
	    "%s: ... of that app only", E);
	ok(store_schedule_prune(s, "sb", NULL, NULL, 0, &k) == 0 && k == 1 &&
	    store_schedule_prune(s, "sa", ksvc, knames, 2, &k) == 0 &&
	    k == 0 && store_schedule_prune(s, "sa", ksvc, NULL, 2,
	    &k) == -1, "%s: schedule prune keeping none, all; no names", E);
	ok(store_schedule_prune(s, "sa", NULL, NULL, 0, NULL) == 0 &&
	    store_schedule_list(s, NULL, &v, &n) == 0 && n == 0,
	    "%s: schedule prune: none left", E);
	store_schedule_free(v, n);
}

/*
 * One of two processes claiming, at once, the same NCLAIMS jobs (run_id
 * 1 each) and the firings 1 .. NCLAIMS of one schedule, in the same
 * order: each claim is to be won by one process, and its run row
 * written by that one only (the path names the job or firing).
 */
static int
child_claimer(const char *url, int id)
{
	char err[STORE_ERR_LEN], name[16], rid[STORE_RUN_ID_MAX + 1];
	char path[32];
	struct store_run r;
	struct store *s;
	int i, tries = 0;

	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		fprintf(stderr, "# claimer %d: %s\n", id, err);
		return 1;
	}
	for (i = 0; i < NCLAIMS; i++) {
		(void)snprintf(name, sizeof(name), "j%d", i);
		(void)snprintf(rid, sizeof(rid), "01%02x%012x", id, i);
		(void)snprintf(path, sizeof(path), "/%s", name);
		run_row(&r, "jrace", rid, path);
		while (store_job_claim(s, "jrace", name, 1, &r) == -1)
			if (!store_busy(s) || ++tries > MAXTRIES)
				goto fail;
		(void)snprintf(rid, sizeof(rid), "02%02x%012x", id, i);
		(void)snprintf(path, sizeof(path), "/f%d", i + 1);
		run_row(&r, "jrace", rid, path);
		while (store_schedule_claim(s, "jrace", "echo", "tick", i + 1,
		    &r) == -1)
			if (!store_busy(s) || ++tries > MAXTRIES)
				goto fail;
	}
	store_close(s);
	return 0;
fail:
	fprintf(stderr, "# claimer %d: %s\n", id, store_error(s));
	store_close(s);
	return 1;
}

static void
t_claim_race(const char *E, const char *url)
{
	char err[STORE_ERR_LEN], name[16];
	struct store *s;
	int i, r = 0;

	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "%s: claim race: open: %s", E, err);
		return;
	}
	for (i = 0; r == 0 && i < NCLAIMS; i++) {
		(void)snprintf(name, sizeof(name), "j%d", i);
		r = store_job_put(s, "jrace", name, "echo", SPEC_J1, 1);
	}
	if (r == 0)
		r = store_schedule_put(s, "jrace", "echo", "tick", SPEC_S1, 0);
	if (!ok(r == 0, "%s: claim race: %d jobs, a schedule", E, NCLAIMS))
		diag("%s", store_error(s));
	store_close(s);
	isint(fork_race(2, child_claimer, url), 2,
	    "%s: two claimers in two processes finish", E);
	isint(sql_count(url, "SELECT COUNT(*) FROM runs WHERE app = 'jrace' "
	    "AND path NOT LIKE '/f%'"), NCLAIMS,
	    "%s: each job's run_id was claimed once: a run each", E);
	isint(sql_count(url, "SELECT COUNT(DISTINCT path) FROM runs WHERE "
	    "app = 'jrace' AND path NOT LIKE '/f%'"), NCLAIMS,
	    "%s: ... of a different job each", E);
	isint(sql_count(url, "SELECT COUNT(*) FROM jobs WHERE app = 'jrace' "
	    "AND done_run_id = 1 AND run IN (SELECT id FROM runs)"), NCLAIMS,
	    "%s: ... which the job names", E);
	isint(sql_count(url, "SELECT COUNT(*) FROM runs WHERE app = 'jrace' "
	    "AND path LIKE '/f%'"), NCLAIMS,
	    "%s: each firing was claimed once: a run each", E);
	isint(sql_count(url, "SELECT COUNT(DISTINCT path) FROM runs WHERE "
	    "app = 'jrace' AND path LIKE '/f%'"), NCLAIMS,
	    "%s: ... of a different firing each", E);
	isint(sql_count(url, "SELECT last_fire FROM schedules WHERE "
	    "app = 'jrace'"), NCLAIMS, "%s: last_fire is the last firing", E);
}

/*
 * A store at version 7 (the one the suite used, its migration 8 undone
 * behind the API's back: migration 8 only adds its two tables), opened
 * again: migration 8 runs, and keeps the runs.
 */
static void
t_migrate_v7(const char *E, const char *url)
{
	char err[STORE_ERR_LEN];
	struct store_job j;
	struct store_run r;
	struct store *s;
	int64_t runs, ver = -1;

	runs = sql_count(url, "SELECT COUNT(*) FROM runs");
	ok(runs > 0 && sql_exec(url, "DROP TABLE jobs; DROP TABLE schedules; "
	    "DROP TABLE vetted; "
	    "DELETE FROM schema_migrations WHERE version >= 8") == 0 &&
	    sql_count(url, "SELECT MAX(version) FROM schema_migrations") == 7,
	    "%s: a store at version 7, with runs", E);
	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "%s: migrate from version 7: %s", E, err);
		return;
	}
	if (store_schema_version(s, &ver) == -1)
		ver = -1;
	ok(ver >= 8 && sql_count(url, "SELECT COUNT(*) FROM "
	    "schema_migrations WHERE version = 8") == 1,
	    "%s: migrated from version 7 to %jd", E, (intmax_t)ver);
	isint(sql_count(url, "SELECT COUNT(*) FROM runs"), runs,
	    "%s: the runs are kept", E);
	run_row(&r, "mig", "00000000000000e1", "/m");
	ok(store_job_put(s, "mig", "m", "echo", SPEC_J1, 4) == 0 &&
	    store_job_claim(s, "mig", "m", 4, &r) == 0 &&
	    store_job_get(s, "mig", "m", &j) == 0 && j.done_run_id == 4 &&
	    store_schedule_put(s, "mig", "echo", "t", SPEC_S1, 1) == 0 &&
	    store_schedule_claim(s, "mig", "echo", "t", 2, NULL) == 0,
	    "%s: jobs and schedules after the migration", E);
	store_job_clear(&j);
	store_close(s);
}

/* The store keeps bytes it is given; sealing is lib/secret's. */
static void
t_secrets(const char *E, struct store *s)
{
	static const unsigned char b1[] = { '1', 0, 0xff, 'x' };
	static const unsigned char b2[] = { '1', 7, 7 };
	struct store_secret *v = NULL;
	unsigned char *d = NULL;
	size_t len = 0, n = 0;
	int64_t created;

	ok(store_secret_get(s, "sec", "A", &d, &len) == 1 && d == NULL,
	    "%s: secret get of unknown is 1", E);
	ok(store_secret_put(s, "sec", "B", b1, sizeof(b1), "bb") == 0 &&
	    store_secret_put(s, "sec", "A", b1, sizeof(b1), "aa") == 0 &&
	    store_secret_put(s, "other", "A", b2, sizeof(b2), "oo") == 0,
	    "%s: secret put", E);
	ok(store_secret_get(s, "sec", "A", &d, &len) == 0 &&
	    len == sizeof(b1) && memcmp(d, b1, len) == 0,
	    "%s: secret get: the bytes as put", E);
	free(d);
	ok(store_secret_list(s, "sec", &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].name, "A") == 0 && strcmp(v[0].digest, "aa") == 0 &&
	    strcmp(v[1].name, "B") == 0 && v[0].created_at > 0,
	    "%s: secret list: the app's, by name, with digests", E);
	created = n > 0 ? v[0].created_at : 0;
	free(v);
	ok(store_secret_put(s, "sec", "A", b2, sizeof(b2), "a2") == 0 &&
	    store_secret_list(s, "sec", &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].digest, "a2") == 0 && v[0].created_at == created,
	    "%s: secret replaced: new digest, created_at kept", E);
	free(v);
	ok(store_secret_delete(s, "sec", "A") == 0 &&
	    store_secret_delete(s, "sec", "A") == 1 &&
	    store_secret_get(s, "other", "A", &d, &len) == 0,
	    "%s: secret delete: 0, then 1; other apps' stay", E);
	free(d);
}

/* Code rows: kept while a spec names them, pruned once none does. */
static void
t_code(const char *E, struct store *s)
{
	static const char h1[] = "1111111111111111111111111111111111111111"
	    "111111111111111111111111";
	static const char h2[] = "2222222222222222222222222222222222222222"
	    "222222222222222222222222";
	char spec1[160], spec2[160], env2[200], *m = NULL;
	unsigned char *d = NULL;
	size_t len;
	int64_t n = -1;

	snprintf(spec1, sizeof(spec1), "{\"code_hash\":\"%s\",\"x\":1}", h1);
	snprintf(spec2, sizeof(spec2), "{\"code_hash\":\"%s\"}", h2);
	/* h2 inside a string value: escaped, names nothing */
	snprintf(env2, sizeof(env2), "{\"env\":\"\\\"code_hash\\\":\\\"%s\\\"\"}",
	    h2);
	ok(store_code_put(s, h1, "one", 3) == 0 &&
	    store_code_put(s, h2, "two", 3) == 0 &&
	    store_app_put(s, "codeapp", "/c") == 0 &&
	    store_service_put(s, "codeapp", "a", spec1, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "codeapp", "b", spec2, 0, NULL, NULL) == 0,
	    "%s: code put, two specs naming it", E);
	ok(store_code_prune(s, &n) == 0 && n == 0,
	    "%s: code prune keeps what specs name", E);
	ok(store_vetted_get(s, h2, &m) == 1 && m == NULL &&
	    store_vetted_put(s, h1, "m-old") == 0 &&
	    store_vetted_put(s, h1, "m1") == 0 &&
	    store_vetted_put(s, h2, "m2") == 0,
	    "%s: vetted: none, then put twice", E);
	ok(store_vetted_get(s, h1, &m) == 0 && m != NULL &&
	    strcmp(m, "m1") == 0, "%s: vetted get: the last model", E);
	free(m);
	m = NULL;
	ok(store_vetted_put(s, "", "m") == -1 &&
	    store_vetted_get(s, "", &m) == -1,
	    "%s: vetted of an empty hash: an error", E);
	ok(store_begin(s) == 0 &&
	    store_service_put(s, "codeapp", "b", env2, 0, NULL, NULL) == 0 &&
	    store_code_prune(s, &n) == 0 && store_commit(s) == 0 && n == 1,
	    "%s: in a transaction, a hash no spec names goes", E);
	ok(store_code_get(s, h2, &d, &len) == 1 && d == NULL,
	    "%s: the pruned hash is not in the store", E);
	ok(store_vetted_get(s, h2, &m) == 1 && m == NULL,
	    "%s: ... nor its verdict", E);
	ok(store_vetted_get(s, h1, &m) == 0, "%s: the kept code's stays", E);
	free(m);
	ok(store_code_get(s, h1, &d, &len) == 0 && len == 3 &&
	    memcmp(d, "one", 3) == 0, "%s: the other one stays", E);
	free(d);
	ok(store_service_prune(s, "codeapp", NULL, 0, NULL, NULL) == 0 &&
	    store_code_prune(s, &n) == 0 && n == 1 &&
	    store_code_get(s, h1, &d, &len) == 1,
	    "%s: its service removed, its code goes too", E);
}

static void
t_tx(const char *E, struct store *s)
{
	struct store_service sv;
	struct store_event ev, *evs;
	char *v = NULL, before[512], after[512];
	size_t n = 9;

	join_services(s, before, sizeof(before));
	ok(store_begin(s) == 0, "%s: begin", E);
	ok(store_begin(s) == -1 && !store_busy(s), "%s: no nested begin", E);
	memset(&ev, 0, sizeof(ev));
	(void)strlcpy(ev.kind, "TxTest", sizeof(ev.kind));
	ok(store_app_put(s, "txapp", "/t") == 0 &&
	    store_service_put(s, "txapp", "tmp", SPEC_DB, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "fn", "py", SPEC_PY1, 1, NULL, NULL) == 0 &&
	    store_setting_put(s, "greeting", "inside") == 0 &&
	    store_event_add(s, &ev) == 0, "%s: writes in a transaction", E);
	ok(store_rollback(s) == 0, "%s: rollback", E);
	join_services(s, after, sizeof(after));
	is(after, before, "%s: rollback leaves the services as they were", E);
	ok(store_service_get(s, "fn", "py", &sv) == 0 && sv.revision == 2,
	    "%s: rollback leaves the revision as it was", E);
	store_service_clear(&sv);
	ok(store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    *v == '\0', "%s: rollback leaves the settings as they were", E);
	free(v);
	ok(store_event_list(s, NULL, NULL, "TxTest", 0, 0, &evs, &n) == 0 &&
	    n == 0, "%s: rollback leaves the events as they were", E);
	store_event_free(evs, n);

	ok(store_begin(s) == 0 &&
	    store_setting_put(s, "greeting", "committed") == 0 &&
	    store_commit(s) == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    strcmp(v, "committed") == 0, "%s: commit", E);
	free(v);
	ok(store_commit(s) == -1, "%s: commit without begin fails", E);
	ok(store_rollback(s) == 0, "%s: rollback without begin is a no-op",
	    E);

	ok(store_begin(s) == 0 &&
	    store_service_put(s, "nope", "x", SPEC_DB, 0, NULL, NULL) == -1 &&
	    store_rollback(s) == 0 &&
	    store_setting_get(s, "greeting", &v) == 0,
	    "%s: an error in a transaction, rolled back, leaves a usable store",
	    E);
	free(v);
}

static void
t_busy(const char *E, struct store *s, const char *url)
{
	char err[STORE_ERR_LEN];
	struct store *s2;
	int64_t t0, dt;
	int r;

	if ((s2 = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "%s: second store: %s", E, err);
		return;
	}
	ok(store_begin(s) == 0, "%s: first writer begins", E);
	t0 = mono_ms();
	r = store_begin(s2);
	dt = mono_ms() - t0;
	ok(r == -1 && store_busy(s2),
	    "%s: a second writer is busy while the first holds the lock", E);
	diag("%s (after %jd ms)", store_error(s2), (intmax_t)dt);
	ok(dt >= 4000, "%s: ... after waiting for the busy timeout", E);
	ok(store_rollback(s) == 0 && store_begin(s2) == 0 &&
	    store_commit(s2) == 0, "%s: the lock is free once released", E);
	store_close(s2);
}

static void
t_race(const char *E, const char *url)
{
	char err[STORE_ERR_LEN], want[32], *v = NULL;
	struct store_service sv;
	struct store *s;
	int64_t rev = 0;

	if ((s = store_open(url, err, sizeof(err))) == NULL ||
	    store_app_put(s, "race", "/race") == -1 ||
	    store_service_put(s, "race", "svc", "{}", 0, &rev, NULL) == -1 ||
	    store_setting_put(s, "counter", "0") == -1) {
		ok(0, "%s: race setup: %s", E, s ? store_error(s) : err);
		store_close(s);
		return;
	}
	store_close(s);
	isint(fork_race(2, child_writer, url), 2,
	    "%s: two writers in two processes finish", E);
	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "%s: reopen: %s", E, err);
		return;
	}
	ok(store_service_get(s, "race", "svc", &sv) == 0,
	    "%s: race: service get", E);
	isint(sv.revision, 1 + 2 * NWRITES,
	    "%s: concurrent puts lose no revision", E);
	store_service_clear(&sv);
	(void)snprintf(want, sizeof(want), "%d", 2 * NWRITES);
	ok(store_setting_get(s, "counter", &v) == 0, "%s: race: counter", E);
	is(v, want, "%s: concurrent read-modify-writes lose no update", E);
	free(v);
	store_close(s);
}

static void
t_urls(void)
{
	static const struct {
		const char	*url;
		const char	*want;
	} bad[] = {
		{ "mysql://u:secret@h/db", "\"mysql\" not supported" },
		{ "/var/lib/hakopod/state.db", "no scheme" },
		{ "", "no scheme" },
		{ "sqlite:/x.db", "no scheme" },
		{ "sqlite://", "no path" },
	};
	char err[STORE_ERR_LEN];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ok(store_open(bad[i].url, err, sizeof(err)) == NULL &&
		    strstr(err, bad[i].want) != NULL &&
		    strstr(err, "secret") == NULL,
		    "bad URL \"%s\" is refused: %s", bad[i].url, err);
	}
	ok(strstr(err, "sqlite://") != NULL && strstr(err, "postgres") == NULL,
	    "the sqlite message names its own form");
	errno = 0;
	ok(store_open("ftp://x", err, sizeof(err)) == NULL && errno == EINVAL &&
	    strstr(err, "sqlite://PATH") != NULL &&
	    strstr(err, "postgres://") != NULL &&
	    strstr(err, "postgresql://") != NULL,
	    "a bad scheme is EINVAL and names the accepted ones");
}

/*
 * PostgreSQL only: a connection the server ends (a restart) is made again
 * for a call outside a transaction, and for the first of one; inside a
 * transaction its loss is a busy failure, and the next call reconnects.
 */
static int
pg_kill_store(PGconn *admin, const char *db)
{
	const char *params[] = { db };
	PGresult *res;
	int r;

	res = PQexecParams(admin, "SELECT pg_terminate_backend(pid) "
	    "FROM pg_stat_activity WHERE datname = $1 AND "
	    "application_name = 'hk'", 1, NULL, params, NULL, NULL, 0);
	r = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	PQclear(res);
	return r;
}

static void
t_pg_lost(PGconn *admin, const char *db, const char *url)
{
	char err[STORE_ERR_LEN], *v = NULL;
	struct store *s;
	int r;

	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "postgres: open: %s", err);
		return;
	}
	ok(pg_kill_store(admin, db),
	    "postgres: the server ends the store's connection");
	r = store_setting_get(s, "greeting", &v);
	ok(r == 0 && v != NULL && strcmp(v, "committed") == 0,
	    "postgres: a call on the lost connection is made again on a new "
	    "one");
	if (r == -1)
		diag("%s", store_error(s));
	free(v);
	v = NULL;
	ok(pg_kill_store(admin, db), "postgres: ended again");
	ok(store_begin(s) == 0 && store_setting_put(s, "greeting",
	    "again") == 0 && store_commit(s) == 0,
	    "postgres: so is the first call of a transaction, and it commits");
	ok(store_begin(s) == 0, "postgres: a transaction begins");
	ok(pg_kill_store(admin, db), "postgres: its connection is ended");
	r = store_setting_put(s, "greeting", "lost");
	ok(r == -1 && store_busy(s),
	    "postgres: a call inside it is a busy failure, not made again");
	diag("%s", store_error(s));
	(void)store_rollback(s);
	ok(store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    strcmp(v, "again") == 0,
	    "postgres: the next call reconnects; the lost one wrote nothing");
	free(v);
	store_close(s);
}

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	t_services(E, s);
	t_instances(E, s);
	t_prune(E, s);
	t_events(E, s);
	t_requests(E, s);
	t_retention(E, s);
	t_batch_requests(E, s, url);
	t_batch_events(E, s, url);
	t_batch_sizes(E, s);
	t_request_log(E, s, url);
	t_settings(E, s);
	t_secrets(E, s);
	t_runs(E, s);
	t_jobs(E, s);
	t_job_claims(E, s);
	t_schedules(E, s);
	t_code(E, s);
	t_tx(E, s);
	t_busy(E, s, url);
}

/* Then, the store closed: races, a migration. */
static void
after(const char *E, const char *url)
{
	t_race(E, url);
	t_claim_race(E, url);
	t_migrate_v7(E, url);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store",
		.open = t_open,
		.checks = checks,
		.after = after,
		.sqlite = t_migrate_requests,
		.pg = t_pg_lost,
	};
	char url[URL_MAX];

	ok(pg_url_db("postgres:///postgres?host=/tmp/s&port=5439", "x", url,
	    sizeof(url)) == 0 &&
	    strcmp(url, "postgres:///x?host=/tmp/s&port=5439") == 0 &&
	    pg_url_db("postgresql://u@h:5/d", "x", url, sizeof(url)) == 0 &&
	    strcmp(url, "postgresql://u@h:5/x") == 0 &&
	    pg_url_db("postgres://h?sslmode=disable", "x", url,
	    sizeof(url)) == 0 &&
	    strcmp(url, "postgres://h/x?sslmode=disable") == 0,
	    "the test rewrites a URL's database name");
	t_urls();
	return store_suite_main(&t);
}
