/*
 * retry.c - a reload made again until it succeeds (retry.h).
 */
#include "log.h"
#include "retry.h"

#define RETRY_FIRST_MS	1000
#define RETRY_MAX_MS	10000

static void	retry_fire(struct loop *, void *);

void
retry_init(struct retry *r, struct loop *l, int (*fn)(void *), void *arg,
    const char *what)
{
	r->loop = l;
	r->fn = fn;
	r->arg = arg;
	r->what = what;
	r->backoff = RETRY_FIRST_MS;
	loop_timer_init(&r->timer, retry_fire, r);
}

void
retry_later(struct retry *r)
{
	if (!loop_timer_armed(&r->timer))
		loop_timer_at(r->loop, &r->timer,
		    loop_now_ms(r->loop) + r->backoff);
}

void
retry_cancel(struct retry *r)
{
	loop_timer_cancel(r->loop, &r->timer);
}

static void
retry_fire(struct loop *l, void *arg)
{
	struct retry *r = arg;

	(void)l;
	if (r->fn(r->arg) == 0) {
		log_info("%s reloaded: the store answers again", r->what);
		r->backoff = RETRY_FIRST_MS;
		return;
	}
	if ((r->backoff *= 2) > RETRY_MAX_MS)
		r->backoff = RETRY_MAX_MS;
	log_warnx("%s: reloaded again in %jd ms", r->what,
	    (intmax_t)r->backoff);
	loop_timer_cancel(r->loop, &r->timer);	/* fn may have armed it */
	retry_later(r);
}
