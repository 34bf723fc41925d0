/*
 * store_leases.c - settings and leases in the state store (store.h):
 * settings a key and a value each; a lease a row per name, written only
 * under the engine's lease lock (store_impl.h), its epoch only growing,
 * and the wait its new holder owes the last one's prog; the fence of a
 * writer by a lease's epoch (store_fence(); the check is store.c's).
 */
#include <string.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

#define SETTING_KEY_MAX	255

static int	 check_lease(struct store *, const char *,
		    const struct store_lease *);
static int	 read_lease(struct store *, void *);

int
store_setting_put(struct store *s, const char *key, const char *value)
{
	struct store_arg a[] = { ARG_TEXT(key), ARG_TEXT(value) };

	call_start(s);
	if (store_check_name(s, "setting key", key, SETTING_KEY_MAX) == -1)
		return -1;
	if (value == NULL) {
		store_seterr(s, 0, "setting %s: no value", key);
		return -1;
	}
	return store_q_do(s, Q_SETTING_PUT, a, NITEMS(a), NULL);
}

int
store_setting_get(struct store *s, const char *key, char **value)
{
	struct store_arg a[] = { ARG_TEXT(key) };

	call_start(s);
	*value = NULL;
	if (store_check_name(s, "setting key", key, SETTING_KEY_MAX) == -1)
		return -1;
	return store_read_one(s, Q_SETTING_GET, a, NITEMS(a),
	    store_read_text_row, value);
}

/* A lease name also names a lock file: a plain word, no path. */
static int
check_lease(struct store *s, const char *name, const struct store_lease *l)
{
	const char *p;

	if (l != NULL && store_check_field(s, "lease name", l->name,
	    sizeof(l->name), 1) == -1)
		return -1;
	if (store_check_name(s, "lease name", name, STORE_NAME_MAX) == -1)
		return -1;
	for (p = name; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') ||
		    (p > name && (*p == '.' || *p == '_' || *p == '-')))) {
			store_seterr(s, 0, "lease name %s: not a word of "
			    "[A-Za-z0-9._-] starting with a letter or digit",
			    name);
			return -1;
		}
	if (l != NULL && store_check_field(s, "lease holder", l->holder,
	    sizeof(l->holder), 1) == -1)
		return -1;
	return 0;
}

static int
read_lease(struct store *s, void *p)
{
	struct store_lease *l = p;

	memset(l, 0, sizeof(*l));
	if (store_col_copy(s, 0, l->name, sizeof(l->name),
	    "lease name") == -1 ||
	    store_col_copy(s, 1, l->holder, sizeof(l->holder),
	    "lease holder") == -1)
		return -1;
	l->epoch = s->ops->col_int(s, 2);
	l->acquired_at = s->ops->col_int(s, 3);
	l->expires_at = s->ops->col_int(s, 4);
	l->grace_ms = s->ops->col_int(s, 5);
	return 0;
}

/*
 * Under the lock, the row is what the last holder left: until its expiry
 * plus its grace, that holder's prog may still run (store.h).  Both ends
 * are whole milliseconds of the store's clock, hence the one added to the
 * wait.  The new row's grace reaches at least as far, in case this holder
 * goes before its own prog starts.
 */
int
store_lease_acquire(struct store *s, const char *name, const char *holder,
    int64_t ttl_ms, int64_t grace_ms, struct store_lease *l)
{
	struct store_arg a[] = { ARG_TEXT(name), ARG_TEXT(holder),
	    ARG_INT(0), ARG_INT(0), ARG_INT(0) };
	struct store_lease old;
	int64_t now, end, epoch = 0;
	int r;

	call_start(s);
	memset(l, 0, sizeof(*l));
	if (check_lease(s, name, NULL) == -1 ||
	    store_check_name(s, "lease holder", holder, STORE_HOLDER_MAX) == -1)
		return -1;
	if (ttl_ms <= 0 || grace_ms < 0 || s->in_tx) {
		store_seterr(s, 0, "lease %s: %s", name, s->in_tx ?
		    "not inside a transaction" : ttl_ms <= 0 ?
		    "TTL must be positive" : "grace must not be negative");
		return -1;
	}
	if ((r = s->ops->lease_lock(s, name, ttl_ms)) == 1) {
		if ((r = store_lease_get(s, name, l)) == 1)
			memset(l, 0, sizeof(*l));
		return r == -1 ? -1 : 1;
	}
	if (r == -1) {
		store_errprefix(s, "lease %s", name);
		return -1;
	}
	if (s->ops->lease_check(s, &now) != 0 ||
	    (r = store_lease_get(s, name, &old)) == -1) {
		store_errprefix(s, "lease %s", name);
		s->ops->lease_unlock(s);
		return -1;
	}
	end = r == 0 ? old.expires_at + old.grace_ms : 0;
	a[2].num = now;
	a[3].num = now + ttl_ms;
	a[4].num = end - a[3].num > grace_ms ? end - a[3].num : grace_ms;
	/*
	 * Under the installation's write lock, as every transaction of a
	 * fenced writer (store_fence()): none is open while the epoch moves.
	 */
	if (store_begin(s) == -1 || (r = store_q_int(s, Q_LEASE_ACQUIRE, a,
	    NITEMS(a), &epoch)) != 0 || store_commit(s) == -1) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "no epoch returned");
		store_rollback_keep_error(s);
		store_errprefix(s, "lease %s", name);
		s->ops->lease_unlock(s);
		return -1;
	}
	(void)strlcpy(l->name, name, sizeof(l->name));
	(void)strlcpy(l->holder, holder, sizeof(l->holder));
	l->epoch = epoch;
	l->acquired_at = now;
	l->expires_at = a[3].num;
	l->grace_ms = a[4].num;
	l->wait_ms = end > now ? end - now + 1 : 0;
	return 0;
}

int
store_lease_renew(struct store *s, struct store_lease *l, int64_t ttl_ms)
{
	struct store_arg a[] = { ARG_TEXT(l->name), ARG_INT(l->epoch),
	    ARG_TEXT(l->holder), ARG_INT(0) };
	char err[STORE_ERR_LEN];
	int64_t now, n = 0;
	int busy, r;

	call_start(s);
	if (check_lease(s, l->name, l) == -1)
		return -1;
	if ((r = s->ops->lease_check(s, &now)) != 0) {
		if (r == -1)
			store_errprefix(s, "lease %s", l->name);
		return r;
	}
	a[3].num = now + ttl_ms;
	if (store_q_do(s, Q_LEASE_RENEW, a, NITEMS(a), &n) == -1) {
		/* A failure that took the engine's lock with it is a loss. */
		store_errprefix(s, "lease %s", l->name);
		memcpy(err, s->err, sizeof(err));
		busy = s->busy;
		r = s->ops->lease_check(s, &now) == 1 ? 1 : -1;
		memcpy(s->err, err, sizeof(err));
		s->busy = busy;
		return r;
	}
	if (n == 0) {
		store_seterr(s, 0, "lease %s: the row has another epoch or "
		    "holder", l->name);
		return 1;
	}
	l->expires_at = a[3].num;
	return 0;
}

/* A lock already lost leaves the row alone: it may be another's now. */
int
store_lease_release(struct store *s, struct store_lease *l)
{
	struct store_arg a[] = { ARG_TEXT(l->name), ARG_INT(l->epoch),
	    ARG_TEXT(l->holder), ARG_INT(0) };
	int64_t now = 0;
	int r;

	call_start(s);
	if ((r = check_lease(s, l->name, l)) == 0) {
		if ((r = s->ops->lease_check(s, &now)) == 0) {
			a[3].num = now;
			r = store_q_do(s, Q_LEASE_RELEASE, a, NITEMS(a), NULL);
		}
		if (r != 0) {
			store_errprefix(s, "lease %s", l->name);
			r = -1;
		} else {
			l->expires_at = now;
			l->grace_ms = 0;
		}
	}
	s->ops->lease_unlock(s);
	return r;
}

int
store_lease_get(struct store *s, const char *name, struct store_lease *l)
{
	struct store_arg a[] = { ARG_TEXT(name) };

	call_start(s);
	memset(l, 0, sizeof(*l));
	if (check_lease(s, name, NULL) == -1)
		return -1;
	return store_read_one(s, Q_LEASE_GET, a, NITEMS(a), read_lease, l);
}

void
store_bound(struct store *s, int64_t ms)
{
	if (s->ops->bound != NULL && ms > 0)
		s->ops->bound(s, ms);
}

/* The check itself is fence_check(), in store.c's store_begin(). */
int
store_fence(struct store *s, const char *name, int64_t epoch,
    store_fenced_fn *fn, void *arg)
{
	call_start(s);
	if (check_lease(s, name, NULL) == -1)
		return -1;
	if (epoch < 1) {
		store_seterr(s, 0, "lease %s: epoch %lld is not positive",
		    name, (long long)epoch);
		return -1;
	}
	(void)strlcpy(s->fence_name, name, sizeof(s->fence_name));
	s->fence_epoch = epoch;
	s->fenced = fn;
	s->fenced_arg = arg;
	return 0;
}

int
store_fence_check(struct store *s)
{
	call_start(s);
	if (s->fence_epoch == 0 || s->in_tx)
		return 0;
	if (store_begin(s) == -1)
		return -1;
	return store_commit(s);
}
