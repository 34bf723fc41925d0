/*
 * store_runs.c - runs, jobs and schedules in the state store
 * (lib/store_runs.c), on both engines (store_suite.h): a run rewritten at
 * each phase, jobs and schedules put, listed and pruned, claims won once,
 * also by one of two processes claiming at once, and migration 8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

#define NCLAIMS		50		/* t_claim_race() */

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
static void	 after(const char *, const char *);
static void	 checks(const char *, struct store *, const char *);

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
	    "DROP TABLE vetted; DROP TABLE revisions; DROP TABLE instances; "
	    "CREATE TABLE instances (app TEXT NOT NULL, service TEXT NOT "
	    "NULL, revision BIGINT NOT NULL, state TEXT NOT NULL, endpoint "
	    "TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', pid "
	    "BIGINT NOT NULL DEFAULT 0, pid_start BIGINT NOT NULL DEFAULT "
	    "0, started_at BIGINT NOT NULL DEFAULT 0, ready_at BIGINT NOT "
	    "NULL DEFAULT 0, updated_at BIGINT NOT NULL, PRIMARY KEY (app, "
	    "service)); "
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

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	(void)url;
	t_runs(E, s);
	t_jobs(E, s);
	t_job_claims(E, s);
	t_schedules(E, s);
}

/* Then, the store closed: a race of two processes, a migration. */
static void
after(const char *E, const char *url)
{
	t_claim_race(E, url);
	t_migrate_v7(E, url);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_runs",
		.checks = checks,
		.after = after,
	};

	return store_suite_main(&t);
}
