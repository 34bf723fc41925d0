/*
 * queue.c - the start queue: at most max_concurrent_starts instances are
 * starting at once; other starts wait in arrival order.  A waiter keeps its
 * own deadline (service_deadline() fails it where it stands).  The queue is
 * worked once per turn of the loop, before it sleeps, so that no start
 * happens in the middle of another service's transition.
 */
#include <stdio.h>

#include "log.h"
#include "scale.h"

void
queue_add(struct service *s)
{
	struct scale *sc = s->sc;

	if (s->queued)
		return;
	TAILQ_INSERT_TAIL(&sc->queue, s, qentry);
	s->queued = 1;
	loop_timer_at(sc->loop, &s->deadline, loop_now_ms(sc->loop) +
	    (int64_t)service_timeout(s) * 1000);
	log_debug("service=%s: waiting for a start slot (%zu of %lld busy)",
	    s->def.id, sc->nstarting, (long long)sc->cfg.max_concurrent_starts);
}

void
queue_remove(struct service *s)
{
	if (!s->queued)
		return;
	TAILQ_REMOVE(&s->sc->queue, s, qentry);
	s->queued = 0;
}

/* An instance that held a start slot is ready, failed or gone. */
void
queue_settle(struct inst *in)
{
	if (!in->counted)
		return;
	in->counted = 0;
	in->sc->nstarting--;
}

void
queue_kick(struct scale *sc)
{
	struct service *s;

	while (!sc->stopping && (s = TAILQ_FIRST(&sc->queue)) != NULL &&
	    sc->nstarting < (size_t)sc->cfg.max_concurrent_starts) {
		if (loop_now_ms(sc->loop) >= s->deadline.deadline) {
			service_deadline(sc->loop, s);	/* dequeues it */
			continue;
		}
		queue_remove(s);
		service_spawn(s);
	}
}
