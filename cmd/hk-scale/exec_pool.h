/*
 * exec_pool.h - exec_pool.c: the life cycle that the exec backend's
 * helper processes share, the Python templates (exec_template.c) and
 * the Node spares (exec_node_spare.c): one process per kind, runtime
 * (the command's first word) and user, started as the services that
 * want it are loaded, restarted with a back-off after a death, ended
 * when no service wants it, and reported by the metrics and hk ps.
 *
 * A kind is a struct pool_ops (as a backend is a struct backend): what
 * is its own, how its process is set up and what it says, while the
 * pool keeps the entries, their timers and their rows.  A kind's own
 * entry begins with a struct pool (ops->size bytes in all).
 */
#ifndef HK_EXEC_POOL_H
#define HK_EXEC_POOL_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "exec.h"
#include "scale.h"

#define POOL_KEY_MAX		256	/* a runtime: the command's first word */
#define POOL_RESTART_MS		1000	/* after a death */
#define POOL_RESTART_MAX	60000	/* doubled up to, while none is ready */

struct pool;

struct pool_ops {
	const char	*name;		/* its log lines: "python template" */
	const char	*child_name;	/* its child's failures: "template" */
	const char	*program;	/* in libexec: "hk-python-template" */
	const char	*env_extra;	/* one more variable of its own, or NULL */
	int		 start_from;	/* what a service says: START_FROM_* */
	int		 (*command)(char *const *, size_t);	/* its runtime's? */
	int		 socktype;	/* of the socketpair: SOCK_SEQPACKET */
	size_t		 size;		/* of an entry, struct pool first */
	/* a new entry's own parts (its lists, its timers), or NULL */
	void		 (*init)(struct pool *);
	/* before the fork: what the child gets beside the socket; -1 logged */
	int		 (*prepare)(struct pool *);
	/* in the child: its fds (sock the socket's); -1 with errno */
	int		 (*child)(const struct pool *, int);
	/* after the fork (0) or after a failure (-1): prepare's parts */
	void		 (*spawned)(struct pool *, int);
	/* a message on its socket: NULL, or why it is ended ("exited") */
	const char	*(*read)(struct pool *, int);
	/* its process is gone (why), or handed over (NULL): its own parts */
	void		 (*gone)(struct pool *, const char *);
	/* not to be freed now (starts waiting on it), or NULL */
	int		 (*busy)(const struct pool *);
	/* before it is freed at hk-scale's end, or NULL */
	void		 (*drop)(struct pool *);
};

struct pool {
	TAILQ_ENTRY(pool)	 entry;
	const struct pool_ops	*ops;
	struct scale		*sc;
	char			 key[POOL_KEY_MAX];	/* its runtime */
	struct user_ids		 user;
	int			 switch_user;
	pid_t			 pid;		/* 0: not running */
	int			 sock;		/* -1: not running */
	int			 ready;		/* said it is ready */
	int64_t			 backoff;	/* ms before the next start */
	int			 wanted;	/* by a loaded service */
	int			 seen;		/* at this load */
	char			 cg[FZ_PATH_MAX];	/* "": none */
	struct loop_timer	 restart;
};

/* exec_template.c, exec_node_spare.c */
extern const struct pool_ops template_pool;
extern const struct pool_ops spare_pool;

struct pool	*pool_wake(const struct pool_ops *, struct scale *,
		    const struct service_spec *, const struct user_ids *, int);
void		 pool_ready(struct pool *);
void		 pool_died(struct pool *, const char *);
void		 pool_down(struct pool *, const char *);
void		 pool_forget(struct pool *);
void		 pool_restart_in(struct pool *, int64_t);

#endif
