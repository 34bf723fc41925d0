/*
 * store_pg.c - the PostgreSQL engine of the state store (store_impl.h).
 *
 * libpq, one connection per store, application_name "hk" unless the URL
 * names one.  Statements are prepared once per connection (PQprepare with
 * explicit int8/text parameter types) and run with PQexecPrepared, text
 * format; only the constant DDL and transaction commands go through PQexec.
 * lock_timeout is STORE_BUSY_MS, like SQLite's busy timeout; under a
 * bound (store_bound()), three quarters of the bound.
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
 *
 * The lease lock is a session advisory lock, pg_try_advisory_lock on
 * hashtext('hk-lease:' || name) (the one-bigint form, apart from the
 * two-int locks above), held by the store's connection, whose
 * application_name becomes "hk-lease:NAME".  The server frees it when the
 * connection goes, so the lease is lost as soon as the connection is: a
 * lost connection is never silently reset under a lease (the backend pid
 * is checked).  Two names of the same hash would exclude each other.
 * The lock can be free while the old holder still runs (its connection
 * was terminated under it): the row, whose times are the server's clock
 * (clock_timestamp(), read by the lease check), tells the new holder how
 * long to wait (store.h).
 *
 * Once locked, every statement of the store waits for its answer at most
 * STORE_LEASE_WAIT(ttl) (libpq's asynchronous calls under poll(), and
 * statement_timeout on the server): a server that is cut off or stalled
 * cannot hold a statement past the TTL.  A wait that times out shuts the
 * socket down, so the connection, and with it the lease, is lost.  The
 * server in turn drops the session of a silent client (TCP keepalives,
 * and tcp_user_timeout from PostgreSQL 12) soon after the TTL, and from
 * PostgreSQL 14 that of a client that stopped renewing while its socket
 * stays up (idle_session_timeout, the TTL), which frees the lock for a
 * new holder.
 */
#include <sys/socket.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "pq.h"
#include "store.h"
#include "store_impl.h"

#define PG_MAXARGS	16
#define PG_INT8OID	20		/* catalog/pg_type.h, stable */
#define PG_TEXTOID	25
#define PG_BYTEAOID	17
#define PG_INT8ARRAYOID	1016
#define PG_TEXTARRAYOID	1009
#define PG_MIN_VERSION	90500		/* INSERT ... ON CONFLICT */

/* pg_advisory_lock(HK, n): 0x686b is "hk". */
#define PG_LOCK_CLASS	"26731"
#define PG_LOCK_MIGRATE	"SELECT pg_advisory_xact_lock(" PG_LOCK_CLASS ", 1)"
#define PG_LOCK_WRITE	"SELECT pg_advisory_lock(" PG_LOCK_CLASS ", 2)"
#define PG_UNLOCK_WRITE	"SELECT pg_advisory_unlock(" PG_LOCK_CLASS ", 2)"
#define PG_LEASE_KEY	"hashtext('hk-lease:' || $1::text)::bigint"
#define PG_LEASE_LOCK	"SELECT pg_try_advisory_lock(" PG_LEASE_KEY "), " \
	"set_config('application_name', 'hk-lease:' || $1::text, false)"
#define PG_LEASE_UNLOCK	"SELECT pg_advisory_unlock(" PG_LEASE_KEY ")"
#define PG_LEASE_BOUND	"SELECT set_config('statement_timeout', $1, false), " \
	"set_config('tcp_keepalives_idle', $2, false), " \
	"set_config('tcp_keepalives_interval', '1', false), " \
	"set_config('tcp_keepalives_count', '3', false)"
#define PG_LEASE_TUT	"SELECT set_config('tcp_user_timeout', $1, false)"
#define PG_LEASE_IDLE	"SELECT set_config('idle_session_timeout', $1, false)"
#define PG_LEASE_NOW	"SELECT floor(extract(epoch FROM clock_timestamp()) " \
	"* 1000)::bigint"
/* pg_silent(): when the server gives up on a client it no longer hears */
#define PG_SILENT	"SELECT set_config('tcp_keepalives_idle', '2', false), " \
	"set_config('tcp_keepalives_interval', '1', false), " \
	"set_config('tcp_keepalives_count', '3', false)"
#define PG_SILENT_TUT	"SET tcp_user_timeout = 5000"
#define PG_SILENT_TX	"SET idle_in_transaction_session_timeout = 30000"

struct pg {
	PGconn		*conn;
	PGresult	*res;		/* rows of the active statement */
	int		 row;
	int		 nrows;
	int		 locked;	/* holds the session write lock */
	int		 lease_pid;	/* backend with the lease, 0 = none */
	char		 lease_name[STORE_NAME_MAX + 1];
	int64_t		 bound_ms;	/* under a lease: longest wait, or 0 */
	int		 timed_out;	/* the last wait went past bound_ms */
	int		 broke;		/* the last call failed as a broken link */
	int		 readonly;	/* store_open_readonly(): a check's */
	unsigned char	 prepared[Q_COUNT];
	unsigned char	*blob;		/* pg_col_blob()'s bytes, libpq's */
};

/* An array literal being built (pg_exec_rows). */
struct pg_buf {
	char		*b;
	size_t		 len;
	size_t		 cap;
};

static void	 pg_notice(void *, const char *);
static void	 pg_flat(char *, size_t, const char *);
static int	 pg_is_busy(struct pg *, const char *);
static int	 pg_fail(struct store *, PGresult *, const char *);
static int	 pg_cmd(struct store *, const char *, const char *,
		    const char *);
static int	 pg_session(struct store *);
static int	 pg_alive(struct store *);
static PGresult	*pg_exec_sql(struct store *, const char *);
static int	 pg_lost(const struct store *);
static void	 pg_unlock(struct store *);
static int	 pg_open(struct store *, const char *);
static int	 pg_open_readonly(struct store *, const char *, int *);
static int	 pg_connect(struct store *, const char *, int);
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
static const unsigned char *pg_col_blob(struct store *, int, size_t *);
static char	*pg_hex(struct store *, const struct store_arg *);
static int64_t	 pg_changes(struct store *);
static void	 pg_finish(struct store *);
static int	 pg_run_once(struct store *, enum store_q, const char *const *,
		    const Oid *, size_t);
static int	 pg_run(struct store *, enum store_q, const char *const *,
		    const Oid *, size_t);
static int	 pg_buf_room(struct pg_buf *, size_t);
static int	 pg_buf_elem(struct pg_buf *, const struct store_arg *);
static int	 pg_exec_rows(struct store *, enum store_q, enum store_q,
		    size_t, size_t, store_row_fn *, const void *);
static int64_t	 pg_clock_ms(void);
static PGresult	*pg_bounded(struct store *, int);
static int	 pg_prepare(struct store *, const char *, const char *, int,
		    const Oid *, PGresult **);
static PGresult	*pg_run_prepared(struct store *, const char *, int,
		    const char *const *);
static PGresult	*pg_run_params(struct store *, const char *, int,
		    const char *const *);
static int	 pg_lease_run(struct store *, const char *,
		    const char *const *, int, const char *);
static int	 pg_lease_bound(struct store *, int64_t);
static void	 pg_bound(struct store *, int64_t);
static int	 pg_set_lock_wait(struct store *);
static int	 pg_silent(struct store *);
static int	 pg_lease_lock(struct store *, const char *, int64_t);
static int	 pg_lease_check(struct store *, int64_t *);
static void	 pg_lease_unlock(struct store *);

const struct store_ops store_pg_ops = {
	.name = "postgres",
	.open = pg_open,
	.open_readonly = pg_open_readonly,
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
	.col_blob = pg_col_blob,
	.changes = pg_changes,
	.finish = pg_finish,
	.exec_rows = pg_exec_rows,
	.lease_lock = pg_lease_lock,
	.lease_check = pg_lease_check,
	.lease_unlock = pg_lease_unlock,
	.bound = pg_bound,
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
	if (p->timed_out) {
		p->timed_out = 0;
		(void)snprintf(msg, sizeof(msg), "no answer within %jd ms: "
		    "connection closed", (intmax_t)p->bound_ms);
	}
	if (msg[0] == '\0')
		(void)strlcpy(msg, "unknown error", sizeof(msg));
	p->broke = p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK ||
	    state == NULL || strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P0", 4) == 0;
	store_seterr(s, pg_is_busy(p, state), "postgres: %s: %s", what, msg);
	return -1;
}

/* Constant SQL without parameters; want: the expected command tag. */
static int
pg_cmd(struct store *s, const char *sql, const char *what, const char *want)
{
	PGresult *res;
	ExecStatusType st;

	res = pg_exec_sql(s, sql);
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
	if (p->readonly && pg_cmd(s, "SET default_transaction_read_only = on",
	    "session", NULL) == -1)
		return -1;
	if (pg_silent(s) == -1)
		return -1;
	return pg_set_lock_wait(s);
}

/*
 * Every writer holds the installation's write lock, a session lock, from
 * before BEGIN to after COMMIT.  A writer cut off from the server inside
 * that span (its host's link down, its process stopped) would keep it,
 * and every other writer, a standby's lease acquisition among them, would
 * wait until the server noticed: with the kernel's defaults, hours.  So
 * the server drops the session of a client it no longer hears: one silent
 * for 2 s then deaf to 3 keepalives a second apart, one that leaves data
 * unacknowledged for 5 s (tcp_user_timeout, PostgreSQL 12), and one that
 * leaves its transaction idle for 30 s (no hk transaction waits on its
 * client that long; PostgreSQL 9.6).  Over a Unix socket only the last
 * applies.  A lease's session sets its own from its TTL
 * (pg_lease_bound()).
 */
static int
pg_silent(struct store *s)
{
	struct pg *p = s->eng;

	if (pg_cmd(s, PG_SILENT, "session", NULL) == -1)
		return -1;
	if (PQserverVersion(p->conn) >= 120000 &&
	    pg_cmd(s, PG_SILENT_TUT, "session", NULL) == -1)
		return -1;
	if (PQserverVersion(p->conn) >= 90600 &&
	    pg_cmd(s, PG_SILENT_TX, "session", NULL) == -1)
		return -1;
	return 0;
}

/*
 * The server's wait for a lock: STORE_BUSY_MS, or under a bound three
 * quarters of it, so that a write waiting for another's lock gets the
 * server's busy error (store_busy(), tried again as any) and keeps its
 * connection, rather than the bound's shutdown of the socket.
 */
static int
pg_set_lock_wait(struct store *s)
{
	struct pg *p = s->eng;
	int64_t ms = STORE_BUSY_MS;
	char sql[64];

	if (p->bound_ms > 0 && p->bound_ms * 3 / 4 < ms)
		ms = p->bound_ms * 3 / 4 > 0 ? p->bound_ms * 3 / 4 : 1;
	(void)snprintf(sql, sizeof(sql), "SET lock_timeout = %" PRId64, ms);
	return pg_cmd(s, sql, "session", NULL);
}

/* Before a call: reconnects a connection lost between transactions. */
static int
pg_alive(struct store *s)
{
	struct pg *p = s->eng;
	char msg[STORE_ERR_LEN];

	if (PQstatus(p->conn) == CONNECTION_OK && !p->broke)
		return 0;
	if (s->in_tx) {
		store_seterr(s, 1, "postgres: connection lost in a "
		    "transaction: roll back and retry");
		return -1;
	}
	p->broke = 0;
	PQreset(p->conn);
	if (PQstatus(p->conn) != CONNECTION_OK) {
		pg_flat(msg, sizeof(msg), PQerrorMessage(p->conn));
		store_seterr(s, 1, "postgres: connection lost: %s", msg);
		return -1;
	}
	return pg_session(s);
}

/*
 * The connection broke during the last call: a server restarted (its
 * FATAL "terminating connection due to administrator command" is read by
 * the next call on the old connection), or went away.  A call outside a
 * transaction, or the first of one, is then made again once on a new
 * connection: nothing of it had been done, since the session ended
 * before it.
 */
static int
pg_lost(const struct store *s)
{
	const struct pg *p = s->eng;

	return p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK ||
	    p->broke;
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
		res = pg_exec_sql(s, PG_UNLOCK_WRITE);
		PQclear(res);
	}
}

static int
pg_open(struct store *s, const char *url)
{
	return pg_connect(s, url, 0);
}

/*
 * A check's look (store_open_readonly()): every transaction of the
 * session read only, so that nothing it runs can write; a database
 * without hk's tables has no store.
 */
static int
pg_open_readonly(struct store *s, const char *url, int *none)
{
	struct pg *p;
	PGresult *res;
	int r = 0;

	*none = 0;
	if (pg_connect(s, url, 1) == -1)
		return -1;
	p = s->eng;
	res = PQexec(p->conn,
	    "SELECT to_regclass('schema_migrations') IS NULL");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		r = pg_fail(s, res, "look for the schema");
	else
		*none = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return r;
}

static int
pg_connect(struct store *s, const char *url, int readonly)
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
	p->readonly = readonly;
	if (pq_load(msg, sizeof(msg)) == -1) {
		store_seterr(s, 0, "postgres: %s", msg);
		return -1;
	}
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
	if (p->blob != NULL)
		PQfreemem(p->blob);
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
	if (pg_cmd(s, PG_LOCK_WRITE, "begin: write lock", NULL) == -1 &&
	    (!pg_lost(s) || pg_alive(s) == -1 ||
	    pg_cmd(s, PG_LOCK_WRITE, "begin: write lock", NULL) == -1))
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
	const char *vals[PG_MAXARGS];
	char nums[PG_MAXARGS][24], *hex[PG_MAXARGS];
	Oid types[PG_MAXARGS];
	size_t i;
	int r = -1;

	pg_finish(s);
	if (n > PG_MAXARGS) {
		store_seterr(s, 0, "postgres: %s: too many parameters",
		    store_sql[q].name);
		return -1;
	}
	memset(hex, 0, sizeof(hex));
	for (i = 0; i < n; i++) {
		if (a[i].type == STORE_ARG_INT) {
			(void)snprintf(nums[i], sizeof(nums[i]), "%" PRId64,
			    a[i].num);
			vals[i] = nums[i];
			types[i] = PG_INT8OID;
		} else if (a[i].type == STORE_ARG_BLOB && a[i].text != NULL) {
			if ((hex[i] = pg_hex(s, &a[i])) == NULL) {
				store_seterr(s, 0, "postgres: %s: %s",
				    store_sql[q].name, strerror(ENOMEM));
				goto out;
			}
			vals[i] = hex[i];
			types[i] = PG_BYTEAOID;
		} else {
			vals[i] = a[i].text;
			types[i] = a[i].type == STORE_ARG_BLOB ? PG_BYTEAOID :
			    PG_TEXTOID;
		}
	}
	r = pg_run(s, q, vals, types, n);
out:
	for (i = 0; i < n; i++)
		if (hex[i] != NULL)
			PQfreemem(hex[i]);
	return r;
}

/*
 * A blob parameter in bytea's text form, which libpq writes (a backslash,
 * x, and hex digits); the server parses it like any other parameter.
 */
static char *
pg_hex(struct store *s, const struct store_arg *a)
{
	struct pg *p = s->eng;
	size_t n;

	return (char *)PQescapeByteaConn(p->conn,
	    (const unsigned char *)a->text, a->len > 0 ? (size_t)a->len : 0,
	    &n);
}

/* pg_run_once, again on a new connection if the old one was lost. */
static int
pg_run(struct store *s, enum store_q q, const char *const *vals,
    const Oid *types, size_t n)
{
	if (pg_run_once(s, q, vals, types, n) == 0)
		return 0;
	if (s->in_tx || !pg_lost(s))
		return -1;
	return pg_run_once(s, q, vals, types, n);
}

/* Prepares q once per connection (types: its parameters), then runs it. */
static int
pg_run_once(struct store *s, enum store_q q, const char *const *vals,
    const Oid *types, size_t n)
{
	struct pg *p = s->eng;
	const char *what = store_sql[q].name;
	char name[16];
	PGresult *res;
	ExecStatusType st;

	if (pg_alive(s) == -1)
		return -1;
	(void)snprintf(name, sizeof(name), "hk_%d", (int)q);
	if (!p->prepared[q]) {
		if (pg_prepare(s, name, store_sql[q].text, (int)n, types,
		    &res) == -1) {
			(void)pg_fail(s, res, what);
			PQclear(res);
			return -1;
		}
		PQclear(res);
		p->prepared[q] = 1;
	}
	res = pg_run_prepared(s, name, (int)n, vals);
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

/*
 * Results come as text, so a bytea column reads in its text form, which
 * libpq decodes; the bytes stay until the next call.  A value that does
 * not decode reads as NULL, which callers refuse as a damaged value.
 */
static const unsigned char *
pg_col_blob(struct store *s, int col, size_t *len)
{
	struct pg *p = s->eng;

	*len = 0;
	if (p->blob != NULL)
		PQfreemem(p->blob);
	p->blob = NULL;
	if (PQgetisnull(p->res, p->row, col))
		return NULL;
	p->blob = PQunescapeBytea((const unsigned char *)PQgetvalue(p->res,
	    p->row, col), len);
	return p->blob;
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

/* Room for len more bytes and a NUL. */
static int
pg_buf_room(struct pg_buf *b, size_t len)
{
	size_t cap;
	char *nb;

	if (b->len + len < b->cap)
		return 0;
	for (cap = b->cap > 0 ? b->cap : 4096; b->len + len >= cap; cap *= 2)
		if (cap > SIZE_MAX / 2)
			return -1;
	if ((nb = realloc(b->b, cap)) == NULL)
		return -1;
	b->b = nb;
	b->cap = cap;
	return 0;
}

/*
 * One element of an array literal.  Every string is quoted, with '"' and
 * '\\' escaped by a backslash, so that no byte of it (a brace, a comma, a
 * space, the word NULL) can end it or be taken for a delimiter; SQL NULL
 * is NULL unquoted.  The server parses it (array_in): no SQL is built.
 */
static int
pg_buf_elem(struct pg_buf *b, const struct store_arg *a)
{
	const char *t;
	size_t len;
	int n;

	if (a->type == STORE_ARG_INT) {
		if (pg_buf_room(b, 24) == -1)
			return -1;
		n = snprintf(b->b + b->len, b->cap - b->len, "%" PRId64,
		    a->num);
		b->len += (size_t)n;
		return 0;
	}
	if (a->text == NULL) {
		if (pg_buf_room(b, 4) == -1)
			return -1;
		memcpy(b->b + b->len, "NULL", 4);
		b->len += 4;
		return 0;
	}
	len = a->len >= 0 ? (size_t)a->len : strlen(a->text);
	if (len > (SIZE_MAX - 2) / 2 || pg_buf_room(b, 2 * len + 2) == -1)
		return -1;
	b->b[b->len++] = '"';
	for (t = a->text; *t != '\0'; t++) {
		if (*t == '"' || *t == '\\')
			b->b[b->len++] = '\\';
		b->b[b->len++] = *t;
	}
	b->b[b->len++] = '"';
	return 0;
}

/*
 * A batch in one round trip: column j of every row goes into array
 * literal j ("{1,2}", "{\"a\",NULL}"), and the prepared statement many
 * unnests them (Q_*_ADD_MANY).  A round trip per row held hk-events to
 * about 12,000 rows a second; this writes 1000 in about 9 ms.  libpq's
 * pipeline mode, one round trip too, measured less than half of that:
 * the server still runs one INSERT per row.
 */
static int
pg_exec_rows(struct store *s, enum store_q q, enum store_q many,
    size_t nargs, size_t nrows, store_row_fn *row, const void *arg)
{
	struct pg_buf col[PG_MAXARGS];
	struct store_arg a[PG_MAXARGS];
	const char *vals[PG_MAXARGS];
	Oid types[PG_MAXARGS];
	size_t i, j;
	int r = -1;

	(void)q;
	pg_finish(s);
	if (nargs > PG_MAXARGS) {
		store_seterr(s, 0, "postgres: %s: too many parameters",
		    store_sql[many].name);
		return -1;
	}
	if (nrows == 0)
		return 0;
	memset(col, 0, sizeof(col));
	for (i = 0; i < nrows; i++) {
		if (row(s, arg, i, a) == -1)
			goto out;
		for (j = 0; j < nargs; j++) {
			if (i == 0)
				types[j] = a[j].type == STORE_ARG_INT ?
				    PG_INT8ARRAYOID : PG_TEXTARRAYOID;
			else if (types[j] != (a[j].type == STORE_ARG_INT ?
			    PG_INT8ARRAYOID : PG_TEXTARRAYOID)) {
				store_seterr(s, 0, "postgres: %s: row %zu: "
				    "parameter %zu of another type",
				    store_sql[many].name, i, j + 1);
				goto out;
			}
			if (pg_buf_room(&col[j], 1) == -1)
				goto nomem;
			col[j].b[col[j].len++] = i == 0 ? '{' : ',';
			if (pg_buf_elem(&col[j], &a[j]) == -1)
				goto nomem;
		}
	}
	for (j = 0; j < nargs; j++) {
		if (pg_buf_room(&col[j], 1) == -1)
			goto nomem;
		col[j].b[col[j].len++] = '}';
		col[j].b[col[j].len] = '\0';
		vals[j] = col[j].b;
	}
	if ((r = pg_run(s, many, vals, types, nargs)) == 0)
		pg_finish(s);
	goto out;
nomem:
	store_seterr(s, 0, "postgres: %s: %s", store_sql[many].name,
	    strerror(ENOMEM));
out:
	for (j = 0; j < nargs; j++)
		free(col[j].b);
	return r;
}

static int64_t
pg_clock_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * After a PQsend* call (sent is its result): the last result, within
 * bound_ms, or NULL.  Past the bound the socket is shut down, so libpq
 * finds the connection gone (a lost lease) and pg_fail() says why.
 */
static PGresult *
pg_bounded(struct store *s, int sent)
{
	struct pg *p = s->eng;
	struct pollfd pfd;
	PGresult *res, *last = NULL;
	int64_t deadline = pg_clock_ms() + p->bound_ms, left;

	p->timed_out = 0;
	if (!sent)
		return NULL;
	pfd.fd = PQsocket(p->conn);
	pfd.events = POLLIN;
	for (;;) {
		if (PQflush(p->conn) == -1)
			break;
		while (!PQisBusy(p->conn)) {
			if ((res = PQgetResult(p->conn)) == NULL)
				return last;
			PQclear(last);
			last = res;
		}
		if ((left = deadline - pg_clock_ms()) <= 0) {
			p->timed_out = 1;
			(void)shutdown(pfd.fd, SHUT_RDWR);
			(void)PQconsumeInput(p->conn);
			break;
		}
		if (poll(&pfd, 1, (int)left) == -1 && errno != EINTR)
			break;
		if (!PQconsumeInput(p->conn))
			break;
	}
	PQclear(last);
	return NULL;
}

/* PQprepare, bounded under a lease; 0 or -1 (*res set either way). */
static int
pg_prepare(struct store *s, const char *name, const char *sql, int n,
    const Oid *types, PGresult **res)
{
	struct pg *p = s->eng;

	if (p->bound_ms == 0)
		*res = PQprepare(p->conn, name, sql, n, types);
	else
		*res = pg_bounded(s, PQsendPrepare(p->conn, name, sql, n,
		    types));
	return PQresultStatus(*res) == PGRES_COMMAND_OK ? 0 : -1;
}

static PGresult *
pg_run_prepared(struct store *s, const char *name, int n,
    const char *const *v)
{
	struct pg *p = s->eng;

	if (p->bound_ms == 0)
		return PQexecPrepared(p->conn, name, n, v, NULL, NULL, 0);
	return pg_bounded(s, PQsendQueryPrepared(p->conn, name, n, v, NULL,
	    NULL, 0));
}

/* PQexec, bounded under a lease (BEGIN, COMMIT, the write lock). */
static PGresult *
pg_exec_sql(struct store *s, const char *sql)
{
	struct pg *p = s->eng;

	if (p->bound_ms == 0)
		return PQexec(p->conn, sql);
	return pg_bounded(s, PQsendQuery(p->conn, sql));
}

static PGresult *
pg_run_params(struct store *s, const char *sql, int n, const char *const *v)
{
	struct pg *p = s->eng;

	if (p->bound_ms == 0)
		return PQexecParams(p->conn, sql, n, NULL, v, NULL, NULL, 0);
	return pg_bounded(s, PQsendQueryParams(p->conn, sql, n, NULL, v, NULL,
	    NULL, 0));
}

/* Runs a constant statement with text parameters, ignoring its rows. */
static int
pg_lease_run(struct store *s, const char *sql, const char *const *v, int n,
    const char *what)
{
	PGresult *res;

	res = pg_run_params(s, sql, n, v);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		(void)pg_fail(s, res, what);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

/*
 * Without a lock of its own: the client's waits alone are bounded, not
 * the server's statements, and the connection is made again as usual
 * once a bound closed it.
 */
static void
pg_bound(struct store *s, int64_t ms)
{
	struct pg *p = s->eng;

	if (p->lease_name[0] != '\0')
		return;
	p->bound_ms = ms;
	/* a failure is the connection's: the next call's reconnect sets it */
	if (p->conn != NULL && !s->in_tx)
		(void)pg_set_lock_wait(s);
}

/* See the top of the file: every wait bounded (STORE_LEASE_WAIT). */
static int
pg_lease_bound(struct store *s, int64_t ttl_ms)
{
	struct pg *p = s->eng;
	char bound[24], idle[24], ttl[24];
	const char *v[2] = { bound, idle }, *vt[1] = { ttl };

	p->bound_ms = STORE_LEASE_WAIT(ttl_ms);
	(void)snprintf(bound, sizeof(bound), "%" PRId64, p->bound_ms);
	(void)snprintf(idle, sizeof(idle), "%" PRId64,
	    ttl_ms / 1000 > 0 ? ttl_ms / 1000 : 1);
	if (pg_lease_run(s, PG_LEASE_BOUND, v, 2, "lease timeouts") == -1)
		return -1;
	if (PQserverVersion(p->conn) >= 120000 &&
	    pg_lease_run(s, PG_LEASE_TUT, v, 1, "lease timeouts") == -1)
		return -1;
	/*
	 * A holder that stops renewing while its connection stays up (its
	 * process stopped, SIGSTOP) would keep the lock for ever: from
	 * PostgreSQL 14 the server ends a session idle for a whole TTL.
	 */
	(void)snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
	if (PQserverVersion(p->conn) >= 140000 &&
	    pg_lease_run(s, PG_LEASE_IDLE, vt, 1, "lease timeouts") == -1)
		return -1;
	return 0;
}

static int
pg_lease_lock(struct store *s, const char *name, int64_t ttl_ms)
{
	struct pg *p = s->eng;
	const char *v[1] = { name };
	PGresult *res;
	int r;

	if (p->lease_pid != 0) {
		store_seterr(s, 0, "postgres: this store holds a lease "
		    "already");
		return -1;
	}
	if (pg_alive(s) == -1)
		return -1;
	res = PQexecParams(p->conn, PG_LEASE_LOCK, 1, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		(void)pg_fail(s, res, "lease lock");
		PQclear(res);
		return -1;
	}
	r = strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? 0 : 1;
	PQclear(res);
	if (r == 1)
		return 1;
	p->lease_pid = PQbackendPID(p->conn);
	(void)strlcpy(p->lease_name, name, sizeof(p->lease_name));
	if (pg_lease_bound(s, ttl_ms) == -1) {
		pg_lease_unlock(s);
		return -1;
	}
	return 0;
}

/*
 * The lock lives as long as the session that took it.  The check reads
 * the server's clock: lease times come from one clock, whatever the
 * clocks of the holders' hosts say (store.h).
 */
static int
pg_lease_check(struct store *s, int64_t *now)
{
	struct pg *p = s->eng;
	PGresult *res;
	const char *state;
	int lost;

	if (p->lease_pid == 0) {
		store_seterr(s, 0, "postgres: no lease held");
		return 1;
	}
	if (PQstatus(p->conn) != CONNECTION_OK ||
	    PQbackendPID(p->conn) != p->lease_pid) {
		store_seterr(s, 1, "postgres: the connection holding the "
		    "lease is gone");
		return 1;
	}
	res = pg_run_params(s, PG_LEASE_NOW, 0, NULL);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		*now = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		PQclear(res);
		return 0;
	}
	(void)pg_fail(s, res, "lease check");
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	lost = PQstatus(p->conn) != CONNECTION_OK || (state != NULL &&
	    (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0));
	PQclear(res);
	return lost ? 1 : -1;
}

static void
pg_lease_unlock(struct store *s)
{
	struct pg *p = s->eng;
	const char *v[1];
	PGresult *res;

	if (p == NULL || p->lease_pid == 0)
		return;
	v[0] = p->lease_name;
	if (PQstatus(p->conn) == CONNECTION_OK &&
	    PQbackendPID(p->conn) == p->lease_pid) {
		res = pg_run_params(s, PG_LEASE_UNLOCK, 1, v);
		PQclear(res);
	}
	p->bound_ms = 0;
	p->timed_out = 0;
	p->lease_pid = 0;
	p->lease_name[0] = '\0';
}
