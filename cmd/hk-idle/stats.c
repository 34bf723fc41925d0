/*
 * stats.c - hk-idle's metrics (all of them listed in hakopod.toml(5)):
 * the fences it asked of the gateway and how they ended, the answers to
 * idle_check, on the private listener of [metrics] idle.
 */
#include <sysexits.h>

#include "idle.h"
#include "log.h"

static const char *const results[FENCE_RESULTS] = {
	[FENCE_GRANTED] = "granted",
	[FENCE_REFUSED] = "refused",
	[FENCE_FAILED] = "failed",
};

static void	collect(struct metrics_out *, void *);

void
stats_listen(struct idle *ix)
{
	const char *addr = config_metrics_listen(&ix->cfg, METRICS_IDLE);
	char err[256];
	int bad;

	if (*addr == '\0')
		return;
	if ((ix->metrics = metrics_listen(ix->loop, addr, collect, ix, err,
	    sizeof(err), &bad)) == NULL)
		fatalx(bad ? EX_CONFIG : EX_OSERR, "metrics.idle: unable "
		    "to listen: %s", err);
	log_info("metrics on %s", addr);
}

void
stats_close(struct idle *ix)
{
	metrics_close(ix->metrics);
	ix->metrics = NULL;
}

static void
collect(struct metrics_out *o, void *arg)
{
	struct idle *ix = arg;
	const char *l[] = { "result", NULL, NULL };
	size_t i;

	metrics_family(o, "hk_fences_total", "counter", "Fences asked of the "
	    "gateway, by result: granted (the service sleeps), refused (it "
	    "was not idle), failed (no answer).");
	for (i = 0; i < FENCE_RESULTS; i++) {
		l[1] = results[i];
		metrics_u64(o, "hk_fences_total", l, ix->m_fences[i]);
	}
	metrics_family(o, "hk_idle_checks_total", "counter", "Answers to "
	    "idle_check, by result: idle (2xx), busy (another status), "
	    "timeout (no answer: counted busy), unreachable (counted idle).");
	for (i = 0; i < CHECK_RESULTS; i++) {
		l[1] = check_result_name((enum check_result)i);
		metrics_u64(o, "hk_idle_checks_total", l, ix->m_checks[i]);
	}
}
