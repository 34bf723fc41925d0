/*
 * jobs.h - declarations private to hk-jobs: runs, one-shot invocations
 * of a service with a JSON event, each sent through the gateway's own
 * listener as a client's request (hk-jobs(8)).
 */
#ifndef HK_JOBS_H
#define HK_JOBS_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>
#include <jansson.h>

#include "config.h"
#include "cron.h"
#include "loop.h"
#include "owed.h"
#include "retry.h"
#include "metrics.h"
#include "store.h"

#define PROG			"hk-jobs"
#define JOBS_PATH_MAX		(CONFIG_URL_MAX + 16)
/*
 * A run's own deadline, beyond the gateway's (startup_timeout_seconds
 * and request_timeout_seconds, at most 300 each): only a gateway that
 * never answers meets it.
 */
#define JOBS_RUN_MS		(660 * 1000)
#define JOBS_PRUNE_MS		(60 * 1000)	/* retention, after runs */
#define JOBS_OWED_MAX		4096	/* run records owed to the store */
#define JOBS_PRUNE_IDLE_MS	(86400 * 1000)	/* and once a day */
/*
 * A firing found due by at most this much (the schedules' clock) is only
 * late and runs; one older was missed while hk-jobs was down (catch_up).
 */
#define JOBS_LATE_MS		(30 * 1000)
#define JOBS_TRIGGER_JOB	"apply:"	/* + the job's name */
#define JOBS_TRIGGER_SCHEDULE	"schedule:"	/* + the schedule's name */
#define JOBS_HEAD_MAX		(STORE_PATH_MAX + 512)	/* request head */

enum run_phase {
	RUN_PENDING,
	RUN_RUNNING,
	RUN_SUCCEEDED,
	RUN_FAILED,
	RUN_SKIPPED,
	RUN_PHASES
};

struct conn;

/* What a run sends: from hk invoke, a job or a schedule. */
struct run_req {
	const char	*method;
	const char	*path;
	const char	*event;		/* JSON text */
	size_t		 event_len;
	int64_t		 timeout_s;	/* 0: JOBS_RUN_MS */
};

/* A schedule, as the store has it, and when it fires next. */
struct sched {
	struct store_schedule	 row;
	struct cron		 cron;
	char			 tz[CRON_TZ_MAX + 1];
	char			*event;		/* JSON text */
	char			 method[STORE_METHOD_MAX + 1];
	char			 path[STORE_PATH_MAX + 1];
	int64_t			 timeout_s;
	int			 enabled;
	int			 forbid;	/* concurrency = "forbid" */
	int			 catch_up;
	int64_t			 next;		/* schedules' clock, ms; -1 */
};

/* One run in flight: its row, its request, its connection. */
struct run {
	TAILQ_ENTRY(run)	 entry;		/* jobs.runs */
	struct jobs		*jx;
	struct store_run	 row;
	enum run_phase		 phase;
	char			*out;		/* head and event, to send */
	size_t			 outlen;
	size_t			 sent;
	int			 fd;		/* to the gateway; -1 none */
	http_parser		 parser;
	http_parser_settings	 settings;
	int			 complete;	/* the whole response read */
	size_t			 body_max;	/* runs_body_bytes */
	int64_t			 start_us;
	int64_t			 deadline_ms;	/* timeout_seconds or JOBS_RUN_MS */
	struct loop_timer	 timer;
	struct conn		*waiter;	/* hk invoke --wait; or NULL */
};

/* A connection to jobs.sock. */
struct conn {
	TAILQ_ENTRY(conn)	 entry;		/* jobs.conns */
	struct jobs		*jx;
	int			 fd;
	struct run		*pending;	/* started after the reply */
	struct run		*waiting;	/* told of its end; or NULL */
};

struct jobs {
	struct loop		*loop;
	struct store		*store;
	struct server_config	 cfg;
	const char		*config_path;
	char			 jobs_path[JOBS_PATH_MAX];
	int			 listenfd;
	int			 stopping;
	struct loop_timer	 prune_timer;
	struct sched		*scheds;	/* every schedule, enabled or not */
	size_t			 nscheds;
	int			 sched_fd;	/* timerfd, CLOCK_REALTIME; -1 */
	TAILQ_HEAD(, run)	 runs;
	TAILQ_HEAD(, conn)	 conns;
	char			*rbuf;		/* IPC_MSG_MAX + 1 */
	struct metrics_srv	*metrics;	/* stats.c */
	uint64_t		 m_ended[RUN_PHASES];	/* by phase */
	struct owed		*owed;		/* record.c */
	struct retry		 reload_retry;	/* main.c: jobs_reload */
};

/* run.c: phases, rows and the end of a run */
struct run	*run_make(struct jobs *, const char *, const char *,
		    const char *, const struct run_req *, char *, size_t);
void		 run_track(struct run *);
/* hk invoke's: Pending and recorded; NULL with a reason (*input: ours). */
struct run	*run_new(struct jobs *, const char *, const char *,
		    const struct run_req *, char *, size_t, int *);
void		 run_skip(struct run *, const char *);
void		 run_start(struct run *);
void		 run_end(struct run *, enum run_phase, const char *);
void		 run_free(struct run *);
const char	*run_phase_name(enum run_phase);
void		 run_recover(struct jobs *);
void		 run_prune(struct loop *, void *);

/* main.c */
int		 jobs_reload(struct jobs *);

/* record.c: run records, owed to a store that was away (lib/owed.h) */
int		 record_init(struct jobs *);
int		 record_put(struct jobs *, const struct store_run *);

/* request.c: the request to the gateway and its response */
int		 req_start(struct run *, char *, size_t);
void		 req_close(struct run *);

/* declared.c: [jobs.NAME], a run per new run_id */
int		 declared_dispatch(struct jobs *);
struct run	*declared_find(struct jobs *, const char *);
json_t		*run_req_decode(const char *, struct run_req *);

/* schedule.c: [services.X.schedules.NAME] */
int		 sched_init(struct jobs *, char *, size_t);
int		 sched_load(struct jobs *);
void		 sched_close(struct jobs *);

/* stats.c: GET /metrics on [metrics] jobs */
void		 stats_listen(struct jobs *);
void		 stats_close(struct jobs *);

/* ctl.c: jobs.sock */
int		 ctl_listen(struct jobs *, char *, size_t);
void		 ctl_close(struct jobs *);
void		 ctl_notify(struct conn *, const struct run *);

#endif
