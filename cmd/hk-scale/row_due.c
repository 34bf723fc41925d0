/*
 * row_due.c - the writes hk-scale owes the store: an instance row (put or
 * delete) or a readiness gate that the store refused because it was away
 * (a PostgreSQL server restarting, a SQLite file locked past its busy
 * timeout).  A row says what runs: one lost would have "hk ps" show a
 * serving service asleep, and a restarted hk-scale miss what to adopt.
 *
 * So every such write goes through due_write: tried at once; if the store
 * refuses it, kept (the last of each service's rows, and of its gate,
 * replacing any older one still owed) and tried again by a timer, after
 * 1 s, then twice as long each time the store still refuses, up to 10 s,
 * until it is written.  The owed writes are bounded by the services: one
 * row and one gate each.  A write that succeeds drops an older one owed
 * for the same row, which it supersedes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "scale.h"

#define DUE_FIRST_MS	1000
#define DUE_MAX_MS	10000

struct due {
	TAILQ_ENTRY(due)	 entry;
	enum due_kind		 kind;
	char			 app[STORE_NAME_MAX + 1];
	char			 name[STORE_NAME_MAX + 1];
	struct store_instance	 row;		/* DUE_PUT */
	char			 key[DUE_KEY_MAX];	/* DUE_GATE */
	char			 val[24];
};

static int	 due_try(struct scale *, const struct due *);
static int	 due_same(const struct due *, const struct due *);
static void	 due_keep(struct scale *, const struct due *);
static void	 due_drop(struct scale *, const struct due *);
static void	 due_fire(struct loop *, void *);

void
due_init(struct scale *sc)
{
	TAILQ_INIT(&sc->dues);
	loop_timer_init(&sc->due_timer, due_fire, sc);
	sc->due_backoff = DUE_FIRST_MS;
}

/* At exit: one more try of what is owed, then what is left is said. */
void
due_free(struct scale *sc)
{
	struct due *d;

	loop_timer_cancel(sc->loop, &sc->due_timer);
	if (sc->ndues > 0)
		due_fire(sc->loop, sc);
	loop_timer_cancel(sc->loop, &sc->due_timer);
	if (sc->ndues > 0)
		log_warnx("%zu writes to the store still owed at exit: a "
		    "restarted hk-scale finds what runs", sc->ndues);
	while ((d = TAILQ_FIRST(&sc->dues)) != NULL) {
		TAILQ_REMOVE(&sc->dues, d, entry);
		free(d);
	}
	sc->ndues = 0;
}

/*
 * A row to put (row set), to delete (row NULL), or a gate (key and val):
 * 0 when the store took it, -1 (kept, to be tried again) when it did not.
 */
int
due_write(struct scale *sc, enum due_kind kind, const char *app,
    const char *name, const struct store_instance *row, const char *key,
    const char *val)
{
	struct due d;

	memset(&d, 0, sizeof(d));
	d.kind = kind;
	strlcpy(d.app, app, sizeof(d.app));
	strlcpy(d.name, name, sizeof(d.name));
	if (row != NULL)
		d.row = *row;
	if (key != NULL) {
		strlcpy(d.key, key, sizeof(d.key));
		strlcpy(d.val, val, sizeof(d.val));
	}
	if (due_try(sc, &d) == 0) {
		due_drop(sc, &d);
		return 0;
	}
	due_keep(sc, &d);
	return -1;
}

static int
due_try(struct scale *sc, const struct due *d)
{
	switch (d->kind) {
	case DUE_PUT:
		return store_instance_put(sc->store, &d->row);
	case DUE_DELETE:
		return store_instance_delete(sc->store, d->app, d->name);
	case DUE_GATE:
		return store_setting_put(sc->store, d->key, d->val);
	}
	return -1;
}

/* The same row (a put and a delete are one), or the same gate. */
static int
due_same(const struct due *a, const struct due *b)
{
	if ((a->kind == DUE_GATE) != (b->kind == DUE_GATE))
		return 0;
	return strcmp(a->app, b->app) == 0 && strcmp(a->name, b->name) == 0;
}

static void
due_keep(struct scale *sc, const struct due *d)
{
	struct due *e, *prev;

	TAILQ_FOREACH(e, &sc->dues, entry)
		if (due_same(e, d)) {	/* the newer one wins, in place */
			prev = TAILQ_PREV(e, due_list, entry);
			TAILQ_REMOVE(&sc->dues, e, entry);
			*e = *d;
			if (prev == NULL)
				TAILQ_INSERT_HEAD(&sc->dues, e, entry);
			else
				TAILQ_INSERT_AFTER(&sc->dues, prev, e, entry);
			return;
		}
	if ((e = malloc(sizeof(*e))) == NULL) {
		log_warnx("service=%s/%s: a write owed to the store is lost: "
		    "out of memory", d->app, d->name);
		sc->m_dues_lost++;
		return;
	}
	*e = *d;
	TAILQ_INSERT_TAIL(&sc->dues, e, entry);
	sc->ndues++;
	if (!loop_timer_armed(&sc->due_timer))
		loop_timer_at(sc->loop, &sc->due_timer,
		    loop_now_ms(sc->loop) + sc->due_backoff);
}

static void
due_drop(struct scale *sc, const struct due *d)
{
	struct due *e;

	TAILQ_FOREACH(e, &sc->dues, entry)
		if (due_same(e, d)) {
			TAILQ_REMOVE(&sc->dues, e, entry);
			free(e);
			sc->ndues--;
			return;
		}
}

/* Each owed write in turn, until the store refuses one again. */
static void
due_fire(struct loop *l, void *arg)
{
	struct scale *sc = arg;
	struct due *e;
	size_t done = 0;

	while ((e = TAILQ_FIRST(&sc->dues)) != NULL) {
		if (due_try(sc, e) == -1)
			break;
		TAILQ_REMOVE(&sc->dues, e, entry);
		free(e);
		sc->ndues--;
		done++;
	}
	if (done > 0)
		log_info("store: %zu owed writes made now that it answers, "
		    "%zu left", done, sc->ndues);
	if (e == NULL) {
		sc->due_backoff = DUE_FIRST_MS;
		return;
	}
	log_warnx("store: %zu writes owed, tried again in %jd ms: %s",
	    sc->ndues, (intmax_t)sc->due_backoff, store_error(sc->store));
	loop_timer_at(l, &sc->due_timer, loop_now_ms(l) + sc->due_backoff);
	if ((sc->due_backoff *= 2) > DUE_MAX_MS)
		sc->due_backoff = DUE_MAX_MS;
}
