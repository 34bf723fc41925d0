/*
 * store.c - the state store itself (lib/store.c), on both engines
 * (store_suite.h): URLs, opening and migrating, transactions, the write
 * lock's busy timeout, and (PostgreSQL) a connection the server ends.
 * The tables' checks are in store_<family>.c, a test per file of lib/.
 *
 * Each engine also runs two races between processes: three processes
 * opening (and migrating) a fresh store at once, and two writers doing
 * NWRITES service updates and NWRITES read-modify-write increments each.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

#define NWRITES		200
#define NOPENERS	3

static int	 child_open(const char *, int);
static int	 child_writer(const char *, int);
static int	 increment(struct store *);
static int64_t	 mono_ms(void);
static struct store *t_open(const char *, enum store_engine, const char *,
		    const char *);
static int	 tx_setup(struct store *);
static void	 t_tx(const char *, struct store *);
static void	 t_busy(const char *, struct store *, const char *);
static void	 t_race(const char *, const char *);
static void	 t_urls(void);
static int	 pg_kill_store(PGconn *, const char *);
static void	 t_pg_lost(PGconn *, const char *, const char *);
static void	 checks(const char *, struct store *, const char *);

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

/*
 * What t_tx() finds in the store, as the tests of services and settings
 * left it when one test ran them all: fn/py at revision 2, the setting
 * greeting empty.
 */
static int
tx_setup(struct store *s)
{
	if (store_app_put(s, "fn", "/srv/fn.toml") == -1 ||
	    store_service_put(s, "fn", "py", SPEC_PY1, 1, NULL, NULL) == -1 ||
	    store_service_put(s, "fn", "py", SPEC_PY2, 1, NULL, NULL) == -1 ||
	    store_setting_put(s, "greeting", "") == -1)
		return -1;
	return 0;
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
	if (tx_setup(s) == -1) {
		ok(0, "%s: what the transactions find: %s", E, store_error(s));
		return;
	}
	t_tx(E, s);
	t_busy(E, s, url);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store",
		.open = t_open,
		.checks = checks,
		.after = t_race,
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
