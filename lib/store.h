/*
 * store.h - the state store: one API, two engines.
 *
 *	sqlite:///var/lib/hakopod/state.db	SQLite (WAL, busy timeout)
 *	sqlite://relative/path.db
 *	postgres://... or postgresql://...	PostgreSQL through libpq
 *
 * store_open() connects and applies the numbered migrations that are missing
 * (schema_migrations), so an opened store is always current.  Every
 * statement is prepared; nothing is built from input.  Times are Unix
 * milliseconds (int64) in both engines.
 *
 * Functions return 0 on success, -1 on error (store_error() says why, and
 * store_busy() tells a temporary failure: lock timeout, serialization,
 * connection lost), and 1 where documented for "not found".
 */
#ifndef HK_STORE_H
#define HK_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_NAME_MAX		63
#define STORE_ERR_LEN		512
#define STORE_ENDPOINT_MAX	127
#define STORE_STATE_MAX		15
#define STORE_KIND_MAX		31

enum store_engine {
	STORE_SQLITE,
	STORE_POSTGRES,
};

enum store_desired {
	STORE_DESIRED_AUTO,
	STORE_DESIRED_STOPPED,
};

struct store;

struct store	*store_open(const char *, char *, size_t);
/*
 * For a check that must not write (hk-activate -n): opens the store as it
 * is, makes nothing (no SQLite file, no schema, no migration) and fails
 * every write.  NULL with errno ENOENT when there is no store there yet
 * (no SQLite file, or no schema in it): nothing to read.  A store of an
 * older schema version is read as it is: read only what every version
 * has (apps, services, instances, events, leases, settings).
 */
struct store	*store_open_readonly(const char *, char *, size_t);
void		 store_close(struct store *);
enum store_engine store_engine(const struct store *);
const char	*store_error(const struct store *);
int		 store_busy(const struct store *);
int		 store_schema_version(struct store *, int64_t *);

/*
 * Transactions.  store_begin() takes the write lock at once (SQLite BEGIN
 * IMMEDIATE; PostgreSQL BEGIN), so read-modify-write inside is safe against
 * writers in other processes.  Calls outside a transaction autocommit.
 * After any error inside a transaction the caller rolls back: PostgreSQL
 * has aborted it already, SQLite has not.
 */
int	store_begin(struct store *);
int	store_commit(struct store *);
int	store_rollback(struct store *);

/*
 * Whether the commits of this handle wait for the disk, from the next
 * transaction on (not inside one): 1, the default, they do; 0 they return
 * once the transaction is in SQLite's write-ahead log, which is on disk
 * with the next commit that waits, the next checkpoint, or when the
 * kernel writes it back (synchronous=NORMAL).  A crash of the process
 * loses nothing either way; a crash of the host may lose the commits
 * that did not wait, and never corrupts the store.  PostgreSQL ignores
 * it: its server decides (synchronous_commit).
 */
int	store_durable(struct store *, int);

int64_t	store_now_ms(void);

/* apps */
int	store_app_put(struct store *, const char *, const char *);

/* services */
struct store_service {
	char		 app[STORE_NAME_MAX + 1];
	char		 name[STORE_NAME_MAX + 1];
	char		*spec_json;	/* canonical spec, as config made it */
	int64_t		 revision;	/* 1 for a new service */
	enum store_desired desired;
	int		 serverless;
	int64_t		 created_at;
	int64_t		 updated_at;	/* last revision change */
};

/*
 * Inserts or updates a service.  The revision is bumped only when spec_json
 * differs from the stored one; *changed says whether it did (a new service
 * counts as changed).  Atomic on its own, even outside a transaction.
 */
int	store_service_put(struct store *, const char *, const char *,
	    const char *, int, int64_t *, int *);
/* 0 found, 1 not found. */
int	store_service_get(struct store *, const char *, const char *,
	    struct store_service *);
/* All services, ordered by app then name. */
int	store_service_list(struct store *, struct store_service **, size_t *);
/*
 * Removes the services of app whose names are not in keep[0..nkeep), with
 * their instances; *removed counts them (names in removed_names if non-NULL,
 * freed by the caller with free() on each and on the array).
 */
int	store_service_prune(struct store *, const char *, char *const *, size_t,
	    char ***, size_t *);
/* 0 done, 1 no such service. */
int	store_service_set_desired(struct store *, const char *, const char *,
	    enum store_desired);
/* Serverless services of every app other than the one named (NULL: all). */
int	store_count_serverless(struct store *, const char *, int64_t *);
void	store_service_clear(struct store_service *);
void	store_service_free(struct store_service *, size_t);

/* instances: at most one per service in this release */
struct store_instance {
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	int64_t		 revision;
	char		 state[STORE_STATE_MAX + 1];	/* starting running ... */
	char		 endpoint[STORE_ENDPOINT_MAX + 1]; /* "127.0.0.1:8080" */
	char		 node[STORE_NAME_MAX + 1];
	int64_t		 pid;		/* 0 if none */
	int64_t		 pid_start;	/* /proc/PID/stat starttime, vs reuse */
	int64_t		 started_at;
	int64_t		 ready_at;	/* 0 until ready */
	int64_t		 updated_at;
	int		 replica;	/* 0..replicas-1; 0: the first */
};

int	store_instance_put(struct store *, const struct store_instance *);
/* Replica 0's row.  0 found, 1 not found. */
int	store_instance_get(struct store *, const char *, const char *,
	    struct store_instance *);
/* One replica's row; replica -1: every row of the service. */
int	store_instance_delete(struct store *, const char *, const char *,
	    int);
int	store_instance_list(struct store *, struct store_instance **, size_t *);

/* events */
struct store_event {
	int64_t		 id;		/* assigned by the store */
	int64_t		 at;
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	char		 kind[STORE_KIND_MAX + 1];	/* HTTPIdleWake ... */
	char		*detail_json;	/* object, or NULL */
};

int	store_event_add(struct store *, const struct store_event *);
/*
 * n events, as store_request_add() adds requests: all or none, each
 * checked before any is written; SQLite runs one statement per row.
 */
int	store_events_add(struct store *, const struct store_event *, size_t);
/* Newest last; app/service/kind NULL = any; since in ms; limit 0 = all. */
int	store_event_list(struct store *, const char *, const char *,
	    const char *, int64_t, size_t, struct store_event **, size_t *);
/* Oldest first, ids greater than after_id, at most limit (0 = all). */
int	store_event_after(struct store *, int64_t, size_t,
	    struct store_event **, size_t *);
void	store_event_free(struct store_event *, size_t);

/*
 * requests: the gateway's request log, written by hk-events a row per
 * batch of records, packed (reqbatch.h).  Never a query string, a header
 * value or a body: the path is stored as given, so the caller strips any
 * query first.
 */
#define STORE_METHOD_MAX	15
#define STORE_HOST_MAX		255
#define STORE_PATH_MAX		1023
#define STORE_OUTCOME_MAX	31
#define STORE_CLIENT_MAX	63	/* an IPv6 address as text fits */

struct store_request {
	int64_t		 id;		/* assigned by the store */
	int64_t		 at;		/* when the request arrived, ms */
	char		 app[STORE_NAME_MAX + 1];	/* "" = no route */
	char		 service[STORE_NAME_MAX + 1];
	char		 method[STORE_METHOD_MAX + 1];
	char		 host[STORE_HOST_MAX + 1];
	char		 path[STORE_PATH_MAX + 1];	/* no query */
	int		 status;	/* HTTP status, 0 if none was sent */
	int64_t		 duration_us;	/* whole request, wait included */
	int64_t		 wait_us;	/* of it, waiting for a cold start */
	int64_t		 wake_id;	/* the wake it joined; 0 = none */
	int64_t		 bytes_in;
	int64_t		 bytes_out;
	char		 outcome[STORE_OUTCOME_MAX + 1];	/* ok ... */
	char		 client[STORE_CLIENT_MAX + 1];	/* "" = unknown */
};

/*
 * Adds n records as one batch, in one transaction of its own unless the
 * caller has one open: all or none (a record with a field not terminated
 * refuses the batch; a caller's transaction must then be rolled back, as
 * after any error).  Ids follow the order of v, from the id after the
 * newest batch's last.
 */
int	store_request_add(struct store *, const struct store_request *,
	    size_t);
/* The same for a batch already packed (lib/reqbatch.h), as hk-events has. */
struct reqbatch;
int	store_request_add_packed(struct store *, const struct reqbatch *);
/*
 * app/service NULL = any, status 0 = any; since in ms; limit 0 = all,
 * else the newest limit records written (by id: the table has no index
 * on at); returned in the order of their at, then id.  A batch that does
 * not unpack fails the call, its id in the error.
 */
int	store_request_list(struct store *, const char *, const char *, int,
	    int64_t, size_t, struct store_request **, size_t *);

/*
 * Retention of events and requests: deletes the rows older than before
 * (Unix ms) and all but the newest max_rows (by id; ids that a rolled
 * back insert skipped count as rows, so a few fewer may be kept); 0 =
 * no limit for either.  *deleted counts the rows (records) gone (may be
 * NULL).  Requests go by whole batches: by age in id order, from the
 * oldest, the batches written before the first one with a record at or
 * after before (ignoring batches dated all more than a day ahead of this
 * host's clock); by rows, the batches that end before the newest
 * max_rows ids.  Request ids only grow while records remain; once
 * retention has emptied the table, they number from 1 again.
 */
int	store_event_prune(struct store *, int64_t, int64_t, int64_t *);
int	store_request_prune(struct store *, int64_t, int64_t, int64_t *);

/* settings: small key/value pairs that belong to the installation */
int	store_setting_put(struct store *, const char *, const char *);
/* 0 found (value malloc'd into *out), 1 not found. */
int	store_setting_get(struct store *, const char *, char **);

/*
 * Immutable blobs by hash (the code table): a source's archive, named by
 * its hex SHA-256 (lib/srctree.h).  put writes it unless that hash is
 * there already; get gives a malloc'd copy: 0, 1 when there is no such
 * hash, -1 on failure.
 */
#define STORE_HASH_MAX		64
int	store_code_put(struct store *, const char *, const void *, size_t);
int	store_code_get(struct store *, const char *, unsigned char **,
	    size_t *);
/*
 * Deletes the code that neither a service's spec nor a kept revision
 * (store_revision_prune()) names; *deleted (may be NULL) counts the
 * rows.  hk apply runs it in its transaction, after its writes.
 */
int	store_code_prune(struct store *, int64_t *);
/*
 * revisions: every revision hk applied to a service (hk(1) "history"),
 * with whether it passed its readiness gate (hk-scale(8) "Releases").
 * Deleted with their service; store_revision_prune() keeps the last keep
 * revisions of each service and its newest passed one, and the code of
 * those stays (store_code_prune()).
 *
 * add records a revision as pending (the caller's transaction writes it
 * with the service's spec); gate sets pending, passed or failed with a
 * reason ("" none) and never takes passed back: 0, 1 no such revision,
 * -1; get: 0, 1 none; passed: the newest passed revision lower than
 * below (INT64_MAX: any), 0 or 1 none; list: a service's, oldest first.
 */
#define STORE_GATE_MAX		7	/* pending passed failed */
#define STORE_GATE_REASON_MAX	767

struct store_revision {
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	int64_t		 revision;
	char		*spec_json;	/* as applied: secrets' digests too */
	char		 code_hash[STORE_HASH_MAX + 1];	/* "" none */
	int64_t		 applied_at;
	char		 gate[STORE_GATE_MAX + 1];
	int64_t		 gate_at;	/* 0 while pending */
	char		 reason[STORE_GATE_REASON_MAX + 1];
};

int	store_revision_add(struct store *, const char *, const char *,
	    int64_t, const char *, const char *);
int	store_revision_gate(struct store *, const char *, const char *,
	    int64_t, const char *, const char *);
int	store_revision_get(struct store *, const char *, const char *,
	    int64_t, struct store_revision *);
int	store_revision_passed(struct store *, const char *, const char *,
	    int64_t, struct store_revision *);
int	store_revision_list(struct store *, const char *, const char *,
	    struct store_revision **, size_t *);
int	store_revision_prune(struct store *, int64_t, int64_t *);
void	store_revision_clear(struct store_revision *);
void	store_revision_free(struct store_revision *, size_t);

/*
 * vetted: code hashes the vetting gate judged safe (hk(1) "vet"), with
 * the model that did; get: 0 with *model (malloc'd), 1 not judged safe,
 * -1.  store_code_prune() also forgets the verdicts of code it deletes.
 */
int	store_vetted_put(struct store *, const char *, const char *);
int	store_vetted_get(struct store *, const char *, char **);

/*
 * Secrets of an app: only sealed bytes (lib/secret.h) and a keyed
 * digest, never a value.  put replaces the value of app/name (its
 * created_at stays); get: 0, 1 no such secret, -1; list: app's, by
 * name; delete: 0, 1 no such secret, -1.
 */
struct store_secret {
	char		 app[STORE_NAME_MAX + 1];
	char		 name[STORE_NAME_MAX + 1];
	char		 digest[STORE_HASH_MAX + 1];
	int64_t		 created_at;
	int64_t		 updated_at;
};

int	store_secret_put(struct store *, const char *, const char *,
	    const void *, size_t, const char *);
int	store_secret_get(struct store *, const char *, const char *,
	    unsigned char **, size_t *);
int	store_secret_list(struct store *, const char *,
	    struct store_secret **, size_t *);
int	store_secret_delete(struct store *, const char *, const char *);
/*
 * The secret sealed last, of any app: its app, name and sealed bytes
 * (malloc'd).  0, 1 when the store holds none, -1.
 */
int	store_secret_newest(struct store *, char *, char *, unsigned char **,
	    size_t *);

/*
 * runs: hk-jobs's one-shot invocations (hk-jobs(8)).  put inserts a run
 * or updates what changes with its phase; get: 0, 1 no such run, -1;
 * list: the newest limit (0 = all) of app/service (NULL = any), oldest
 * first; abandon fails every run left in phase with the reason (a new
 * hk-jobs, of what the last one did not finish), *n counting them;
 * prune as store_event_prune(), finished runs only.
 */
#define STORE_RUN_ID_MAX	16
#define STORE_PHASE_MAX		15
#define STORE_TRIGGER_MAX	79	/* "schedule:" and a name */
#define STORE_REASON_MAX	255

struct store_run {
	char		 id[STORE_RUN_ID_MAX + 1];	/* 16 hex */
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	int64_t		 revision;	/* 0: not known yet */
	char		 trigger[STORE_TRIGGER_MAX + 1];	/* manual, apply:J, schedule:S */
	char		 method[STORE_METHOD_MAX + 1];
	char		 path[STORE_PATH_MAX + 1];
	int64_t		 event_bytes;
	char		 phase[STORE_PHASE_MAX + 1];	/* Pending ... */
	int64_t		 created_at;	/* Unix ms: Pending */
	int64_t		 started_at;	/* Running, 0 = never */
	int64_t		 finished_at;	/* its end, 0 = not yet */
	int		 status;	/* HTTP status, 0 = none */
	int64_t		 duration_us;	/* request sent to its end */
	unsigned char	*body;		/* excerpt, NULL = none */
	size_t		 body_len;
	char		 reason[STORE_REASON_MAX + 1];	/* "" = none */
};

int	store_run_put(struct store *, const struct store_run *);
int	store_run_get(struct store *, const char *, struct store_run *);
int	store_run_list(struct store *, const char *, const char *, size_t,
	    struct store_run **, size_t *);
int	store_run_abandon(struct store *, const char *, const char *,
	    int64_t *);
int	store_run_prune(struct store *, int64_t, int64_t, int64_t *);
void	store_run_clear(struct store_run *);
void	store_run_free(struct store_run *, size_t);

/*
 * jobs: the declarative runs of an app file, [jobs.NAME] (hk.toml(5)),
 * written by hk apply in its transaction; hk-jobs dispatches them.
 *
 * put inserts or updates the job's service, spec_json and run_id, never
 * done_run_id or run; get: 0, 1 no such job, -1; list: every job of app
 * (NULL = every app), by app then name; prune deletes the app's jobs whose
 * name is not in keep[0..nkeep), *removed counting them.
 *
 * claim is how a run_id is run once in an installation, even with several
 * hosts' hk-jobs: in one transaction it sets done_run_id = run_id and
 * run = row->id where the job still has exactly that run_id and a lower
 * done_run_id, and then inserts the run row (store_run_put()); 0 when it
 * did, 1 when not (another claimed it, or the job changed), -1 on error
 * (nothing written).
 */
struct store_job {
	char		 app[STORE_NAME_MAX + 1];
	char		 name[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	char		*spec_json;	/* event, method, path, timeout */
	int64_t		 run_id;	/* as applied, >= 0 */
	int64_t		 done_run_id;	/* the last one run; -1 none */
	char		 run[STORE_RUN_ID_MAX + 1];	/* its run, "" */
	int64_t		 updated_at;	/* Unix ms of the last put */
};

int	store_job_put(struct store *, const char *, const char *, const char *,
	    const char *, int64_t);
int	store_job_get(struct store *, const char *, const char *,
	    struct store_job *);
int	store_job_list(struct store *, const char *, struct store_job **,
	    size_t *);
int	store_job_prune(struct store *, const char *, char *const *, size_t,
	    int64_t *);
int	store_job_claim(struct store *, const char *, const char *, int64_t,
	    const struct store_run *);
void	store_job_clear(struct store_job *);
void	store_job_free(struct store_job *, size_t);

/*
 * schedules: [services.X.schedules.NAME] (hk.toml(5)), written by hk
 * apply; hk-jobs fires them.  last_fire is the schedule's clock time (Unix
 * ms) of the last firing claimed, so that one firing is taken once in an
 * installation.
 *
 * put inserts (last_fire = its last argument, the time of the apply) or
 * updates spec_json, keeping last_fire;
 * list: every schedule (app NULL) or an app's, by app, service, name;
 * prune deletes the app's schedules not named by the pairs
 * services[i]/names[i], i < nkeep, *removed counting them.
 *
 * claim: in one transaction, sets last_fire = fire where it is lower, and
 * then, if row is not NULL, inserts the run row; 0 when it did, 1 when
 * another firing at or after fire was claimed already, -1 on error.
 */
struct store_schedule {
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	char		 name[STORE_NAME_MAX + 1];
	char		*spec_json;	/* cron, timezone, event ... */
	int64_t		 last_fire;
	int64_t		 updated_at;
};

int	store_schedule_put(struct store *, const char *, const char *,
	    const char *, const char *, int64_t);
int	store_schedule_list(struct store *, const char *,
	    struct store_schedule **, size_t *);
int	store_schedule_prune(struct store *, const char *, char *const *,
	    char *const *, size_t, int64_t *);
int	store_schedule_claim(struct store *, const char *, const char *,
	    const char *, int64_t, const struct store_run *);
void	store_schedule_free(struct store_schedule *, size_t);

/*
 * leases: installation-wide named locks with an epoch (hk-lease).
 *
 * A lease is held by a store handle, at most one per handle, for as long as
 * the handle stays open: the engine holds a lock that dies with its holder
 * (PostgreSQL: a session advisory lock on the handle's connection, so
 * hk-lease opens a store of its own for it; SQLite: an fcntl lock on
 * "<db>.lease-<name>.lock", mode 0600, beside the database), and the leases
 * row says who holds it, since when, until when, and its epoch.  The lock
 * is the truth: a row whose holder lost its lock is taken over at once,
 * expired or not, and every acquisition bumps the epoch by one.
 *
 * The row also bounds how long what its holder runs may outlive it: until
 * expires_at + grace_ms.  A holder that lost its lock may still be running
 * prog until then (it stops prog by that time on its own clock), so a new
 * holder starts nothing before: store_lease_acquire() says how long to
 * wait (wait_ms).  A release sets grace_ms to 0 and expires_at to the
 * release time, so a released lease is taken over without a wait.  Times
 * under a lease come from the store's clock (PostgreSQL: the server's,
 * clock_timestamp()), so hosts with different clocks agree on them.
 *
 * Names are 1..STORE_NAME_MAX bytes of [A-Za-z0-9._-], starting with a
 * letter or digit.  The holder is free text ("host=h pid=123"); a renewal
 * matches it and the epoch exactly.
 */
#define STORE_HOLDER_MAX	255

struct store_lease {
	char		 name[STORE_NAME_MAX + 1];
	char		 holder[STORE_HOLDER_MAX + 1];
	int64_t		 epoch;		/* 1 for the first acquisition */
	int64_t		 acquired_at;
	int64_t		 expires_at;	/* the release time once released */
	int64_t		 grace_ms;	/* prog may outlive expires_at by it */
	int64_t		 wait_ms;	/* acquire: start nothing before */
};

/*
 * Takes the lease for ttl ms, for a holder that stops what it runs within
 * grace ms of the expiry: 0 got (*l is the new row, with its epoch, and
 * wait_ms how long the previous holder's prog may still run, from the
 * return of the call: 0 if its row was released or is past its grace),
 * 1 held elsewhere (*l is the stored row, naming the holder; all zero if
 * there is none yet), -1 error.  The new row's grace_ms covers the wait
 * too, so that a holder gone before its own prog started passes the wait
 * on to the next.
 */
int	store_lease_acquire(struct store *, const char *, const char *,
	    int64_t, int64_t, struct store_lease *);
/*
 * Extends the lease held through this handle to now + ttl ms (new expiry in
 * *l): 0 renewed, 1 lost (the engine's lock is gone with its connection or
 * file, or the row has another epoch or holder), -1 error: the lease may
 * still be held; retry until it expires.  Once a lease is taken, every
 * call on its store waits at most STORE_LEASE_WAIT(ttl) ms (PostgreSQL:
 * past that the connection is closed, and the lease lost; SQLite: the busy
 * timeout), so that a renewal can be retried before the lease expires.
 * A renewal is two statements, a check of the lock and the update.
 */
#define STORE_LEASE_WAIT(ttl)	((ttl) / 4 > 0 ? (ttl) / 4 : 1)
int	store_lease_renew(struct store *, struct store_lease *, int64_t);
/*
 * Marks the row released (expires_at = now, grace_ms = 0, if the lock and
 * the epoch are still ours) and drops the engine's lock, even when the
 * update fails.  Only once nothing started under the lease runs any more:
 * the next holder starts at once.  To give a lease up otherwise, close the
 * store: the row then keeps its expiry and grace for the next holder.
 */
int	store_lease_release(struct store *, struct store_lease *);
/* Reads the row of a lease: 0 found, 1 no such lease (wait_ms is 0). */
int	store_lease_get(struct store *, const char *, struct store_lease *);
/*
 * Bounds every later wait of the store to ms, as a lease's lock does
 * (STORE_LEASE_WAIT): for a process that acts under a lease it does not
 * lock itself (a joiner, a daemon run by hk-lease), so that a server cut
 * off cannot hold one of its calls past the TTL.  PostgreSQL: past the
 * bound the connection is closed and the call fails; SQLite has no
 * network, and its busy timeout stays as it is.
 */
void	store_bound(struct store *, int64_t);

/*
 * Fences every later write of this handle by the epoch of a lease that a
 * process of this host holds for it (hk-lease(1), HAKOPOD_LEASE_EPOCH):
 * each transaction, and each write outside one (run in a transaction of
 * its own), first reads the lease's row in the same transaction, and is
 * refused (-1, the transaction rolled back) once the row has another
 * epoch or none.  An acquisition takes the installation's write lock, as
 * a transaction does, so no write commits after a newer epoch.  fn is then called with the reason, after the rollback
 * (a process that no longer leads stops: it may not write, and what it
 * does not write it cannot act on); if it returns, the call fails with
 * that reason.  Reads are not fenced.  0, or -1 for a bad name or epoch.
 */
typedef void	store_fenced_fn(void *, const char *);
int	store_fence(struct store *, const char *, int64_t, store_fenced_fn *,
	    void *);
/*
 * Before an act that writes nothing first (starting or stopping a
 * process): the check alone, in a transaction of its own.  0 when the
 * store is not fenced, the epoch is still ours, or a transaction is open
 * (its start checked); -1 fenced (after fn), or the store failed.
 */
int	store_fence_check(struct store *);

#endif
