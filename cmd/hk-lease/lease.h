/*
 * lease.h - hk-lease's private declarations (style(9)'s "extern.h").
 *
 * main.c	options, config, store, acquisition, the loop
 * child.c	spawning prog, forwarding signals, its exit status
 * renew.c	renewal, loss and the grace period
 * watchdog.c	prog's deadlines, kept even while a store call blocks
 * local.c	the previous holder's prog, when it ran on this host
 * join.c	-j: prog under the lease another hk-lease of this host holds
 */
#ifndef HK_LEASE_PRIV_H
#define HK_LEASE_PRIV_H

#include <sys/types.h>

#include <signal.h>
#include <stdint.h>

#include "loop.h"
#include "store.h"

#define PROG			"hk-lease"
#define LEASE_TTL_DEFAULT	5	/* seconds */
#define LEASE_GRACE_DEFAULT	3	/* seconds */
#define LEASE_TTL_MAX		3600
#define LEASE_GRACE_MAX		3600
#define LEASE_RETRY_MIN_MS	100	/* between failed renewals */
#define LEASE_LOCAL_POLL_MS	20	/* watching the previous prog */
#define LEASE_RUNDIR_MAX	255
#define JOIN_GONE		2	/* join.c: the holder of this host died */

struct evsink;

struct lease {
	struct loop		*loop;
	struct store		*store;
	struct evsink		*ev;
	struct store_lease	 row;		/* ours, with its epoch */
	int64_t			 ttl_ms;
	int64_t			 grace_ms;
	int64_t			 valid_until;	/* monotonic ms */
	int64_t			 start_at;	/* monotonic ms: prog can start */
	struct loop_timer	 renew;
	struct loop_timer	 grace;
	struct loop_timer	 start;
	struct loop_timer	 poll;		/* the previous prog, local */
	char			 rundir[LEASE_RUNDIR_MAX + 1];
	pid_t			 prev_pid;	/* its pid, 0 = not local */
	int64_t			 prev_start;	/* and its start time */
	char			**argv;		/* prog and its arguments */
	pid_t			 child;		/* -1 once reaped */
	int			 started;	/* prog spawned (or tried) */
	int			 status;	/* prog's, for the exit code */
	int			 code;		/* prog could not be spawned */
	int			 quit;		/* the signal ending a wait */
	int			 lost;		/* exits 75 once prog is gone */
	int			 join;		/* -j: this host's holder's lease */
	int			 wait;		/* -w: wait while held elsewhere */
	int64_t			 gone_at;	/* -j: holder seen gone (mono ms) */
	sigset_t		 mask;		/* as inherited, for prog */
};

/* child.c */
void	child_start(struct loop *, void *);
void	child_poll_previous(struct loop *, void *);
int	child_spawn(struct lease *, char **);
void	child_signal(struct lease *, int);
void	child_reap(struct lease *);
int	child_exit_code(int);

/* renew.c */
int64_t	renew_clock(void);
int	renew_start(struct lease *, int64_t);
void	renew_lose(struct lease *, const char *);
void	renew_prog_ended(struct lease *);
void	renew_event(struct lease *, const char *, const char *);

/* local.c */
void	local_record(const struct lease *);
int	local_current(const struct lease *, int, int64_t *, pid_t *,
	    int64_t *);
int	local_previous(const struct lease *, pid_t *, int64_t *);
int	local_alive(pid_t, int64_t);

/* join.c */
int	join_wait(struct lease *);
int	join_check(struct lease *, char *, size_t);

/* watchdog.c */
int	watchdog_init(void);
int	watchdog_extend(int64_t, int64_t);
void	watchdog_stop(int64_t);
void	watchdog_child(pid_t);
void	watchdog_hold(int, sigset_t *);
void	watchdog_child_reset(void);

#endif
