/*
 * records.c - one record per request, packed straight into the batch that
 * carries it to hk-events (lib/reqbatch.h, the form the store keeps):
 *
 *	{"op":"requests","packed":"<base64 of the batch>"}
 *
 * A datagram is sent from the loop's before-sleep hook once FLUSH_MS have
 * passed since its first record, or at once when the next record might
 * not fit.  No allocation and no jansson per request: the request log is
 * on the hot path of every request.  Packed, a record is about 27 bytes
 * (36 in base64) where its JSON was 230: writing it costs the gateway
 * less, and reading it costs hk-events a third of what parsing the JSON
 * did.  A record has no query string, header values or body.  Records
 * that hk-events does not take (absent, slow, full) are dropped and
 * counted, never queued.
 */
#include <string.h>

#include "activate.h"
#include "b64.h"
#include "evsink.h"
#include "log.h"
#include "reqbatch.h"

#define PACKED_MAX	49152	/* 64 KiB in base64 */
#define REC_WORST	1024	/* the most bytes a record packs to */
#define FLUSH_MS	100

/* Seven varints, and the strings with a length each. */
_Static_assert(sizeof(((struct conn *)NULL)->client) <= STORE_CLIENT_MAX + 1,
    "a client address longer than the log keeps");
_Static_assert(14 * 10 + SVC_ID_MAX + 16 + REC_HOST_MAX + REC_PATH_MAX +
    32 + 64 < REC_WORST, "REC_WORST too small");

static const char head[] = REQBATCH_MSG_HEAD;
static const char tail[] = REQBATCH_MSG_TAIL;

/* The batch being filled; records_flush() sends it. */
static struct {
	struct reqbatch_build	 b;	/* pos.len 0: not yet initialized */
	char			 out[sizeof(head) + B64_LEN(PACKED_MAX) +
				     sizeof(tail)];
	int64_t			 first_at;	/* loop ms of the first */
	uint64_t		 dropped;
	struct loop_timer	 timer;		/* wakes the loop to flush */
} batch;

static void	flush_due(struct loop *, void *);
static void	record_of(const struct conn *, const char *, int64_t,
		    struct reqbatch_rec *);
static void	set(struct reqbatch_rec *, int, const char *, size_t);
static void	send_batch(void);

/* Nothing to do: the before-sleep hook that follows flushes. */
static void
flush_due(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
}

static void
set(struct reqbatch_rec *r, int i, const char *s, size_t len)
{
	r->s[i] = s;
	r->len[i] = len;
}

/* The record of a request, its strings pointing into c. */
static void
record_of(const struct conn *c, const char *outcome, int64_t now_us,
    struct reqbatch_rec *r)
{
	const char *id, *slash;

	set(r, RB_APP, "", 0);
	set(r, RB_SERVICE, "", 0);	/* an unknown host */
	if (c->svc != NULL && (slash = strchr(id = c->svc->id, '/')) != NULL) {
		set(r, RB_APP, id, (size_t)(slash - id));
		set(r, RB_SERVICE, slash + 1, strlen(slash + 1));
	}
	set(r, RB_METHOD, c->method, strlen(c->method));
	set(r, RB_HOST, c->host, strlen(c->host));
	set(r, RB_PATH, c->path, strlen(c->path));
	set(r, RB_OUTCOME, outcome, strlen(outcome));
	set(r, RB_CLIENT, c->client, strlen(c->client));
	r->at = c->at_ms;
	r->num[RB_STATUS] = c->status;
	r->num[RB_DURATION_US] = now_us - c->t_start_us;
	r->num[RB_WAIT_US] = c->wait_us + (c->t_park_us != 0 ?
	    now_us - c->t_park_us : 0);
	r->num[RB_WAKE_ID] = c->wake_id;
	r->num[RB_BYTES_IN] = (int64_t)c->bytes_in;
	r->num[RB_BYTES_OUT] = (int64_t)c->bytes_out;
}

void
records_add(const struct conn *c, const char *outcome)
{
	struct reqbatch_rec r;
	char err[96];

	/* A proxy's health checks (LOCAL) are no client's requests. */
	if (!gw->cfg.request_log || c->proxy_local)
		return;
	if (batch.b.pos.len == 0)
		reqbatch_build_init(&batch.b);
	if (batch.b.pos.len > PACKED_MAX - REC_WORST)
		send_batch();
	if (batch.b.pos.n == 0) {
		batch.first_at = loop_now_ms(gw->loop);
		loop_timer_init(&batch.timer, flush_due, NULL);
		loop_timer_at(gw->loop, &batch.timer,
		    batch.first_at + FLUSH_MS);
	}
	record_of(c, outcome, loop_clock_us(), &r);
	if (reqbatch_add(&batch.b, &r, err, sizeof(err)) == -1) {
		batch.dropped++;
		log_debug("request record dropped: %s", err);
	}
}

static void
send_batch(void)
{
	struct reqbatch v;
	size_t len;

	if (batch.b.pos.n == 0)
		return;
	reqbatch_view(&batch.b, &v);
	memcpy(batch.out, head, sizeof(head) - 1);
	len = sizeof(head) - 1;
	len += b64_encode(v.buf, v.len, batch.out + len);
	memcpy(batch.out + len, tail, sizeof(tail) - 1);
	len += sizeof(tail) - 1;
	if (evsink_send_raw(gw->ev, batch.out, len) == -1)
		batch.dropped += v.n;
	reqbatch_build_clear(&batch.b);
	loop_timer_cancel(gw->loop, &batch.timer);
}

/* From the before-sleep hook; force sends whatever waits (at exit). */
void
records_flush(int force)
{
	if (batch.b.pos.n == 0 || (!force &&
	    loop_now_ms(gw->loop) - batch.first_at < FLUSH_MS))
		return;
	send_batch();
}

uint64_t
records_dropped(void)
{
	return batch.dropped;
}
