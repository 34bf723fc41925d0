/*
 * replica.c - the replicas of an ordinary service (hk.toml(5) replicas):
 * replica 0 is the service's instance (s->inst), which the state machine
 * of service.c starts, gates, releases and restarts as it always has;
 * replicas 1..replicas-1 (s->replicas[]) run beside it, each an instance
 * of its own, with its own row in the store (replica N).
 *
 *	- They start once replica 0 is ready, of its revision: the new
 *	  revision of a release passes its readiness gate on replica 0
 *	  first, then the others roll over one at a time, lowest first:
 *	  old replica k stopped, new replica k started, and the next only
 *	  once it is ready (its probe), so that all but one serve
 *	  throughout.  A failed release never reaches them.  A new replica
 *	  whose start fails stops the roll there: the failure is recorded
 *	  (a StartFailed event naming the replica, as a gate's), it is
 *	  tried again after its backoff, and the old replicas above it go
 *	  on serving meanwhile.
 *	- Each is probed as replica 0 is, and is restarted by itself after
 *	  an exit, with the backoff of service.c (100 ms doubling to 30 s,
 *	  reset after 10 s up); a start that fails or misses the startup
 *	  deadline is tried again after 1 s doubling to 60 s.
 *	- An exit of replica 0 does not touch them: it is restarted by
 *	  service.c, and they go on serving meanwhile.
 *	- A stop of the service (hk stop, enabled = false, removal, a
 *	  release that needs the port, hk-scale's SIGTERM) stops them all.
 *	- A reload that changes replicas alone starts the missing ones or
 *	  stops those numbered replicas and above, and restarts nothing
 *	  (replica_rescale(): the new revision takes over what runs).
 *	- A restarted hk-scale adopts each from its row as it does replica
 *	  0 (instance_store.c); one it does not want is stopped.
 *
 * A serverless service runs at most one instance: hk validate refuses
 * replicas other than 1 there, and replica_wanted() says 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "evsink.h"
#include "log.h"
#include "scale.h"

static struct replica	*slot_of(struct inst *);
static int	 group_up(const struct service *);
static void	 replica_spawn(struct service *, int);
static void	 replica_retire(struct service *, int);
static void	 replica_backoff(struct service *, struct replica *, int64_t,
		    int64_t);
static void	 replica_row_delete(struct service *, int);
static int	 spec_same_but_replicas(const char *, const char *);
static int	 roll_busy(const struct service *, int);
static int	 roll_next(const struct service *, int, int64_t);
static void	 roll_stopped(struct service *, struct replica *, int,
		    int64_t, const char *);

/* How many instances s runs: its spec's replicas, 1 when serverless. */
int
replica_wanted(const struct service *s)
{
	int n = s->def.spec.replicas;

	if (s->def.spec.serverless || n < 1)
		return 1;
	return n > SPEC_REPLICAS_MAX ? SPEC_REPLICAS_MAX : n;
}

static struct replica *
slot_of(struct inst *in)
{
	struct service *s = in->svc;

	if (s == NULL || in->replica < 1 || in->replica >= SPEC_REPLICAS_MAX ||
	    s->replicas[in->replica].in != in)
		return NULL;
	return &s->replicas[in->replica];
}

/* The service wants its instances to run (not stopped, removed, ...). */
static int
group_up(const struct service *s)
{
	return !s->removed && !s->sc->stopping &&
	    s->def.desired != STORE_DESIRED_STOPPED &&
	    s->state != SVC_DRAINING && s->state != SVC_STOPPED;
}

/*
 * Brings the replicas beside s->inst to what s wants: those numbered
 * beyond replicas are stopped, or all when the service stops; once
 * replica 0 is ready, one of another revision than its own is replaced
 * while no other replica is missing or starting (the roll), and the
 * missing ones start, each after its backoff.  Called whenever the
 * service converges, and when a replica is ready.
 */
void
replica_converge(struct service *s)
{
	struct scale *sc = s->sc;
	struct replica *r;
	int64_t now = loop_now_ms(sc->loop), next = 0;
	int64_t from;
	int i, k, n = replica_wanted(s), up = group_up(s);
	int lead = up && s->state == SVC_RUNNING && s->inst != NULL &&
	    s->inst->ready && !s->inst->stopping;

	for (i = 1; i < SPEC_REPLICAS_MAX; i++)
		if (s->replicas[i].in != NULL && (i >= n || !up))
			replica_retire(s, i);
	if (lead && !roll_busy(s, n) &&
	    (k = roll_next(s, n, s->inst->revision)) != 0) {
		r = &s->replicas[k];
		from = r->in->revision;
		log_info("service=%s: replica %d: rolling from revision %lld "
		    "to %lld", s->def.id, k, (long long)from,
		    (long long)s->inst->revision);
		replica_retire(s, k);
		r->roll_from = from;
		r->backoff = 0;
		r->retry_at = 0;
	}
	for (i = 1; i < n; i++) {
		r = &s->replicas[i];
		if (r->in != NULL || !lead)
			continue;
		if (now < r->retry_at) {
			if (next == 0 || r->retry_at < next)
				next = r->retry_at;
			continue;
		}
		replica_spawn(s, i);
	}
	if (next != 0)
		loop_timer_at(sc->loop, &s->replica_timer, next);
}

/*
 * The roll waits while a replica is missing (a start that failed waits
 * for its backoff) or one of replica 0's revision is not ready yet: at
 * most one is down at a time.
 */
static int
roll_busy(const struct service *s, int n)
{
	const struct inst *in;
	int i;

	for (i = 1; i < n; i++) {
		in = s->replicas[i].in;
		if (in == NULL || (in->revision == s->inst->revision &&
		    !in->ready))
			return 1;
	}
	return 0;
}

/* The lowest replica of another revision than rev, or 0 if none. */
static int
roll_next(const struct service *s, int n, int64_t rev)
{
	int i;

	for (i = 1; i < n; i++)
		if (s->replicas[i].in != NULL &&
		    s->replicas[i].in->revision != rev)
			return i;
	return 0;
}

/*
 * Replica i, started by a roll in place of one of revision r->roll_from,
 * did not start: recorded as a gate's failure is (an event, the log);
 * the replicas the roll has not reached go on serving.
 */
static void
roll_stopped(struct service *s, struct replica *r, int i, int64_t rev,
    const char *why)
{
	json_t *detail;

	log_warnx("service=%s: rolling to revision %lld stopped at replica "
	    "%d: %s; the replicas of revision %lld above it go on serving",
	    s->def.id, (long long)rev, i, why, (long long)r->roll_from);
	if ((detail = json_object()) == NULL)
		return;
	json_object_set_new(detail, "reason", json_string(why));
	json_object_set_new(detail, "revision", json_integer(rev));
	json_object_set_new(detail, "replica", json_integer(i));
	json_object_set_new(detail, "roll", json_string("stopped"));
	json_object_set_new(detail, "serving", json_integer(r->roll_from));
	evsink_event(s->sc->ev, "StartFailed", s->def.id, detail);
}

void
replica_fire(struct loop *l, void *arg)
{
	(void)l;
	replica_converge(arg);
}

/* Every replica beside s->inst stopped: the service stops or goes. */
void
replica_stop_all(struct service *s)
{
	int i;

	loop_timer_cancel(s->sc->loop, &s->replica_timer);
	for (i = 1; i < SPEC_REPLICAS_MAX; i++)
		if (s->replicas[i].in != NULL)
			replica_retire(s, i);
}

/* Replica i no longer belongs to s: stopped, and freed once gone. */
static void
replica_retire(struct service *s, int i)
{
	struct inst *in = s->replicas[i].in;

	s->replicas[i].in = NULL;
	s->replicas[i].roll_from = 0;
	loop_timer_cancel(s->sc->loop, &in->replica_deadline);
	if (in->in_store)
		replica_row_delete(s, i);
	log_info("service=%s: replica %d: stopping %s", s->def.id, i,
	    in->what);
	inst_retire(in);
}

static void
replica_row_delete(struct service *s, int i)
{
	if (due_delete(s->sc, s->def.app, s->def.name, i) == -1)
		log_warnx("service=%s: unable to delete replica %d's row: %s: "
		    "kept, to be deleted once the store answers", s->def.id,
		    i, store_error(s->sc->store));
}

/*
 * Replica i of s->inst's revision.  No start slot: the queue serves wakes
 * and gates; a replica's start has its own deadline.  Its backend may
 * report before inst_start() returns (replica_failed()).
 */
static void
replica_spawn(struct service *s, int i)
{
	const struct backend *be = backend_find(s->def.spec.backend);
	struct replica *r = &s->replicas[i];
	struct inst *in;

	if (be == NULL || (in = inst_new(s->sc, s->def.id, be)) == NULL) {
		log_warnx("service=%s: replica %d: unable to start", s->def.id,
		    i);
		replica_backoff(s, r, 1000, 60000);
		return;
	}
	in->svc = s;
	in->replica = i;
	in->revision = s->inst->revision;
	strlcpy(in->node, service_node(s, be), sizeof(in->node));
	r->in = in;
	s->m_starts++;
	log_debug("service=%s: replica %d: start of revision %lld",
	    s->def.id, i, (long long)in->revision);
	loop_timer_at(s->sc->loop, &in->replica_deadline,
	    loop_now_ms(s->sc->loop) + (int64_t)service_timeout(s) * 1000);
	inst_start(in);
}

/*
 * The next start of r waits: first ms at first, doubled each time up to
 * max (a start that failed, an exit); the timer converges again then.
 */
static void
replica_backoff(struct service *s, struct replica *r, int64_t first,
    int64_t max)
{
	struct scale *sc = s->sc;
	int64_t now = loop_now_ms(sc->loop);

	r->backoff = r->backoff == 0 ? first : r->backoff * 2;
	if (r->backoff > max)
		r->backoff = max;
	r->retry_at = now + r->backoff;
	if (!loop_timer_armed(&s->replica_timer) ||
	    r->retry_at < s->replica_timer.deadline)
		loop_timer_at(sc->loop, &s->replica_timer, r->retry_at);
}

void
replica_started(struct inst *in)
{
	struct service *s = in->svc;

	in->spawned_mono = loop_now_ms(s->sc->loop);
	in->in_store = 1;
	row_put(in, "starting");
	probe_start(in);
}

void
replica_ready(struct inst *in)
{
	struct service *s = in->svc;
	struct replica *r;

	loop_timer_cancel(s->sc->loop, &in->replica_deadline);
	in->ready = 1;
	in->ready_at = store_now_ms();
	if (in->conn_fd != -1) {	/* a probe's: nobody wants it */
		close(in->conn_fd);
		in->conn_fd = -1;
	}
	inst_handover(in);
	row_put(in, "running");
	log_info("service=%s: replica %d ready at %s, revision %lld, %s",
	    s->def.id, in->replica, in->endpoint, (long long)in->revision,
	    in->what);
	if ((r = slot_of(in)) != NULL)
		r->roll_from = 0;
	if (!s->removed && !s->sc->stopping && !s->adopting)
		replica_converge(s);	/* the roll goes on */
}

/* Its start failed (the backend's reason), or its deadline passed. */
void
replica_failed(struct inst *in, const char *why)
{
	struct service *s = in->svc;
	struct replica *r = slot_of(in);
	int i = in->replica;

	log_warnx("service=%s: replica %d: unable to start revision %lld: %s",
	    s->def.id, i, (long long)in->revision, why);
	s->m_start_failures++;
	loop_timer_cancel(s->sc->loop, &in->replica_deadline);
	if (in->in_store)
		replica_row_delete(s, i);
	if (r != NULL && r->roll_from != 0)
		roll_stopped(s, r, i, in->revision, why);
	if (r != NULL)
		r->in = NULL;
	inst_free(in);
	if (r != NULL)
		replica_backoff(s, r, 1000, 60000);
}

void
replica_deadline(struct loop *l, void *arg)
{
	struct inst *in = arg;
	struct service *s = in->svc;
	struct replica *r;
	char why[64];

	loop_timer_cancel(l, &in->replica_deadline);
	if (s == NULL || in->ready || (r = slot_of(in)) == NULL)
		return;
	snprintf(why, sizeof(why), "not ready within %d s",
	    service_timeout(s));
	log_warnx("service=%s: replica %d: unable to start revision %lld: %s",
	    s->def.id, in->replica, (long long)in->revision, why);
	s->m_start_failures++;
	if (r->roll_from != 0)
		roll_stopped(s, r, in->replica, in->revision, why);
	r->in = NULL;
	if (in->in_store)
		replica_row_delete(s, in->replica);
	inst_retire(in);
	inst_kill(in);
	replica_backoff(s, r, 1000, 60000);
}

/*
 * A replica is gone by itself (why: its exit status and last line):
 * started again after the backoff of an always-on service's restart, as
 * replica 0 is.
 */
void
replica_exit(struct inst *in, const char *why)
{
	struct service *s = in->svc;
	struct replica *r = slot_of(in);
	int64_t uptime = loop_now_ms(s->sc->loop) - in->start_mono;
	int ready = in->ready, i = in->replica;

	if (!ready) {
		replica_failed(in, why);
		return;
	}
	log_warnx("service=%s: replica %d: %s exited: %s", s->def.id, i,
	    in->what, why);
	loop_timer_cancel(s->sc->loop, &in->replica_deadline);
	if (in->in_store)
		replica_row_delete(s, i);
	if (r != NULL)
		r->in = NULL;
	inst_free(in);
	if (r == NULL)
		return;
	if (uptime >= SCALE_RESTART_RESET_MS)
		r->backoff = 0;
	replica_backoff(s, r, SCALE_RESTART_MIN_MS, SCALE_RESTART_MAX_MS);
}

/*
 * A replica an earlier run left (its row's, replica in->replica), looked
 * at by its backend: kept if it runs, the service wants that many and it
 * is of the revision the service runs; else stopped and its row deleted.
 */
void
replica_adopt(struct inst *in, struct service *s, int alive)
{
	int i = in->replica;

	if (i < 1 || i >= SPEC_REPLICAS_MAX) {	/* a row no hk wrote */
		log_warnx("service=%s: replica %d of an earlier run: stopping "
		    "%s", in->id, i, in->what);
		if (alive)
			inst_stop(in);
		else
			inst_free(in);
		return;
	}
	if (!alive) {
		if (s != NULL && s->replicas[i].in == NULL)
			replica_row_delete(s, i);
		inst_free(in);
		return;
	}
	if (s == NULL || i >= replica_wanted(s) || !group_up(s) ||
	    s->replicas[i].in != NULL || in->stopping ||
	    strcmp(in->row_state, "running") != 0 ||
	    (in->revision != s->def.revision &&
	    in->revision != s->good.revision)) {
		log_info("service=%s: replica %d: stopping %s, left %s by an "
		    "earlier run", in->id, i, in->what, in->row_state);
		if (s != NULL)
			replica_row_delete(s, i);
		inst_stop(in);
		return;
	}
	in->svc = s;
	in->ready = 1;
	in->in_store = 1;
	s->replicas[i].in = in;
	log_info("service=%s: replica %d: adopted %s at %s, revision %lld",
	    in->id, i, in->what, in->endpoint, (long long)in->revision);
}

/*
 * Two specs alike but for replicas: a change of replicas alone is a
 * scale, not a release (hk.toml(5)).
 */
static int
spec_same_but_replicas(const char *a, const char *b)
{
	json_t *ja, *jb;
	int same = 0;

	if (a == NULL || b == NULL)
		return 0;
	ja = json_loads(a, 0, NULL);
	jb = json_loads(b, 0, NULL);
	if (json_is_object(ja) && json_is_object(jb)) {
		json_object_del(ja, "replicas");
		json_object_del(jb, "replicas");
		same = json_equal(ja, jb);
	}
	json_decref(ja);
	json_decref(jb);
	return same;
}

/*
 * The store has nw, a new revision of s whose spec differs from s->def's
 * in replicas alone: what runs of def's revision is nw's from now (its
 * rows say so), and def has passed its gate if it had.  1 when so; 0
 * when nw is a release like any other.
 */
int
replica_rescale(struct service *s, const struct svc *nw)
{
	struct inst *in;
	int64_t old = s->def.revision;
	int i;

	if (s->def.spec.serverless || nw->spec.serverless || !s->gated ||
	    s->pending != NULL || release_guarded(s) ||
	    !spec_same_but_replicas(s->def.spec.spec_json,
	    nw->spec.spec_json))
		return 0;
	log_info("service=%s: revision %lld -> %lld: replicas %d -> %d, "
	    "nothing restarted", s->def.id, (long long)old,
	    (long long)nw->revision, s->def.spec.replicas, nw->spec.replicas);
	for (i = 0; i < SPEC_REPLICAS_MAX; i++) {
		in = i == 0 ? s->inst : s->replicas[i].in;
		if (in == NULL || in->revision != old)
			continue;
		in->revision = nw->revision;
		if (in->in_store && !in->stopping)
			row_put(in, in->ready ? "running" : "starting");
	}
	return 1;
}
