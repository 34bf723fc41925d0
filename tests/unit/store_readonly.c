/*
 * store_readonly.c - store_open_readonly(), on SQLite and PostgreSQL: a
 * check's look at a store reads what is there, at the schema version it
 * has, and writes nothing: no file, no table, no migration, no row.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_suite.h"

#define VERSIONS	"SELECT count(*) FROM schema_migrations"

static void	checks(const char *, struct store *, const char *);
static void	t_read(const char *, const char *);
static void	t_newer(const char *, const char *);
static void	t_sqlite_none(const char *);
static void	t_pg_none(PGconn *, const char *, const char *);

/* What the read-only opens find: a setting and a serverless service. */
static void
checks(const char *E, struct store *s, const char *url)
{
	int64_t rev;
	int changed;

	(void)url;
	ok(store_setting_put(s, "greeting", "hi") == 0 &&
	    store_app_put(s, "fn", "/srv/fn.toml") == 0 &&
	    store_service_put(s, "fn", "api", SPEC_PY1, 1, &rev,
	    &changed) == 0, "%s: a setting and a service written", E);
}

/* The store closed, made one version older: read as it is, not changed. */
static void
t_read(const char *E, const char *url)
{
	char err[STORE_ERR_LEN];
	struct store_service *all = NULL;
	struct store *s;
	int64_t before;
	size_t n = 0;
	char *v = NULL;

	ok(sql_exec(url, "DELETE FROM schema_migrations WHERE version = "
	    "(SELECT max(version) FROM schema_migrations)") == 0,
	    "%s: the store made one schema version older", E);
	before = sql_count(url, VERSIONS);
	s = store_open_readonly(url, err, sizeof(err));
	ok(s != NULL, "%s: opened read only%s%s", E, s != NULL ? "" : ": ",
	    s != NULL ? "" : err);
	if (s == NULL)
		return;
	ok(store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    strcmp(v, "hi") == 0, "%s: a setting is read", E);
	ok(store_service_list(s, &all, &n) == 0 && n == 1 &&
	    all[0].serverless && strcmp(all[0].name, "api") == 0,
	    "%s: and the services", E);
	store_service_free(all, n);
	ok(store_setting_put(s, "greeting", "changed") == -1,
	    "%s: a write fails: %s", E, store_error(s));
	store_close(s);
	free(v);
	ok(sql_count(url, VERSIONS) == before,
	    "%s: no migration was applied", E);
	ok(sql_count(url, "SELECT count(*) FROM settings WHERE key = "
	    "'greeting' AND value = 'hi'") == 1, "%s: no row was written", E);
	t_newer(E, url);
}

/* A store newer than this program is refused, as store_open() does. */
static void
t_newer(const char *E, const char *url)
{
	char err[STORE_ERR_LEN];
	struct store *s;

	if (sql_exec(url, "INSERT INTO schema_migrations VALUES "
	    "(999999, 0)") == -1) {
		ok(0, "%s: a newer schema version recorded", E);
		return;
	}
	s = store_open_readonly(url, err, sizeof(err));
	ok(s == NULL && errno == EIO && strstr(err, "newer") != NULL,
	    "%s: a newer schema version is refused: %s", E, err);
	store_close(s);
}

/* No file, or an empty one: no store, and no file made. */
static void
t_sqlite_none(const char *dir)
{
	char path[URL_MAX], url[URL_MAX + 16], err[STORE_ERR_LEN];
	struct store *s;
	struct stat st;
	FILE *fp;

	(void)snprintf(path, sizeof(path), "%s/none.db", dir);
	(void)snprintf(url, sizeof(url), "sqlite://%s", path);
	s = store_open_readonly(url, err, sizeof(err));
	ok(s == NULL && errno == ENOENT, "sqlite: no file: no store (%s)",
	    err);
	ok(stat(path, &st) == -1 && errno == ENOENT,
	    "sqlite: and none is made");
	store_close(s);
	if ((fp = fopen(path, "w")) != NULL)
		fclose(fp);
	s = store_open_readonly(url, err, sizeof(err));
	ok(s == NULL && errno == ENOENT,
	    "sqlite: an empty file: no store (%s)", err);
	ok(stat(path, &st) == 0 && st.st_size == 0,
	    "sqlite: and it stays empty");
	store_close(s);
	(void)unlink(path);
}

/* A database without hk's tables: no store, and none is made. */
static void
t_pg_none(PGconn *admin, const char *db, const char *url)
{
	char name[80], sql[160], other[URL_MAX], err[STORE_ERR_LEN];
	struct store *s;
	PGresult *res;

	(void)snprintf(name, sizeof(name), "%s_empty", db);
	(void)snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	res = PQexec(admin, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK ||
	    pg_url_db(url, name, other, sizeof(other)) == -1) {
		ok(0, "postgres: %s: %s", sql, PQerrorMessage(admin));
		PQclear(res);
		return;
	}
	PQclear(res);
	s = store_open_readonly(other, err, sizeof(err));
	ok(s == NULL && errno == ENOENT,
	    "postgres: a database without a store: none (%s)", err);
	store_close(s);
	ok(sql_count(other, "SELECT count(*) FROM pg_tables WHERE "
	    "schemaname = current_schema()") == 0,
	    "postgres: and no table is made");
	(void)snprintf(sql, sizeof(sql), "DROP DATABASE %s WITH (FORCE)",
	    name);
	PQclear(PQexec(admin, sql));
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_readonly",
		.checks = checks,
		.after = t_read,
		.sqlite = t_sqlite_none,
		.pg = t_pg_none,
	};

	return store_suite_main(&t);
}
