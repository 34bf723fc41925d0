/*
 * spare.h - exec_node_spare.c: Node spares, processes started ahead that
 * become an instance at a wake (start_from = "node-spare", hk.toml(5)).
 * Their life cycle, load, metrics and rows are exec_pool.c's.
 */
#ifndef HK_SPARE_H
#define HK_SPARE_H

#include <sys/types.h>

#include "scale.h"

/*
 * Hands sp's instance to the spare of its node and user u: env, its
 * directory and argv; lfd (or -1) as its fd 3; moved first into its
 * cgroup by procs (its cgroup.procs, or -1).  outr, the read end of the
 * instance's output pipe, becomes the spare's (dup3).  The pid, running
 * as a child of ours, or 0: no spare ready (one is started; the caller
 * execs meanwhile).
 */
pid_t	 spare_spawn(struct scale *, const struct service_spec *,
	    const struct user_ids *, int, char **, int, int, int);

#endif
