/*
 * service.c - one timer per awake service that may sleep (serverless,
 * min_replicas = 0), due idle_seconds after the period started: the ready
 * of its instance, or the end of its last request as the gateway says.
 *
 *	wait  -> check	the timer fired, and the service names an
 *			idle_check: the instance is asked (check.c)
 *	check -> fence	idle (or nothing answers), or busy for longer
 *			than idle_check_max_seconds
 *	check -> wait	busy: re-armed IDLE_CHECK_EVERY_S later, the
 *			period's start kept
 *	wait  -> fence	the timer fired, no idle_check: the gateway is
 *			asked to fence
 *	fence -> sleep	{"ok":true}: hk-scale is asked to sleep it
 *	fence -> wait	refused: re-armed for idle_since + idle_seconds, or
 *			a full period while requests are active or the
 *			gateway cannot be reached
 *	sleep -> wait	answered; its down (or a new ready) comes on the
 *			subscription
 *
 * Nothing sleeps without the gateway's {"ok":true}.  Policies come from
 * the store, at start, on reload and when an unknown service is ready.
 *
 * The check comes before the fence, never inside it: while the service
 * is busy the gateway forwards its requests as ever (nothing is parked
 * for the length of a background job), and the fence, asked once the
 * instance says it is idle, still decides with the gateway's exact count
 * of requests: one that came while the service was busy, or while it was
 * asked, makes it refuse, and the period starts again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "evsink.h"
#include "idle.h"
#include "log.h"
#include "spec.h"

static int	sleepy(const struct isvc *);
static void	arm(struct isvc *);
static struct isvc *isvc_new(struct idle *, const char *);
static void	apply_policy(struct isvc *, const struct svc *);
static void	timer_fire(struct loop *, void *);
static void	forget(struct isvc *);
static void	fence(struct isvc *);
static void	busy(struct isvc *, enum check_result, const char *);
static void	busy_end(struct isvc *);
static void	fence_done(struct call *, json_t *, const char *);
static void	refused(struct isvc *, json_t *, int64_t);
static void	sleep_now(struct isvc *);
static int	owed_sleep(struct isvc *);
static void	sleep_done(struct call *, json_t *, const char *);
static void	stop_check(struct idle *);
static void	stop_fire(struct loop *, void *);
static int	policy_retry(void *);

static const char *const step_names[] = { "wait", "check", "fence",
	"sleep" };

int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
isvc_step_name(const struct isvc *s)
{
	return step_names[s->step];
}

int64_t
isvc_period(const struct isvc *s)
{
	return (int64_t)s->idle_seconds * s->ix->cfg.time_unit_ms;
}

/* Unix ms of the next deadline, -1 when no timer is armed. */
int64_t
isvc_deadline_wall(const struct isvc *s)
{
	if (!loop_timer_armed(&s->timer))
		return -1;
	return wall_ms() + (s->timer.deadline - loop_now_ms(s->ix->loop));
}

static int
sleepy(const struct isvc *s)
{
	return !s->removed && s->serverless && s->min_replicas == 0 &&
	    s->idle_seconds > 0;
}

/* The one timer: at base + period while the service may sleep. */
static void
arm(struct isvc *s)
{
	struct loop *l = s->ix->loop;

	if (!s->awake || !sleepy(s) || s->step != STEP_WAIT ||
	    s->ix->stopping) {
		loop_timer_cancel(l, &s->timer);
		return;
	}
	if (loop_timer_at(l, &s->timer, s->recheck_at != 0 ? s->recheck_at :
	    s->base + isvc_period(s)) == -1)
		fatal(EX_OSERR, "unable to arm a timer");
}

struct isvc *
isvc_find(struct idle *ix, const char *id)
{
	struct isvc *s;

	TAILQ_FOREACH(s, &ix->services, entry)
		if (!s->removed && strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static struct isvc *
isvc_new(struct idle *ix, const char *id)
{
	struct isvc *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->ix = ix;
	strlcpy(s->id, id, sizeof(s->id));
	loop_timer_init(&s->timer, timer_fire, s);
	call_init(&s->call, ix, s);
	check_init(s);
	TAILQ_INSERT_TAIL(&ix->services, s, entry);
	return s;
}

void
isvc_free(struct isvc *s)
{
	loop_timer_cancel(s->ix->loop, &s->timer);
	call_cancel(&s->call);
	check_cancel(s);
	TAILQ_REMOVE(&s->ix->services, s, entry);
	free(s->check_path);
	free(s);
}

/* A changed idle_seconds moves the deadline; base stays. */
static void
apply_policy(struct isvc *s, const struct svc *def)
{
	s->serverless = def->spec.serverless;
	s->min_replicas = def->spec.policy.min_replicas;
	s->idle_seconds = def->spec.policy.idle_seconds;
	s->check_max_seconds = def->spec.policy.idle_check_max_seconds;
	free(s->check_path);
	s->check_path = NULL;
	if (def->spec.idle_check_path != NULL &&
	    (s->check_path = strdup(def->spec.idle_check_path)) == NULL)
		log_warn("service=%s: idle_check: slept without it", s->id);
	if (s->step == STEP_WAIT)
		arm(s);
}

int
policy_reload(struct idle *ix)
{
	struct isvc *s, *tmp;
	struct svc *all;
	char err[STORE_ERR_LEN + SPEC_ERR_LEN];
	size_t n, i;
	int partial;

	if (spec_load_all(ix->store, &all, &n, err, sizeof(err)) == -1) {
		log_warnx("unable to read services: %s: tried again until the "
		    "store answers", err);
		policy_reload_later(ix);
		return -1;
	}
	if ((partial = err[0] != '\0'))
		log_warnx("service=%s: skipped, nothing removed", err);
	TAILQ_FOREACH(s, &ix->services, entry)
		s->seen = 0;
	for (i = 0; i < n; i++) {
		if ((s = isvc_find(ix, all[i].id)) == NULL &&
		    (s = isvc_new(ix, all[i].id)) == NULL) {
			log_warn("service=%s", all[i].id);
			continue;
		}
		apply_policy(s, &all[i]);
		s->seen = 1;
	}
	spec_free_all(all, n);
	TAILQ_FOREACH_SAFE(s, &ix->services, entry, tmp) {
		if (s->seen || s->removed || partial)
			continue;
		log_debug("service=%s: removed", s->id);
		s->removed = 1;
		if (call_busy(&s->call))
			loop_timer_cancel(ix->loop, &s->timer);
		else
			isvc_free(s);	/* and a check under way */
	}
	return 0;
}

/*
 * A reload the store refused (it was away: a PostgreSQL restart) is made
 * again until it succeeds (lib/retry.h); the policies in use go on
 * meanwhile.
 */
static int
policy_retry(void *arg)
{
	return policy_reload(arg);
}

void
policy_reload_later(struct idle *ix)
{
	if (ix->policy_retry.fn == NULL)
		retry_init(&ix->policy_retry, ix->loop, policy_retry, ix,
		    "policies");
	retry_later(&ix->policy_retry);
}

/*
 * A ready (from the snapshot or the stream): the period starts now, and
 * endpoint is where idle_check asks.
 */
void
isvc_ready(struct idle *ix, const char *id, const char *endpoint)
{
	struct isvc *s;

	if ((s = isvc_find(ix, id)) == NULL) {
		policy_reload(ix);
		if ((s = isvc_find(ix, id)) == NULL) {
			log_debug("service=%s: ready, not in the store", id);
			return;
		}
	}
	strlcpy(s->endpoint, endpoint != NULL ? endpoint : "",
	    sizeof(s->endpoint));
	if (!s->awake) {
		s->awake = 1;
		s->base = loop_now_ms(ix->loop);
		busy_end(s);
		if (owed_sleep(s))
			return;
		if (sleepy(s))
			log_debug("service=%s: awake, idle after %d s", s->id,
			    s->idle_seconds);
	}
	arm(s);
}

/*
 * The gateway's status, read after the subscription's snapshot, may come
 * before a service's ready when the snapshot arrives in two reads: a
 * fence it said it granted is owed to the ready that follows, within the
 * status call's own bound (a later ready is a new wake).  1 if s went to
 * sleep for it.
 */
static int
owed_sleep(struct isvc *s)
{
	int64_t at = s->gw_fenced_at;

	s->gw_fenced_at = 0;
	if (at == 0 || loop_now_ms(s->ix->loop) - at > IDLE_STATUS_MS ||
	    !sleepy(s) || s->step != STEP_WAIT)
		return 0;
	log_info("service=%s: fenced by the gateway: sleeping", s->id);
	sleep_now(s);
	return 1;
}

void
isvc_down(struct idle *ix, const char *id)
{
	struct isvc *s;

	if ((s = isvc_find(ix, id)) != NULL)
		forget(s);
}

/* Not awake: no timer, no check, no busy wait. */
static void
forget(struct isvc *s)
{
	struct idle *ix = s->ix;

	s->awake = 0;
	s->gw_fenced_at = 0;
	loop_timer_cancel(ix->loop, &s->timer);
	if (s->step == STEP_CHECK) {
		check_cancel(s);
		s->step = STEP_WAIT;
	}
	busy_end(s);
}

/* hk-scale is gone or subscribed again: what was awake is forgotten. */
void
isvc_forget_all(struct idle *ix)
{
	struct isvc *s;

	TAILQ_FOREACH(s, &ix->services, entry)
		forget(s);
}

/*
 * After a (re)subscription, the gateway's status for one service: a fence
 * it granted stands (state "draining"), so the sleep is owed now, or at
 * its ready if that has not come yet; otherwise the period counts from
 * its idle_since.
 */
void
isvc_sync(struct isvc *s, const char *state, json_t *st)
{
	json_t *since = json_object_get(st, "idle_since");
	json_t *active = json_object_get(st, "active");
	int64_t now = loop_now_ms(s->ix->loop);

	s->gw_fenced_at = 0;
	if (!s->awake) {	/* its ready may follow: owed_sleep() */
		if (strcmp(state, "draining") == 0)
			s->gw_fenced_at = now;
		return;
	}
	if (!sleepy(s) || s->step != STEP_WAIT)
		return;
	if (strcmp(state, "draining") == 0) {
		log_info("service=%s: fenced by the gateway: sleeping", s->id);
		loop_timer_cancel(s->ix->loop, &s->timer);
		sleep_now(s);
		return;
	}
	if (json_is_integer(since) && !(json_is_integer(active) &&
	    json_integer_value(active) > 0))
		s->base = now - (wall_ms() - json_integer_value(since));
	arm(s);
}

/* Whether the gateway answers; a change is logged once. */
void
gw_seen(struct idle *ix, const char *why)
{
	if (why != NULL && !ix->gw_down) {
		log_warnx("activate.sock: the gateway is unavailable, nothing "
		    "sleeps: %s", why);
		ix->gw_down = 1;
	} else if (why == NULL && ix->gw_down) {
		log_info("activate.sock: the gateway answers again");
		ix->gw_down = 0;
	}
}

static void
timer_fire(struct loop *l, void *arg)
{
	struct isvc *s = arg;

	(void)l;
	if (!s->awake || !sleepy(s) || s->step != STEP_WAIT)
		return;
	s->recheck_at = 0;
	if (s->check_path != NULL && s->endpoint[0] != '\0') {
		log_debug("service=%s: idle period over: idle check %s",
		    s->id, s->check_path);
		s->step = STEP_CHECK;
		check_start(s);
		return;
	}
	log_debug("service=%s: idle period over: fence", s->id);
	fence(s);
}

/*
 * The end of a check: idle (or nothing there) goes on to the fence, busy
 * waits, up to idle_check_max_seconds from the first busy answer.
 */
void
isvc_checked(struct isvc *s, enum check_result r, const char *why)
{
	s->step = STEP_WAIT;
	if (s->removed) {
		isvc_free(s);
		return;
	}
	s->ix->m_checks[r]++;
	if (!s->awake || !sleepy(s)) {	/* a reload took the sleep away */
		arm(s);
		return;
	}
	if (r == CHECK_BUSY || r == CHECK_TIMEOUT) {
		busy(s, r, why);
		return;
	}
	if (r == CHECK_UNREACHABLE)
		log_info("service=%s: idle check %s: no answer (%s): counted "
		    "idle", s->id, s->check_path, why);
	else if (s->busy_since != 0)
		log_info("service=%s: idle check %s: idle after %lld s busy",
		    s->id, s->check_path, (long long)((loop_now_ms(s->ix->loop) -
		    s->busy_since) / s->ix->cfg.time_unit_ms));
	else
		log_debug("service=%s: idle check %s: idle", s->id,
		    s->check_path);
	fence(s);
}

/*
 * Busy: HTTPIdleBusy at the first answer of a wait and at most every
 * IDLE_CHECK_EVENT_S after (every answer is counted, and logged with -v);
 * HTTPIdleBusyExpired and the fence once the maximum is reached.
 */
static void
busy(struct isvc *s, enum check_result r, const char *why)
{
	int64_t now = loop_now_ms(s->ix->loop), unit = s->ix->cfg.time_unit_ms;
	json_t *status;
	char what[64];

	if (s->busy_since == 0) {
		s->busy_since = now;
		s->busy_answers = 0;
		s->busy_event = 0;
	}
	s->busy_answers++;
	status = r == CHECK_BUSY ? json_integer(s->check.get.status) : json_null();
	if (r == CHECK_BUSY)
		snprintf(what, sizeof(what), "status %d", s->check.get.status);
	else
		snprintf(what, sizeof(what), "%s", why);
	if (now - s->busy_since >= (int64_t)s->check_max_seconds * unit) {
		log_warnx("service=%s: idle check %s: still busy (%s) after "
		    "%d s, idle_check_max_seconds: sleeping anyway", s->id,
		    s->check_path, what, s->check_max_seconds);
		evsink_event(s->ix->ev, "HTTPIdleBusyExpired", s->id,
		    json_pack("{s:s, s:o, s:I, s:i}", "check", s->check_path,
		    "status", status, "busy_ms", (json_int_t)(now -
		    s->busy_since), "answers", (int)s->busy_answers));
		fence(s);
		return;
	}
	if (s->busy_event == 0 ||
	    now - s->busy_event >= IDLE_CHECK_EVENT_S * unit) {
		log_info("service=%s: idle check %s: busy (%s): the sleep "
		    "waits, at most %d s", s->id, s->check_path, what,
		    s->check_max_seconds);
		evsink_event(s->ix->ev, "HTTPIdleBusy", s->id,
		    json_pack("{s:s, s:o, s:I, s:i}", "check", s->check_path,
		    "status", status, "busy_ms", (json_int_t)(now -
		    s->busy_since), "answers", (int)s->busy_answers));
		s->busy_event = now;
	} else {
		json_decref(status);
		log_debug("service=%s: idle check %s: busy (%s)", s->id,
		    s->check_path, what);
	}
	s->recheck_at = now + IDLE_CHECK_EVERY_S * unit;
	arm(s);
}

/* A wait for a busy service is over (fenced, refused, down, woken). */
static void
busy_end(struct isvc *s)
{
	s->busy_since = 0;
	s->busy_answers = 0;
	s->busy_event = 0;
	s->recheck_at = 0;
}

static void
fence(struct isvc *s)
{
	json_t *req;

	s->step = STEP_FENCE;
	req = json_pack("{s:s, s:s, s:i, s:I}", "op", "fence", "service",
	    s->id, "idle_seconds", s->idle_seconds, "idle_ms",
	    (json_int_t)isvc_period(s));
	call_start(&s->call, fence_done, s->ix->gw_path, req, IDLE_FENCE_MS);
	json_decref(req);
}

static void
fence_done(struct call *c, json_t *reply, const char *why)
{
	struct isvc *s = c->arg;

	s->step = STEP_WAIT;
	if (s->removed) {
		isvc_free(s);
		return;
	}
	busy_end(s);
	gw_seen(s->ix, reply == NULL ? why : NULL);
	if (reply != NULL && json_is_true(json_object_get(reply, "ok"))) {
		s->ix->m_fences[FENCE_GRANTED]++;
		s->refused = 0;
		log_info("service=%s: idle for %d s: sleeping", s->id,
		    s->idle_seconds);
		sleep_now(s);
	} else {
		s->ix->m_fences[reply != NULL ? FENCE_REFUSED : FENCE_FAILED]++;
		s->base = loop_now_ms(s->ix->loop);
		if (reply != NULL)
			refused(s, reply, s->base);
		arm(s);
	}
	stop_check(s->ix);
}

/* Not fenced: when may it be asked again? */
static void
refused(struct isvc *s, json_t *reply, int64_t now)
{
	const char *err = json_string_value(json_object_get(reply, "error"));
	json_t *active = json_object_get(reply, "active");
	json_t *since = json_object_get(reply, "idle_since");
	int64_t base;

	if (err != NULL || !json_is_integer(active) ||
	    !json_is_integer(since)) {
		if (!s->refused)
			log_warnx("service=%s: the gateway refuses the fence: "
			    "%s", s->id, err != NULL ? err : "bad reply");
		s->refused = 1;
		return;
	}
	s->refused = 0;
	if (json_integer_value(active) > 0) {
		log_debug("service=%s: %lld active requests", s->id,
		    (long long)json_integer_value(active));
		return;
	}
	base = now - (wall_ms() - json_integer_value(since));
	/* A refusal that is already due by our clock: a full period. */
	if (base + isvc_period(s) > now)
		s->base = base;
	log_debug("service=%s: idle since %lld", s->id,
	    (long long)json_integer_value(since));
}

static void
sleep_now(struct isvc *s)
{
	json_t *req;

	s->step = STEP_SLEEP;
	req = json_pack("{s:s, s:s}", "op", "sleep", "service", s->id);
	call_start(&s->call, sleep_done, s->ix->scale_path, req,
	    IDLE_SLEEP_MS);
	json_decref(req);
}

static void
sleep_done(struct call *c, json_t *reply, const char *why)
{
	struct isvc *s = c->arg;
	const char *err;

	s->step = STEP_WAIT;
	if (s->removed) {
		isvc_free(s);
		return;
	}
	if (reply == NULL)
		log_warnx("service=%s: unable to ask hk-scale for the sleep: "
		    "%s", s->id, why);
	else if (!json_is_true(json_object_get(reply, "ok"))) {
		err = json_string_value(json_object_get(reply, "error"));
		log_warnx("service=%s: hk-scale refuses the sleep: %s", s->id,
		    err != NULL ? err : "no reason given");
	} else
		log_debug("service=%s: asleep", s->id);
	/* Its down follows on the subscription; a fresh ready re-arms. */
	s->base = loop_now_ms(s->ix->loop);
	arm(s);
}

/*
 * SIGTERM: no new fence; a fence under way is seen through, and a sleep
 * it grants is sent (hk-scale carries it out without us), so that no
 * service stays fenced at the gateway.  Then the loop ends.
 */
void
isvc_stop_all(struct idle *ix)
{
	struct isvc *s;

	ix->stopping = 1;
	TAILQ_FOREACH(s, &ix->services, entry) {
		loop_timer_cancel(ix->loop, &s->timer);
		if (s->step == STEP_CHECK) {	/* no fence asked yet */
			check_cancel(s);
			s->step = STEP_WAIT;
		}
	}
	loop_timer_init(&ix->stop_timer, stop_fire, ix);
	loop_timer_at(ix->loop, &ix->stop_timer, loop_now_ms(ix->loop) +
	    IDLE_FENCE_MS + 1000);
	stop_check(ix);
}

static void
stop_check(struct idle *ix)
{
	struct isvc *s;

	if (!ix->stopping)
		return;
	TAILQ_FOREACH(s, &ix->services, entry)
		if (s->step == STEP_FENCE)
			return;
	loop_stop(ix->loop);
}

static void
stop_fire(struct loop *l, void *arg)
{
	(void)arg;
	log_warnx("a fence is still unanswered: exiting");
	loop_stop(l);
}
