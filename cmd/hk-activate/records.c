/*
 * records.c - one record per request, written as JSON straight into the
 * datagram that carries it to hk-events:
 *
 *	{"op":"requests","records":[{"at":MS,...},...]}
 *
 * A datagram is sent from the loop's before-sleep hook once FLUSH_MS have
 * passed since its first record, or at once when the next record might
 * not fit.  No allocation and no jansson per request: the request log is
 * on the hot path of every request, and building each record as a jansson
 * tree and dumping it cost the gateway a sixth of its CPU.  A record has
 * no query string, header values or body.  Records that hk-events does
 * not take (absent, slow, full) are dropped and counted, never queued.
 */
#include <string.h>

#include "activate.h"
#include "evsink.h"
#include "log.h"

#define DGRAM_SIZE	65536	/* well under IPC_MSG_MAX */
#define REC_WORST	2048	/* the longest record, with every byte escaped */
#define FLUSH_MS	100

/* Keys, seven integers, and the strings with every byte escaped. */
_Static_assert(200 + 7 * 20 + 2 * (SVC_ID_MAX + 16 + REC_HOST_MAX +
    REC_PATH_MAX + 32) < REC_WORST, "REC_WORST too small");

static const char head[] = "{\"op\":\"requests\",\"records\":[";

/* The datagram being filled; records_flush() sends it. */
static struct {
	char			 buf[DGRAM_SIZE];
	size_t			 len;		/* 0: no record yet */
	size_t			 count;		/* records in buf */
	int64_t			 first_at;	/* loop ms of the first */
	uint64_t		 dropped;
	struct loop_timer	 timer;		/* wakes the loop to flush */
} batch;

static void	flush_due(struct loop *, void *);
static char	*put(char *, const char *);
static char	*put_str(char *, const char *, const char *);
static char	*put_int(char *, const char *, int64_t);
static void	 send_batch(void);

/* Nothing to do: the before-sleep hook that follows flushes. */
static void
flush_due(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
}

static char *
put(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

/*
 * ,"key":"value" (the comma is in key).  Values are printable ASCII
 * already (the host and path are sanitized when read); only '"' and '\\'
 * need escaping, and anything else is replaced rather than trusted.
 */
static char *
put_str(char *p, const char *key, const char *v)
{
	p = put(p, key);
	*p++ = '"';
	for (; *v != '\0'; v++) {
		if (*v == '"' || *v == '\\')
			*p++ = '\\';
		*p++ = (*v < 0x20 || *v > 0x7e) ? '?' : *v;
	}
	*p++ = '"';
	return p;
}

static char *
put_int(char *p, const char *key, int64_t v)
{
	char digits[24];
	uint64_t u;
	size_t n = 0;

	p = put(p, key);
	if (v < 0)
		*p++ = '-';
	u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	do
		digits[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	while (n > 0)
		*p++ = digits[--n];
	return p;
}

void
records_add(const struct conn *c, const char *outcome)
{
	int64_t now_us = loop_clock_us();
	char *p;

	if (!gw->cfg.request_log)
		return;
	if (batch.len > sizeof(batch.buf) - REC_WORST)
		send_batch();
	if (batch.len == 0) {
		memcpy(batch.buf, head, sizeof(head) - 1);
		batch.len = sizeof(head) - 1;
		batch.first_at = loop_now_ms(gw->loop);
		loop_timer_init(&batch.timer, flush_due, NULL);
		loop_timer_at(gw->loop, &batch.timer,
		    batch.first_at + FLUSH_MS);
	}
	p = batch.buf + batch.len;
	p = put_int(p, batch.count > 0 ? ",{\"at\":" : "{\"at\":",
	    c->at_ms);
	if (c->svc != NULL)
		p = put_str(p, ",\"service\":", c->svc->id);
	else
		p = put(p, ",\"service\":null");	/* an unknown host */
	p = put_str(p, ",\"method\":", c->method);
	p = put_str(p, ",\"host\":", c->host);
	p = put_str(p, ",\"path\":", c->path);
	p = put_int(p, ",\"status\":", c->status);
	p = put_int(p, ",\"duration_us\":", now_us - c->t_start_us);
	p = put_int(p, ",\"wait_us\":", c->wait_us +
	    (c->t_park_us != 0 ? now_us - c->t_park_us : 0));
	if (c->wake_id != 0)
		p = put_int(p, ",\"wake_id\":", c->wake_id);
	else
		p = put(p, ",\"wake_id\":null");
	p = put_int(p, ",\"bytes_in\":", (int64_t)c->bytes_in);
	p = put_int(p, ",\"bytes_out\":", (int64_t)c->bytes_out);
	p = put_str(p, ",\"outcome\":", outcome);
	*p++ = '}';
	batch.len = (size_t)(p - batch.buf);
	batch.count++;
}

static void
send_batch(void)
{
	if (batch.count == 0)
		return;
	memcpy(batch.buf + batch.len, "]}", 2);
	if (evsink_send_raw(gw->ev, batch.buf, batch.len + 2) == -1)
		batch.dropped += batch.count;
	batch.len = batch.count = 0;
	loop_timer_cancel(gw->loop, &batch.timer);
}

/* From the before-sleep hook; force sends whatever waits (at exit). */
void
records_flush(int force)
{
	if (batch.count == 0 || (!force &&
	    loop_now_ms(gw->loop) - batch.first_at < FLUSH_MS))
		return;
	send_batch();
}

uint64_t
records_dropped(void)
{
	return batch.dropped;
}
