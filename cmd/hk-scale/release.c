/*
 * release.c - a failed release never replaces a healthy one.
 *
 * A service's new revision must pass its readiness gate (an instance of
 * it ready once) before it serves, be the service serverless or ordinary
 * (always running: a database, a worker).  Until it has, the service
 * keeps "good", the newest revision that passed (the store's revisions
 * table, with its spec and code), and a wake starts that one; the new
 * revision's gate is tried behind it, as "pending", whatever the state of
 * the service: beside a running or suspended instance, or alone while it
 * sleeps.  Once the new revision is ready it takes over (service.c); when
 * its start fails, the failure is recorded on its revision (gate failed,
 * with the reason, and a StartFailed event), nothing that serves is
 * touched, and the gate is tried again after a backoff, 1 s doubling to
 * 60 s.
 *
 * A service none of whose revisions ever passed (a new one) has no good
 * revision: its wakes start its current revision, which is its gate, as
 * before.  An ordinary service's gate is its revision's row alone
 * (instance_store.c): it runs its good revision, always, and tries the
 * new one behind it as a running serverless service does.  A new
 * revision that needs the port its old one holds (a fixed "port") cannot
 * start beside it: the old instance is stopped, the new one started
 * alone, and if it fails the good revision is started again; that gate
 * is not tried again by itself (service_converge()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evsink.h"
#include "log.h"
#include "scale.h"

static void	good_clear(struct service *);

static void
good_clear(struct service *s)
{
	spec_clear(&s->good.spec);
	memset(&s->good, 0, sizeof(s->good));
}

/*
 * After def changed (or at start): the newest revision older than def
 * that passed, while def has not.  A store that fails leaves none: wakes
 * then start def, as for a new service.
 */
void
release_load(struct service *s)
{
	struct scale *sc = s->sc;
	struct store_revision r;
	char err[SPEC_ERR_LEN + SRCTREE_ERR_LEN + 64];
	int got;

	good_clear(s);
	s->gate_retry_at = 0;
	s->gate_backoff = 0;
	s->gate_reason[0] = '\0';
	if (s->gated)
		return;
	got = store_revision_passed(sc->store, s->def.app, s->def.name,
	    s->def.revision, &r);
	if (got == -1)
		log_warnx("service=%s: unable to read its revisions: %s",
		    s->def.id, store_error(sc->store));
	if (got != 0)
		return;
	if (spec_decode(r.spec_json, &s->good.spec, err, sizeof(err)) == -1) {
		log_warnx("service=%s: revision %lld: %s", s->def.id,
		    (long long)r.revision, err);
		store_revision_clear(&r);
		return;
	}
	store_revision_clear(&r);
	strlcpy(s->good.app, s->def.app, sizeof(s->good.app));
	strlcpy(s->good.name, s->def.name, sizeof(s->good.name));
	strlcpy(s->good.id, s->def.id, sizeof(s->good.id));
	s->good.revision = r.revision;
	s->good.desired = s->def.desired;
	if (source_prepare(sc, &s->good.spec, err, sizeof(err)) == -1)
		log_warnx("service=%s: revision %lld: %s", s->def.id,
		    (long long)s->good.revision, err);
	log_info("service=%s: revision %lld serves until revision %lld "
	    "passes its readiness gate", s->def.id,
	    (long long)s->good.revision, (long long)s->def.revision);
}

/*
 * def is ready: it serves from now on, and good's spec (and the tree of
 * its code, at the next sweep) is no longer needed.
 */
void
release_passed(struct service *s)
{
	if (s->good.revision != 0)
		log_info("service=%s: revision %lld passed its readiness "
		    "gate: it serves instead of %lld", s->def.id,
		    (long long)s->def.revision, (long long)s->good.revision);
	good_clear(s);
	s->gate_retry_at = 0;
	s->gate_backoff = 0;
	s->gate_reason[0] = '\0';
}

/* The revision an instance runs: good's, or the current one. */
struct svc *
inst_def(const struct inst *in)
{
	struct service *s = in->svc;

	if (s->good.revision != 0 && in->revision == s->good.revision)
		return &s->good;
	return &s->def;
}

/* A good revision serves while def's gate is tried. */
int
release_guarded(const struct service *s)
{
	return s->good.revision != 0 && !s->gated;
}

/* A start of rev is def's gate, tried behind the good revision. */
int
release_is_gate(const struct service *s, int64_t rev)
{
	return release_guarded(s) && rev == s->def.revision;
}

/*
 * The outcome on the revision's row (owed to the store if it is away).
 * passed once per revision and run: it comes with every ready.
 */
void
release_mark(struct service *s, int64_t rev, const char *gate,
    const char *reason)
{
	int passed = strcmp(gate, "passed") == 0;

	if (passed && s->passed_rev == rev)
		return;
	if (passed)
		s->passed_rev = rev;
	if (due_revision(s->sc, &s->def, rev, gate, reason) == -1)
		log_warnx("service=%s: unable to record revision %lld %s: %s: "
		    "kept, to be written once the store answers", s->def.id,
		    (long long)rev, gate, store_error(s->sc->store));
}

/*
 * def's gate failed: recorded, and tried again after the backoff; what
 * serves goes on.  With nothing running (its start was alone: a fixed
 * port), the good revision starts again at once when a wake waits or it
 * served before ("restart", the wake's reason then), else at the next
 * wake (or by service_converge(), for an always-on service).  detail
 * (taken) is the event's.
 */
void
release_gate_failed(struct service *s, const char *why, json_t *detail)
{
	struct scale *sc = s->sc;

	s->m_start_failures++;
	s->gate_backoff = s->gate_backoff == 0 ? SCALE_RETRY_MIN_S :
	    s->gate_backoff * 2;
	if (s->gate_backoff > SCALE_RETRY_MAX_S)
		s->gate_backoff = SCALE_RETRY_MAX_S;
	s->gate_retry_at = loop_now_ms(sc->loop) + s->gate_backoff * 1000;
	strlcpy(s->gate_reason, why, sizeof(s->gate_reason));
	log_warnx("service=%s: revision %lld failed its readiness gate: %s; "
	    "revision %lld serves (gate again after %lld s)", s->def.id,
	    (long long)s->def.revision, why, (long long)s->good.revision,
	    (long long)s->gate_backoff);
	if (detail == NULL)
		detail = json_object();
	json_object_set_new(detail, "reason", json_string(why));
	json_object_set_new(detail, "revision", json_integer(s->def.revision));
	json_object_set_new(detail, "gate", json_string("failed"));
	json_object_set_new(detail, "serving",
	    json_integer(s->good.revision));
	if (s->def.spec.code_hash != NULL)
		json_object_set_new(detail, "code_hash",
		    json_string(s->def.spec.code_hash));
	evsink_event(sc->ev, "StartFailed", s->def.id, detail);
	release_mark(s, s->def.revision, "failed", why);
	ctl_gate_failed(s);
	if (s->inst == NULL && !s->queued) {
		loop_timer_cancel(sc->loop, &s->deadline);
		if (s->state == SVC_STARTING)
			s->state = SVC_SLEEPING;
		if (s->wake_reason[0] != '\0' || s->restart_good) {
			s->restart_good = 0;
			service_wake(s, s->wake_reason[0] != '\0' ?
			    s->wake_reason : "restart", s->wake_id);
			return;
		}
	}
	service_converge(s);
}

/*
 * Whether def's gate may be tried now: 1, or 0 with the retry timer
 * armed for when it may.
 */
int
release_gate_due(struct service *s)
{
	struct scale *sc = s->sc;

	if (s->pending != NULL && s->pending->revision != s->def.revision) {
		/* an older revision's gate: moot */
		loop_timer_cancel(sc->loop, &s->pending_deadline);
		inst_retire(s->pending);
		s->pending = NULL;
	}
	if (s->pending != NULL || s->queued)
		return 0;
	if (loop_now_ms(sc->loop) < s->gate_retry_at) {
		loop_timer_at(sc->loop, &s->retry, s->gate_retry_at);
		return 0;
	}
	return 1;
}
