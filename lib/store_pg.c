/*
 * store_pg.c - the PostgreSQL engine of the state store (store_impl.h).
 *
 * libpq, one connection per store, application_name "hk" unless the URL
 * names one.  Statements are prepared once per connection (PQprepare with
 * explicit int8/text parameter types) and run with PQexecPrepared, text
 * format; only the constant DDL and transaction commands go through PQexec.
 * lock_timeout is STORE_BUSY_MS, like SQLite's busy timeout.
 *
 * Temporary failures (store_busy()): serialization failure (40001),
 * deadlock (40P01), lock timeout (55P03), query canceled (57014), server
 * shutting down (57P01-57P03), connection errors (class 08) and a lost
 * connection.  A connection lost outside a transaction is reset on the
 * next call; one lost inside fails every call until store_rollback().
 *
 * store_begin() takes a session advisory lock (the installation's write
 * lock) before BEGIN ISOLATION LEVEL SERIALIZABLE, and commit or rollback
 * releases it; migrations take a transaction-level advisory lock instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store.h"
#include "store_impl.h"

#define PG_MAXARGS	16
#define PG_INT8OID	20		/* catalog/pg_type.h, stable */
#define PG_TEXTOID	25
#define PG_MIN_VERSION	90500		/* INSERT ... ON CONFLICT */

/* pg_advisory_lock(HK, n): 0x686b is "hk". */
#define PG_LOCK_CLASS	"26731"
#define PG_LOCK_MIGRATE	"SELECT pg_advisory_xact_lock(" PG_LOCK_CLASS ", 1)"
#define PG_LOCK_WRITE	"SELECT pg_advisory_lock(" PG_LOCK_CLASS ", 2)"
#define PG_UNLOCK_WRITE	"SELECT pg_advisory_unlock(" PG_LOCK_CLASS ", 2)"

struct pg {
	PGconn		*conn;
	PGresult	*res;		/* rows of the active statement */
	int		 row;
	int		 nrows;
	int		 locked;	/* holds the session write lock */
	unsigned char	 prepared[Q_COUNT];
};

static void	 pg_notice(void *, const char *);
static void	 pg_flat(char *, size_t, const char *);
static int	 pg_is_busy(struct pg *, const char *);
static int	 pg_fail(struct store *, PGresult *, const char *);
static int	 pg_cmd(struct store *, const char *, const char *,
		    const char *);
static int	 pg_session(struct store *);
static int	 pg_alive(struct store *);
static void	 pg_unlock(struct store *);
static int	 pg_open(struct store *, const char *);
static void	 pg_close(struct store *);
static int	 pg_script(struct store *, const char *);
static int	 pg_begin(struct store *);
static int	 pg_migrate_begin(struct store *);
static int	 pg_commit(struct store *);
static int	 pg_rollback(struct store *);
static int	 pg_exec(struct store *, enum store_q,
		    const struct store_arg *, size_t);
static int	 pg_next(struct store *);
static int	 pg_isnull(struct store *, int);
static int64_t	 pg_col_int(struct store *, int);
static const char *pg_col_text(struct store *, int);
static int64_t	 pg_changes(struct store *);
static void	 pg_finish(struct store *);

const struct store_ops store_pg_ops = {
	.name = "postgres",
	.open = pg_open,
	.close = pg_close,
	.script = pg_script,
	.begin = pg_begin,
	.migrate_begin = pg_migrate_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.exec = pg_exec,
	.next = pg_next,
	.isnull = pg_isnull,
	.col_int = pg_col_int,
	.col_text = pg_col_text,
	.changes = pg_changes,
	.finish = pg_finish,
};

/* A library does not write on stderr: notices are dropped. */
static void
pg_notice(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

/* libpq's messages span lines; ours are one line, single-spaced. */
static void
pg_flat(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	if (size == 0)
		return;
	for (; src != NULL && *src != '\0' && n + 1 < size; src++) {
		if (*src == '\n' || *src == '\t' || *src == ' ') {
			if (n > 0 && dst[n - 1] != ' ')
				dst[n++] = ' ';
		} else
			dst[n++] = *src;
	}
	while (n > 0 && dst[n - 1] == ' ')
		n--;
	dst[n] = '\0';
}

static int
pg_is_busy(struct pg *p, const char *state)
{
	static const char *const busy[] = {
		"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03",
	};
	size_t i;

	if (p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK)
		return 1;
	if (state == NULL)
		return 0;
	if (strncmp(state, "08", 2) == 0)
		return 1;
	for (i = 0; i < sizeof(busy) / sizeof(busy[0]); i++)
		if (strcmp(state, busy[i]) == 0)
			return 1;
	return 0;
}

static int
pg_fail(struct store *s, PGresult *res, const char *what)
{
	struct pg *p = s->eng;
	char msg[STORE_ERR_LEN];
	const char *state = NULL, *prim = NULL;

	if (res != NULL) {
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		prim = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	}
	pg_flat(msg, sizeof(msg), prim != NULL ? prim :
	    PQerrorMessage(p->conn));
	if (msg[0] == '\0')
		(void)strlcpy(msg, "unknown error", sizeof(msg));
	store_seterr(s, pg_is_busy(p, state), "postgres: %s: %s", what, msg);
	return -1;
}

/* Constant SQL without parameters; want: the expected command tag. */
static int
pg_cmd(struct store *s, const char *sql, const char *what, const char *want)
{
	struct pg *p = s->eng;
	PGresult *res;
	ExecStatusType st;

	res = PQexec(p->conn, sql);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		(void)pg_fail(s, res, what);
		PQclear(res);
		return -1;
	}
	if (want != NULL && strcmp(PQcmdStatus(res), want) != 0) {
		store_seterr(s, 0, "postgres: %s: the transaction was rolled "
		    "back by an earlier error", what);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

/* Settings of a new (or reset) connection. */
static int
pg_session(struct store *s)
{
	struct pg *p = s->eng;

	memset(p->prepared, 0, sizeof(p->prepared));
	p->locked = 0;
	return pg_cmd(s, "SET lock_timeout = " STORE_STR(STORE_BUSY_MS),
	    "session", NULL);
}

/* Before a call: reconnects a connection lost between transactions. */
static int
pg_alive(struct store *s)
{
	struct pg *p = s->eng;
	char msg[STORE_ERR_LEN];

	if (PQstatus(p->conn) == CONNECTION_OK)
		return 0;
	if (s->in_tx) {
		store_seterr(s, 1, "postgres: connection lost in a "
		    "transaction: roll back and retry");
		return -1;
	}
	PQreset(p->conn);
	if (PQstatus(p->conn) != CONNECTION_OK) {
		pg_flat(msg, sizeof(msg), PQerrorMessage(p->conn));
		store_seterr(s, 1, "postgres: connection lost: %s", msg);
		return -1;
	}
	return pg_session(s);
}

static void
pg_unlock(struct store *s)
{
	struct pg *p = s->eng;
	PGresult *res;

	if (!p->locked)
		return;
	p->locked = 0;
	/* A lost session has lost its locks too. */
	if (PQstatus(p->conn) == CONNECTION_OK) {
		res = PQexec(p->conn, PG_UNLOCK_WRITE);
		PQclear(res);
	}
}

static int
pg_open(struct store *s, const char *url)
{
	/* Keywords before dbname are defaults the URL may override. */
	static const char *const kw[] = {
		"application_name", "connect_timeout", "dbname", NULL,
	};
	const char *val[] = { "hk", "10", url, NULL };
	char msg[STORE_ERR_LEN];
	struct pg *p;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		store_seterr(s, 0, "postgres: %s", strerror(errno));
		return -1;
	}
	s->eng = p;
	if ((p->conn = PQconnectdbParams(kw, val, 1)) == NULL) {
		store_seterr(s, 0, "postgres: %s", strerror(ENOMEM));
		return -1;
	}
	if (PQstatus(p->conn) != CONNECTION_OK) {
		/* Most often the server is down or restarting: try later. */
		pg_flat(msg, sizeof(msg), PQerrorMessage(p->conn));
		store_seterr(s, 1, "postgres: %s", msg);
		return -1;
	}
	(void)PQsetNoticeProcessor(p->conn, pg_notice, NULL);
	if (PQserverVersion(p->conn) < PG_MIN_VERSION) {
		store_seterr(s, 0, "postgres: server version %d is too old "
		    "(9.5 or later needed)", PQserverVersion(p->conn));
		return -1;
	}
	return pg_session(s);
}

static void
pg_close(struct store *s)
{
	struct pg *p = s->eng;

	if (p == NULL)
		return;
	pg_finish(s);
	if (p->conn != NULL)
		PQfinish(p->conn);
	free(p);
	s->eng = NULL;
}

static int
pg_script(struct store *s, const char *sql)
{
	if (pg_alive(s) == -1)
		return -1;
	return pg_cmd(s, sql, "script", NULL);
}

/*
 * The lock first, then the transaction, so that its snapshot sees what the
 * previous holder committed.
 */
static int
pg_begin(struct store *s)
{
	struct pg *p = s->eng;
	char err[STORE_ERR_LEN];
	int busy;

	if (pg_alive(s) == -1)
		return -1;
	if (pg_cmd(s, PG_LOCK_WRITE, "begin: write lock", NULL) == -1)
		return -1;
	p->locked = 1;
	if (pg_cmd(s, "BEGIN ISOLATION LEVEL SERIALIZABLE", "begin",
	    NULL) == -1) {
		memcpy(err, s->err, sizeof(err));
		busy = s->busy;
		pg_unlock(s);
		memcpy(s->err, err, sizeof(err));
		s->busy = busy;
		return -1;
	}
	return 0;
}

static int
pg_migrate_begin(struct store *s)
{
	char err[STORE_ERR_LEN];
	int busy;

	if (pg_alive(s) == -1)
		return -1;
	if (pg_cmd(s, "BEGIN", "migrate: begin", NULL) == -1)
		return -1;
	if (pg_cmd(s, PG_LOCK_MIGRATE, "migrate: lock", NULL) == -1) {
		memcpy(err, s->err, sizeof(err));
		busy = s->busy;
		(void)pg_cmd(s, "ROLLBACK", "rollback", NULL);
		memcpy(s->err, err, sizeof(err));
		s->busy = busy;
		return -1;
	}
	return 0;
}

/* A COMMIT ends the transaction, failed or not; then the lock goes. */
static int
pg_commit(struct store *s)
{
	struct pg *p = s->eng;
	char err[STORE_ERR_LEN];
	int busy, r;

	if (PQstatus(p->conn) != CONNECTION_OK) {
		p->locked = 0;
		store_seterr(s, 1, "postgres: commit: connection lost");
		return -1;
	}
	pg_finish(s);
	r = pg_cmd(s, "COMMIT", "commit", "COMMIT");
	memcpy(err, s->err, sizeof(err));
	busy = s->busy;
	pg_unlock(s);
	memcpy(s->err, err, sizeof(err));
	s->busy = busy;
	return r;
}

static int
pg_rollback(struct store *s)
{
	struct pg *p = s->eng;
	int r = 0;

	pg_finish(s);
	if (PQstatus(p->conn) != CONNECTION_OK) {
		p->locked = 0;
		return 0;
	}
	if (PQtransactionStatus(p->conn) != PQTRANS_IDLE)
		r = pg_cmd(s, "ROLLBACK", "rollback", NULL);
	pg_unlock(s);
	return r;
}

static int
pg_exec(struct store *s, enum store_q q, const struct store_arg *a,
    size_t n)
{
	struct pg *p = s->eng;
	const char *what = store_sql[q].name;
	const char *vals[PG_MAXARGS];
	char nums[PG_MAXARGS][24], name[16];
	Oid types[PG_MAXARGS];
	PGresult *res;
	ExecStatusType st;
	size_t i;

	pg_finish(s);
	if (n > PG_MAXARGS) {
		store_seterr(s, 0, "postgres: %s: too many parameters", what);
		return -1;
	}
	if (pg_alive(s) == -1)
		return -1;
	(void)snprintf(name, sizeof(name), "hk_%d", (int)q);
	if (!p->prepared[q]) {
		for (i = 0; i < n; i++)
			types[i] = a[i].type == STORE_ARG_INT ? PG_INT8OID :
			    PG_TEXTOID;
		res = PQprepare(p->conn, name, store_sql[q].text, (int)n,
		    types);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			(void)pg_fail(s, res, what);
			PQclear(res);
			return -1;
		}
		PQclear(res);
		p->prepared[q] = 1;
	}
	for (i = 0; i < n; i++) {
		if (a[i].type == STORE_ARG_INT) {
			(void)snprintf(nums[i], sizeof(nums[i]), "%" PRId64,
			    a[i].num);
			vals[i] = nums[i];
		} else
			vals[i] = a[i].text;
	}
	res = PQexecPrepared(p->conn, name, (int)n, vals, NULL, NULL, 0);
	st = PQresultStatus(res);
	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		(void)pg_fail(s, res, what);
		PQclear(res);
		return -1;
	}
	p->res = res;
	p->row = -1;
	p->nrows = PQntuples(res);
	return 0;
}

static int
pg_next(struct store *s)
{
	struct pg *p = s->eng;

	if (p->res == NULL || p->row + 1 >= p->nrows)
		return 0;
	p->row++;
	return 1;
}

static int
pg_isnull(struct store *s, int col)
{
	struct pg *p = s->eng;

	return PQgetisnull(p->res, p->row, col);
}

static int64_t
pg_col_int(struct store *s, int col)
{
	struct pg *p = s->eng;

	if (PQgetisnull(p->res, p->row, col))
		return 0;
	return strtoll(PQgetvalue(p->res, p->row, col), NULL, 10);
}

static const char *
pg_col_text(struct store *s, int col)
{
	struct pg *p = s->eng;

	if (PQgetisnull(p->res, p->row, col))
		return NULL;
	return PQgetvalue(p->res, p->row, col);
}

static int64_t
pg_changes(struct store *s)
{
	struct pg *p = s->eng;
	const char *t;

	if (p->res == NULL || *(t = PQcmdTuples(p->res)) == '\0')
		return 0;
	return strtoll(t, NULL, 10);
}

static void
pg_finish(struct store *s)
{
	struct pg *p = s->eng;

	if (p == NULL || p->res == NULL)
		return;
	PQclear(p->res);
	p->res = NULL;
}
