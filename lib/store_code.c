/*
 * store_code.c - code, vetting verdicts and secrets in the state store
 * (store.h): source archives by hash, written once and pruned once no
 * service's spec names them; the hashes the vetting gate judged safe,
 * pruned with their code; and secrets, sealed bytes and a digest, never
 * their value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_impl.h"
#include "store_tables.h"

static int	 code_copy(struct store *, unsigned char **, size_t *);
static int	 read_code_row(struct store *, void *);

/* The data column of the row at hand, copied. */
static int
code_copy(struct store *s, unsigned char **data, size_t *len)
{
	const unsigned char *b;

	if ((b = s->ops->col_blob(s, 0, len)) == NULL) {
		store_seterr(s, 0, "code: NULL data");
		return -1;
	}
	/* One byte more: malloc(0) may be NULL. */
	if ((*data = malloc(*len + 1)) == NULL)
		return store_nomem(s);
	memcpy(*data, b, *len);
	return 0;
}

/* Where read_code_row() puts the data column. */
struct code_out {
	unsigned char	**data;
	size_t		 *len;
};

/* code_copy() as a store_read_one() reader, to a struct code_out. */
static int
read_code_row(struct store *s, void *p)
{
	struct code_out *o = p;

	return code_copy(s, o->data, o->len);
}

/* Code: hash is 64 hex digits, checked by the caller (lib/srctree.h). */
int
store_code_put(struct store *s, const char *hash, const void *data,
    size_t len)
{
	struct store_arg a[] = { ARG_TEXT(hash), ARG_INT((int64_t)len),
	    ARG_BLOB(data, len), ARG_INT(store_now_ms()) };

	call_start(s);
	if (store_check_name(s, "code hash", hash, STORE_HASH_MAX) == -1)
		return -1;
	if (len > INT32_MAX) {
		store_seterr(s, 0, "code %s: too large", hash);
		return -1;
	}
	return store_q_do(s, Q_CODE_PUT, a, NITEMS(a), NULL);
}

int
store_code_prune(struct store *s, int64_t *deleted)
{
	int64_t n = 0;
	int r;

	call_start(s);
	r = store_q_do(s, Q_CODE_PRUNE, NULL, 0, &n);
	if (r == 0)
		r = store_q_do(s, Q_VETTED_PRUNE, NULL, 0, NULL);
	if (deleted != NULL)
		*deleted = r == 0 ? n : 0;
	return r;
}

int
store_code_get(struct store *s, const char *hash, unsigned char **data,
    size_t *len)
{
	struct store_arg a[] = { ARG_TEXT(hash) };
	struct code_out o = { data, len };

	call_start(s);
	*data = NULL;
	*len = 0;
	if (store_check_name(s, "code hash", hash, STORE_HASH_MAX) == -1)
		return -1;
	return store_read_one(s, Q_CODE_GET, a, NITEMS(a), read_code_row, &o);
}

/* Vetted code: a hash judged safe, and by which model. */
int
store_vetted_put(struct store *s, const char *hash, const char *model)
{
	struct store_arg a[] = { ARG_TEXT(hash), ARG_TEXT(model),
	    ARG_INT(store_now_ms()) };

	call_start(s);
	if (store_check_name(s, "code hash", hash, STORE_HASH_MAX) == -1)
		return -1;
	return store_q_do(s, Q_VETTED_PUT, a, NITEMS(a), NULL);
}

int
store_vetted_get(struct store *s, const char *hash, char **model)
{
	struct store_arg a[] = { ARG_TEXT(hash) };

	call_start(s);
	*model = NULL;
	if (store_check_name(s, "code hash", hash, STORE_HASH_MAX) == -1)
		return -1;
	return store_read_one(s, Q_VETTED_GET, a, NITEMS(a),
	    store_read_text_row, model);
}

/* Secrets: the sealed bytes only; lib/secret.h seals and opens them. */
int
store_secret_put(struct store *s, const char *app, const char *name,
    const void *data, size_t len, const char *digest)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name),
	    ARG_BLOB(data, len), ARG_TEXT(digest), ARG_INT(store_now_ms()) };

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "secret name", name, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "secret digest", digest, STORE_HASH_MAX) == -1)
		return -1;
	if (len == 0 || len > INT32_MAX) {
		store_seterr(s, 0, "secret %s/%s: bad size", app, name);
		return -1;
	}
	return store_q_do(s, Q_SECRET_PUT, a, NITEMS(a), NULL);
}

int
store_secret_get(struct store *s, const char *app, const char *name,
    unsigned char **data, size_t *len)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name) };
	struct code_out o = { data, len };

	call_start(s);
	*data = NULL;
	*len = 0;
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "secret name", name, STORE_NAME_MAX) == -1)
		return -1;
	return store_read_one(s, Q_SECRET_GET, a, NITEMS(a), read_code_row, &o);
}

static int
read_secret_row(struct store *s, void *p)
{
	struct store_secret *x = p;

	memset(x, 0, sizeof(*x));
	if (store_col_copy(s, 0, x->app, sizeof(x->app), "app") == -1 ||
	    store_col_copy(s, 1, x->name, sizeof(x->name),
	    "secret name") == -1 ||
	    store_col_copy(s, 2, x->digest, sizeof(x->digest), "digest") == -1)
		return -1;
	x->created_at = s->ops->col_int(s, 3);
	x->updated_at = s->ops->col_int(s, 4);
	return 0;
}

int
store_secret_list(struct store *s, const char *app,
    struct store_secret **out, size_t *nout)
{
	struct store_arg a[] = { ARG_TEXT(app) };
	void *v;
	int r;

	call_start(s);
	*out = NULL;
	*nout = 0;
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1)
		return -1;
	r = store_read_rows(s, Q_SECRET_LIST, a, NITEMS(a), sizeof(**out),
	    read_secret_row, NULL, &v, nout);
	*out = v;
	return r;
}

/* Where read_newest_row() puts a row. */
struct newest_out {
	char		 *app;		/* STORE_NAME_MAX + 1 */
	char		 *name;
	unsigned char	**data;
	size_t		 *len;
};

static int
read_newest_row(struct store *s, void *p)
{
	struct newest_out *o = p;
	const unsigned char *b;

	if (store_col_copy(s, 0, o->app, STORE_NAME_MAX + 1, "app") == -1 ||
	    store_col_copy(s, 1, o->name, STORE_NAME_MAX + 1,
	    "secret name") == -1)
		return -1;
	if ((b = s->ops->col_blob(s, 2, o->len)) == NULL) {
		store_seterr(s, 0, "secret %s/%s: NULL data", o->app, o->name);
		return -1;
	}
	if ((*o->data = malloc(*o->len + 1)) == NULL)
		return store_nomem(s);
	memcpy(*o->data, b, *o->len);
	return 0;
}

int
store_secret_newest(struct store *s, char *app, char *name,
    unsigned char **data, size_t *len)
{
	struct newest_out o = { app, name, data, len };

	call_start(s);
	*data = NULL;
	*len = 0;
	return store_read_one(s, Q_SECRET_NEWEST, NULL, 0, read_newest_row,
	    &o);
}

int
store_secret_delete(struct store *s, const char *app, const char *name)
{
	struct store_arg a[] = { ARG_TEXT(app), ARG_TEXT(name) };
	int64_t n = 0;

	call_start(s);
	if (store_check_name(s, "app name", app, STORE_NAME_MAX) == -1 ||
	    store_check_name(s, "secret name", name, STORE_NAME_MAX) == -1)
		return -1;
	if (store_q_do(s, Q_SECRET_DELETE, a, NITEMS(a), &n) == -1)
		return -1;
	return n == 0 ? 1 : 0;
}
