/*
 * records.c - one record per request, kept in a fixed array (no allocation
 * per request) and sent to hk-events in batches from the loop's
 * before-sleep hook: every FLUSH_MS or REC_BATCH records, as
 * {"op":"requests","records":[...]} datagrams of at most REC_PER_MSG
 * records each.  A record has no query string, header values or body.
 * Records that do not fit, or that evsink drops, are counted.
 */
#include <string.h>

#include <jansson.h>

#include "activate.h"
#include "evsink.h"
#include "log.h"

#define REC_MAX		1024	/* kept between flushes */
#define REC_BATCH	256	/* flush at once when this many wait */
#define REC_PER_MSG	64	/* in one datagram (< IPC_MSG_MAX) */
#define FLUSH_MS	100

struct rec {
	int64_t		 at;
	int64_t		 duration_us;
	int64_t		 wait_us;
	uint64_t	 bytes_in;
	uint64_t	 bytes_out;
	int		 status;
	const char	*outcome;
	char		 service[SVC_ID_MAX + 1];
	char		 method[16];
	char		 host[REC_HOST_MAX + 1];
	char		 path[REC_PATH_MAX + 1];
};

static struct rec recs[REC_MAX];
static size_t	nrecs;
static int64_t	first_at;	/* loop ms of the oldest record */
static uint64_t	overflow;

static struct loop_timer flush_timer;	/* wakes the loop to flush */

static json_t	*rec_json(const struct rec *);
static void	flush_due(struct loop *, void *);

/* Nothing to do: the before-sleep hook that follows flushes. */
static void
flush_due(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
}

void
records_add(const struct conn *c, const char *outcome)
{
	struct rec *r;

	if (!gw->cfg.request_log)
		return;
	if (nrecs == REC_MAX) {
		overflow++;
		return;
	}
	if (nrecs == 0) {
		first_at = loop_now_ms(gw->loop);
		loop_timer_init(&flush_timer, flush_due, NULL);
		loop_timer_at(gw->loop, &flush_timer, first_at + FLUSH_MS);
	}
	r = &recs[nrecs++];
	r->at = c->at_ms;
	r->duration_us = loop_clock_us() - c->t_start_us;
	r->wait_us = c->wait_us + (c->t_park_us != 0 ?
	    loop_clock_us() - c->t_park_us : 0);
	r->bytes_in = c->bytes_in;
	r->bytes_out = c->bytes_out;
	r->status = c->status;
	r->outcome = outcome;
	strlcpy(r->service, c->svc != NULL ? c->svc->id : "",
	    sizeof(r->service));
	strlcpy(r->method, c->method, sizeof(r->method));
	strlcpy(r->host, c->host, sizeof(r->host));
	strlcpy(r->path, c->path, sizeof(r->path));
}

static json_t *
rec_json(const struct rec *r)
{
	return json_pack("{s:I, s:s?, s:s, s:s, s:s, s:i, s:I, s:I, s:I, "
	    "s:I, s:s}", "at", (json_int_t)r->at,
	    "service", r->service[0] ? r->service : NULL,
	    "method", r->method, "host", r->host, "path", r->path,
	    "status", r->status, "duration_us", (json_int_t)r->duration_us,
	    "wait_us", (json_int_t)r->wait_us,
	    "bytes_in", (json_int_t)r->bytes_in,
	    "bytes_out", (json_int_t)r->bytes_out, "outcome", r->outcome);
}

/* From the before-sleep hook; force sends whatever waits (at exit). */
void
records_flush(int force)
{
	json_t *msg, *list, *o;
	size_t i, k, n;

	if (nrecs == 0 || (!force && nrecs < REC_BATCH &&
	    loop_now_ms(gw->loop) - first_at < FLUSH_MS))
		return;
	for (i = 0; i < nrecs; i += REC_PER_MSG) {
		list = json_array();
		msg = json_pack("{s:s, s:o}", "op", "requests", "records",
		    list);
		n = nrecs - i < REC_PER_MSG ? nrecs - i : REC_PER_MSG;
		for (k = i; msg != NULL && k < i + n; k++)
			if ((o = rec_json(&recs[k])) == NULL ||
			    json_array_append_new(list, o) == -1)
				overflow++;
		if (msg == NULL || evsink_send(gw->ev, msg) == -1)
			overflow += n;
		json_decref(msg);
	}
	nrecs = 0;
	loop_timer_cancel(gw->loop, &flush_timer);
}

uint64_t
records_dropped(void)
{
	return overflow;
}
