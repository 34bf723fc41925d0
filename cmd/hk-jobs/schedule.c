/*
 * schedule.c - [services.X.schedules.NAME] (hk.toml(5)): cron firings,
 * each a run sent through the gateway.
 *
 * Every enabled schedule knows its next firing on the schedules' clock
 * (the wall clock; faster for tests, config_sched_now_ms()).  One timerfd
 * on CLOCK_REALTIME is set to the earliest: nothing wakes hk-jobs between
 * firings, and a step of the clock (TFD_TIMER_CANCEL_ON_SET) makes it plan
 * again at once instead of firing an hour off.
 *
 * A firing is claimed in the store (last_fire) together with its run's
 * row, so that it is taken once in the installation.  It is Skipped
 * without waking anything when the service is stopped, or when the
 * previous run of the schedule still goes and concurrency is "forbid".
 * At load, a firing due less than JOBS_LATE_MS ago is only late and runs;
 * older ones were missed while hk-jobs was down: with catch_up the last
 * of them runs once, without it none does.
 */
#include <sys/timerfd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "jobs.h"
#include "log.h"
#include "store.h"

#define CATCH_UP_STEPS	1000000	/* firings walked to find the last missed */

static int	 sched_decode(struct sched *);
static int64_t	 next_after(const struct sched *, int64_t);
static void	 sched_plan(struct jobs *, struct sched *, int64_t);
static void	 sched_arm(struct jobs *);
static void	 sched_due(struct loop *, int, int, void *);
static void	 sched_fire(struct jobs *, struct sched *, int64_t);
static void	 sched_claimed(const struct sched *, int64_t,
		    const struct run *);
static int	 sched_running(const struct jobs *, const struct sched *,
		    const char *);
static void	 sched_clear(struct sched *, size_t);

int
sched_init(struct jobs *jx, char *err, size_t errlen)
{
	jx->sched_fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK |
	    TFD_CLOEXEC);
	if (jx->sched_fd == -1 || loop_add_fd(jx->loop, jx->sched_fd,
	    LOOP_READ, sched_due, jx) == -1) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
sched_close(struct jobs *jx)
{
	sched_clear(jx->scheds, jx->nscheds);
	jx->scheds = NULL;
	jx->nscheds = 0;
	loop_close_fd(jx->loop, &jx->sched_fd);
}

static void
sched_clear(struct sched *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].event);
		free(v[i].row.spec_json);
	}
	free(v);
}

/* The stored spec_json (app_runs.c); -1 if it is unreadable. */
static int
sched_decode(struct sched *s)
{
	const char *cron, *tz, *conc, *method, *path, *event;
	json_int_t timeout = 0;
	char why[256];
	json_t *root;
	int enabled, catch_up, r = -1;

	if ((root = json_loads(s->row.spec_json, 0, NULL)) == NULL)
		return -1;
	if (json_unpack(root, "{s:s, s:s, s:s, s:b, s:b, s:s, s:s, s:s, "
	    "s?I}", "cron", &cron, "timezone", &tz, "concurrency", &conc,
	    "enabled", &enabled, "catch_up", &catch_up, "method", &method,
	    "path", &path, "event", &event, "timeout_seconds", &timeout) ==
	    -1 || cron_parse(&s->cron, cron, why, sizeof(why)) == -1 ||
	    (s->event = strdup(event)) == NULL)
		goto out;
	strlcpy(s->tz, tz, sizeof(s->tz));
	strlcpy(s->method, method, sizeof(s->method));
	strlcpy(s->path, path, sizeof(s->path));
	s->timeout_s = timeout;
	s->enabled = enabled;
	s->catch_up = catch_up;
	s->forbid = strcmp(conc, "allow") != 0;
	r = 0;
out:
	json_decref(root);
	return r;
}

/* The first firing after ms (the schedules' clock), or -1: never. */
static int64_t
next_after(const struct sched *s, int64_t ms)
{
	int64_t t;

	t = cron_next(&s->cron, s->tz, ms / 1000);
	return t == -1 ? -1 : t * 1000;
}

/*
 * When s fires next, from its last claimed firing: a firing due by at
 * most JOBS_LATE_MS is late and fires now; older ones were missed.
 */
static void
sched_plan(struct jobs *jx, struct sched *s, int64_t now)
{
	int64_t due, last, t;
	long steps;

	(void)jx;
	s->next = -1;
	if (!s->enabled || (due = next_after(s, s->row.last_fire)) == -1)
		return;
	if (due > now - JOBS_LATE_MS) {
		s->next = due;
		return;
	}
	if (!s->catch_up) {
		log_info("schedule %s/%s/%s: firings missed since %jd not run "
		    "(catch_up = false)", s->row.app, s->row.service,
		    s->row.name, (intmax_t)(due / 1000));
		s->next = next_after(s, now);
		return;
	}
	/* The last missed firing: the same on every host, claimed once. */
	for (last = due, steps = 0; steps < CATCH_UP_STEPS; steps++) {
		if ((t = next_after(s, last)) == -1 || t > now)
			break;
		last = t;
	}
	log_info("schedule %s/%s/%s: catching up the firing of %jd",
	    s->row.app, s->row.service, s->row.name, (intmax_t)(last / 1000));
	s->next = last;
}

/* At start, and whenever hk apply may have changed the schedules. */
int
sched_load(struct jobs *jx)
{
	struct store_schedule *rows;
	struct sched *v;
	int64_t now;
	size_t n, i, k;

	if (store_schedule_list(jx->store, NULL, &rows, &n) == -1) {
		log_warnx("schedules: unable to list: %s",
		    store_error(jx->store));
		return -1;
	}
	if (n > 0 && (v = calloc(n, sizeof(*v))) == NULL) {
		log_warn("schedules");
		store_schedule_free(rows, n);
		return -1;
	}
	if (n == 0)
		v = NULL;
	now = config_sched_now_ms(&jx->cfg);
	for (i = k = 0; i < n; i++) {
		v[k].row = rows[i];
		rows[i].spec_json = NULL;
		if (sched_decode(&v[k]) == -1) {
			log_warnx("schedule %s/%s/%s: its stored spec is "
			    "unreadable", v[k].row.app, v[k].row.service,
			    v[k].row.name);
			free(v[k].row.spec_json);
			free(v[k].event);
			memset(&v[k], 0, sizeof(v[k]));
			continue;
		}
		sched_plan(jx, &v[k], now);
		k++;
	}
	store_schedule_free(rows, n);
	sched_clear(jx->scheds, jx->nscheds);
	jx->scheds = v;
	jx->nscheds = k;
	sched_arm(jx);
	return 0;
}

/* The timerfd at the earliest next firing, or disarmed if none. */
static void
sched_arm(struct jobs *jx)
{
	struct itimerspec its;
	int64_t next = -1, real;
	size_t i;

	for (i = 0; i < jx->nscheds; i++)
		if (jx->scheds[i].next != -1 &&
		    (next == -1 || jx->scheds[i].next < next))
			next = jx->scheds[i].next;
	memset(&its, 0, sizeof(its));
	if (next != -1) {
		/* Back to the wall clock; at least 1 ns: 0 disarms. */
		real = next * jx->cfg.time_unit_ms / 1000;
		its.it_value.tv_sec = real / 1000;
		its.it_value.tv_nsec = (real % 1000) * 1000000 + 1;
	}
	if (timerfd_settime(jx->sched_fd, TFD_TIMER_ABSTIME |
	    TFD_TIMER_CANCEL_ON_SET, &its, NULL) == -1)
		log_warn("schedules: timerfd");
}

static void
sched_due(struct loop *l, int fd, int mask, void *arg)
{
	struct jobs *jx = arg;
	uint64_t ticks;
	int64_t now;
	size_t i;

	(void)l;
	(void)mask;
	now = config_sched_now_ms(&jx->cfg);
	if (read(fd, &ticks, sizeof(ticks)) == -1 && errno == ECANCELED) {
		log_info("schedules: the clock was set: planning again");
		for (i = 0; i < jx->nscheds; i++)
			sched_plan(jx, &jx->scheds[i], now);
	}
	for (i = 0; i < jx->nscheds && !jx->stopping; i++)
		if (jx->scheds[i].next != -1 && jx->scheds[i].next <= now)
			sched_fire(jx, &jx->scheds[i], jx->scheds[i].next);
	sched_arm(jx);
}

/* Whether a run of this schedule of ours is still going. */
static int
sched_running(const struct jobs *jx, const struct sched *s,
    const char *trigger)
{
	const struct run *r;

	TAILQ_FOREACH(r, &jx->runs, entry)
		if (strcmp(r->row.app, s->row.app) == 0 &&
		    strcmp(r->row.service, s->row.service) == 0 &&
		    strcmp(r->row.trigger, trigger) == 0)
			return 1;
	return 0;
}

/*
 * Which firing a run is, in the log: the store takes each firing once in
 * the installation, and the log of every host that ran hk-jobs shows it.
 */
static void
sched_claimed(const struct sched *s, int64_t fire, const struct run *r)
{
	char when[32];
	struct tm tm;
	time_t t = (time_t)(fire / 1000);

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		(void)snprintf(when, sizeof(when), "%jd ms", (intmax_t)fire);
	log_info("run=%s service=%s app=%s trigger=%s%s: the firing of %s",
	    r->row.id, r->row.service, r->row.app, JOBS_TRIGGER_SCHEDULE,
	    s->row.name, when);
}

static void
sched_fire(struct jobs *jx, struct sched *s, int64_t fire)
{
	char trigger[STORE_TRIGGER_MAX + 1], err[256];
	struct store_service svc;
	struct run_req rq;
	struct run *r;
	int found;

	s->next = next_after(s, fire);
	if (s->next != -1 && s->next <= config_sched_now_ms(&jx->cfg) -
	    JOBS_LATE_MS)
		s->next = next_after(s, config_sched_now_ms(&jx->cfg));
	snprintf(trigger, sizeof(trigger), "%s%s", JOBS_TRIGGER_SCHEDULE,
	    s->row.name);
	rq.method = s->method;
	rq.path = s->path;
	rq.event = s->event;
	rq.event_len = strlen(s->event);
	rq.timeout_s = s->timeout_s;
	if ((r = run_make(jx, s->row.app, s->row.service, trigger, &rq, err,
	    sizeof(err))) == NULL) {
		log_warnx("schedule %s/%s/%s: %s", s->row.app, s->row.service,
		    s->row.name, err);
		return;
	}
	found = store_service_get(jx->store, s->row.app, s->row.service,
	    &svc);
	if (found == 1)
		run_skip(r, "service removed");
	else if (found == 0 && svc.desired == STORE_DESIRED_STOPPED)
		run_skip(r, "service stopped");
	else if (s->forbid && sched_running(jx, s, trigger))
		run_skip(r, "the previous run of this schedule is still "
		    "going (concurrency = \"forbid\")");
	if (found == 0)
		store_service_clear(&svc);
	switch (store_schedule_claim(jx->store, s->row.app, s->row.service,
	    s->row.name, fire, &r->row)) {
	case -1:
		log_warnx("schedule %s/%s/%s: unable to claim its firing: %s",
		    s->row.app, s->row.service, s->row.name,
		    store_error(jx->store));
		/* FALLTHROUGH */
	case 1:		/* another hk-jobs took this firing */
		run_free(r);
		return;
	}
	s->row.last_fire = fire;
	sched_claimed(s, fire, r);
	if (r->phase == RUN_SKIPPED) {
		log_info("run=%s service=%s app=%s trigger=%s: Skipped: %s",
		    r->row.id, r->row.service, r->row.app, trigger,
		    r->row.reason);
		run_free(r);
		return;
	}
	run_track(r);
	run_start(r);
}
