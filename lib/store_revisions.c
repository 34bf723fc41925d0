/*
 * store_revisions.c - the revisions of each service in the state store
 * (store.h): what hk apply applied (its spec and code hash), and whether
 * hk-scale saw it pass its readiness gate, so that hk-scale can start the
 * last revision that passed while a newer one fails, "hk history" can
 * list them and "hk rollback" can apply an earlier one again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static int	 check_service(struct store *, const char *, const char *);
static int	 read_revision_row(struct store *, void *);
static void	 revision_rows_free(void *, size_t);

static int
check_service(struct store *s, const char *app, const char *service)
{
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", service, STORE_NAME_MAX) == -1)
		return -1;
	return 0;
}

int
store_revision_add(struct store *s, const char *app, const char *service,
    int64_t revision, const char *spec_json, const char *code_hash)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(revision), ARG_TEXT(spec_json),
	    ARG_TEXT(code_hash != NULL ? code_hash : ""),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	if (check_service(s, app, service) == -1)
		return -1;
	if (spec_json == NULL || revision < 1 || (code_hash != NULL &&
	    strlen(code_hash) > STORE_HASH_MAX)) {
		store_seterr(s, 0, "revision %s/%s %lld: bad spec or code hash",
		    app, service, (long long)revision);
		return -1;
	}
	return store_q_do(s, Q_REVISION_ADD, a, NITEMS(a), NULL);
}

int
store_revision_gate(struct store *s, const char *app, const char *service,
    int64_t revision, const char *gate, const char *reason)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(revision), ARG_TEXT(gate), ARG_INT(store_now_ms()),
	    ARG_TEXT(reason != NULL ? reason : "") };
	int64_t n = 0;
	struct store_revision r;
	int got;

	call_start(s);
	if (check_service(s, app, service) == -1)
		return -1;
	if (strcmp(gate, "pending") != 0 && strcmp(gate, "passed") != 0 &&
	    strcmp(gate, "failed") != 0) {
		store_seterr(s, 0, "revision gate: \"%s\" is not one", gate);
		return -1;
	}
	if (strcmp(gate, "pending") == 0)
		a[4].num = 0;
	if (store_q_do(s, Q_REVISION_GATE, a, NITEMS(a), &n) == -1)
		return -1;
	if (n > 0)
		return 0;
	/* No row changed: none there, or one that passed already. */
	if ((got = store_revision_get(s, app, service, revision, &r)) != 0)
		return got;
	store_revision_clear(&r);
	return 0;
}

static int
read_revision_row(struct store *s, void *p)
{
	struct store_revision *r = p;

	memset(r, 0, sizeof(*r));
	if (store_col_copy(s, 0, r->app, sizeof(r->app), "app") == -1 ||
	    store_col_copy(s, 1, r->service, sizeof(r->service),
	    "service") == -1 ||
	    store_col_copy(s, 4, r->code_hash, sizeof(r->code_hash),
	    "code hash") == -1 ||
	    store_col_copy(s, 6, r->gate, sizeof(r->gate), "gate") == -1 ||
	    store_col_copy(s, 8, r->reason, sizeof(r->reason),
	    "reason") == -1)
		return -1;
	if ((r->spec_json = store_col_dup(s, 3)) == NULL) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "revision: NULL spec");
		return -1;
	}
	r->revision = s->ops->col_int(s, 2);
	r->applied_at = s->ops->col_int(s, 5);
	r->gate_at = s->ops->col_int(s, 7);
	return 0;
}

int
store_revision_get(struct store *s, const char *app, const char *service,
    int64_t revision, struct store_revision *out)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(revision) };

	call_start(s);
	memset(out, 0, sizeof(*out));
	if (check_service(s, app, service) == -1)
		return -1;
	return store_read_one(s, Q_REVISION_GET, a, NITEMS(a),
	    read_revision_row, out);
}

int
store_revision_passed(struct store *s, const char *app, const char *service,
    int64_t below, struct store_revision *out)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(below) };

	call_start(s);
	memset(out, 0, sizeof(*out));
	if (check_service(s, app, service) == -1)
		return -1;
	return store_read_one(s, Q_REVISION_PASSED, a, NITEMS(a),
	    read_revision_row, out);
}

static void
revision_rows_free(void *v, size_t n)
{
	store_revision_free(v, n);
}

int
store_revision_list(struct store *s, const char *app, const char *service,
    struct store_revision **out, size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service) };
	void *v;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	if (check_service(s, app, service) == -1)
		return -1;
	r = store_read_rows(s, Q_REVISION_LIST, a, NITEMS(a), sizeof(**out),
	    read_revision_row, revision_rows_free, &v, nout);
	*out = v;
	return r;
}

int
store_revision_prune(struct store *s, int64_t keep, int64_t *deleted)
{
	struct store_arg a[] = { ARG_INT(keep) };
	int64_t n = 0;
	int r;

	call_start(s);
	if (keep < 1) {
		store_seterr(s, 0, "revision prune: keep %lld is not at least 1",
		    (long long)keep);
		return -1;
	}
	r = store_q_do(s, Q_REVISION_PRUNE, a, NITEMS(a), &n);
	if (deleted != NULL)
		*deleted = r == 0 ? n : 0;
	return r;
}

void
store_revision_clear(struct store_revision *r)
{
	free(r->spec_json);
	r->spec_json = NULL;
}

void
store_revision_free(struct store_revision *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		store_revision_clear(&v[i]);
	free(v);
}
