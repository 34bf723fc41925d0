/*
 * park.c - limits and the cold-start queue: what the gateway decides for
 * a request, and what it knows of each service's instance.
 *
 * park_dispatch decides and conn.c acts: a routed request is answered by
 * the limits, or takes its slots (installation and service) and goes to
 * the ready endpoint or waits, in arrival order, with the deadline now +
 * startup_timeout_seconds; the first parked request of a cold start sends
 * the one wake.  hk-scale's ready forwards the queue, its failed answers
 * it at once, and a fence (hk-idle) makes the service park again until
 * the instance is down and a fresh one is ready.  A request leaves the
 * queue one way, whatever the outcome: taken off it here, then handed to
 * conn_resume with its verdict, the one function of conn.c called here.
 */
#include <stdio.h>
#include <string.h>

#include "activate.h"
#include "endpoint.h"
#include "log.h"

#define REFUSED_BACKOFF_MS	200	/* before waking after a refusal */
#define DEADLINE_SLACK_MS	500	/* a failure this near: 504 */

static int	answer(struct park_verdict *, int, const char *, int,
		    const char *);
static int	limits(const struct conn *, const struct service *, int64_t,
		    struct park_verdict *);
static void	waited(struct conn *);
static void	wake_now(struct service *);
static void	wake_timer(struct loop *, void *);
static void	clean_reason(char *, size_t, const char *);
static void	park_deadline_due(struct service *);

static void
clean_reason(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i < len - 1 && src[i] != '\0'; i++)
		dst[i] = (src[i] < 0x20 || src[i] > 0x7e) ? ' ' : src[i];
	dst[i] = '\0';
}

const char *
park_state_name(const struct service *svc)
{
	if (svc->stopped)
		return "stopped";
	if (svc->state != SVC_RUNNING &&
	    svc->failed_until > loop_now_ms(gw->loop))
		return "failed";
	switch (svc->state) {
	case SVC_STARTING:
		return "starting";
	case SVC_RUNNING:
		return "running";
	case SVC_DRAINING:
		return "draining";
	default:
		return "sleeping";
	}
}

/*
 * What a stopped service's requests are answered: why it is stopped when
 * the reason is in its file (hk.toml(5) enabled = false), not a command.
 */
const char *
park_stopped_msg(const struct service *svc)
{
	return svc->disabled ? "service disabled in hk.toml" :
	    "service stopped";
}

/* A verdict to answer; 1, for limits(). */
static int
answer(struct park_verdict *v, int status, const char *msg, int retry,
    const char *outcome)
{
	v->kind = PARK_ANSWER;
	v->status = status;
	v->msg = msg;
	v->retry = retry;
	v->outcome = outcome;
	return 1;
}

/*
 * Route, limits (DESIGN.md "Limits and answers"), then forward or park:
 * the verdict, for conn.c to carry out.  A request let through holds its
 * slots from here on (park_release) and has its startup deadline.
 */
void
park_dispatch(struct conn *c, struct park_verdict *v)
{
	struct service *svc;
	int64_t now = loop_now_ms(gw->loop);

	svc = route_lookup(c->host, c->head.buf + c->head.url_off,
	    c->head.url_len, &c->strip);
	if (svc == NULL) {
		answer(v, 404, "no such service", 0, NULL);
		return;
	}
	c->svc = svc;
	if (limits(c, svc, now, v))
		return;
	c->counted = 1;
	svc->active++;
	gw->inflight++;
	c->start_deadline = now +
	    (int64_t)svc->policy.startup_timeout_seconds * 1000;
	v->kind = svc->state == SVC_RUNNING ? PARK_FORWARD : PARK_WAIT;
}

/* 1 with the answer in v when a limit refuses the request, else 0. */
static int
limits(const struct conn *c, const struct service *svc, int64_t now,
    struct park_verdict *v)
{
	if (svc->stopped)
		return answer(v, 503, park_stopped_msg(svc), 0, NULL);
	if (svc->state != SVC_RUNNING && svc->failed_until > now) {
		snprintf(v->buf, sizeof(v->buf), "service failed to start: %s",
		    svc->reason);
		return answer(v, 503, v->buf,
		    (int)((svc->failed_until - now + 999) / 1000), NULL);
	}
	if (gw->cfg.max_body_bytes >= 0 &&
	    c->body_len > (uint64_t)gw->cfg.max_body_bytes)
		return answer(v, 413, "request body too large", 0,
		    "too_large");
	if (gw->inflight >= (size_t)gw->cfg.max_concurrent_requests)
		return answer(v, 503, "gateway at capacity", 1, NULL);
	if (svc->active >= svc->policy.max_concurrency)
		return answer(v, 429, "service at its concurrency limit", 1,
		    NULL);
	if (svc->state != SVC_RUNNING && !ctl_scale_up() &&
	    !ctl_scale_grace())
		return answer(v, 503, "activation unavailable", 1, NULL);
	return 0;
}

/*
 * c, made CS_PARKED by conn_park, joins its service's queue by arrival (a
 * refused request goes back to its own place).  The first of a cold start
 * sends the wake; a refused send answers the queue, c with it.
 */
void
park_enter(struct conn *c)
{
	struct service *svc = c->svc;
	struct conn *p;
	int64_t now = loop_now_ms(gw->loop);

	c->cold = 1;
	c->t_park_us = loop_clock_us();
	TAILQ_FOREACH_REVERSE(p, &svc->parked, parkq, park)
		if (p->seq < c->seq)
			break;
	if (p == NULL)
		TAILQ_INSERT_HEAD(&svc->parked, c, park);
	else
		TAILQ_INSERT_AFTER(&svc->parked, p, c, park);
	svc->nparked++;
	/* a browser's wait is counted from its first parking */
	if (c->page_at == 0 && page_wanted(c))
		c->page_at = now + svc->policy.waiting_page_after_ms;
	park_timer(c);
	if (svc->wake_at == 0 || (!loop_timer_armed(&svc->timer) &&
	    now - svc->wake_at >=
	    (int64_t)svc->policy.startup_timeout_seconds * 1000))
		wake_now(svc);
	c->wake_id = svc->wake_id;
}

/*
 * A parked request's timer: the startup deadline, or earlier a body
 * still to read whole (its own deadline) or the waiting page.
 */
void
park_timer(struct conn *c)
{
	int64_t at = c->start_deadline;

	if (c->buffering && !c->req_done && c->body_deadline < at)
		at = c->body_deadline;
	if (c->page_at != 0 && c->page_at < at)
		at = c->page_at;
	loop_timer_at(gw->loop, &c->timer, at);
}

/* Off the queue: the wait it ends is counted (records, metrics). */
static void
waited(struct conn *c)
{
	c->wait_us += loop_clock_us() - c->t_park_us;
	c->t_park_us = 0;
}

/*
 * c leaves its queue.  t_park_us is set only while it is on it, so that
 * a request park.c took off already (before conn_resume) is left alone.
 */
void
park_unlink(struct conn *c)
{
	if (c->t_park_us == 0)
		return;
	TAILQ_REMOVE(&c->svc->parked, c, park);
	c->svc->nparked--;
	waited(c);
}

void
park_release(struct conn *c)
{
	struct service *svc = c->svc;

	if (!c->counted)
		return;
	c->counted = 0;
	svc->active--;
	gw->inflight--;
	if (svc->active == 0)
		svc->idle_since = wall_ms();
}

/*
 * One wake per cold start; a refusal of the send answers the queue.
 * While hk-scale restarts (ctl_scale_grace) the queue waits instead, and
 * the new subscription sends the wake (park_wake_again).
 */
static void
wake_now(struct service *svc)
{
	if (loop_timer_armed(&svc->timer))
		return;
	if (ctl_scale_grace()) {
		svc->wake_at = 0;
		return;
	}
	svc->wake_at = loop_now_ms(gw->loop);
	if (svc->state == SVC_SLEEPING)
		svc->state = SVC_STARTING;
	/* Unique per installation: one gateway (hk-lease), at most 1024
	 * wakes in a millisecond. */
	svc->wake_id = wall_ms() * 1024 + (int64_t)(gw->wake_seq++ % 1024);
	svc->fb_wake_id = svc->wake_id;
	svc->fb_from = svc->wake_at;
	if (ctl_wake(svc) == -1) {
		svc->wake_at = 0;
		if (svc->state == SVC_STARTING)
			svc->state = SVC_SLEEPING;
		park_answer_all(svc, 503, "activation unavailable", 1);
	}
}

void
park_wake_again(struct service *svc)
{
	loop_timer_cancel(gw->loop, &svc->timer);
	svc->wake_at = 0;
	wake_now(svc);
}

static void
wake_timer(struct loop *l, void *arg)
{
	struct service *svc = arg;

	(void)l;
	if (svc->nparked > 0)
		wake_now(svc);
	else if (svc->state == SVC_STARTING) {
		svc->state = SVC_SLEEPING;
		svc->wake_at = 0;
	}
}

/* The same answer to every parked request. */
void
park_answer_all(struct service *svc, int status, const char *msg, int retry)
{
	struct park_verdict v;
	struct conn *c;

	answer(&v, status, msg, retry, "unavailable");
	while ((c = TAILQ_FIRST(&svc->parked)) != NULL) {
		park_unlink(c);
		conn_resume(c, &v);
	}
}

/*
 * The queue goes on in arrival order.  It is taken whole first, so that
 * a request refused on the way, parked again (conn_refused), waits for
 * the next ready rather than coming round in this one.
 */
void
park_ready(struct service *svc, const char *ep, int64_t rev, int *gift)
{
	struct park_verdict v = { .kind = PARK_FORWARD };
	struct parkq q;
	struct conn *c;

	if (svc->state == SVC_DRAINING && strcmp(ep, svc->fenced_ep) == 0 &&
	    rev == svc->fenced_rev)
		return;		/* the fenced instance, about to stop */
	if (strcmp(ep, svc->endpoint) != 0 || rev != svc->ep_revision ||
	    svc->state != SVC_RUNNING) {
		if (endpoint_parse(ep, &svc->addr, &svc->addrlen) == -1) {
			log_warnx("service=%s: unusable endpoint %s", svc->id,
			    ep);
			return;
		}
		svc->gen++;
		upstream_pool_drop(svc);
		strlcpy(svc->endpoint, ep, sizeof(svc->endpoint));
		svc->ep_revision = rev;
		svc->ready_at = wall_ms();
		log_info("service=%s endpoint=%s revision=%lld: ready",
		    svc->id, ep, (long long)rev);
	}
	svc->state = SVC_RUNNING;
	svc->wake_at = 0;
	svc->failed_until = 0;
	loop_timer_cancel(gw->loop, &svc->timer);
	if (*gift != -1) {
		upstream_gift(svc, *gift);	/* the first parked takes it */
		*gift = -1;
	}
	TAILQ_INIT(&q);
	TAILQ_CONCAT(&q, &svc->parked, park);
	svc->nparked = 0;
	while ((c = TAILQ_FIRST(&q)) != NULL) {
		TAILQ_REMOVE(&q, c, park);
		waited(c);
		c->wake_id = svc->wake_id;	/* a later wake may have served */
		conn_resume(c, &v);
	}
	upstream_gift_drop(svc);
}

void
park_down(struct service *svc, const char *reason)
{
	log_info("service=%s: down: %s", svc->id, reason);
	svc->gen++;
	upstream_pool_drop(svc);
	svc->endpoint[0] = '\0';
	svc->fenced_ep[0] = '\0';
	svc->ready_at = 0;
	svc->state = SVC_SLEEPING;
	svc->wake_at = 0;
	if (strcmp(reason, "stopped") == 0 || strcmp(reason, "removed") == 0)
		park_answer_all(svc, 503, park_stopped_msg(svc), 0);
	else if (svc->nparked > 0)
		wake_now(svc);
}

/*
 * A connection to the endpoint of generation gen was refused
 * (conn_refused): unless another took its place since, the endpoint is
 * gone; wake after a pause.
 */
void
park_refused(struct service *svc, uint64_t gen)
{
	if (svc->state != SVC_RUNNING || gen != svc->gen)
		return;
	log_info("service=%s endpoint=%s: connection refused", svc->id,
	    svc->endpoint);
	svc->gen++;
	upstream_pool_drop(svc);
	svc->endpoint[0] = '\0';
	svc->state = SVC_STARTING;
	svc->wake_at = loop_now_ms(gw->loop);
	loop_timer_cancel(gw->loop, &svc->timer);
	loop_timer_init(&svc->timer, wake_timer, svc);
	loop_timer_at(gw->loop, &svc->timer, svc->wake_at +
	    REFUSED_BACKOFF_MS);
}

void
park_failed(struct service *svc, const char *reason, int retry)
{
	char msg[REASON_MAX + 32];

	clean_reason(svc->reason, sizeof(svc->reason), reason);
	if (svc->state == SVC_RUNNING) {
		log_info("service=%s: new revision failed, %s keeps serving: "
		    "%s", svc->id, svc->endpoint, svc->reason);
		return;
	}
	log_info("service=%s: start failed: %s", svc->id, svc->reason);
	if (retry < 1)
		retry = 1;
	svc->retry_after = retry;
	svc->failed_until = loop_now_ms(gw->loop) + (int64_t)retry * 1000;
	svc->state = SVC_SLEEPING;
	svc->wake_at = 0;
	snprintf(msg, sizeof(msg), "service failed to start: %s",
	    svc->reason);
	park_deadline_due(svc);
	park_answer_all(svc, 503, msg, retry);
}

/*
 * hk-scale gives up on a start at the same startup deadline as the
 * gateway: requests whose own deadline is due get the 504 it means.
 */
static void
park_deadline_due(struct service *svc)
{
	struct park_verdict v;
	struct conn *c, *next;
	int64_t now = loop_now_ms(gw->loop);

	answer(&v, 504, "startup deadline exceeded", 0, "startup_timeout");
	for (c = TAILQ_FIRST(&svc->parked); c != NULL; c = next) {
		next = TAILQ_NEXT(c, park);
		if (c->start_deadline - now <= DEADLINE_SLACK_MS) {
			park_unlink(c);
			conn_resume(c, &v);
		}
	}
}

void
park_wake_reply(struct service *svc, int ok, const char *error)
{
	char msg[REASON_MAX + 32];

	if (ok)
		return;
	log_info("service=%s: wake refused: %s", svc->id, error);
	if (svc->state == SVC_STARTING)
		svc->state = SVC_SLEEPING;
	svc->wake_at = 0;
	if (strcmp(error, "stopped") == 0) {
		svc->stopped = 1;
		park_answer_all(svc, 503, park_stopped_msg(svc), 0);
		return;
	}
	snprintf(msg, sizeof(msg), "activation refused: %.*s", REASON_MAX,
	    error);
	clean_reason(msg, sizeof(msg), msg);
	park_answer_all(svc, 503, msg, 1);
}

/*
 * hk stop or start has taken effect (route_set_desired): a stopped
 * service's queue is answered; a started one forgets its last failure, so
 * that the next request wakes it at once.
 */
void
park_desired(struct service *svc)
{
	if (svc->stopped)
		park_answer_all(svc, 503, park_stopped_msg(svc), 0);
	else
		svc->failed_until = 0;
}

/*
 * hk-idle asks whether the service may sleep: only with nothing active and
 * the last request (or the instance's ready) idle_ms ago.  Then the
 * instance gets no more requests; new ones park for a fresh start.
 */
int
park_fence(struct service *svc, int64_t idle_ms, int64_t *since)
{
	*since = svc->idle_since > svc->ready_at ? svc->idle_since :
	    svc->ready_at;
	if (svc->active > 0 || wall_ms() - *since < idle_ms)
		return 0;
	if (svc->state == SVC_RUNNING) {
		strlcpy(svc->fenced_ep, svc->endpoint, sizeof(svc->fenced_ep));
		svc->fenced_rev = svc->ep_revision;
		svc->state = SVC_DRAINING;
		svc->gen++;
		upstream_pool_drop(svc);
		log_info("service=%s: fenced for sleep", svc->id);
	}
	return 1;
}
