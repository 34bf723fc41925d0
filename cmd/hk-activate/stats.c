/*
 * stats.c - the gateway's metrics (listed in hakopod.toml(5)): counted where
 * a request ends and where the gateway answers itself, each an increment
 * of a field of gw or of the service; read only when a scraper asks, on
 * the private listener of [metrics] activate.
 */
#include <string.h>
#include <sysexits.h>

#include "activate.h"
#include "evsink.h"
#include "log.h"

/* The answers counted by code; the rest are the backends' own. */
static const int codes[STATS_CODES] = { 400, 413, 429, 503, 504 };
static const char *const code_names[STATS_CODES] = {
	"400", "413", "429", "503", "504",
};
static const char *const classes[5] = {
	"1xx", "2xx", "3xx", "4xx", "5xx",
};

static void	collect(struct metrics_out *, void *);
static void	by_class(struct metrics_out *, const char *,
		    const uint64_t *);

void
stats_listen(void)
{
	const char *addr = config_metrics_listen(&gw->cfg, METRICS_ACTIVATE);
	char err[256];
	int bad;

	metrics_hist_init(&gw->m_wake_wait, metrics_wait_bounds_us,
	    metrics_wait_nbounds);
	metrics_hist_init(&gw->m_first_byte, metrics_wait_bounds_us,
	    metrics_wait_nbounds);
	if (*addr == '\0')
		return;
	if ((gw->metrics = metrics_listen(gw->loop, addr, collect, NULL, err,
	    sizeof(err), &bad)) == NULL)
		fatalx(bad ? EX_CONFIG : EX_OSERR, "metrics.activate: unable "
		    "to listen: %s", err);
	log_info("metrics on %s", addr);
}

void
stats_close(void)
{
	metrics_close(gw->metrics);
	gw->metrics = NULL;
}

/* A request ends (answered, forwarded or cut): by service and class. */
void
stats_request(const struct conn *c)
{
	int i = metrics_class_index(c->status);

	if (i != -1)
		(c->svc != NULL ? c->svc->m_requests : gw->m_unrouted)[i]++;
	if (c->cold)
		metrics_hist_observe(&gw->m_wake_wait, c->wait_us +
		    (c->t_park_us != 0 ? loop_clock_us() - c->t_park_us : 0));
}

/*
 * The head of a response has come for a request that joined a wake: the
 * first of that wake ends its cold start, from the wake to the service's
 * first byte (hk-activate(8)), recorded as the wake's last figure.
 */
void
stats_first_byte(struct conn *c)
{
	struct service *s = c->svc;
	int64_t ms;

	if (s == NULL || c->wake_id == 0 || c->wake_id != s->fb_wake_id)
		return;
	ms = loop_now_ms(gw->loop) - s->fb_from;
	s->fb_wake_id = 0;
	metrics_hist_observe(&gw->m_first_byte, ms * 1000);
	evsink_event(gw->ev, "HTTPWakeFirstByte", s->id, json_pack("{s:I, "
	    "s:I, s:i}", "wake_id", (json_int_t)c->wake_id, "first_byte_ms",
	    (json_int_t)ms, "status", c->status));
}

void
stats_answer(int status)
{
	size_t i;

	for (i = 0; i < STATS_CODES; i++)
		if (codes[i] == status)
			gw->m_answers[i]++;
}

/*
 * 2xx to 5xx always (a series that appears late breaks rate()), 1xx
 * (switching protocols) once seen.
 */
static void
by_class(struct metrics_out *o, const char *svc, const uint64_t *n)
{
	const char *l[] = { "service", svc, "code", NULL, NULL };
	size_t i;

	for (i = 0; i < 5; i++) {
		if (i == 0 && n[i] == 0)
			continue;
		l[3] = classes[i];
		metrics_u64(o, "hk_requests_total", l, n[i]);
	}
}

static void
collect(struct metrics_out *o, void *arg)
{
	struct service *s;
	const char *l[] = { "service", NULL, NULL };
	const char *lc[] = { "code", NULL, NULL };
	int64_t parked = 0;
	size_t i;

	(void)arg;
	metrics_family(o, "hk_requests_total", "counter", "Requests ended, "
	    "by service (\"\" for no known service) and status class.");
	by_class(o, "", gw->m_unrouted);
	RB_FOREACH(s, svc_tree, &gw->services)
		by_class(o, s->id, s->m_requests);
	metrics_family(o, "hk_requests_in_flight", "gauge",
	    "Requests admitted and not yet ended.");
	metrics_u64(o, "hk_requests_in_flight", NULL, gw->inflight);
	RB_FOREACH(s, svc_tree, &gw->services)
		parked += s->nparked;
	metrics_family(o, "hk_requests_parked", "gauge",
	    "Requests waiting for a cold start.");
	metrics_i64(o, "hk_requests_parked", NULL, parked);
	metrics_family(o, "hk_wake_wait_seconds", "histogram",
	    "Time a request waited for a cold start.");
	metrics_hist(o, "hk_wake_wait_seconds", NULL, &gw->m_wake_wait);
	metrics_family(o, "hk_wake_first_byte_seconds", "histogram",
	    "Time from a wake to the first response's head from the service.");
	metrics_hist(o, "hk_wake_first_byte_seconds", NULL,
	    &gw->m_first_byte);
	metrics_family(o, "hk_gateway_answers_total", "counter",
	    "Answers the gateway made itself, by status code.");
	for (i = 0; i < STATS_CODES; i++) {
		lc[1] = code_names[i];
		metrics_u64(o, "hk_gateway_answers_total", lc,
		    gw->m_answers[i]);
	}
	metrics_family(o, "hk_upstream_connect_failures_total", "counter",
	    "Connections to a service's instance that failed.");
	RB_FOREACH(s, svc_tree, &gw->services) {
		l[1] = s->id;
		metrics_u64(o, "hk_upstream_connect_failures_total", l,
		    s->m_connect_fail);
	}
	metrics_family(o, "hk_request_records_dropped_total", "counter",
	    "Request records hk-events did not take (absent, slow, full).");
	metrics_u64(o, "hk_request_records_dropped_total", NULL,
	    records_dropped());
}
