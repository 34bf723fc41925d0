/*
 * idle.h - declarations private to hk-idle, the idle policy: one timer per
 * awake service, a fence at the gateway when it fires, then a sleep
 * through hk-scale.
 */
#ifndef HK_IDLE_H
#define HK_IDLE_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "evsink.h"
#include "hget.h"
#include "loop.h"
#include "retry.h"
#include "metrics.h"
#include "store.h"

#define PROG			"hk-idle"
#define IDLE_ID_MAX		(2 * STORE_NAME_MAX + 2)
#define IDLE_PATH_MAX		(CONFIG_URL_MAX + 16)
#define IDLE_FENCE_MS		5000	/* the gateway answers at once */
#define IDLE_STATUS_MS		5000
#define IDLE_SLEEP_MS		3700000	/* hk-scale's longest grace, and some */
#define IDLE_BACKOFF_MIN_MS	100	/* re-subscribing to hk-scale */
#define IDLE_BACKOFF_MAX_MS	2000
#define IDLE_CHECK_EVERY_S	5	/* busy: asked again after (units) */
#define IDLE_CHECK_EVENT_S	60	/* busy: an event at most this often */
#define IDLE_CHECK_TIMEOUT_MS	10000	/* no answer: counted busy */
#define IDLE_CHECK_REST_MS	1000	/* the answer's body, after its head */
#define IDLE_CHECK_READ_MAX	65536	/* bytes of an answer read */

/* How a fence ended: granted, refused, or no answer (stats.c). */
enum fence_result { FENCE_GRANTED, FENCE_REFUSED, FENCE_FAILED,
	FENCE_RESULTS };

/* How an idle check ended (check.c, stats.c). */
enum check_result {
	CHECK_IDLE,		/* 2xx */
	CHECK_BUSY,		/* another status */
	CHECK_TIMEOUT,		/* no answer in time: counted busy */
	CHECK_UNREACHABLE,	/* refused, closed, not HTTP: counted idle */
	CHECK_RESULTS
};

struct idle;
struct call;
struct isvc;

/* The reply of a call, or NULL with a reason when there is none. */
typedef void	call_fn(struct call *, json_t *, const char *);

/* One request on its own connection, its reply awaited in the loop. */
struct call {
	struct idle		*ix;
	int			 fd;		/* -1: none under way */
	struct loop_timer	 timer;		/* no reply by then */
	call_fn			*fn;
	void			*arg;
};

/* One GET of idle_check to the instance, its answer awaited in the loop. */
struct icheck {
	struct isvc		*s;
	int			 fd;		/* -1: none under way */
	int			 sent;
	struct hget		 get;		/* the request, its answer */
	struct loop_timer	 timer;
};

enum isvc_step {
	STEP_WAIT,	/* timer armed (if awake) */
	STEP_CHECK,	/* idle_check asked of the instance */
	STEP_FENCE,	/* fence asked of the gateway */
	STEP_SLEEP,	/* sleep asked of hk-scale */
};

/* One service of the installation, as hk-idle sees it. */
struct isvc {
	TAILQ_ENTRY(isvc)	 entry;		/* idle.services */
	struct idle		*ix;
	char			 id[IDLE_ID_MAX];
	int			 serverless;
	int			 min_replicas;
	int			 idle_seconds;
	int			 removed;	/* not in the store any more */
	int			 seen;		/* reload bookkeeping */
	int			 awake;		/* ready, and no down since */
	int			 refused;	/* fence refusal logged */
	int64_t			 gw_fenced_at;	/* loop ms: the gateway said
						   fenced before its ready
						   came; 0: not */
	int64_t			 base;		/* loop ms: the period's start */
	enum isvc_step		 step;
	struct loop_timer	 timer;
	struct call		 call;
	/* idle_check (check.c): asked before the fence */
	char			 endpoint[STORE_ENDPOINT_MAX + 1]; /* ready's */
	char			*check_path;	/* NULL: no check */
	int			 check_max_seconds;
	int64_t			 recheck_at;	/* loop ms; 0: the period */
	int64_t			 busy_since;	/* loop ms of the first busy
						   answer; 0: not busy */
	int64_t			 busy_event;	/* loop ms of the last event */
	unsigned		 busy_answers;
	struct icheck		 check;
};

enum sub_state {
	SUB_DOWN,	/* waiting for the backoff */
	SUB_WAIT_OK,	/* subscribe sent */
	SUB_SNAPSHOT,	/* reading the ready of every running service */
	SUB_STREAM,
};

struct idle {
	struct loop		*loop;
	struct store		*store;
	struct server_config	 cfg;
	const char		*config_path;
	char			 idle_path[IDLE_PATH_MAX];
	char			 scale_path[IDLE_PATH_MAX];
	char			 gw_path[IDLE_PATH_MAX];
	int			 listenfd;
	int			 stopping;	/* SIGTERM: fences seen through */
	struct loop_timer	 stop_timer;
	TAILQ_HEAD(, isvc)	 services;

	/* sub.c: the subscription to hk-scale */
	enum sub_state		 sub;
	int			 subfd;
	int			 sub_backoff;	/* ms; 0 = was up */
	struct loop_timer	 sub_timer;
	struct call		 sync;		/* the gateway's status */
	int			 gw_down;	/* warned: no gateway */
	char			*rbuf;		/* IPC_MSG_MAX + 1 */
	struct metrics_srv	*metrics;	/* stats.c */
	uint64_t		 m_fences[FENCE_RESULTS];
	uint64_t		 m_checks[CHECK_RESULTS];
	struct evsink		*ev;		/* events.sock */
	TAILQ_HEAD(, ictl)	 ctls;		/* ctl.c: idle.sock's peers */
	size_t			 nctls;
	struct retry		 policy_retry;	/* a reload the store refused */
};

/* service.c: policies, timers, fence and sleep */
int		 policy_reload(struct idle *);
void		 policy_reload_later(struct idle *);
struct isvc	*isvc_find(struct idle *, const char *);
void		 isvc_free(struct isvc *);
void		 isvc_ready(struct idle *, const char *, const char *);
void		 isvc_checked(struct isvc *, enum check_result, const char *);
void		 isvc_down(struct idle *, const char *);
void		 isvc_forget_all(struct idle *);
void		 isvc_sync(struct isvc *, const char *, json_t *);
int64_t		 isvc_period(const struct isvc *);
int64_t		 isvc_deadline_wall(const struct isvc *);
const char	*isvc_step_name(const struct isvc *);
void		 gw_seen(struct idle *, const char *);
void		 isvc_stop_all(struct idle *);
int64_t		 wall_ms(void);

/* check.c: idle_check, one GET to the instance's endpoint */
void		 check_init(struct isvc *);
void		 check_start(struct isvc *);
void		 check_cancel(struct isvc *);
const char	*check_result_name(enum check_result);

/* call.c: requests to activate.sock and scale.sock */
void		 call_init(struct call *, struct idle *, void *);
int		 call_start(struct call *, call_fn *, const char *, json_t *,
		    int);
void		 call_cancel(struct call *);
int		 call_busy(const struct call *);

/* sub.c: scale.sock subscription, and the gateway's status after it */
void		 sub_start(struct idle *);
void		 sub_close(struct idle *);

/* stats.c: GET /metrics on [metrics] idle */
void		 stats_listen(struct idle *);
void		 stats_close(struct idle *);

/* ctl.c: idle.sock */
int		 ctl_listen(struct idle *, char *, size_t);
void		 ctl_close(struct idle *);


#endif
