/*
 * store_services.c - apps, services and instances in the state store
 * (store.h): an app's row; each service's spec, its revision (a new one
 * for each changed spec, in one statement), desired state and whether
 * it is serverless; the prune of hk apply; and the row of the instance
 * running each service.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static const char *desired_word(enum store_desired);
static int	 read_service(struct store *, struct store_service *);
static int	 read_service_row(struct store *, void *);
static int	 read_instance(struct store *, struct store_instance *);
static int	 read_instance_row(struct store *, void *);

int
store_app_put(struct store *s, const char *name, const char *path)
{
	struct store_arg a[] = { ARG_TEXT(name), ARG_TEXT(path),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	if (store_check_name(s, "app name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (path == NULL)
		a[1].text = "";
	return store_q_do(s, Q_APP_PUT, a, NITEMS(a), NULL);
}

int
store_service_put(struct store *s, const char *app, const char *name,
    const char *spec_json, int serverless, int64_t *revision, int *changed)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_TEXT(spec_json), ARG_INT(serverless != 0),
	    ARG_INT(store_now_ms()) };
	int64_t rev = 0;
	int r;

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (spec_json == NULL) {
		store_seterr(s, 0, "service %s/%s: no spec", app, name);
		return -1;
	}
	/* A row back means inserted or bumped; none means unchanged. */
	if ((r = store_q_int(s, Q_SERVICE_PUT, a, NITEMS(a), &rev)) == 1)
		r = store_q_int(s, Q_SERVICE_REVISION, a, 2,
		    &rev) == 0 ? 1 : -1;
	if (r == -1) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "vanished while written");
		store_errprefix(s, "service %s/%s", app, name);
		return -1;
	}
	if (revision != NULL)
		*revision = rev;
	if (changed != NULL)
		*changed = r == 0;
	return 0;
}

static const char *
desired_word(enum store_desired d)
{
	return d == STORE_DESIRED_STOPPED ? "stopped" : "auto";
}

/* Reads the current row into v; on error v is left cleared. */
static int
read_service(struct store *s, struct store_service *v)
{
	const char *d;

	memset(v, 0, sizeof(*v));
	if (store_col_copy(s, 0, v->app, sizeof(v->app), "app name") == -1 ||
	    store_col_copy(s, 1, v->name, sizeof(v->name),
	    "service name") == -1)
		return -1;
	if ((v->spec_json = store_col_dup(s, 2)) == NULL) {
		if (s->err[0] == '\0')
			store_seterr(s, 0, "service %s/%s: no spec", v->app,
			    v->name);
		return -1;
	}
	v->revision = s->ops->col_int(s, 3);
	d = s->ops->col_text(s, 4);
	if (d != NULL && strcmp(d, "auto") == 0)
		v->desired = STORE_DESIRED_AUTO;
	else if (d != NULL && strcmp(d, "stopped") == 0)
		v->desired = STORE_DESIRED_STOPPED;
	else {
		store_seterr(s, 0, "service %s/%s: bad desired state",
		    v->app, v->name);
		store_service_clear(v);
		return -1;
	}
	v->serverless = s->ops->col_int(s, 5) != 0;
	v->created_at = s->ops->col_int(s, 6);
	v->updated_at = s->ops->col_int(s, 7);
	return 0;
}

int
store_service_get(struct store *s, const char *app, const char *name,
    struct store_service *v)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name) };

	call_start(s);
	memset(v, 0, sizeof(*v));
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", name, STORE_NAME_MAX) == -1)
		return -1;
	return store_read_one(s, Q_SERVICE_GET, a, NITEMS(a), read_service_row,
	    v);
}

static int
read_service_row(struct store *s, void *p)
{
	return read_service(s, p);
}

static void
service_rows_free(void *v, size_t n)
{
	store_service_free(v, n);
}

int
store_service_list(struct store *s, struct store_service **out,
    size_t *nout)
{
	void *v;
	int r;

	call_start(s);
	r = store_read_rows(s, Q_SERVICE_LIST, NULL, 0, sizeof(**out),
	    read_service_row, service_rows_free, &v, nout);
	*out = v;
	return r;
}

int
store_service_prune(struct store *s, const char *app, char *const *keep,
    size_t nkeep, char ***removed_names, size_t *removed)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(NULL) };
	char **gone = NULL, **ng;
	const char *name;
	size_t ngone = 0, cap = 0, i, k;
	int own, r;

	call_start(s);
	if (removed_names != NULL)
		*removed_names = NULL;
	if (removed != NULL)
		*removed = 0;
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_own_begin(s, &own) == -1)
		return -1;
	if ((r = s->ops->exec(s, Q_SERVICE_NAMES, a, 1)) == 0) {
		while ((r = s->ops->next(s)) == 1) {
			if ((name = s->ops->col_text(s, 0)) == NULL)
				continue;
			for (k = 0; k < nkeep; k++)
				if (keep[k] != NULL &&
				    strcmp(keep[k], name) == 0)
					break;
			if (k < nkeep)
				continue;
			if ((ng = store_grow(s, gone, ngone, &cap,
			    sizeof(*gone))) == NULL) {
				r = -1;
				break;
			}
			gone = ng;
			if ((gone[ngone] = strdup(name)) == NULL) {
				r = store_nomem(s);
				break;
			}
			ngone++;
		}
	}
	s->ops->finish(s);
	/* Instances go with their service (ON DELETE CASCADE too). */
	for (i = 0; r == 0 && i < ngone; i++) {
		a[1].text = gone[i];
		if ((r = store_q_do(s, Q_INSTANCE_DELETE_ALL, a, 2,
		    NULL)) == 0)
			r = store_q_do(s, Q_SERVICE_DELETE, a, 2, NULL);
	}
	if (store_own_end(s, own, r) == -1) {
		store_errprefix(s, "prune app %s", app);
		for (i = 0; i < ngone; i++)
			free(gone[i]);
		free(gone);
		return -1;
	}
	if (removed != NULL)
		*removed = ngone;
	if (removed_names != NULL)
		*removed_names = gone;
	else {
		for (i = 0; i < ngone; i++)
			free(gone[i]);
		free(gone);
	}
	return 0;
}

int
store_service_set_desired(struct store *s, const char *app,
    const char *name, enum store_desired d)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_TEXT(desired_word(d)) };
	int64_t n = 0;

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (store_q_do(s, Q_SERVICE_DESIRED, a, NITEMS(a), &n) == -1)
		return -1;
	return n == 0 ? 1 : 0;
}

int
store_count_serverless(struct store *s, const char *except_app, int64_t *n)
{
	struct store_arg a[] = { ARG_TEXT(except_app) };

	call_start(s);
	*n = 0;
	return store_q_int(s, Q_COUNT_SERVERLESS, a, NITEMS(a),
	    n) == 0 ? 0 : -1;
}

void
store_service_clear(struct store_service *v)
{
	if (v == NULL)
		return;
	free(v->spec_json);
	memset(v, 0, sizeof(*v));
}

void
store_service_free(struct store_service *v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		store_service_clear(&v[i]);
	free(v);
}

int
store_instance_put(struct store *s, const struct store_instance *in)
{
	struct store_arg a[] = {
		ARG_TEXT(in->app), ARG_TEXT(in->service),
		ARG_INT(in->revision), ARG_TEXT(in->state),
		ARG_TEXT(in->endpoint), ARG_TEXT(in->node),
		ARG_INT(in->pid), ARG_INT(in->pid_start),
		ARG_INT(in->started_at), ARG_INT(in->ready_at),
		ARG_INT(in->updated_at != 0 ? in->updated_at :
		    store_now_ms()),
		ARG_INT(in->replica),
	};

	call_start(s);
	if (store_check_field(s, "app name", in->app, sizeof(in->app),
	    1) == -1 ||
	    store_check_field(s, "service name", in->service,
	    sizeof(in->service), 1) == -1 ||
	    store_check_field(s, "state", in->state, sizeof(in->state),
	    1) == -1 ||
	    store_check_field(s, "endpoint", in->endpoint,
	    sizeof(in->endpoint), 0) == -1 ||
	    store_check_field(s, "node", in->node, sizeof(in->node), 0) == -1)
		return -1;
	if (in->replica < 0) {
		store_seterr(s, 0, "instance %s/%s: replica %d", in->app,
		    in->service, in->replica);
		return -1;
	}
	if (store_q_do(s, Q_INSTANCE_PUT, a, NITEMS(a), NULL) == -1) {
		store_errprefix(s, "instance %s/%s#%d", in->app, in->service,
		    in->replica);
		return -1;
	}
	return 0;
}

static int
read_instance(struct store *s, struct store_instance *in)
{
	memset(in, 0, sizeof(*in));
	if (store_col_copy(s, 0, in->app, sizeof(in->app), "app name") == -1 ||
	    store_col_copy(s, 1, in->service, sizeof(in->service),
	    "service name") == -1 ||
	    store_col_copy(s, 3, in->state, sizeof(in->state), "state") == -1 ||
	    store_col_copy(s, 4, in->endpoint, sizeof(in->endpoint),
	    "endpoint") == -1 ||
	    store_col_copy(s, 5, in->node, sizeof(in->node), "node") == -1)
		return -1;
	in->revision = s->ops->col_int(s, 2);
	in->pid = s->ops->col_int(s, 6);
	in->pid_start = s->ops->col_int(s, 7);
	in->started_at = s->ops->col_int(s, 8);
	in->ready_at = s->ops->col_int(s, 9);
	in->updated_at = s->ops->col_int(s, 10);
	in->replica = (int)s->ops->col_int(s, 11);
	return 0;
}

int
store_instance_get(struct store *s, const char *app, const char *service,
    struct store_instance *in)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service) };

	call_start(s);
	memset(in, 0, sizeof(*in));
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", service, STORE_NAME_MAX) == -1)
		return -1;
	return store_read_one(s, Q_INSTANCE_GET, a, NITEMS(a),
	    read_instance_row,
	    in);
}

int
store_instance_delete(struct store *s, const char *app, const char *service,
    int replica)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(service),
	    ARG_INT(replica) };

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "service name", service, STORE_NAME_MAX) == -1)
		return -1;
	if (replica < 0)
		return store_q_do(s, Q_INSTANCE_DELETE_ALL, a, 2, NULL);
	return store_q_do(s, Q_INSTANCE_DELETE, a, NITEMS(a), NULL);
}

static int
read_instance_row(struct store *s, void *p)
{
	return read_instance(s, p);
}

int
store_instance_list(struct store *s, struct store_instance **out,
    size_t *nout)
{
	void *v;
	int r;

	call_start(s);
	r = store_read_rows(s, Q_INSTANCE_LIST, NULL, 0, sizeof(**out),
	    read_instance_row, NULL, &v, nout);
	*out = v;
	return r;
}
