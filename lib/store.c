/*
 * store.c - the state store: one API, one schema, two engines (store.h).
 *
 * This file opens a store (the URL picks the engine) and migrates it, runs
 * its transactions, and holds the query machinery through which the API of
 * every table runs its statements (q_do, q_int, q_rows, read_one,
 * read_rows; store_tables.h).  The schema, its migrations and the SQL of
 * every statement are store_schema.c's; the tables' API is a file per
 * family: store_services.c (apps, services, instances), store_events.c
 * (events, requests), store_leases.c (settings, leases) and store_code.c
 * (code, vetted, secrets); the others' is below for now.  The engines,
 * store_sqlite.c and store_pg.c, are behind store_impl.h.
 *
 * URLs: "sqlite://PATH" opens the SQLite file PATH (sqlite:///var/x.db is
 * /var/x.db, sqlite://x.db is relative); "postgres://..." and
 * "postgresql://..." go whole to libpq.  Anything else is refused.
 *
 * Transactions.  store_begin() takes the installation-wide write lock: on
 * SQLite BEGIN IMMEDIATE, on PostgreSQL a session advisory lock taken
 * before BEGIN ISOLATION LEVEL SERIALIZABLE (so the snapshot postdates the
 * previous holder's commit).  Writers outside a transaction that touch the
 * same rows make a PostgreSQL transaction fail with a serialization error
 * rather than lose an update; store_busy() is then true, and the caller
 * rolls back and retries.  Both engines wait for locks at most
 * STORE_BUSY_MS (busy_timeout, lock_timeout).  After any error inside a
 * transaction, roll it back: PostgreSQL has aborted it, SQLite has not.
 *
 * store_open() returns NULL with errno EAGAIN when the failure is
 * temporary (server unreachable, store locked), EINVAL for a bad URL and
 * EIO otherwise; err says why.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static int	 migrate(struct store *);
static int	 check_run(struct store *, const struct store_run *);
static int	 read_run_row(struct store *, void *);
static int	 run_write(struct store *, const struct store_run *);
static int	 claim(struct store *, enum store_q, const struct store_arg *,
		    size_t, const struct store_run *);
static int	 prune_keys(struct store *, const char *, enum store_q,
		    enum store_q, size_t, const char *, char *const *,
		    char *const *, size_t, int64_t *);
static int	 read_job_row(struct store *, void *);
static int	 read_schedule_row(struct store *, void *);
static void	 release_runs(void *, size_t);

void
store_seterr(struct store *s, int busy, const char *fmt, ...)
{
	va_list ap;

	s->busy = busy;
	va_start(ap, fmt);
	(void)vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
}

void
errprefix(struct store *s, const char *fmt, ...)
{
	char prefix[STORE_ERR_LEN], old[STORE_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, s->err, sizeof(old));
	/* A message too long is cut at STORE_ERR_LEN, on purpose. */
	if (snprintf(s->err, sizeof(s->err), "%s: %s", prefix, old) < 0)
		s->err[0] = '\0';
}

int
nomem(struct store *s)
{
	store_seterr(s, 0, "%s", strerror(ENOMEM));
	errno = ENOMEM;
	return -1;
}

/* A name given by the caller: not empty, and fits its struct field. */
int
check_name(struct store *s, const char *what, const char *v, size_t max)
{
	if (v == NULL || *v == '\0') {
		store_seterr(s, 0, "%s: empty", what);
		return -1;
	}
	if (strlen(v) > max) {
		store_seterr(s, 0, "%s: longer than %zu bytes", what, max);
		return -1;
	}
	return 0;
}

/* A fixed-size field of a struct given by the caller. */
int
check_field(struct store *s, const char *what, const char *v, size_t size,
    int required)
{
	if (memchr(v, '\0', size) == NULL) {
		store_seterr(s, 0, "%s: not terminated", what);
		return -1;
	}
	if (required && *v == '\0') {
		store_seterr(s, 0, "%s: empty", what);
		return -1;
	}
	return 0;
}

int
col_copy(struct store *s, int col, char *dst, size_t size, const char *what)
{
	const char *t;

	if ((t = s->ops->col_text(s, col)) == NULL)
		t = "";
	if (strlcpy(dst, t, size) >= size) {
		store_seterr(s, 0, "stored %s longer than %zu bytes", what,
		    size - 1);
		return -1;
	}
	return 0;
}

/* NULL for SQL NULL and on error; tell them apart with isnull. */
char *
col_dup(struct store *s, int col)
{
	const char *t;
	char *d;

	if ((t = s->ops->col_text(s, col)) == NULL)
		return NULL;
	if ((d = strdup(t)) == NULL)
		(void)nomem(s);
	return d;
}

/* A read_one() reader: the first column, copied (col_dup) to a char **. */
int
read_text_row(struct store *s, void *p)
{
	char **v = p;

	return (*v = col_dup(s, 0)) == NULL ? -1 : 0;
}

/* Runs a statement, ignoring rows.  0 or -1. */
int
q_do(struct store *s, enum store_q q, const struct store_arg *a, size_t n,
    int64_t *changes)
{
	int r;

	if ((r = s->ops->exec(s, q, a, n)) == 0) {
		while ((r = s->ops->next(s)) == 1)
			;
		if (r == 0 && changes != NULL)
			*changes = s->ops->changes(s);
	}
	s->ops->finish(s);
	return r;
}

/* First column of the first row: 0 read, 1 no row, -1 error. */
int
q_int(struct store *s, enum store_q q, const struct store_arg *a, size_t n,
    int64_t *out)
{
	int r;

	if ((r = s->ops->exec(s, q, a, n)) == 0) {
		if ((r = s->ops->next(s)) == 1) {
			*out = s->ops->col_int(s, 0);
			/* drain, so SQLite finishes the statement */
			while ((r = s->ops->next(s)) == 1)
				;
		} else if (r == 0)
			r = 1;
	}
	s->ops->finish(s);
	return r;
}

/*
 * A batch: one statement (many) where the engine can, else the row
 * statement q once per row.  Only inside a transaction: all or none.
 */
int
q_rows(struct store *s, enum store_q q, enum store_q many, size_t nargs,
    size_t nrows, store_row_fn *row, const void *arg)
{
	struct store_arg a[16];
	size_t i;
	int r = 0;

	if (nargs > NITEMS(a)) {
		store_seterr(s, 0, "%s: too many parameters",
		    store_sql[q].name);
		return -1;
	}
	if (s->ops->exec_rows != NULL)
		return s->ops->exec_rows(s, q, many, nargs, nrows, row, arg);
	for (i = 0; r == 0 && i < nrows; i++)
		if ((r = row(s, arg, i, a)) == 0)
			r = q_do(s, q, a, nargs, NULL);
	return r;
}

/* Makes room for one more element of size in v[n]. */
void *
grow(struct store *s, void *v, size_t n, size_t *cap, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return v;
	ncap = *cap == 0 ? 16 : *cap * 2;
	if ((nv = reallocarray(v, ncap, size)) == NULL) {
		(void)nomem(s);
		return NULL;
	}
	*cap = ncap;
	return nv;
}

/*
 * The rows of query q, all or none: each read into the next element of a
 * growing array of size-byte elements by read; on error the rows read so
 * far go to release (NULL: nothing of theirs is allocated).
 */
int
read_rows(struct store *s, enum store_q q, const struct store_arg *a,
    size_t na, size_t size, int (*read)(struct store *, void *),
    void (*release)(void *, size_t), void **out, size_t *nout)
{
	char *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int r;

	*out = NULL;
	*nout = 0;
	if ((r = s->ops->exec(s, q, a, na)) == 0) {
		while ((r = s->ops->next(s)) == 1) {
			if ((nv = grow(s, v, n, &cap, size)) == NULL) {
				r = -1;
				break;
			}
			v = nv;
			if ((r = read(s, v + n * size)) == -1)
				break;
			n++;
		}
	}
	s->ops->finish(s);
	if (r == -1) {
		if (release != NULL)
			release(v, n);
		else
			free(v);
		return -1;
	}
	*out = v;
	*nout = n;
	return 0;
}

/*
 * The first row of query q, read into v by read: 0 read, 1 no row, -1
 * error.  What every single-row getter does once its arguments are
 * checked.
 */
int
read_one(struct store *s, enum store_q q, const struct store_arg *a,
    size_t na, int (*read)(struct store *, void *), void *v)
{
	int r;

	if ((r = s->ops->exec(s, q, a, na)) == 0 &&
	    (r = s->ops->next(s)) == 1)
		r = read(s, v);
	else if (r == 0)
		r = 1;
	s->ops->finish(s);
	return r;
}

/* A transaction of our own, unless the caller has one open. */
int
own_begin(struct store *s, int *own)
{
	*own = !s->in_tx;
	if (*own && store_begin(s) == -1)
		return -1;
	return 0;
}

int
own_end(struct store *s, int own, int r)
{
	if (!own)
		return r;
	if (r == -1) {
		rollback_keep_error(s);
		return -1;
	}
	return store_commit(s);
}

void
rollback_keep_error(struct store *s)
{
	char err[STORE_ERR_LEN];
	int busy = s->busy;

	memcpy(err, s->err, sizeof(err));
	(void)store_rollback(s);
	memcpy(s->err, err, sizeof(err));
	s->busy = busy;
}

/*
 * Both deletes of one table, in a transaction of its own if need be.
 * by_age takes before and, if age_args is 2, the latest time that is
 * not in the future by more than a day.
 */
int
prune(struct store *s, enum store_q by_age, size_t age_args,
    enum store_q by_rows, int64_t before, int64_t max_rows, int64_t *deleted)
{
	struct store_arg a[] = { ARG_INT(0), ARG_INT(0) };
	int64_t n1 = 0, n2 = 0;
	int own, r = 0;

	call_start(s);
	if (deleted != NULL)
		*deleted = 0;
	if (before <= 0 && max_rows <= 0)
		return 0;
	if (own_begin(s, &own) == -1)
		return -1;
	if (before > 0) {
		a[0].num = before;
		a[1].num = store_now_ms() + PRUNE_AHEAD_MS;
		r = q_do(s, by_age, a, age_args, &n1);
	}
	if (r == 0 && max_rows > 0) {
		a[0].num = max_rows;
		r = q_do(s, by_rows, a, 1, &n2);
	}
	if (own_end(s, own, r) == -1)
		return -1;
	if (deleted != NULL)
		*deleted = n1 + n2;
	return 0;
}

static int
migrate(struct store *s)
{
	const struct store_migration *m;
	const int64_t latest = store_migrations[store_nmigrations - 1].version;
	int64_t have;
	size_t i;

	if (s->ops->migrate_begin(s) == -1)
		return -1;
	s->in_tx = 1;
	if (s->ops->script(s, store_migrations_table) == -1 ||
	    q_int(s, Q_SCHEMA_VERSION, NULL, 0, &have) == -1)
		goto fail;
	if (have > latest) {
		store_seterr(s, 0, "schema version %jd is newer than this "
		    "program knows (%jd): upgrade it", (intmax_t)have,
		    (intmax_t)latest);
		goto fail;
	}
	for (i = 0; i < store_nmigrations; i++) {
		struct store_arg a[] = { ARG_INT(0), ARG_INT(store_now_ms()) };

		m = &store_migrations[i];
		if (m->version <= have)
			continue;
		a[0].num = m->version;
		if (s->ops->script(s, s->engine == STORE_SQLITE ?
		    m->sqlite : m->pg) == -1 ||
		    (m->data != NULL && m->data(s) == -1) ||
		    q_do(s, Q_MIGRATION_ADD, a, NITEMS(a), NULL) == -1) {
			errprefix(s, "migration %jd (%s)", (intmax_t)m->version,
			    m->what);
			goto fail;
		}
	}
	return store_commit(s);
fail:
	rollback_keep_error(s);
	return -1;
}

struct store *
store_open(const char *url, char *err, size_t errlen)
{
	static const char schemes[] =
	    "expected sqlite://PATH, postgres://... or postgresql://...";
	const struct store_ops *ops;
	enum store_engine engine;
	const char *target, *colon;
	struct store *s;
	int e;

	if (errlen > 0)
		err[0] = '\0';
	if (url == NULL)
		url = "";
	if (strncmp(url, "sqlite://", 9) == 0) {
		engine = STORE_SQLITE;
		ops = &store_sqlite_ops;
		target = url + 9;
	} else if (strncmp(url, "postgres://", 11) == 0 ||
	    strncmp(url, "postgresql://", 13) == 0) {
		engine = STORE_POSTGRES;
		ops = &store_pg_ops;
		target = url;
	} else {
		/* Name the scheme only: the rest may hold a password. */
		colon = strstr(url, "://");
		if (colon != NULL && colon - url <= 32)
			(void)snprintf(err, errlen, "store URL scheme "
			    "\"%.*s\" not supported: %s", (int)(colon - url),
			    url, schemes);
		else
			(void)snprintf(err, errlen, "store URL has no "
			    "scheme: %s", schemes);
		errno = EINVAL;
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		(void)snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	s->engine = engine;
	s->ops = ops;
	if (ops->open(s, target) == -1)
		goto fail;
	if (migrate(s) == -1) {
		errprefix(s, "%s: migrate", ops->name);
		goto fail;
	}
	return s;
fail:
	(void)snprintf(err, errlen, "%s", s->err);
	e = s->busy ? EAGAIN : EIO;
	store_close(s);
	errno = e;
	return NULL;
}

void
store_close(struct store *s)
{
	if (s == NULL)
		return;
	if (s->in_tx)
		(void)store_rollback(s);
	s->ops->close(s);
	free(s);
}

enum store_engine
store_engine(const struct store *s)
{
	return s->engine;
}

const char *
store_error(const struct store *s)
{
	return s->err;
}

int
store_busy(const struct store *s)
{
	return s->busy;
}

int
store_schema_version(struct store *s, int64_t *version)
{
	call_start(s);
	if (q_int(s, Q_SCHEMA_VERSION, NULL, 0, version) != 0) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "no schema version");
		return -1;
	}
	return 0;
}

int
store_begin(struct store *s)
{
	call_start(s);
	if (s->in_tx) {
		store_seterr(s, 0, "a transaction is already open");
		return -1;
	}
	if (s->ops->begin(s) == -1)
		return -1;
	s->in_tx = 1;
	return 0;
}

int
store_commit(struct store *s)
{
	int r;

	call_start(s);
	if (!s->in_tx) {
		store_seterr(s, 0, "commit: no transaction open");
		return -1;
	}
	r = s->ops->commit(s);
	s->in_tx = 0;
	return r;
}

int
store_rollback(struct store *s)
{
	int r;

	call_start(s);
	if (!s->in_tx)
		return 0;
	r = s->ops->rollback(s);
	s->in_tx = 0;
	return r;
}

int
store_durable(struct store *s, int on)
{
	call_start(s);
	if (s->in_tx) {
		store_seterr(s, 0, "durable: inside a transaction");
		return -1;
	}
	return s->ops->durable != NULL ? s->ops->durable(s, on != 0) : 0;
}

int64_t
store_now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs (hk-jobs): strings checked as every other bounded field. */
static int
check_run(struct store *s, const struct store_run *r)
{
	if (check_name(s, "run id", r->id, STORE_RUN_ID_MAX) == -1 ||
	    check_name(s, "app name", r->app, STORE_NAME_MAX) == -1 ||
	    check_name(s, "service name", r->service, STORE_NAME_MAX) == -1 ||
	    check_field(s, "trigger", r->trigger, sizeof(r->trigger), 1) == -1 ||
	    check_field(s, "method", r->method, sizeof(r->method), 1) == -1 ||
	    check_field(s, "path", r->path, sizeof(r->path), 1) == -1 ||
	    check_field(s, "phase", r->phase, sizeof(r->phase), 1) == -1 ||
	    check_field(s, "reason", r->reason, sizeof(r->reason), 0) == -1)
		return -1;
	if (r->body_len > INT32_MAX) {
		store_seterr(s, 0, "run %s: body too long", r->id);
		return -1;
	}
	return 0;
}

/* The run's row as it is (checked by the caller): Q_RUN_PUT. */
static int
run_write(struct store *s, const struct store_run *r)
{
	struct store_arg a[] = { ARG_TEXT(r->id), ARG_TEXT(r->app),
	    ARG_TEXT(r->service), ARG_INT(r->revision), ARG_TEXT(r->trigger),
	    ARG_TEXT(r->method), ARG_TEXT(r->path), ARG_INT(r->event_bytes),
	    ARG_TEXT(r->phase), ARG_INT(r->created_at),
	    ARG_INT(r->started_at), ARG_INT(r->finished_at),
	    ARG_INT(r->status), ARG_INT(r->duration_us),
	    ARG_BLOB(r->body, r->body_len), ARG_TEXT(r->reason) };

	return q_do(s, Q_RUN_PUT, a, NITEMS(a), NULL);
}

int
store_run_put(struct store *s, const struct store_run *r)
{
	call_start(s);
	if (check_run(s, r) == -1)
		return -1;
	return run_write(s, r);
}

static int
read_run_row(struct store *s, void *p)
{
	struct store_run *r = p;
	const unsigned char *b;
	size_t len = 0;

	memset(r, 0, sizeof(*r));
	if (col_copy(s, 0, r->id, sizeof(r->id), "run id") == -1 ||
	    col_copy(s, 1, r->app, sizeof(r->app), "app") == -1 ||
	    col_copy(s, 2, r->service, sizeof(r->service), "service") == -1 ||
	    col_copy(s, 4, r->trigger, sizeof(r->trigger), "trigger") == -1 ||
	    col_copy(s, 5, r->method, sizeof(r->method), "method") == -1 ||
	    col_copy(s, 6, r->path, sizeof(r->path), "path") == -1 ||
	    col_copy(s, 8, r->phase, sizeof(r->phase), "phase") == -1 ||
	    col_copy(s, 15, r->reason, sizeof(r->reason), "reason") == -1)
		return -1;
	r->revision = s->ops->col_int(s, 3);
	r->event_bytes = s->ops->col_int(s, 7);
	r->created_at = s->ops->col_int(s, 9);
	r->started_at = s->ops->col_int(s, 10);
	r->finished_at = s->ops->col_int(s, 11);
	r->status = (int)s->ops->col_int(s, 12);
	r->duration_us = s->ops->col_int(s, 13);
	if ((b = s->ops->col_blob(s, 14, &len)) != NULL) {
		/* One byte more: malloc(0) may be NULL; text ends there. */
		if ((r->body = malloc(len + 1)) == NULL)
			return nomem(s);
		memcpy(r->body, b, len);
		r->body[len] = '\0';
		r->body_len = len;
	}
	return 0;
}

static void
release_runs(void *v, size_t n)
{
	store_run_free(v, n);
}

int
store_run_get(struct store *s, const char *id, struct store_run *out)
{
	struct store_arg a[] = { ARG_TEXT(id) };
	int r;

	call_start(s);
	memset(out, 0, sizeof(*out));
	if (check_name(s, "run id", id, STORE_RUN_ID_MAX) == -1)
		return -1;
	/* A row read in part is not left behind: *out stays cleared. */
	if ((r = read_one(s, Q_RUN_GET, a, NITEMS(a), read_run_row,
	    out)) == -1)
		memset(out, 0, sizeof(*out));
	return r;
}

int
store_run_list(struct store *s, const char *app, const char *service,
    size_t limit, struct store_run **out, size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(limit == 0 ? INT64_MAX : (int64_t)limit) };
	void *v;
	int r;

	call_start(s);
	r = read_rows(s, Q_RUN_LIST, a, NITEMS(a), sizeof(**out),
	    read_run_row, release_runs, &v, nout);
	*out = v;
	return r;
}

int
store_run_abandon(struct store *s, const char *phase, const char *reason,
    int64_t *n)
{
	struct store_arg a[] = { ARG_TEXT(phase), ARG_TEXT(reason),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	*n = 0;
	return q_do(s, Q_RUN_ABANDON, a, NITEMS(a), n);
}

int
store_run_prune(struct store *s, int64_t before, int64_t max_rows,
    int64_t *deleted)
{
	return prune(s, Q_RUN_PRUNE_AGE, 1, Q_RUN_PRUNE_ROWS, before,
	    max_rows, deleted);
}

void
store_run_clear(struct store_run *r)
{
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
}

void
store_run_free(struct store_run *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_run_clear(&v[i]);
	free(v);
}

/*
 * A claim, in a transaction of its own: the compare-and-set update q
 * changes the one row or none, then the run row (if any) is written.
 * store_begin() takes the installation's write lock (store.c, top), so
 * of two claims in two processes or hosts the second runs after the
 * first's commit and changes no row.  Never inside a caller's
 * transaction: hk-jobs claims on its own, and store_begin() would refuse
 * one, writing nothing.  0 claimed, 1 not, -1 error (rolled back).
 */
static int
claim(struct store *s, enum store_q q, const struct store_arg *a, size_t n,
    const struct store_run *row)
{
	int64_t changed = 0;

	if (store_begin(s) == -1)
		return -1;
	if (q_do(s, q, a, n, &changed) == -1 ||
	    (changed > 0 && row != NULL && run_write(s, row) == -1)) {
		rollback_keep_error(s);
		return -1;
	}
	if (changed == 0)
		return store_rollback(s) == -1 ? -1 : 1;
	return store_commit(s);
}

/* The key of a row prune_keys() deletes: a job's name, or service, name. */
struct prune_key {
	char		 k[2][STORE_NAME_MAX + 1];
};

/* Whether keep0[i] (and keep1[i], if the key has two columns) names k. */
static int
prune_kept(const struct prune_key *k, size_t nk, char *const *keep0,
    char *const *keep1, size_t nkeep)
{
	size_t i;

	for (i = 0; i < nkeep; i++)
		if (keep0[i] != NULL && strcmp(keep0[i], k->k[0]) == 0 &&
		    (nk == 1 || (keep1[i] != NULL &&
		    strcmp(keep1[i], k->k[1]) == 0)))
			return 1;
	return 0;
}

/*
 * As store_service_prune(): the keys of app's rows (query keys: nk
 * columns, 1 or 2, kept by keep0[i] and keep1[i]) are read first, since
 * one statement is active at a time, then those not kept deleted one by
 * one (del: app and the key), in a transaction of its own unless the
 * caller's (hk apply's) is open.  what names the rows in messages.
 */
static int
prune_keys(struct store *s, const char *what, enum store_q keys,
    enum store_q del, size_t nk, const char *app, char *const *keep0,
    char *const *keep1, size_t nkeep, int64_t *removed)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(NULL),
	    ARG_TEXT(NULL) };
	struct prune_key *gone = NULL, *ng;
	size_t ngone = 0, cap = 0, i;
	int own, r;

	if (removed != NULL)
		*removed = 0;
	if (check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    own_begin(s, &own) == -1)
		return -1;
	if ((r = s->ops->exec(s, keys, a, 1)) == 0) {
		while ((r = s->ops->next(s)) == 1) {
			if ((ng = grow(s, gone, ngone, &cap,
			    sizeof(*gone))) == NULL) {
				r = -1;
				break;
			}
			gone = ng;
			for (i = 0; r == 1 && i < nk; i++)
				if (col_copy(s, (int)i, gone[ngone].k[i],
				    sizeof(gone[ngone].k[i]), "name") == -1)
					r = -1;
			if (r == -1)
				break;
			if (!prune_kept(&gone[ngone], nk, keep0, keep1,
			    nkeep))
				ngone++;
		}
	}
	s->ops->finish(s);
	for (i = 0; r == 0 && i < ngone; i++) {
		a[1].text = gone[i].k[0];
		a[2].text = gone[i].k[1];
		r = q_do(s, del, a, 1 + nk, NULL);
	}
	free(gone);
	if (own_end(s, own, r) == -1) {
		errprefix(s, "prune %s of app %s", what, app);
		return -1;
	}
	if (removed != NULL)
		*removed = (int64_t)ngone;
	return 0;
}

/* Jobs ([jobs.NAME]): hk apply puts and prunes them, hk-jobs claims. */
int
store_job_put(struct store *s, const char *app, const char *name,
    const char *service, const char *spec_json, int64_t run_id)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_TEXT(service), ARG_TEXT(spec_json), ARG_INT(run_id),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	if (check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    check_name(s, "job name", name, STORE_NAME_MAX) == -1 ||
	    check_name(s, "service name", service, STORE_NAME_MAX) == -1)
		return -1;
	/* done_run_id starts at -1: a negative run_id would never run. */
	if (spec_json == NULL || run_id < 0) {
		store_seterr(s, 0, "job %s/%s: %s", app, name,
		    spec_json == NULL ? "no spec" : "negative run_id");
		return -1;
	}
	return q_do(s, Q_JOB_PUT, a, NITEMS(a), NULL);
}

/* Reads the current row; the spec last, so that an error leaks none. */
static int
read_job_row(struct store *s, void *p)
{
	struct store_job *j = p;

	memset(j, 0, sizeof(*j));
	if (col_copy(s, 0, j->app, sizeof(j->app), "app name") == -1 ||
	    col_copy(s, 1, j->name, sizeof(j->name), "job name") == -1 ||
	    col_copy(s, 2, j->service, sizeof(j->service),
	    "service name") == -1 ||
	    col_copy(s, 6, j->run, sizeof(j->run), "run id") == -1)
		return -1;
	j->run_id = s->ops->col_int(s, 4);
	j->done_run_id = s->ops->col_int(s, 5);
	j->updated_at = s->ops->col_int(s, 7);
	if ((j->spec_json = col_dup(s, 3)) == NULL) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "job %s/%s: no spec", j->app,
			    j->name);
		return -1;
	}
	return 0;
}

static void
release_jobs(void *v, size_t n)
{
	store_job_free(v, n);
}

int
store_job_get(struct store *s, const char *app, const char *name,
    struct store_job *j)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name) };

	call_start(s);
	memset(j, 0, sizeof(*j));
	if (check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    check_name(s, "job name", name, STORE_NAME_MAX) == -1)
		return -1;
	return read_one(s, Q_JOB_GET, a, NITEMS(a), read_job_row, j);
}

int
store_job_list(struct store *s, const char *app, struct store_job **out,
    size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app) };
	void *v;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	if (app != NULL &&
	    check_name(s, "app name", app, STORE_NAME_MAX) == -1)
		return -1;
	r = read_rows(s, Q_JOB_LIST, a, NITEMS(a), sizeof(**out),
	    read_job_row, release_jobs, &v, nout);
	*out = v;
	return r;
}

int
store_job_prune(struct store *s, const char *app, char *const *keep,
    size_t nkeep, int64_t *removed)
{
	call_start(s);
	if (nkeep > 0 && keep == NULL) {
		store_seterr(s, 0, "prune jobs: no names to keep");
		return -1;
	}
	return prune_keys(s, "jobs", Q_JOB_KEYS, Q_JOB_DELETE, 1, app, keep,
	    NULL, nkeep, removed);
}

int
store_job_claim(struct store *s, const char *app, const char *name,
    int64_t run_id, const struct store_run *row)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_INT(run_id), ARG_TEXT(NULL) };
	int r;

	call_start(s);
	if (check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    check_name(s, "job name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (row == NULL) {
		store_seterr(s, 0, "job %s/%s: claim without a run", app,
		    name);
		return -1;
	}
	if (check_run(s, row) == -1)
		return -1;
	a[3].text = row->id;
	if ((r = claim(s, Q_JOB_CLAIM, a, NITEMS(a), row)) == -1)
		errprefix(s, "job %s/%s: claim run_id %jd", app, name,
		    (intmax_t)run_id);
	return r;
}

void
store_job_clear(struct store_job *j)
{
	if (j == NULL)
		return;
	free(j->spec_json);
	memset(j, 0, sizeof(*j));
}

void
store_job_free(struct store_job *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		store_job_clear(&v[i]);
	free(v);
}

/* Schedules ([services.X.schedules.NAME]): hk apply's, hk-jobs fires. */
int
store_schedule_put(struct store *s, const char *app, const char *service,
    const char *name, const char *spec_json, int64_t at)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_TEXT(name), ARG_TEXT(spec_json), ARG_INT(at) };

	call_start(s);
	if (check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    check_name(s, "service name", service, STORE_NAME_MAX) == -1 ||
	    check_name(s, "schedule name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (spec_json == NULL) {
		store_seterr(s, 0, "schedule %s/%s/%s: no spec", app, service,
		    name);
		return -1;
	}
	return q_do(s, Q_SCHEDULE_PUT, a, NITEMS(a), NULL);
}

static int
read_schedule_row(struct store *s, void *p)
{
	struct store_schedule *c = p;

	memset(c, 0, sizeof(*c));
	if (col_copy(s, 0, c->app, sizeof(c->app), "app name") == -1 ||
	    col_copy(s, 1, c->service, sizeof(c->service),
	    "service name") == -1 ||
	    col_copy(s, 2, c->name, sizeof(c->name), "schedule name") == -1)
		return -1;
	c->last_fire = s->ops->col_int(s, 4);
	c->updated_at = s->ops->col_int(s, 5);
	if ((c->spec_json = col_dup(s, 3)) == NULL) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "schedule %s/%s/%s: no spec",
			    c->app, c->service, c->name);
		return -1;
	}
	return 0;
}

static void
release_schedules(void *v, size_t n)
{
	store_schedule_free(v, n);
}

int
store_schedule_list(struct store *s, const char *app,
    struct store_schedule **out, size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app) };
	void *v;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	if (app != NULL &&
	    check_name(s, "app name", app, STORE_NAME_MAX) == -1)
		return -1;
	r = read_rows(s, Q_SCHEDULE_LIST, a, NITEMS(a), sizeof(**out),
	    read_schedule_row, release_schedules, &v, nout);
	*out = v;
	return r;
}

int
store_schedule_prune(struct store *s, const char *app,
    char *const *services, char *const *names, size_t nkeep,
    int64_t *removed)
{
	call_start(s);
	if (nkeep > 0 && (services == NULL || names == NULL)) {
		store_seterr(s, 0, "prune schedules: no names to keep");
		return -1;
	}
	return prune_keys(s, "schedules", Q_SCHEDULE_KEYS,
	    Q_SCHEDULE_DELETE, 2, app, services, names, nkeep, removed);
}

/*
 * A schedule that is not there (pruned since) is not claimed either: 1,
 * as for a firing claimed already.
 */
int
store_schedule_claim(struct store *s, const char *app, const char *service,
    const char *name, int64_t fire, const struct store_run *row)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_TEXT(name), ARG_INT(fire) };
	int r;

	call_start(s);
	if (check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    check_name(s, "service name", service, STORE_NAME_MAX) == -1 ||
	    check_name(s, "schedule name", name, STORE_NAME_MAX) == -1 ||
	    (row != NULL && check_run(s, row) == -1))
		return -1;
	if ((r = claim(s, Q_SCHEDULE_CLAIM, a, NITEMS(a), row)) == -1)
		errprefix(s, "schedule %s/%s/%s: claim %jd", app, service,
		    name, (intmax_t)fire);
	return r;
}

void
store_schedule_free(struct store_schedule *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i].spec_json);
	free(v);
}
