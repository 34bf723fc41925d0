/*
 * stats.c - hk-jobs' metrics (all of them listed in hakopod.toml(5)):
 * runs by the phase they ended in, and runs in flight, on the private
 * listener of [metrics] jobs.
 */
#include <sysexits.h>

#include "jobs.h"
#include "log.h"

static void	collect(struct metrics_out *, void *);

void
stats_listen(struct jobs *jx)
{
	const char *addr = config_metrics_listen(&jx->cfg, METRICS_JOBS);
	char err[256];
	int bad;

	if (*addr == '\0')
		return;
	if ((jx->metrics = metrics_listen(jx->loop, addr, collect, jx, err,
	    sizeof(err), &bad)) == NULL)
		fatalx(bad ? EX_CONFIG : EX_OSERR, "metrics.jobs: unable "
		    "to listen: %s", err);
	log_info("metrics on %s", addr);
}

void
stats_close(struct jobs *jx)
{
	metrics_close(jx->metrics);
	jx->metrics = NULL;
}

static void
collect(struct metrics_out *o, void *arg)
{
	static const enum run_phase ended[] = { RUN_SUCCEEDED, RUN_FAILED,
	    RUN_SKIPPED };
	struct jobs *jx = arg;
	const char *l[] = { "phase", NULL, NULL };
	struct run *r;
	uint64_t n = 0;
	size_t i;

	metrics_family(o, "hk_runs_total", "counter",
	    "Runs ended, by the phase they ended in.");
	for (i = 0; i < sizeof(ended) / sizeof(ended[0]); i++) {
		l[1] = run_phase_name(ended[i]);
		metrics_u64(o, "hk_runs_total", l, jx->m_ended[ended[i]]);
	}
	TAILQ_FOREACH(r, &jx->runs, entry)
		n++;
	metrics_family(o, "hk_runs_in_flight", "gauge",
	    "Runs pending or running.");
	metrics_u64(o, "hk_runs_in_flight", NULL, n);
}
