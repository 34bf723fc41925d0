/*
 * show.c - "hk ps" (one line per service) and "hk status" (the runtime card
 * of one service).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "hk.h"
#include "ipc.h"
#include "log.h"
#include "spec.h"
#include "srctree.h"
#include "store.h"

static const struct store_instance *find_instance(
		    const struct store_instance *, size_t, const char *,
		    const char *);
static const char *backend_of(const char *);
static json_t	*service_json(const struct store_service *,
		    const struct store_instance *);
static void	print_placement(const struct store_service *, json_t *,
		    const struct store_instance *);
static void	print_card(const struct store_service *,
		    const struct store_instance *);
static json_t	*last_wake(struct hk *, const struct store_service *);
static void	print_wake(const json_t *);
static json_t	*last_failure(struct hk *, const char *, const char *);
static void	print_failure(const char *, const json_t *);
static void	ps_failure(struct hk *, const struct store_service *,
		    const char *, json_t *, json_t *);
static void	print_failed(const json_t *);
static void	print_image(const json_t *);
static int	replicas_wanted(const struct store_service *);
static void	fmt_replicas(char *, size_t, const struct store_service *,
		    const struct store_instance *, size_t);
static json_t	*instance_json(const struct store_instance *);
static json_t	*replicas_json(const struct store_service *,
		    const struct store_instance *, size_t);
static void	print_replicas(const struct store_service *,
		    const struct store_instance *, size_t);
static void	print_templates(const struct hk *);

/* The image, and when hk-scale pulls it (image_pull, hk.toml(5)). */
static void
print_image(const json_t *spec)
{
	const char *pull;

	pull = json_string_value(json_object_get(spec, "image_pull"));
	printf("%-12s %s\n", "image:", json_string_value(json_object_get(spec,
	    "image")));
	printf("%-12s %s\n", "image_pull:", pull != NULL ? pull : "missing");
	if (json_is_string(json_object_get(spec, "image_digest")))
		printf("%-12s %s (pinned by hk apply)\n", "digest:",
		    json_string_value(json_object_get(spec, "image_digest")));
}

static const struct store_instance *
find_instance(const struct store_instance *insts, size_t n, const char *app,
    const char *service)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (insts[i].replica == 0 && strcmp(insts[i].app, app) == 0 &&
		    strcmp(insts[i].service, service) == 0)
			return &insts[i];
	return NULL;
}

/* The replicas an ordinary service wants (hk.toml(5)); 0 if stopped. */
static int
replicas_wanted(const struct store_service *svc)
{
	json_t *spec, *v;
	int n = 1;

	if (svc->desired == STORE_DESIRED_STOPPED)
		return 0;
	spec = json_loads(svc->spec_json, 0, NULL);
	if (json_is_integer(v = json_object_get(spec, "replicas")) &&
	    json_integer_value(v) > 1)
		n = (int)json_integer_value(v);
	json_decref(spec);
	return n;
}

/* "RUNNING/WANTED" of an ordinary service's replicas; "-" serverless. */
static void
fmt_replicas(char *buf, size_t len, const struct store_service *svc,
    const struct store_instance *insts, size_t n)
{
	size_t i;
	int running = 0;

	if (svc->serverless) {
		strlcpy(buf, "-", len);
		return;
	}
	for (i = 0; i < n; i++)
		if (strcmp(insts[i].app, svc->app) == 0 &&
		    strcmp(insts[i].service, svc->name) == 0 &&
		    strcmp(insts[i].state, "running") == 0)
			running++;
	snprintf(buf, len, "%d/%d", running, replicas_wanted(svc));
}

static json_t *
instance_json(const struct store_instance *in)
{
	return json_pack("{s:i, s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I}",
	    "replica", in->replica,
	    "revision", (json_int_t)in->revision, "state", in->state,
	    "endpoint", in->endpoint, "node", in->node,
	    "pid", (json_int_t)in->pid,
	    "started_at", (json_int_t)in->started_at,
	    "ready_at", (json_int_t)in->ready_at,
	    "updated_at", (json_int_t)in->updated_at);
}

/*
 * Every instance row of svc, replica 0 first: "replicas" of ps --json
 * and status --json.
 */
static json_t *
replicas_json(const struct store_service *svc,
    const struct store_instance *insts, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(insts[i].app, svc->app) == 0 &&
		    strcmp(insts[i].service, svc->name) == 0)
			json_array_append_new(a, instance_json(&insts[i]));
	return a;
}

/* hk status: one line for each replica beside the first. */
static void
print_replicas(const struct store_service *svc,
    const struct store_instance *insts, size_t n)
{
	char buf[32], label[32];
	size_t i;

	if (svc->serverless)
		return;
	fmt_replicas(buf, sizeof(buf), svc, insts, n);
	printf("%-12s %s running\n", "replicas:", buf);
	for (i = 0; i < n; i++) {
		if (insts[i].replica == 0 || strcmp(insts[i].app,
		    svc->app) != 0 || strcmp(insts[i].service, svc->name) != 0)
			continue;
		snprintf(label, sizeof(label), "replica %d:", insts[i].replica);
		printf("%-12s %s revision %lld pid %lld endpoint %s node %s\n",
		    label, insts[i].state, (long long)insts[i].revision,
		    (long long)insts[i].pid, insts[i].endpoint[0] ?
		    insts[i].endpoint : "-", insts[i].node[0] ?
		    insts[i].node : "-");
	}
}

/*
 * The backend a stored spec runs on, named or by default (lib/spec.c);
 * "unknown" when this hk cannot decode the spec.
 */
static const char *
backend_of(const char *spec_json)
{
	struct service_spec sp;
	char err[SPEC_ERR_LEN];
	enum backend_kind k;

	if (spec_decode(spec_json, &sp, err, sizeof(err)) == -1)
		return "unknown";
	k = sp.backend;
	spec_clear(&sp);
	return config_backend_name(k);
}

static json_t *
service_json(const struct store_service *svc, const struct store_instance *in)
{
	json_t *o, *spec, *v;

	spec = json_loads(svc->spec_json, 0, NULL);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:o, s:I, s:I}",
	    "app", svc->app, "service", svc->name,
	    "backend", backend_of(svc->spec_json),
	    "state", service_state(svc, in),
	    "desired", svc->desired == STORE_DESIRED_STOPPED ? "stopped" :
	    "auto", "revision", (json_int_t)svc->revision,
	    "serverless", svc->serverless,
	    "spec", spec != NULL ? spec : json_null(),
	    "created_at", (json_int_t)svc->created_at,
	    "updated_at", (json_int_t)svc->updated_at);
	v = json_object_get(spec, "code_hash");
	json_object_set_new(o, "code_hash", json_is_string(v) ?
	    json_string(json_string_value(v)) : json_null());
	json_object_set_new(o, "instance", in == NULL ? json_null() :
	    instance_json(in));
	return o;
}

/*
 * A failed service's "last_failure" in o (null for the others), and
 * [ID, failure] appended to failed, for the lines under the table.
 */
static void
ps_failure(struct hk *hk, const struct store_service *svc,
    const char *state, json_t *o, json_t *failed)
{
	char id[sizeof(svc->app) + sizeof(svc->name) + 2];
	json_t *f = NULL;

	if (strcmp(state, "failed") == 0)
		f = last_failure(hk, svc->app, svc->name);
	json_object_set(o, "last_failure", f != NULL ? f : json_null());
	snprintf(id, sizeof(id), "%s/%s:", svc->app, svc->name);
	if (f != NULL)
		json_array_append_new(failed, json_pack("[s, o]", id, f));
}

/* Under the table, why each failed service failed. */
static void
print_failed(const json_t *failed)
{
	const json_t *v;
	size_t i;

	if (json_array_size(failed) > 0)
		putchar('\n');
	json_array_foreach(failed, i, v)
		print_failure(json_string_value(json_array_get(v, 0)),
		    json_array_get(v, 1));
}

int
cmd_ps(struct hk *hk, int argc, char **argv)
{
	static const char *const header[] = {
		"APP", "SERVICE", "STATE", "REV", "NODE", "HOSTS", "POLICY",
		"REPLICAS",
	};
	struct store_service *svcs;
	struct store_instance *insts;
	const struct store_instance *in;
	struct table *t;
	char rev[24], hosts[1024], policy[256], reps[32];
	const char *row[8];
	size_t ns, ni, i;
	json_t *all, *o, *failed;
	int as_json, code;

	if (hk_json_flag(argc, argv, "ps [--json]", 0, &as_json) == -1)
		return EX_USAGE;
	if ((code = hk_store(hk)) != EX_OK)
		return code;
	if (store_service_list(hk->store, &svcs, &ns) == -1)
		return hk_store_failed(hk, "list services");
	if (store_instance_list(hk->store, &insts, &ni) == -1) {
		store_service_free(svcs, ns);
		return hk_store_failed(hk, "list instances");
	}
	t = table_new(8, header);
	all = json_array();
	failed = json_array();
	for (i = 0; i < ns; i++) {
		in = find_instance(insts, ni, svcs[i].app, svcs[i].name);
		o = service_json(&svcs[i], in);
		json_object_set_new(o, "replicas", replicas_json(&svcs[i],
		    insts, ni));
		json_array_append_new(all, o);
		fmt_replicas(reps, sizeof(reps), &svcs[i], insts, ni);
		snprintf(rev, sizeof(rev), "%lld", (long long)svcs[i].revision);
		fmt_hosts(hosts, sizeof(hosts), svcs[i].spec_json);
		fmt_policy(policy, sizeof(policy), svcs[i].spec_json);
		row[0] = svcs[i].app;
		row[1] = svcs[i].name;
		row[2] = service_state(&svcs[i], in);
		ps_failure(hk, &svcs[i], row[2], o, failed);
		row[3] = rev;
		row[4] = in != NULL && in->node[0] != '\0' ? in->node : "-";
		row[5] = hosts;
		row[6] = policy;
		row[7] = reps;
		table_add(t, row);
	}
	if (as_json)
		json_dumpf(all, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (as_json)
		putchar('\n');
	else {
		table_print(t, isatty(STDOUT_FILENO));
		if (isatty(STDOUT_FILENO))
			print_failed(failed);
		if (isatty(STDOUT_FILENO))
			print_templates(hk);
	}
	json_decref(all);
	json_decref(failed);
	table_free(t);
	free(insts);
	store_service_free(svcs, ns);
	return EX_OK;
}

#define TEMPLATES_REPLY_MS	2000

/*
 * On a terminal, under the services: the Python templates of this
 * host's hk-scale (start_from = "python-template"), which its status
 * tells: their resident memory is shared by every instance they fork,
 * and is no service's own.  Nothing when none runs, or no hk-scale
 * answers here (the store says nothing of them).  Not for scripts: the
 * lines of services stay the only ones they read.
 */
static void
print_templates(const struct hk *hk)
{
	static const char *const header[] = {
		"TEMPLATE", "USER", "PID", "MEMORY",
	};
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN], pid[24], mem[32];
	const char *row[4];
	json_t *req, *reply = NULL, *v;
	struct table *t;
	size_t i;

	snprintf(path, sizeof(path), "%s/scale.sock", hk->cfg.runtime_dir);
	req = json_pack("{s:s}", "op", "status");
	if (req == NULL || ipc_call(path, req, &reply, TEMPLATES_REPLY_MS,
	    err, sizeof(err)) == -1) {
		log_debug("ps: templates: %s", req != NULL ? err :
		    "out of memory");
		json_decref(req);
		return;
	}
	json_decref(req);
	if (json_array_size(json_object_get(reply, "templates")) == 0) {
		json_decref(reply);
		return;
	}
	t = table_new(4, header);
	json_array_foreach(json_object_get(reply, "templates"), i, v) {
		row[0] = json_string_value(json_object_get(v, "runtime"));
		row[1] = json_string_value(json_object_get(v, "user"));
		snprintf(pid, sizeof(pid), "%lld", (long long)
		    json_integer_value(json_object_get(v, "pid")));
		if (!json_is_true(json_object_get(v, "ready")))
			strlcpy(mem, json_integer_value(json_object_get(v,
			    "pid")) > 0 ? "starting" : "restarting",
			    sizeof(mem));
		else
			snprintf(mem, sizeof(mem), "%.1f MiB", (double)
			    json_integer_value(json_object_get(v,
			    "memory_bytes")) / (1024 * 1024));
		row[2] = json_integer_value(json_object_get(v, "pid")) > 0 ?
		    pid : "-";
		row[3] = mem;
		if (row[0] != NULL && row[1] != NULL)
			table_add(t, row);
	}
	putchar('\n');
	table_print(t, 1);
	table_free(t);
	json_decref(reply);
}

/* The backend, the node asked for (node_name), and where it runs. */
static void
print_placement(const struct store_service *svc, json_t *spec,
    const struct store_instance *in)
{
	json_t *v;

	printf("%-12s %s\n", "backend:", backend_of(svc->spec_json));
	v = json_object_get(spec, "node_name");
	if (json_is_string(v))
		printf("%-12s node %s\n", "placement:", json_string_value(v));
	else
		printf("%-12s default node (this host)\n", "placement:");
	if (in == NULL || in->node[0] == '\0')
		printf("%-12s -\n", "runs on:");
	else if (strcmp(in->state, "failed") == 0)
		printf("%-12s - (its start failed on %s)\n", "runs on:",
		    in->node);
	else
		printf("%-12s %s\n", "runs on:", in->node);
}

static void
print_card(const struct store_service *svc, const struct store_instance *in)
{
	char buf[1024], t1[32], t2[32];
	json_t *spec, *v, *a;
	size_t i;

	spec = json_loads(svc->spec_json, 0, NULL);
	printf("%-12s %s/%s\n", "service:", svc->app, svc->name);
	printf("%-12s %s\n", "state:", service_state(svc, in));
	printf("%-12s %s\n", "desired:", svc->desired !=
	    STORE_DESIRED_STOPPED ? "auto" : enabled_off(svc->spec_json) ?
	    "stopped (enabled = false in hk.toml)" :
	    "stopped (hk start resumes)");
	fmt_time(t1, sizeof(t1), svc->updated_at);
	printf("%-12s %lld (since %s)\n", "revision:",
	    (long long)svc->revision, t1);
	fmt_hosts(buf, sizeof(buf), svc->spec_json);
	printf("%-12s %s\n", "hosts:", buf);
	printf("%-12s /fn/%s/%s/\n", "path:", svc->app, svc->name);
	print_placement(svc, spec, in);
	if ((v = json_object_get(spec, "image")) != NULL && json_is_string(v))
		print_image(spec);
	if (json_is_string(v = json_object_get(spec, "code_hash")))
		printf("%-12s %.*s (source, SHA-256)\n", "code:",
		    SRCTREE_SHORT_LEN, json_string_value(v));
	if (json_is_array(a = json_object_get(spec, "command"))) {
		buf[0] = '\0';
		json_array_foreach(a, i, v) {
			if (i > 0)
				strlcat(buf, " ", sizeof(buf));
			strlcat(buf, json_string_value(v) ?
			    json_string_value(v) : "", sizeof(buf));
		}
		printf("%-12s %s\n", "command:", buf);
	}
	printf("%-12s %lld\n", "port:", (long long)json_integer_value(
	    json_object_get(spec, "port")));
	v = json_object_get(spec, "readiness");
	printf("%-12s %s\n", "readiness:", json_is_string(v) ?
	    json_string_value(v) : "tcp");
	fmt_policy(buf, sizeof(buf), svc->spec_json);
	printf("%-12s %s\n", "policy:", buf);
	if (in == NULL) {
		printf("%-12s none\n", "instance:");
	} else {
		fmt_time(t1, sizeof(t1), in->started_at);
		fmt_time(t2, sizeof(t2), in->ready_at);
		printf("%-12s %s revision %lld pid %lld endpoint %s node %s\n",
		    "instance:", in->state, (long long)in->revision,
		    (long long)in->pid, in->endpoint[0] ? in->endpoint : "-",
		    in->node[0] ? in->node : "-");
		printf("%-12s %s\n", "started:", t1);
		printf("%-12s %s\n", "ready:", t2);
	}
	fmt_time(t1, sizeof(t1), svc->created_at);
	printf("%-12s %s\n", "created:", t1);
	json_decref(spec);
}

/*
 * The newest wake's cold start, from the event log: hk-scale's
 * HTTPIdleWake (spawn, port, ready) and the gateway's HTTPWakeFirstByte
 * of the same wake_id.  NULL when none is kept (hk-events' retention).
 */
static json_t *
last_wake(struct hk *hk, const struct store_service *svc)
{
	struct store_event *ev = NULL, *fb = NULL;
	json_t *w = NULL, *d;
	size_t n = 0, nfb = 0, i;
	int64_t id;

	if (store_event_list(hk->store, svc->app, svc->name, "HTTPIdleWake", 0,
	    1, &ev, &n) == -1 || n == 0 || ev[0].detail_json == NULL ||
	    (w = json_loads(ev[0].detail_json, 0, NULL)) == NULL)
		goto out;
	json_object_set_new(w, "at", json_integer(ev[0].at));
	id = json_integer_value(json_object_get(w, "wake_id"));
	if (id == 0 || store_event_list(hk->store, svc->app, svc->name,
	    "HTTPWakeFirstByte", ev[0].at - 600000, 0, &fb, &nfb) == -1)
		goto out;
	for (i = 0; i < nfb; i++) {
		if (fb[i].detail_json == NULL ||
		    (d = json_loads(fb[i].detail_json, 0, NULL)) == NULL)
			continue;
		if (json_integer_value(json_object_get(d, "wake_id")) == id)
			json_object_set(w, "first_byte_ms",
			    json_object_get(d, "first_byte_ms"));
		json_decref(d);
	}
out:
	store_event_free(ev, n);
	store_event_free(fb, nfb);
	return w;
}

/*
 * "last wake:  TIME (R): spawn N ms, port N ms, ready N ms, ...", and for
 * the thaw of a suspended instance "TIME (R): resumed after N ms frozen,
 * ready N ms, first byte N ms".
 */
static void
print_wake(const json_t *w)
{
	static const char *const keys[][2] = {
		{ "spawn_ms", "spawn" }, { "port_ms", "port" },
		{ "readiness_ms", "ready" }, { "first_byte_ms", "first byte" },
	};
	const json_t *v;
	char t[32];
	size_t i;
	int n = 0;

	if (w == NULL) {
		printf("%-12s none kept\n", "last wake:");
		return;
	}
	fmt_time(t, sizeof(t), json_integer_value(json_object_get(w, "at")));
	printf("%-12s %s (%s):", "last wake:", t, json_string_value(
	    json_object_get(w, "reason")) ? json_string_value(
	    json_object_get(w, "reason")) : "-");
	if (json_is_true(json_object_get(w, "resumed")))
		printf(" resumed after %lld ms frozen,", (long long)
		    json_integer_value(json_object_get(w, "suspended_ms")));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((v = json_object_get(w, keys[i][0])) != NULL)
			printf("%s %s %lld ms", n++ ? "," : "", keys[i][1],
			    (long long)json_integer_value(v));
	putchar('\n');
}

/*
 * The newest StartFailed of app/name the event log keeps: hk-scale's
 * detail (reason, revision, and the exit where there was one) with its
 * time as "at"; NULL when none is kept.
 */
static json_t *
last_failure(struct hk *hk, const char *app, const char *name)
{
	struct store_event *ev = NULL;
	json_t *f = NULL;
	size_t n = 0;

	if (store_event_list(hk->store, app, name, "StartFailed", 0, 1, &ev,
	    &n) == 0 && n == 1 && ev[0].detail_json != NULL &&
	    (f = json_loads(ev[0].detail_json, 0, NULL)) != NULL)
		json_object_set_new(f, "at", json_integer(ev[0].at));
	store_event_free(ev, n);
	return f;
}

/* "LABEL TIME (revision N): REASON", or "LABEL none kept". */
static void
print_failure(const char *label, const json_t *f)
{
	const char *why;
	char t[32];

	if (f == NULL) {
		printf("%-12s none kept\n", label);
		return;
	}
	why = json_string_value(json_object_get(f, "reason"));
	fmt_time(t, sizeof(t), json_integer_value(json_object_get(f, "at")));
	printf("%-12s %s (revision %lld): %s\n", label, t, (long long)
	    json_integer_value(json_object_get(f, "revision")),
	    why != NULL ? why : "-");
}

int
cmd_status(struct hk *hk, int argc, char **argv)
{
	struct store_service svc;
	struct store_instance *insts;
	const struct store_instance *in;
	json_t *o, *wake, *fail, *rel, *roll;
	size_t ni;
	int first, as_json, code;

	if ((first = hk_json_flag(argc, argv, "status [--json] service", 1,
	    &as_json)) == -1)
		return EX_USAGE;
	if ((code = hk_store(hk)) != EX_OK)
		return code;
	if ((code = resolve_service(hk, argv[first], &svc)) != EX_OK)
		return code;
	if (store_instance_list(hk->store, &insts, &ni) == -1) {
		store_service_clear(&svc);
		return hk_store_failed(hk, "read instance");
	}
	in = find_instance(insts, ni, svc.app, svc.name);
	wake = last_wake(hk, &svc);
	fail = last_failure(hk, svc.app, svc.name);
	rel = hk_release_json(hk, &svc);
	roll = hk_roll_json(hk, &svc, insts, ni);
	if (as_json) {
		o = service_json(&svc, in);
		json_object_set_new(o, "replicas", replicas_json(&svc, insts,
		    ni));
		json_object_set(o, "last_wake", wake != NULL ? wake :
		    json_null());
		json_object_set(o, "last_failure", fail != NULL ? fail :
		    json_null());
		json_object_set(o, "release", rel != NULL ? rel : json_null());
		json_object_set(o, "roll", roll != NULL ? roll : json_null());
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(o);
	} else {
		print_card(&svc, in);
		print_replicas(&svc, insts, ni);
		hk_roll_print(roll);
		hk_release_print(rel);
		print_wake(wake);
		print_failure("last failed:", fail);
	}
	json_decref(wake);
	json_decref(fail);
	json_decref(rel);
	json_decref(roll);
	free(insts);
	store_service_clear(&svc);
	return EX_OK;
}
