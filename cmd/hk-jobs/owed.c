/*
 * owed.c - run records the store refused because it was away (a
 * PostgreSQL server restarting): the last record of each run is kept and
 * written again by a timer, after 1 s, then twice as long each time the
 * store still refuses, up to 10 s, until it is written.  A run never
 * leaves the record silently: "hk runs" shows how it ended.  At most
 * JOBS_OWED_MAX runs are owed at once; a record past that is lost,
 * counted (hk-jobs' status, owed_lost) and logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "log.h"

#define OWED_FIRST_MS	1000
#define OWED_MAX_MS	10000

struct owed {
	TAILQ_ENTRY(owed)	 entry;
	struct store_run	 row;		/* its body our own copy */
};

static int	 owed_copy(struct store_run *, const struct store_run *);
static void	 owed_fire(struct loop *, void *);

void
owed_init(struct jobs *jx)
{
	TAILQ_INIT(&jx->owed);
	loop_timer_init(&jx->owed_timer, owed_fire, jx);
	jx->owed_backoff = OWED_FIRST_MS;
}

/* Writes a run's record; one the store refuses is kept: 0 or -1. */
int
owed_put(struct jobs *jx, const struct store_run *row)
{
	struct owed *o;

	TAILQ_FOREACH(o, &jx->owed, entry)
		if (strcmp(o->row.id, row->id) == 0)
			break;
	if (store_run_put(jx->store, row) == 0) {
		if (o != NULL) {	/* superseded */
			TAILQ_REMOVE(&jx->owed, o, entry);
			store_run_clear(&o->row);
			free(o);
			jx->nowed--;
		}
		return 0;
	}
	if (o != NULL) {
		store_run_clear(&o->row);
		if (owed_copy(&o->row, row) == 0)
			return -1;
		TAILQ_REMOVE(&jx->owed, o, entry);
		free(o);
		jx->nowed--;
	} else if (jx->nowed < JOBS_OWED_MAX &&
	    (o = calloc(1, sizeof(*o))) != NULL) {
		if (owed_copy(&o->row, row) == 0) {
			TAILQ_INSERT_TAIL(&jx->owed, o, entry);
			jx->nowed++;
			if (!loop_timer_armed(&jx->owed_timer))
				loop_timer_at(jx->loop, &jx->owed_timer,
				    loop_now_ms(jx->loop) + jx->owed_backoff);
			return -1;
		}
		free(o);
	}
	jx->m_owed_lost++;
	log_warnx("run=%s: its record (%s) is lost: %zu records owed to "
	    "the store already, or out of memory", row->id, row->phase,
	    jx->nowed);
	return -1;
}

static int
owed_copy(struct store_run *dst, const struct store_run *src)
{
	*dst = *src;
	dst->body = NULL;
	if (src->body == NULL || src->body_len == 0)
		return 0;
	if ((dst->body = malloc(src->body_len)) == NULL)
		return -1;
	memcpy(dst->body, src->body, src->body_len);
	return 0;
}

/* Each owed record in turn, until the store refuses one again. */
static void
owed_fire(struct loop *l, void *arg)
{
	struct jobs *jx = arg;
	struct owed *o;
	size_t done = 0;

	while ((o = TAILQ_FIRST(&jx->owed)) != NULL) {
		if (store_run_put(jx->store, &o->row) == -1)
			break;
		TAILQ_REMOVE(&jx->owed, o, entry);
		store_run_clear(&o->row);
		free(o);
		jx->nowed--;
		done++;
	}
	if (done > 0)
		log_info("store: %zu owed run records written now that it "
		    "answers, %zu left", done, jx->nowed);
	if (o == NULL) {
		jx->owed_backoff = OWED_FIRST_MS;
		return;
	}
	log_warnx("store: %zu run records owed, tried again in %jd ms: %s",
	    jx->nowed, (intmax_t)jx->owed_backoff, store_error(jx->store));
	loop_timer_at(l, &jx->owed_timer, loop_now_ms(l) + jx->owed_backoff);
	if ((jx->owed_backoff *= 2) > OWED_MAX_MS)
		jx->owed_backoff = OWED_MAX_MS;
}

/* At exit: one more try, then what is left is said. */
void
owed_free(struct jobs *jx)
{
	struct owed *o;

	loop_timer_cancel(jx->loop, &jx->owed_timer);
	if (jx->nowed > 0)
		owed_fire(jx->loop, jx);
	loop_timer_cancel(jx->loop, &jx->owed_timer);
	if (jx->nowed > 0)
		log_warnx("%zu run records still owed to the store at exit: "
		    "lost", jx->nowed);
	while ((o = TAILQ_FIRST(&jx->owed)) != NULL) {
		TAILQ_REMOVE(&jx->owed, o, entry);
		store_run_clear(&o->row);
		free(o);
	}
	jx->nowed = 0;
}
