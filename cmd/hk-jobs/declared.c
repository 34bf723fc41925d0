/*
 * declared.c - the runs an app file declares, [jobs.NAME] (hk.toml(5)).
 *
 * hk apply writes each job's run_id; here every job whose run_id is
 * higher than the last one run starts one run.  The store's claim sets
 * the job's done_run_id and writes the run's row in one transaction, so a
 * run_id starts once in the installation, whichever hk-jobs sees it
 * first, and never again after a restart.  run_id 0 is recorded as a
 * Skipped run and sends nothing.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "jobs.h"
#include "log.h"
#include "store.h"

static void	declared_start(struct jobs *, const struct store_job *);

/*
 * A stored spec_json (app_runs.c) as a request; rq points into the
 * JSON returned, which the caller releases once the run is made.
 */
json_t *
run_req_decode(const char *spec_json, struct run_req *rq)
{
	json_error_t je;
	json_t *root;
	json_int_t timeout = 0;

	memset(rq, 0, sizeof(*rq));
	if ((root = json_loads(spec_json, 0, &je)) == NULL)
		return NULL;
	if (json_unpack_ex(root, &je, 0, "{s:s, s:s, s:s, s?I}", "event",
	    &rq->event, "method", &rq->method, "path", &rq->path,
	    "timeout_seconds", &timeout) == -1) {
		json_decref(root);
		return NULL;
	}
	rq->event_len = strlen(rq->event);
	rq->timeout_s = timeout;
	return root;
}

/* Every job with a run_id not yet run: at start and at each reload. */
int
declared_dispatch(struct jobs *jx)
{
	struct store_job *jobs;
	size_t n, i;

	if (store_job_list(jx->store, NULL, &jobs, &n) == -1) {
		log_warnx("jobs: unable to list: %s", store_error(jx->store));
		return -1;
	}
	for (i = 0; i < n && !jx->stopping; i++)
		if (jobs[i].run_id > jobs[i].done_run_id)
			declared_start(jx, &jobs[i]);
	store_job_free(jobs, n);
	return 0;
}

static void
declared_start(struct jobs *jx, const struct store_job *j)
{
	char trigger[STORE_TRIGGER_MAX + 1], err[256];
	struct run_req rq;
	struct run *r;
	json_t *root;

	snprintf(trigger, sizeof(trigger), "%s%s", JOBS_TRIGGER_JOB,
	    j->name);
	if ((root = run_req_decode(j->spec_json, &rq)) == NULL) {
		log_warnx("job %s/%s: its stored spec is unreadable", j->app,
		    j->name);
		return;
	}
	r = run_make(jx, j->app, j->service, trigger, &rq, err, sizeof(err));
	json_decref(root);
	if (r == NULL) {
		log_warnx("job %s/%s: %s", j->app, j->name, err);
		return;
	}
	if (j->run_id == 0)
		run_skip(r, "run_id is 0");
	switch (store_job_claim(jx->store, j->app, j->name, j->run_id,
	    &r->row)) {
	case -1:
		log_warnx("job %s/%s: unable to claim run_id %jd: %s", j->app,
		    j->name, (intmax_t)j->run_id, store_error(jx->store));
		/* FALLTHROUGH */
	case 1:		/* another hk-jobs took it, or the job changed */
		run_free(r);
		return;
	}
	if (r->phase == RUN_SKIPPED) {
		log_info("run=%s job=%s app=%s: Skipped: run_id is 0",
		    r->row.id, j->name, j->app);
		run_free(r);
		return;
	}
	run_track(r);
	run_start(r);
}

/* A run of ours in flight, by id; NULL if none. */
struct run *
declared_find(struct jobs *jx, const char *id)
{
	struct run *r;

	TAILQ_FOREACH(r, &jx->runs, entry)
		if (strcmp(r->row.id, id) == 0)
			return r;
	return NULL;
}
