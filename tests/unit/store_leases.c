/*
 * store_leases.c - settings in the state store (lib/store_leases.c), on
 * both engines (store_suite.h), and the fence of a lease's epoch
 * (store_fence(), lib/store.c).  The leases of that file have a test of
 * their own, tests/unit/lease.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

static void	 t_settings(const char *, struct store *);
static void	 t_fence(const char *, struct store *, const char *);
static void	 on_fenced(void *, const char *);
static void	 t_bound_lock(const char *, struct store *, const char *);
static void	 checks(const char *, struct store *, const char *);

static void
t_settings(const char *E, struct store *s)
{
	char *v = NULL;

	ok(store_setting_get(s, "greeting", &v) == 1 && v == NULL,
	    "%s: setting get of unknown is 1", E);
	ok(store_setting_put(s, "greeting", "hello") == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    strcmp(v, "hello") == 0, "%s: setting put, get", E);
	free(v);
	ok(store_setting_put(s, "greeting", "") == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    *v == '\0', "%s: setting overwritten, empty value", E);
	free(v);
}

/* What store_fence()'s callback was told, and how often. */
struct fenced {
	int	 calls;
	char	 why[512];
};

static void
on_fenced(void *arg, const char *why)
{
	struct fenced *f = arg;

	f->calls++;
	(void)snprintf(f->why, sizeof(f->why), "%s", why);
}

static struct store *
reopen(const char *url)
{
	char err[256];
	struct store *s;

	if ((s = store_open(url, err, sizeof(err))) == NULL)
		diag("store_open: %s", err);
	return s;
}

/*
 * A writer fenced by the epoch of lease "control": it writes while the
 * epoch is the lease's, and nothing once a new holder has taken it (one
 * SIGSTOPped past its TTL and continued); a takeover waits for the
 * writer's open transaction, so that no write lands after a newer epoch.
 */
static void
t_fence(const char *E, struct store *s, const char *url)
{
	struct store *holder, *next;
	struct store_lease l, l2;
	struct fenced f = { 0, "" };
	char *v = NULL;

	holder = reopen(url);
	ok(holder != NULL && store_lease_acquire(holder, "control",
	    "host=a", 60000, 1000, &l) == 0 && l.epoch >= 1,
	    "%s: fence: the lease taken", E);
	ok(store_fence(s, "control", 0, on_fenced, &f) == -1 &&
	    strstr(store_error(s), "not positive") != NULL,
	    "%s: fence: epoch 0 refused: %s", E, store_error(s));
	ok(store_fence(s, "no/such", 1, on_fenced, &f) == -1,
	    "%s: fence: a bad lease name refused", E);
	ok(store_fence(s, "control", l.epoch, on_fenced, &f) == 0,
	    "%s: fence: set", E);
	ok(store_setting_put(s, "leader", "a") == 0 && f.calls == 0,
	    "%s: fence: a write under the current epoch lands", E);
	ok(store_begin(s) == 0 && store_setting_put(s, "leader", "a2") == 0 &&
	    store_commit(s) == 0 && f.calls == 0,
	    "%s: fence: so does a transaction", E);

	/* A takeover waits for a fenced transaction that is open. */
	store_close(holder);
	next = reopen(url);
	ok(store_begin(s) == 0, "%s: fence: a transaction open", E);
	ok(next != NULL && store_lease_acquire(next, "control", "host=b",
	    60000, 1000, &l2) == -1 && store_busy(next),
	    "%s: fence: a takeover meanwhile waits, and fails busy: %s", E,
	    next != NULL ? store_error(next) : "");
	ok(store_setting_put(s, "leader", "a3") == 0 && store_commit(s) == 0,
	    "%s: fence: the open transaction commits", E);
	ok(store_lease_acquire(next, "control", "host=b", 60000, 1000,
	    &l2) == 0 && l2.epoch == l.epoch + 1,
	    "%s: fence: then the takeover lands, with the next epoch", E);

	/* The old epoch writes nothing more, in a transaction or not. */
	ok(store_setting_put(s, "leader", "stale") == -1 && f.calls == 1 &&
	    strstr(store_error(s), "fenced") != NULL &&
	    strstr(f.why, "no longer leads") != NULL,
	    "%s: fence: a write of the old epoch refused: %s", E,
	    store_error(s));
	ok(store_begin(s) == -1 && f.calls == 2,
	    "%s: fence: a transaction of the old epoch refused", E);
	ok(store_setting_get(s, "leader", &v) == 0 && v != NULL &&
	    strcmp(v, "a3") == 0,
	    "%s: fence: reads still work, and nothing stale landed: %s", E,
	    v != NULL ? v : "(null)");
	free(v);
	ok(store_fence(s, "control", l2.epoch, on_fenced, &f) == 0 &&
	    store_setting_put(s, "leader", "b") == 0,
	    "%s: fence: the new epoch writes", E);
	store_close(next);
}

/*
 * A bounded store (store_bound(), a daemon under a lease) that waits for
 * another writer's lock gets the server's busy error within its bound,
 * its connection kept (PostgreSQL: lock_timeout under the bound), not
 * the bound's shutdown of a closed connection; and it writes once the
 * lock is free.  SQLite's busy timeout does not change.
 */
static void
t_bound_lock(const char *E, struct store *s, const char *url)
{
	struct store *other;

	if (store_engine(s) != STORE_POSTGRES)
		return;
	other = reopen(url);
	/* a lock wait of 3 s, 1 s short of the bound: room for a busy host */
	store_bound(s, 4000);
	ok(other != NULL && store_begin(other) == 0,
	    "%s: bound: another writer holds the write lock", E);
	ok(store_setting_put(s, "bounded", "1") == -1 && store_busy(s) &&
	    strstr(store_error(s), "lock timeout") != NULL &&
	    strstr(store_error(s), "closed") == NULL,
	    "%s: bound: a write meanwhile fails busy, by the server's lock "
	    "timeout: %s", E, store_error(s));
	ok(other != NULL && store_commit(other) == 0 &&
	    store_setting_put(s, "bounded", "2") == 0,
	    "%s: bound: once it commits, the write lands", E);
	store_close(other);
}

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	t_settings(E, s);
	t_fence(E, s, url);
	t_bound_lock(E, s, url);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_leases",
		.checks = checks,
	};

	return store_suite_main(&t);
}
