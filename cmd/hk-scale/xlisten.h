/*
 * xlisten.h - the one listening socket that the replicas of a service
 * with a fixed port share (exec_listen.c), handed to each by the exec
 * and systemd backends, and kept across a restart of hk-scale in
 * systemd's file descriptor store when hk-scale runs as a unit with one
 * (fdstore.c).
 */
#ifndef HK_XLISTEN_H
#define HK_XLISTEN_H

#include <sys/types.h>

#include <stddef.h>

#include "scale.h"

/* exec_listen.c */
int		 xlisten_bind(int, int, int *, char *, size_t);
int		 xlisten_take(struct inst *, int, int *, char *, size_t);
int		 xlisten_adopt(struct inst *, int, int);
int		 xlisten_adopt_pid(struct inst *, int, pid_t, int64_t);
void		 xlisten_drop(const struct inst *, int);
int		 xlisten_fd(const char *, int);
void		 xlisten_restore(void);
void		 xlisten_prune(void);

/* s6_listen.c: the shared socket served to s6 replicas (hk-listen) */
int		 s6listen_take(struct inst *, int, const struct user_ids *,
		    char *, size_t, char *, size_t);
int		 s6listen_adopt(struct inst *, int, pid_t, int64_t,
		    const struct user_ids *, char *, size_t);
void		 s6listen_drop(const struct inst *, int);
void		 s6listen_prune(const char *);

/* exec_unix.c: the socket of an instance only the gateway reaches,
 * handed by the exec and systemd backends */
int		 unixlisten_bind(struct inst *, int *, char *, size_t);
void		 unixlisten_remove(const struct inst *);
void		 unixlisten_sweep(struct scale *);

/* fdstore.c: systemd's file descriptor store, where there is one */
#define FDSTORE_NAME_MAX	(SCALE_ID_MAX + 16)	/* hk.APP.SVC.PORT */
int		 fdstore_put(const char *, int);
void		 fdstore_remove(const char *);
void		 fdstore_take(void (*)(const char *, int));

#endif
