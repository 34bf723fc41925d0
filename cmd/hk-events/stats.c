/*
 * stats.c - hk-events' metrics (all of them listed in hakopod.toml(5)):
 * the counters it already keeps for its log lines (struct ev_stats), on
 * the private listener of [metrics] events.
 */
#include <sysexits.h>

#include "events.h"
#include "log.h"

static void	collect(struct metrics_out *, void *);

void
stats_listen(struct evd *d)
{
	const char *addr = config_metrics_listen(&d->cfg, METRICS_EVENTS);
	char err[256];
	int bad;

	if (*addr == '\0')
		return;
	if ((d->metrics = metrics_listen(d->loop, addr, collect, d, err,
	    sizeof(err), &bad)) == NULL)
		fatalx(bad ? EX_CONFIG : EX_OSERR, "metrics.events: unable "
		    "to listen: %s", err);
	log_info("metrics on %s", addr);
}

void
stats_close(struct evd *d)
{
	metrics_close(d->metrics);
	d->metrics = NULL;
}

static void
collect(struct metrics_out *o, void *arg)
{
	struct evd *d = arg;
	const char *l[] = { "kind", NULL, NULL };

	metrics_family(o, "hk_records_written_total", "counter",
	    "Records written to the store, by kind (event, request).");
	l[1] = "event";
	metrics_u64(o, "hk_records_written_total", l, d->st.events);
	l[1] = "request";
	metrics_u64(o, "hk_records_written_total", l, d->st.requests);
	metrics_family(o, "hk_records_dropped_total", "counter",
	    "Valid records dropped: too many waited for the store.");
	metrics_u64(o, "hk_records_dropped_total", NULL, d->st.dropped);
	metrics_family(o, "hk_records_refused_total", "counter",
	    "Records or datagrams refused: malformed, or from another uid.");
	l[1] = "malformed";
	l[0] = "reason";
	metrics_u64(o, "hk_records_refused_total", l, d->st.malformed);
	l[1] = "peer";
	metrics_u64(o, "hk_records_refused_total", l, d->st.refused);
	metrics_family(o, "hk_store_errors_total", "counter",
	    "Writes (kept and retried) and retention runs the store failed.");
	metrics_u64(o, "hk_store_errors_total", NULL, d->st.store_errors);
}
