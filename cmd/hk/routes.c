/*
 * routes.c - "hk routes": where the gateway sends what.  One line per
 * serverless service (the gateway routes no other): its public hosts, its
 * path /fn/<app>/<service>/, the gateway's address (serverless_address)
 * and the endpoint of its current instance, from the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "hk.h"
#include "log.h"
#include "store.h"

static const char *endpoint_of(const struct store_instance *, size_t,
		    const struct store_service *);
static json_t	*route_json(const struct store_service *, const char *,
		    const char *, const char *);

/* The endpoint requests go to now: a running instance's, else NULL. */
static const char *
endpoint_of(const struct store_instance *in, size_t n,
    const struct store_service *svc)
{
	size_t i;

	if (svc->desired == STORE_DESIRED_STOPPED)
		return NULL;
	for (i = 0; i < n; i++)
		if (strcmp(in[i].app, svc->app) == 0 &&
		    strcmp(in[i].service, svc->name) == 0 &&
		    strcmp(in[i].state, "running") == 0 &&
		    in[i].endpoint[0] != '\0')
			return in[i].endpoint;
	return NULL;
}

static json_t *
route_json(const struct store_service *svc, const char *path,
    const char *gateway, const char *endpoint)
{
	json_t *spec, *hosts, *o;

	spec = json_loads(svc->spec_json, 0, NULL);
	hosts = json_object_get(spec, "hosts");
	o = json_pack("{s:s, s:s, s:O, s:s, s:s?, s:[]}", "app", svc->app,
	    "service", svc->name, "hosts", json_is_array(hosts) ? hosts :
	    json_array(), "path", path, "gateway",
	    gateway[0] != '\0' ? gateway : NULL, "endpoints");
	if (o != NULL && endpoint != NULL)
		json_array_append_new(json_object_get(o, "endpoints"),
		    json_string(endpoint));
	json_decref(spec);
	return o;
}

int
cmd_routes(struct hk *hk, int argc, char **argv)
{
	static const char *const header[] = {
		"APP", "SERVICE", "HOSTS", "PATH", "GATEWAY", "ENDPOINT",
	};
	const char *gw = hk->cfg.serverless_address, *ep, *row[6];
	struct store_service *svcs;
	struct store_instance *insts;
	struct table *t;
	char hosts[1024], path[2 * STORE_NAME_MAX + 8];
	size_t ns, ni, i;
	json_t *all;
	int as_json, code;

	if (hk_json_flag(argc, argv, "routes [--json]", 0, &as_json) == -1)
		return EX_USAGE;
	if ((code = hk_store(hk)) != EX_OK)
		return code;
	if (store_service_list(hk->store, &svcs, &ns) == -1)
		return hk_store_failed(hk, "list services");
	if (store_instance_list(hk->store, &insts, &ni) == -1) {
		store_service_free(svcs, ns);
		return hk_store_failed(hk, "list instances");
	}
	t = table_new(6, header);
	all = json_array();
	for (i = 0; i < ns; i++) {
		if (!svcs[i].serverless)
			continue;
		ep = endpoint_of(insts, ni, &svcs[i]);
		snprintf(path, sizeof(path), "/fn/%s/%s/", svcs[i].app,
		    svcs[i].name);
		fmt_hosts(hosts, sizeof(hosts), svcs[i].spec_json);
		json_array_append_new(all, route_json(&svcs[i], path, gw, ep));
		row[0] = svcs[i].app;
		row[1] = svcs[i].name;
		row[2] = hosts;
		row[3] = path;
		row[4] = gw[0] != '\0' ? gw : "-";
		row[5] = ep != NULL ? ep : "-";
		table_add(t, row);
	}
	if (as_json) {
		json_dumpf(all, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
	} else if (table_print(t, isatty(STDOUT_FILENO)) == -1) {
		log_errorx("unable to build the table: out of memory");
		code = EX_OSERR;
	}
	json_decref(all);
	table_free(t);
	free(insts);
	store_service_free(svcs, ns);
	return code;
}
