/*
 * run.c - a run from Pending to its end: the row in the store at each
 * phase, the service's state checked before anything is sent, the end
 * told to whoever waits for it.  hk-jobs never retries a run.
 */
#include <sys/random.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "jobs.h"
#include "log.h"
#include "store.h"

static int	run_id(char *, size_t);
static int	run_head(struct run *, const char *, const char *, size_t);
static void	run_timeout(struct loop *, void *);
static void	run_save(struct run *);

static const char *const phase_names[] = {
	[RUN_PENDING] = "Pending",
	[RUN_RUNNING] = "Running",
	[RUN_SUCCEEDED] = "Succeeded",
	[RUN_FAILED] = "Failed",
	[RUN_SKIPPED] = "Skipped",
};

const char *
run_phase_name(enum run_phase p)
{
	return phase_names[p];
}

/* 64 random bits as 16 hex digits: unique in an installation. */
static int
run_id(char *dst, size_t size)
{
	unsigned char b[8];
	size_t i;

	if (size < 2 * sizeof(b) + 1 ||
	    getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	for (i = 0; i < sizeof(b); i++)
		snprintf(dst + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* The request, whole: head then event; the gateway's /fn/ path routes it. */
static int
run_head(struct run *r, const char *addr, const char *event, size_t len)
{
	int n;

	n = snprintf(NULL, 0, "%s /fn/%s/%s%s HTTP/1.1\r\nHost: %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	    "Hk-Run-Id: %s\r\nConnection: close\r\n\r\n", r->row.method,
	    r->row.app, r->row.service, r->row.path, addr, len, r->row.id);
	if (n < 0 || (r->out = malloc((size_t)n + len + 1)) == NULL)
		return -1;
	snprintf(r->out, (size_t)n + 1, "%s /fn/%s/%s%s HTTP/1.1\r\n"
	    "Host: %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nHk-Run-Id: %s\r\nConnection: close\r\n"
	    "\r\n", r->row.method, r->row.app, r->row.service, r->row.path,
	    addr, len, r->row.id);
	memcpy(r->out + n, event, len);
	r->outlen = (size_t)n + len;
	return 0;
}

/*
 * A run of app/service, Pending, not yet recorded nor tracked: the caller
 * records it (run_new(), or a claim of the store's for a declared run).
 */
struct run *
run_make(struct jobs *jx, const char *app, const char *service,
    const char *trigger, const struct run_req *rq, char *err, size_t errlen)
{
	struct run *r;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	r->jx = jx;
	r->fd = -1;
	strlcpy(r->row.app, app, sizeof(r->row.app));
	strlcpy(r->row.service, service, sizeof(r->row.service));
	strlcpy(r->row.trigger, trigger, sizeof(r->row.trigger));
	strlcpy(r->row.method, rq->method, sizeof(r->row.method));
	strlcpy(r->row.path, rq->path, sizeof(r->row.path));
	strlcpy(r->row.phase, "Pending", sizeof(r->row.phase));
	r->row.event_bytes = (int64_t)rq->event_len;
	r->row.created_at = store_now_ms();
	r->body_max = (size_t)jx->cfg.runs_body_bytes;
	r->deadline_ms = rq->timeout_s > 0 ? rq->timeout_s * 1000LL :
	    JOBS_RUN_MS;
	loop_timer_init(&r->timer, run_timeout, r);
	if (run_id(r->row.id, sizeof(r->row.id)) == -1 ||
	    run_head(r, jx->cfg.serverless_address, rq->event,
	    rq->event_len) == -1) {
		snprintf(err, errlen, "run: %s", strerror(errno));
		run_free(r);
		return NULL;
	}
	return r;
}

/* Recorded (by the caller) and now hk-jobs's until its end. */
void
run_track(struct run *r)
{
	TAILQ_INSERT_TAIL(&r->jx->runs, r, entry);
	log_info("run=%s service=%s app=%s trigger=%s: pending", r->row.id,
	    r->row.service, r->row.app, r->row.trigger);
}

/* hk invoke's run: of an existing serverless service, recorded, tracked. */
struct run *
run_new(struct jobs *jx, const char *app, const char *service,
    const struct run_req *rq, char *err, size_t errlen, int *input)
{
	struct store_service svc;
	struct run *r;
	int found;

	*input = 0;
	if ((found = store_service_get(jx->store, app, service, &svc)) ==
	    -1) {
		snprintf(err, errlen, "store: %s", store_error(jx->store));
		return NULL;
	}
	if (found == 1 || !svc.serverless) {
		if (found == 0)
			store_service_clear(&svc);
		snprintf(err, errlen, "%s/%s: no such serverless service",
		    app, service);
		*input = 1;
		return NULL;
	}
	store_service_clear(&svc);
	if ((r = run_make(jx, app, service, "manual", rq, err, errlen)) ==
	    NULL)
		return NULL;
	if (store_run_put(jx->store, &r->row) == -1) {
		snprintf(err, errlen, "store: %s", store_error(jx->store));
		run_free(r);
		return NULL;
	}
	run_track(r);
	return r;
}

/*
 * A run that is not sent (run_id 0, a stopped service's firing, a
 * schedule whose last run still goes): its row, already ended.
 */
void
run_skip(struct run *r, const char *reason)
{
	r->phase = RUN_SKIPPED;
	r->jx->m_ended[RUN_SKIPPED]++;
	strlcpy(r->row.phase, "Skipped", sizeof(r->row.phase));
	strlcpy(r->row.reason, reason, sizeof(r->row.reason));
	r->row.finished_at = r->row.created_at;
}

/*
 * Running, unless the service is stopped: a stopped service is never
 * woken by a run, which fails instead.
 */
void
run_start(struct run *r)
{
	struct store_service svc;
	char err[256];
	int found;

	found = store_service_get(r->jx->store, r->row.app, r->row.service,
	    &svc);
	if (found != 0) {
		run_end(r, RUN_FAILED, found == 1 ? "service removed" :
		    "store unavailable");
		return;
	}
	r->row.revision = svc.revision;
	if (svc.desired == STORE_DESIRED_STOPPED) {
		store_service_clear(&svc);
		run_end(r, RUN_FAILED, "service stopped");
		return;
	}
	store_service_clear(&svc);
	r->phase = RUN_RUNNING;
	strlcpy(r->row.phase, "Running", sizeof(r->row.phase));
	r->row.started_at = store_now_ms();
	r->start_us = loop_clock_us();
	run_save(r);
	if (req_start(r, err, sizeof(err)) == -1) {
		run_end(r, RUN_FAILED, err);
		return;
	}
	loop_timer_at(r->jx->loop, &r->timer,
	    loop_now_ms(r->jx->loop) + r->deadline_ms);
}

static void
run_timeout(struct loop *l, void *arg)
{
	struct run *r = arg;

	(void)l;
	run_end(r, RUN_FAILED, r->deadline_ms == JOBS_RUN_MS ?
	    "no response from the gateway in time" : "timeout_seconds "
	    "passed without a response");
}

static void
run_save(struct run *r)
{
	if (record_put(r->jx, &r->row) == -1)
		log_warnx("run=%s: unable to record %s: %s: kept, to be "
		    "written once the store answers", r->row.id, r->row.phase,
		    store_error(r->jx->store));
}

/* The end: recorded, told, freed.  Never run again. */
void
run_end(struct run *r, enum run_phase phase, const char *reason)
{
	struct jobs *jx = r->jx;

	req_close(r);
	loop_timer_cancel(jx->loop, &r->timer);
	r->phase = phase;
	jx->m_ended[phase]++;
	strlcpy(r->row.phase, run_phase_name(phase), sizeof(r->row.phase));
	strlcpy(r->row.reason, reason == NULL ? "" : reason,
	    sizeof(r->row.reason));
	r->row.finished_at = store_now_ms();
	if (r->start_us != 0)
		r->row.duration_us = loop_clock_us() - r->start_us;
	run_save(r);
	log_info("run=%s service=%s app=%s: %s%s%s", r->row.id,
	    r->row.service, r->row.app, r->row.phase,
	    reason == NULL ? "" : ": ", reason == NULL ? "" : reason);
	if (r->waiter != NULL)
		ctl_notify(r->waiter, r);
	TAILQ_REMOVE(&jx->runs, r, entry);
	run_free(r);
	/* Rows came: retention soon, not a timer ticking while idle. */
	if (!loop_timer_armed(&jx->prune_timer) || jx->prune_timer.deadline >
	    loop_now_ms(jx->loop) + JOBS_PRUNE_MS)
		loop_timer_at(jx->loop, &jx->prune_timer,
		    loop_now_ms(jx->loop) + JOBS_PRUNE_MS);
}

void
run_free(struct run *r)
{
	if (r->waiter != NULL)
		r->waiter->waiting = NULL;
	store_run_clear(&r->row);
	free(r->out);
	free(r);
}

/*
 * At start: whatever the last hk-jobs left unfinished failed with it.  A
 * Running run may have reached the service: sending it again could run
 * it twice, so it is recorded Failed, never resumed.
 */
void
run_recover(struct jobs *jx)
{
	int64_t n1 = 0, n2 = 0;

	if (store_run_abandon(jx->store, "Running",
	    "hk-jobs exited during the run", &n1) == -1 ||
	    store_run_abandon(jx->store, "Pending",
	    "hk-jobs exited before the run started", &n2) == -1)
		fatalx(EX_UNAVAILABLE, "unable to record unfinished "
		    "runs: %s", store_error(jx->store));
	if (n1 + n2 > 0)
		log_warnx("%jd unfinished runs of the last start failed",
		    (intmax_t)(n1 + n2));
}

void
run_prune(struct loop *l, void *arg)
{
	struct jobs *jx = arg;
	int64_t n = 0;

	/* Age alone makes rows go: once a day when nothing runs. */
	loop_timer_at(l, &jx->prune_timer, loop_now_ms(l) + JOBS_PRUNE_IDLE_MS);
	if (store_run_prune(jx->store, store_now_ms() -
	    jx->cfg.runs_max_age_days * 86400000LL, jx->cfg.runs_max_rows,
	    &n) == -1)
		log_warnx("runs retention: %s", store_error(jx->store));
	else if (n > 0)
		log_debug("runs retention: %jd runs deleted", (intmax_t)n);
}
