/*
 * store_suite.h - what the unit tests of the state store share: each
 * runs its checks on SQLite (a temp file) and on PostgreSQL (HK_TEST_PG,
 * as set by "scripts/pg exec"; each test creates its own database
 * hk_store_PID and drops it).  Without HK_TEST_PG the PostgreSQL half
 * skips, except under CI=true where that is a failure.
 *
 * A test fills a struct store_suite and returns store_suite_main(): its
 * checks run on a fresh store of each engine, and each engine's count is
 * told on stderr, so that a run shows both engines ran.  Header-only, as
 * tap.h, whose counters it shares: each test is one .c file linked with
 * libhk.
 */
#ifndef HK_STORE_SUITE_H
#define HK_STORE_SUITE_H

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store.h"
#include "tap.h"

#define MAXTRIES	100000
#define URL_MAX		1024

#define SPEC_PY1	"{\"command\":[\"python3\",\"hello.py\"],\"idle\":300}"
#define SPEC_PY2	"{\"command\":[\"python3\",\"hello.py\"],\"idle\":600}"
#define SPEC_DB		"{\"command\":[\"sleep\",\"1000\"]}"
#define SPEC_J1		"{\"event\":\"{}\",\"method\":\"POST\"}"
#define SPEC_J2		"{\"method\":\"GET\",\"path\":\"/x\"}"
#define SPEC_S1		"{\"cron\":\"*/5 * * * *\"}"
#define SPEC_S2		"{\"cron\":\"0 * * * *\",\"timezone\":\"UTC\"}"

/*
 * One test: its checks, run by store_suite_main() on a fresh store of
 * each engine, E ("sqlite" or "postgres") naming it in every check.
 */
struct store_suite {
	const char	*name;		/* "store_runs": the summary's */
	/* Opens the store (the checks of opening); NULL: store_open(). */
	struct store	*(*open)(const char *, enum store_engine,
			    const char *, const char *);
	/* The checks on the open store: E, the store, its URL. */
	void		 (*checks)(const char *, struct store *, const char *);
	/* Then, the store closed, or NULL: E, the URL. */
	void		 (*after)(const char *, const char *);
	/* SQLite only, after the rest, or NULL: the temp directory. */
	void		 (*sqlite)(const char *);
	/* PostgreSQL only, likewise: the admin connection, database, URL. */
	void		 (*pg)(PGconn *, const char *, const char *);
};

/*
 * Forks n children that wait on a pipe, releases them together, and
 * returns how many exited 0.
 */
static inline int
fork_race(int n, int (*fn)(const char *, int), const char *url)
{
	pid_t pid[8];
	int fd[2], i, good = 0, st;
	char c;

	if (n > 8 || pipe(fd) == -1)
		return -1;
	fflush(NULL);
	for (i = 0; i < n; i++) {
		if ((pid[i] = fork()) == -1) {
			n = i;
			break;
		}
		if (pid[i] == 0) {
			close(fd[1]);
			while (read(fd[0], &c, 1) == -1 && errno == EINTR)
				;
			_exit(fn(url, i));
		}
	}
	close(fd[0]);
	close(fd[1]);
	for (i = 0; i < n; i++)
		if (waitpid(pid[i], &st, 0) == pid[i] && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0)
			good++;
	return good;
}

/* "app/name app/name ..." in list order. */
static inline void
join_services(struct store *s, char *buf, size_t size)
{
	struct store_service *v;
	size_t n, i;

	buf[0] = '\0';
	if (store_service_list(s, &v, &n) == -1) {
		(void)snprintf(buf, size, "error: %s", store_error(s));
		return;
	}
	for (i = 0; i < n; i++) {
		if (i > 0)
			(void)strlcat(buf, " ", size);
		(void)strlcat(buf, v[i].app, size);
		(void)strlcat(buf, "/", size);
		(void)strlcat(buf, v[i].name, size);
	}
	store_service_free(v, n);
}

/*
 * The first column of the first row of sql, run on the store of url
 * behind the API's back (to see SQL NULL, which the API reads as 0); -1
 * on error.
 */
static inline int64_t
sql_count(const char *url, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	PGconn *c;
	PGresult *res;
	int64_t n = -1;

	if (strncmp(url, "sqlite://", 9) == 0) {
		if (sqlite3_open_v2(url + 9, &db, SQLITE_OPEN_READWRITE,
		    NULL) == SQLITE_OK && sqlite3_busy_timeout(db, 5000) ==
		    SQLITE_OK && sqlite3_prepare_v2(db, sql, -1, &st,
		    NULL) == SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW)
				n = sqlite3_column_int64(st, 0);
			while (sqlite3_step(st) == SQLITE_ROW)
				;
			sqlite3_finalize(st);
		}
		sqlite3_close(db);
		return n;
	}
	c = PQconnectdb(url);
	if (PQstatus(c) == CONNECTION_OK) {
		res = PQexec(c, sql);
		if (PQresultStatus(res) == PGRES_TUPLES_OK &&
		    PQntuples(res) == 1)
			n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		PQclear(res);
	}
	PQfinish(c);
	return n;
}

/* Runs statements on the store of url behind the API's back: 0 or -1. */
static inline int
sql_exec(const char *url, const char *sql)
{
	sqlite3 *db;
	PGconn *c;
	PGresult *res;
	int r = -1;

	if (strncmp(url, "sqlite://", 9) == 0) {
		if (sqlite3_open_v2(url + 9, &db, SQLITE_OPEN_READWRITE,
		    NULL) == SQLITE_OK && sqlite3_busy_timeout(db, 5000) ==
		    SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, NULL) ==
		    SQLITE_OK)
			r = 0;
		sqlite3_close(db);
		return r;
	}
	c = PQconnectdb(url);
	if (PQstatus(c) == CONNECTION_OK) {
		res = PQexec(c, sql);
		if (PQresultStatus(res) == PGRES_COMMAND_OK)
			r = 0;
		PQclear(res);
	}
	PQfinish(c);
	return r;
}

/* The URL with its database name replaced by db. */
static inline int
pg_url_db(const char *url, const char *db, char *out, size_t size)
{
	const char *auth, *path, *query, *end;
	int n;

	if ((auth = strstr(url, "://")) == NULL)
		return -1;
	auth += 3;
	query = strchr(auth, '?');
	path = strchr(auth, '/');
	if (path != NULL && query != NULL && path > query)
		path = NULL;
	end = path != NULL ? path : query != NULL ? query :
	    auth + strlen(auth);
	n = snprintf(out, size, "%.*s/%s%s", (int)(end - url), url, db,
	    query != NULL ? query : "");
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/*
 * t's checks on the store of url: opened by t->open (given the engine
 * wanted and a URL that cannot open), else quietly.
 */
static inline void
suite(const struct store_suite *t, const char *E, enum store_engine want,
    const char *url, const char *unreachable)
{
	char err[STORE_ERR_LEN];
	int run0 = tap_run, failed0 = tap_failed;
	struct store *s;

	if (t->open != NULL)
		s = t->open(E, want, url, unreachable);
	else if ((s = store_open(url, err, sizeof(err))) == NULL)
		ok(0, "%s: open: %s", E, err);
	if (s != NULL) {
		t->checks(E, s, url);
		store_close(s);
		if (t->after != NULL)
			t->after(E, url);
	}
	if (tap_failed == failed0) {
		diag("%s: %s: %d checks passed", t->name, E, tap_run - run0);
		/* make check shows stderr: both engines are seen to run */
		fprintf(stderr, "# %s: %s: %d checks passed\n", t->name, E,
		    tap_run - run0);
	} else
		diag("%s: %s: %d of %d checks FAILED", t->name, E,
		    tap_failed - failed0, tap_run - run0);
}

/* SQLite: t on a store in a temp directory, then t->sqlite there. */
static inline void
sqlite_half(const struct store_suite *t)
{
	char dir[] = "/tmp/hk-store.XXXXXX", url[URL_MAX], bad[URL_MAX];
	char path[URL_MAX];
	static const char *const files[] = { "", "-wal", "-shm" };
	size_t i;

	if (mkdtemp(dir) == NULL) {
		ok(0, "sqlite: mkdtemp: %s", strerror(errno));
		return;
	}
	(void)snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
	(void)snprintf(bad, sizeof(bad), "sqlite://%s/missing/state.db", dir);
	suite(t, "sqlite", STORE_SQLITE, url, bad);
	if (t->sqlite != NULL)
		t->sqlite(dir);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		(void)snprintf(path, sizeof(path), "%s/state.db%s", dir,
		    files[i]);
		(void)unlink(path);
	}
	(void)rmdir(dir);
}

/*
 * PostgreSQL: t on a database of its own on the server of admin_url,
 * then t->pg; the database dropped.
 */
static inline void
pg_half(const struct store_suite *t, const char *admin_url)
{
	char db[64], missing[80], sql[128], url[URL_MAX], bad[URL_MAX];
	PGconn *admin;
	PGresult *res;

	admin = PQconnectdb(admin_url);
	if (PQstatus(admin) != CONNECTION_OK) {
		ok(0, "postgres: connect to HK_TEST_PG: %s",
		    PQerrorMessage(admin));
		PQfinish(admin);
		return;
	}
	(void)snprintf(db, sizeof(db), "hk_store_%ld", (long)getpid());
	(void)snprintf(missing, sizeof(missing), "%s_missing", db);
	(void)snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	res = PQexec(admin, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		ok(0, "postgres: %s: %s", sql, PQerrorMessage(admin));
		PQclear(res);
		PQfinish(admin);
		return;
	}
	PQclear(res);
	if (pg_url_db(admin_url, db, url, sizeof(url)) == -1 ||
	    pg_url_db(admin_url, missing, bad, sizeof(bad)) == -1)
		ok(0, "postgres: cannot rewrite the database of %s", admin_url);
	else {
		suite(t, "postgres", STORE_POSTGRES, url, bad);
		if (t->pg != NULL)
			t->pg(admin, db, url);
	}
	(void)snprintf(sql, sizeof(sql), "DROP DATABASE %s WITH (FORCE)", db);
	res = PQexec(admin, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		diag("postgres: %s: %s", sql, PQerrorMessage(admin));
	PQclear(res);
	PQfinish(admin);
}

/* Runs t on both engines: a test's main() returns this. */
static inline int
store_suite_main(const struct store_suite *t)
{
	const char *pg = getenv("HK_TEST_PG");

	sqlite_half(t);
	if (pg != NULL && *pg != '\0')
		pg_half(t, pg);
	else	/* a missing server fails: make check always has one */
		ok(0, "postgres: HK_TEST_PG is unset: run the test through "
		    "scripts/pg exec");
	return done();
}

#endif
