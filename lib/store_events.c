/*
 * store_events.c - events and the request log in the state store
 * (store.h): events a row each, added alone or in a batch (one statement
 * on PostgreSQL), listed, and followed by id; requests a row per batch
 * of packed records (lib/reqbatch.h), their ids following each other,
 * listed from the newest batch as they unpack; and the retention of
 * both, by age and by rows.
 */
#include <stdlib.h>
#include <string.h>

#include "reqbatch.h"
#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static store_row_fn event_row;
static int	 check_event(struct store *, const struct store_event *);
static int	 read_event(struct store *, struct store_event *);
static int	 request_cut(struct store *, int64_t, int64_t *);
static int	 request_cut_step(struct store *, int64_t, int64_t *);
static int	 read_events(struct store *, enum store_q,
		    const struct store_arg *, size_t, struct store_event **,
		    size_t *);

/* An event given by the caller: terminated fields, a kind. */
static int
check_event(struct store *s, const struct store_event *ev)
{
	if (store_check_field(s, "app name", ev->app, sizeof(ev->app),
	    0) == -1 ||
	    store_check_field(s, "service name", ev->service,
	    sizeof(ev->service), 0) == -1 ||
	    store_check_field(s, "event kind", ev->kind, sizeof(ev->kind),
	    1) == -1)
		return -1;
	return 0;
}

/* The 5 arguments of Q_EVENT_ADD for event i of a batch (checked). */
static int
event_row(struct store *s, const void *arg, size_t i, struct store_arg *a)
{
	const struct store_event *ev = (const struct store_event *)arg + i;

	(void)s;
	a[0] = (struct store_arg)ARG_INT(ev->at != 0 ? ev->at :
	    store_now_ms());
	a[1] = (struct store_arg)ARG_TEXT(ev->app);
	a[2] = (struct store_arg)ARG_TEXT(ev->service);
	a[3] = (struct store_arg)ARG_TEXT(ev->kind);
	a[4] = (struct store_arg)ARG_TEXT(ev->detail_json);
	return 0;
}

int
store_event_add(struct store *s, const struct store_event *ev)
{
	struct store_arg a[5];

	call_start(s);
	if (check_event(s, ev) == -1)
		return -1;
	(void)event_row(s, ev, 0, a);
	return store_q_do(s, Q_EVENT_ADD, a, NITEMS(a), NULL);
}

int
store_events_add(struct store *s, const struct store_event *v, size_t n)
{
	size_t i;
	int own, r;

	call_start(s);
	for (i = 0; i < n; i++)
		if (check_event(s, &v[i]) == -1) {
			store_errprefix(s, "event %zu", i);
			return -1;
		}
	if (n == 0)
		return 0;
	if (store_own_begin(s, &own) == -1)
		return -1;
	r = store_q_rows(s, Q_EVENT_ADD, Q_EVENT_ADD_MANY, 5, n, event_row, v);
	return store_own_end(s, own, r);
}

static int
read_event(struct store *s, struct store_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->id = s->ops->col_int(s, 0);
	ev->at = s->ops->col_int(s, 1);
	if (store_col_copy(s, 2, ev->app, sizeof(ev->app), "app name") == -1 ||
	    store_col_copy(s, 3, ev->service, sizeof(ev->service),
	    "service name") == -1 ||
	    store_col_copy(s, 4, ev->kind, sizeof(ev->kind),
	    "event kind") == -1)
		return -1;
	if (!s->ops->isnull(s, 5) && (ev->detail_json = store_col_dup(s,
	    5)) == NULL)
		return -1;
	return 0;
}

int
store_event_list(struct store *s, const char *app, const char *service,
    const char *kind, int64_t since, size_t limit, struct store_event **out,
    size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_TEXT(kind), ARG_INT(since), ARG_INT(INT64_MAX) };

	call_start(s);
	if (limit != 0 && limit < (uint64_t)INT64_MAX)
		a[4].num = (int64_t)limit;
	return read_events(s, Q_EVENT_LIST, a, NITEMS(a), out, nout);
}

int
store_event_after(struct store *s, int64_t after, size_t limit,
    struct store_event **out, size_t *nout)
{
	struct store_arg a[] = { ARG_INT(after), ARG_INT(INT64_MAX) };

	call_start(s);
	if (limit != 0 && limit < (uint64_t)INT64_MAX)
		a[1].num = (int64_t)limit;
	return read_events(s, Q_EVENT_AFTER, a, NITEMS(a), out, nout);
}

static int
read_event_row(struct store *s, void *p)
{
	return read_event(s, p);
}

static void
event_rows_free(void *v, size_t n)
{
	store_event_free(v, n);
}

/* The rows of an event query, all or none. */
static int
read_events(struct store *s, enum store_q q, const struct store_arg *a,
    size_t na, struct store_event **out, size_t *nout)
{
	void *v;
	int r;

	r = store_read_rows(s, q, a, na, sizeof(**out), read_event_row,
	    event_rows_free, &v, nout);
	*out = v;
	return r;
}

void
store_event_free(struct store_event *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i].detail_json);
	free(v);
}

/* Inserts a packed batch with ids from first on. */
static int
request_value_add(struct store *s, int64_t first, const struct reqbatch *b)
{
	struct store_arg a[] = { ARG_INT(first), ARG_INT((int64_t)b->n),
	    ARG_INT(b->min_at), ARG_INT(b->max_at), ARG_BLOB(b->buf, b->len) };

	return store_q_do(s, Q_REQUEST_ADD, a, NITEMS(a), NULL);
}

/*
 * Packs v into one batch with ids from first on and inserts it: all or
 * none, a record with a field not terminated refuses the batch.
 */
int
store_request_batch_add(struct store *s, int64_t first,
    const struct store_request *v, size_t n)
{
	struct reqbatch b;
	char err[STORE_ERR_LEN];
	int r;

	if (reqbatch_encode(v, n, &b, err, sizeof(err)) == -1) {
		store_seterr(s, 0, "%s", err);
		return -1;
	}
	r = request_value_add(s, first, &b);
	free(b.buf);
	return r;
}

/* The ids of a new batch: after the newest batch's last. */
static int
request_add_start(struct store *s, size_t n, int *own, int64_t *first)
{
	if (n > (size_t)INT32_MAX) {
		store_seterr(s, 0, "request batch: %zu records", n);
		return -1;
	}
	if (store_own_begin(s, own) == -1)
		return -1;
	if (store_q_int(s, Q_REQUEST_NEXT_ID, NULL, 0, first) == -1) {
		(void)store_own_end(s, *own, -1);
		return -1;
	}
	return 0;
}

int
store_request_add(struct store *s, const struct store_request *v, size_t n)
{
	int64_t first;
	int own;

	call_start(s);
	if (n == 0)
		return 0;
	if (request_add_start(s, n, &own, &first) == -1)
		return -1;
	return store_own_end(s, own, store_request_batch_add(s, first, v, n));
}

int
store_request_add_packed(struct store *s, const struct reqbatch *b)
{
	int64_t first;
	int own;

	call_start(s);
	if (b->n == 0)
		return 0;
	if (request_add_start(s, b->n, &own, &first) == -1)
		return -1;
	return store_own_end(s, own, request_value_add(s, first, b));
}

/* What store_request_list() gathers while batches unpack. */
struct request_filter {
	const char		*app, *service;
	int			 status;
	int64_t			 since;
	size_t			 limit;		/* 0 = all */
	struct store_request	*v;
	size_t			 n, cap;
	struct store		*s;
};

#define TAKE_NOMEM	2	/* request_take(): out of memory */
static int
request_take(const struct store_request *rq, void *arg)
{
	struct request_filter *f = arg;
	void *nv;

	if (rq->at < f->since || (f->status != 0 && rq->status !=
	    f->status) || (f->app != NULL && strcmp(rq->app, f->app) != 0) ||
	    (f->service != NULL && strcmp(rq->service, f->service) != 0))
		return 0;
	if ((nv = store_grow(f->s, f->v, f->n, &f->cap, sizeof(*f->v))) == NULL)
		return TAKE_NOMEM;
	f->v = nv;
	f->v[f->n++] = *rq;
	return 0;
}

static int
request_cmp(const void *pa, const void *pb)
{
	const struct store_request *a = pa, *b = pb;

	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/*
 * The records of one batch that pass f.  Records of a batch are taken
 * all, then the newest dropped down to the limit: within a batch ids
 * grow, and the newest written are the ones kept.
 */
static int
request_batch_take(struct store *s, struct request_filter *f, int64_t id,
    const unsigned char *b, size_t len)
{
	char err[STORE_ERR_LEN];
	size_t before = f->n, got, keep;
	int r;

	if ((r = reqbatch_decode(b, len, id, request_take, f, err,
	    sizeof(err))) == TAKE_NOMEM)
		return store_nomem(s);
	if (r != 0) {
		store_seterr(s, 0, "%s", err);
		return -1;
	}
	got = f->n - before;
	if (f->limit != 0 && before + got > f->limit) {
		keep = f->limit - before;
		memmove(&f->v[before], &f->v[before + got - keep],
		    keep * sizeof(*f->v));
		f->n = before + keep;
	}
	return 0;
}

#define LIST_BATCHES	16	/* a statement of the list walk */
int
store_request_list(struct store *s, const char *app, const char *service,
    int status, int64_t since, size_t limit, struct store_request **out,
    size_t *nout)
{
	struct request_filter f = { app, service, status, since, limit,
	    NULL, 0, 0, s };
	struct store_arg a[] = { ARG_INT(INT64_MAX), ARG_INT(since),
	    ARG_INT(LIST_BATCHES) };
	const unsigned char *b;
	size_t len, rows;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	do {
		rows = 0;
		if ((r = s->ops->exec(s, Q_REQUEST_LIST, a, NITEMS(a))) == 0)
			while ((r = s->ops->next(s)) == 1) {
				rows++;
				a[0].num = s->ops->col_int(s, 0);
				b = s->ops->col_blob(s, 1, &len);
				if ((r = request_batch_take(s, &f, a[0].num,
				    b, len)) == -1)
					break;
			}
		s->ops->finish(s);
	} while (r == 0 && rows == LIST_BATCHES &&
	    (limit == 0 || f.n < limit));
	if (r == -1) {
		free(f.v);
		return -1;
	}
	if (f.n > 0)
		qsort(f.v, f.n, sizeof(*f.v), request_cmp);
	*out = f.v;
	*nout = f.n;
	return 0;
}

int
store_event_prune(struct store *s, int64_t before, int64_t max_rows,
    int64_t *deleted)
{
	return store_prune(s, Q_EVENT_PRUNE_AGE, Q_EVENT_PRUNE_ROWS, before,
	    max_rows, deleted);
}

/*
 * The whole batches that end before id cut go, PRUNE_BATCH rows a step,
 * each step in a transaction of its own unless the caller holds one (as
 * store_prune(), and for its reasons); *n counts their records.
 */
static int
request_cut(struct store *s, int64_t cut, int64_t *n)
{
	struct store_arg a[] = { ARG_INT(cut), ARG_INT(PRUNE_BATCH) };
	int64_t step;
	int own, r;

	if (cut <= 1)
		return 0;
	do {
		if (store_q_int(s, Q_REQUEST_BATCH_CUT, a, NITEMS(a),
		    &step) == -1 || store_own_begin(s, &own) == -1)
			return -1;
		r = request_cut_step(s, step, n);
		if (store_own_end(s, own, r) == -1)
			return -1;
	} while (step < cut);
	return 0;
}

/* One step of request_cut(): the batches that end before step. */
static int
request_cut_step(struct store *s, int64_t step, int64_t *n)
{
	struct store_arg a[] = { ARG_INT(step) };
	int64_t k = 0;

	if (store_q_int(s, Q_REQUEST_COUNT_BEFORE, a, NITEMS(a), &k) == -1 ||
	    store_q_do(s, Q_REQUEST_DELETE_BEFORE, a, NITEMS(a), NULL) == -1)
		return -1;
	*n += k;
	return 0;
}

/*
 * Requests go by whole batches: by age those before the first batch with
 * a record at or after before; by rows those that end before the newest
 * max_rows ids, so up to a batch more than max_rows may stay.
 */
int
store_request_prune(struct store *s, int64_t before, int64_t max_rows,
    int64_t *deleted)
{
	struct store_arg a[] = { ARG_INT(before), ARG_INT(0) };
	int64_t cut, n = 0;
	int r = 0;

	call_start(s);
	if (before > 0) {
		a[1].num = store_now_ms() + PRUNE_AHEAD_MS;
		r = store_q_int(s, Q_REQUEST_AGE_CUT, a, NITEMS(a), &cut);
		if (r == 0)
			r = request_cut(s, cut, &n);
	}
	if (r == 0 && max_rows > 0) {
		r = store_q_int(s, Q_REQUEST_NEXT_ID, NULL, 0, &cut);
		if (r == 0)
			r = request_cut(s, cut - max_rows, &n);
	}
	if (deleted != NULL)
		*deleted = n;
	return r == 0 ? 0 : -1;
}
