/*
 * store_schema.c - the schema of the state store, written once for both
 * engines: the DDL of every migration (store_migrations[], which store.c
 * applies), the data step of migration 4, and the SQL text of every
 * statement the store runs (store_sql[], by its enum store_q).
 *
 * Schema.  One schema for both engines, written once below (SCHEMA_V1) and
 * instantiated per engine with its id column type and, on PostgreSQL,
 * COLLATE "C" on name columns so that ORDER BY and comparisons are bytewise
 * as in SQLite.  Times are int64 Unix milliseconds (BIGINT) everywhere.
 *
 *	apps		name PK, path, applied_at
 *	services	(app, name) PK, app -> apps (store_app_put() first);
 *			spec (canonical JSON),
 *			revision (1 when new, +1 on each spec change),
 *			desired auto|stopped, serverless 0|1, created_at,
 *			updated_at (last revision change)
 *	instances	(app, service, replica) PK -> services, deleted
 *			with it; revision, state, endpoint, node, pid,
 *			pid_start, started_at, ready_at (0 until ready),
 *			updated_at; replica (migration 11) 0 for the first
 *			instance of a service, 1..replicas-1 for the others
 *	events		id (autoincrement / bigserial), at, app, service,
 *			kind, detail (JSON or NULL); no foreign key: events
 *			outlive what they describe
 *	requests	the gateway's request log, written by hk-events:
 *			a row per batch of records (migration 4): id (of
 *			its first record; the others follow), n, min_at,
 *			max_at, records (packed, lib/reqbatch.h)
 *	leases		name PK, holder, epoch, acquired_at, expires_at,
 *			grace_ms (migration 2: how long after expires_at
 *			the holder's prog may still run; 0 once released)
 *	settings	key PK, value
 *	code		(migration 5) hash PK (hex SHA-256 of data), size,
 *			data (a source's archive, lib/srctree.h), created_at;
 *			written once, never changed: rows are immutable
 *	secrets		(migration 6) app, name PK, data (sealed: nonce
 *			and ciphertext, lib/secret.h; never the value),
 *			digest (keyed, hex), created_at, updated_at
 *	runs		(migration 7) id PK (16 hex), app, service,
 *			revision, trig (manual ...), method, path,
 *			event_bytes, phase, created_at, started_at,
 *			finished_at, status, duration_us, body (an
 *			excerpt, runs_body_bytes), reason; hk-jobs's
 *	jobs		(migration 8) (app, name) PK, service, spec_json,
 *			run_id (as applied), done_run_id (the last
 *			claimed, -1 none), run (its runs.id, ''),
 *			updated_at; hk apply's, claimed by hk-jobs
 *	schedules	(migration 8) (app, service, name) PK, spec_json,
 *			last_fire (the last firing claimed), updated_at
 *	vetted		(migration 9) hash PK, model, at: code the vetting
 *			gate judged safe, pruned with the code
 *	revisions	(migration 10) (app, service, revision) PK ->
 *			services, deleted with it; spec (as applied, with
 *			its secrets' digests), code_hash ('' none),
 *			applied_at, gate pending|passed|failed, gate_at,
 *			reason (of a failed gate); the last keep_revisions
 *			of each service and its last passed one are kept
 *	schema_migrations  version PK, applied_at
 *
 * Migration policy.  Migrations are numbered from 1 and append-only: a
 * released migration is never edited, a change is a new number.  store_open()
 * applies the missing ones in one transaction, under a lock that also
 * covers two processes opening a fresh store at the same moment (SQLite:
 * BEGIN IMMEDIATE; PostgreSQL: pg_advisory_xact_lock), recording each in
 * schema_migrations.  A store whose version is newer than this binary knows
 * is refused rather than used.  The DDL is the only SQL run without
 * parameters; it is constant.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static int	 read_request(struct store *, struct store_request *);
static int	 read_request_row(struct store *, void *);
static int	 requests_to_batches(struct store *);

/*
 * The schema, written once.  ID is the autoincrement primary key column
 * type, NAME the type of name and key columns.
 */
#define SCHEMA_V1(ID, NAME)						\
	"CREATE TABLE apps ("						\
	"  name " NAME " NOT NULL PRIMARY KEY,"				\
	"  path TEXT NOT NULL,"						\
	"  applied_at BIGINT NOT NULL);"				\
	"CREATE TABLE services ("					\
	"  app " NAME " NOT NULL REFERENCES apps (name)"		\
	"    ON DELETE CASCADE,"					\
	"  name " NAME " NOT NULL,"					\
	"  spec TEXT NOT NULL,"						\
	"  revision BIGINT NOT NULL,"					\
	"  desired TEXT NOT NULL DEFAULT 'auto'"			\
	"    CHECK (desired IN ('auto', 'stopped')),"			\
	"  serverless INTEGER NOT NULL DEFAULT 0,"			\
	"  created_at BIGINT NOT NULL,"					\
	"  updated_at BIGINT NOT NULL,"					\
	"  PRIMARY KEY (app, name));"					\
	"CREATE TABLE instances ("					\
	"  app " NAME " NOT NULL,"					\
	"  service " NAME " NOT NULL,"					\
	"  revision BIGINT NOT NULL,"					\
	"  state TEXT NOT NULL,"					\
	"  endpoint TEXT NOT NULL DEFAULT '',"				\
	"  node TEXT NOT NULL DEFAULT '',"				\
	"  pid BIGINT NOT NULL DEFAULT 0,"				\
	"  pid_start BIGINT NOT NULL DEFAULT 0,"			\
	"  started_at BIGINT NOT NULL DEFAULT 0,"			\
	"  ready_at BIGINT NOT NULL DEFAULT 0,"				\
	"  updated_at BIGINT NOT NULL,"					\
	"  PRIMARY KEY (app, service),"					\
	"  FOREIGN KEY (app, service) REFERENCES services (app, name)"	\
	"    ON DELETE CASCADE);"					\
	"CREATE TABLE events ("						\
	"  id " ID ","							\
	"  at BIGINT NOT NULL,"						\
	"  app " NAME " NOT NULL DEFAULT '',"				\
	"  service " NAME " NOT NULL DEFAULT '',"			\
	"  kind TEXT NOT NULL,"						\
	"  detail TEXT);"						\
	"CREATE INDEX events_at ON events (at);"			\
	"CREATE INDEX events_service_at ON events (app, service, at);"	\
	"CREATE TABLE requests ("					\
	"  id " ID ","							\
	"  at BIGINT NOT NULL,"						\
	"  app " NAME " NOT NULL DEFAULT '',"				\
	"  service " NAME " NOT NULL DEFAULT '',"			\
	"  method TEXT NOT NULL DEFAULT '',"				\
	"  host TEXT NOT NULL DEFAULT '',"				\
	"  path TEXT NOT NULL DEFAULT '',"				\
	"  status INTEGER NOT NULL DEFAULT 0,"				\
	"  duration_us BIGINT NOT NULL DEFAULT 0,"			\
	"  wait_us BIGINT NOT NULL DEFAULT 0,"				\
	"  wake_id BIGINT,"						\
	"  bytes_in BIGINT NOT NULL DEFAULT 0,"				\
	"  bytes_out BIGINT NOT NULL DEFAULT 0,"			\
	"  outcome TEXT NOT NULL DEFAULT '');"				\
	"CREATE INDEX requests_at ON requests (at);"			\
	"CREATE INDEX requests_service_at ON requests (service, at);"	\
	"CREATE TABLE leases ("						\
	"  name " NAME " NOT NULL PRIMARY KEY,"				\
	"  holder TEXT NOT NULL,"					\
	"  epoch BIGINT NOT NULL,"					\
	"  acquired_at BIGINT NOT NULL,"				\
	"  expires_at BIGINT NOT NULL);"				\
	"CREATE TABLE settings ("					\
	"  key " NAME " NOT NULL PRIMARY KEY,"				\
	"  value TEXT NOT NULL);"

#define LITE_ID		"INTEGER PRIMARY KEY AUTOINCREMENT"
#define LITE_NAME	"TEXT"
#define PG_ID		"BIGSERIAL PRIMARY KEY"
#define PG_NAME		"TEXT COLLATE \"C\""

/* Rows from before it count as released: their holders did not wait. */
#define LEASE_GRACE_V2 \
	"ALTER TABLE leases ADD COLUMN grace_ms BIGINT NOT NULL DEFAULT 0"

/*
 * Version 3: the request log took a row per request of the installation
 * (a row per batch since version 4) and is read rarely: on SQLite its
 * indexes cost hk-events more than the rows (a row about 1.5 us; (at)
 * 0.5 us more, (service, at) 0.3 to 3 us more, the more services
 * interleave the more), and ids grow with time, so
 * the queries and retention walk the primary key instead (Q_REQUEST_*).
 * SQLite also drops AUTOINCREMENT, a read and a write of sqlite_sequence
 * per statement: an id is then max(id) + 1, which only grows while rows
 * are pruned from the oldest end, and starts again at 1 only once
 * retention has emptied the table.  Nothing follows request ids (tail -f
 * follows events, which keep AUTOINCREMENT).  SQLite drops AUTOINCREMENT
 * only by copying the table, ids kept; PostgreSQL keeps its sequence.
 */
#define LITE_REQUESTS_V3						\
	"CREATE TABLE requests_v3 ("					\
	"  id INTEGER PRIMARY KEY,"					\
	"  at BIGINT NOT NULL,"						\
	"  app TEXT NOT NULL DEFAULT '',"				\
	"  service TEXT NOT NULL DEFAULT '',"				\
	"  method TEXT NOT NULL DEFAULT '',"				\
	"  host TEXT NOT NULL DEFAULT '',"				\
	"  path TEXT NOT NULL DEFAULT '',"				\
	"  status INTEGER NOT NULL DEFAULT 0,"				\
	"  duration_us BIGINT NOT NULL DEFAULT 0,"			\
	"  wait_us BIGINT NOT NULL DEFAULT 0,"				\
	"  wake_id BIGINT,"						\
	"  bytes_in BIGINT NOT NULL DEFAULT 0,"				\
	"  bytes_out BIGINT NOT NULL DEFAULT 0,"			\
	"  outcome TEXT NOT NULL DEFAULT '');"				\
	"INSERT INTO requests_v3 SELECT id, at, app, service, method,"	\
	"  host, path, status, duration_us, wait_us, wake_id,"		\
	"  bytes_in, bytes_out, outcome FROM requests ORDER BY id;"	\
	"DROP TABLE requests;"						\
	"ALTER TABLE requests_v3 RENAME TO requests;"
#define PG_REQUESTS_V3							\
	"DROP INDEX requests_at;"					\
	"DROP INDEX requests_service_at;"

/*
 * The request log in batches: a row per batch of records that hk-events
 * wrote in one transaction, packed (lib/reqbatch.h).  A row per request
 * cost hk-events 1.5 us of CPU a record on SQLite (binding, the record,
 * the b-tree), which took 10 to 15% of the gateway's throughput beside
 * it on two CPUs; a batch costs about 0.1 us a record and a quarter of
 * the bytes.  The rows of version 3 are packed into batches by
 * requests_to_batches() below, their ids kept, then dropped.
 */
#define REQUESTS_V4(ID, BLOB)						\
	"CREATE TABLE requests ("					\
	"  id " ID " PRIMARY KEY,"					\
	"  n INTEGER NOT NULL,"						\
	"  min_at BIGINT NOT NULL,"					\
	"  max_at BIGINT NOT NULL,"					\
	"  records " BLOB " NOT NULL);"
#define LITE_REQUESTS_V4						\
	"ALTER TABLE requests RENAME TO requests_v3;"			\
	REQUESTS_V4("INTEGER", "BLOB")
#define PG_REQUESTS_V4							\
	"ALTER TABLE requests RENAME TO requests_v3;"			\
	"ALTER INDEX requests_pkey RENAME TO requests_v3_pkey;"		\
	REQUESTS_V4("BIGINT NOT NULL", "BYTEA")

/*
 * Version 5: the sources of services (hk.toml(5) "source"), one row per
 * archive, named by its hash, so that every host of the installation
 * can write out the tree a revision names.
 */
#define CODE_V5(NAME, BLOB)						\
	"CREATE TABLE code ("						\
	"  hash " NAME " NOT NULL PRIMARY KEY,"				\
	"  size BIGINT NOT NULL,"					\
	"  data " BLOB " NOT NULL,"					\
	"  created_at BIGINT NOT NULL);"

/*
 * Version 6: secrets (hk.toml(5) "secrets"), sealed by hk with the key
 * file of the host (lib/secret.h): a copy of this table alone opens
 * nothing.  No foreign key: a secret is set before its app is applied.
 */
#define SECRETS_V6(NAME, BLOB)						\
	"CREATE TABLE secrets ("					\
	"  app " NAME " NOT NULL,"					\
	"  name " NAME " NOT NULL,"					\
	"  data " BLOB " NOT NULL,"					\
	"  digest " NAME " NOT NULL,"					\
	"  created_at BIGINT NOT NULL,"					\
	"  updated_at BIGINT NOT NULL,"					\
	"  PRIMARY KEY (app, name));"

/*
 * Version 7: runs of hk-jobs (hk-jobs(8)), one row per run, written by
 * hk-jobs alone at each phase.  No foreign key: a run outlives its service.
 */
#define RUNS_V7(NAME, BLOB)						\
	"CREATE TABLE runs ("						\
	"  id " NAME " NOT NULL PRIMARY KEY,"				\
	"  app " NAME " NOT NULL,"					\
	"  service " NAME " NOT NULL,"					\
	"  revision BIGINT NOT NULL DEFAULT 0,"				\
	"  trig TEXT NOT NULL,"						\
	"  method TEXT NOT NULL,"					\
	"  path TEXT NOT NULL,"						\
	"  event_bytes BIGINT NOT NULL DEFAULT 0,"			\
	"  phase TEXT NOT NULL,"					\
	"  created_at BIGINT NOT NULL,"					\
	"  started_at BIGINT NOT NULL DEFAULT 0,"			\
	"  finished_at BIGINT NOT NULL DEFAULT 0,"			\
	"  status INTEGER NOT NULL DEFAULT 0,"				\
	"  duration_us BIGINT NOT NULL DEFAULT 0,"			\
	"  body " BLOB ","						\
	"  reason TEXT NOT NULL DEFAULT '');"				\
	"CREATE INDEX runs_created ON runs (created_at);"

/*
 * Version 8: the declarative runs of an app ([jobs.NAME]) and its
 * schedules ([services.X.schedules.NAME]), written by hk apply and
 * claimed by hk-jobs: a job's run_id runs once when done_run_id reaches
 * it, a schedule's firing once when last_fire reaches it, each by one
 * compare-and-set update (store_job_claim(), store_schedule_claim()).
 * No foreign key, as runs: hk apply prunes them (store_job_prune(),
 * store_schedule_prune()) in its transaction.
 */
#define JOBS_V8(NAME)							\
	"CREATE TABLE jobs ("						\
	"  app " NAME " NOT NULL,"					\
	"  name " NAME " NOT NULL,"					\
	"  service " NAME " NOT NULL,"					\
	"  spec_json TEXT NOT NULL,"					\
	"  run_id BIGINT NOT NULL,"					\
	"  done_run_id BIGINT NOT NULL DEFAULT -1,"			\
	"  run " NAME " NOT NULL DEFAULT '',"				\
	"  updated_at BIGINT NOT NULL,"					\
	"  PRIMARY KEY (app, name));"					\
	"CREATE TABLE schedules ("					\
	"  app " NAME " NOT NULL,"					\
	"  service " NAME " NOT NULL,"					\
	"  name " NAME " NOT NULL,"					\
	"  spec_json TEXT NOT NULL,"					\
	"  last_fire BIGINT NOT NULL,"					\
	"  updated_at BIGINT NOT NULL,"					\
	"  PRIMARY KEY (app, service, name));"

/*
 * Version 9: code hashes the vetting gate judged safe (hk(1) "vet"), so
 * that the same code is not sent again.  Only safe verdicts are kept;
 * a row goes with the code it judged (store_code_prune()).
 */
#define VETTED_V9(NAME)							\
	"CREATE TABLE vetted ("						\
	"  hash " NAME " NOT NULL PRIMARY KEY,"				\
	"  model TEXT NOT NULL,"					\
	"  at BIGINT NOT NULL);"

/*
 * Version 10: every applied revision of a service (hk(1) "history",
 * "rollback"), with whether it passed its readiness gate, so that
 * hk-scale can start the last revision that passed while a newer one
 * fails (hk-scale(8) "Releases").  Seeded with each service's current
 * revision: passed if the gate setting of hk-scale says so, or if the
 * service is ordinary (it has no gate).
 */
#define REVISIONS_V10(NAME, CODE)					\
	"CREATE TABLE revisions ("					\
	"  app " NAME " NOT NULL,"					\
	"  service " NAME " NOT NULL,"					\
	"  revision BIGINT NOT NULL,"					\
	"  spec TEXT NOT NULL,"						\
	"  code_hash " NAME " NOT NULL DEFAULT '',"			\
	"  applied_at BIGINT NOT NULL,"					\
	"  gate TEXT NOT NULL DEFAULT 'pending'"			\
	"    CHECK (gate IN ('pending', 'passed', 'failed')),"		\
	"  gate_at BIGINT NOT NULL DEFAULT 0,"				\
	"  reason TEXT NOT NULL DEFAULT '',"				\
	"  PRIMARY KEY (app, service, revision),"			\
	"  FOREIGN KEY (app, service) REFERENCES services (app, name)"	\
	"    ON DELETE CASCADE);"					\
	"INSERT INTO revisions (app, service, revision, spec, code_hash,"	\
	"  applied_at, gate, gate_at) "					\
	"SELECT app, name, revision, spec, COALESCE(" CODE ", ''),"	\
	"  updated_at, CASE WHEN passed THEN 'passed' ELSE 'pending' END,"\
	"  CASE WHEN passed THEN updated_at ELSE 0 END FROM ("		\
	"  SELECT services.*, (serverless = 0 OR revision <= COALESCE("	\
	"    (SELECT CAST(value AS BIGINT) FROM settings WHERE key ="	\
	"    'hk-scale.gate.' || services.app || '/' || services.name),"	\
	"    0)) AS passed FROM services) AS s;"
#define LITE_CODE_V10	"json_extract(spec, '$.code_hash')"
#define PG_CODE_V10	"(spec::json ->> 'code_hash')"

/*
 * Version 11: a service runs "replicas" instances (hk.toml(5)), a row
 * each, numbered from 0.  Rows of before are replica 0, so that the
 * instances they describe are adopted as they were.  SQLite cannot
 * change a primary key: the table is made again.
 */
#define LITE_REPLICAS_V11						\
	"CREATE TABLE instances_v11 ("					\
	"  app TEXT NOT NULL,"						\
	"  service TEXT NOT NULL,"					\
	"  revision BIGINT NOT NULL,"					\
	"  state TEXT NOT NULL,"					\
	"  endpoint TEXT NOT NULL DEFAULT '',"				\
	"  node TEXT NOT NULL DEFAULT '',"				\
	"  pid BIGINT NOT NULL DEFAULT 0,"				\
	"  pid_start BIGINT NOT NULL DEFAULT 0,"			\
	"  started_at BIGINT NOT NULL DEFAULT 0,"			\
	"  ready_at BIGINT NOT NULL DEFAULT 0,"				\
	"  updated_at BIGINT NOT NULL,"					\
	"  replica INTEGER NOT NULL DEFAULT 0,"				\
	"  PRIMARY KEY (app, service, replica),"			\
	"  FOREIGN KEY (app, service) REFERENCES services (app, name)"	\
	"    ON DELETE CASCADE);"					\
	"INSERT INTO instances_v11 (app, service, revision, state,"	\
	"  endpoint, node, pid, pid_start, started_at, ready_at,"	\
	"  updated_at) SELECT app, service, revision, state, endpoint,"	\
	"  node, pid, pid_start, started_at, ready_at, updated_at"	\
	"  FROM instances;"						\
	"DROP TABLE instances;"						\
	"ALTER TABLE instances_v11 RENAME TO instances;"
#define PG_REPLICAS_V11							\
	"ALTER TABLE instances ADD COLUMN replica INTEGER NOT NULL"	\
	"  DEFAULT 0;"							\
	"ALTER TABLE instances DROP CONSTRAINT instances_pkey;"		\
	"ALTER TABLE instances ADD PRIMARY KEY (app, service, replica);"

/* Append only; see the migration policy above. */
const struct store_migration store_migrations[] = {
	{ 1, "initial schema",
	    SCHEMA_V1(LITE_ID, LITE_NAME), SCHEMA_V1(PG_ID, PG_NAME), NULL },
	{ 2, "lease grace", LEASE_GRACE_V2, LEASE_GRACE_V2, NULL },
	{ 3, "request log without indexes", LITE_REQUESTS_V3, PG_REQUESTS_V3,
	    NULL },
	{ 4, "request log in batches", LITE_REQUESTS_V4, PG_REQUESTS_V4,
	    requests_to_batches },
	{ 5, "code by hash", CODE_V5(LITE_NAME, "BLOB"),
	    CODE_V5(PG_NAME, "BYTEA"), NULL },
	{ 6, "sealed secrets", SECRETS_V6(LITE_NAME, "BLOB"),
	    SECRETS_V6(PG_NAME, "BYTEA"), NULL },
	{ 7, "runs", RUNS_V7(LITE_NAME, "BLOB"), RUNS_V7(PG_NAME, "BYTEA"),
	    NULL },
	{ 8, "jobs and schedules", JOBS_V8(LITE_NAME), JOBS_V8(PG_NAME),
	    NULL },
	{ 9, "vetted code", VETTED_V9(LITE_NAME), VETTED_V9(PG_NAME), NULL },
	{ 10, "revisions", REVISIONS_V10(LITE_NAME, LITE_CODE_V10),
	    REVISIONS_V10(PG_NAME, PG_CODE_V10), NULL },
	{ 11, "replicas", LITE_REPLICAS_V11, PG_REPLICAS_V11, NULL },
};
const size_t store_nmigrations = NITEMS(store_migrations);

const char store_migrations_table[] =
	"CREATE TABLE IF NOT EXISTS schema_migrations ("
	"  version BIGINT NOT NULL PRIMARY KEY,"
	"  applied_at BIGINT NOT NULL)";

#define SERVICE_COLS \
	"app, name, spec, revision, desired, serverless, created_at, updated_at"
#define INSTANCE_COLS \
	"app, service, revision, state, endpoint, node, pid, pid_start, " \
	"started_at, ready_at, updated_at, replica"
#define EVENT_COLS	"id, at, app, service, kind, detail"
#define LEASE_COLS \
	"name, holder, epoch, acquired_at, expires_at, grace_ms"
#define RUN_COLS \
	"id, app, service, revision, trig, method, path, event_bytes, " \
	"phase, created_at, started_at, finished_at, status, duration_us, " \
	"body, reason"
#define JOB_COLS \
	"app, name, service, spec_json, run_id, done_run_id, run, updated_at"
#define SCHEDULE_COLS \
	"app, service, name, spec_json, last_fire, updated_at"
#define REVISION_COLS \
	"app, service, revision, spec, code_hash, applied_at, gate, " \
	"gate_at, reason"
#define REQUEST_COLS \
	"id, at, app, service, method, host, path, status, duration_us, " \
	"wait_us, wake_id, bytes_in, bytes_out, outcome"

const struct store_sql store_sql[Q_COUNT] = {
	[Q_SCHEMA_VERSION] = { "schema version",
	    "SELECT COALESCE(MAX(version), 0) FROM schema_migrations" },
	[Q_MIGRATION_ADD] = { "record migration",
	    "INSERT INTO schema_migrations (version, applied_at) "
	    "VALUES ($1, $2)" },
	[Q_APP_PUT] = { "app put",
	    "INSERT INTO apps (name, path, applied_at) VALUES ($1, $2, $3) "
	    "ON CONFLICT (name) DO UPDATE SET path = excluded.path, "
	    "applied_at = excluded.applied_at" },
	/*
	 * One statement, so it is atomic on its own: concurrent writers
	 * each bump the revision once, and an unchanged spec writes nothing
	 * and returns no row.
	 */
	[Q_SERVICE_PUT] = { "service put",
	    "INSERT INTO services (" SERVICE_COLS ") "
	    "VALUES ($1, $2, $3, 1, 'auto', $4, $5, $5) "
	    "ON CONFLICT (app, name) DO UPDATE SET spec = excluded.spec, "
	    "serverless = excluded.serverless, "
	    "revision = services.revision + 1, "
	    "updated_at = excluded.updated_at "
	    "WHERE services.spec IS DISTINCT FROM excluded.spec "
	    "RETURNING revision" },
	[Q_SERVICE_REVISION] = { "service revision",
	    "SELECT revision FROM services WHERE app = $1 AND name = $2" },
	[Q_SERVICE_GET] = { "service get",
	    "SELECT " SERVICE_COLS " FROM services "
	    "WHERE app = $1 AND name = $2" },
	[Q_SERVICE_LIST] = { "service list",
	    "SELECT " SERVICE_COLS " FROM services ORDER BY app, name" },
	[Q_SERVICE_NAMES] = { "service names",
	    "SELECT name FROM services WHERE app = $1 ORDER BY name" },
	[Q_SERVICE_DELETE] = { "service delete",
	    "DELETE FROM services WHERE app = $1 AND name = $2" },
	[Q_SERVICE_DESIRED] = { "service set desired",
	    "UPDATE services SET desired = $3 WHERE app = $1 AND name = $2" },
	[Q_COUNT_SERVERLESS] = { "count serverless",
	    "SELECT COUNT(*) FROM services "
	    "WHERE serverless <> 0 AND ($1 IS NULL OR app <> $1)" },
	[Q_INSTANCE_PUT] = { "instance put",
	    "INSERT INTO instances (" INSTANCE_COLS ") "
	    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
	    "ON CONFLICT (app, service, replica) DO UPDATE SET "
	    "revision = excluded.revision, state = excluded.state, "
	    "endpoint = excluded.endpoint, node = excluded.node, "
	    "pid = excluded.pid, pid_start = excluded.pid_start, "
	    "started_at = excluded.started_at, "
	    "ready_at = excluded.ready_at, updated_at = excluded.updated_at" },
	[Q_INSTANCE_GET] = { "instance get",
	    "SELECT " INSTANCE_COLS " FROM instances "
	    "WHERE app = $1 AND service = $2 AND replica = 0" },
	[Q_INSTANCE_LIST] = { "instance list",
	    "SELECT " INSTANCE_COLS " FROM instances "
	    "ORDER BY app, service, replica" },
	[Q_INSTANCE_DELETE] = { "instance delete",
	    "DELETE FROM instances WHERE app = $1 AND service = $2 "
	    "AND replica = $3" },
	[Q_INSTANCE_DELETE_ALL] = { "instance delete all",
	    "DELETE FROM instances WHERE app = $1 AND service = $2" },
	[Q_EVENT_ADD] = { "event add",
	    "INSERT INTO events (at, app, service, kind, detail) "
	    "VALUES ($1, $2, $3, $4, $5)" },
	/* The newest $5, returned oldest first. */
	[Q_EVENT_LIST] = { "event list",
	    "SELECT " EVENT_COLS " FROM (SELECT " EVENT_COLS " FROM events "
	    "WHERE ($1 IS NULL OR app = $1) AND ($2 IS NULL OR service = $2) "
	    "AND ($3 IS NULL OR kind = $3) AND at >= $4 "
	    "ORDER BY at DESC, id DESC LIMIT $5) AS t ORDER BY at, id" },
	[Q_EVENT_AFTER] = { "event after",
	    "SELECT " EVENT_COLS " FROM events WHERE id > $1 "
	    "ORDER BY id LIMIT $2" },
	/*
	 * Retention: by age on the (at) index; by rows on the primary key,
	 * keeping the newest $1 ids (O(1), no count of the table); each
	 * $2 rows at most, the oldest first (store_prune()).
	 */
	[Q_EVENT_PRUNE_AGE] = { "event prune by age",
	    "DELETE FROM events WHERE id IN (SELECT id FROM events "
	    "WHERE at < $1 ORDER BY at LIMIT $2)" },
	[Q_EVENT_PRUNE_ROWS] = { "event prune by rows",
	    "DELETE FROM events WHERE id IN (SELECT id FROM events "
	    "WHERE id <= (SELECT MAX(id) FROM events) - $1 "
	    "ORDER BY id LIMIT $2)" },
	/*
	 * Batches follow each other: the next starts at the id after the
	 * newest.  Only under the write lock (store_begin()), so no two
	 * writers take the same ids; retention by rows reads it without,
	 * where an id taken meanwhile only moves its cut a little.
	 */
	[Q_REQUEST_NEXT_ID] = { "request next id",
	    "SELECT COALESCE((SELECT id + n FROM requests "
	    "ORDER BY id DESC LIMIT 1), 1)" },
	[Q_REQUEST_ADD] = { "request add",
	    "INSERT INTO requests (id, n, min_at, max_at, records) "
	    "VALUES ($1, $2, $3, $4, $5)" },
	/*
	 * Batches older than id $1 with a record at or after $2, newest
	 * first, $3 of them: the list walks the primary key backwards a
	 * few batches a statement, the records filtered as they unpack.
	 */
	[Q_REQUEST_LIST] = { "request list",
	    "SELECT id, records FROM requests WHERE id < $1 AND max_at >= $2 "
	    "ORDER BY id DESC LIMIT $3" },
	/*
	 * Retention by age walks the primary key from the oldest: the
	 * batches before the first one with a record at or after $1 go (all
	 * of them if there is none).  A batch whose records are all dated
	 * past $2 (a day ahead of this host's clock) does not hold the walk
	 * up: a clock set wrong once would otherwise stop retention by age
	 * until its records were due.
	 */
	[Q_REQUEST_AGE_CUT] = { "request age cut",
	    "SELECT COALESCE((SELECT id FROM requests WHERE max_at >= $1 "
	    "AND min_at <= $2 ORDER BY id LIMIT 1), "
	    "(SELECT id + n FROM requests ORDER BY id DESC LIMIT 1), 0)" },
	/*
	 * Where the next step of a cut at $1 ends: after $2 rows, or at
	 * $1 (store_request_prune()).
	 */
	[Q_REQUEST_BATCH_CUT] = { "request batch cut",
	    "SELECT COALESCE((SELECT id FROM requests WHERE id < $1 "
	    "ORDER BY id LIMIT 1 OFFSET $2), $1)" },
	/* Whole batches that end before id $1. */
	[Q_REQUEST_COUNT_BEFORE] = { "request count before",
	    "SELECT COALESCE(SUM(n), 0) FROM requests "
	    "WHERE id < $1 AND id + n <= $1" },
	[Q_REQUEST_DELETE_BEFORE] = { "request delete before",
	    "DELETE FROM requests WHERE id < $1 AND id + n <= $1" },
	/* Migration 4 only: the rows of version 3, $2 after id $1. */
	[Q_REQUEST_V3_READ] = { "request v3 read",
	    "SELECT " REQUEST_COLS " FROM requests_v3 WHERE id > $1 "
	    "ORDER BY id LIMIT $2" },
	[Q_SETTING_PUT] = { "setting put",
	    "INSERT INTO settings (key, value) VALUES ($1, $2) "
	    "ON CONFLICT (key) DO UPDATE SET value = excluded.value" },
	[Q_SETTING_GET] = { "setting get",
	    "SELECT value FROM settings WHERE key = $1" },
	/* A hash names its bytes: a row already there is the same. */
	[Q_CODE_PUT] = { "code put",
	    "INSERT INTO code (hash, size, data, created_at) "
	    "VALUES ($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING" },
	[Q_CODE_GET] = { "code get",
	    "SELECT data FROM code WHERE hash = $1" },
	[Q_VETTED_PUT] = { "vetted put",
	    "INSERT INTO vetted (hash, model, at) VALUES ($1, $2, $3) "
	    "ON CONFLICT (hash) DO UPDATE SET model = excluded.model, "
	    "at = excluded.at" },
	[Q_VETTED_GET] = { "vetted get",
	    "SELECT model FROM vetted WHERE hash = $1" },
	/* After the code's prune: a verdict goes with its code. */
	[Q_VETTED_PRUNE] = { "vetted prune",
	    "DELETE FROM vetted WHERE NOT EXISTS (SELECT 1 FROM code "
	    "WHERE code.hash = vetted.hash)" },
	/* created_at stays that of the first value. */
	[Q_SECRET_PUT] = { "secret put",
	    "INSERT INTO secrets (app, name, data, digest, created_at, "
	    "updated_at) VALUES ($1, $2, $3, $4, $5, $5) "
	    "ON CONFLICT (app, name) DO UPDATE SET data = excluded.data, "
	    "digest = excluded.digest, updated_at = excluded.updated_at" },
	[Q_SECRET_GET] = { "secret get",
	    "SELECT data FROM secrets WHERE app = $1 AND name = $2" },
	/* The key check of every control host (secret_key_verify()). */
	[Q_SECRET_NEWEST] = { "secret newest",
	    "SELECT app, name, data FROM secrets "
	    "ORDER BY updated_at DESC, app, name LIMIT 1" },
	[Q_SECRET_LIST] = { "secret list",
	    "SELECT app, name, digest, created_at, updated_at FROM secrets "
	    "WHERE app = $1 ORDER BY name" },
	/* hk-jobs writes a run whole at each phase. */
	[Q_RUN_PUT] = { "run put",
	    "INSERT INTO runs (" RUN_COLS ") VALUES ($1, $2, $3, $4, $5, $6, "
	    "$7, $8, $9, $10, $11, $12, $13, $14, $15, $16) "
	    "ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, "
	    "phase = excluded.phase, started_at = excluded.started_at, "
	    "finished_at = excluded.finished_at, status = excluded.status, "
	    "duration_us = excluded.duration_us, body = excluded.body, "
	    "reason = excluded.reason" },
	[Q_RUN_GET] = { "run get",
	    "SELECT " RUN_COLS " FROM runs WHERE id = $1" },
	/* The newest $3, returned oldest first. */
	[Q_RUN_LIST] = { "run list",
	    "SELECT " RUN_COLS " FROM (SELECT " RUN_COLS " FROM runs "
	    "WHERE ($1 IS NULL OR app = $1) AND ($2 IS NULL OR service = $2) "
	    "ORDER BY created_at DESC, id DESC LIMIT $3) AS t "
	    "ORDER BY created_at, id" },
	/* A new hk-jobs: what the last one left unfinished failed. */
	[Q_RUN_ABANDON] = { "run abandon",
	    "UPDATE runs SET phase = 'Failed', reason = $2, finished_at = $3 "
	    "WHERE phase = $1" },
	/*
	 * Retention takes finished runs only: a Running one is owned.  $2
	 * rows at most, the oldest first (store_prune()).
	 */
	[Q_RUN_PRUNE_AGE] = { "run prune by age",
	    "DELETE FROM runs WHERE id IN (SELECT id FROM runs "
	    "WHERE created_at < $1 AND phase NOT IN ('Pending', 'Running') "
	    "ORDER BY created_at LIMIT $2)" },
	[Q_RUN_PRUNE_ROWS] = { "run prune by rows",
	    "DELETE FROM runs WHERE id IN (SELECT id FROM runs "
	    "WHERE phase NOT IN ('Pending', 'Running') AND id NOT IN "
	    "(SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT $1) "
	    "ORDER BY created_at LIMIT $2)" },
	/* hk apply's: what hk-jobs claimed (done_run_id, run) stays. */
	[Q_JOB_PUT] = { "job put",
	    "INSERT INTO jobs (app, name, service, spec_json, run_id, "
	    "updated_at) VALUES ($1, $2, $3, $4, $5, $6) "
	    "ON CONFLICT (app, name) DO UPDATE SET service = excluded.service, "
	    "spec_json = excluded.spec_json, run_id = excluded.run_id, "
	    "updated_at = excluded.updated_at" },
	[Q_JOB_GET] = { "job get",
	    "SELECT " JOB_COLS " FROM jobs WHERE app = $1 AND name = $2" },
	[Q_JOB_LIST] = { "job list",
	    "SELECT " JOB_COLS " FROM jobs WHERE ($1 IS NULL OR app = $1) "
	    "ORDER BY app, name" },
	[Q_JOB_KEYS] = { "job names",
	    "SELECT name FROM jobs WHERE app = $1 ORDER BY name" },
	[Q_JOB_DELETE] = { "job delete",
	    "DELETE FROM jobs WHERE app = $1 AND name = $2" },
	/*
	 * The compare-and-set of a claim: of two claims of one run_id, the
	 * second finds done_run_id already there and changes no row; a job
	 * applied again since (another run_id) changes none either.
	 */
	[Q_JOB_CLAIM] = { "job claim",
	    "UPDATE jobs SET done_run_id = $3, run = $4 "
	    "WHERE app = $1 AND name = $2 AND run_id = $3 "
	    "AND done_run_id < $3" },
	/* A new schedule counts from its apply: no firing before it. */
	[Q_SCHEDULE_PUT] = { "schedule put",
	    "INSERT INTO schedules (" SCHEDULE_COLS ") "
	    "VALUES ($1, $2, $3, $4, $5, $5) "
	    "ON CONFLICT (app, service, name) DO UPDATE SET "
	    "spec_json = excluded.spec_json, "
	    "updated_at = excluded.updated_at" },
	[Q_SCHEDULE_LIST] = { "schedule list",
	    "SELECT " SCHEDULE_COLS " FROM schedules "
	    "WHERE ($1 IS NULL OR app = $1) ORDER BY app, service, name" },
	[Q_SCHEDULE_KEYS] = { "schedule names",
	    "SELECT service, name FROM schedules WHERE app = $1 "
	    "ORDER BY service, name" },
	[Q_SCHEDULE_DELETE] = { "schedule delete",
	    "DELETE FROM schedules WHERE app = $1 AND service = $2 "
	    "AND name = $3" },
	[Q_SCHEDULE_CLAIM] = { "schedule claim",
	    "UPDATE schedules SET last_fire = $4 "
	    "WHERE app = $1 AND service = $2 AND name = $3 "
	    "AND last_fire < $4" },
	[Q_SECRET_DELETE] = { "secret delete",
	    "DELETE FROM secrets WHERE app = $1 AND name = $2" },
	/*
	 * Code is kept while a service's spec or a kept revision names
	 * it.  The spec is compact JSON (keys and values without spaces);
	 * a hash is hex, no LIKE wildcard.  The same text inside a string
	 * value is escaped (\"code_hash\"), so it keeps nothing.
	 */
	[Q_CODE_PRUNE] = { "code prune",
	    "DELETE FROM code WHERE NOT EXISTS (SELECT 1 FROM services "
	    "WHERE services.spec LIKE '%\"code_hash\":\"' || code.hash || "
	    "'\"%') AND NOT EXISTS (SELECT 1 FROM revisions "
	    "WHERE revisions.code_hash = code.hash)" },
	/* A revision applied again (a service made anew) starts pending. */
	[Q_REVISION_ADD] = { "revision add",
	    "INSERT INTO revisions (app, service, revision, spec, code_hash, "
	    "applied_at) VALUES ($1, $2, $3, $4, $5, $6) "
	    "ON CONFLICT (app, service, revision) DO UPDATE SET "
	    "spec = excluded.spec, code_hash = excluded.code_hash, "
	    "applied_at = excluded.applied_at, gate = 'pending', "
	    "gate_at = 0, reason = ''" },
	/* A revision that passed once stays passed. */
	[Q_REVISION_GATE] = { "revision gate",
	    "UPDATE revisions SET gate = $4, gate_at = $5, reason = $6 "
	    "WHERE app = $1 AND service = $2 AND revision = $3 "
	    "AND (gate <> 'passed' OR $4 = 'passed')" },
	[Q_REVISION_GET] = { "revision get",
	    "SELECT " REVISION_COLS " FROM revisions "
	    "WHERE app = $1 AND service = $2 AND revision = $3" },
	[Q_REVISION_LIST] = { "revision list",
	    "SELECT " REVISION_COLS " FROM revisions "
	    "WHERE app = $1 AND service = $2 ORDER BY revision" },
	[Q_REVISION_PASSED] = { "revision last passed",
	    "SELECT " REVISION_COLS " FROM revisions "
	    "WHERE app = $1 AND service = $2 AND gate = 'passed' "
	    "AND revision < $3 ORDER BY revision DESC LIMIT 1" },
	/*
	 * The last $1 revisions of each service stay, and its newest that
	 * passed its gate, whatever its age.
	 */
	[Q_REVISION_PRUNE] = { "revision prune",
	    "DELETE FROM revisions WHERE revision <= (SELECT "
	    "services.revision FROM services WHERE services.app = "
	    "revisions.app AND services.name = revisions.service) - $1 "
	    "AND revision <> COALESCE((SELECT MAX(r.revision) FROM "
	    "revisions AS r WHERE r.app = revisions.app AND r.service = "
	    "revisions.service AND r.gate = 'passed'), 0)" },
	/*
	 * Leases: run only under the engine's lease lock, so the row is
	 * ours to write; the epoch only grows (a release keeps the row).
	 */
	[Q_LEASE_ACQUIRE] = { "lease acquire",
	    "INSERT INTO leases (" LEASE_COLS ") "
	    "VALUES ($1, $2, 1, $3, $4, $5) "
	    "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
	    "epoch = leases.epoch + 1, acquired_at = excluded.acquired_at, "
	    "expires_at = excluded.expires_at, grace_ms = excluded.grace_ms "
	    "RETURNING epoch" },
	[Q_LEASE_RENEW] = { "lease renew",
	    "UPDATE leases SET expires_at = $4 "
	    "WHERE name = $1 AND epoch = $2 AND holder = $3" },
	[Q_LEASE_RELEASE] = { "lease release",
	    "UPDATE leases SET expires_at = $4, grace_ms = 0 "
	    "WHERE name = $1 AND epoch = $2 AND holder = $3" },
	[Q_LEASE_GET] = { "lease get",
	    "SELECT " LEASE_COLS " FROM leases WHERE name = $1" },
	/*
	 * The fence (store_fence()), first in each transaction of a fenced
	 * store.  Transactions run under the installation's write lock
	 * (store_begin()), and so does an acquisition (store_lease_acquire()):
	 * no transaction is open while the epoch changes, and each sees the
	 * epoch of the last acquisition.  Renewals take no such lock, and
	 * this read locks nothing, so that they never conflict.
	 */
	[Q_FENCE_EPOCH] = { "lease fence",
	    "SELECT epoch FROM leases WHERE name = $1" },
	/*
	 * A batch of events (ingest of hk-events), PostgreSQL only: one
	 * statement, each column an array.  The plan is one function scan,
	 * which yields the rows in array order, so ids follow the batch
	 * (the unit test checks it); WITH ORDINALITY ... ORDER BY would say
	 * so too, but its sort made a batch of 1000 rows 40% slower.
	 * SQLite, in process, inserts them one statement a row.
	 */
	[Q_EVENT_ADD_MANY] = { "event add",
	    "INSERT INTO events (at, app, service, kind, detail) "
	    "SELECT at, app, service, kind, detail FROM unnest("
	    "$1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) "
	    "AS t (at, app, service, kind, detail)" },
};

static int
read_request(struct store *s, struct store_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->id = s->ops->col_int(s, 0);
	rq->at = s->ops->col_int(s, 1);
	if (store_col_copy(s, 2, rq->app, sizeof(rq->app), "app name") == -1 ||
	    store_col_copy(s, 3, rq->service, sizeof(rq->service),
	    "service name") == -1 ||
	    store_col_copy(s, 4, rq->method, sizeof(rq->method),
	    "method") == -1 ||
	    store_col_copy(s, 5, rq->host, sizeof(rq->host), "host") == -1 ||
	    store_col_copy(s, 6, rq->path, sizeof(rq->path), "path") == -1 ||
	    store_col_copy(s, 13, rq->outcome, sizeof(rq->outcome),
	    "outcome") == -1)
		return -1;
	rq->status = (int)s->ops->col_int(s, 7);
	rq->duration_us = s->ops->col_int(s, 8);
	rq->wait_us = s->ops->col_int(s, 9);
	rq->wake_id = s->ops->col_int(s, 10);	/* NULL reads 0 */
	rq->bytes_in = s->ops->col_int(s, 11);
	rq->bytes_out = s->ops->col_int(s, 12);
	return 0;
}

static int
read_request_row(struct store *s, void *p)
{
	return read_request(s, p);
}

/*
 * Migration 4: the rows of version 3, in id order, packed into batches
 * of consecutive ids (a gap starts a new batch, so every id is kept),
 * then their table dropped.
 */
#define V3_CHUNK	1000
static int
requests_to_batches(struct store *s)
{
	struct store_arg a[] = { ARG_INT(0), ARG_INT(V3_CHUNK) };
	struct store_request *v;
	size_t n, i, j;
	void *p;
	int r = 0;

	do {
		if (store_read_rows(s, Q_REQUEST_V3_READ, a, NITEMS(a),
		    sizeof(*v),
		    read_request_row, NULL, &p, &n) == -1)
			return -1;
		v = p;
		for (i = 0; r == 0 && i < n; i = j) {
			for (j = i + 1; j < n && v[j].id == v[j - 1].id + 1;
			    j++)
				;
			r = store_request_batch_add(s, v[i].id, &v[i], j - i);
		}
		if (n > 0)
			a[0].num = v[n - 1].id;
		free(v);
	} while (r == 0 && n == V3_CHUNK);
	if (r == 0)
		r = s->ops->script(s, "DROP TABLE requests_v3");
	return r;
}
