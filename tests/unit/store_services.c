/*
 * store_services.c - apps, services and instances in the state store
 * (lib/store_services.c), on both engines (store_suite.h): revisions,
 * lists, desired states, the serverless count, instances, and the
 * prune of hk apply.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_suite.h"
#include "tap.h"

static void	 t_services(const char *, struct store *);
static void	 t_instances(const char *, struct store *);
static void	 t_prune(const char *, struct store *);
static void	 checks(const char *, struct store *, const char *);

static void
t_services(const char *E, struct store *s)
{
	struct store_service v;
	char buf[512];
	int64_t rev = 0, n = -1;
	int changed = -1;

	ok(store_app_put(s, "fn", "/srv/fn.toml") == 0 &&
	    store_app_put(s, "alpha", "/srv/alpha.toml") == 0 &&
	    store_app_put(s, "fn", "/srv/fn2.toml") == 0, "%s: app put", E);

	ok(store_service_put(s, "fn", "py", SPEC_PY1, 1, &rev, &changed) == 0 &&
	    rev == 1 && changed == 1,
	    "%s: a new service is revision 1, changed", E);
	rev = 0;
	ok(store_service_put(s, "fn", "py", SPEC_PY1, 1, &rev, &changed) == 0 &&
	    rev == 1 && changed == 0,
	    "%s: the same spec keeps revision 1, unchanged", E);
	ok(store_service_put(s, "fn", "py", SPEC_PY2, 1, &rev, &changed) == 0 &&
	    rev == 2 && changed == 1,
	    "%s: a changed spec makes revision 2", E);

	ok(store_service_get(s, "fn", "py", &v) == 0, "%s: get", E);
	is(v.spec_json, SPEC_PY2, "%s: get: spec", E);
	isint(v.revision, 2, "%s: get: revision", E);
	ok(strcmp(v.app, "fn") == 0 && strcmp(v.name, "py") == 0 &&
	    v.desired == STORE_DESIRED_AUTO && v.serverless == 1 &&
	    v.created_at > 0 && v.updated_at >= v.created_at,
	    "%s: get: app, name, desired, serverless, times", E);
	store_service_clear(&v);
	ok(store_service_get(s, "fn", "nope", &v) == 1,
	    "%s: get of an unknown service is 1", E);

	ok(store_service_put(s, "nope", "x", SPEC_DB, 0, NULL, NULL) == -1 &&
	    !store_busy(s) && *store_error(s) != '\0',
	    "%s: a service of an unknown app is refused, not busy", E);
	diag("%s", store_error(s));
	ok(store_service_put(s, "fn", "a123456789012345678901234567890123456789"
	    "012345678901234567890123", SPEC_DB, 0, NULL, NULL) == -1,
	    "%s: a name over %d bytes is refused", E, STORE_NAME_MAX);

	ok(store_service_put(s, "fn", "web", SPEC_DB, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "fn", "db", SPEC_DB, 0, NULL, NULL) == 0 &&
	    store_service_put(s, "fn", "api", SPEC_DB, 1, NULL, NULL) == 0 &&
	    store_service_put(s, "alpha", "zeta", SPEC_DB, 1, NULL,
	    NULL) == 0, "%s: more services", E);
	join_services(s, buf, sizeof(buf));
	is(buf, "alpha/zeta fn/api fn/db fn/py fn/web",
	    "%s: list is ordered by app, then name", E);

	ok(store_count_serverless(s, NULL, &n) == 0 && n == 3,
	    "%s: serverless services: 3", E);
	ok(store_count_serverless(s, "fn", &n) == 0 && n == 1,
	    "%s: serverless services outside fn: 1", E);
	ok(store_count_serverless(s, "alpha", &n) == 0 && n == 2,
	    "%s: serverless services outside alpha: 2", E);

	ok(store_service_set_desired(s, "fn", "py",
	    STORE_DESIRED_STOPPED) == 0, "%s: set desired stopped", E);
	ok(store_service_get(s, "fn", "py", &v) == 0 &&
	    v.desired == STORE_DESIRED_STOPPED && v.revision == 2,
	    "%s: desired is stopped, revision unchanged", E);
	store_service_clear(&v);
	ok(store_service_set_desired(s, "fn", "nope",
	    STORE_DESIRED_STOPPED) == 1, "%s: set desired of unknown is 1", E);
	ok(store_service_set_desired(s, "fn", "py", STORE_DESIRED_AUTO) == 0 &&
	    store_service_get(s, "fn", "py", &v) == 0 &&
	    v.desired == STORE_DESIRED_AUTO, "%s: set desired auto", E);
	store_service_clear(&v);
}

static void
t_instances(const char *E, struct store *s)
{
	struct store_instance in, got, *v;
	size_t n = 0;

	memset(&in, 0, sizeof(in));
	(void)strlcpy(in.app, "fn", sizeof(in.app));
	(void)strlcpy(in.service, "py", sizeof(in.service));
	(void)strlcpy(in.state, "running", sizeof(in.state));
	(void)strlcpy(in.endpoint, "127.0.0.1:8081", sizeof(in.endpoint));
	(void)strlcpy(in.node, "node-1", sizeof(in.node));
	in.revision = 2;
	in.pid = 4242;
	in.pid_start = 123456789;
	in.started_at = 1000;
	in.ready_at = 2000;
	in.updated_at = 3000;
	ok(store_instance_put(s, &in) == 0, "%s: instance put", E);
	ok(store_instance_get(s, "fn", "py", &got) == 0 &&
	    memcmp(&in, &got, sizeof(in)) == 0,
	    "%s: instance get returns what was put", E);

	(void)strlcpy(in.state, "draining", sizeof(in.state));
	in.updated_at = 0;
	ok(store_instance_put(s, &in) == 0 &&
	    store_instance_get(s, "fn", "py", &got) == 0 &&
	    strcmp(got.state, "draining") == 0 && got.updated_at > 3000,
	    "%s: instance put again updates, stamps updated_at", E);

	(void)strlcpy(in.service, "db", sizeof(in.service));
	ok(store_instance_put(s, &in) == 0, "%s: second instance", E);
	(void)strlcpy(in.service, "ghost", sizeof(in.service));
	ok(store_instance_put(s, &in) == -1 && !store_busy(s),
	    "%s: an instance of an unknown service is refused", E);
	ok(store_instance_list(s, &v, &n) == 0 && n == 2 &&
	    strcmp(v[0].service, "db") == 0 &&
	    strcmp(v[1].service, "py") == 0,
	    "%s: instance list, ordered", E);
	free(v);
	ok(store_instance_get(s, "fn", "web", &got) == 1,
	    "%s: instance get of none is 1", E);
	ok(store_instance_delete(s, "fn", "db", 0) == 0 &&
	    store_instance_get(s, "fn", "db", &got) == 1 &&
	    store_instance_list(s, &v, &n) == 0 && n == 1,
	    "%s: instance delete", E);
	free(v);

	/* replicas: a row each, replica 0 the one store_instance_get reads */
	(void)strlcpy(in.service, "py", sizeof(in.service));
	in.replica = 2;
	in.pid = 4343;
	ok(store_instance_put(s, &in) == 0 &&
	    store_instance_get(s, "fn", "py", &got) == 0 && got.pid == 4242 &&
	    got.replica == 0, "%s: replica 2 beside replica 0", E);
	in.replica = 1;
	in.pid = 4444;
	ok(store_instance_put(s, &in) == 0 &&
	    store_instance_list(s, &v, &n) == 0 && n == 3 &&
	    v[0].replica == 0 && v[1].replica == 1 && v[1].pid == 4444 &&
	    v[2].replica == 2 && v[2].pid == 4343,
	    "%s: instance list, replicas in order", E);
	free(v);
	in.replica = -1;
	ok(store_instance_put(s, &in) == -1, "%s: replica -1 refused", E);
	ok(store_instance_delete(s, "fn", "py", 2) == 0 &&
	    store_instance_list(s, &v, &n) == 0 && n == 2 &&
	    v[1].replica == 1, "%s: one replica deleted", E);
	free(v);
	ok(store_instance_delete(s, "fn", "py", -1) == 0 &&
	    store_instance_list(s, &v, &n) == 0 && n == 0,
	    "%s: every replica deleted", E);
	free(v);
	in.replica = 0;
	in.pid = 4242;
	(void)store_instance_put(s, &in);
}

static void
t_prune(const char *E, struct store *s)
{
	char *const keep[] = { "py", "db" };
	struct store_instance in, got;
	char **names = NULL, buf[512];
	size_t n = 9, i;

	memset(&in, 0, sizeof(in));
	(void)strlcpy(in.app, "fn", sizeof(in.app));
	(void)strlcpy(in.service, "api", sizeof(in.service));
	(void)strlcpy(in.state, "running", sizeof(in.state));
	(void)store_instance_put(s, &in);

	ok(store_service_prune(s, "fn", keep, 2, &names, &n) == 0 && n == 2 &&
	    strcmp(names[0], "api") == 0 && strcmp(names[1], "web") == 0,
	    "%s: prune removes the services not kept, and names them", E);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	join_services(s, buf, sizeof(buf));
	is(buf, "alpha/zeta fn/db fn/py", "%s: prune keeps the others", E);
	ok(store_instance_get(s, "fn", "api", &got) == 1,
	    "%s: prune removes their instances", E);
	ok(store_instance_get(s, "fn", "py", &got) == 0,
	    "%s: prune keeps the other instances", E);
	ok(store_service_prune(s, "fn", keep, 2, &names, &n) == 0 && n == 0 &&
	    names == NULL, "%s: prune again removes nothing", E);
	ok(store_service_prune(s, "alpha", NULL, 0, NULL, &n) == 0 && n == 1,
	    "%s: prune keeping nothing, names not wanted", E);
	join_services(s, buf, sizeof(buf));
	is(buf, "fn/db fn/py", "%s: prune of another app", E);
}

/* The checks, in order, on the store of one engine. */
static void
checks(const char *E, struct store *s, const char *url)
{
	(void)url;
	t_services(E, s);
	t_instances(E, s);
	t_prune(E, s);
}

int
main(void)
{
	static const struct store_suite t = {
		.name = "store_services",
		.checks = checks,
	};

	return store_suite_main(&t);
}
