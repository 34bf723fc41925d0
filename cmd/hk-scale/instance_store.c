/*
 * instance_store.c - what hk-scale keeps in the store: one instance row per
 * replica of a service (so "hk ps" and "hk status" show it, and a
 * restarted hk-scale finds it), and the readiness gate.
 *
 * The gate: a serverless service must pass its readiness gate once per
 * revision before it may sleep.  The revision that last passed is kept in
 * the settings table under "hk-scale.gate.APP/SERVICE", so a restarted
 * hk-scale does not start every gated service again.  An ordinary
 * service's is its revision's row alone (release.c).
 *
 * Adoption: a failed start's row describes nothing and is deleted.  Each
 * other row of this node goes to its service's backend, which says
 * whether what the row describes still runs (backend_exec.c: the pid,
 * alive with the start time of the row), and then watches it.  One that
 * was running is taken over; anything else found alive is stopped; a row
 * of which nothing runs is deleted.  A row whose service this hk-scale
 * cannot read (its spec did not decode: a newer hk may have written it)
 * or whose backend this build lacks is left as it is, with what it
 * describes: hk-scale cannot tell how to stop that.
 *
 * A backend may answer an adoption later (backend_container.c asks its
 * engine, backend_systemd.c systemd): until it has, its service starts
 * nothing, and a wake waits.  Then the service converges (or the wake
 * goes on), and subscribers that came meanwhile hear that an adopted
 * instance is ready.
 */
#include <sys/random.h>
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "log.h"
#include "scale.h"
#include "xlisten.h"

#define GATE_KEY_MAX	DUE_KEY_MAX
#define INSTALL_KEY	"hk-scale.installation"

static void	gate_key(char *, size_t, const struct svc *);
static int	ordinary_passed(struct scale *, const struct svc *);
static void	adopt_one(struct scale *, const struct store_instance *);
static int	reachable(const struct inst *);
static void	adopt_take(struct inst *, struct service *, int);
static void	adopt_frozen(struct service *, struct inst *);
static void	row_soon_fire(struct loop *, void *);

void
row_put(struct inst *in, const char *state)
{
	struct scale *sc = in->sc;
	struct store_instance r;

	memset(&r, 0, sizeof(r));
	strlcpy(r.app, in->svc->def.app, sizeof(r.app));
	strlcpy(r.service, in->svc->def.name, sizeof(r.service));
	strlcpy(r.state, state, sizeof(r.state));
	strlcpy(r.endpoint, in->endpoint, sizeof(r.endpoint));
	strlcpy(r.node, in->node, sizeof(r.node));
	r.revision = in->revision;
	r.replica = in->replica;
	inst_row(in, &r);
	r.started_at = in->started_at;
	r.ready_at = in->ready_at;
	r.updated_at = store_now_ms();
	if (due_write(sc, DUE_PUT, r.app, r.service, &r, NULL, NULL) == -1)
		log_warnx("service=%s: unable to record instance: %s: kept, "
		    "to be written once the store answers", in->id,
		    store_error(sc->store));
}

/*
 * The "starting" row of a backend that starts later (a container, a
 * pod), a millisecond after its start's first call: that call (a
 * create) goes out first, and the row's commit, an fdatasync of 1 to
 * 18 ms here, overlaps the engine's work instead of delaying it.  Should
 * hk-scale die in that millisecond, the container is one that no row
 * claims, removed by the next run's sweep.  A start that failed or was
 * stopped meanwhile owes no row (inst_free() cancels the timer).
 */
void
row_put_soon(struct inst *in)
{
	struct loop *l = in->sc->loop;

	loop_timer_init(&in->row_timer, row_soon_fire, in);
	loop_timer_at(l, &in->row_timer, loop_now_ms(l) + 1);
}

static void
row_soon_fire(struct loop *l, void *arg)
{
	struct inst *in = arg;

	(void)l;
	if (in->svc != NULL && in->svc->inst == in && in->in_store &&
	    !in->stopping && !in->releasing && !in->ready)
		row_put(in, "starting");
}

void
row_delete(struct scale *sc, const struct svc *def)
{
	if (due_write(sc, DUE_DELETE, def->app, def->name, NULL, NULL,
	    NULL) == -1)
		log_warnx("service=%s: unable to delete instance: %s: kept, "
		    "to be deleted once the store answers", def->id,
		    store_error(sc->store));
}

/* A failed start leaves a row without a process, so "hk ps" says so. */
void
row_failed(struct service *s)
{
	struct store_instance r;

	memset(&r, 0, sizeof(r));
	strlcpy(r.app, s->def.app, sizeof(r.app));
	strlcpy(r.service, s->def.name, sizeof(r.service));
	strlcpy(r.state, "failed", sizeof(r.state));
	strlcpy(r.node, service_node(s, backend_find(s->def.spec.backend)),
	    sizeof(r.node));
	r.revision = s->def.revision;
	r.updated_at = store_now_ms();
	if (due_write(s->sc, DUE_PUT, r.app, r.service, &r, NULL, NULL) == -1)
		log_warnx("service=%s: unable to record the failure: %s: "
		    "kept, to be written once the store answers", s->def.id,
		    store_error(s->sc->store));
	s->failed_row = 1;
}

static void
gate_key(char *buf, size_t len, const struct svc *def)
{
	snprintf(buf, len, "hk-scale.gate.%s", def->id);
}

/*
 * An ordinary service's revision has passed unless its row says it never
 * was ready (pending or failed): its gate is the revisions table alone.
 * No row (applied before there were revisions, or pruned) or a store
 * that fails leaves it as it was before there were gates: passed.
 */
static int
ordinary_passed(struct scale *sc, const struct svc *def)
{
	struct store_revision r;
	int got, passed;

	got = store_revision_get(sc->store, def->app, def->name,
	    def->revision, &r);
	if (got == -1)
		log_warnx("service=%s: unable to read revision %lld: %s",
		    def->id, (long long)def->revision, store_error(sc->store));
	if (got != 0)
		return 1;
	passed = strcmp(r.gate, "passed") == 0;
	store_revision_clear(&r);
	return passed;
}

/* Whether this revision has been ready once. */
int
gate_passed(struct scale *sc, const struct svc *def)
{
	char key[GATE_KEY_MAX], *val = NULL;
	long long rev;
	int r;

	if (!def->spec.serverless)
		return ordinary_passed(sc, def);
	gate_key(key, sizeof(key), def);
	if ((r = store_setting_get(sc->store, key, &val)) == -1) {
		log_warnx("service=%s: unable to read gate: %s", def->id,
		    store_error(sc->store));
		return 0;
	}
	rev = r == 0 ? strtonum(val, 0, INT64_MAX, NULL) : 0;
	free(val);
	return rev >= def->revision;
}

/* rev: the revision that passed, or 0 when the service is removed. */
void
gate_mark(struct scale *sc, const struct svc *def, int64_t rev)
{
	char key[GATE_KEY_MAX], val[24];

	if (!def->spec.serverless)
		return;
	gate_key(key, sizeof(key), def);
	snprintf(val, sizeof(val), "%lld", (long long)rev);
	if (due_write(sc, DUE_GATE, def->app, def->name, NULL, key, val) == -1)
		log_warnx("service=%s: unable to record gate: %s: kept, to be "
		    "written once the store answers", def->id,
		    store_error(sc->store));
}

static void
adopt_one(struct scale *sc, const struct store_instance *r)
{
	const struct backend *be;
	struct service *s;
	struct inst *in;
	char id[SCALE_ID_MAX];
	const char *colon;

	if (r->node[0] != '\0' && strcmp(r->node, sc->node) != 0 &&
	    config_node_find(&sc->cfg, r->node) == NULL)
		return;		/* another host's instance */
	snprintf(id, sizeof(id), "%s/%s", r->app, r->service);
	if (strcmp(r->state, "failed") == 0) {	/* a failed start: nothing */
		store_instance_delete(sc->store, r->app, r->service,
		    r->replica);
		return;
	}
	if ((s = service_find(sc, id)) == NULL) {
		log_warnx("service=%s: its spec cannot be read: the instance "
		    "of an earlier run is left as it is", id);
		return;
	}
	if ((be = backend_find(s->def.spec.backend)) == NULL) {
		log_warnx("service=%s: backend \"%s\" is not available in "
		    "this build: the instance of an earlier run is left as "
		    "it is", id, config_backend_name(s->def.spec.backend));
		return;
	}
	if ((in = inst_new(sc, id, be)) == NULL) {
		log_warn("service=%s: unable to adopt", id);
		return;
	}
	in->revision = r->revision;
	in->replica = r->replica;
	if (r->revision == s->good.revision && s->good.revision != 0) {
		if (s->good.spec.code_hash != NULL)
			strlcpy(in->code_hash, s->good.spec.code_hash,
			    sizeof(in->code_hash));
	} else if (r->revision != s->def.revision)
		in->code_unknown = 1;
	else if (s->def.spec.code_hash != NULL)
		strlcpy(in->code_hash, s->def.spec.code_hash,
		    sizeof(in->code_hash));
	in->started_at = r->started_at;
	in->ready_at = r->ready_at;
	secrets_adopt(in, r);
	in->start_mono = loop_now_ms(sc->loop);
	strlcpy(in->endpoint, r->endpoint, sizeof(in->endpoint));
	strlcpy(in->row_state, r->state, sizeof(in->row_state));
	if (r->node[0] != '\0')
		strlcpy(in->node, r->node, sizeof(in->node));
	if (!reachable(in) && (colon = strrchr(r->endpoint, ':')) != NULL)
		in->port = (int)strtonum(colon + 1, 1, 65535, NULL);
	s->adopting++;
	inst_adopt(in, r);
}

/*
 * The backend has looked: alive, it watches the instance, which is taken
 * over if the row said running and its service wants it; else stopped.
 */
void
adopt_done(struct inst *in, int alive)
{
	struct scale *sc = in->sc;
	struct service *s = service_find(sc, in->id);

	adopt_take(in, s, alive);
	if (s != NULL)
		service_adopted(s);
}

/* It has an endpoint: a port, or a socket of its own (exec_unix.c). */
static int
reachable(const struct inst *in)
{
	return in->port != 0 || strncmp(in->endpoint, ENDPOINT_UNIX,
	    strlen(ENDPOINT_UNIX)) == 0;
}

static void
adopt_take(struct inst *in, struct service *s, int alive)
{
	struct scale *sc = in->sc;

	if (in->replica != 0) {
		replica_adopt(in, s, alive);
		return;
	}
	if (!alive) {
		if (s != NULL && s->inst == NULL)
			row_delete(sc, &s->def);
		inst_free(in);
		return;
	}
	if (s == NULL || s->inst != NULL || !reachable(in) || in->stopping ||
	    s->def.desired == STORE_DESIRED_STOPPED ||
	    (strcmp(in->row_state, "running") != 0 &&
	    strcmp(in->row_state, "suspended") != 0)) {
		log_info("service=%s: stopping %s, left %s by an earlier run",
		    in->id, in->what, in->row_state);
		if (s != NULL && s->inst == NULL)
			row_delete(sc, &s->def);
		inst_stop(in);
		return;
	}
	in->svc = s;
	in->ready = 1;
	in->in_store = 1;
	s->inst = in;
	if (in->revision == s->def.revision)
		s->gated = 1;
	if (strcmp(in->row_state, "suspended") == 0) {
		adopt_frozen(s, in);
		return;
	}
	s->state = SVC_RUNNING;
	log_info("service=%s: adopted %s at %s, revision %lld", in->id,
	    in->what, in->endpoint, (long long)in->revision);
	ctl_ready(s);	/* for those who subscribed meanwhile */
}

/*
 * Frozen by an earlier run: suspended still, and no "ready" (subscribers
 * learn nothing of it; a wake thaws it).  Its time frozen starts anew.
 */
static void
adopt_frozen(struct service *s, struct inst *in)
{
	in->frozen = 1;
	in->frozen_mono = loop_now_ms(s->sc->loop);
	s->state = SVC_SUSPENDED;
	s->down_sent = 1;
	loop_timer_at(s->sc->loop, &s->suspend_timer, in->frozen_mono +
	    (int64_t)s->def.spec.policy.suspend_max_seconds *
	    s->sc->cfg.time_unit_ms);
	log_info("service=%s: adopted %s, frozen, at %s, revision %lld",
	    in->id, in->what, in->endpoint, (long long)in->revision);
}

/*
 * The installation's ID, kept in the settings table (hk-scale.installation)
 * and made once, at random: the label that tells this installation's
 * containers from another's on a shared engine.
 */
int
installation_id(struct scale *sc)
{
	unsigned char b[SCALE_INSTALL_MAX / 2];
	char *val = NULL, id[SCALE_INSTALL_MAX + 1];
	size_t i;
	int r;

	if (sc->installation[0] != '\0')
		return 0;
	if ((r = store_setting_get(sc->store, INSTALL_KEY, &val)) == -1)
		return -1;
	if (r == 0 && strlen(val) == SCALE_INSTALL_MAX &&
	    strspn(val, "0123456789abcdef") == SCALE_INSTALL_MAX) {
		strlcpy(sc->installation, val, sizeof(sc->installation));
		free(val);
		return 0;
	}
	free(val);
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	for (i = 0; i < sizeof(b); i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
	if (store_setting_put(sc->store, INSTALL_KEY, id) == -1)
		return -1;
	strlcpy(sc->installation, id, sizeof(sc->installation));
	log_info("installation %s", id);
	return 0;
}

void
adopt_all(struct scale *sc)
{
	struct store_instance *rows;
	struct service *s, *tmp;
	size_t n, i;

	if (store_instance_list(sc->store, &rows, &n) == -1) {
		log_warnx("unable to list instances: %s",
		    store_error(sc->store));
		return;
	}
	/*
	 * Each service waits for all its rows, not each row (one adopted at
	 * once would start the replicas that the next rows describe).
	 */
	TAILQ_FOREACH(s, &sc->services, entry)
		s->adopting++;
	for (i = 0; i < n; i++)
		adopt_one(sc, &rows[i]);
	TAILQ_FOREACH_SAFE(s, &sc->services, entry, tmp)
		service_adopted(s);
	xlisten_prune();
	s6listen_prune(sc->cfg.runtime_dir);
	secrets_sweep(sc, rows, n);
	free(rows);
	backend_sweep(sc);
}
