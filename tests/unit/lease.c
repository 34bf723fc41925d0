/*
 * lease.c - the lease API of the state store (store.h), the same checks on
 * SQLite (a temp file) and on PostgreSQL (HK_TEST_PG, in a database
 * hk_lease_PID of its own): acquisition, refusal naming the holder, epochs
 * that only grow, renewal, release, takeover from a holder that went away
 * without releasing (the new holder is told to wait for the old row's
 * expiry plus its grace, and its own row passes that wait on), names
 * refused, and the loss of the engine's lock (SQLite: its lock file
 * removed; PostgreSQL: its connection terminated).
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "store.h"
#include "tap.h"

#define URL_MAX		1024
#define TTL		5000
#define GRACE		3000
#define RETRY_MS	5000	/* PostgreSQL frees a session's locks late */

static struct store *t_open(const char *, const char *);
static int	 acquire_retry(struct store *, const char *, const char *,
		    struct store_lease *);
static void	 t_basic(const char *, const char *);
static void	 t_takeover(const char *, const char *);
static void	 t_names(const char *, const char *);
static void	 t_lost_sqlite(const char *, const char *);
static void	 t_lost_pg(PGconn *, const char *, const char *);
static int	 pg_url_db(const char *, const char *, char *, size_t);
static void	 pg_half(const char *);
static void	 sqlite_half(void);

static struct store *
t_open(const char *E, const char *url)
{
	char err[STORE_ERR_LEN];
	struct store *s;

	if ((s = store_open(url, err, sizeof(err))) == NULL)
		ok(0, "%s: open %s: %s", E, url, err);
	return s;
}

/* Acquires, retrying a refusal for a while: a freed lock may lag. */
static int
acquire_retry(struct store *s, const char *name, const char *holder,
    struct store_lease *l)
{
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	int r, waited;

	for (waited = 0;; waited += 20) {
		r = store_lease_acquire(s, name, holder, TTL, GRACE, l);
		if (r != 1 || waited >= RETRY_MS)
			return r;
		(void)nanosleep(&pause, NULL);
	}
}

static void
t_basic(const char *E, const char *url)
{
	struct store *s1, *s2;
	struct store_lease a, b, g;
	int64_t exp;

	if ((s1 = t_open(E, url)) == NULL || (s2 = t_open(E, url)) == NULL) {
		store_close(s1);
		return;
	}
	isint(store_lease_get(s1, "gw", &g), 1, "%s: no lease yet", E);
	isint(store_lease_acquire(s1, "gw", "host=a pid=1", TTL, GRACE, &a),
	    0, "%s: the first holder gets the lease", E);
	isint(a.epoch, 1, "%s: at epoch 1", E);
	ok(a.expires_at - a.acquired_at == TTL, "%s: for the TTL", E);
	ok(a.grace_ms == GRACE && a.wait_ms == 0,
	    "%s: with its grace, and no wait for a first holder", E);
	isint(store_lease_acquire(s2, "gw", "host=b pid=2", TTL, GRACE, &b), 1,
	    "%s: a second holder is refused", E);
	is(b.holder, "host=a pid=1", "%s: and told who holds it", E);
	ok(b.epoch == 1 && b.acquired_at == a.acquired_at,
	    "%s: since when, at which epoch", E);
	isint(store_lease_acquire(s2, "other", "host=b pid=2", TTL, GRACE,
	    &b), 0, "%s: another name is not refused", E);
	isint(store_lease_release(s2, &b), 0, "%s: release", E);
	isint(store_lease_acquire(s1, "third", "host=a pid=1", TTL, GRACE,
	    &b), -1,
	    "%s: one lease per store", E);
	diag("%s", store_error(s1));
	exp = a.expires_at;
	(void)usleep(2000);
	isint(store_lease_renew(s1, &a, TTL), 0, "%s: renew", E);
	ok(a.expires_at > exp, "%s: renewal moves the expiry", E);
	ok(store_lease_get(s2, "gw", &g) == 0 && g.expires_at ==
	    a.expires_at && g.epoch == 1 && g.grace_ms == GRACE,
	    "%s: get reads the row", E);
	isint(store_lease_release(s1, &a), 0, "%s: release", E);
	ok(store_lease_get(s2, "gw", &g) == 0 && g.expires_at <=
	    store_now_ms() && g.epoch == 1 && g.grace_ms == 0,
	    "%s: a released row expired, without grace", E);
	isint(acquire_retry(s2, "gw", "host=b pid=2", &b), 0,
	    "%s: the lease is free after release", E);
	isint(b.epoch, 2, "%s: at a bigger epoch", E);
	isint(b.wait_ms, 0, "%s: a released lease is taken without a wait",
	    E);
	g = b;
	g.epoch = 1;
	isint(store_lease_renew(s2, &g, TTL), 1,
	    "%s: a renewal with another epoch finds the lease lost", E);
	isint(store_lease_renew(s2, &b, TTL), 0,
	    "%s: and leaves the holder's lease alone", E);
	store_close(s2);
	store_close(s1);
}

/*
 * A holder that goes without releasing: its unexpired row is taken, and
 * the new holder told to wait for its expiry plus its grace.  A holder
 * gone during that wait passes it on; one whose grace is over is not
 * waited for.
 */
static void
t_takeover(const char *E, const char *url)
{
	const struct timespec pause = { 0, 150 * 1000 * 1000 };
	struct store *s1, *s2, *s3;
	struct store_lease a, b, c;
	int64_t now;

	if ((s1 = t_open(E, url)) == NULL || (s2 = t_open(E, url)) == NULL) {
		store_close(s1);
		return;
	}
	isint(acquire_retry(s1, "tk", "host=a pid=1", &a), 0,
	    "%s: takeover: first holder", E);
	store_close(s1);
	isint(acquire_retry(s2, "tk", "host=b pid=2", &b), 0,
	    "%s: a holder gone without release is taken over", E);
	now = store_now_ms();
	ok(b.epoch == a.epoch + 1 && a.expires_at > now,
	    "%s: before its row expired, at the next epoch", E);
	ok(b.wait_ms > 0 && b.wait_ms <= a.expires_at + GRACE - now + 50 &&
	    b.wait_ms >= a.expires_at + GRACE - now - RETRY_MS - 50,
	    "%s: told to wait for its expiry plus its grace (%jd ms)", E,
	    (intmax_t)b.wait_ms);
	ok(b.expires_at + b.grace_ms >= a.expires_at + GRACE,
	    "%s: the new row covers that wait", E);
	store_close(s2);
	if ((s3 = t_open(E, url)) == NULL)
		return;
	isint(acquire_retry(s3, "tk", "host=c pid=3", &c), 0,
	    "%s: a holder gone during its wait is taken over", E);
	ok(c.wait_ms > 0 && c.acquired_at + c.wait_ms >= a.expires_at +
	    GRACE && c.acquired_at + c.wait_ms >= b.expires_at + b.grace_ms,
	    "%s: with the wait passed on, and its own", E);
	store_close(s3);

	/* A short lease, gone: once its expiry and grace pass, no wait. */
	if ((s1 = t_open(E, url)) == NULL)
		return;
	isint(acquire_retry(s1, "short", "host=a pid=1", &a), 0,
	    "%s: a short lease", E);
	isint(store_lease_release(s1, &a), 0, "%s: released", E);
	isint(store_lease_acquire(s1, "short", "host=a pid=1", 50, 50, &a), 0,
	    "%s: taken again for 50 ms, grace 50 ms", E);
	store_close(s1);
	(void)nanosleep(&pause, NULL);
	if ((s2 = t_open(E, url)) == NULL)
		return;
	isint(acquire_retry(s2, "short", "host=b pid=2", &b), 0,
	    "%s: taken over once gone", E);
	isint(b.wait_ms, 0, "%s: without a wait after expiry and grace", E);
	store_close(s2);
}

static void
t_names(const char *E, const char *url)
{
	static const char *const bad[] = {
		"", ".x", "-x", "../x", "a/b", "a b",
		"x12345678901234567890123456789012345678901234567890"
		    "1234567890123",
	};
	struct store_lease l;
	struct store *s;
	size_t i;

	if ((s = t_open(E, url)) == NULL)
		return;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		isint(store_lease_acquire(s, bad[i], "h", TTL, GRACE, &l), -1,
		    "%s: lease name \"%s\" refused", E, bad[i]);
	isint(store_lease_acquire(s, "ok_1.x-y", "", TTL, GRACE, &l), -1,
	    "%s: an empty holder is refused", E);
	isint(store_lease_acquire(s, "ok_1.x-y", "h", 0, GRACE, &l), -1,
	    "%s: a TTL of 0 is refused", E);
	isint(store_lease_acquire(s, "ok_1.x-y", "h", TTL, -1, &l), -1,
	    "%s: a negative grace is refused", E);
	isint(store_lease_acquire(s, "ok_1.x-y", "h", TTL, GRACE, &l), 0,
	    "%s: a name of letters, digits, . _ - is taken", E);
	(void)store_lease_release(s, &l);
	store_close(s);
}

static void
t_lost_sqlite(const char *E, const char *url)
{
	char lock[PATH_MAX];
	struct store_lease l;
	struct stat st;
	struct store *s;

	if ((s = t_open(E, url)) == NULL)
		return;
	isint(store_lease_acquire(s, "lost", "h", TTL, GRACE, &l), 0,
	    "%s: loss: acquire", E);
	(void)snprintf(lock, sizeof(lock), "%s.lease-lost.lock",
	    url + strlen("sqlite://"));
	ok(stat(lock, &st) == 0 && (st.st_mode & 07777) == 0600,
	    "%s: the lock file is beside the db, mode 0600", E);
	isint(unlink(lock), 0, "%s: remove it", E);
	isint(store_lease_renew(s, &l, TTL), 1,
	    "%s: a removed lock file loses the lease", E);
	diag("%s", store_error(s));
	store_close(s);
}

static void
t_lost_pg(PGconn *admin, const char *db, const char *url)
{
	const char *v[1] = { db };
	struct store_lease l;
	struct store *s;
	PGresult *res;

	if ((s = t_open("postgres", url)) == NULL)
		return;
	isint(acquire_retry(s, "lost", "h", &l), 0, "postgres: loss: acquire");
	res = PQexecParams(admin, "SELECT pg_terminate_backend(pid) FROM "
	    "pg_stat_activity WHERE application_name = 'hk-lease:lost' AND "
	    "datname = $1", 1, NULL, v, NULL, NULL, 0);
	ok(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1,
	    "postgres: the lease's connection is named hk-lease:lost");
	PQclear(res);
	isint(store_lease_renew(s, &l, TTL), 1,
	    "postgres: a terminated connection loses the lease");
	diag("%s", store_error(s));
	isint(store_lease_renew(s, &l, TTL), 1,
	    "postgres: and stays lost (no silent reconnection)");
	store_close(s);
}

static void
sqlite_half(void)
{
	char dir[] = "/tmp/hk-lease-t.XXXXXX", url[URL_MAX], cmd[URL_MAX];

	if (mkdtemp(dir) == NULL) {
		ok(0, "sqlite: mkdtemp: %s", strerror(errno));
		return;
	}
	(void)snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
	t_basic("sqlite", url);
	t_takeover("sqlite", url);
	t_names("sqlite", url);
	t_lost_sqlite("sqlite", url);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		diag("sqlite: unable to remove %s", dir);
}

/* The URL with its database name replaced by db (as in store_suite.h). */
static int
pg_url_db(const char *url, const char *db, char *out, size_t size)
{
	const char *auth, *path, *query, *end;
	int n;

	if ((auth = strstr(url, "://")) == NULL)
		return -1;
	auth += 3;
	query = strchr(auth, '?');
	path = strchr(auth, '/');
	if (path != NULL && query != NULL && path > query)
		path = NULL;
	end = path != NULL ? path : query != NULL ? query :
	    auth + strlen(auth);
	n = snprintf(out, size, "%.*s/%s%s", (int)(end - url), url, db,
	    query != NULL ? query : "");
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

static void
pg_half(const char *admin_url)
{
	char db[64], sql[128], url[URL_MAX];
	PGconn *admin;
	PGresult *res;

	admin = PQconnectdb(admin_url);
	if (PQstatus(admin) != CONNECTION_OK) {
		ok(0, "postgres: connect to HK_TEST_PG: %s",
		    PQerrorMessage(admin));
		PQfinish(admin);
		return;
	}
	(void)snprintf(db, sizeof(db), "hk_lease_%ld", (long)getpid());
	(void)snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	res = PQexec(admin, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		ok(0, "postgres: %s: %s", sql, PQerrorMessage(admin));
		PQclear(res);
		PQfinish(admin);
		return;
	}
	PQclear(res);
	if (pg_url_db(admin_url, db, url, sizeof(url)) == -1)
		ok(0, "postgres: cannot rewrite the database of %s", admin_url);
	else {
		t_basic("postgres", url);
		t_takeover("postgres", url);
		t_names("postgres", url);
		t_lost_pg(admin, db, url);
	}
	(void)snprintf(sql, sizeof(sql), "DROP DATABASE %s WITH (FORCE)", db);
	res = PQexec(admin, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		diag("postgres: %s: %s", sql, PQerrorMessage(admin));
	PQclear(res);
	PQfinish(admin);
}

int
main(void)
{
	const char *pg = getenv("HK_TEST_PG");

	sqlite_half();
	if (pg != NULL && *pg != '\0')
		pg_half(pg);
	else	/* a missing server fails: make check always has one */
		ok(0, "postgres: HK_TEST_PG is unset: run the test through "
		    "scripts/pg exec");
	return done();
}
