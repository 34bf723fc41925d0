/*
 * scale.h - declarations private to hk-scale, the actuator: services and
 * their state machine, the start queue, the exec backend, readiness probes,
 * scale.sock and the instance rows of the store.
 */
#ifndef HK_SCALE_H
#define HK_SCALE_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>
#include <jansson.h>

#include "config.h"
#include "loop.h"
#include "spec.h"
#include "store.h"
#include "user.h"

#define PROG			"hk-scale"
#define SCALE_LINE_MAX		512	/* bytes kept of one output line */
#define SCALE_GRACE_DEFAULT	10	/* s from SIGTERM to SIGKILL */
#define SCALE_ORDINARY_TIMEOUT	60 /* s, startup deadline, no [serverless] */
#define SCALE_PROBE_MIN_MS	1	/* probe retries: start time / 32, */
#define SCALE_PROBE_MAX_MS	50	/* within these bounds */
#define SCALE_PROBE_READ_MAX	65536	/* bytes of an http probe's answer */
#define SCALE_PROBE_REST_MS	1000	/* for its rest, once its head is in */
#define SCALE_RESTART_MIN_MS	100	/* restart of an always-on service */
#define SCALE_RESTART_MAX_MS	30000
#define SCALE_RESTART_RESET_MS	10000	/* ran this long: backoff reset */
#define SCALE_RETRY_MIN_S	1	/* retry_after of a failed start */
#define SCALE_RETRY_MAX_S	60
#define SCALE_ENDPOINT_MAX	32
#define SCALE_ID_MAX		(2 * STORE_NAME_MAX + 2)
#define SCALE_REASON_MAX	(SCALE_LINE_MAX + 96)
#define SCALE_SUN_MAX		108	/* sizeof(sun_path) */

enum svc_state {
	SVC_SLEEPING,
	SVC_STARTING,
	SVC_RUNNING,
	SVC_DRAINING,
	SVC_STOPPED,
	SVC_FAILED,
};

struct scale;
struct service;

/* One process of a service, started (or adopted) by the exec backend. */
struct inst {
	TAILQ_ENTRY(inst)	 entry;		/* scale.insts */
	struct scale		*sc;
	struct service		*svc;		/* NULL once retired */
	char			 id[SCALE_ID_MAX];
	int64_t			 revision;
	pid_t			 pid;		/* also its process group */
	uid_t			 uid;		/* its user (notify checks it) */
	int64_t			 pid_start;	/* /proc/PID/stat starttime */
	int			 adopted;	/* not our child: pidfd */
	int			 pidfd;
	int			 port;
	char			 endpoint[SCALE_ENDPOINT_MAX];
	int			 outfd;	/* its stdout and stderr, until ready */
	int			 execfd;	/* EOF once exec succeeded */
	char			 line[SCALE_LINE_MAX + 1];
	size_t			 linelen;
	char			 last[SCALE_LINE_MAX + 1];	/* last line */
	int			 notifyfd;	/* readiness = "notify" */
	char			 notify_path[SCALE_SUN_MAX];
	int			 probefd;	/* tcp and http probes */
	int			 probe_sent;
	http_parser		 probe_parser;	/* http: the answer */
	int			 probe_status;	/* 0 until its head is in */
	int			 probe_done;	/* read to its end */
	size_t			 probe_len;	/* bytes of it read */
	int64_t			 probe_delay;	/* ms */
	struct loop_timer	 probe_timer;
	struct loop_timer	 kill_timer;	/* end of the grace period */
	int64_t			 started_at;	/* Unix ms */
	int64_t			 ready_at;
	int64_t			 start_mono;	/* loop ms */
	int			 counted;	/* holds a start slot */
	int			 ready;
	int			 stopping;
	int			 in_store; /* the store's row is this one */
};

/* One service of the installation and its state machine. */
struct service {
	TAILQ_ENTRY(service)	 entry;		/* scale.services */
	TAILQ_ENTRY(service)	 qentry;	/* scale.queue */
	struct scale		*sc;
	struct svc		 def;		/* as the store has it */
	enum svc_state		 state;
	struct inst		*inst;	/* starting, running, draining */
	struct inst		*pending;	/* new revision behind inst */
	int			 queued;
	struct loop_timer	 deadline;	/* of the start under way */
	struct loop_timer	 retry;		/* backoff over: converge */
	int64_t			 retry_at;	/* loop ms; no start before */
	int64_t			 fail_backoff;	/* s, retry_after */
	int64_t			 restart_backoff; /* ms */
	char			 fail_reason[SCALE_REASON_MAX];
	char			 wake_reason[32];	/* "" = not woken */
	int64_t			 wake_mono;
	int64_t			 wake_id;	/* the gateway's, 0 = none */
	const char		*down_reason;	/* of the stop under way */
	int			 wake_after_stop;
	int			 gated;		/* this revision was ready */
	int			 gate_tried;
	int			 removed;
	int			 failed_row;	/* the store says failed */
	int			 seen;		/* reload bookkeeping */
};

/* A connection to scale.sock. */
struct conn {
	TAILQ_ENTRY(conn)	 entry;
	struct scale		*sc;
	int			 fd;
	int			 subscriber;
	struct service		*waiting;	/* owed a sleep reply */
	int			 dead;		/* freed before sleeping */
};

/* The program's state: one per process. */
struct scale {
	struct loop		*loop;
	struct store		*store;
	struct evsink		*ev;
	struct server_config	 cfg;
	const char		*config_path;
	char			 node[STORE_NAME_MAX + 1];
	int			 grace;		/* s */
	int			 listenfd;
	char			 sock_path[CONFIG_URL_MAX + 16];
	TAILQ_HEAD(, service)	 services;
	TAILQ_HEAD(, service)	 queue;
	TAILQ_HEAD(, inst)	 insts;
	TAILQ_HEAD(, conn)	 conns;
	size_t			 nstarting;
	int			 can_switch;	/* users: root, or the caps */
	unsigned		 seq;		/* notify socket names */
	int			 stopping;	/* SIGTERM: exit when empty */
	struct loop_timer	 stop_timer;
	char			*rbuf;		/* IPC_MSG_MAX + 1 */
};

/* service.c: the per-service state machine */
const char	*service_state_name(enum svc_state);
struct service	*service_find(struct scale *, const char *);
struct service	*service_new(struct scale *, struct svc *);
void		 service_free(struct service *);
int		 service_always_on(const struct service *);
int		 service_timeout(const struct service *);
void		 service_converge(struct service *);
void		 service_wake(struct service *, const char *, int64_t);
void		 service_stop(struct service *, const char *);
void		 service_spawn(struct service *);
void		 service_deadline(struct loop *, void *);
void		 service_inst_ready(struct inst *);
void		 service_inst_exit(struct inst *, int);
int64_t		 service_retry_after(const struct service *);

/* reload.c: services read back from the store */
int		 scale_reload(struct scale *, int);
void		 scale_shutdown(struct scale *);

/* queue.c: at most max_concurrent_starts starts, FIFO */
void		 queue_add(struct service *);
void		 queue_remove(struct service *);
void		 queue_kick(struct scale *);
void		 queue_settle(struct inst *);

/* backend_exec.c */
struct inst	*exec_start(struct service *, char *, size_t);
struct inst	*exec_adopt(struct scale *, const struct store_instance *, int);
void		 exec_stop(struct inst *);
void		 exec_kill(struct inst *);
void		 exec_retire(struct inst *);
void		 exec_relay(struct inst *);
void		 exec_reap(struct scale *);
void		 exec_free(struct inst *);

/* probe.c */
void		 probe_start(struct inst *);
void		 probe_stop(struct inst *);
int		 probe_notify_open(struct inst *, char *, size_t);

/* ctl.c: scale.sock */
int		 ctl_listen(struct scale *, char *, size_t);
void		 ctl_close(struct scale *);
void		 ctl_reap(struct scale *);
void		 ctl_ready(struct service *);
void		 ctl_down(struct service *, const char *);
void		 ctl_failed(struct service *);
void		 ctl_sleep_done(struct service *, const char *);

/* instance_store.c */
void		 row_put(struct inst *, const char *);
void		 row_delete(struct scale *, const struct svc *);
void		 row_failed(struct service *);
int		 gate_passed(struct scale *, const struct svc *);
void		 gate_mark(struct scale *, const struct svc *, int64_t);
void		 adopt_all(struct scale *);


#endif
