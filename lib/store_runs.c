/*
 * store_runs.c - runs, jobs and schedules in the state store (store.h),
 * hk-jobs's: a run's row, rewritten whole at each phase; the jobs and
 * schedules hk apply puts and prunes; and their claims, each a
 * compare-and-set in a transaction of its own that writes the run's row
 * too, so that a job's run or a schedule's firing runs once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static int	 check_run(struct store *, const struct store_run *);
static int	 read_run_row(struct store *, void *);
static int	 run_write(struct store *, const struct store_run *);
static int	 claim(struct store *, enum store_q, const struct store_arg *,
		    size_t, const struct store_run *);
static int	 prune_keys(struct store *, const char *, enum store_q,
		    enum store_q, size_t, const char *, char *const *,
		    char *const *, size_t, int64_t *);
static int	 read_job_row(struct store *, void *);
static int	 read_schedule_row(struct store *, void *);
static void	 release_runs(void *, size_t);

/* Runs (hk-jobs): strings checked as every other bounded field. */
static int
check_run(struct store *s, const struct store_run *r)
{
	if (store_check_name(s, "run id", r->id, STORE_RUN_ID_MAX) == -1 ||
	    store_check_name(s, "app name", r->app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", r->service,
	    STORE_NAME_MAX) == -1 ||
	    store_check_field(s, "trigger", r->trigger, sizeof(r->trigger),
	    1) == -1 ||
	    store_check_field(s, "method", r->method, sizeof(r->method),
	    1) == -1 ||
	    store_check_field(s, "path", r->path, sizeof(r->path), 1) == -1 ||
	    store_check_field(s, "phase", r->phase, sizeof(r->phase),
	    1) == -1 ||
	    store_check_field(s, "reason", r->reason, sizeof(r->reason),
	    0) == -1)
		return -1;
	if (r->body_len > INT32_MAX) {
		store_seterr(s, 0, "run %s: body too long", r->id);
		return -1;
	}
	return 0;
}

/* The run's row as it is (checked by the caller): Q_RUN_PUT. */
static int
run_write(struct store *s, const struct store_run *r)
{
	struct store_arg a[] = { ARG_TEXT(r->id), ARG_TEXT(r->app),
	    ARG_TEXT(r->service), ARG_INT(r->revision), ARG_TEXT(r->trigger),
	    ARG_TEXT(r->method), ARG_TEXT(r->path), ARG_INT(r->event_bytes),
	    ARG_TEXT(r->phase), ARG_INT(r->created_at),
	    ARG_INT(r->started_at), ARG_INT(r->finished_at),
	    ARG_INT(r->status), ARG_INT(r->duration_us),
	    ARG_BLOB(r->body, r->body_len), ARG_TEXT(r->reason) };

	return store_q_do(s, Q_RUN_PUT, a, NITEMS(a), NULL);
}

int
store_run_put(struct store *s, const struct store_run *r)
{
	call_start(s);
	if (check_run(s, r) == -1)
		return -1;
	return run_write(s, r);
}

static int
read_run_row(struct store *s, void *p)
{
	struct store_run *r = p;
	const unsigned char *b;
	size_t len = 0;

	memset(r, 0, sizeof(*r));
	if (store_col_copy(s, 0, r->id, sizeof(r->id), "run id") == -1 ||
	    store_col_copy(s, 1, r->app, sizeof(r->app), "app") == -1 ||
	    store_col_copy(s, 2, r->service, sizeof(r->service),
	    "service") == -1 ||
	    store_col_copy(s, 4, r->trigger, sizeof(r->trigger),
	    "trigger") == -1 ||
	    store_col_copy(s, 5, r->method, sizeof(r->method),
	    "method") == -1 ||
	    store_col_copy(s, 6, r->path, sizeof(r->path), "path") == -1 ||
	    store_col_copy(s, 8, r->phase, sizeof(r->phase), "phase") == -1 ||
	    store_col_copy(s, 15, r->reason, sizeof(r->reason), "reason") == -1)
		return -1;
	r->revision = s->ops->col_int(s, 3);
	r->event_bytes = s->ops->col_int(s, 7);
	r->created_at = s->ops->col_int(s, 9);
	r->started_at = s->ops->col_int(s, 10);
	r->finished_at = s->ops->col_int(s, 11);
	r->status = (int)s->ops->col_int(s, 12);
	r->duration_us = s->ops->col_int(s, 13);
	if ((b = s->ops->col_blob(s, 14, &len)) != NULL) {
		/* One byte more: malloc(0) may be NULL; text ends there. */
		if ((r->body = malloc(len + 1)) == NULL)
			return store_nomem(s);
		memcpy(r->body, b, len);
		r->body[len] = '\0';
		r->body_len = len;
	}
	return 0;
}

static void
release_runs(void *v, size_t n)
{
	store_run_free(v, n);
}

int
store_run_get(struct store *s, const char *id, struct store_run *out)
{
	struct store_arg a[] = { ARG_TEXT(id) };
	int r;

	call_start(s);
	memset(out, 0, sizeof(*out));
	if (store_check_name(s, "run id", id, STORE_RUN_ID_MAX) == -1)
		return -1;
	/* A row read in part is not left behind: *out stays cleared. */
	if ((r = store_read_one(s, Q_RUN_GET, a, NITEMS(a), read_run_row,
	    out)) == -1)
		memset(out, 0, sizeof(*out));
	return r;
}

int
store_run_list(struct store *s, const char *app, const char *service,
    size_t limit, struct store_run **out, size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(limit == 0 ? INT64_MAX : (int64_t)limit) };
	void *v;
	int r;

	call_start(s);
	r = store_read_rows(s, Q_RUN_LIST, a, NITEMS(a), sizeof(**out),
	    read_run_row, release_runs, &v, nout);
	*out = v;
	return r;
}

int
store_run_abandon(struct store *s, const char *phase, const char *reason,
    int64_t *n)
{
	struct store_arg a[] = { ARG_TEXT(phase), ARG_TEXT(reason),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	*n = 0;
	return store_q_do(s, Q_RUN_ABANDON, a, NITEMS(a), n);
}

int
store_run_prune(struct store *s, int64_t before, int64_t max_rows,
    int64_t *deleted)
{
	return store_prune(s, Q_RUN_PRUNE_AGE, Q_RUN_PRUNE_ROWS, before,
	    max_rows, deleted);
}

void
store_run_clear(struct store_run *r)
{
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
}

void
store_run_free(struct store_run *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_run_clear(&v[i]);
	free(v);
}

/*
 * A claim, in a transaction of its own: the compare-and-set update q
 * changes the one row or none, then the run row (if any) is written.
 * store_begin() takes the installation's write lock (store.c, top), so
 * of two claims in two processes or hosts the second runs after the
 * first's commit and changes no row.  Never inside a caller's
 * transaction: hk-jobs claims on its own, and store_begin() would refuse
 * one, writing nothing.  0 claimed, 1 not, -1 error (rolled back).
 */
static int
claim(struct store *s, enum store_q q, const struct store_arg *a, size_t n,
    const struct store_run *row)
{
	int64_t changed = 0;

	if (store_begin(s) == -1)
		return -1;
	if (store_q_do(s, q, a, n, &changed) == -1 ||
	    (changed > 0 && row != NULL && run_write(s, row) == -1)) {
		store_rollback_keep_error(s);
		return -1;
	}
	if (changed == 0)
		return store_rollback(s) == -1 ? -1 : 1;
	return store_commit(s);
}

/* The key of a row prune_keys() deletes: a job's name, or service, name. */
struct prune_key {
	char		 k[2][STORE_NAME_MAX + 1];
};

/* Whether keep0[i] (and keep1[i], if the key has two columns) names k. */
static int
prune_kept(const struct prune_key *k, size_t nk, char *const *keep0,
    char *const *keep1, size_t nkeep)
{
	size_t i;

	for (i = 0; i < nkeep; i++)
		if (keep0[i] != NULL && strcmp(keep0[i], k->k[0]) == 0 &&
		    (nk == 1 || (keep1[i] != NULL &&
		    strcmp(keep1[i], k->k[1]) == 0)))
			return 1;
	return 0;
}

/*
 * As store_service_prune(): the keys of app's rows (query keys: nk
 * columns, 1 or 2, kept by keep0[i] and keep1[i]) are read first, since
 * one statement is active at a time, then those not kept deleted one by
 * one (del: app and the key), in a transaction of its own unless the
 * caller's (hk apply's) is open.  what names the rows in messages.
 */
static int
prune_keys(struct store *s, const char *what, enum store_q keys,
    enum store_q del, size_t nk, const char *app, char *const *keep0,
    char *const *keep1, size_t nkeep, int64_t *removed)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(NULL),
	    ARG_TEXT(NULL) };
	struct prune_key *gone = NULL, *ng;
	size_t ngone = 0, cap = 0, i;
	int own, r;

	if (removed != NULL)
		*removed = 0;
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_own_begin(s, &own) == -1)
		return -1;
	if ((r = s->ops->exec(s, keys, a, 1)) == 0) {
		while ((r = s->ops->next(s)) == 1) {
			if ((ng = store_grow(s, gone, ngone, &cap,
			    sizeof(*gone))) == NULL) {
				r = -1;
				break;
			}
			gone = ng;
			for (i = 0; r == 1 && i < nk; i++)
				if (store_col_copy(s, (int)i, gone[ngone].k[i],
				    sizeof(gone[ngone].k[i]), "name") == -1)
					r = -1;
			if (r == -1)
				break;
			if (!prune_kept(&gone[ngone], nk, keep0, keep1,
			    nkeep))
				ngone++;
		}
	}
	s->ops->finish(s);
	for (i = 0; r == 0 && i < ngone; i++) {
		a[1].text = gone[i].k[0];
		a[2].text = gone[i].k[1];
		r = store_q_do(s, del, a, 1 + nk, NULL);
	}
	free(gone);
	if (store_own_end(s, own, r) == -1) {
		store_errprefix(s, "prune %s of app %s", what, app);
		return -1;
	}
	if (removed != NULL)
		*removed = (int64_t)ngone;
	return 0;
}

/* Jobs ([jobs.NAME]): hk apply puts and prunes them, hk-jobs claims. */
int
store_job_put(struct store *s, const char *app, const char *name,
    const char *service, const char *spec_json, int64_t run_id)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_TEXT(service), ARG_TEXT(spec_json), ARG_INT(run_id),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "job name", name, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", service, STORE_NAME_MAX) == -1)
		return -1;
	/* done_run_id starts at -1: a negative run_id would never run. */
	if (spec_json == NULL || run_id < 0) {
		store_seterr(s, 0, "job %s/%s: %s", app, name,
		    spec_json == NULL ? "no spec" : "negative run_id");
		return -1;
	}
	return store_q_do(s, Q_JOB_PUT, a, NITEMS(a), NULL);
}

/* Reads the current row; the spec last, so that an error leaks none. */
static int
read_job_row(struct store *s, void *p)
{
	struct store_job *j = p;

	memset(j, 0, sizeof(*j));
	if (store_col_copy(s, 0, j->app, sizeof(j->app), "app name") == -1 ||
	    store_col_copy(s, 1, j->name, sizeof(j->name), "job name") == -1 ||
	    store_col_copy(s, 2, j->service, sizeof(j->service),
	    "service name") == -1 ||
	    store_col_copy(s, 6, j->run, sizeof(j->run), "run id") == -1)
		return -1;
	j->run_id = s->ops->col_int(s, 4);
	j->done_run_id = s->ops->col_int(s, 5);
	j->updated_at = s->ops->col_int(s, 7);
	if ((j->spec_json = store_col_dup(s, 3)) == NULL) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "job %s/%s: no spec", j->app,
			    j->name);
		return -1;
	}
	return 0;
}

static void
release_jobs(void *v, size_t n)
{
	store_job_free(v, n);
}

int
store_job_get(struct store *s, const char *app, const char *name,
    struct store_job *j)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name) };

	call_start(s);
	memset(j, 0, sizeof(*j));
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "job name", name, STORE_NAME_MAX) == -1)
		return -1;
	return store_read_one(s, Q_JOB_GET, a, NITEMS(a), read_job_row, j);
}

int
store_job_list(struct store *s, const char *app, struct store_job **out,
    size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app) };
	void *v;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	if (app != NULL &&
	    store_check_name(s, "app name", app, STORE_NAME_MAX) == -1)
		return -1;
	r = store_read_rows(s, Q_JOB_LIST, a, NITEMS(a), sizeof(**out),
	    read_job_row, release_jobs, &v, nout);
	*out = v;
	return r;
}

int
store_job_prune(struct store *s, const char *app, char *const *keep,
    size_t nkeep, int64_t *removed)
{
	call_start(s);
	if (nkeep > 0 && keep == NULL) {
		store_seterr(s, 0, "prune jobs: no names to keep");
		return -1;
	}
	return prune_keys(s, "jobs", Q_JOB_KEYS, Q_JOB_DELETE, 1, app, keep,
	    NULL, nkeep, removed);
}

int
store_job_claim(struct store *s, const char *app, const char *name,
    int64_t run_id, const struct store_run *row)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_INT(run_id), ARG_TEXT(NULL) };
	int r;

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "job name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (row == NULL) {
		store_seterr(s, 0, "job %s/%s: claim without a run", app,
		    name);
		return -1;
	}
	if (check_run(s, row) == -1)
		return -1;
	a[3].text = row->id;
	if ((r = claim(s, Q_JOB_CLAIM, a, NITEMS(a), row)) == -1)
		store_errprefix(s, "job %s/%s: claim run_id %jd", app, name,
		    (intmax_t)run_id);
	return r;
}

void
store_job_clear(struct store_job *j)
{
	if (j == NULL)
		return;
	free(j->spec_json);
	memset(j, 0, sizeof(*j));
}

void
store_job_free(struct store_job *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		store_job_clear(&v[i]);
	free(v);
}

/* Schedules ([services.X.schedules.NAME]): hk apply's, hk-jobs fires. */
int
store_schedule_put(struct store *s, const char *app, const char *service,
    const char *name, const char *spec_json, int64_t at)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_TEXT(name), ARG_TEXT(spec_json), ARG_INT(at) };

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", service,
	    STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "schedule name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (spec_json == NULL) {
		store_seterr(s, 0, "schedule %s/%s/%s: no spec", app, service,
		    name);
		return -1;
	}
	return store_q_do(s, Q_SCHEDULE_PUT, a, NITEMS(a), NULL);
}

static int
read_schedule_row(struct store *s, void *p)
{
	struct store_schedule *c = p;

	memset(c, 0, sizeof(*c));
	if (store_col_copy(s, 0, c->app, sizeof(c->app), "app name") == -1 ||
	    store_col_copy(s, 1, c->service, sizeof(c->service),
	    "service name") == -1 ||
	    store_col_copy(s, 2, c->name, sizeof(c->name),
	    "schedule name") == -1)
		return -1;
	c->last_fire = s->ops->col_int(s, 4);
	c->updated_at = s->ops->col_int(s, 5);
	if ((c->spec_json = store_col_dup(s, 3)) == NULL) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "schedule %s/%s/%s: no spec",
			    c->app, c->service, c->name);
		return -1;
	}
	return 0;
}

static void
release_schedules(void *v, size_t n)
{
	store_schedule_free(v, n);
}

int
store_schedule_list(struct store *s, const char *app,
    struct store_schedule **out, size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app) };
	void *v;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	if (app != NULL &&
	    store_check_name(s, "app name", app, STORE_NAME_MAX) == -1)
		return -1;
	r = store_read_rows(s, Q_SCHEDULE_LIST, a, NITEMS(a), sizeof(**out),
	    read_schedule_row, release_schedules, &v, nout);
	*out = v;
	return r;
}

int
store_schedule_prune(struct store *s, const char *app,
    char *const *services, char *const *names, size_t nkeep,
    int64_t *removed)
{
	call_start(s);
	if (nkeep > 0 && (services == NULL || names == NULL)) {
		store_seterr(s, 0, "prune schedules: no names to keep");
		return -1;
	}
	return prune_keys(s, "schedules", Q_SCHEDULE_KEYS,
	    Q_SCHEDULE_DELETE, 2, app, services, names, nkeep, removed);
}

/*
 * A schedule that is not there (pruned since) is not claimed either: 1,
 * as for a firing claimed already.
 */
int
store_schedule_claim(struct store *s, const char *app, const char *service,
    const char *name, int64_t fire, const struct store_run *row)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_TEXT(name), ARG_INT(fire) };
	int r;

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", service,
	    STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "schedule name", name, STORE_NAME_MAX) == -1 ||
	    (row != NULL && check_run(s, row) == -1))
		return -1;
	if ((r = claim(s, Q_SCHEDULE_CLAIM, a, NITEMS(a), row)) == -1)
		store_errprefix(s, "schedule %s/%s/%s: claim %jd", app, service,
		    name, (intmax_t)fire);
	return r;
}

void
store_schedule_free(struct store_schedule *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i].spec_json);
	free(v);
}
