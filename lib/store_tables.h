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
 * (check_name, check_field), runs its statements through the machinery
 * (q_do, q_int, q_rows, read_one, read_rows) and reads their columns
 * (col_copy, col_dup), inside a transaction of its own where it writes more
 * than one statement (own_begin, own_end).  Each is described where it is
 * defined, in store.c.
 */
#ifndef HK_STORE_TABLES_H
#define HK_STORE_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_impl.h"

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))
#define PRUNE_AHEAD_MS	(24LL * 3600 * 1000)	/* Q_REQUEST_PRUNE_AGE */

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
void	 errprefix(struct store *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 nomem(struct store *);
int	 check_name(struct store *, const char *, const char *, size_t);
int	 check_field(struct store *, const char *, const char *, size_t,
	    int);

/* store.c: columns of the row at hand */
int	 col_copy(struct store *, int, char *, size_t, const char *);
char	*col_dup(struct store *, int);
int	 read_text_row(struct store *, void *);

/* store.c: statements, rows and transactions */
int	 q_do(struct store *, enum store_q, const struct store_arg *, size_t,
	    int64_t *);
int	 q_int(struct store *, enum store_q, const struct store_arg *,
	    size_t, int64_t *);
int	 q_rows(struct store *, enum store_q, enum store_q, size_t, size_t,
	    store_row_fn *, const void *);
void	*grow(struct store *, void *, size_t, size_t *, size_t);
int	 read_rows(struct store *, enum store_q, const struct store_arg *,
	    size_t, size_t, int (*)(struct store *, void *),
	    void (*)(void *, size_t), void **, size_t *);
int	 read_one(struct store *, enum store_q, const struct store_arg *,
	    size_t, int (*)(struct store *, void *), void *);
int	 own_begin(struct store *, int *);
int	 own_end(struct store *, int, int);
void	 rollback_keep_error(struct store *);
int	 prune(struct store *, enum store_q, size_t, enum store_q, int64_t,
	    int64_t, int64_t *);

/* store_events.c: migration 4 writes the batches of version 3 with it */
int	 request_batch_add(struct store *, int64_t,
	    const struct store_request *, size_t);

#endif
