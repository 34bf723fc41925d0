/*
 * store_sqlite.c - the SQLite engine of the state store (store_impl.h).
 *
 * WAL journal, synchronous FULL unless the handle asks otherwise
 * (store_durable()), foreign keys on, a busy timeout of STORE_BUSY_MS on
 * every lock wait; SQLITE_BUSY or SQLITE_LOCKED after it is a temporary
 * failure (store_busy()).  Statements are prepared once (sqlite3_prepare_v3,
 * persistent) and cached per store; parameters are bound by their names,
 * $1 $2 ..., so store_schema.c writes one SQL text for both engines (each
 * name's index is looked up once, when the statement is prepared).  hk
 * has no threads, so connections are opened without SQLite's mutex
 * (NOMUTEX).
 *
 * The lease lock is an open file description lock (F_OFD_SETLK, never
 * waiting) on "<db>.lease-<name>.lock", created mode 0600 beside the
 * database; the kernel drops it when its holder dies.  The lease is lost
 * if that file is removed or replaced, since a new holder could then lock
 * the new file.  Once locked, the busy timeout is cut to
 * STORE_LEASE_WAIT(ttl), so that a renewal fails in time rather than waits
 * past it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"
#include "store_impl.h"

#define LITE_MAXARGS	16

struct lite {
	sqlite3		*db;
	sqlite3_stmt	*cache[Q_COUNT];
	/* index of $1 $2 ... in each cached statement, found once */
	unsigned char	 pidx[Q_COUNT][LITE_MAXARGS];
	sqlite3_stmt	*cur;		/* the active statement */
	enum store_q	 curq;
	int64_t		 changes;
	char		*path;		/* the database file */
	char		*lease_path;	/* the lease's lock file */
	int		 lease_fd;	/* -1 = no lease */
	int		 durable;	/* synchronous: 1 FULL, 0 NORMAL */
};

static int	 lite_fail(struct store *, int, const char *);
static int	 lite_open_fail(struct store *, const char *, int);
static int	 lite_simple(struct store *, const char *, char *, size_t);
static int	 lite_wal(struct store *, char *, size_t);
static int	 lite_open(struct store *, const char *);
static int	 lite_open_readonly(struct store *, const char *, int *);
static int	 lite_create(struct store *, const char *);
static void	 lite_close(struct store *);
static int	 lite_script(struct store *, const char *);
static int	 lite_begin(struct store *);
static int	 lite_commit(struct store *);
static int	 lite_rollback(struct store *);
static int	 lite_params(struct store *, enum store_q, sqlite3_stmt *,
		    size_t);
static int	 lite_bind(sqlite3_stmt *, int, const struct store_arg *);
static int	 lite_exec(struct store *, enum store_q,
		    const struct store_arg *, size_t);
static int	 lite_next(struct store *);
static int	 lite_isnull(struct store *, int);
static int64_t	 lite_col_int(struct store *, int);
static const char *lite_col_text(struct store *, int);
static const unsigned char *lite_col_blob(struct store *, int, size_t *);
static int64_t	 lite_changes(struct store *);
static void	 lite_finish(struct store *);
static int	 lite_durable(struct store *, int);
static int	 lite_lease_lock(struct store *, const char *, int64_t);
static int	 lite_lease_check(struct store *, int64_t *);
static void	 lite_lease_unlock(struct store *);

const struct store_ops store_sqlite_ops = {
	.name = "sqlite",
	.open = lite_open,
	.open_readonly = lite_open_readonly,
	.close = lite_close,
	.script = lite_script,
	.begin = lite_begin,
	.migrate_begin = lite_begin,
	.commit = lite_commit,
	.rollback = lite_rollback,
	.exec = lite_exec,
	.next = lite_next,
	.isnull = lite_isnull,
	.col_int = lite_col_int,
	.col_text = lite_col_text,
	.col_blob = lite_col_blob,
	.changes = lite_changes,
	.finish = lite_finish,
	.durable = lite_durable,
	.lease_lock = lite_lease_lock,
	.lease_check = lite_lease_check,
	.lease_unlock = lite_lease_unlock,
};

static int
lite_fail(struct store *s, int rc, const char *what)
{
	struct lite *l = s->eng;
	int prim = rc & 0xff;

	store_seterr(s, prim == SQLITE_BUSY || prim == SQLITE_LOCKED,
	    "sqlite: %s: %s", what, l != NULL && l->db != NULL ?
	    sqlite3_errmsg(l->db) : sqlite3_errstr(rc));
	return -1;
}

/* Says why a file could not be opened, naming a missing directory. */
static int
lite_open_fail(struct store *s, const char *path, int rc)
{
	struct lite *l = s->eng;
	char buf[PATH_MAX], *dir;
	int e;

	if ((rc & 0xff) != SQLITE_CANTOPEN)
		return lite_fail(s, rc, path);
	e = l->db != NULL ? sqlite3_system_errno(l->db) : 0;
	if (strlcpy(buf, path, sizeof(buf)) < sizeof(buf)) {
		dir = dirname(buf);
		if (access(dir, F_OK) == -1 && errno == ENOENT) {
			store_seterr(s, 0, "sqlite: %s: unable to create: "
			    "directory %s does not exist", path, dir);
			return -1;
		}
	}
	store_seterr(s, 0, "sqlite: %s: unable to open: %s", path,
	    e != 0 ? strerror(e) : sqlite3_errstr(rc));
	return -1;
}

/*
 * One constant statement; the first column of its first row, if any, goes
 * to out.
 */
static int
lite_simple(struct store *s, const char *sql, char *out, size_t outlen)
{
	struct lite *l = s->eng;
	sqlite3_stmt *st;
	const char *t;
	int rc;

	if ((rc = sqlite3_prepare_v2(l->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return lite_fail(s, rc, sql);
	if (out != NULL && outlen > 0)
		out[0] = '\0';
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (out != NULL && outlen > 0 && out[0] == '\0' &&
		    (t = (const char *)sqlite3_column_text(st, 0)) != NULL)
			(void)strlcpy(out, t, outlen);
	if (rc != SQLITE_DONE) {
		(void)lite_fail(s, rc, sql);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}

/*
 * Switching a fresh file to WAL needs an exclusive lock and does not wait
 * for it through the busy handler: two processes opening a fresh store at
 * once would see SQLITE_BUSY.  Retry up to the busy timeout.
 */
static int
lite_wal(struct store *s, char *mode, size_t size)
{
	const struct timespec pause = { 0, 10 * 1000 * 1000 };
	int waited;

	for (waited = 0;; waited += 10) {
		if (lite_simple(s, "PRAGMA journal_mode = WAL", mode,
		    size) == 0)
			return 0;
		if (!s->busy || waited >= STORE_BUSY_MS)
			return -1;
		(void)nanosleep(&pause, NULL);
	}
}

/*
 * A new database file, made before SQLite opens it: mode 0640, and, when
 * root makes it (the first hk apply), the owner and group of its
 * directory (the daemons': StateDirectory=, or the s6 run script's), so
 * that neither others nor root keep it from the daemons.  SQLite gives
 * its -wal and -shm the database's mode and owner.  A file already there,
 * or a path that is not to be made here, is left to SQLite.
 */
static int
lite_create(struct store *s, const char *path)
{
	char *copy;
	struct stat dir, st;
	int fd, r = 0;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0640)) == -1)
		return 0;	/* there already, or SQLite says why */
	if ((copy = strdup(path)) == NULL)
		r = -1;
	else {
		/* fchown only where it changes something: a unit's system
		 * call filter (@privileged) refuses it even then */
		if (fchmod(fd, 0640) == -1 || (geteuid() == 0 &&
		    (stat(dirname(copy), &dir) == -1 ||
		    fstat(fd, &st) == -1 || ((st.st_uid != dir.st_uid ||
		    st.st_gid != dir.st_gid) &&
		    fchown(fd, dir.st_uid, dir.st_gid) == -1))))
			r = -1;
		free(copy);
	}
	/* Not removed on failure: another program may have it open. */
	if (r == -1)
		store_seterr(s, 0, "sqlite: %s: unable to make it 0640, its "
		    "directory's: %s", path, strerror(errno));
	close(fd);
	return r;
}

static int
lite_open(struct store *s, const char *path)
{
	struct lite *l;
	char mode[16];
	int rc;

	if (*path == '\0') {
		store_seterr(s, 0, "sqlite: no path: expected "
		    "sqlite:///ABSOLUTE/PATH or sqlite://RELATIVE/PATH");
		return -1;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		store_seterr(s, 0, "sqlite: %s", strerror(errno));
		return -1;
	}
	s->eng = l;
	l->lease_fd = -1;
	if ((l->path = strdup(path)) == NULL) {
		store_seterr(s, 0, "sqlite: %s", strerror(errno));
		return -1;
	}
	if (lite_create(s, path) == -1)
		return -1;
	/* hk has no threads: no mutex on the connection (NOMUTEX). */
	rc = sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOMUTEX,
	    NULL);
	if (rc != SQLITE_OK)
		return lite_open_fail(s, path, rc);
	sqlite3_extended_result_codes(l->db, 1);
	if ((rc = sqlite3_busy_timeout(l->db, STORE_BUSY_MS)) != SQLITE_OK)
		return lite_fail(s, rc, path);
	if (lite_simple(s, "PRAGMA foreign_keys = ON", NULL, 0) == -1 ||
	    lite_wal(s, mode, sizeof(mode)) == -1)
		return -1;
	if (strcmp(mode, "wal") != 0) {
		store_seterr(s, 0, "sqlite: %s: cannot use WAL (journal mode "
		    "is \"%s\")", path, mode);
		return -1;
	}
	/* Whatever SQLite was built with: a commit is on disk (FULL). */
	l->durable = 1;
	return lite_simple(s, "PRAGMA synchronous = FULL", NULL, 0);
}

/*
 * A check's look at a store (store_open_readonly()): no file made, no
 * journal mode set, no schema applied.  SQLite may still make the -wal
 * and -shm files of a database no process has open (a reader of a WAL
 * database needs them): they hold no data, and the next writer uses them.
 */
static int
lite_open_readonly(struct store *s, const char *path, int *none)
{
	struct lite *l;
	struct stat st;
	char n[8];
	int rc;

	*none = 0;
	if (*path == '\0') {
		store_seterr(s, 0, "sqlite: no path: expected "
		    "sqlite:///ABSOLUTE/PATH or sqlite://RELATIVE/PATH");
		return -1;
	}
	if (stat(path, &st) == -1 && errno == ENOENT) {
		*none = 1;
		return 0;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		store_seterr(s, 0, "sqlite: %s", strerror(errno));
		return -1;
	}
	s->eng = l;
	l->lease_fd = -1;
	if ((l->path = strdup(path)) == NULL) {
		store_seterr(s, 0, "sqlite: %s", strerror(errno));
		return -1;
	}
	rc = sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return lite_open_fail(s, path, rc);
	sqlite3_extended_result_codes(l->db, 1);
	if ((rc = sqlite3_busy_timeout(l->db, STORE_BUSY_MS)) != SQLITE_OK)
		return lite_fail(s, rc, path);
	if (lite_simple(s, "SELECT count(*) FROM sqlite_master WHERE type = "
	    "'table' AND name = 'schema_migrations'", n, sizeof(n)) == -1)
		return -1;
	*none = strcmp(n, "0") == 0;
	return 0;
}

static void
lite_close(struct store *s)
{
	struct lite *l = s->eng;
	size_t i;

	if (l == NULL)
		return;
	lite_lease_unlock(s);
	free(l->path);
	lite_finish(s);
	for (i = 0; i < Q_COUNT; i++)
		sqlite3_finalize(l->cache[i]);
	sqlite3_close(l->db);
	free(l);
	s->eng = NULL;
}

/* Constant SQL, possibly several statements (the migrations). */
static int
lite_script(struct store *s, const char *sql)
{
	struct lite *l = s->eng;
	sqlite3_stmt *st;
	const char *tail = sql;
	int rc;

	while (*tail != '\0') {
		rc = sqlite3_prepare_v2(l->db, tail, -1, &st, &tail);
		if (rc != SQLITE_OK)
			return lite_fail(s, rc, "script");
		if (st == NULL)		/* whitespace or comment */
			continue;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return lite_fail(s, rc, "script");
	}
	return 0;
}

static int
lite_begin(struct store *s)
{
	return lite_simple(s, "BEGIN IMMEDIATE", NULL, 0);
}

/* A COMMIT that fails leaves no transaction behind, as in PostgreSQL. */
static int
lite_commit(struct store *s)
{
	struct lite *l = s->eng;
	char err[STORE_ERR_LEN];
	int busy;

	if (sqlite3_get_autocommit(l->db)) {
		store_seterr(s, 0, "sqlite: commit: the transaction was "
		    "rolled back by an earlier error");
		return -1;
	}
	if (lite_simple(s, "COMMIT", NULL, 0) == 0)
		return 0;
	if (!sqlite3_get_autocommit(l->db)) {
		memcpy(err, s->err, sizeof(err));
		busy = s->busy;
		(void)lite_simple(s, "ROLLBACK", NULL, 0);
		memcpy(s->err, err, sizeof(err));
		s->busy = busy;
	}
	return -1;
}

static int
lite_rollback(struct store *s)
{
	struct lite *l = s->eng;

	lite_finish(s);
	if (sqlite3_get_autocommit(l->db))
		return 0;
	return lite_simple(s, "ROLLBACK", NULL, 0);
}

/* Where $1 .. $n are in a new statement, by name, once. */
static int
lite_params(struct store *s, enum store_q q, sqlite3_stmt *st, size_t n)
{
	struct lite *l = s->eng;
	char pname[24];
	size_t i, c = (size_t)sqlite3_bind_parameter_count(st);
	int idx;

	if (c > LITE_MAXARGS || c != n) {
		store_seterr(s, 0, "sqlite: %s: takes %zu parameters, not %zu",
		    store_sql[q].name, c, n);
		return -1;
	}
	for (i = 0; i < c; i++) {
		(void)snprintf(pname, sizeof(pname), "$%zu", i + 1);
		if ((idx = sqlite3_bind_parameter_index(st, pname)) == 0 ||
		    idx > LITE_MAXARGS) {
			store_seterr(s, 0, "sqlite: %s: no parameter %s",
			    store_sql[q].name, pname);
			return -1;
		}
		l->pidx[q][i] = (unsigned char)idx;
	}
	return 0;
}

/*
 * Text is bound SQLITE_STATIC, not copied: the caller's text lives until
 * the statement has run, and the bindings are cleared before we return
 * to the caller (lite_finish()).
 */
static int
lite_bind(sqlite3_stmt *st, int idx, const struct store_arg *a)
{
	if (a->type == STORE_ARG_INT)
		return sqlite3_bind_int64(st, idx, a->num);
	if (a->text == NULL)
		return sqlite3_bind_null(st, idx);
	if (a->type == STORE_ARG_BLOB)
		return sqlite3_bind_blob(st, idx, a->text, a->len,
		    SQLITE_STATIC);
	return sqlite3_bind_text(st, idx, a->text, a->len, SQLITE_STATIC);
}

static int
lite_exec(struct store *s, enum store_q q, const struct store_arg *a,
    size_t n)
{
	struct lite *l = s->eng;
	const char *what = store_sql[q].name;
	sqlite3_stmt *st;
	size_t i;
	int rc;

	lite_finish(s);
	if (n > LITE_MAXARGS) {
		store_seterr(s, 0, "sqlite: %s: too many parameters", what);
		return -1;
	}
	if ((st = l->cache[q]) == NULL) {
		rc = sqlite3_prepare_v3(l->db, store_sql[q].text, -1,
		    SQLITE_PREPARE_PERSISTENT, &st, NULL);
		if (rc != SQLITE_OK)
			return lite_fail(s, rc, what);
		if (lite_params(s, q, st, n) == -1) {
			sqlite3_finalize(st);
			return -1;
		}
		l->cache[q] = st;
	}
	if ((size_t)sqlite3_bind_parameter_count(st) != n) {
		store_seterr(s, 0, "sqlite: %s: takes %d parameters, not %zu",
		    what, sqlite3_bind_parameter_count(st), n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if ((rc = lite_bind(st, l->pidx[q][i], &a[i])) != SQLITE_OK) {
			sqlite3_clear_bindings(st);
			return lite_fail(s, rc, what);
		}
	}
	l->cur = st;
	l->curq = q;
	l->changes = 0;
	return 0;
}

static int
lite_next(struct store *s)
{
	struct lite *l = s->eng;
	int rc;

	if (l->cur == NULL)
		return 0;
	if ((rc = sqlite3_step(l->cur)) == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE) {
		l->changes = sqlite3_changes64(l->db);
		return 0;
	}
	return lite_fail(s, rc, store_sql[l->curq].name);
}

static int
lite_isnull(struct store *s, int col)
{
	struct lite *l = s->eng;

	return sqlite3_column_type(l->cur, col) == SQLITE_NULL;
}

static int64_t
lite_col_int(struct store *s, int col)
{
	struct lite *l = s->eng;

	return sqlite3_column_int64(l->cur, col);
}

static const char *
lite_col_text(struct store *s, int col)
{
	struct lite *l = s->eng;

	return (const char *)sqlite3_column_text(l->cur, col);
}

static const unsigned char *
lite_col_blob(struct store *s, int col, size_t *len)
{
	struct lite *l = s->eng;
	const unsigned char *b;

	b = sqlite3_column_blob(l->cur, col);
	*len = (size_t)sqlite3_column_bytes(l->cur, col);
	return b;
}

static int64_t
lite_changes(struct store *s)
{
	struct lite *l = s->eng;

	return l->changes;
}

/*
 * In WAL mode NORMAL drops the sync of each commit only: the log is
 * still synced before a checkpoint copies it into the database, and its
 * checksums cut it at the first frame a crash tore.
 */
static int
lite_durable(struct store *s, int on)
{
	struct lite *l = s->eng;

	if (l->durable == on)
		return 0;
	if (lite_simple(s, on ? "PRAGMA synchronous = FULL" :
	    "PRAGMA synchronous = NORMAL", NULL, 0) == -1)
		return -1;
	l->durable = on;
	return 0;
}

static void
lite_finish(struct store *s)
{
	struct lite *l = s->eng;

	if (l == NULL || l->cur == NULL)
		return;
	sqlite3_reset(l->cur);
	sqlite3_clear_bindings(l->cur);
	l->cur = NULL;
}

static int
lite_lease_lock(struct store *s, const char *name, int64_t ttl_ms)
{
	struct lite *l = s->eng;
	struct flock fl;
	char *path;
	int fd;

	if (l->lease_fd != -1) {
		store_seterr(s, 0, "sqlite: this store holds a lease already");
		return -1;
	}
	if (asprintf(&path, "%s.lease-%s.lock", l->path, name) == -1) {
		store_seterr(s, 0, "sqlite: %s", strerror(ENOMEM));
		return -1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		store_seterr(s, 0, "sqlite: %s: unable to open: %s", path,
		    strerror(errno));
		free(path);
		return -1;
	}
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_OFD_SETLK, &fl) == -1) {
		if (errno == EAGAIN || errno == EACCES) {
			close(fd);
			free(path);
			return 1;
		}
		store_seterr(s, 0, "sqlite: %s: unable to lock: %s", path,
		    strerror(errno));
		close(fd);
		free(path);
		return -1;
	}
	l->lease_fd = fd;
	l->lease_path = path;
	if (STORE_LEASE_WAIT(ttl_ms) < STORE_BUSY_MS)
		(void)sqlite3_busy_timeout(l->db,
		    (int)STORE_LEASE_WAIT(ttl_ms));
	return 0;
}

/*
 * The lock holds as long as our file is the one at the path.  SQLite is
 * for one host: its clock is the store's.
 */
static int
lite_lease_check(struct store *s, int64_t *now)
{
	struct lite *l = s->eng;
	struct stat mine, there;
	int gone = 0;

	if (l->lease_fd == -1) {
		store_seterr(s, 0, "sqlite: no lease held");
		return 1;
	}
	if (fstat(l->lease_fd, &mine) == -1) {
		store_seterr(s, 0, "sqlite: %s: %s", l->lease_path,
		    strerror(errno));
		return -1;
	}
	if (stat(l->lease_path, &there) == -1) {
		if (errno != ENOENT) {
			store_seterr(s, 0, "sqlite: %s: %s", l->lease_path,
			    strerror(errno));
			return -1;
		}
		gone = 1;
	}
	if (gone || mine.st_dev != there.st_dev ||
	    mine.st_ino != there.st_ino) {
		store_seterr(s, 0, "sqlite: lock file %s was removed or "
		    "replaced", l->lease_path);
		return 1;
	}
	*now = store_now_ms();
	return 0;
}

static void
lite_lease_unlock(struct store *s)
{
	struct lite *l = s->eng;

	if (l == NULL || l->lease_fd == -1)
		return;
	if (l->db != NULL)
		(void)sqlite3_busy_timeout(l->db, STORE_BUSY_MS);
	(void)close(l->lease_fd);
	l->lease_fd = -1;
	free(l->lease_path);
	l->lease_path = NULL;
}
