/*
 * exec.h - what the exec backend's files share: backend_exec.c (an
 * instance is a child of hk-scale), exec_freezer.c (its cgroups, and the
 * freezer's state, which that file alone keeps), exec_spawn.c (clone3
 * sharing our memory), exec_template.c (an instance forked from a
 * Python template), exec_pool.c (the life cycle of the templates and
 * Node spares).  Nothing else in hk-scale includes it (but
 * ct_freezer.c, for freezer_cgroup_of()); the shared
 * socket of replicas (exec_listen.c) is xlisten.h's, the systemd backend's
 * too.
 */
#ifndef HK_EXEC_H
#define HK_EXEC_H

#include <sys/types.h>

#include <stddef.h>

#include "scale.h"
#include "xlisten.h"

#define FZ_PATH_MAX		512	/* an instance's cgroup directory */
#define FZ_NAME_MAX		(SCALE_INSTALL_MAX + 40) /* hk.ID.PID.SEQ */

/* exec_freezer.c: the exec backend's cgroups (its setup and teardown) */
int		 freezer_setup(struct scale *, char *, size_t);
int		 freezer_make(struct scale *, char *, size_t, int [2], char *,
		    size_t);
void		 freezer_find(struct scale *, pid_t, char *, size_t);
int		 freezer_cgroup_of(pid_t, int, char *, size_t);
const char	*freezer_set(const char *, int);
int		 freezer_cgroup1(void);
void		 freezer_end(const char *);
void		 freezer_remove(struct scale *, const char *);
void		 freezer_sweep(struct scale *);
void		 freezer_shutdown(struct scale *);

/* backend_exec.c: the instance's user, no privileges, no_new_privs */
int		 exec_drop(const struct user_ids *, int);

/* exec_template.c: instances forked from a Python template */
struct tmpl_wait;
/* a start's outcome: pid, running, or 0 and why */
typedef void	 template_fn(void *, pid_t, const char *);
int		 template_spawn(struct scale *, const struct service_spec *,
		    const struct user_ids *, int, char **, int, int, int, int,
		    template_fn *, void *, struct tmpl_wait **, char *,
		    size_t);
void		 template_refuse(struct tmpl_wait *);
void		 template_cancel(struct tmpl_wait *);

/* exec_pool.c: the templates' and spares' processes */
void		 pool_shutdown(struct scale *);

/* exec_spawn.c */
struct clone_args;
pid_t		 spawn_vm(const struct clone_args *, void (*)(void *), void *);

#endif
