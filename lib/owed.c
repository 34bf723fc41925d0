/*
 * owed.c - writes owed to a store that was away (owed.h): a list in the
 * order they were kept, tried again in that order by one timer, which
 * stops at the first the store still refuses.
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loop.h"
#include "owed.h"
#include "store.h"

#define OWED_FIRST_MS	1000
#define OWED_MAX_MS	10000

struct owed_item {
	TAILQ_ENTRY(owed_item)	 entry;
	char			 key[OWED_KEY_MAX];
	void			*item;		/* ops->copy's */
};

struct owed {
	struct loop		*loop;
	struct store		*store;
	const struct owed_ops	*ops;
	size_t			 max;
	const char		*what;		/* "instance rows", for logs */
	TAILQ_HEAD(, owed_item)	 items;
	size_t			 n;
	uint64_t		 lost;
	struct loop_timer	 timer;
	int64_t			 backoff;	/* ms */
};

static struct owed_item *owed_find(struct owed *, const char *);
static void	 owed_drop(struct owed *, struct owed_item *);
static void	 owed_keep(struct owed *, const char *, const void *);
static void	 owed_fire(struct loop *, void *);

struct owed *
owed_new(struct loop *l, struct store *s, const struct owed_ops *ops,
    size_t max, const char *what)
{
	struct owed *o;

	if ((o = calloc(1, sizeof(*o))) == NULL)
		return NULL;
	o->loop = l;
	o->store = s;
	o->ops = ops;
	o->max = max;
	o->what = what;
	TAILQ_INIT(&o->items);
	loop_timer_init(&o->timer, owed_fire, o);
	o->backoff = OWED_FIRST_MS;
	return o;
}

int
owed_put(struct owed *o, const char *key, const void *item)
{
	struct owed_item *e = owed_find(o, key);

	if (o->ops->write(o->store, item) == 0) {
		if (e != NULL) {
			owed_drop(o, e);	/* superseded */
			log_info("store: %s: written in place of the one owed, "
			    "%zu %s left", key, o->n, o->what);
		}
		return 0;
	}
	owed_keep(o, key, item);
	return -1;
}

size_t
owed_count(const struct owed *o)
{
	return o->n;
}

uint64_t
owed_lost(const struct owed *o)
{
	return o->lost;
}

void
owed_free(struct owed *o)
{
	if (o == NULL)
		return;
	loop_timer_cancel(o->loop, &o->timer);
	if (o->n > 0)
		owed_fire(o->loop, o);
	loop_timer_cancel(o->loop, &o->timer);
	if (o->n > 0)
		log_warnx("store: %zu %s still owed at exit: lost", o->n,
		    o->what);
	while (!TAILQ_EMPTY(&o->items))
		owed_drop(o, TAILQ_FIRST(&o->items));
	free(o);
}

static struct owed_item *
owed_find(struct owed *o, const char *key)
{
	struct owed_item *e;

	TAILQ_FOREACH(e, &o->items, entry)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

static void
owed_drop(struct owed *o, struct owed_item *e)
{
	TAILQ_REMOVE(&o->items, e, entry);
	o->ops->free(e->item);
	free(e);
	o->n--;
}

/* The newest of a key replaces the one owed, in its place. */
static void
owed_keep(struct owed *o, const char *key, const void *item)
{
	struct owed_item *e = owed_find(o, key);
	void *copy;

	if ((copy = o->ops->copy(item)) != NULL && e != NULL) {
		o->ops->free(e->item);
		e->item = copy;
		return;
	}
	if (copy != NULL && e == NULL && o->n < o->max &&
	    (e = calloc(1, sizeof(*e))) != NULL) {
		(void)strlcpy(e->key, key, sizeof(e->key));
		e->item = copy;
		TAILQ_INSERT_TAIL(&o->items, e, entry);
		o->n++;
		if (!loop_timer_armed(&o->timer))
			loop_timer_at(o->loop, &o->timer,
			    loop_now_ms(o->loop) + o->backoff);
		return;
	}
	if (copy != NULL)
		o->ops->free(copy);
	o->lost++;
	log_warnx("store: %s: a write lost: %zu %s owed already, or out of "
	    "memory", key, o->n, o->what);
}

static void
owed_fire(struct loop *l, void *arg)
{
	struct owed *o = arg;
	struct owed_item *e;
	size_t done = 0;

	while ((e = TAILQ_FIRST(&o->items)) != NULL &&
	    o->ops->write(o->store, e->item) == 0) {
		owed_drop(o, e);
		done++;
	}
	if (done > 0)
		log_info("store: %zu owed %s written now that it answers, "
		    "%zu left", done, o->what, o->n);
	if (e == NULL) {
		o->backoff = OWED_FIRST_MS;
		return;
	}
	log_warnx("store: %zu %s owed, tried again in %jd ms: %s", o->n,
	    o->what, (intmax_t)o->backoff, store_error(o->store));
	loop_timer_at(l, &o->timer, loop_now_ms(l) + o->backoff);
	if ((o->backoff *= 2) > OWED_MAX_MS)
		o->backoff = OWED_MAX_MS;
}
