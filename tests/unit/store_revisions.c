/*
 * store_revisions.c - the revisions of services in the state store
 * (lib/store_revisions.c), on both engines (store_suite.h): recorded
 * pending, gated once passed for good, the newest passed one found,
 * retention by count that keeps the last passed one and its code, rows
 * gone with their service, and migration 10's seed from the services.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "3333333333333333333333333333333333333333333333333333333333333333"

static void	 t_gate(const char *, struct store *);
static void	 t_prune(const char *, struct store *);
static int	 put_rev(struct store *, const char *, const char *);
static int	 sql_run(const char *, const char *);
static void	 checks(const char *, struct store *, const char *);
static void	 after(const char *, const char *);

/* A service's spec written and its revision recorded, as hk apply does. */
static int
put_rev(struct store *s, const char *spec, const char *hash)
{
	int64_t rev = 0;
	int changed = 0;

	if (store_service_put(s, "rapp", "fn", spec, 1, &rev, &changed) == -1)
		return -1;
	return changed ? store_revision_add(s, "rapp", "fn", rev, spec,
	    hash) : 0;
}

static void
t_gate(const char *E, struct store *s)
{
	struct store_revision r, *v = NULL;
	size_t n = 0;

	ok(store_app_put(s, "rapp", "/r") == 0 &&
	    put_rev(s, "{\"v\":1}", NULL) == 0 &&
	    put_rev(s, "{\"v\":2}", H2) == 0,
	    "%s: two revisions recorded", E);
	ok(store_revision_get(s, "rapp", "fn", 2, &r) == 0 &&
	    strcmp(r.gate, "pending") == 0 && r.gate_at == 0 &&
	    strcmp(r.code_hash, H2) == 0 && strcmp(r.spec_json,
	    "{\"v\":2}") == 0 && r.applied_at > 0,
	    "%s: a new revision is pending, with its spec and code", E);
	store_revision_clear(&r);
	ok(store_revision_passed(s, "rapp", "fn", INT64_MAX, &r) == 1,
	    "%s: none passed yet", E);
	ok(store_revision_gate(s, "rapp", "fn", 1, "passed", NULL) == 0 &&
	    store_revision_gate(s, "rapp", "fn", 2, "failed",
	    "exit status 1: boom") == 0,
	    "%s: one passed, one failed", E);
	ok(store_revision_gate(s, "rapp", "fn", 1, "failed", "late") == 0 &&
	    store_revision_get(s, "rapp", "fn", 1, &r) == 0 &&
	    strcmp(r.gate, "passed") == 0 && r.reason[0] == '\0',
	    "%s: a passed revision stays passed", E);
	store_revision_clear(&r);
	ok(store_revision_gate(s, "rapp", "fn", 9, "passed", NULL) == 1 &&
	    store_revision_gate(s, "rapp", "fn", 1, "maybe", NULL) == -1,
	    "%s: gate of no revision is 1, of no state an error", E);
	ok(store_revision_passed(s, "rapp", "fn", INT64_MAX, &r) == 0 &&
	    r.revision == 1 && r.code_hash[0] == '\0',
	    "%s: the newest passed is revision 1", E);
	store_revision_clear(&r);
	ok(store_revision_passed(s, "rapp", "fn", 1, &r) == 1,
	    "%s: ... and none below it", E);
	ok(store_revision_list(s, "rapp", "fn", &v, &n) == 0 && n == 2 &&
	    v[0].revision == 1 && v[1].revision == 2 &&
	    strcmp(v[1].gate, "failed") == 0 &&
	    strcmp(v[1].reason, "exit status 1: boom") == 0 &&
	    v[1].gate_at > 0, "%s: list, oldest first, with the reason", E);
	store_revision_free(v, n);
}

/* keep 2: 3 and 4 stay, 1 passed stays, 2 goes, with its code. */
static void
t_prune(const char *E, struct store *s)
{
	struct store_revision *v = NULL;
	unsigned char *d = NULL;
	size_t n = 0, len;
	int64_t gone = -1;

	ok(store_code_put(s, H2, "two", 3) == 0 &&
	    store_code_put(s, H3, "three", 5) == 0 &&
	    put_rev(s, "{\"v\":3}", H3) == 0 &&
	    put_rev(s, "{\"v\":4}", NULL) == 0,
	    "%s: revisions 3 and 4, code of 2 and 3", E);
	ok(store_code_prune(s, &gone) == 0 && gone == 0,
	    "%s: code an older revision names is kept", E);
	ok(store_revision_prune(s, 2, &gone) == 0 && gone == 1 &&
	    store_revision_list(s, "rapp", "fn", &v, &n) == 0 && n == 3 &&
	    v[0].revision == 1 && v[1].revision == 3 && v[2].revision == 4,
	    "%s: prune keeps the last 2 and the last passed", E);
	store_revision_free(v, n);
	ok(store_code_prune(s, &gone) == 0 && gone == 1 &&
	    store_code_get(s, H2, &d, &len) == 1 &&
	    store_code_get(s, H3, &d, &len) == 0,
	    "%s: the code of the pruned revision goes, the others' stay", E);
	free(d);
	ok(store_revision_prune(s, 0, NULL) == -1,
	    "%s: keep 0 is refused", E);
	ok(store_service_prune(s, "rapp", NULL, 0, NULL, NULL) == 0 &&
	    store_revision_list(s, "rapp", "fn", &v, &n) == 0 && n == 0,
	    "%s: the revisions go with their service", E);
	store_revision_free(v, n);
}

/* Runs statements on the store at url, outside the store's API. */
static int
sql_run(const char *url, const char *sql)
{
	sqlite3 *db;
	PGconn *c;
	PGresult *res;
	int r = -1;

	if (strncmp(url, "sqlite://", 9) == 0) {
		if (sqlite3_open_v2(url + 9, &db, SQLITE_OPEN_READWRITE,
		    NULL) == SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL,
		    NULL) == SQLITE_OK)
			r = 0;
		else
			diag("%s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return r;
	}
	c = PQconnectdb(url);
	if (PQstatus(c) == CONNECTION_OK) {
		res = PQexec(c, sql);
		if (PQresultStatus(res) == PGRES_COMMAND_OK)
			r = 0;
		else
			diag("%s", PQerrorMessage(c));
		PQclear(res);
	}
	PQfinish(c);
	return r;
}

/*
 * Migration 10 again, over services as they were before it: the current
 * revision of each, passed where hk-scale's gate setting says so, or
 * for an ordinary service, with the code hash its spec names.
 */
static void
after(const char *E, const char *url)
{
	static const char undo[] =
	    "DROP TABLE revisions;"
	    "DROP TABLE instances;"	/* migration 11 undone */
	    "CREATE TABLE instances (app TEXT NOT NULL, service TEXT NOT "
	    "NULL, revision BIGINT NOT NULL, state TEXT NOT NULL, endpoint "
	    "TEXT NOT NULL DEFAULT '', node TEXT NOT NULL DEFAULT '', pid "
	    "BIGINT NOT NULL DEFAULT 0, pid_start BIGINT NOT NULL DEFAULT "
	    "0, started_at BIGINT NOT NULL DEFAULT 0, ready_at BIGINT NOT "
	    "NULL DEFAULT 0, updated_at BIGINT NOT NULL, PRIMARY KEY (app, "
	    "service));"
	    "DELETE FROM schema_migrations WHERE version >= 10;"
	    "INSERT INTO apps VALUES ('seed', '/s', 1);"
	    "INSERT INTO services (app, name, spec, revision, serverless, "
	    "created_at, updated_at) VALUES "
	    "('seed', 'fn', '{\"code_hash\":\"" H1 "\"}', 3, 1, 5, 7),"
	    "('seed', 'gated', '{}', 2, 1, 5, 8),"
	    "('seed', 'db', '{}', 4, 0, 5, 9);"
	    "INSERT INTO settings VALUES ('hk-scale.gate.seed/fn', '2'),"
	    "('hk-scale.gate.seed/gated', '2');";
	char err[STORE_ERR_LEN];
	struct store *s;
	struct store_revision *v = NULL;
	size_t n = 0;

	if (!ok(sql_run(url, undo) == 0, "%s: a store as before migration 10",
	    E))
		return;
	if ((s = store_open(url, err, sizeof(err))) == NULL) {
		ok(0, "%s: migration 10: %s", E, err);
		return;
	}
	ok(store_revision_list(s, "seed", "fn", &v, &n) == 0 && n == 1 &&
	    v[0].revision == 3 && strcmp(v[0].gate, "pending") == 0 &&
	    strcmp(v[0].code_hash, H1) == 0 && v[0].applied_at == 7,
	    "%s: seeded: a revision past its gate setting is pending", E);
	store_revision_free(v, n);
	ok(store_revision_list(s, "seed", "gated", &v, &n) == 0 && n == 1 &&
	    strcmp(v[0].gate, "passed") == 0 && v[0].gate_at == 8,
	    "%s: seeded: the revision the gate setting names passed", E);
	store_revision_free(v, n);
	ok(store_revision_list(s, "seed", "db", &v, &n) == 0 && n == 1 &&
	    v[0].revision == 4 && strcmp(v[0].gate, "passed") == 0,
	    "%s: seeded: an ordinary service's revision passed", E);
	store_revision_free(v, n);
	store_close(s);
}

static void
checks(const char *E, struct store *s, const char *url)
{
	(void)url;
	t_gate(E, s);
	t_prune(E, s);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_revisions",
		.checks = checks,
		.after = after,
	};

	return store_suite_main(&t);
}
