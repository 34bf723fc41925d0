/*
 * store_code.c - code, vetting verdicts and secrets in the state store
 * (lib/store_code.c), on both engines (store_suite.h): code kept while a
 * spec names it, verdicts pruned with it, secrets' bytes as put.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

static void	 t_secrets(const char *, struct store *);
static void	 t_code(const char *, struct store *);
static void	 checks(const char *, struct store *, const char *);

/* The store keeps bytes it is given; sealing is lib/secret's. */
static void
t_secrets(const char *E, struct store *s)
{
	static const unsigned char b1[] = { '1', 0, 0xff, 'x' };
	static const unsigned char b2[] = { '1', 7, 7 };
	struct store_secret *v = NULL;
	unsigned char *d = NULL;
	size_t len = 0, n = 0;
	int64_t created;

	ok(store_secret_get(s, "sec", "A", &d, &len) == 1 && d == NULL,
	    "%s: secret get of unknown is 1", E);
	ok(store_secret_put(s, "sec", "B", b1, sizeof(b1), "bb") == 0 &&
	    store_secret_put(s, "sec", "A", b1, sizeof(b1), "aa") == 0 &&
	    store_secret_put(s, "other", "A", b2, sizeof(b2), "oo") == 0,
	    "%s: secret put", E);
	ok(store_secret_get(s, "sec", "A", &d, &len) == 0 &&
	    len == sizeof(b1) && memcmp(d, b1, len) == 0,
	    "%s: secret get: the bytes as put", E);
	free(d);
	ok(store_secret_list(s, "sec", &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].name, "A") == 0 && strcmp(v[0].digest, "aa") == 0 &&
	    strcmp(v[1].name, "B") == 0 && v[0].created_at > 0,
	    "%s: secret list: the app's, by name, with digests", E);
	created = n > 0 ? v[0].created_at : 0;
	free(v);
	ok(store_secret_put(s, "sec", "A", b2, sizeof(b2), "a2") == 0 &&
	    store_secret_list(s, "sec", &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].digest, "a2") == 0 && v[0].created_at == created,
	    "%s: secret replaced: new digest, created_at kept", E);
	free(v);
	ok(store_secret_delete(s, "sec", "A") == 0 &&
	    store_secret_delete(s, "sec", "A") == 1 &&
	    store_secret_get(s, "other", "A", &d, &len) == 0,
	    "%s: secret delete: 0, then 1; other apps' stay", E);
	free(d);
}

/* Code rows: kept while a spec names them, pruned once none does. */
static void
t_code(const char *E, struct store *s)
{
	static const char h1[] = "1111111111111111111111111111111111111111"
	    "111111111111111111111111";
	static const char h2[] = "2222222222222222222222222222222222222222"
	    "222222222222222222222222";
	char spec1[160], spec2[160], env2[200], *m = NULL;
	unsigned char *d = NULL;
	size_t len;
	int64_t n = -1;

	snprintf(spec1, sizeof(spec1), "{\"code_hash\":\"%s\",\"x\":1}", h1);
	snprintf(spec2, sizeof(spec2), "{\"code_hash\":\"%s\"}", h2);
	/* h2 inside a string value: escaped, names nothing */
	snprintf(env2, sizeof(env2), "{\"env\":\"\\\"code_hash\\\":\\\"%s\\\"\"}",
	    h2);
	ok(store_code_put(s, h1, "one", 3) == 0 &&
	    store_code_put(s, h2, "two", 3) == 0 &&
	    store_app_put(s, "codeapp", "/c") == 0 &&
	    store_service_put(s, "codeapp", "a", spec1, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "codeapp", "b", spec2, 0, NULL, NULL) == 0,
	    "%s: code put, two specs naming it", E);
	ok(store_code_prune(s, &n) == 0 && n == 0,
	    "%s: code prune keeps what specs name", E);
	ok(store_vetted_get(s, h2, &m) == 1 && m == NULL &&
	    store_vetted_put(s, h1, "m-old") == 0 &&
	    store_vetted_put(s, h1, "m1") == 0 &&
	    store_vetted_put(s, h2, "m2") == 0,
	    "%s: vetted: none, then put twice", E);
	ok(store_vetted_get(s, h1, &m) == 0 && m != NULL &&
	    strcmp(m, "m1") == 0, "%s: vetted get: the last model", E);
	free(m);
	m = NULL;
	ok(store_vetted_put(s, "", "m") == -1 &&
	    store_vetted_get(s, "", &m) == -1,
	    "%s: vetted of an empty hash: an error", E);
	ok(store_begin(s) == 0 &&
	    store_service_put(s, "codeapp", "b", env2, 0, NULL, NULL) == 0 &&
	    store_code_prune(s, &n) == 0 && store_commit(s) == 0 && n == 1,
	    "%s: in a transaction, a hash no spec names goes", E);
	ok(store_code_get(s, h2, &d, &len) == 1 && d == NULL,
	    "%s: the pruned hash is not in the store", E);
	ok(store_vetted_get(s, h2, &m) == 1 && m == NULL,
	    "%s: ... nor its verdict", E);
	ok(store_vetted_get(s, h1, &m) == 0, "%s: the kept code's stays", E);
	free(m);
	ok(store_code_get(s, h1, &d, &len) == 0 && len == 3 &&
	    memcmp(d, "one", 3) == 0, "%s: the other one stays", E);
	free(d);
	ok(store_service_prune(s, "codeapp", NULL, 0, NULL, NULL) == 0 &&
	    store_code_prune(s, &n) == 0 && n == 1 &&
	    store_code_get(s, h1, &d, &len) == 1,
	    "%s: its service removed, its code goes too", E);
}

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	(void)url;
	t_secrets(E, s);
	t_code(E, s);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_code",
		.checks = checks,
	};

	return store_suite_main(&t);
}
