/*
 * store_leases.c - settings in the state store (lib/store_leases.c), on
 * both engines (store_suite.h).  The leases of that file have a test of
 * their own, tests/unit/lease.c.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

static void	 t_settings(const char *, struct store *);
static void	 checks(const char *, struct store *, const char *);

static void
t_settings(const char *E, struct store *s)
{
	char *v = NULL;

	ok(store_setting_get(s, "greeting", &v) == 1 && v == NULL,
	    "%s: setting get of unknown is 1", E);
	ok(store_setting_put(s, "greeting", "hello") == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    strcmp(v, "hello") == 0, "%s: setting put, get", E);
	free(v);
	ok(store_setting_put(s, "greeting", "") == 0 &&
	    store_setting_get(s, "greeting", &v) == 0 && v != NULL &&
	    *v == '\0', "%s: setting overwritten, empty value", E);
	free(v);
}

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	(void)url;
	t_settings(E, s);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_leases",
		.checks = checks,
	};

	return store_suite_main(&t);
}
