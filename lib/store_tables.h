/*
 * store_tables.h - what the store's files above its engines share: store.c
 * (open, migrate, transactions, the query machinery), store_schema.c (the
 * schema, the migrations, the SQL) and the files of the tables
 * (store_services.c, store_events.c, store_leases.c, store_code.c,
 * store_runs.c).  Private to the store module, as store_impl.h, which is
 * the engines' interface: programs include store.h, and the engines do not
 * include this file.
 *
 * A table's function starts with call_start(), checks what it is given
 * (store_check_name, store_check_field), runs its statements through the
 * machinery (store_q_do, store_q_int, store_q_rows, store_read_one,
 * store_read_rows) and reads their columns (store_col_copy,
 * store_col_dup), inside a transaction of its own where it writes more
 * than one statement (store_own_begin, store_own_end).  Each is described
 * where it is defined, in store.c.
 */
#ifndef HK_STORE_TABLES_H
#define HK_STORE_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_impl.h"

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))
#define PRUNE_AHEAD_MS	(24LL * 3600 * 1000)	/* Q_REQUEST_PRUNE_AGE */
#define PRUNE_BATCH	5000	/* rows a retention statement deletes */

/* store_schema.c: the migrations, in order, and their own table. */
struct store_migration {
	int64_t		 version;
	const char	*what;
	const char	*sqlite;
	const char	*pg;
	int		 (*data)(struct store *);	/* after the DDL */
};

extern const struct store_migration store_migrations[];
extern const size_t store_nmigrations;
extern const char store_migrations_table[];

/*
 * Every public call starts with a clean error state.  Inline: the name
 * is lib/engine's too, and a program's (hk-idle's).
 */
static inline void
call_start(struct store *s)
{
	s->busy = 0;
	s->err[0] = '\0';
}

/* store.c: errors and the checks of what the caller gives */
void	 store_errprefix(struct store *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 store_nomem(struct store *);
int	 store_check_name(struct store *, const char *, const char *, size_t);
int	 store_check_field(struct store *, const char *, const char *, size_t,
	    int);

/* store.c: columns of the row at hand */
int	 store_col_copy(struct store *, int, char *, size_t, const char *);
char	*store_col_dup(struct store *, int);
int	 store_read_text_row(struct store *, void *);

/* store.c: statements, rows and transactions */
int	 store_q_do(struct store *, enum store_q, const struct store_arg *,
    size_t,
	    int64_t *);
int	 store_q_int(struct store *, enum store_q, const struct store_arg *,
	    size_t, int64_t *);
int	 store_q_rows(struct store *, enum store_q, enum store_q, size_t,
    size_t,
	    store_row_fn *, const void *);
void	*store_grow(struct store *, void *, size_t, size_t *, size_t);
int	 store_read_rows(struct store *, enum store_q, const struct store_arg *,
	    size_t, size_t, int (*)(struct store *, void *),
	    void (*)(void *, size_t), void **, size_t *);
int	 store_read_one(struct store *, enum store_q, const struct store_arg *,
	    size_t, int (*)(struct store *, void *), void *);
int	 store_own_begin(struct store *, int *);
int	 store_own_end(struct store *, int, int);
void	 store_rollback_keep_error(struct store *);
int	 store_prune(struct store *, enum store_q, enum store_q, int64_t,
	    int64_t, int64_t *);

/* store_events.c: migration 4 writes the batches of version 3 with it */
int	 store_request_batch_add(struct store *, int64_t,
	    const struct store_request *, size_t);

#endif
