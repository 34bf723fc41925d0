/*
 * container.h - what the container backend's two files share:
 * backend_container.c (an instance's container: start, stop, output,
 * health check, removal) and container_node.c (the nodes: one engine
 * each, its events stream, and the list that adopts and sweeps).
 */
#ifndef HK_CONTAINER_H
#define HK_CONTAINER_H

#include <sys/queue.h>

#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "engine.h"
#include "scale.h"

#define CT_SECRETS	"/run/secrets"	/* the secrets' files, read-only */
#define CT_NONCE_LEN	16	/* hex digits of hk.instance */
#define CT_HOLD_MS	25	/* a tcp probe through a forwarder */
#define CT_END_MS	1000	/* after an exit, for the rest of its output */
#define CT_STOPPED_MS	2000	/* after a stop, for the engine's "die" */
#define CT_ADOPT_TRIES	5	/* inspects of a listed container, adopting */
#define CT_ADOPT_RETRY_MS 1000	/* between them, after an engine error */
#define CT_LIST_RETRY_MS 1000	/* a list that failed, again */
#define CT_CG_MAX	512	/* a container's cgroup directory */

enum ct_net {
	CT_NET_BRIDGE,		/* the engine's default network */
	CT_NET_SLIRP,		/* podman's slirp4netns, its port handler */
	CT_NET_HOST,		/* the node's own network */
};

/* Which engine a node's is, where they differ (ct_volumes.c). */
enum ct_flavour {
	CT_FLAVOUR_UNKNOWN,	/* not asked yet */
	CT_FLAVOUR_PODMAN,	/* GET /version names "Podman Engine" */
	CT_FLAVOUR_DOCKER,	/* any other: Docker's rules */
};

enum ct_phase {
	CT_ADOPTING,		/* an earlier run's: waits for the list */
	CT_CREATING,		/* create (and pull) under way */
	CT_STARTING,		/* start, then inspect, under way */
	CT_UP,			/* started: probes, then ready */
};

/* A node's engine, opened at its first use (container_node.c). */
struct ct_node {
	TAILQ_ENTRY(ct_node)	 entry;		/* scale.ct_nodes */
	struct scale		*sc;
	char			 name[STORE_NAME_MAX + 1];	/* of rows */
	char			 address[CONFIG_IP_MAX + 1];
	enum ct_net		 net;
	int			 local;		/* its engine is on this host
						   (unix://): the pids of its
						   containers are this host's */
	struct engine		*e;
	struct engine_events	*ev;
	struct engine_call	*list;
	struct loop_timer	 retry;		/* of a failed list */
	int			 up;		/* events come */
	int			 listed;	/* and were listed since */
	int			 relist;	/* list again when this one is in */
	int			 down_told;	/* the warning was logged */
	enum ct_flavour		 flavour;	/* asked at the first volume */
	TAILQ_HEAD(, ct)	 cts;
};

/* An instance's container (in->priv), or what is left of one. */
struct ct {
	TAILQ_ENTRY(ct)		 entry;		/* node->cts */
	struct inst		*in;		/* NULL once released */
	struct inst		*owner;		/* released: told when gone */
	struct ct_node		*node;
	enum ct_phase		 phase;
	char			 id[ENGINE_ID_MAX];	/* "" until created */
	char			 nonce[CT_NONCE_LEN + 1]; /* hk.instance */
	char			 exec_id[ENGINE_ID_MAX];
	char			 image[ENGINE_IMAGE_MAX + 1];	/* started */
	struct engine_call	*op;		/* of the start, or adoption */
	struct engine_call	*stopc;
	struct engine_call	*killc;
	struct engine_call	*rmc;
	struct engine_call	*logs;
	struct engine_call	*hc;		/* of the health check */
	struct engine_call	*pausec;	/* a pause or an unpause */
	struct loop_timer	 timer;		/* health check; exit's end */
	char			**health;	/* the HEALTHCHECK's argv */
	size_t			 vol_next;	/* named volume to make */
	int			 pulled;
	enum image_pull		 pull;		/* image_pull, at the start */
	int			 matched;	/* adopting: listed, found */
	int			 adopt_tries;	/* its inspects that failed */
	int			 adopt_wait;	/* the next is on the timer */
	int			 stop_wanted;
	int			 kill_wanted;
	int			 died;
	int			 paused;	/* the engine says so */
	int			 early;		/* probed before its inspect */
	char			 cg[CT_CG_MAX];	/* its freezer here, or "" */
	int			 cg_v1;		/* cgroup v1's freezer.state */
	int			 cg_fd;		/* its freezer's file, or -1 */
	int			 cg_frozen;	/* frozen here (ct_freezer.c) */
	char			**hold_argv;	/* hk-hold, the Entrypoint */
	char			**hold_cmd;	/* the image's Cmd */
	char			 stopsig[16];	/* Config.StopSignal */
	int			 exit_code;	/* the engine's, -1 unknown */
	int			 reported;
	int64_t			 pid;		/* on the node's host */
	char			 last[SCALE_LINE_MAX + 1];	/* of output */
	struct cmd_output	 out;	/* its log: out.log alone is used */
};

/* ct_archive.c */
int		 ct_archive_wanted(const struct ct *);
int		 ct_archive_put(struct ct *, engine_done_fn *, char *, size_t);

/* ct_hold.c */
int		 ct_held(const struct ct *);
int		 ct_hold_next(struct ct *, char *, size_t);
void		 ct_hold_spec(struct ct *, struct engine_spec *, char *, size_t,
		    const char **);
int		 ct_hold_put(struct ct *, engine_done_fn *, char *, size_t);
int		 ct_secrets_put(struct ct *, engine_done_fn *, char *, size_t);

/* container_node.c */
struct ct_node	*ct_node_get(struct scale *, const char *, char *, size_t);
struct ct	*ct_find(const struct ct_node *, const char *);
void		 ct_node_relist(struct ct_node *);
void		 ct_nodes_init(struct scale *);
void		 ct_nodes_shutdown(void);
void		 ct_endpoint(const struct ct_node *, int, char *, size_t);

/* ct_image.c */
int		 ct_image_ref(const struct service_spec *, char *, size_t);
struct engine_call *ct_image_pull(struct ct *, engine_done_fn *, char *,
		    size_t);

/* backend_container.c, for container_node.c */
void		 ct_died(struct ct *, int);
void		 ct_free(struct ct *);
void		 ct_adopt_found(struct ct *);
void		 ct_adopt_missing(struct ct *);
void		 ct_volumes_done(struct ct *, const char *);
void		 ct_hold_done(struct ct *, const char *, int);
void		 ct_free_strv(char **);
struct user_ids;
int		 ct_volume_owner(struct ct *, struct user_ids *, char *,
		    size_t);

/* ct_freezer.c */
void		 ct_cg_find(struct ct *);
const char	*ct_cg_set(struct ct *, int);
int		 ct_cg_frozen(const struct ct *);
void		 ct_cg_release(struct ct *);
void		 ct_cg_close(struct ct *);

/* ct_volumes.c */
int		 ct_volumes_next(struct ct *, char *, size_t);
enum ct_flavour	 ct_flavour_of(const json_t *);
int		 ct_volume_binds(struct ct *, const char **, size_t, char ***,
		    char *, size_t);

#endif
