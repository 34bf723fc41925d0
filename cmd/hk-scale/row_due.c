/*
 * row_due.c - the writes hk-scale owes the store (lib/owed.h): instance
 * rows, put or deleted, readiness gates, and the gate outcome of each
 * revision (release.c).  A row says what runs: one lost while the store
 * was away would have "hk ps" show a serving service asleep, and a
 * restarted hk-scale miss what to adopt; a lost outcome would have a
 * revision that passed look pending, and not be started by a wake.  The
 * owed writes are bounded by the services, one row and one gate each,
 * and an outcome for each revision that changed one meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "scale.h"

struct due {
	enum due_kind		 kind;
	char			 app[STORE_NAME_MAX + 1];
	char			 name[STORE_NAME_MAX + 1];
	int			 replica;	/* DUE_PUT, DUE_DELETE */
	struct store_instance	 row;		/* DUE_PUT */
	char			 key[DUE_KEY_MAX];	/* DUE_GATE */
	char			 val[24];
	int64_t			 revision;		/* DUE_REVISION */
	char			 gate[STORE_GATE_MAX + 1];
	char			 reason[STORE_GATE_REASON_MAX + 1];
};

static int	 due_try(struct store *, const void *);
static void	*due_copy(const void *);

static const struct owed_ops due_ops = { due_try, due_copy, free };

int
due_init(struct scale *sc)
{
	sc->owed = owed_new(sc->loop, sc->store, &due_ops,
	    SCALE_OWED_MAX, "instance rows and gates");
	return sc->owed == NULL ? -1 : 0;
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
	char k[OWED_KEY_MAX];

	memset(&d, 0, sizeof(d));
	d.kind = kind;
	strlcpy(d.app, app, sizeof(d.app));
	strlcpy(d.name, name, sizeof(d.name));
	if (row != NULL) {
		d.row = *row;
		d.replica = row->replica;
	}
	if (key != NULL) {
		strlcpy(d.key, key, sizeof(d.key));
		strlcpy(d.val, val, sizeof(d.val));
	}
	/* a put and a delete of one row are one key, its gate another */
	snprintf(k, sizeof(k), "%s %s/%s", kind == DUE_GATE ? "gate" : "row",
	    app, name);
	if (kind != DUE_GATE && d.replica != 0)
		snprintf(k, sizeof(k), "row %s/%s#%d", app, name, d.replica);
	return owed_put(sc->owed, k, &d);
}

/* The row of one replica deleted (due_write()'s DUE_DELETE is 0's). */
int
due_delete(struct scale *sc, const char *app, const char *name, int replica)
{
	struct store_instance r;

	memset(&r, 0, sizeof(r));
	r.replica = replica;
	return due_write(sc, DUE_DELETE, app, name, &r, NULL, NULL);
}

/*
 * A revision's gate outcome, passed or failed with why: one owed write
 * per revision, the latest outcome of it.
 */
int
due_revision(struct scale *sc, const struct svc *def, int64_t revision,
    const char *gate, const char *reason)
{
	struct due d;
	char k[OWED_KEY_MAX];

	memset(&d, 0, sizeof(d));
	d.kind = DUE_REVISION;
	strlcpy(d.app, def->app, sizeof(d.app));
	strlcpy(d.name, def->name, sizeof(d.name));
	d.revision = revision;
	strlcpy(d.gate, gate, sizeof(d.gate));
	strlcpy(d.reason, reason != NULL ? reason : "", sizeof(d.reason));
	snprintf(k, sizeof(k), "revision %s/%s %lld", def->app, def->name,
	    (long long)revision);
	return owed_put(sc->owed, k, &d);
}

static int
due_try(struct store *s, const void *arg)
{
	const struct due *d = arg;

	switch (d->kind) {
	case DUE_PUT:
		return store_instance_put(s, &d->row);
	case DUE_DELETE:
		return store_instance_delete(s, d->app, d->name, d->replica);
	case DUE_GATE:
		return store_setting_put(s, d->key, d->val);
	case DUE_REVISION:	/* gone with its service: nothing owed */
		return store_revision_gate(s, d->app, d->name, d->revision,
		    d->gate, d->reason) == -1 ? -1 : 0;
	}
	return -1;
}

static void *
due_copy(const void *arg)
{
	struct due *d;

	if ((d = malloc(sizeof(*d))) != NULL)
		memcpy(d, arg, sizeof(*d));
	return d;
}
