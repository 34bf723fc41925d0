/*
 * stats.c - hk-scale's metrics (all of them listed in hakopod.toml(5)):
 * starts and their failures by service, where a start's time went, and
 * services and instances by state, on the private listener of [metrics]
 * scale.  Counting is a field increment in service.c; the states are
 * counted only when a scraper asks.
 */
#include <stddef.h>
#include <sysexits.h>

#include "log.h"
#include "scale.h"

/* A start's phases, one after the other: their sum is the whole. */
enum { PH_QUEUE, PH_SPAWN, PH_PORT, PH_READY };
static const char *const phases[STATS_PHASES] = { "queue", "spawn", "port",
    "ready" };
static const char *const inst_states[] = { "starting", "running",
    "stopping", "frozen" };

static void	collect(struct metrics_out *, void *);
static void	collect_states(struct metrics_out *, struct scale *);
static void	per_service(struct metrics_out *, struct scale *, const char *,
		    const char *, size_t);

void
stats_listen(struct scale *sc)
{
	const char *addr = config_metrics_listen(&sc->cfg, METRICS_SCALE);
	char err[256];
	size_t i;
	int bad;

	for (i = 0; i < STATS_PHASES; i++)
		metrics_hist_init(&sc->m_phase[i], metrics_wait_bounds_us,
		    metrics_wait_nbounds);
	metrics_hist_init(&sc->m_ready, metrics_wait_bounds_us,
	    metrics_wait_nbounds);
	if (*addr == '\0')
		return;
	if ((sc->metrics = metrics_listen(sc->loop, addr, collect, sc, err,
	    sizeof(err), &bad)) == NULL)
		fatalx(bad ? EX_CONFIG : EX_OSERR, "metrics.scale: unable "
		    "to listen: %s", err);
	log_info("metrics on %s", addr);
}

void
stats_close(struct scale *sc)
{
	metrics_close(sc->metrics);
	sc->metrics = NULL;
}

/*
 * in is ready: queue (the wake to a start slot, woken starts only), spawn
 * (the slot to the backend's "started"), port (to a probe's first
 * connection, when a probe connects), ready (to the probe's success),
 * and the whole, from the wake or else the start.  An adopted instance
 * was not started by us: nothing.
 */
void
stats_ready(struct service *s, struct inst *in)
{
	struct scale *sc = s->sc;
	int64_t now = loop_now_ms(sc->loop);
	int woken = s->wake_reason[0] != '\0' && s->wake_mono <= in->start_mono;

	if (in->spawned_mono == 0)
		return;
	if (woken)
		metrics_hist_observe(&sc->m_phase[PH_QUEUE],
		    (in->start_mono - s->wake_mono) * 1000);
	metrics_hist_observe(&sc->m_phase[PH_SPAWN],
	    (in->spawned_mono - in->start_mono) * 1000);
	if (in->port_mono >= in->spawned_mono) {
		metrics_hist_observe(&sc->m_phase[PH_PORT],
		    (in->port_mono - in->spawned_mono) * 1000);
		metrics_hist_observe(&sc->m_phase[PH_READY],
		    (now - in->port_mono) * 1000);
	} else
		metrics_hist_observe(&sc->m_phase[PH_READY],
		    (now - in->spawned_mono) * 1000);
	metrics_hist_observe(&sc->m_ready,
	    (now - (woken ? s->wake_mono : in->start_mono)) * 1000);
}

static void
collect_states(struct metrics_out *o, struct scale *sc)
{
	static const enum svc_state all[] = { SVC_SLEEPING, SVC_STARTING,
	    SVC_RUNNING, SVC_DRAINING, SVC_STOPPED, SVC_FAILED,
	    SVC_SUSPENDED };
	const char *l[] = { "state", NULL, NULL };
	struct service *s;
	struct inst *in;
	uint64_t n[7] = { 0 }, ni[4] = { 0 };
	size_t i;

	TAILQ_FOREACH(s, &sc->services, entry)
		n[s->state]++;
	TAILQ_FOREACH(in, &sc->insts, entry)
		ni[in->stopping ? 2 : in->frozen ? 3 : in->ready ? 1 : 0]++;
	metrics_family(o, "hk_services", "gauge", "Services by state.");
	for (i = 0; i < 7; i++) {
		l[1] = service_state_name(all[i]);
		metrics_u64(o, "hk_services", l, n[all[i]]);
	}
	metrics_family(o, "hk_instances", "gauge", "Instances by state.");
	for (i = 0; i < 4; i++) {
		l[1] = inst_states[i];
		metrics_u64(o, "hk_instances", l, ni[i]);
	}
}

/* A counter family of one uint64_t field of every service, at off. */
static void
per_service(struct metrics_out *o, struct scale *sc, const char *name,
    const char *help, size_t off)
{
	const char *l[] = { "service", NULL, NULL };
	struct service *s;

	metrics_family(o, name, "counter", help);
	TAILQ_FOREACH(s, &sc->services, entry) {
		l[1] = s->def.id;
		metrics_u64(o, name, l, *(const uint64_t *)(const void *)
		    ((const char *)s + off));
	}
}

static void
collect(struct metrics_out *o, void *arg)
{
	struct scale *sc = arg;
	const char *lp[] = { "phase", NULL, NULL };
	size_t i;

	per_service(o, sc, "hk_starts_total",
	    "Starts of an instance, by service.",
	    offsetof(struct service, m_starts));
	per_service(o, sc, "hk_start_failures_total",
	    "Starts that failed (StartFailed), by service.",
	    offsetof(struct service, m_start_failures));
	per_service(o, sc, "hk_suspends_total",
	    "Instances frozen when idle (idle_action = \"suspend\"), by "
	    "service.", offsetof(struct service, m_suspends));
	per_service(o, sc, "hk_resumes_total",
	    "Frozen instances thawed by a wake, by service.",
	    offsetof(struct service, m_resumes));
	metrics_family(o, "hk_start_phase_seconds", "histogram",
	    "A start's phases: queue (wake to start slot), spawn (to "
	    "running), ready (to readiness).");
	for (i = 0; i < STATS_PHASES; i++) {
		lp[1] = phases[i];
		metrics_hist(o, "hk_start_phase_seconds", lp, &sc->m_phase[i]);
	}
	metrics_family(o, "hk_start_ready_seconds", "histogram",
	    "Time to ready, from the wake (or the start when not woken).");
	metrics_hist(o, "hk_start_ready_seconds", NULL, &sc->m_ready);
	collect_states(o, sc);
	pool_metrics(o);
}
