/*
 * app_runs.c - the runs an application file declares (hk.toml(5)):
 * [jobs.NAME], one run per new run_id at hk apply, and
 * [services.X.schedules.NAME], cron firings; hk-jobs(8) sends both as a
 * client's request through the gateway.
 *
 * They are kept apart from the service's spec_json: changing a job or a
 * schedule is no new revision, and never restarts the service.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "app.h"
#include "app_impl.h"
#include "config.h"
#include "cron.h"
#include "cw.h"
#include "spec.h"
#include "toml.h"

#define METHOD_MAX	APP_METHOD_MAX
#define RUN_PATH_MAX	APP_PATH_MAX

enum run_key {
	RK_CATCH_UP,
	RK_CONCURRENCY,
	RK_CRON,
	RK_ENABLED,
	RK_EVENT,
	RK_METHOD,
	RK_PATH,
	RK_RUN_ID,
	RK_SERVICE,
	RK_TIMEOUT,
	RK_TIMEZONE,
	RK_COUNT
};

/* Which table may use each key: a job, a schedule, or both. */
#define FOR_JOB		1
#define FOR_SCHEDULE	2

static const struct {
	const char	*name;
	int		 used_by;
} run_keys[RK_COUNT] = {
	[RK_CATCH_UP] =		{ "catch_up", FOR_SCHEDULE },
	[RK_CONCURRENCY] =	{ "concurrency", FOR_SCHEDULE },
	[RK_CRON] =		{ "cron", FOR_SCHEDULE },
	[RK_ENABLED] =		{ "enabled", FOR_SCHEDULE },
	[RK_EVENT] =		{ "event", FOR_JOB | FOR_SCHEDULE },
	[RK_METHOD] =		{ "method", FOR_JOB | FOR_SCHEDULE },
	[RK_PATH] =		{ "path", FOR_JOB | FOR_SCHEDULE },
	[RK_RUN_ID] =		{ "run_id", FOR_JOB },
	[RK_SERVICE] =		{ "service", FOR_JOB },
	[RK_TIMEOUT] =		{ "timeout_seconds", FOR_JOB | FOR_SCHEDULE },
	[RK_TIMEZONE] =		{ "timezone", FOR_SCHEDULE },
};

static int	 run_slots(struct actx *, const struct toml_kv *, const char *,
		    int, const struct toml_kv **);
static json_t	*run_common(struct actx *, const struct toml_kv *const *,
		    const char *);
static json_t	*run_event(struct actx *, const struct toml_kv *,
		    const char *);
static int	 schedule_keys(struct actx *, const struct toml_kv *const *,
		    const char *, json_t *);
static char	*spec_text(struct actx *, json_t *);
static void	 job_parse(struct actx *, const struct toml_kv *,
		    struct job_spec *);
static void	 schedule_parse(struct actx *, const struct toml_kv *,
		    const char *, struct schedule_spec *);

/*
 * The keys of one [jobs.NAME] or schedule table, each in its slot; 0, or
 * -1 if kv is no table.  Unknown keys are diagnosed here.
 */
static int
run_slots(struct actx *c, const struct toml_kv *kv, const char *prefix,
    int kind, const struct toml_kv **slot)
{
	const struct toml_value *v = kv->value;
	const struct toml_kv *e;
	char key[CW_KEYPATH_LEN];
	size_t i, k;

	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, prefix, "must be a table");
		return -1;
	}
	for (i = 0; i < v->u.table.len; i++) {
		e = &v->u.table.items[i];
		for (k = 0; k < RK_COUNT; k++)
			if ((run_keys[k].used_by & kind) &&
			    cw_key_is(e, run_keys[k].name))
				break;
		if (k < RK_COUNT) {
			slot[k] = e;
			continue;
		}
		cw_kpath(key, prefix, e->key, e->keylen);
		cw_diag(&c->w, e->line, key, "%s",
		    e->value->type == TOML_TABLE ? "unknown table" :
		    "unknown key");
	}
	return 0;
}

/* A token of upper-case letters, as a method is (RFC 9110). */
int
app_valid_method(const char *m)
{
	size_t i;

	for (i = 0; m[i] != '\0'; i++)
		if (!isupper((unsigned char)m[i]))
			return 0;
	return i > 0 && i <= METHOD_MAX;
}

/* Origin-form: "/", then visible ASCII; nothing to break the head. */
int
app_valid_path(const char *p)
{
	size_t i;

	if (p[0] != '/')
		return 0;
	for (i = 0; p[i] != '\0'; i++)
		if (p[i] <= ' ' || p[i] >= 0x7f)
			return 0;
	return i <= RUN_PATH_MAX;
}

/* "event": a TOML table sent as JSON, or a string that holds JSON. */
static json_t *
run_event(struct actx *c, const struct toml_kv *kv, const char *key)
{
	const struct toml_value *v = kv->value;
	json_error_t je;
	json_t *j;
	int deep = 0;

	if (v->type == TOML_STRING) {
		j = json_loadb(v->u.string.ptr, v->u.string.len,
		    JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
		if (j == NULL)
			cw_diag(&c->w, kv->line, key, "not JSON: %s "
			    "(column %d)", je.text, je.column);
		return j;
	}
	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, key, "must be a table, or a string "
		    "holding JSON");
		return NULL;
	}
	if ((j = cw_json(v, 0, &deep)) == NULL) {
		if (deep)
			cw_diag(&c->w, kv->line, key, "nested deeper than "
			    "%d levels", CW_JSON_DEPTH_MAX);
		else
			c->w.oom = 1;
	}
	return j;
}

/*
 * event, method, path and timeout_seconds, with their defaults, as the
 * start of spec_json; NULL on a problem (diagnosed) or no memory.
 */
static json_t *
run_common(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix)
{
	const char *method = "POST", *path = "/", *s;
	char key[CW_KEYPATH_LEN], *text;
	json_t *o, *event;
	int64_t timeout = 0;
	int bad = 0;

	if (slot[RK_EVENT] == NULL)
		event = json_object();
	else {
		cw_kpath_s(key, prefix, "event");
		event = run_event(c, slot[RK_EVENT], key);
	}
	if (event == NULL)
		return NULL;
	text = json_dumps(event, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(event);
	if (text == NULL) {
		c->w.oom = 1;
		return NULL;
	}
	if (strlen(text) > APP_EVENT_MAX) {
		cw_kpath_s(key, prefix, "event");
		cw_diag(&c->w, slot[RK_EVENT]->line, key, "%zu bytes as JSON, "
		    "more than %d", strlen(text), APP_EVENT_MAX);
		bad = 1;
	}
	if (slot[RK_METHOD] != NULL) {
		cw_kpath_s(key, prefix, "method");
		if ((s = cw_str(&c->w, slot[RK_METHOD], key, METHOD_MAX)) ==
		    NULL)
			bad = 1;
		else if (!app_valid_method(s)) {
			cw_diag(&c->w, slot[RK_METHOD]->line, key, "must be an "
			    "upper-case method of at most %d letters, as POST",
			    METHOD_MAX);
			bad = 1;
		} else
			method = s;
	}
	if (slot[RK_PATH] != NULL) {
		cw_kpath_s(key, prefix, "path");
		if ((s = cw_str(&c->w, slot[RK_PATH], key,
		    RUN_PATH_MAX)) == NULL)
			bad = 1;
		else if (!app_valid_path(s)) {
			cw_diag(&c->w, slot[RK_PATH]->line, key, "must start "
			    "with '/' and hold visible ASCII only");
			bad = 1;
		} else
			path = s;
	}
	if (slot[RK_TIMEOUT] != NULL) {
		cw_kpath_s(key, prefix, "timeout_seconds");
		if (cw_int(&c->w, slot[RK_TIMEOUT], key, 1,
		    APP_RUN_TIMEOUT_MAX, &timeout) == -1)
			bad = 1;
	}
	o = bad ? NULL : json_pack("{s:s, s:s, s:s, s:I}", "event", text,
	    "method", method, "path", path, "timeout_seconds",
	    (json_int_t)timeout);
	if (!bad && o == NULL)
		c->w.oom = 1;
	free(text);
	return o;
}

static char *
spec_text(struct actx *c, json_t *o)
{
	char *text;

	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (text == NULL)
		c->w.oom = 1;
	return text;
}

/*
 * [jobs]: a table of jobs.  This is the app's own table, not the "jobs"
 * key of a service (deployment jobs, which hk.toml(5) refuses on a
 * serverless service).
 */
void
app_jobs(struct actx *c, const struct toml_kv *kv)
{
	const struct toml_value *v = kv->value;
	size_t i;

	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, "jobs", "must be a table of "
		    "[jobs.NAME]");
		return;
	}
	if (v->u.table.len == 0)
		return;
	if ((c->app->jobs = calloc(v->u.table.len,
	    sizeof(*c->app->jobs))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.table.len && !c->w.oom; i++)
		job_parse(c, &v->u.table.items[i],
		    &c->app->jobs[c->app->njobs++]);
}

static void
job_parse(struct actx *c, const struct toml_kv *kv, struct job_spec *j)
{
	const struct toml_kv *slot[RK_COUNT] = { NULL };
	char prefix[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];
	const char *s;
	json_t *o;

	cw_kpath(prefix, "jobs", kv->key, kv->keylen);
	j->line = kv->value->line > 0 ? kv->value->line : kv->line;
	j->run_id_line = j->line;
	if (strlen(kv->key) != kv->keylen || !config_valid_name(kv->key))
		cw_diag(&c->w, kv->line, prefix, NAME_REASON);
	else
		(void)strlcpy(j->name, kv->key, sizeof(j->name));
	if (run_slots(c, kv, prefix, FOR_JOB, slot) == -1)
		return;
	cw_kpath_s(key, prefix, "service");
	if (slot[RK_SERVICE] == NULL)
		cw_diag(&c->w, j->line, key, "missing: the serverless service "
		    "of this app that the run is sent to");
	else if ((s = cw_str(&c->w, slot[RK_SERVICE], key, CONFIG_NAME_MAX)) !=
	    NULL) {
		j->service_line = slot[RK_SERVICE]->line;
		if (!config_valid_name(s))
			cw_diag(&c->w, slot[RK_SERVICE]->line, key,
			    NAME_REASON);
		else
			(void)strlcpy(j->service, s, sizeof(j->service));
	}
	if (slot[RK_RUN_ID] != NULL) {
		cw_kpath_s(key, prefix, "run_id");
		j->run_id_line = slot[RK_RUN_ID]->line;
		(void)cw_int(&c->w, slot[RK_RUN_ID], key, 0, INT64_MAX,
		    &j->run_id);
	}
	if ((o = run_common(c, slot, prefix)) != NULL)
		j->spec_json = spec_text(c, o);
}

/* After the services: each job's service is a serverless one of the app. */
void
app_jobs_check(struct actx *c)
{
	const struct service_spec *sp;
	const struct job_spec *j;
	char key[CW_KEYPATH_LEN], prefix[CW_KEYPATH_LEN];
	size_t i, k;

	for (i = 0; i < c->app->njobs; i++) {
		j = &c->app->jobs[i];
		if (j->service[0] == '\0' || j->name[0] == '\0')
			continue;
		for (k = 0; k < c->app->nservices; k++)
			if (strcmp(c->app->services[k].name, j->service) == 0)
				break;
		cw_kpath_s(prefix, "jobs", j->name);
		cw_kpath_s(key, prefix, "service");
		sp = k < c->app->nservices ? &c->app->services[k] : NULL;
		if (sp == NULL)
			cw_diag(&c->w, j->service_line, key, "no service "
			    "\"%s\" in this file", j->service);
		else if (!sp->serverless)
			cw_diag(&c->w, j->service_line, key, "service \"%s\" "
			    "has no [serverless] table: a run is sent through "
			    "the gateway's /fn/ route", j->service);
	}
}

/* cron (given), timezone, enabled, concurrency, catch_up into o. */
static int
schedule_keys(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, json_t *o)
{
	char key[CW_KEYPATH_LEN], why[256];
	const char *s, *tz = "UTC", *conc = "forbid";
	struct cron cr;
	int enabled = 1, catch_up = 0, bad = 0;

	cw_kpath_s(key, prefix, "cron");
	if ((s = cw_str(&c->w, slot[RK_CRON], key, CRON_EXPR_MAX)) == NULL)
		bad = 1;
	else if (cron_parse(&cr, s, why, sizeof(why)) == -1) {
		cw_diag(&c->w, slot[RK_CRON]->line, key, "%s", why);
		bad = 1;
	} else if (cron_next(&cr, NULL, (int64_t)time(NULL)) == -1) {
		cw_diag(&c->w, slot[RK_CRON]->line, key, "never fires (no such "
		    "day in any month it names)");
		bad = 1;
	} else
		bad |= json_object_set_new(o, "cron", json_string(s));
	if (slot[RK_TIMEZONE] != NULL) {
		cw_kpath_s(key, prefix, "timezone");
		if ((s = cw_str(&c->w, slot[RK_TIMEZONE], key, CRON_TZ_MAX)) ==
		    NULL)
			bad = 1;
		else if (cron_tz_valid(s, why, sizeof(why)) == -1) {
			cw_diag(&c->w, slot[RK_TIMEZONE]->line, key, "%s", why);
			bad = 1;
		} else
			tz = s;
	}
	if (slot[RK_CONCURRENCY] != NULL) {
		cw_kpath_s(key, prefix, "concurrency");
		if ((s = cw_str(&c->w, slot[RK_CONCURRENCY], key, 16)) == NULL)
			bad = 1;
		else if (strcmp(s, "forbid") != 0 && strcmp(s, "allow") != 0) {
			cw_diag(&c->w, slot[RK_CONCURRENCY]->line, key,
			    "must be \"forbid\" or \"allow\"");
			bad = 1;
		} else
			conc = s;
	}
	cw_kpath_s(key, prefix, "enabled");
	if (slot[RK_ENABLED] != NULL &&
	    cw_bool(&c->w, slot[RK_ENABLED], key, &enabled) == -1)
		bad = 1;
	cw_kpath_s(key, prefix, "catch_up");
	if (slot[RK_CATCH_UP] != NULL &&
	    cw_bool(&c->w, slot[RK_CATCH_UP], key, &catch_up) == -1)
		bad = 1;
	bad |= json_object_set_new(o, "timezone", json_string(tz));
	bad |= json_object_set_new(o, "concurrency", json_string(conc));
	bad |= json_object_set_new(o, "enabled", json_boolean(enabled));
	bad |= json_object_set_new(o, "catch_up", json_boolean(catch_up));
	return bad ? -1 : 0;
}

/* [services.X.schedules]: a table of schedules. */
void
app_schedules(struct actx *c, const struct toml_kv *skv,
    const struct toml_kv *kv, const char *key, struct service_spec *s)
{
	const struct toml_value *v = kv->value;
	char prefix[CW_KEYPATH_LEN];
	size_t i;

	(void)skv;
	s->schedules_line = kv->line;
	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, key, "must be a table of "
		    "[%s.NAME]", key);
		return;
	}
	if (v->u.table.len == 0)
		return;
	if ((s->schedules = calloc(v->u.table.len,
	    sizeof(*s->schedules))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.table.len && !c->w.oom; i++) {
		cw_kpath(prefix, key, v->u.table.items[i].key,
		    v->u.table.items[i].keylen);
		schedule_parse(c, &v->u.table.items[i], prefix,
		    &s->schedules[s->nschedules++]);
	}
}

static void
schedule_parse(struct actx *c, const struct toml_kv *kv, const char *prefix,
    struct schedule_spec *sc)
{
	const struct toml_kv *slot[RK_COUNT] = { NULL };
	json_t *o;

	sc->line = kv->value->line > 0 ? kv->value->line : kv->line;
	if (strlen(kv->key) != kv->keylen || !config_valid_name(kv->key))
		cw_diag(&c->w, kv->line, prefix, NAME_REASON);
	else
		(void)strlcpy(sc->name, kv->key, sizeof(sc->name));
	if (run_slots(c, kv, prefix, FOR_SCHEDULE, slot) == -1)
		return;
	/* "cron" missing is said on the table's line. */
	if (slot[RK_CRON] == NULL) {
		char key[CW_KEYPATH_LEN];

		cw_kpath_s(key, prefix, "cron");
		cw_diag(&c->w, sc->line, key, "missing: when it fires, as "
		    "\"*/5 * * * *\" or \"@daily\"");
	}
	if ((o = run_common(c, slot, prefix)) == NULL)
		return;
	if (slot[RK_CRON] == NULL || schedule_keys(c, slot, prefix, o) == -1) {
		json_decref(o);
		return;
	}
	sc->spec_json = spec_text(c, o);
}

/* After the service's keys: only a serverless service has schedules. */
void
app_schedules_check(struct actx *c, const char *prefix,
    const struct toml_kv *kv, struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];

	if (kv == NULL || s->serverless)
		return;
	cw_kpath_s(key, prefix, "schedules");
	cw_diag(&c->w, kv->line, key, "needs [serverless]: a schedule's run is "
	    "sent through the gateway's /fn/ route");
}

void
app_job_clear(struct job_spec *j)
{
	free(j->spec_json);
	memset(j, 0, sizeof(*j));
}
