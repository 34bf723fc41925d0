/*
 * backend.c - what every backend shares, as OpenSMTPD's table.c is to its
 * table_*.c: the list of backends, and the life of an instance around its
 * backend's operations (struct backend in scale.h).
 *
 * The state machine asks through inst_*(): start, stop (gracefully, then
 * killed when the grace period is over: the timer is ours), kill, retire
 * (the instance is no longer its service's, and goes once stopped),
 * hand over its output, free it.  A backend answers through backend_*():
 * started, failed, ready, exited, adopted, released; an instance that is
 * no longer its service's is stopped or freed here, and the rest goes to
 * service.c and instance_store.c.  A new backend is one file, one line
 * below and one in lib/config.c's table of what each kind can do.
 *
 * A backend may answer later than it is asked (an engine's answer comes
 * over the loop): a stop may then come while the start is under way, and
 * what is left of an instance (a stopped container) may go after the
 * instance is freed.  Such an instance stays on scale.insts, no longer
 * any service's, until its backend says it is released, so that hk-scale
 * stops only once nothing of its instances is left behind.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "scale.h"

static void	kill_fire(struct loop *, void *);
static void	inst_destroy(struct inst *);
static int	inst_secrets(struct inst *, char *, size_t);

/* By kind: what each can do is lib/config.c's table (config.h). */
static const struct backend *const backends[] = {
	[BACKEND_EXEC] =	&backend_exec,
	[BACKEND_CONTAINER] =	&backend_container,
	[BACKEND_S6] =		&backend_s6,
	[BACKEND_SYSTEMD] =	&backend_systemd,
	[BACKEND_KUBERNETES] =	&backend_kubernetes,
};
_Static_assert(sizeof(backends) / sizeof(backends[0]) == BACKEND_COUNT,
    "backends[]: one for each kind of lib/config.c");

/* The backend of that kind, if this build has it. */
const struct backend *
backend_find(enum backend_kind kind)
{
	if ((unsigned)kind >= BACKEND_COUNT ||
	    !config_backend_available(kind))
		return NULL;
	return backends[kind];
}

/* The backend of s's instances, if this build has it. */
const struct backend *
backend_of(const struct service *s)
{
	return backend_find(s->def.spec.backend);
}

/*
 * For a backend that finds what an earlier run left (s6's directories):
 * 1 if revision is the current one of the service called id, or the
 * one that serves while it has not passed its gate (release.c), that
 * service's instances run on be, and it wants as many as replica + 1
 * (replica.c); else what is left may go.
 */
int
backend_current(struct scale *sc, const char *id, const struct backend *be,
    int64_t revision, int replica)
{
	struct service *s = service_find(sc, id);

	return s != NULL && (s->def.revision == revision ||
	    s->good.revision == revision) && backend_of(s) == be &&
	    replica >= 0 && replica < replica_wanted(s);
}

/* 1 if be can do all of caps (BACKEND_* of config.h). */
int
backend_can(const struct backend *be, unsigned caps)
{
	return config_backend_can(be->kind, caps);
}

/*
 * Start-up, before the store's rows are read: each backend sets up what
 * it keeps (exec: its freezer).  -1 with err if one cannot.
 */
int
backends_setup(struct scale *sc, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->setup != NULL &&
		    backends[i]->setup(sc, err, errlen) == -1)
			return -1;
	return 0;
}

/* The end, once every instance has gone: what each backend kept goes. */
void
backends_teardown(struct scale *sc)
{
	size_t i;

	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->teardown != NULL)
			backends[i]->teardown(sc);
}

/* Start-up: the rows are handed out; each backend may look further. */
void
backends_init(struct scale *sc)
{
	size_t i;

	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->init != NULL)
			backends[i]->init(sc);
}

/*
 * The loop is over (SIGTERM, or its deadline): every backend drops what
 * is under way, and every instance goes, released or not.
 */
void
inst_teardown(struct scale *sc)
{
	struct inst *in;
	size_t i;

	sc->stopping = 2;
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->shutdown != NULL)
			backends[i]->shutdown(sc);
	while ((in = TAILQ_FIRST(&sc->insts)) != NULL) {
		if (!in->releasing)
			inst_free(in);
		else
			inst_destroy(in);
	}
}

struct inst *
inst_new(struct scale *sc, const char *id, const struct backend *be)
{
	struct inst *in;

	if ((in = calloc(1, sizeof(*in))) == NULL)
		return NULL;
	in->sc = sc;
	in->be = be;
	strlcpy(in->id, id, sizeof(in->id));
	strlcpy(in->what, "instance", sizeof(in->what));
	strlcpy(in->node, sc->node, sizeof(in->node));
	in->notifyfd = in->probefd = in->conn_fd = in->probe_tfd = -1;
	loop_timer_init(&in->kill_timer, kill_fire, in);
	loop_timer_init(&in->replica_deadline, replica_deadline, in);
	TAILQ_INSERT_TAIL(&sc->insts, in, entry);
	return in;
}

/*
 * What an earlier hk-scale's row r describes, in has its revision,
 * endpoint and times: its backend looks, then backend_adopted().
 */
void
inst_adopt(struct inst *in, const struct store_instance *r)
{
	scale_fence(in->sc);
	in->be->adopt(in, r);
}

/*
 * The secrets of the instance written out for the user that reads them,
 * before its backend starts it.  As variables only with exec (and
 * kubernetes, whose Secret is the cluster's: k8s_pod.c): hk validate
 * refuses the others, and so do we, should the store say otherwise.
 */
static int
inst_secrets(struct inst *in, char *err, size_t errlen)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	struct user_ids u;
	int sw;

	/* kubernetes: a Secret in the cluster, no file here (k8s_secret.c) */
	if (sp->nsecrets == 0 || backend_can(in->be, BACKEND_IMAGE_ONLY))
		return 0;
	if (sp->secrets_env && !backend_can(in->be, BACKEND_SECRETS_ENV)) {
		snprintf(err, errlen, "secrets_env: not supported with "
		    "backend \"%s\"", config_backend_name(in->be->kind));
		return -1;
	}
	if (in->be->cred_user != NULL) {
		if (in->be->cred_user(in, &u, err, errlen) == -1)
			return -1;
	} else if (command_user(in->sc, sp, &u, &sw, err, errlen) == -1)
		return -1;
	return secrets_prepare(in, &u, err, errlen);
}

/*
 * Before each act on an instance: a host that no longer leads (its
 * lease has a newer epoch, leader.h) starts, stops, adopts and sweeps
 * nothing; the fence's handler ends hk-scale.  A store that cannot say
 * stops nothing here: the lease's TTL bounds such an outage.
 */
void
scale_fence(struct scale *sc)
{
	if (store_fence_check(sc->store) == -1)
		log_warnx("unable to check the lease: %s",
		    store_error(sc->store));
}

/* The outcome comes through backend_started() or backend_failed(). */
void
inst_start(struct inst *in)
{
	struct service_spec *sp = &inst_def(in)->spec;
	char err[SRCTREE_ERR_LEN + 64];

	in->started_at = store_now_ms();
	in->start_mono = loop_now_ms(in->sc->loop);
	if (sp->code_hash != NULL)
		strlcpy(in->code_hash, sp->code_hash, sizeof(in->code_hash));
	/* Written at reload; again here if it went (or failed then). */
	if (source_prepare(in->sc, sp, err, sizeof(err)) == -1 ||
	    inst_secrets(in, err, sizeof(err)) == -1) {
		backend_failed(in, err);
		return;
	}
	scale_fence(in->sc);
	in->be->start(in);
}

/*
 * Gracefully; killed when the grace period is over.  The timer is armed
 * first: a backend's stop may end the instance at once (kubernetes, with
 * nothing left to wait for), and in is freed then.
 */
void
inst_stop(struct inst *in)
{
	struct scale *sc = in->sc;

	if (in->stopping || in->releasing)
		return;
	scale_fence(sc);
	in->stopping = 1;
	probe_stop(in);
	log_info("service=%s: stopping %s", in->id, in->what);
	loop_timer_at(sc->loop, &in->kill_timer,
	    loop_now_ms(sc->loop) + (int64_t)sc->grace * 1000);
	in->be->stop(in);
}

/* idle_action = "suspend": backend_frozen() follows. */
void
inst_freeze(struct inst *in)
{
	if (in->stopping || in->releasing || in->freezing || in->frozen)
		return;
	in->freezing = 1;
	probe_stop(in);
	log_info("service=%s: freezing %s", in->id, in->what);
	in->be->freeze(in);
}

/* A frozen instance runs again: backend_thawed() follows. */
void
inst_thaw(struct inst *in)
{
	if (!in->frozen || in->thawing || in->stopping || in->releasing)
		return;
	in->thawing = 1;
	in->be->thaw(in);
}

/* Whether in's backend can freeze it (idle_action = "suspend"). */
int
inst_can_suspend(const struct inst *in)
{
	return backend_can(in->be, BACKEND_SUSPENDS);
}

void
inst_kill(struct inst *in)
{
	if (in->releasing)
		return;
	scale_fence(in->sc);
	in->stopping = 1;
	probe_stop(in);
	in->be->kill(in);
}

static void
kill_fire(struct loop *l, void *arg)
{
	struct inst *in = arg;

	(void)l;
	log_warnx("service=%s: %s still there after %d s: killing", in->id,
	    in->what, in->sc->grace);
	inst_kill(in);
}

/* The instance no longer belongs to its service; it is freed once gone. */
void
inst_retire(struct inst *in)
{
	loop_timer_cancel(in->sc->loop, &in->replica_deadline);
	queue_settle(in);
	in->svc = NULL;
	in->in_store = 0;
	inst_stop(in);
}

void
inst_handover(struct inst *in)
{
	if (in->be->handover != NULL)
		in->be->handover(in);
}

void
inst_row(const struct inst *in, struct store_instance *r)
{
	if (in->be->row != NULL)
		in->be->row(in, r);
}

/*
 * SIGCHLD: every child that exited, given to the backend whose it is;
 * output relays and strangers (we are a subreaper) are no one's.
 */
void
inst_reap(struct scale *sc)
{
	struct inst *in;
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		TAILQ_FOREACH(in, &sc->insts, entry)
			if (in->be->reap != NULL &&
			    in->be->reap(in, pid, status))
				break;
		if (in == NULL)
			log_debug("reaped pid %ld", (long)pid);
	}
}

/*
 * Nothing of in runs, or it is no longer watched: its backend releases
 * what is left, now or later (backend_released()).
 */
void
inst_free(struct inst *in)
{
	struct scale *sc = in->sc;

	if (in->releasing)
		return;
	probe_stop(in);
	loop_timer_cancel(sc->loop, &in->kill_timer);
	loop_timer_cancel(sc->loop, &in->replica_deadline);
	loop_timer_cancel(sc->loop, &in->row_timer);
	queue_settle(in);
	in->svc = NULL;
	in->in_store = 0;
	in->releasing = 1;
	if (in->be->release != NULL && in->be->release(in) == 1)
		return;
	inst_destroy(in);
}

static void
inst_destroy(struct inst *in)
{
	struct scale *sc = in->sc;
	int had_code = in->code_hash[0] != '\0';

	/* At teardown what still runs keeps its secrets (it may be read). */
	if (sc->stopping != 2)
		secrets_remove(in);
	TAILQ_REMOVE(&sc->insts, in, entry);
	free(in);
	if (had_code && !sc->stopping)
		source_sweep(sc);	/* its tree may be unused now */
	if (sc->stopping == 1 && TAILQ_EMPTY(&sc->insts))
		loop_stop(sc->loop);
}

/* It runs at in->endpoint.  One no longer wanted is stopped. */
void
backend_started(struct inst *in)
{
	if (in->svc == NULL)
		inst_stop(in);
	else if (!in->stopping)
		service_inst_started(in);
}

/*
 * Nothing runs; why says why.  An instance being stopped meanwhile is
 * simply gone.
 */
void
backend_failed(struct inst *in, const char *why)
{
	if (in->svc == NULL)
		inst_free(in);
	else if (in->stopping)
		backend_exited(in, -1, NULL);
	else
		service_inst_failed(in, why);
}

/* The backend's own sign of readiness ("socket": the exec happened). */
void
backend_ready(struct inst *in)
{
	if (in->svc != NULL && !in->ready && !in->stopping)
		service_inst_ready(in);
}

/*
 * It is gone: status is a wait status, -1 unknown; last, its last line
 * of output or NULL.
 */
void
backend_exited(struct inst *in, int status, const char *last)
{
	probe_stop(in);
	loop_timer_cancel(in->sc->loop, &in->kill_timer);
	if (in->svc != NULL)
		service_inst_exit(in, status, last);
	else
		inst_free(in);
}

void
backend_adopted(struct inst *in, int alive)
{
	adopt_done(in, alive);
}

/*
 * The freeze is over: frozen, or not (why says why, and it runs on).
 * One stopped meanwhile is the stop's.
 */
void
backend_frozen(struct inst *in, const char *why)
{
	if (!in->freezing)
		return;
	in->freezing = 0;
	in->frozen = why == NULL;
	if (why == NULL)
		in->frozen_mono = loop_now_ms(in->sc->loop);
	if (in->svc != NULL && !in->stopping)
		service_inst_frozen(in, why);
}

/* The thaw is over: it runs again, or it could not (why). */
void
backend_thawed(struct inst *in, const char *why)
{
	if (!in->thawing)
		return;
	in->thawing = 0;
	if (why == NULL)
		in->frozen = 0;
	if (in->svc != NULL && !in->stopping)
		service_inst_thawed(in, why);
}

/* What inst_free() left to its backend is gone: so is the instance. */
void
backend_released(struct inst *in)
{
	if (in->releasing)
		inst_destroy(in);
}

/* After adoption: each backend stops what no row described. */
void
backend_sweep(struct scale *sc)
{
	size_t i;

	scale_fence(sc);
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->sweep != NULL)
			backends[i]->sweep(sc);
}
