/*
 * service.c - one state machine per service, so that operations on a
 * service are serialized:
 *
 *	sleeping  -> starting	wake, or an always-on service, or the
 *				readiness gate of a new revision
 *	starting  -> running	the instance passed its readiness probe
 *	starting  -> failed	exited before ready, or missed the deadline
 *	running   -> draining	sleep, manual stop, removal, replacement
 *	running   -> sleeping	the process exited (always-on: restarted)
 *	draining  -> sleeping	the process is gone (a wake meanwhile
 *				starts it again at once)
 *	draining  -> stopped	the same, for a manual stop
 *	failed    -> starting	a wake after retry_after, or the backoff
 *				of an always-on service
 *	running   -> suspended	sleep, with idle_action = "suspend": the
 *				instance is frozen, and keeps its memory
 *	suspended -> running	wake: thawed, ready as it was
 *	suspended -> draining	frozen for suspend_max_seconds, a manual
 *				stop, a new revision: stopped for real
 *	suspended -> sleeping	the frozen process died
 *
 * A new revision of a running service starts behind it ("pending") and
 * takes over once ready; the old instance is then stopped without a down.
 * While a serverless service's current revision has not passed its
 * readiness gate, the newest revision that did serves, and the current
 * one is tried behind it, whatever the state (release.c).
 */
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evsink.h"
#include "log.h"
#include "scale.h"

static void	set_state(struct service *, enum svc_state);
static void	emit(struct service *, const char *, json_t *);
static void	wake_breakdown(const struct service *, const struct inst *,
		    json_t *);
static json_t	*exit_detail(int);
static void	describe_exit(int, char *, size_t);
static void	want_start(struct service *, const char *);
static int	needs_port(const struct service *);
static void	replace(struct service *);
static void	converge_first(struct service *);
static void	start_failed(struct service *, const char *, json_t *);
static void	fail_start(struct service *, int64_t, const char *, json_t *);
static void	gate_start(struct service *, const char *);
static void	pending_deadline(struct loop *, void *);
static void	finish_stop(struct service *, int, int64_t);
static void	running_exited(struct service *, int);
static void	retry_fire(struct loop *, void *);
static void	suspend_expired(struct loop *, void *);
static void	suspended_exited(struct service *, int);
static void	record_fire(struct loop *, void *);

static const char *const state_names[] = {
	"sleeping", "starting", "running", "draining", "stopped", "failed",
	"suspended",
};

const char *
service_state_name(enum svc_state st)
{
	return state_names[st];
}

struct service *
service_find(struct scale *sc, const char *id)
{
	struct service *s;

	TAILQ_FOREACH(s, &sc->services, entry)
		if (!s->removed && strcmp(s->def.id, id) == 0)
			return s;
	return NULL;
}

/* Takes over def's spec (def's is left empty). */
struct service *
service_new(struct scale *sc, struct svc *def)
{
	struct service *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->sc = sc;
	s->def = *def;
	memset(&def->spec, 0, sizeof(def->spec));
	loop_timer_init(&s->deadline, service_deadline, s);
	loop_timer_init(&s->pending_deadline, pending_deadline, s);
	loop_timer_init(&s->retry, retry_fire, s);
	loop_timer_init(&s->suspend_timer, suspend_expired, s);
	loop_timer_init(&s->record_timer, record_fire, s);
	loop_timer_init(&s->replica_timer, replica_fire, s);
	s->state = s->def.desired == STORE_DESIRED_STOPPED ? SVC_STOPPED :
	    SVC_SLEEPING;
	s->gated = gate_passed(sc, &s->def);
	release_load(s);
	TAILQ_INSERT_TAIL(&sc->services, s, entry);
	return s;
}

void
service_free(struct service *s)
{
	struct scale *sc = s->sc;

	queue_remove(s);
	loop_timer_cancel(sc->loop, &s->deadline);
	loop_timer_cancel(sc->loop, &s->pending_deadline);
	loop_timer_cancel(sc->loop, &s->retry);
	loop_timer_cancel(sc->loop, &s->suspend_timer);
	ready_record(s);
	replica_stop_all(s);
	if (s->pending != NULL)
		inst_retire(s->pending);
	if (s->inst != NULL)
		inst_retire(s->inst);
	ctl_sleep_done(s, NULL);
	TAILQ_REMOVE(&sc->services, s, entry);
	spec_clear(&s->def.spec);
	spec_clear(&s->good.spec);
	free(s);
}

/* Ordinary services and min_replicas = 1 are kept running. */
int
service_always_on(const struct service *s)
{
	return !s->def.spec.serverless || s->def.spec.policy.min_replicas > 0;
}

int
service_timeout(const struct service *s)
{
	return s->def.spec.serverless ?
	    s->def.spec.policy.startup_timeout_seconds :
	    s->def.spec.ordinary_start_timeout;
}

/* Seconds until a failed service may start again (rounded up). */
int64_t
service_retry_after(const struct service *s)
{
	int64_t left = s->retry_at - loop_now_ms(s->sc->loop);

	return left <= 0 ? 0 : (left + 999) / 1000;
}

static void
set_state(struct service *s, enum svc_state st)
{
	if (s->state == st)
		return;
	log_info("service=%s: %s -> %s", s->def.id, state_names[s->state],
	    state_names[st]);
	s->state = st;
}

static void
emit(struct service *s, const char *kind, json_t *detail)
{
	evsink_event(s->sc->ev, kind, s->def.id, detail);
}

static json_t *
exit_detail(int status)
{
	if (status != -1 && WIFEXITED(status))
		return json_pack("{s:i, s:n}", "status", WEXITSTATUS(status),
		    "signal");
	if (status != -1 && WIFSIGNALED(status))
		return json_pack("{s:n, s:i}", "status", "signal",
		    WTERMSIG(status));
	return json_pack("{s:n, s:n}", "status", "signal");
}

static void
describe_exit(int status, char *buf, size_t len)
{
	if (status != -1 && WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (status != -1 && WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exited");
}

/*
 * Queues a start unless one is under way, or an earlier run's instance is
 * still being looked at (service_adopted() comes back here).
 */
static void
want_start(struct service *s, const char *why)
{
	if (s->queued && s->gate_next && s->inst == NULL &&
	    !s->restart_good) {
		/* The gate waits: this start serves, then it is tried. */
		s->gate_next = 0;
		if (s->state != SVC_RUNNING)
			set_state(s, SVC_STARTING);
		return;
	}
	if (s->sc->stopping || s->removed || s->queued ||
	    (s->pending != NULL && s->inst != NULL) ||
	    (s->inst != NULL && !s->inst->ready) || s->adopting)
		return;
	loop_timer_cancel(s->sc->loop, &s->retry);
	if (s->state != SVC_RUNNING)
		set_state(s, SVC_STARTING);
	log_debug("service=%s: start of revision %lld: %s", s->def.id,
	    (long long)s->def.revision, why);
	queue_add(s);
}

/*
 * The readiness gate of def, tried behind what serves (release.c): the
 * start goes pending once it has a slot.
 */
static void
gate_start(struct service *s, const char *why)
{
	if (s->sc->stopping || s->removed || s->queued || s->pending != NULL ||
	    s->adopting || (s->inst != NULL && !s->inst->ready))
		return;
	log_debug("service=%s: start of revision %lld: %s", s->def.id,
	    (long long)s->def.revision, why);
	s->gate_next = 1;
	queue_add(s);
}

/* The new revision needs the fixed port the running instance holds. */
static int
needs_port(const struct service *s)
{
	if (backend_can(s->inst->be, BACKEND_OWN_ADDRESS))
		return 0;	/* a pod's port is its own address's */
	return s->def.spec.port != 0 && s->def.spec.port == s->inst->port;
}

/* A running service has a new revision: start it behind the old one. */
static void
replace(struct service *s)
{
	if (s->pending != NULL) {
		inst_retire(s->pending);
		s->pending = NULL;
	}
	if (needs_port(s)) {
		/* The new revision needs the port: stop, then start. */
		s->wake_after_stop = 1;
		service_stop(s, "replaced");
		s->gate_next = 1;	/* once stopped, def starts alone */
		s->restart_good = release_guarded(s);
		return;
	}
	gate_start(s, "new revision");
}

/*
 * Brings the service towards what the store wants: stopped, running, or
 * asleep once its revision has passed the readiness gate; and its other
 * replicas with it (replica.c).
 */
void
service_converge(struct service *s)
{
	if (s->removed || s->sc->stopping || s->adopting)
		return;
	converge_first(s);
	replica_converge(s);
}

/* service_converge() for s->inst, replica 0. */
static void
converge_first(struct service *s)
{
	struct scale *sc = s->sc;

	if (s->def.desired == STORE_DESIRED_STOPPED) {
		if (s->state != SVC_STOPPED)
			service_stop(s, "stopped");
		return;
	}
	switch (s->state) {
	case SVC_DRAINING:
		return;
	case SVC_SUSPENDED:
		/*
		 * Woken, it would run what the store no longer wants; but
		 * the good revision stays frozen, and serves wakes, while
		 * the new one's gate is tried (release.c).
		 */
		if (release_guarded(s) &&
		    s->inst->revision == s->good.revision) {
			if (release_gate_due(s))
				gate_start(s, "readiness gate of a new "
				    "revision");
			return;
		}
		if (s->inst->revision != s->def.revision ||
		    !service_suspends(s))
			service_stop(s, "replaced");
		return;
	case SVC_STOPPED:
		set_state(s, SVC_SLEEPING);
		break;
	case SVC_STARTING:
		if (s->inst != NULL && s->inst->revision != s->def.revision &&
		    !(release_guarded(s) &&
		    s->inst->revision == s->good.revision)) {
			log_info("service=%s: start of revision %lld "
			    "abandoned for %lld", s->def.id,
			    (long long)s->inst->revision,
			    (long long)s->def.revision);
			s->wake_after_stop = 1;
			service_stop(s, "replaced");
		}
		return;
	case SVC_RUNNING:
		if (s->inst->revision != s->def.revision &&
		    (s->pending == NULL ||
		    s->pending->revision != s->def.revision) && !s->queued) {
			/* each try would take what serves down: once only */
			if (s->gate_backoff > 0 && needs_port(s))
				return;
			if (loop_now_ms(sc->loop) < s->gate_retry_at) {
				loop_timer_at(sc->loop, &s->retry,
				    s->gate_retry_at);
				return;
			}
			replace(s);
		}
		return;
	default:
		break;
	}
	if (loop_now_ms(sc->loop) < s->retry_at) {
		loop_timer_at(sc->loop, &s->retry, s->retry_at);
		return;
	}
	if (service_always_on(s))
		want_start(s, "always on");
	else if (release_guarded(s)) {
		if (release_gate_due(s))
			gate_start(s, "readiness gate of a new revision");
	} else if (!s->gated && !s->gate_tried) {
		s->gate_tried = 1;
		want_start(s, "readiness gate of a new revision");
	}
}

static void
retry_fire(struct loop *l, void *arg)
{
	(void)l;
	service_converge(arg);
}

/* A wake from the gateway (the caller refused stopped services). */
void
service_wake(struct service *s, const char *reason, int64_t wake_id)
{
	if (s->wake_reason[0] == '\0') {
		strlcpy(s->wake_reason, reason, sizeof(s->wake_reason));
		s->wake_mono = loop_now_ms(s->sc->loop);
		s->wake_id = wake_id;
	}
	switch (s->state) {
	case SVC_RUNNING:
		s->wake_reason[0] = '\0';
		ctl_ready(s);
		return;
	case SVC_STARTING:
		return;
	case SVC_DRAINING:
		s->wake_after_stop = 1;
		return;
	case SVC_SUSPENDED:
		if (s->inst->freezing)
			s->wake_after_stop = 1;	/* thawed once frozen */
		else
			inst_thaw(s->inst);
		return;
	case SVC_FAILED:
		if (service_retry_after(s) > 0) {
			s->wake_reason[0] = '\0';
			ctl_failed(s);
			return;
		}
		break;
	default:
		break;
	}
	want_start(s, "wake");
}

/* Stops whatever runs or waits to start; down is sent once it is gone. */
void
service_stop(struct service *s, const char *reason)
{
	struct loop *l = s->sc->loop;

	ready_record(s);
	queue_remove(s);
	s->gate_next = 0;
	s->restart_good = 0;
	loop_timer_cancel(l, &s->deadline);
	loop_timer_cancel(l, &s->pending_deadline);
	loop_timer_cancel(l, &s->retry);
	loop_timer_cancel(l, &s->suspend_timer);
	replica_stop_all(s);
	if (s->pending != NULL) {
		inst_retire(s->pending);
		s->pending = NULL;
	}
	s->down_reason = reason;
	if (s->inst == NULL) {
		finish_stop(s, 0, 0);
		return;
	}
	if (s->state == SVC_DRAINING)
		return;
	queue_settle(s->inst);
	set_state(s, SVC_DRAINING);
	row_put(s->inst, "draining");
	inst_stop(s->inst);
}

/* The stop is over: the service sleeps or is stopped (or removed). */
static void
finish_stop(struct service *s, int was_ready, int64_t uptime)
{
	const char *reason = s->down_reason ? s->down_reason : "stopped";

	s->down_reason = NULL;
	set_state(s, s->def.desired == STORE_DESIRED_STOPPED ? SVC_STOPPED :
	    SVC_SLEEPING);
	if (s->failed_row) {
		row_delete(s->sc, &s->def);
		s->failed_row = 0;
	}
	if (s->down_sent)
		s->down_sent = 0;	/* said when it was frozen */
	else if (was_ready || strcmp(reason, "replaced") != 0)
		ctl_down(s, reason);
	if (strcmp(reason, "idle") == 0)
		emit(s, "HTTPIdleSleep", json_pack("{s:I}", "uptime_ms",
		    (json_int_t)uptime));
	ctl_sleep_done(s, NULL);
	if (s->removed) {
		service_free(s);
		return;
	}
	if (s->wake_after_stop && s->def.desired != STORE_DESIRED_STOPPED) {
		s->wake_after_stop = 0;
		want_start(s, "woken while stopping");
		return;
	}
	s->wake_after_stop = 0;
	service_converge(s);
}

/*
 * The node an instance of s runs on: its node_name when its backend
 * places instances there, else this host.
 */
const char *
service_node(const struct service *s, const struct backend *be)
{
	if (be != NULL && backend_can(be, BACKEND_PLACED) &&
	    s->def.spec.node_name != NULL)
		return s->def.spec.node_name;
	return s->sc->node;
}

/*
 * Called by the queue when a start slot is free.  The instance holds the
 * slot and its place (inst, or pending behind a running one) from now;
 * its backend reports the outcome (service_inst_started() or _failed()).
 * When that comes later, the row says starting from now: a restarted
 * hk-scale then knows what may have begun.
 */
void
service_spawn(struct service *s)
{
	const struct backend *be;
	char why[SCALE_REASON_MAX];
	struct inst *in;
	int gate = s->gate_next, behind;

	s->gate_next = 0;
	/* def's gate goes behind what serves, unless it needs its port */
	behind = s->inst != NULL || (gate && release_guarded(s) &&
	    !s->restart_good);
	if ((be = backend_find(s->def.spec.backend)) == NULL) {
		snprintf(why, sizeof(why), "backend \"%s\" is not available "
		    "in this build", config_backend_name(s->def.spec.backend));
		start_failed(s, why, NULL);
		return;
	}
	if ((in = inst_new(s->sc, s->def.id, be)) == NULL) {
		start_failed(s, "out of memory", NULL);
		return;
	}
	in->svc = s;
	in->revision = !gate && !behind && release_guarded(s) ?
	    s->good.revision : s->def.revision;
	in->counted = 1;
	strlcpy(in->node, service_node(s, be), sizeof(in->node));
	s->sc->nstarting++;
	s->m_starts++;
	if (behind) {
		/* its own deadline: the slot's may serve a wake next */
		s->pending = in;
		loop_timer_at(s->sc->loop, &s->pending_deadline,
		    s->deadline.deadline);
		loop_timer_cancel(s->sc->loop, &s->deadline);
	} else {
		s->inst = in;
		if (be->starts_later) {
			in->in_store = 1;
			s->failed_row = 0;
			row_put_soon(in);
		}
	}
	inst_start(in);
}

/* The backend started it: the row says starting, and probes begin. */
void
service_inst_started(struct inst *in)
{
	struct service *s = in->svc;

	if (in->replica != 0) {
		replica_started(in);
		return;
	}
	in->spawned_mono = loop_now_ms(s->sc->loop);
	if (in == s->inst) {
		in->in_store = 1;
		s->failed_row = 0;
		row_put(in, "starting");
	}
	probe_start(in);
}

/* The backend could not start it: nothing runs. */
void
service_inst_failed(struct inst *in, const char *why)
{
	struct service *s = in->svc;
	char reason[SCALE_REASON_MAX];
	int64_t rev = in->revision;

	strlcpy(reason, why, sizeof(reason));	/* it may be in->priv's */
	if (in->replica != 0) {
		replica_failed(in, reason);
		return;
	}
	if (in == s->pending) {
		s->pending = NULL;
		loop_timer_cancel(s->sc->loop, &s->pending_deadline);
	} else if (in == s->inst) {
		s->inst = NULL;
		if (in->in_store)
			row_delete(s->sc, &s->def);
	}
	inst_free(in);
	fail_start(s, rev, reason, NULL);
}

/* The startup deadline, queued or starting: the start has failed. */
void
service_deadline(struct loop *l, void *arg)
{
	struct service *s = arg;
	struct inst *in;
	char why[64];
	int64_t rev;

	loop_timer_cancel(l, &s->deadline);
	snprintf(why, sizeof(why), "not ready within %d s",
	    service_timeout(s));
	if (s->queued) {
		queue_remove(s);
		if (s->gate_next) {
			s->gate_next = 0;
			release_gate_failed(s, why, NULL);
		} else
			start_failed(s, why, NULL);
		return;
	}
	in = s->inst;
	if (in == NULL || in->ready)
		return;
	rev = in->revision;
	s->inst = NULL;
	row_delete(s->sc, &s->def);
	inst_retire(in);
	inst_kill(in);
	fail_start(s, rev, why, NULL);
}

/* The startup deadline of a start behind what serves. */
static void
pending_deadline(struct loop *l, void *arg)
{
	struct service *s = arg;
	struct inst *in = s->pending;
	char why[64];
	int64_t rev;

	loop_timer_cancel(l, &s->pending_deadline);
	if (in == NULL || in->ready)
		return;
	snprintf(why, sizeof(why), "not ready within %d s",
	    service_timeout(s));
	rev = in->revision;
	s->pending = NULL;
	inst_retire(in);
	inst_kill(in);
	fail_start(s, rev, why, NULL);
}

/* A start of revision rev failed: def's gate, or what was to serve. */
static void
fail_start(struct service *s, int64_t rev, const char *why, json_t *detail)
{
	if (release_is_gate(s, rev)) {
		release_gate_failed(s, why, detail);
		return;
	}
	if (rev == s->def.revision)
		release_mark(s, rev, "failed", why);
	start_failed(s, why, detail);
}

static void
start_failed(struct service *s, const char *why, json_t *detail)
{
	struct scale *sc = s->sc;

	loop_timer_cancel(sc->loop, &s->deadline);
	s->m_start_failures++;
	s->fail_backoff = s->fail_backoff == 0 ? SCALE_RETRY_MIN_S :
	    s->fail_backoff * 2;
	if (s->fail_backoff > SCALE_RETRY_MAX_S)
		s->fail_backoff = SCALE_RETRY_MAX_S;
	s->retry_at = loop_now_ms(sc->loop) + s->fail_backoff * 1000;
	strlcpy(s->fail_reason, why, sizeof(s->fail_reason));
	log_warnx("service=%s: unable to start revision %lld: %s "
	    "(retry after %lld s)", s->def.id, (long long)s->def.revision,
	    why, (long long)s->fail_backoff);
	if (detail == NULL)
		detail = json_object();
	json_object_set_new(detail, "reason", json_string(why));
	json_object_set_new(detail, "revision", json_integer(s->def.revision));
	if (s->def.spec.code_hash != NULL)
		json_object_set_new(detail, "code_hash",
		    json_string(s->def.spec.code_hash));
	if (s->wake_reason[0] != '\0' && s->wake_id != 0)
		json_object_set_new(detail, "wake_id",
		    json_integer(s->wake_id));
	emit(s, "StartFailed", detail);
	ctl_failed(s);
	s->wake_reason[0] = '\0';
	if (s->inst != NULL && s->inst->ready)
		return;		/* the previous revision keeps serving */
	set_state(s, SVC_FAILED);
	row_failed(s);
	if (service_always_on(s))
		loop_timer_at(sc->loop, &s->retry, s->retry_at);
}

/*
 * The instance answers.  Subscribers hear it first: parked requests wait
 * for this message, and everything else here (the output relay's fork, the
 * store's commit with its fsync, the event) took tens of milliseconds of a
 * cold start when it came before.  For a woken start it waits further,
 * SCALE_RECORD_MS (ready_record()): from the ready to the first response
 * byte took 3.2 ms at the median without that, 2.2 ms with it (a Python
 * function, 15 starts each).
 */
void
service_inst_ready(struct inst *in)
{
	struct service *s = in->svc;
	struct scale *sc = s->sc;
	struct inst *old = NULL;
	json_t *detail;
	int64_t ms;

	if (in->replica != 0) {
		replica_ready(in);
		return;
	}
	ready_record(s);	/* another's, first */
	queue_settle(in);
	s->restart_good = 0;
	loop_timer_cancel(sc->loop, in == s->pending ? &s->pending_deadline :
	    &s->deadline);
	in->ready = 1;
	in->ready_at = store_now_ms();
	ms = loop_now_ms(sc->loop) - (s->wake_reason[0] != '\0' ?
	    s->wake_mono : in->start_mono);
	stats_ready(s, in);
	if (in == s->pending) {
		old = s->inst;
		s->inst = in;
		s->pending = NULL;
		/* what it replaces may be starting, or frozen */
		if (s->queued && !s->gate_next)
			queue_remove(s);	/* a start it makes moot */
		loop_timer_cancel(sc->loop, &s->deadline);
		loop_timer_cancel(sc->loop, &s->suspend_timer);
		s->down_sent = 0;
	}
	if (in->revision == s->def.revision)
		release_passed(s);
	set_state(s, SVC_RUNNING);
	ctl_ready(s);
	if (in->conn_fd != -1) {	/* the probe's: a gateway has a copy */
		close(in->conn_fd);
		in->conn_fd = -1;
	}
	if (old != NULL) {
		log_info("service=%s: revision %lld replaces %lld", s->def.id,
		    (long long)in->revision, (long long)old->revision);
		inst_retire(old);
	}
	s->fail_backoff = 0;
	s->retry_at = 0;
	log_info("service=%s: ready at %s, revision %lld, after %lld ms",
	    s->def.id, in->endpoint, (long long)in->revision, (long long)ms);
	/*
	 * The row, the relay and the event: ready_record(), later
	 * when a wake waits for this start (requests are parked for it), at
	 * once for any other.
	 */
	s->record = REC_START;
	if (s->wake_reason[0] == '\0') {
		ready_record(s);
		service_converge(s);
		return;
	}
	detail = s->wake_id != 0 ?
	    json_pack("{s:s, s:I, s:I}", "reason", s->wake_reason,
	    "readiness_ms", (json_int_t)ms, "wake_id", (json_int_t)s->wake_id) :
	    json_pack("{s:s, s:I}", "reason", s->wake_reason, "readiness_ms",
	    (json_int_t)ms);
	/* Which code answers: the revision's hash, when it has one. */
	if (detail != NULL && in->code_hash[0] != '\0') {
		json_object_set_new(detail, "revision",
		    json_integer(in->revision));
		json_object_set_new(detail, "code_hash",
		    json_string(in->code_hash));
	}
	wake_breakdown(s, in, detail);
	json_decref(s->record_event);
	s->record_event = detail;
	s->wake_reason[0] = '\0';
	loop_timer_at(sc->loop, &s->record_timer, loop_now_ms(sc->loop) +
	    SCALE_RECORD_MS);
	service_converge(s);
}

/*
 * Where a cold start's time went, each from the wake (hk-scale(8)):
 * spawn_ms until the backend started it, port_ms until a probe first
 * connected (a socket-activated service's port accepts from the start;
 * none for notify or a health check), readiness_ms until ready.
 */
static void
wake_breakdown(const struct service *s, const struct inst *in, json_t *d)
{
	int64_t port = in->port_mono;

	if (d == NULL || in->spawned_mono < s->wake_mono)
		return;
	if (port == 0 && s->def.spec.readiness == READY_SOCKET)
		port = in->spawned_mono;
	json_object_set_new(d, "spawn_ms",
	    json_integer(in->spawned_mono - s->wake_mono));
	if (port != 0)
		json_object_set_new(d, "port_ms",
		    json_integer(port - s->wake_mono));
}

/*
 * The instance is gone; status is a wait status, -1 unknown, and last its
 * last line of output, if its backend kept one.
 */
void
service_inst_exit(struct inst *in, int status, const char *last)
{
	struct service *s = in->svc;
	char how[64], why[SCALE_REASON_MAX];
	int64_t uptime = loop_now_ms(s->sc->loop) - in->start_mono;
	int64_t rev = in->revision;
	int ready = in->ready;

	describe_exit(status, how, sizeof(how));
	if (last != NULL && last[0] != '\0')
		snprintf(why, sizeof(why), "%s: %s", how, last);
	else
		strlcpy(why, how, sizeof(why));
	if (in->replica != 0) {
		replica_exit(in, why);
		return;
	}
	ready_record(s);		/* before the row goes */
	if (in == s->pending) {
		s->pending = NULL;
		loop_timer_cancel(s->sc->loop, &s->pending_deadline);
		inst_free(in);
		fail_start(s, rev, why, exit_detail(status));
		return;
	}
	s->inst = NULL;
	if (in->in_store)
		row_delete(s->sc, &s->def);
	if (s->state == SVC_DRAINING) {
		inst_free(in);
		finish_stop(s, ready, uptime);
		return;
	}
	if (!ready) {
		inst_free(in);
		fail_start(s, rev, why, exit_detail(status));
		return;
	}
	log_warnx("service=%s: %s %s", s->def.id, in->what, why);
	inst_free(in);
	if (s->state == SVC_SUSPENDED) {
		suspended_exited(s, status);
		return;
	}
	running_exited(s, status);
	if (service_always_on(s)) {
		s->restart_backoff = s->restart_backoff == 0 ||
		    uptime >= SCALE_RESTART_RESET_MS ? SCALE_RESTART_MIN_MS :
		    s->restart_backoff * 2;
		if (s->restart_backoff > SCALE_RESTART_MAX_MS)
			s->restart_backoff = SCALE_RESTART_MAX_MS;
		s->retry_at = loop_now_ms(s->sc->loop) + s->restart_backoff;
	}
	service_converge(s);
}

/*
 * An earlier run's instances of s have been looked at: a wake or a start
 * that waited for that goes on.
 */
void
service_adopted(struct service *s)
{
	if (s->adopting == 0 || --s->adopting > 0)
		return;
	if (s->wake_reason[0] != '\0' && s->state != SVC_RUNNING)
		want_start(s, "wake");
	else if (s->wake_reason[0] != '\0') {
		s->wake_reason[0] = '\0';
		ctl_ready(s);
	}
	service_converge(s);
}

/* A ready instance exited by itself: down, and a pending start goes on. */
static void
running_exited(struct service *s, int status)
{
	emit(s, "InstanceExited", exit_detail(status));
	ctl_down(s, "exited");
	if (s->pending != NULL) {
		s->inst = s->pending;
		s->pending = NULL;
		loop_timer_at(s->sc->loop, &s->deadline,
		    s->pending_deadline.deadline);
		loop_timer_cancel(s->sc->loop, &s->pending_deadline);
		s->inst->in_store = 1;
		row_put(s->inst, "starting");
		set_state(s, SVC_STARTING);
		return;
	}
	set_state(s, SVC_SLEEPING);
}

/*
 * idle_action = "suspend", and an instance of the current revision runs
 * alone (a release under way is stopped as usual instead); or one of the
 * revision that serves while the current one has not passed its gate,
 * which may be tried behind it meanwhile (release.c).
 */
int
service_suspends(const struct service *s)
{
	if (!s->def.spec.serverless ||
	    s->def.spec.policy.idle_action != IDLE_SUSPEND ||
	    s->inst == NULL || !inst_can_suspend(s->inst))
		return 0;
	if (release_guarded(s) && s->inst->revision == s->good.revision)
		return 1;
	return s->pending == NULL && s->inst->revision == s->def.revision;
}

/*
 * Idle, with idle_action = "suspend": the instance is frozen rather than
 * stopped.  The gateway has fenced the service, and hears "down" once it
 * is frozen; hk-idle's sleep is answered then.
 */
void
service_suspend(struct service *s)
{
	ready_record(s);
	queue_remove(s);
	loop_timer_cancel(s->sc->loop, &s->retry);
	set_state(s, SVC_SUSPENDED);
	inst_freeze(s->inst);
}

void
service_inst_frozen(struct inst *in, const char *why)
{
	struct service *s = in->svc;
	struct scale *sc = s->sc;
	int64_t ms;

	if (in != s->inst || s->state != SVC_SUSPENDED)
		return;
	if (why != NULL) {
		log_warnx("service=%s: unable to freeze %s: %s; stopping it "
		    "instead", s->def.id, in->what, why);
		set_state(s, SVC_RUNNING);
		service_stop(s, "idle");
		return;
	}
	ms = (int64_t)s->def.spec.policy.suspend_max_seconds *
	    sc->cfg.time_unit_ms;
	loop_timer_at(sc->loop, &s->suspend_timer, in->frozen_mono + ms);
	ctl_down(s, "suspended");
	s->down_sent = 1;
	s->m_suspends++;
	row_put(in, "suspended");
	emit(s, "HTTPIdleSleep", json_pack("{s:I, s:s}", "uptime_ms",
	    (json_int_t)(in->frozen_mono - in->start_mono), "action",
	    "suspend"));
	ctl_sleep_done(s, NULL);
	if (s->wake_after_stop) {
		s->wake_after_stop = 0;
		inst_thaw(in);
	}
}

/*
 * Thawed: ready as it was when frozen, so subscribers hear "ready" at
 * once (no probe: a frozen process changed nothing); the wake's event
 * says it was resumed, and for how long it had been frozen.
 */
void
service_inst_thawed(struct inst *in, const char *why)
{
	struct service *s = in->svc;
	struct scale *sc = s->sc;
	int64_t now = loop_now_ms(sc->loop);

	if (in != s->inst || s->state != SVC_SUSPENDED)
		return;
	if (why != NULL) {
		log_warnx("service=%s: unable to thaw %s: %s; stopping it, "
		    "to start anew", s->def.id, in->what, why);
		s->wake_after_stop = 1;
		service_stop(s, "thaw failed");
		return;
	}
	loop_timer_cancel(sc->loop, &s->suspend_timer);
	s->down_sent = 0;
	s->m_resumes++;
	set_state(s, SVC_RUNNING);
	ctl_ready(s);
	/* the rest waits SCALE_RECORD_MS (ready_record()) */
	s->record = REC_THAW;
	s->thaw_ms = now - in->frozen_mono;
	if (s->wake_reason[0] != '\0') {
		json_decref(s->record_event);
		s->record_event = json_pack("{s:s, s:I, s:b, s:I}", "reason",
		    s->wake_reason, "readiness_ms",
		    (json_int_t)(now - s->wake_mono), "resumed", 1,
		    "suspended_ms", (json_int_t)s->thaw_ms);
		if (s->record_event != NULL && s->wake_id != 0)
			json_object_set_new(s->record_event, "wake_id",
			    json_integer(s->wake_id));
		s->wake_reason[0] = '\0';
	}
	loop_timer_at(sc->loop, &s->record_timer, now + SCALE_RECORD_MS);
	service_converge(s);
}

/*
 * What a ready leaves for later, SCALE_RECORD_MS after it: the row says
 * running, the output relay takes over (a fork), hk-events hears of it
 * (and the log, of a thaw).  The row's commit (an fsync), the fork and hk-events' own
 * commit would otherwise take the CPU that the gateway, woken by the
 * ready, and the new or thawed process need for the first request.  Done
 * at once before anything else changes the row (a stop, an exit, a
 * freeze, another ready), so that rows keep their order.
 */
void
ready_record(struct service *s)
{
	struct inst *in = s->inst;
	int kind = s->record;

	loop_timer_cancel(s->sc->loop, &s->record_timer);
	if (kind == REC_NONE)
		return;
	s->record = REC_NONE;
	if (kind == REC_START && in != NULL) {
		inst_handover(in);	/* before the row says running */
		in->in_store = 1;
		row_put(in, "running");
		if (!s->gated && in->revision == s->def.revision) {
			s->gated = 1;
			gate_mark(s->sc, &s->def, s->def.revision);
		}
		if (in->revision == s->def.revision)
			release_mark(s, in->revision, "passed", NULL);
	} else if (kind == REC_THAW) {
		if (in != NULL && in->in_store && !in->stopping)
			row_put(in, "running");
		log_info("service=%s: thawed %s after %lld ms frozen",
		    s->def.id, in != NULL ? in->what : "instance",
		    (long long)s->thaw_ms);
	}
	if (s->record_event != NULL) {
		emit(s, "HTTPIdleWake", s->record_event);	/* takes it */
		s->record_event = NULL;
	}
}

static void
record_fire(struct loop *l, void *arg)
{
	(void)l;
	ready_record(arg);
}

/* Frozen for suspend_max_seconds: stopped for real, its memory freed. */
static void
suspend_expired(struct loop *l, void *arg)
{
	struct service *s = arg;

	(void)l;
	if (s->state != SVC_SUSPENDED || s->inst == NULL)
		return;
	log_info("service=%s: suspended for %d s: stopping %s", s->def.id,
	    s->def.spec.policy.suspend_max_seconds, s->inst->what);
	emit(s, "HTTPSuspendExpired", json_pack("{s:I}", "suspended_ms",
	    (json_int_t)(loop_now_ms(s->sc->loop) - s->inst->frozen_mono)));
	service_stop(s, "suspend_max_seconds");
}

/* A frozen instance died (killed, or the OOM killer): it sleeps now. */
static void
suspended_exited(struct service *s, int status)
{
	loop_timer_cancel(s->sc->loop, &s->suspend_timer);
	emit(s, "InstanceExited", exit_detail(status));
	if (!s->down_sent)
		ctl_down(s, "exited");
	s->down_sent = 0;
	ctl_sleep_done(s, NULL);
	set_state(s, SVC_SLEEPING);
	if (s->wake_reason[0] != '\0' || s->wake_after_stop) {
		s->wake_after_stop = 0;
		want_start(s, "woken while suspended");
		return;
	}
	service_converge(s);
}
