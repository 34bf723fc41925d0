/*
 * scale.h - declarations private to hk-scale, the actuator: services and
 * their state machine, the start queue, the backends, readiness probes,
 * scale.sock and the instance rows of the store.
 */
#ifndef HK_SCALE_H
#define HK_SCALE_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "hget.h"
#include "loop.h"
#include "owed.h"
#include "retry.h"
#include "metrics.h"
#include "spec.h"
#include "srctree.h"
#include "svclog.h"
#include "store.h"
#include "user.h"

#define PROG			"hk-scale"
#define SCALE_LINE_MAX		512	/* bytes kept of one output line */
#define SCALE_GRACE_DEFAULT	10	/* s from SIGTERM to SIGKILL */
#define SCALE_PROBE_DIV		128	/* probe retries: start time / 128, */
#define SCALE_PROBE_MIN_US	250	/* within these bounds (probe.c) */
#define SCALE_PROBE_MAX_MS	50
#define SCALE_HC_DIV		32	/* health checks and probes through a */
#define SCALE_HC_MIN_MS		1	/* forwarder: start time / 32, at least */
#define SCALE_PROBE_READ_MAX	65536	/* bytes of an http probe's answer */
#define SCALE_PROBE_REST_MS	1000	/* for its rest, once its head is in */
#define SCALE_RESTART_MIN_MS	100	/* restart of an always-on service */
#define SCALE_RESTART_MAX_MS	30000
#define SCALE_RESTART_RESET_MS	10000	/* ran this long: backoff reset */
#define SCALE_RETRY_MIN_S	1	/* retry_after of a failed start */
#define SCALE_RETRY_MAX_S	60
#define SCALE_PROBE_HOLD_MAX	1000	/* ms a tcp probe holds at most */
#define SCALE_ENDPOINT_MAX	(STORE_ENDPOINT_MAX + 1) /* "[IPv6]:port",
						   "unix:/PATH" */
#define SCALE_ID_MAX		(2 * STORE_NAME_MAX + 2)
#define SCALE_REASON_MAX	(SCALE_LINE_MAX + 96)
#define SCALE_SUN_MAX		108	/* sizeof(sun_path) */
#define SCALE_WHAT_MAX		200	/* "pid 123", "unit hk-svc-..." */
#define SCALE_INSTALL_MAX	32	/* hex digits: the installation's ID */
#define STATS_PHASES		4	/* queue, spawn, port, ready: stats.c */
#define SCALE_RECORD_MS		20	/* a ready's row and event, after it */
#define SCALE_CRED_MAX		(CONFIG_URL_MAX + 2 * STORE_NAME_MAX + 48)

enum svc_state {
	SVC_SLEEPING,
	SVC_STARTING,
	SVC_RUNNING,
	SVC_DRAINING,
	SVC_STOPPED,
	SVC_FAILED,
	SVC_SUSPENDED,	/* idle_action = "suspend": frozen, or freezing */
};

struct backend;
struct ct_node;
struct scale;
struct secret_key;
struct service;

/*
 * One instance of a service, whatever backend runs it: what the state
 * machine, the start queue, the probes and the store row need.  What only
 * its backend needs is behind priv, which that backend alone touches.
 */
struct inst {
	TAILQ_ENTRY(inst)	 entry;		/* scale.insts */
	struct scale		*sc;
	struct service		*svc;		/* NULL once retired */
	const struct backend	*be;
	void			*priv;		/* the backend's own state */
	char			 id[SCALE_ID_MAX];
	char			 what[SCALE_WHAT_MAX];	/* "pid 123", for logs */
	int64_t			 revision;
	char			 code_hash[SRCTREE_HASH_LEN + 1];  /* "": none */
	int			 code_unknown;	/* adopted: its code_hash
						   may not be its service's */
	uid_t			 uid;		/* its user (notify checks it) */
	char			 cred_dir[SCALE_CRED_MAX]; /* "": no secrets */
	int			 port;
	char			 endpoint[SCALE_ENDPOINT_MAX];
	char			 node[STORE_NAME_MAX + 1];	/* it runs on */
	int			 notifyfd;	/* readiness = "notify" */
	char			 notify_path[SCALE_SUN_MAX];
	int			 probefd;	/* tcp and http probes */
	int			 conn_fd;	/* the tcp probe's connection,
						   for the gateway (ctl_ready) */
	int			 probe_sent;
	struct hget		 probe_get;	/* http: the request, its
						   answer */
	int			 probe_tfd;	/* timerfd: the pause between */
	int			 probe_hold;	/* ms: tcp, see probe.c */
	pid_t			 probe_ns_pid;	/* tcp behind a forwarder: the
						   port listens in this pid's
						   network namespace (probe.c) */
	int			 probe_ns_port;	/* and on this port there */
	int64_t			 probe_at;	/* loop ms: connected */
	int64_t			 probe_shut;	/* ms: longest a forwarder
						   took to close on us */
	struct loop_timer	 probe_timer;
	struct loop_timer	 kill_timer;	/* end of the grace period */
	struct loop_timer	 row_timer;	/* its "starting" row, owed */
	int64_t			 started_at;	/* Unix ms */
	int64_t			 ready_at;
	int64_t			 start_mono;	/* loop ms */
	int64_t			 spawned_mono;	/* loop ms: started */
	int64_t			 port_mono;	/* loop ms: a probe connected */
	char			 row_state[STORE_STATE_MAX + 1]; /* adopted:
						   an earlier run's */
	int			 counted;	/* holds a start slot */
	int			 ready;
	int			 stopping;
	int			 freezing;	/* freeze asked, not reported */
	int			 frozen;	/* reported frozen */
	int			 thawing;	/* thaw asked, not reported */
	int64_t			 frozen_mono;	/* loop ms: frozen at */
	int			 in_store; /* the store's row is this one */
	int			 releasing;	/* freed once released */
	int			 replica;	/* 0: svc->inst; else one of
						   svc->replicas[] (replica.c) */
	struct loop_timer	 replica_deadline;	/* its start's */
};

/*
 * A backend: how instances run.  One file each (backend_exec.c; a backend
 * with more has them named after it, exec_*.c, and a header of its own),
 * one line in backends[] (backend.c), and what its kind needs and can do
 * in lib/config.c's table (config_backend_can()), which hk validate reads
 * too.  The state machine, the queue, the probes and the store rows call
 * these through backend.c (inst_*(), backend_of(), backend_can()) and
 * never name a backend nor test a kind; a backend keeps its state in its
 * own files, never in struct scale, and reads the services' state only
 * through backend.c (backend_current()).  A start, a stop and an
 * adoption may complete later than the call, from the backend's own
 * events (a child's exit, an engine's answer): the backend reports each
 * outcome through the backend_*() functions below, which may also come
 * before the call returns.
 */
struct backend {
	enum backend_kind	 kind;		/* its name, and what it can
						   do: lib/config.c's table */
	int			 starts_later;	/* start reports later: the
						   row says starting at once */
	/*
	 * Start in, an instance of in->svc's current revision on in->node:
	 * then backend_started() once it runs at in->endpoint (probes
	 * begin), or backend_failed() with the reason, and nothing runs.
	 * A stop or a kill may come before either: the backend then ends
	 * the start and reports backend_exited() once nothing runs.
	 */
	void	(*start)(struct inst *);
	/*
	 * What an earlier hk-scale's row describes (in has its revision,
	 * endpoint and times): then backend_adopted(), with whether it
	 * still runs and is now watched.
	 */
	void	(*adopt)(struct inst *, const struct store_instance *);
	/* Stop gracefully; kill once the grace period is over, or now.
	   backend_exited() follows either. */
	void	(*stop)(struct inst *);
	void	(*kill)(struct inst *);
	/* Ready: what the instance prints goes on without hk-scale. */
	void	(*handover)(struct inst *);
	/* The row's columns that are the backend's (pid, pid_start). */
	void	(*row)(const struct inst *, struct store_instance *);
	/*
	 * Frees priv: nothing of in runs, or it is no longer watched.
	 * 0 done; 1 when what is left goes later (a container's removal):
	 * backend_released() then.  During shutdown in->sc->stopping is
	 * 2 and the loop is over: it must not return 1.
	 */
	int	(*release)(struct inst *);
	/* A child of hk-scale exited: 1 if it was in's (it reported). */
	int	(*reap)(struct inst *, pid_t, int);
	/*
	 * What the backend keeps for all its instances is its own, in its
	 * files, never in struct scale.  setup: before the store's rows are
	 * read; -1 with err: hk-scale exits 78.  teardown: once every
	 * instance has gone, at the end.  Optional, both.
	 */
	int	(*setup)(struct scale *, char *, size_t);
	void	(*teardown)(struct scale *);
	/* Start-up, once the rows are handed out (adopt); and the end of
	   the loop, before the instances go. */
	void	(*init)(struct scale *);
	void	(*shutdown)(struct scale *);
	/*
	 * Once every row is adopted: what this backend finds running that
	 * no instance claims (no row described it) is stopped.  Optional.
	 */
	void	(*sweep)(struct scale *);
	/*
	 * Whose the files of in's secrets are (secrets.c), given before
	 * start: the user that reads them.  NULL: the service's user, as
	 * the command runs (command_user()).
	 */
	int	(*cred_user)(struct inst *, struct user_ids *, char *, size_t);
	/*
	 * idle_action = "suspend", of the kinds lib/config.c's table says
	 * can (BACKEND_SUSPENDS; NULL for the others).  freeze: the instance keeps its memory and
	 * uses no CPU, then backend_frozen(in, NULL), or backend_frozen(in,
	 * why) and it runs on as before.  thaw: in->frozen is set; then
	 * backend_thawed(in, NULL) once it runs again, or just before it
	 * surely does (so that the "ready" goes out first: a process
	 * signalled to continue takes the CPU at once), or (in, why).  Either
	 * may report before it returns.  stop and kill must work on a
	 * frozen instance (in->frozen, or in->freezing: a freeze under
	 * way): it must end, not wait frozen for the grace period.
	 */
	void	(*freeze)(struct inst *);
	void	(*thaw)(struct inst *);
};

/*
 * The lines a command prints (command.c), and the service's log they go
 * to (svclog.h); hk-scale's stderr has them only when that log cannot
 * be written.
 */
struct cmd_output {
	char			 line[SCALE_LINE_MAX + 1];
	size_t			 linelen;
	char			 last[SCALE_LINE_MAX + 1];	/* last line */
	struct svclog		 log;
};

/*
 * A replica beside the service's first instance (replica.c): what runs,
 * and when it may start again after an exit or a failed start.
 */
struct replica {
	struct inst		*in;
	int64_t			 retry_at;	/* loop ms */
	int64_t			 backoff;	/* ms */
	int64_t			 roll_from;	/* the revision a roll took
						   down here, until ready */
};

/* One service of the installation and its state machine. */
struct service {
	TAILQ_ENTRY(service)	 entry;		/* scale.services */
	TAILQ_ENTRY(service)	 qentry;	/* scale.queue */
	struct scale		*sc;
	struct svc		 def;		/* as the store has it */
	/*
	 * The newest revision that passed its readiness gate, while def
	 * has not (revision 0: none, or def passed): what a wake starts
	 * (release.c).
	 */
	struct svc		 good;
	enum svc_state		 state;
	struct inst		*inst;	/* starting, running, draining */
	struct inst		*pending;	/* new revision behind inst */
	struct replica		 replicas[SPEC_REPLICAS_MAX]; /* 1..: the
						   others beside inst */
	struct loop_timer	 replica_timer;	/* a backoff over */
	int			 queued;
	int			 gate_next;	/* the queued start is def's
						   readiness gate */
	int			 restart_good;	/* it stopped good for it:
						   started again if it fails */
	struct loop_timer	 deadline;	/* of the start under way */
	struct loop_timer	 pending_deadline;	/* of pending's */
	int64_t			 gate_retry_at;	/* loop ms: def's gate again */
	int64_t			 gate_backoff;	/* s */
	int64_t			 passed_rev;	/* marked passed (release.c) */
	char			 gate_reason[SCALE_REASON_MAX];
	struct loop_timer	 retry;		/* backoff over: converge */
	struct loop_timer	 suspend_timer;	/* suspend_max_seconds */
	struct loop_timer	 record_timer;	/* ready_record() */
	enum { REC_NONE, REC_THAW, REC_START }
				 record;	/* ready, not yet recorded */
	int64_t			 thaw_ms;	/* it was frozen so long */
	json_t			*record_event;	/* its HTTPIdleWake */
	int			 down_sent;	/* frozen: "down" said */
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
	int			 adopting;	/* rows an adoption looks at */
	int			 failed_row;	/* the store says failed */
	int			 seen;		/* reload bookkeeping */
	uint64_t		 m_starts;	/* stats.c */
	uint64_t		 m_start_failures;
	uint64_t		 m_suspends;
	uint64_t		 m_resumes;
};

/* A connection to scale.sock. */
struct conn {
	TAILQ_ENTRY(conn)	 entry;
	struct scale		*sc;
	int			 fd;
	int			 subscriber;
	int			 takes_conns;	/* a gateway: ready may
						   carry a connection */
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
	char			 node[STORE_NAME_MAX + 1];	/* host name */
	char			 installation[SCALE_INSTALL_MAX + 1];
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
	struct metrics_srv	*metrics;	/* stats.c */
	struct metrics_hist	 m_phase[STATS_PHASES];
	struct metrics_hist	 m_ready;
	struct owed		*owed;		/* row_due.c */
	struct retry		 reload_retry;	/* reload.c */
};

/* row_due.c: the writes owed to a store that was away (lib/owed.h) */
#define DUE_KEY_MAX	(SCALE_ID_MAX + 16)	/* hk-scale.gate.APP/SVC */
#define SCALE_OWED_MAX	8192	/* rows and gates: two a service */
enum due_kind { DUE_PUT, DUE_DELETE, DUE_GATE, DUE_REVISION };
int		 due_init(struct scale *);
int		 due_write(struct scale *, enum due_kind, const char *,
		    const char *, const struct store_instance *, const char *,
		    const char *);
int		 due_revision(struct scale *, const struct svc *, int64_t,
		    const char *, const char *);
int		 due_delete(struct scale *, const char *, const char *, int);

/* replica.c: an ordinary service's replicas beside its first instance */
int		 replica_wanted(const struct service *);
void		 replica_converge(struct service *);
void		 replica_stop_all(struct service *);
void		 replica_fire(struct loop *, void *);
void		 replica_deadline(struct loop *, void *);
void		 replica_started(struct inst *);
void		 replica_failed(struct inst *, const char *);
void		 replica_ready(struct inst *);
void		 replica_exit(struct inst *, const char *);
void		 replica_adopt(struct inst *, struct service *, int);
int		 replica_rescale(struct service *, const struct svc *);

/* release.c: a failed release never replaces a healthy one */
void		 release_load(struct service *);
void		 release_passed(struct service *);
struct svc	*inst_def(const struct inst *);
int		 release_guarded(const struct service *);
int		 release_is_gate(const struct service *, int64_t);
void		 release_mark(struct service *, int64_t, const char *,
		    const char *);
void		 release_gate_failed(struct service *, const char *, json_t *);
int		 release_gate_due(struct service *);

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
void		 service_inst_started(struct inst *);
void		 service_inst_failed(struct inst *, const char *);
void		 service_inst_ready(struct inst *);
void		 service_inst_exit(struct inst *, int, const char *);
void		 service_inst_frozen(struct inst *, const char *);
void		 service_inst_thawed(struct inst *, const char *);
void		 service_suspend(struct service *);
void		 ready_record(struct service *);
int		 service_suspends(const struct service *);
void		 service_adopted(struct service *);
const char	*service_node(const struct service *, const struct backend *);
int64_t		 service_retry_after(const struct service *);

/* stats.c: GET /metrics on [metrics] scale */
void		 stats_listen(struct scale *);
void		 stats_close(struct scale *);
void		 stats_ready(struct service *, struct inst *);
/*
 * exec_pool.c: the Python templates and Node spares, started as their
 * services are loaded; their memory, for the metrics and hk ps
 */
void		 pool_metrics(struct metrics_out *);
json_t		*pool_status(void);
void		 pool_load(struct scale *, const struct service_spec *, int);

/* source.c: "source" trees written out under runtime_dir */
int		 source_dir(struct scale *, const char *, char *, size_t);
int		 source_prepare(struct scale *, struct service_spec *, char *,
		    size_t);
void		 source_sweep(struct scale *);

/* secrets.c: an instance's secrets, as files (and variables) */
int		 secrets_prepare(struct inst *, const struct user_ids *, char *,
		    size_t);
void		 secrets_remove(struct inst *);
void		 secrets_adopt(struct inst *, const struct store_instance *);
void		 secrets_sweep(struct scale *, const struct store_instance *,
		    size_t);
int		 secrets_env(const struct inst *, char **, char *, size_t);
int		 secrets_fetch(struct scale *, const struct secret_key *,
		    const char *, const char *, unsigned char **, size_t *,
		    char *, size_t);

/* reload.c: services read back from the store */
int		 scale_reload(struct scale *, int);
void		 scale_shutdown(struct scale *);

/* queue.c: at most max_concurrent_starts starts, FIFO */
void		 queue_add(struct service *);
void		 queue_remove(struct service *);
void		 queue_kick(struct scale *);
void		 queue_settle(struct inst *);

/* backend.c: backends[], and the life of an instance around them */
const struct backend *backend_find(enum backend_kind);
const struct backend *backend_of(const struct service *);
int		 backend_current(struct scale *, const char *,
		    const struct backend *, int64_t, int);
int		 backend_can(const struct backend *, unsigned);
int		 backends_setup(struct scale *, char *, size_t);
void		 backends_init(struct scale *);
void		 backends_teardown(struct scale *);
void		 inst_teardown(struct scale *);
struct inst	*inst_new(struct scale *, const char *, const struct backend *);
void		 inst_adopt(struct inst *, const struct store_instance *);
void		 scale_fence(struct scale *);
void		 inst_start(struct inst *);
void		 inst_stop(struct inst *);
void		 inst_kill(struct inst *);
void		 inst_freeze(struct inst *);
void		 inst_thaw(struct inst *);
int		 inst_can_suspend(const struct inst *);
void		 inst_retire(struct inst *);
void		 inst_handover(struct inst *);
void		 inst_row(const struct inst *, struct store_instance *);
void		 inst_reap(struct scale *);
void		 inst_free(struct inst *);
/* what a backend reports (backend.c) */
void		 backend_started(struct inst *);
void		 backend_failed(struct inst *, const char *);
void		 backend_ready(struct inst *);
void		 backend_exited(struct inst *, int, const char *);
void		 backend_adopted(struct inst *, int);
void		 backend_released(struct inst *);
void		 backend_frozen(struct inst *, const char *);
void		 backend_thawed(struct inst *, const char *);
void		 backend_sweep(struct scale *);

/* command.c: the port, user, environment and output of a command */
int		 command_port(struct inst *, int, char *, size_t);
int		 command_user(struct scale *, const struct service_spec *,
		    struct user_ids *, int *, char *, size_t);
char		**command_env(const struct service_spec *, const struct inst *,
		    const struct user_ids *, char **);
void		 command_env_free(char **);
int		 command_env_reserved(const char *);
int		 command_listens(const struct service_spec *);
int		 command_shares_port(const struct service_spec *);
void		 output_open(struct cmd_output *, const struct inst *);
void		 output_inst(struct cmd_output *, const char *);
void		 output_close(struct cmd_output *);
void		 output_write(struct svclog *, const char *, const char *,
		    size_t);
void		 output_line(struct cmd_output *, const char *);
void		 output_feed(struct cmd_output *, const char *, const char *,
		    size_t);
int		 output_read(struct cmd_output *, const char *, int);
void		 output_drain(struct cmd_output *, const char *, int);
pid_t		 output_relay(struct cmd_output *, const char *, int);

/* backend_exec.c, backend_container.c, backend_s6.c, backend_systemd.c,
   backend_kubernetes.c */
extern const struct backend backend_exec;
extern const struct backend backend_container;
extern const struct backend backend_s6;
extern const struct backend backend_systemd;
extern const struct backend backend_kubernetes;	/* k8s.h */

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
void		 ctl_gate_failed(struct service *);
void		 ctl_sleep_done(struct service *, const char *);

/* instance_store.c */
void		 row_put(struct inst *, const char *);
void		 row_put_soon(struct inst *);
void		 row_delete(struct scale *, const struct svc *);
void		 row_failed(struct service *);
int		 gate_passed(struct scale *, const struct svc *);
void		 gate_mark(struct scale *, const struct svc *, int64_t);
void		 adopt_all(struct scale *);
void		 adopt_done(struct inst *, int);
int		 installation_id(struct scale *);


#endif
