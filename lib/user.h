/*
 * user.h - the user an instance runs as, written "USER" or "USER:GROUP"
 * (hakopod.toml's service_user, hk.toml's user), resolved through this
 * host's user and group databases.  hk validates with it; hk-scale
 * resolves again at each start, since the store may hold a spec applied
 * elsewhere, and the user may have gone since.
 */
#ifndef HK_USER_H
#define HK_USER_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define USER_SPEC_MAX	255	/* bytes of "USER:GROUP" */
#define USER_NAME_MAX	255
#define USER_HOME_MAX	1023
#define USER_GROUPS_MAX	256	/* supplementary groups kept */
#define USER_ERR_LEN	320

struct user_ids {
	uid_t	 uid;
	gid_t	 gid;
	gid_t	 groups[USER_GROUPS_MAX];	/* setgroups(2) */
	size_t	 ngroups;
	char	 name[USER_NAME_MAX + 1];	/* USER, LOGNAME */
	char	 home[USER_HOME_MAX + 1];	/* HOME */
};

/*
 * Resolves "USER" (its primary group and every group it is a member of,
 * as initgroups(3) would) or "USER:GROUP" (that group alone).  0, or -1
 * with a reason: the syntax, "no such user \"x\"", "no such group \"x\"".
 */
int	user_resolve(const char *, struct user_ids *, char *, size_t);
/*
 * "UID" or "UID:GID", decimal, each at most 2^31 - 1 (a Kubernetes
 * pod's runAsUser and runAsGroup): 0, *gid -1 when absent; -1 else.
 */
int	user_numeric(const char *, int64_t *, int64_t *);
/* The user of our effective uid, with its groups; 0, or -1 with a reason. */
int	user_self(struct user_ids *, char *, size_t);
/* Whether two resolve to the same uid, gid and groups, in order. */
int	user_ids_same(const struct user_ids *, const struct user_ids *);
/* Whether we may switch users: root, or CAP_SETUID and CAP_SETGID. */
int	user_can_switch(void);
/* Whether we hold CAP_KILL (root included): others' instances stop. */
int	user_can_kill(void);
/* Drops every capability: permitted, effective, inheritable and ambient. */
int	user_caps_clear(void);

#endif
