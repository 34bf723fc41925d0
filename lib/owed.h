/*
 * owed.h - writes a daemon owes its store.  A write the store refused
 * because it was away (a PostgreSQL server restarting, a SQLite file
 * locked past its busy timeout) is kept, the newest of its key replacing
 * an older one still owed, and made again by a timer: after 1 s, then
 * twice as long each time the store still refuses, up to 10 s, until it
 * is made.  A write that succeeds drops an older one owed for its key,
 * which it supersedes.  At most max writes are owed; one past that is
 * lost, counted and logged, never dropped in silence.
 *
 * hk-scale owes instance rows and readiness gates (a row says what runs),
 * hk-jobs the records of runs.
 */
#ifndef HK_OWED_H
#define HK_OWED_H

#include <stddef.h>
#include <stdint.h>

#define OWED_KEY_MAX	192	/* "row APP/SERVICE", a run id */

struct loop;
struct store;

struct owed_ops {
	int	 (*write)(struct store *, const void *);	/* 0 or -1 */
	void	*(*copy)(const void *);		/* NULL: out of memory */
	void	 (*free)(void *);
};

struct owed	*owed_new(struct loop *, struct store *,
		    const struct owed_ops *, size_t, const char *);
/* Writes item now, or keeps a copy under key: 0 written, -1 not (yet). */
int		 owed_put(struct owed *, const char *, const void *);
size_t		 owed_count(const struct owed *);
uint64_t	 owed_lost(const struct owed *);
/* At exit: one more try of what is owed; what is left is logged. */
void		 owed_free(struct owed *);

#endif
