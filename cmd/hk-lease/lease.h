/*
 * lease.h - hk-lease's private declarations (style(9)'s "extern.h").
 *
 * main.c	options, config, store, acquisition, the loop
 * child.c	spawning prog, forwarding signals, its exit status
 * renew.c	renewal, loss and the grace period
 */
#ifndef HK_LEASE_PRIV_H
#define HK_LEASE_PRIV_H

#include <sys/types.h>

#include <signal.h>
#include <stdint.h>

#include "loop.h"
#include "store.h"

#define PROG			"hk-lease"
#define LEASE_TTL_DEFAULT	15	/* seconds */
#define LEASE_GRACE_DEFAULT	10	/* seconds */
#define LEASE_TTL_MAX		3600
#define LEASE_GRACE_MAX		3600
#define LEASE_RETRY_MIN_MS	100	/* between failed renewals */

struct evsink;

struct lease {
	struct loop		*loop;
	struct store		*store;
	struct evsink		*ev;
	struct store_lease	 row;		/* ours, with its epoch */
	int64_t			 ttl_ms;
	int64_t			 grace_ms;
	int64_t			 valid_until;	/* monotonic ms */
	struct loop_timer	 renew;
	struct loop_timer	 grace;
	pid_t			 child;		/* -1 once reaped */
	int			 status;	/* prog's, for the exit code */
	int			 lost;		/* exits 75 once prog is gone */
	sigset_t		 mask;		/* as inherited, for prog */
};

/* child.c */
int	child_spawn(struct lease *, char **);
void	child_signal(struct lease *, int);
void	child_reap(struct lease *);
int	child_exit_code(int);

/* renew.c */
int64_t	renew_clock(void);
void	renew_start(struct lease *, int64_t);
void	renew_lose(struct lease *, const char *);
void	renew_event(struct lease *, const char *, const char *);

#endif
