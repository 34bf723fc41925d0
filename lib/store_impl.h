/*
 * store_impl.h - what the store shares with its two engines (store_sqlite.c,
 * store_pg.c).  Private to the store module: programs include store.h.
 *
 * The API, the SQL and the migrations are written once, in the files above
 * the engines (store.c and those store_tables.h names); an engine is a
 * table of operations (relayd-style) that runs a numbered statement with
 * bound parameters and walks its rows:
 *
 *	ops->exec(s, Q_..., args, nargs);
 *	while ((r = ops->next(s)) == 1)
 *		... ops->col_int(s, 0), ops->col_text(s, 1) ...
 *	ops->finish(s);
 *
 * Statements use $1, $2 ... placeholders in both engines (SQLite binds them
 * by name).  One statement is active at a time per store.
 */
#ifndef HK_STORE_IMPL_H
#define HK_STORE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* How long either engine waits for a lock before failing busy. */
#define STORE_BUSY_MS		5000
#define STORE_STR_(x)		#x
#define STORE_STR(x)		STORE_STR_(x)

/* Every DML statement the store runs; the SQL is in store_schema.c. */
enum store_q {
	Q_SCHEMA_VERSION,
	Q_MIGRATION_ADD,
	Q_APP_PUT,
	Q_SERVICE_PUT,
	Q_SERVICE_REVISION,
	Q_SERVICE_GET,
	Q_SERVICE_LIST,
	Q_SERVICE_NAMES,
	Q_SERVICE_DELETE,
	Q_SERVICE_DESIRED,
	Q_COUNT_SERVERLESS,
	Q_INSTANCE_PUT,
	Q_INSTANCE_GET,
	Q_INSTANCE_LIST,
	Q_INSTANCE_DELETE,
	Q_INSTANCE_DELETE_ALL,
	Q_EVENT_ADD,
	Q_EVENT_LIST,
	Q_EVENT_AFTER,
	Q_EVENT_PRUNE_AGE,
	Q_EVENT_PRUNE_ROWS,
	Q_REQUEST_NEXT_ID,
	Q_REQUEST_ADD,
	Q_REQUEST_LIST,
	Q_REQUEST_AGE_CUT,
	Q_REQUEST_BATCH_CUT,
	Q_REQUEST_COUNT_BEFORE,
	Q_REQUEST_DELETE_BEFORE,
	Q_REQUEST_V3_READ,
	Q_SETTING_PUT,
	Q_SETTING_GET,
	Q_CODE_PUT,
	Q_CODE_GET,
	Q_VETTED_PUT,
	Q_VETTED_GET,
	Q_VETTED_PRUNE,
	Q_SECRET_PUT,
	Q_SECRET_GET,
	Q_SECRET_LIST,
	Q_SECRET_DELETE,
	Q_SECRET_NEWEST,
	Q_RUN_PUT,
	Q_RUN_GET,
	Q_RUN_LIST,
	Q_RUN_ABANDON,
	Q_RUN_PRUNE_AGE,
	Q_RUN_PRUNE_ROWS,
	Q_JOB_PUT,
	Q_JOB_GET,
	Q_JOB_LIST,
	Q_JOB_KEYS,
	Q_JOB_DELETE,
	Q_JOB_CLAIM,
	Q_SCHEDULE_PUT,
	Q_SCHEDULE_LIST,
	Q_SCHEDULE_KEYS,
	Q_SCHEDULE_DELETE,
	Q_SCHEDULE_CLAIM,
	Q_CODE_PRUNE,
	Q_REVISION_ADD,
	Q_REVISION_GATE,
	Q_REVISION_GET,
	Q_REVISION_LIST,
	Q_REVISION_PASSED,
	Q_REVISION_PRUNE,
	Q_LEASE_ACQUIRE,
	Q_LEASE_RENEW,
	Q_LEASE_RELEASE,
	Q_LEASE_GET,
	Q_FENCE_EPOCH,		/* store_fence() */
	/*
	 * PostgreSQL only: Q_EVENT_ADD for a whole batch, each column one
	 * array parameter (exec_rows below).
	 */
	Q_EVENT_ADD_MANY,
	Q_COUNT
};

struct store_sql {
	const char	*name;		/* for messages: "service put" */
	const char	*text;		/* the same SQL for both engines,
					   but the PostgreSQL Q_*_MANY */
};

extern const struct store_sql store_sql[Q_COUNT];

enum store_argtype {
	STORE_ARG_TEXT,
	STORE_ARG_INT,
	STORE_ARG_BLOB,		/* bytes: text and len */
};

struct store_arg {
	enum store_argtype	 type;
	const char		*text;	/* _TEXT or _BLOB; NULL: NULL */
	int64_t			 num;	/* STORE_ARG_INT */
	int			 len;	/* of text, if known; else -1 */
};

#define ARG_TEXT(t)	{ STORE_ARG_TEXT, (t), 0, -1 }
#define ARG_TEXTN(t, n)	{ STORE_ARG_TEXT, (t), 0, (n) }
#define ARG_INT(n)	{ STORE_ARG_INT, NULL, (n), 0 }
#define ARG_BLOB(b, n)	{ STORE_ARG_BLOB, (const char *)(b), 0, (int)(n) }

/*
 * Fills the arguments of row i of a batch (exec_rows): every row has the
 * same number of them, of the same types; the text they point to lives
 * until the batch has run.  -1 (store_seterr() called) refuses the row
 * and the batch with it: the engine stops, and the caller rolls back
 * what it may have written.
 */
typedef int	store_row_fn(struct store *, const void *, size_t,
		    struct store_arg *);

/*
 * An engine.  All return 0 / -1 (with store_seterr() called) unless said.
 * begin takes the installation-wide write lock and opens a transaction;
 * migrate_begin opens the migration transaction under the migration lock.
 * A failed commit leaves no transaction open.  rollback with no
 * transaction open (or one already lost) is a successful no-op.
 */
struct store_ops {
	const char	*name;
	int		 (*open)(struct store *, const char *);
	/*
	 * store_open_readonly(): opens without writing anything, and every
	 * later write fails; *none = 1 when there is no store there (no
	 * SQLite file, or no schema_migrations table).
	 */
	int		 (*open_readonly)(struct store *, const char *, int *);
	void		 (*close)(struct store *);
	int		 (*script)(struct store *, const char *);
	int		 (*begin)(struct store *);
	int		 (*migrate_begin)(struct store *);
	int		 (*commit)(struct store *);
	int		 (*rollback)(struct store *);
	int		 (*exec)(struct store *, enum store_q,
			    const struct store_arg *, size_t);
	int		 (*next)(struct store *);	/* 1 row, 0 done, -1 */
	int		 (*isnull)(struct store *, int);
	int64_t		 (*col_int)(struct store *, int);
	const char	*(*col_text)(struct store *, int); /* NULL if NULL */
	/* A blob column's bytes (NULL if NULL), valid until next(). */
	const unsigned char *(*col_blob)(struct store *, int,
			    size_t *);
	int64_t		 (*changes)(struct store *);	/* after next() == 0 */
	void		 (*finish)(struct store *);
	/*
	 * Optional: runs a batch of nrows rows of nargs arguments each
	 * (row() fills them) through many, the batch statement of the row
	 * statement q (PostgreSQL: each column one array, one round trip);
	 * rows they return are ignored.  Without it (SQLite, in process),
	 * store.c runs q per row.
	 */
	int		 (*exec_rows)(struct store *, enum store_q,
			    enum store_q, size_t, size_t, store_row_fn *,
			    const void *);
	/* Optional: store_durable(), outside a transaction. */
	int		 (*durable)(struct store *, int);
	/*
	 * The lease's lock (store.h): lease_lock 0 taken, 1 held elsewhere,
	 * and once taken bounds every later wait of the store to a part of
	 * the TTL (ms) so that a renewal fails in time rather than hangs;
	 * lease_check 0 still held, with the store's clock in *now (Unix
	 * ms; PostgreSQL: the server's), 1 lost; lease_unlock drops it, if
	 * any.  One lease per store; the name is checked by store_leases.c.
	 */
	int		 (*lease_lock)(struct store *, const char *, int64_t);
	int		 (*lease_check)(struct store *, int64_t *);
	void		 (*lease_unlock)(struct store *);
	/* Optional: store_bound(). */
	void		 (*bound)(struct store *, int64_t);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

struct store {
	enum store_engine	 engine;
	const struct store_ops	*ops;
	void			*eng;		/* the engine's own state */
	int			 in_tx;		/* store_begin() is open */
	int			 busy;		/* last failure was temporary */
	char			 err[STORE_ERR_LEN];
	/* store_fence(): the lease whose epoch every write checks */
	char			 fence_name[STORE_NAME_MAX + 1];
	int64_t			 fence_epoch;	/* 0 = not fenced */
	store_fenced_fn		*fenced;
	void			*fenced_arg;
};

/* Sets the error and whether it is temporary (store_busy()). */
void	store_seterr(struct store *, int, const char *, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
