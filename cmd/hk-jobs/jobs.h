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
#include "loop.h"
#include "store.h"

#define PROG			"hk-jobs"
#define JOBS_PATH_MAX		(CONFIG_URL_MAX + 16)
/*
 * A run's own deadline, beyond the gateway's (startup_timeout_seconds
 * and request_timeout_seconds, at most 300 each): only a gateway that
 * never answers meets it.
 */
#define JOBS_RUN_MS		(660 * 1000)
#define JOBS_PRUNE_MS		(60 * 1000)	/* retention, once a minute */
#define JOBS_HEAD_MAX		(STORE_PATH_MAX + 512)	/* request head */

enum run_phase {
	RUN_PENDING,
	RUN_RUNNING,
	RUN_SUCCEEDED,
	RUN_FAILED,
	RUN_SKIPPED,
};

struct conn;

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
	struct loop_timer	 timer;		/* JOBS_RUN_MS */
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
	TAILQ_HEAD(, run)	 runs;
	TAILQ_HEAD(, conn)	 conns;
	char			*rbuf;		/* IPC_MSG_MAX + 1 */
};

/* run.c: phases, rows and the end of a run */
/* A new run, Pending and recorded; NULL with a reason (*input: ours). */
struct run	*run_new(struct jobs *, const char *, const char *,
		    const char *, const char *, const char *, size_t,
		    char *, size_t, int *);
void		 run_start(struct run *);
void		 run_end(struct run *, enum run_phase, const char *);
void		 run_free(struct run *);
const char	*run_phase_name(enum run_phase);
void		 run_recover(struct jobs *);
void		 run_prune(struct loop *, void *);

/* request.c: the request to the gateway and its response */
int		 req_start(struct run *, char *, size_t);
void		 req_close(struct run *);

/* ctl.c: jobs.sock */
int		 ctl_listen(struct jobs *, char *, size_t);
void		 ctl_close(struct jobs *);
void		 ctl_notify(struct conn *, const struct run *);

#endif
