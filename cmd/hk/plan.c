/*
 * plan.c - "hk apply --dry-run [--json] file ...": what hk apply would do,
 * written nowhere (hk(1)).
 *
 * The files are loaded and checked as apply checks them (apply.c), the
 * code packed and hashed, the secrets they name looked up, the limits of
 * the installation and the jobs' run_ids checked; then each service is
 * compared with the store's row: created, unchanged, or a new revision
 * with the names of the keys that differ, and the services, jobs and
 * schedules apply would remove.  Only reads: no code, no spec, no
 * revision, no vetting verdict and no event is written, and the model of
 * the vetting gate is not asked ("would be vetted").
 *
 * Keys are named, never valued: an environment value may be a password,
 * and a name is what a reviewer needs to find the line in the file.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "hk.h"
#include "log.h"
#include "spec.h"
#include "srctree.h"
#include "store.h"

/* What the plan says, in the shape --json prints (hk(1)). */
struct plan {
	json_t	*services;
	json_t	*jobs;
	json_t	*schedules;
};

static int	 plan_store(struct hk *, char *, size_t);
static void	 plan_store_drop(struct hk *, const char *);
static int	 plan_app(struct hk *, struct app_config *, struct plan *);
static int	 plan_service(struct hk *, const struct app_config *,
		    const struct service_spec *, json_t *);
static int	 plan_removed(struct hk *, const struct app_config *, json_t *);
static int	 plan_jobs(struct hk *, const struct app_config *, json_t *);
static int	 plan_schedules(struct hk *, const struct app_config *,
		    json_t *);
static json_t	*spec_keys_changed(const char *, const char *);
static void	 keys_diff(json_t *, const char *, json_t *, json_t *);
static void	 keys_add(json_t *, const char *, const char *);
static int	 name_cmp(const void *, const void *);
static void	 print_plan(const struct plan *);
static void	 print_service(const json_t *);
static void	 print_digest(const json_t *);

/*
 * The store to plan against.  An SQLite file that is not there yet is an
 * empty store, and the first hk apply would make it: the plan is made
 * against an empty one in a directory of its own under TMPDIR (*tmp),
 * removed after, so that no file appears where the store will be.
 */
static int
plan_store(struct hk *hk, char *tmp, size_t len)
{
	char url[PATH_MAX + 32], err[STORE_ERR_LEN];
	const char *dir = getenv("TMPDIR");

	tmp[0] = '\0';
	if (strncmp(hk->cfg.state, "sqlite://", 9) != 0 ||
	    access(hk->cfg.state + 9, F_OK) == 0)
		return hk_store(hk);
	if (snprintf(tmp, len, "%s/hk-plan.XXXXXX", dir != NULL &&
	    *dir != '\0' ? dir : "/tmp") >= (int)len || mkdtemp(tmp) == NULL) {
		log_error("apply --dry-run: unable to make %s", tmp);
		tmp[0] = '\0';
		return EX_CANTCREAT;
	}
	log_info("apply --dry-run: no store at %s yet: planned against an "
	    "empty one", hk->cfg.state);
	snprintf(url, sizeof(url), "sqlite://%s/plan.db", tmp);
	if ((hk->store = store_open(url, err, sizeof(err))) == NULL) {
		log_errorx("apply --dry-run: unable to open an empty store: "
		    "%s", err);
		return EX_UNAVAILABLE;
	}
	return EX_OK;
}

/* The empty store of plan_store(), closed and its files removed. */
static void
plan_store_drop(struct hk *hk, const char *tmp)
{
	static const char *const files[] = { "plan.db", "plan.db-wal",
	    "plan.db-shm", "plan.db-journal" };
	char path[PATH_MAX];
	size_t i;

	if (tmp[0] == '\0')
		return;
	if (hk->store != NULL)
		store_close(hk->store);
	hk->store = NULL;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, files[i]);
		(void)unlink(path);
	}
	if (rmdir(tmp) == -1)
		log_warn("apply --dry-run: unable to remove %s", tmp);
}

int
plan_apps(struct hk *hk, struct app_config *apps, int n, int json)
{
	char tmp[PATH_MAX];
	struct plan p;
	json_t *doc;
	int i, code;

	if ((code = plan_store(hk, tmp, sizeof(tmp))) != EX_OK ||
	    (code = vet_gate_check(hk)) != EX_OK) {
		plan_store_drop(hk, tmp);
		return code;
	}
	p.services = json_array();
	p.jobs = json_array();
	p.schedules = json_array();
	if (p.services == NULL || p.jobs == NULL || p.schedules == NULL)
		fatal(EX_OSERR, "json_array");
	for (i = 0; code == EX_OK && i < n; i++)
		code = plan_app(hk, &apps[i], &p);
	if (code == EX_OK && json) {
		doc = json_pack("{s:b, s:O, s:O, s:O}", "dry_run", 1,
		    "services", p.services, "jobs", p.jobs, "schedules",
		    p.schedules);
		if (doc == NULL || json_dumpf(doc, stdout, JSON_INDENT(2) |
		    JSON_PRESERVE_ORDER) == -1)
			fatal(EX_OSERR, "json_dumpf");
		putchar('\n');
		json_decref(doc);
	} else if (code == EX_OK)
		print_plan(&p);
	json_decref(p.services);
	json_decref(p.jobs);
	json_decref(p.schedules);
	plan_store_drop(hk, tmp);
	return code;
}

/* One app, in the order of write_app(): its refusals are apply's. */
static int
plan_app(struct hk *hk, struct app_config *app, struct plan *p)
{
	size_t s;
	int code;

	if ((code = secrets_resolve(hk, app)) != EX_OK ||
	    (code = apply_check_installation(hk, app)) != EX_OK ||
	    (code = apply_check_gateway(hk, app, 0)) != EX_OK)
		return code;
	for (s = 0; s < app->nservices; s++)
		if ((code = plan_service(hk, app, &app->services[s],
		    p->services)) != EX_OK)
			return code;
	if ((code = plan_removed(hk, app, p->services)) != EX_OK ||
	    (code = plan_jobs(hk, app, p->jobs)) != EX_OK)
		return code;
	return plan_schedules(hk, app, p->schedules);
}

/*
 * A service against its row: the revision apply would give it (apply
 * bumps it for any change of the spec, store_service_put()), the keys
 * that differ and the code, before and after.
 */
static int
plan_service(struct hk *hk, const struct app_config *app,
    const struct service_spec *sp, json_t *out)
{
	struct store_service row;
	json_t *o, *prev;
	const char *old_code = NULL;
	int r;

	if ((r = store_service_get(hk->store, app->name, sp->name, &row)) ==
	    -1)
		return hk_store_failed(hk, "read service");
	if ((o = json_pack("{s:s, s:s}", "app", app->name, "service",
	    sp->name)) == NULL)
		fatal(EX_OSERR, "json_pack");
	if (r == 1) {
		json_object_set_new(o, "result", json_string("created"));
		json_object_set_new(o, "revision", json_integer(1));
	} else if (strcmp(row.spec_json, sp->spec_json) == 0) {
		json_object_set_new(o, "result", json_string("unchanged"));
		json_object_set_new(o, "revision", json_integer(row.revision));
	} else {
		json_object_set_new(o, "result", json_string("updated"));
		json_object_set_new(o, "revision",
		    json_integer(row.revision + 1));
		json_object_set_new(o, "previous_revision",
		    json_integer(row.revision));
	}
	json_object_set_new(o, "code", sp->code_hash != NULL ?
	    json_string(sp->code_hash) : json_null());
	/* what the revision would run: the digest hk apply pins */
	if (sp->image_digest != NULL)
		json_object_set_new(o, "image_digest",
		    json_string(sp->image_digest));
	if (r == 0 && json_object_get(o, "previous_revision") != NULL) {
		prev = json_loads(row.spec_json, 0, NULL);
		old_code = json_string_value(json_object_get(prev,
		    "code_hash"));
		json_object_set_new(o, "previous_code", old_code != NULL ?
		    json_string(old_code) : json_null());
		if (json_is_string(json_object_get(prev, "image_digest")))
			json_object_set(o, "previous_image_digest",
			    json_object_get(prev, "image_digest"));
		json_decref(prev);
		json_object_set_new(o, "keys", spec_keys_changed(row.spec_json,
		    sp->spec_json));
	}
	if (r == 0)
		store_service_clear(&row);
	json_object_set_new(o, "enabled", json_boolean(!sp->disabled));
	json_object_set_new(o, "vet", json_boolean(vet_would_send(hk,
	    app->name, sp)));
	json_array_append_new(out, o);
	return EX_OK;
}

/* The app's services that its file no longer names. */
static int
plan_removed(struct hk *hk, const struct app_config *app, json_t *out)
{
	struct store_service *all;
	size_t n, i, s;

	if (store_service_list(hk->store, &all, &n) == -1)
		return hk_store_failed(hk, "list services");
	for (i = 0; i < n; i++) {
		if (strcmp(all[i].app, app->name) != 0)
			continue;
		for (s = 0; s < app->nservices; s++)
			if (strcmp(all[i].name, app->services[s].name) == 0)
				break;
		if (s < app->nservices)
			continue;
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:I}",
		    "app", app->name, "service", all[i].name, "result",
		    "removed", "revision", (json_int_t)all[i].revision));
	}
	store_service_free(all, n);
	return EX_OK;
}

/* As write_job() and store_job_prune() of apply_runs.c would. */
static int
plan_jobs(struct hk *hk, const struct app_config *app, json_t *out)
{
	struct store_job *old;
	const struct job_spec *j;
	const char *result;
	size_t i, k, nold;
	int code = EX_OK;

	for (i = 0; i < app->njobs && code == EX_OK; i++) {
		j = &app->jobs[i];
		if ((code = job_run_id_check(hk, app, j, &result)) != EX_OK)
			break;
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:I, "
		    "s:s}", "app", app->name, "job", j->name, "service",
		    j->service, "run_id", (json_int_t)j->run_id, "result",
		    result));
	}
	if (code != EX_OK)
		return code;
	if (store_job_list(hk->store, app->name, &old, &nold) == -1)
		return hk_store_failed(hk, "list jobs");
	for (k = 0; k < nold; k++) {
		for (i = 0; i < app->njobs; i++)
			if (strcmp(old[k].name, app->jobs[i].name) == 0)
				break;
		if (i == app->njobs)
			json_array_append_new(out, json_pack("{s:s, s:s, s:s, "
			    "s:I, s:s}", "app", app->name, "job", old[k].name,
			    "service", old[k].service, "run_id",
			    (json_int_t)old[k].run_id, "result", "removed"));
	}
	store_job_free(old, nold);
	return EX_OK;
}

/* As write_schedules() of apply_runs.c would. */
static int
plan_schedules(struct hk *hk, const struct app_config *app, json_t *out)
{
	const struct service_spec *sp;
	const struct schedule_spec *sc;
	struct store_schedule *old;
	const char *result;
	size_t nold, s, k, i;

	if (store_schedule_list(hk->store, app->name, &old, &nold) == -1)
		return hk_store_failed(hk, "list schedules");
	for (s = 0; s < app->nservices; s++) {
		sp = &app->services[s];
		for (k = 0; k < sp->nschedules; k++) {
			sc = &sp->schedules[k];
			result = "created";
			for (i = 0; i < nold; i++)
				if (strcmp(old[i].service, sp->name) == 0 &&
				    strcmp(old[i].name, sc->name) == 0)
					result = strcmp(old[i].spec_json,
					    sc->spec_json) == 0 ? "unchanged" :
					    "updated";
			json_array_append_new(out, json_pack("{s:s, s:s, s:s, "
			    "s:s}", "app", app->name, "service", sp->name,
			    "schedule", sc->name, "result", result));
		}
	}
	for (i = 0; i < nold; i++) {
		for (s = 0, k = 0; s < app->nservices; s++) {
			sp = &app->services[s];
			if (strcmp(old[i].service, sp->name) != 0)
				continue;
			for (k = 0; k < sp->nschedules; k++)
				if (strcmp(old[i].name,
				    sp->schedules[k].name) == 0)
					break;
			if (k < sp->nschedules)
				break;
		}
		if (s == app->nservices)
			json_array_append_new(out, json_pack("{s:s, s:s, s:s, "
			    "s:s}", "app", app->name, "service",
			    old[i].service, "schedule", old[i].name, "result",
			    "removed"));
	}
	store_schedule_free(old, nold);
	return EX_OK;
}

/*
 * The dotted names of the keys that differ between two specs, sorted, in
 * the file's words: "environment.FOO", "serverless.idle_seconds"; the
 * code's hash is "source", a secret's digest "secrets.NAME".
 */
static json_t *
spec_keys_changed(const char *old_json, const char *new_json)
{
	json_t *a, *b, *keys, *v, *sorted;
	const char **names;
	size_t i, n;

	a = json_loads(old_json, 0, NULL);
	b = json_loads(new_json, 0, NULL);
	if ((keys = json_array()) == NULL)
		fatal(EX_OSERR, "json_array");
	keys_diff(keys, "", a, b);
	json_decref(a);
	json_decref(b);
	n = json_array_size(keys);
	if ((names = calloc(n + 1, sizeof(*names))) == NULL ||
	    (sorted = json_array()) == NULL)
		fatal(EX_OSERR, "calloc");
	json_array_foreach(keys, i, v)
		names[i] = json_string_value(v);
	qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++)
		json_array_append_new(sorted, json_string(names[i]));
	free(names);
	json_decref(keys);
	return sorted;
}

/* Objects are walked key by key; any other value is one key. */
static void
keys_diff(json_t *keys, const char *prefix, json_t *a, json_t *b)
{
	const char *k;
	json_t *v;

	if (!json_is_object(a) || !json_is_object(b)) {
		if (!json_equal(a, b))
			keys_add(keys, prefix, NULL);
		return;
	}
	json_object_foreach(a, k, v) {
		if (json_object_get(b, k) == NULL)
			keys_add(keys, prefix, k);
		else if (!json_equal(v, json_object_get(b, k))) {
			if (json_is_object(v) && json_is_object(
			    json_object_get(b, k)) && *prefix == '\0') {
				keys_diff(keys, k, v, json_object_get(b, k));
			} else
				keys_add(keys, prefix, k);
		}
	}
	json_object_foreach(b, k, v)
		if (json_object_get(a, k) == NULL)
			keys_add(keys, prefix, k);
}

static void
keys_add(json_t *keys, const char *prefix, const char *k)
{
	char name[2 * CONFIG_NAME_MAX + 256];

	if (*prefix == '\0' && k != NULL && strcmp(k, "code_hash") == 0)
		k = "source";
	snprintf(name, sizeof(name), "%s%s%s", prefix,
	    *prefix != '\0' && k != NULL ? "." : "", k != NULL ? k : "");
	json_array_append_new(keys, json_string(name));
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * apply's lines (print_report() of apply.c) with what differs, then one
 * line that says what it comes to.
 */
static void
print_plan(const struct plan *p)
{
	const json_t *r;
	const char *res;
	size_t i, created = 0, updated = 0, unchanged = 0, removed = 0;

	json_array_foreach(p->services, i, r) {
		print_service(r);
		res = json_string_value(json_object_get(r, "result"));
		created += strcmp(res, "created") == 0;
		updated += strcmp(res, "updated") == 0;
		unchanged += strcmp(res, "unchanged") == 0;
		removed += strcmp(res, "removed") == 0;
	}
	json_array_foreach(p->jobs, i, r)
		printf("%s/%s\tjob run_id %lld\t%s\n",
		    json_string_value(json_object_get(r, "app")),
		    json_string_value(json_object_get(r, "job")),
		    (long long)json_integer_value(json_object_get(r,
		    "run_id")), json_string_value(json_object_get(r,
		    "result")));
	json_array_foreach(p->schedules, i, r)
		printf("%s/%s\tschedule %s\t%s\n",
		    json_string_value(json_object_get(r, "app")),
		    json_string_value(json_object_get(r, "service")),
		    json_string_value(json_object_get(r, "schedule")),
		    json_string_value(json_object_get(r, "result")));
	printf("dry run: %zu created, %zu updated, %zu unchanged, %zu "
	    "removed; nothing written\n", created, updated, unchanged,
	    removed);
}

/* The digest the revision pins, and the one it replaces. */
static void
print_digest(const json_t *r)
{
	const char *now, *was;

	now = json_string_value(json_object_get(r, "image_digest"));
	was = json_string_value(json_object_get(r, "previous_image_digest"));
	if (now != NULL && was != NULL && strcmp(now, was) != 0)
		printf("\timage %s -> %s", was, now);
	else if (now != NULL)
		printf("\timage %s", now);
}

/*
 * APP/SERVICE  revision N  RESULT  [code OLD -> NEW]  [keys K1 K2 ...]
 * [disabled] [would be vetted]; a code is its short hash, "-" for none.
 */
static void
print_service(const json_t *r)
{
	const json_t *k;
	const char *code, *prev;
	size_t i;

	printf("%s/%s\t", json_string_value(json_object_get(r, "app")),
	    json_string_value(json_object_get(r, "service")));
	if (strcmp(json_string_value(json_object_get(r, "result")),
	    "removed") != 0)
		printf("revision %lld\t", (long long)json_integer_value(
		    json_object_get(r, "revision")));
	printf("%s", json_string_value(json_object_get(r, "result")));
	code = json_string_value(json_object_get(r, "code"));
	prev = json_string_value(json_object_get(r, "previous_code"));
	if (json_object_get(r, "previous_code") != NULL &&
	    !json_equal(json_object_get(r, "previous_code"),
	    json_object_get(r, "code")))
		printf("\tcode %.*s -> %.*s", SRCTREE_SHORT_LEN,
		    prev != NULL ? prev : "-", SRCTREE_SHORT_LEN,
		    code != NULL ? code : "-");
	else if (code != NULL)
		printf("\tcode %.*s", SRCTREE_SHORT_LEN, code);
	if (json_array_size(json_object_get(r, "keys")) > 0) {
		printf("\tkeys");
		json_array_foreach(json_object_get(r, "keys"), i, k)
			printf(" %s", json_string_value(k));
	}
	print_digest(r);
	/* enabled = false: apply would stop it (enabled.c) */
	if (json_is_false(json_object_get(r, "enabled")))
		printf("\tdisabled");
	if (json_is_true(json_object_get(r, "vet")))
		printf("\twould be vetted");
	putchar('\n');
}
