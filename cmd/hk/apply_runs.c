/*
 * apply_runs.c - what hk apply does with an app's [jobs.NAME] and
 * [services.X.schedules.NAME] (hk.toml(5)), in apply's transaction, and
 * how --wait waits for the runs of the jobs it started.
 *
 * A job's run_id may only grow: a lower one than the store has refuses
 * the whole apply.  Runs themselves are hk-jobs's (hk-jobs(8)): apply
 * writes the run_id, and the reload that follows makes hk-jobs start it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "hk.h"
#include "ipc.h"
#include "log.h"
#include "spec.h"
#include "store.h"

#define JOB_REPLY_MS	5000

static int	 write_job(struct hk *, const struct app_config *,
		    const struct job_spec *, json_t *);
static int	 write_schedules(struct hk *, const struct app_config *,
		    json_t *);
static const char *schedule_result(const struct store_schedule *, size_t,
		    const char *, const struct schedule_spec *);
static int	 wait_job(struct hk *, const json_t *, int64_t);

/* Jobs, then schedules, of one app; appends what happened to report. */
int
apply_runs(struct hk *hk, const struct app_config *app, json_t *report)
{
	char **keep;
	size_t i;
	int code = EX_OK;

	if ((keep = calloc(app->njobs + 1, sizeof(*keep))) == NULL)
		fatal(EX_OSERR, "calloc");
	for (i = 0; i < app->njobs && code == EX_OK; i++) {
		keep[i] = (char *)app->jobs[i].name;
		code = write_job(hk, app, &app->jobs[i], report);
	}
	if (code == EX_OK && store_job_prune(hk->store, app->name, keep,
	    app->njobs, NULL) == -1)
		code = hk_store_failed(hk, "remove jobs");
	free(keep);
	if (code == EX_OK)
		code = write_schedules(hk, app, report);
	return code;
}

/*
 * Whether job j of app may be applied: its run_id not lower than the one
 * the store has (hk apply refuses the file then; hk validate says so).
 * *result, if asked for, is what applying it would do: "queued" (run_id
 * went up: one run), "skipped" (a new job with run_id 0), "updated" (the
 * same run_id with another service, event, path, method or timeout: the
 * next run uses them, none is started) or "unchanged".
 */
int
job_run_id_check(struct hk *hk, const struct app_config *app,
    const struct job_spec *j, const char **result)
{
	struct store_job old;
	int found, same;

	if ((found = store_job_get(hk->store, app->name, j->name, &old)) ==
	    -1)
		return hk_store_failed(hk, "read job");
	if (found != 0) {
		if (result != NULL)
			*result = j->run_id == 0 ? "skipped" : "queued";
		return EX_OK;
	}
	same = strcmp(old.service, j->service) == 0 &&
	    strcmp(old.spec_json, j->spec_json) == 0;
	if (j->run_id < old.run_id) {
		fprintf(stderr, "%s:%d: jobs.%s.run_id: %jd is lower than "
		    "%jd, the run_id last applied (it may only grow)\n",
		    app->path, j->run_id_line, j->name, (intmax_t)j->run_id,
		    (intmax_t)old.run_id);
		store_job_clear(&old);
		return EX_DATAERR;
	}
	if (result != NULL)
		*result = j->run_id > old.run_id ? "queued" : same ?
		    "unchanged" : "updated";
	store_job_clear(&old);
	return EX_OK;
}

static int
write_job(struct hk *hk, const struct app_config *app,
    const struct job_spec *j, json_t *report)
{
	const char *result;
	int code;

	if ((code = job_run_id_check(hk, app, j, &result)) != EX_OK)
		return code;
	if (store_job_put(hk->store, app->name, j->name, j->service,
	    j->spec_json, j->run_id) == -1)
		return hk_store_failed(hk, "write job");
	json_array_append_new(report, json_pack("{s:s, s:s, s:s, s:I, s:s}",
	    "app", app->name, "job", j->name, "service", j->service,
	    "run_id", (json_int_t)j->run_id, "result", result));
	return EX_OK;
}

static const char *
schedule_result(const struct store_schedule *old, size_t nold,
    const char *service, const struct schedule_spec *sc)
{
	size_t i;

	for (i = 0; i < nold; i++)
		if (strcmp(old[i].service, service) == 0 &&
		    strcmp(old[i].name, sc->name) == 0)
			return strcmp(old[i].spec_json, sc->spec_json) == 0 ?
			    "unchanged" : "updated";
	return "created";
}

static int
write_schedules(struct hk *hk, const struct app_config *app, json_t *report)
{
	const struct service_spec *sp;
	struct store_schedule *old;
	char **svcs, **names;
	size_t nold, n = 0, s, k;
	int64_t now;
	int code = EX_OK;

	if (store_schedule_list(hk->store, app->name, &old, &nold) == -1)
		return hk_store_failed(hk, "list schedules");
	for (s = 0; s < app->nservices; s++)
		n += app->services[s].nschedules;
	svcs = calloc(n + 1, sizeof(*svcs));
	names = calloc(n + 1, sizeof(*names));
	if (svcs == NULL || names == NULL)
		fatal(EX_OSERR, "calloc");
	/* A new schedule's clock starts now: nothing before it is missed. */
	now = config_sched_now_ms(&hk->cfg);
	for (s = 0, n = 0; s < app->nservices && code == EX_OK; s++) {
		sp = &app->services[s];
		for (k = 0; k < sp->nschedules && code == EX_OK; k++, n++) {
			svcs[n] = (char *)sp->name;
			names[n] = (char *)sp->schedules[k].name;
			json_array_append_new(report, json_pack("{s:s, s:s, "
			    "s:s, s:s}", "app", app->name, "service", sp->name,
			    "schedule", sp->schedules[k].name, "result",
			    schedule_result(old, nold, sp->name,
			    &sp->schedules[k])));
			if (store_schedule_put(hk->store, app->name, sp->name,
			    sp->schedules[k].name, sp->schedules[k].spec_json,
			    now) == -1)
				code = hk_store_failed(hk, "write schedule");
		}
	}
	if (code == EX_OK && store_schedule_prune(hk->store, app->name, svcs,
	    names, n, NULL) == -1)
		code = hk_store_failed(hk, "remove schedules");
	store_schedule_free(old, nold);
	free(svcs);
	free(names);
	return code;
}

/*
 * --wait, after the services: the end of every run this apply started.
 * 0 if each succeeded, 75 if one did not or time ran out, 69 if hk-jobs
 * could not be asked.
 */
int
apply_wait_jobs(struct hk *hk, const json_t *report, int timeout_s)
{
	const json_t *r;
	int64_t deadline;
	size_t i;
	int code = EX_OK, c;

	deadline = hk_mono_ms() + (int64_t)timeout_s * 1000;
	json_array_foreach(report, i, r) {
		if (json_object_get(r, "job") == NULL || strcmp(
		    json_string_value(json_object_get(r, "result")),
		    "queued") != 0)
			continue;
		c = wait_job(hk, r, deadline);
		if (code == EX_OK || c == EX_UNAVAILABLE)
			code = c;
	}
	return code;
}

/* One job's run: "APP/JOB\trun ID\tPHASE" on stdout, the reason on stderr. */
static int
wait_job(struct hk *hk, const json_t *r, int64_t deadline)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	const char *app, *job, *id, *phase, *reason;
	json_t *req, *reply, *run, *end = NULL;
	int64_t left;
	int fd, code = EX_TEMPFAIL;

	app = json_string_value(json_object_get(r, "app"));
	job = json_string_value(json_object_get(r, "job"));
	snprintf(path, sizeof(path), "%s/jobs.sock", hk->cfg.runtime_dir);
	if ((fd = ipc_connect(path, err, sizeof(err))) == -1) {
		log_errorx("apply --wait: job %s/%s: hk-jobs is not running: "
		    "%s", app, job, err);
		return EX_UNAVAILABLE;
	}
	req = json_pack("{s:s, s:s, s:s, s:O}", "op", "wait_job", "app", app,
	    "job", job, "run_id", json_object_get(r, "run_id"));
	if (req == NULL || ipc_send(fd, req, err, sizeof(err)) == -1 ||
	    (reply = ipc_recv(fd, JOB_REPLY_MS, err, sizeof(err))) == NULL) {
		log_errorx("apply --wait: jobs.sock: %s", req == NULL ?
		    "out of memory" : err);
		json_decref(req);
		close(fd);
		return EX_UNAVAILABLE;
	}
	json_decref(req);
	id = json_string_value(json_object_get(reply, "id"));
	if (!json_is_true(json_object_get(reply, "ok")) || id == NULL) {
		log_errorx("apply --wait: job %s/%s: %s", app, job,
		    json_string_value(json_object_get(reply, "error")));
		code = EX_UNAVAILABLE;
		goto out;
	}
	if ((run = json_object_get(reply, "run")) == NULL) {
		left = deadline - hk_mono_ms();
		if (left <= 0 || (end = ipc_recv(fd, (int)left, err,
		    sizeof(err))) == NULL) {
			log_errorx("apply --wait: job %s/%s: run %s %s", app,
			    job, id, left <= 0 || errno == ETIMEDOUT ?
			    "not ended in time; it goes on" : err);
			goto out;
		}
		run = json_object_get(end, "run");
	}
	phase = json_string_value(json_object_get(run, "phase"));
	reason = json_string_value(json_object_get(run, "reason"));
	printf("%s/%s\tjob run %s\t%s\n", app, job, id, phase ? phase : "?");
	fflush(stdout);
	if (phase != NULL && strcmp(phase, "Succeeded") == 0)
		code = EX_OK;
	else
		log_errorx("job %s/%s: run %s %s%s%s", app, job, id,
		    phase ? phase : "ended", reason && *reason ? ": " : "",
		    reason ? reason : "");
out:
	json_decref(end);
	json_decref(reply);
	close(fd);
	return code;
}
