/*
 * store.c - the state store: one API, one schema, two engines (store.h).
 *
 * This file opens a store (the URL picks the engine) and migrates it, runs
 * its transactions, and holds the query machinery through which the API of
 * every table runs its statements (store_q_do, store_q_int, store_q_rows,
 * store_read_one, store_read_rows; store_tables.h).  The schema, its
 * migrations and the SQL of every statement are store_schema.c's; the
 * tables' API is a file per family: store_services.c (apps, services,
 * instances), store_events.c (events, requests), store_leases.c (settings,
 * leases), store_code.c (code, vetted, secrets) and store_runs.c (runs,
 * jobs, schedules).  The engines, store_sqlite.c and store_pg.c, are
 * behind store_impl.h.
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
static int	 prune_batches(struct store *, enum store_q, int64_t, int64_t *);
static int	 q_writes(enum store_q);
static int	 fence_open(struct store *, enum store_q, int *);
static int	 fence_close(struct store *, int, int);
static int	 fence_check(struct store *);

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
store_errprefix(struct store *s, const char *fmt, ...)
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
store_nomem(struct store *s)
{
	store_seterr(s, 0, "%s", strerror(ENOMEM));
	errno = ENOMEM;
	return -1;
}

/* A name given by the caller: not empty, and fits its struct field. */
int
store_check_name(struct store *s, const char *what, const char *v, size_t max)
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
store_check_field(struct store *s, const char *what, const char *v, size_t size,
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
store_col_copy(struct store *s, int col, char *dst, size_t size,
    const char *what)
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
store_col_dup(struct store *s, int col)
{
	const char *t;
	char *d;

	if ((t = s->ops->col_text(s, col)) == NULL)
		return NULL;
	if ((d = strdup(t)) == NULL)
		(void)store_nomem(s);
	return d;
}

/* A store_read_one() reader: the first column, copied (store_col_dup). */
int
store_read_text_row(struct store *s, void *p)
{
	char **v = p;

	return (*v = store_col_dup(s, 0)) == NULL ? -1 : 0;
}

/* Runs a statement, ignoring rows.  0 or -1. */
int
store_q_do(struct store *s, enum store_q q, const struct store_arg *a, size_t n,
    int64_t *changes)
{
	int own, r;

	if (fence_open(s, q, &own) == -1)
		return -1;
	if ((r = s->ops->exec(s, q, a, n)) == 0) {
		while ((r = s->ops->next(s)) == 1)
			;
		if (r == 0 && changes != NULL)
			*changes = s->ops->changes(s);
	}
	s->ops->finish(s);
	return fence_close(s, own, r);
}

/* First column of the first row: 0 read, 1 no row, -1 error. */
int
store_q_int(struct store *s, enum store_q q, const struct store_arg *a,
    size_t n,
    int64_t *out)
{
	int own, r;

	if (fence_open(s, q, &own) == -1)
		return -1;
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
	return fence_close(s, own, r);
}

/*
 * A batch: one statement (many) where the engine can, else the row
 * statement q once per row.  Only inside a transaction: all or none.
 */
int
store_q_rows(struct store *s, enum store_q q, enum store_q many, size_t nargs,
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
			r = store_q_do(s, q, a, nargs, NULL);
	return r;
}

/* Makes room for one more element of size in v[n]. */
void *
store_grow(struct store *s, void *v, size_t n, size_t *cap, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return v;
	ncap = *cap == 0 ? 16 : *cap * 2;
	if ((nv = reallocarray(v, ncap, size)) == NULL) {
		(void)store_nomem(s);
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
store_read_rows(struct store *s, enum store_q q, const struct store_arg *a,
    size_t na, size_t size, int (*read)(struct store *, void *),
    void (*release)(void *, size_t), void **out, size_t *nout)
{
	char *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int own, r;

	*out = NULL;
	*nout = 0;
	if (fence_open(s, q, &own) == -1)
		return -1;
	if ((r = s->ops->exec(s, q, a, na)) == 0) {
		while ((r = s->ops->next(s)) == 1) {
			if ((nv = store_grow(s, v, n, &cap, size)) == NULL) {
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
	r = fence_close(s, own, r);
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
store_read_one(struct store *s, enum store_q q, const struct store_arg *a,
    size_t na, int (*read)(struct store *, void *), void *v)
{
	int own, r;

	if (fence_open(s, q, &own) == -1)
		return -1;
	if ((r = s->ops->exec(s, q, a, na)) == 0 &&
	    (r = s->ops->next(s)) == 1)
		r = read(s, v);
	else if (r == 0)
		r = 1;
	s->ops->finish(s);
	return fence_close(s, own, r);
}

/* Whether q changes a table: what a fenced store checks the epoch for. */
static int
q_writes(enum store_q q)
{
	static const char *const verbs[] = { "INSERT ", "UPDATE ",
	    "DELETE ", "REPLACE " };
	const char *sql = store_sql[q].text;
	size_t i;

	if (q == Q_LEASE_ACQUIRE || q == Q_LEASE_RENEW ||
	    q == Q_LEASE_RELEASE)
		return 0;	/* the lease's own rows: hk-lease's, unfenced */
	for (i = 0; i < NITEMS(verbs); i++)
		if (strncmp(sql, verbs[i], strlen(verbs[i])) == 0 ||
		    (strncmp(sql, "WITH ", 5) == 0 &&
		    strstr(sql, verbs[i]) != NULL))
			return 1;
	return 0;
}

/*
 * A write of a fenced store outside a transaction: in one of its own, so
 * that the check of the epoch (store_begin()) and the write commit
 * together.  *own says whether fence_close() ends it.
 */
static int
fence_open(struct store *s, enum store_q q, int *own)
{
	*own = s->fence_epoch != 0 && !s->in_tx && q_writes(q);
	if (*own && store_begin(s) == -1)
		return -1;
	return 0;
}

/* Ends fence_open()'s transaction, keeping r (1: no row) unless it fails. */
static int
fence_close(struct store *s, int own, int r)
{
	if (!own)
		return r;
	if (r == -1) {
		store_rollback_keep_error(s);
		return -1;
	}
	return store_commit(s) == -1 ? -1 : r;
}

/*
 * First in a fenced store's transaction: 0 the lease still has our
 * epoch; else -1, the transaction rolled back and the holder told.  A
 * failure to read the row (busy, a lost connection) is only that.
 */
static int
fence_check(struct store *s)
{
	struct store_arg a[] = { ARG_TEXT(s->fence_name) };
	char why[STORE_ERR_LEN];
	int64_t epoch = 0;
	int r;

	r = store_q_int(s, Q_FENCE_EPOCH, a, NITEMS(a), &epoch);
	if (r == 0 && epoch == s->fence_epoch)
		return 0;
	if (r == -1) {
		store_errprefix(s, "lease %s: fence", s->fence_name);
		store_rollback_keep_error(s);
		return -1;
	}
	if (r == 1)
		(void)snprintf(why, sizeof(why), "lease %s: fenced: the lease "
		    "has no row, and this process writes under its epoch "
		    "%lld", s->fence_name, (long long)s->fence_epoch);
	else
		(void)snprintf(why, sizeof(why), "lease %s: fenced: epoch "
		    "%lld has replaced this process's %lld, so it no longer "
		    "leads", s->fence_name, (long long)epoch,
		    (long long)s->fence_epoch);
	(void)store_rollback(s);
	store_seterr(s, 0, "%s", why);
	if (s->fenced != NULL)
		s->fenced(s->fenced_arg, why);
	store_seterr(s, 0, "%s", why);
	return -1;
}

/* A transaction of our own, unless the caller has one open. */
int
store_own_begin(struct store *s, int *own)
{
	*own = !s->in_tx;
	if (*own && store_begin(s) == -1)
		return -1;
	return 0;
}

int
store_own_end(struct store *s, int own, int r)
{
	if (!own)
		return r;
	if (r == -1) {
		store_rollback_keep_error(s);
		return -1;
	}
	return store_commit(s);
}

void
store_rollback_keep_error(struct store *s)
{
	char err[STORE_ERR_LEN];
	int busy = s->busy;

	memcpy(err, s->err, sizeof(err));
	(void)store_rollback(s);
	memcpy(s->err, err, sizeof(err));
	s->busy = busy;
}

/*
 * Both deletes of one table, PRUNE_BATCH rows a statement, each batch in
 * a transaction of its own unless the caller holds one: under a lease a
 * statement is bounded (hk-lease(1)), and one DELETE of a year of rows
 * would pass the bound, fail and be tried again for ever; and the write
 * lock is let go between batches, so that the gateway's records wait a
 * batch at most.  by_age takes before, by_rows max_rows; each then the
 * batch's size.
 */
int
store_prune(struct store *s, enum store_q by_age, enum store_q by_rows,
    int64_t before, int64_t max_rows, int64_t *deleted)
{
	int64_t n = 0;
	int r = 0;

	call_start(s);
	if (before > 0)
		r = prune_batches(s, by_age, before, &n);
	if (r == 0 && max_rows > 0)
		r = prune_batches(s, by_rows, max_rows, &n);
	if (deleted != NULL)
		*deleted = n;
	return r;
}

/* Batches of q(arg, PRUNE_BATCH) until one deletes fewer; *n adds up. */
static int
prune_batches(struct store *s, enum store_q q, int64_t arg, int64_t *n)
{
	struct store_arg a[] = { ARG_INT(arg), ARG_INT(PRUNE_BATCH) };
	int64_t k;
	int own, r;

	do {
		k = 0;
		if (store_own_begin(s, &own) == -1)
			return -1;
		r = store_q_do(s, q, a, NITEMS(a), &k);
		if (store_own_end(s, own, r) == -1)
			return -1;
		*n += k;
	} while (k >= PRUNE_BATCH);
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
	    store_q_int(s, Q_SCHEMA_VERSION, NULL, 0, &have) == -1)
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
		    store_q_do(s, Q_MIGRATION_ADD, a, NITEMS(a), NULL) == -1) {
			store_errprefix(s, "migration %jd (%s)",
			    (intmax_t)m->version,
			    m->what);
			goto fail;
		}
	}
	return store_commit(s);
fail:
	store_rollback_keep_error(s);
	return -1;
}

/*
 * A store of the engine the URL names, not opened yet (target: what the
 * engine opens); NULL with err and errno set for a URL refused.
 */
static struct store *
store_new(const char *url, const char **target, char *err, size_t errlen)
{
	static const char schemes[] =
	    "expected sqlite://PATH, postgres://... or postgresql://...";
	const struct store_ops *ops;
	enum store_engine engine;
	const char *colon;
	struct store *s;

	if (errlen > 0)
		err[0] = '\0';
	if (url == NULL)
		url = "";
	if (strncmp(url, "sqlite://", 9) == 0) {
		engine = STORE_SQLITE;
		ops = &store_sqlite_ops;
		*target = url + 9;
	} else if (strncmp(url, "postgres://", 11) == 0 ||
	    strncmp(url, "postgresql://", 13) == 0) {
		engine = STORE_POSTGRES;
		ops = &store_pg_ops;
		*target = url;
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
	return s;
}

/* An open that failed: err says why, errno whether to try again. */
static struct store *
store_open_failed(struct store *s, char *err, size_t errlen)
{
	int e;

	(void)snprintf(err, errlen, "%s", s->err);
	e = s->busy ? EAGAIN : EIO;
	store_close(s);
	errno = e;
	return NULL;
}

struct store *
store_open(const char *url, char *err, size_t errlen)
{
	const char *target;
	struct store *s;

	if ((s = store_new(url, &target, err, errlen)) == NULL)
		return NULL;
	if (s->ops->open(s, target) == -1)
		return store_open_failed(s, err, errlen);
	if (migrate(s) == -1) {
		store_errprefix(s, "%s: migrate", s->ops->name);
		return store_open_failed(s, err, errlen);
	}
	return s;
}

struct store *
store_open_readonly(const char *url, char *err, size_t errlen)
{
	const int64_t latest = store_migrations[store_nmigrations - 1].version;
	const char *target;
	struct store *s;
	int64_t have;
	int none;

	if ((s = store_new(url, &target, err, errlen)) == NULL)
		return NULL;
	if (s->ops->open_readonly(s, target, &none) == -1 ||
	    (!none && store_schema_version(s, &have) == -1))
		return store_open_failed(s, err, errlen);
	if (none) {
		store_seterr(s, 0, "%s: no store there yet", s->ops->name);
		(void)store_open_failed(s, err, errlen);
		errno = ENOENT;
		return NULL;
	}
	if (have > latest) {
		store_seterr(s, 0, "%s: schema version %jd is newer than this "
		    "program knows (%jd): upgrade it", s->ops->name,
		    (intmax_t)have, (intmax_t)latest);
		return store_open_failed(s, err, errlen);
	}
	return s;
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
	if (store_q_int(s, Q_SCHEMA_VERSION, NULL, 0, version) != 0) {
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
	if (s->fence_epoch != 0 && fence_check(s) == -1)
		return -1;
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
