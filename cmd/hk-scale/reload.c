/*
 * reload.c - the services as the store has them: read at start-up, on
 * SIGHUP and on reload, stop and start requests.  New services are added,
 * changed revisions replace the old, removed services are stopped (down
 * "removed"), and every service then converges (service.c).  When a spec
 * cannot be decoded nothing is removed that time: the service may still
 * be there.  Also the orderly exit on SIGTERM.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "notify.h"
#include "scale.h"

static void	update(struct service *, struct svc *);
static void	stop_fire(struct loop *, void *);
static int	reload_retry(void *);

static void
update(struct service *s, struct svc *nw)
{
	int rescale;

	if (nw->revision == s->def.revision) {
		s->def.desired = nw->desired;
		return;
	}
	rescale = replica_rescale(s, nw);
	if (!rescale)
		log_info("service=%s: revision %lld -> %lld", s->def.id,
		    (long long)s->def.revision, (long long)nw->revision);
	spec_clear(&s->def.spec);
	s->def = *nw;
	memset(&nw->spec, 0, sizeof(nw->spec));
	if (rescale) {
		/* what runs is the new revision: it has passed its gate */
		s->gated = 1;
		release_mark(s, s->def.revision, "passed", NULL);
	} else
		s->gated = gate_passed(s->sc, &s->def);
	release_load(s);
	s->gate_tried = 0;
	s->fail_backoff = 0;
	s->retry_at = 0;
}

static int
reload_retry(void *arg)
{
	return scale_reload(arg, 1);
}

/*
 * Reads the services again; one the store refused (it was away: a
 * PostgreSQL restart) is made again until it succeeds (lib/retry.h), the
 * services as they were going on meanwhile.
 */
int
scale_reload(struct scale *sc, int converge)
{
	struct service *s, *tmp;
	struct svc *all;
	char err[STORE_ERR_LEN + SPEC_ERR_LEN], why[SRCTREE_ERR_LEN + 64];
	size_t n, i;
	int partial;

	if (spec_load_all(sc->store, &all, &n, err, sizeof(err)) == -1) {
		log_warnx("unable to read services: %s", err);
		if (converge) {		/* at start, hk-scale exits instead */
			if (sc->reload_retry.fn == NULL)
				retry_init(&sc->reload_retry, sc->loop,
				    reload_retry, sc, "services");
			retry_later(&sc->reload_retry);
		}
		return -1;
	}
	if ((partial = err[0] != '\0'))
		log_warnx("service=%s: skipped, nothing removed", err);
	TAILQ_FOREACH(s, &sc->services, entry)
		s->seen = 0;
	pool_load(sc, NULL, 0);
	for (i = 0; i < n; i++) {
		/* Before the first wake: a cold start does not wait for it. */
		if (source_prepare(sc, &all[i].spec, why, sizeof(why)) == -1)
			log_warnx("service=%s: %s", all[i].id, why);
		pool_load(sc, &all[i].spec, 0);
		if ((s = service_find(sc, all[i].id)) != NULL)
			update(s, &all[i]);
		else if ((s = service_new(sc, &all[i])) != NULL)
			log_info("service=%s: revision %lld, %s", s->def.id,
			    (long long)s->def.revision,
			    service_state_name(s->state));
		else {
			log_warn("service=%s", all[i].id);
			continue;
		}
		s->seen = 1;
	}
	spec_free_all(all, n);
	if (!partial) {
		pool_load(sc, NULL, 1);
	}
	TAILQ_FOREACH_SAFE(s, &sc->services, entry, tmp) {
		if (s->removed || s->seen || partial)
			continue;
		log_info("service=%s: removed", s->def.id);
		s->removed = 1;
		gate_mark(sc, &s->def, 0);	/* a new one must pass again */
		service_stop(s, "removed");
	}
	TAILQ_FOREACH_SAFE(s, &sc->services, entry, tmp)
		if (converge)
			service_converge(s);
	source_sweep(sc);
	return 0;
}

/*
 * SIGTERM: no more requests, every instance stopped within the grace
 * period; the loop ends when the last one is gone (or a little after the
 * grace period, whatever happens).
 */
void
scale_shutdown(struct scale *sc)
{
	struct service *s, *tmp;
	struct inst *in, *next;
	size_t n = 0;

	if (sc->stopping)
		return;
	sc->stopping = 1;
	notify_stopping();
	ctl_close(sc);
	TAILQ_FOREACH_SAFE(s, &sc->services, entry, tmp)
		if (s->inst != NULL || s->pending != NULL || s->queued ||
		    s->failed_row)
			service_stop(s, "stopped");
	/* a stop may end its instance at once: freed */
	TAILQ_FOREACH_SAFE(in, &sc->insts, entry, next) {
		inst_stop(in);
		n++;
	}
	if (TAILQ_EMPTY(&sc->insts)) {
		loop_stop(sc->loop);
		return;
	}
	log_info("stopping: waiting for %zu instances", n);
	loop_timer_init(&sc->stop_timer, stop_fire, sc);
	loop_timer_at(sc->loop, &sc->stop_timer, loop_now_ms(sc->loop) +
	    (int64_t)sc->grace * 1000 + 2000);
}

static void
stop_fire(struct loop *l, void *arg)
{
	(void)arg;
	log_warnx("instances still there after the grace period: exiting");
	loop_stop(l);
}
