/*
 * apply.c - "hk validate" and "hk apply".
 *
 * Both load every file and report every diagnostic before anything else;
 * apply then writes all the files' services in one transaction, so that a
 * rejected apply leaves the store exactly as it was.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "gwaddr.h"
#include "hk.h"
#include "log.h"
#include "spec.h"
#include "srctree.h"
#include "store.h"

#define APPLY_WAIT_DEFAULT	300	/* s, --wait without --timeout */

/* The options of hk apply. */
struct apply_opts {
	int	 wait;
	int	 timeout;
	int	 dry_run;	/* --dry-run: plan.c, nothing written */
	int	 json;		/* --json, with --dry-run only */
};

struct applied {
	char	 name[2 * (STORE_NAME_MAX + 1)];
	int64_t	 revision;
	int	 changed;
	int	 created;
};

static int	check_cross_files(struct app_config *, int);
static int	refusal_kept(int, int *);
static int	validate_store(struct hk *, struct app_config *, int);
static int	check_hosts(const struct app_config *,
		    const struct store_service *, size_t);
static int	write_app(struct hk *, const struct app_config *, json_t *);
static int	take_files(int, char **, struct apply_opts *);
static void	print_report(json_t *);

/* The options of validate and apply; o is NULL for validate. */
static int
take_files(int argc, char **argv, struct apply_opts *o)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "wait", no_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	const char *usage = o != NULL ?
	    "usage: hk [-v] [-f config] apply [--wait [--timeout seconds]] "
	    "file ...\n"
	    "       hk [-v] [-f config] apply --dry-run [--json] file ...\n" :
	    "usage: hk [-v] [-f config] validate file ...\n";
	const char *errstr;
	int ch, timed = 0;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(usage, stdout);
			exit(EX_OK);
		}
		if (o != NULL && (ch == 'W' || ch == 'n' || ch == 'j')) {
			*(ch == 'W' ? &o->wait : ch == 'n' ? &o->dry_run :
			    &o->json) = 1;
			continue;
		}
		if (o != NULL && ch == 'T') {
			o->timeout = (int)strtonum(optarg, 1, 86400, &errstr);
			if (errstr != NULL) {
				log_errorx("--timeout: %s is %s (1 to 86400 "
				    "seconds)", optarg, errstr);
				return -1;
			}
			timed = 1;
			continue;
		}
		fputs(usage, stderr);
		return -1;
	}
	/* A plan starts nothing to wait for; --json is the plan's. */
	if (optind >= argc || (o != NULL && ((timed && !o->wait) ||
	    (o->dry_run && o->wait) || (o->json && !o->dry_run)))) {
		fputs(usage, stderr);
		return -1;
	}
	return optind;
}

/*
 * Loads every file and prints the problems of each; returns EX_OK, 65, or
 * 66 when a file could not be read, even if another is invalid too: a
 * check that did not see all of its input is the more specific failure,
 * and 65 would say every file was read and found wanting (hk(1)).
 */
int
apps_load(struct hk *hk, int nfiles, char **files, struct app_config **out)
{
	struct app_config *apps;
	struct config_diag diag;
	int i, missing, code = EX_OK;
	size_t d;

	if ((apps = calloc(nfiles, sizeof(*apps))) == NULL)
		fatal(EX_OSERR, "calloc");
	for (i = 0; i < nfiles; i++) {
		memset(&diag, 0, sizeof(diag));
		missing = 0;
		if (app_load(&apps[i], files[i], &hk->cfg, &diag,
		    &missing) == 0)
			continue;
		for (d = 0; d < diag.count && d < CONFIG_DIAG_MAX; d++)
			fprintf(stderr, "%s\n", diag.msg[d]);
		if (diag.count > CONFIG_DIAG_MAX)
			fprintf(stderr, "%s: %zu more errors\n", files[i],
			    diag.count - CONFIG_DIAG_MAX);
		if (missing)
			code = EX_NOINPUT;
		else if (code == EX_OK)
			code = EX_DATAERR;
	}
	if (code == EX_OK)
		code = check_cross_files(apps, nfiles);
	*out = apps;
	return code;
}

void
apps_free(struct app_config *apps, int n)
{
	int i;

	for (i = 0; i < n; i++)
		app_free(&apps[i]);
	free(apps);
}

/* Two files naming one app, or one host, would make apply order matter. */
static int
check_cross_files(struct app_config *apps, int n)
{
	int i, j, code = EX_OK;
	size_t s, t, h, k;

	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(apps[i].name, apps[j].name) != 0)
				continue;
			fprintf(stderr, "%s:%d: name: app \"%s\" is also "
			    "defined in %s\n", apps[i].path, apps[i].name_line,
			    apps[i].name, apps[j].path);
			code = EX_DATAERR;
		}
	}
	for (i = 0; i < n; i++)
	for (s = 0; s < apps[i].nservices; s++)
	for (h = 0; h < apps[i].services[s].nhosts; h++)
	for (j = 0; j < i; j++)
	for (t = 0; t < apps[j].nservices; t++)
	for (k = 0; k < apps[j].services[t].nhosts; k++) {
		if (strcmp(apps[i].services[s].hosts[h],
		    apps[j].services[t].hosts[k]) != 0)
			continue;
		fprintf(stderr, "%s:%d: services.%s.hosts: host \"%s\" is "
		    "also used by %s/%s\n", apps[i].path,
		    apps[i].services[s].line, apps[i].services[s].name,
		    apps[i].services[s].hosts[h], apps[j].name,
		    apps[j].services[t].name);
		code = EX_DATAERR;
	}
	return code;
}

/*
 * A check's outcome, so that every problem is said: a refusal (65) is kept
 * in *code and the checks go on (EX_OK); a failing store ends them.
 */
static int
refusal_kept(int c, int *code)
{
	if (c != EX_DATAERR)
		return c;
	*code = c;
	return EX_OK;
}

/*
 * What only the store can say, checked when it can be opened without
 * making one (an SQLite file that is not there yet has nothing): whether
 * the secrets the files name exist, and whether each job's run_id is not
 * lower than the one last applied.  Without a store, said and skipped;
 * hk apply always checks.
 */
static int
validate_store(struct hk *hk, struct app_config *apps, int n)
{
	char err[STORE_ERR_LEN];
	const char *path = NULL;
	size_t s, named = 0, jobs = 0;
	int i, code = EX_OK, c;

	for (i = 0; i < n; i++) {
		for (s = 0; s < apps[i].nservices; s++)
			named += apps[i].services[s].nsecrets;
		jobs += apps[i].njobs;
	}
	if (named == 0 && jobs == 0)
		return EX_OK;
	if (strncmp(hk->cfg.state, "sqlite://", 9) == 0)
		path = hk->cfg.state + 9;
	if ((path != NULL && access(path, F_OK) == -1) ||
	    (hk->store = store_open(hk->cfg.state, err, sizeof(err))) ==
	    NULL) {
		log_warnx("validate: %s not checked: no store at %s",
		    named == 0 ? "job run_ids" : jobs == 0 ? "secrets" :
		    "secrets and job run_ids", hk->cfg.state);
		return EX_OK;
	}
	for (i = 0; i < n; i++) {
		if (named > 0 && (c = refusal_kept(secrets_resolve(hk,
		    &apps[i]), &code)) != EX_OK)
			return c;
		for (s = 0; s < apps[i].njobs; s++)
			if ((c = refusal_kept(job_run_id_check(hk, &apps[i],
			    &apps[i].jobs[s], NULL), &code)) != EX_OK)
				return c;
	}
	return code;
}

int
cmd_validate(struct hk *hk, int argc, char **argv)
{
	struct app_config *apps;
	int first, i, n, code;

	if ((first = take_files(argc, argv, NULL)) == -1)
		return EX_USAGE;
	n = argc - first;
	code = apps_load(hk, n, argv + first, &apps);
	if (code == EX_OK)
		code = validate_store(hk, apps, n);
	for (i = 0; code == EX_OK && i < n; i++)
		printf("%s: app %s: %zu services, %zu serverless: OK\n",
		    apps[i].path, apps[i].name, apps[i].nservices,
		    app_count_serverless(&apps[i]));
	apps_free(apps, n);
	return code;
}

/*
 * The app's serverless services are deployed behind serverless_address:
 * the store records the one the installation's serverless services are
 * behind (gwaddr.h), this apply's if none is and record is set (not for
 * --dry-run, plan.c).  A hakopod.toml that names another while any exists
 * is refused (78): the gateway moves on purpose only (hk-activate(8),
 * MOVING THE GATEWAY).  An app without serverless services is not
 * concerned: it is how they are removed.
 */
int
apply_check_gateway(struct hk *hk, const struct app_config *app, int record)
{
	struct gwaddr_move m;
	int r;

	if (app_count_serverless(app) == 0)
		return EX_OK;
	if ((r = gwaddr_deploy(hk->store, hk->cfg.serverless_address, record,
	    &m)) == -1)
		return hk_store_failed(hk, "read the gateway's address");
	if (r == 0)
		return EX_OK;
	log_errorx("apply: %s: server.%s: refused: serverless services are "
	    "deployed behind the gateway's recorded address; put it back, or "
	    "move the gateway first (hk-activate(8), MOVING THE GATEWAY): "
	    "services: %s", app->path, m.what, m.services);
	return EX_CONFIG;
}

/*
 * Limits that need the rest of the installation: the store, in apply's
 * transaction, and read by --dry-run (plan.c).
 */
int
apply_check_installation(struct hk *hk, const struct app_config *app)
{
	struct store_service *all;
	int64_t others;
	size_t n, s, count = 0;
	int code;

	if (store_count_serverless(hk->store, app->name, &others) == -1)
		return hk_store_failed(hk, "count serverless services");
	for (s = 0; s < app->nservices; s++) {
		if (!app->services[s].serverless)
			continue;
		if (others + (int64_t)++count <=
		    hk->cfg.max_serverless_services)
			continue;
		fprintf(stderr, "%s:%d: services.%s.serverless: the "
		    "installation would have %lld serverless services, more "
		    "than max_serverless_services (%lld)\n", app->path,
		    app->services[s].line, app->services[s].name,
		    (long long)(others + (int64_t)app_count_serverless(app)),
		    (long long)hk->cfg.max_serverless_services);
		return EX_DATAERR;
	}
	if (store_service_list(hk->store, &all, &n) == -1)
		return hk_store_failed(hk, "list services");
	code = check_hosts(app, all, n);
	store_service_free(all, n);
	return code;
}

/* A host may belong to one service of the installation only. */
static int
check_hosts(const struct app_config *app, const struct store_service *all,
    size_t n)
{
	const struct service_spec *sp;
	json_t *spec, *hosts, *h;
	size_t i, s, k, idx;
	int code = EX_OK;

	for (i = 0; i < n; i++) {
		if (strcmp(all[i].app, app->name) == 0)
			continue;
		spec = json_loads(all[i].spec_json, 0, NULL);
		hosts = json_object_get(spec, "hosts");
		json_array_foreach(hosts, idx, h)
		for (s = 0; s < app->nservices; s++) {
			sp = &app->services[s];
			for (k = 0; k < sp->nhosts; k++) {
				if (!json_is_string(h) || strcmp(sp->hosts[k],
				    json_string_value(h)) != 0)
					continue;
				fprintf(stderr, "%s:%d: services.%s.hosts: "
				    "host \"%s\" is already used by %s/%s\n",
				    app->path, sp->line, sp->name,
				    sp->hosts[k], all[i].app, all[i].name);
				code = EX_DATAERR;
			}
		}
		json_decref(spec);
	}
	return code;
}

int
hk_record_applied(struct hk *hk, const char *app, const char *service,
    int64_t revision)
{
	struct store_event ev;
	char detail[64];

	memset(&ev, 0, sizeof(ev));
	ev.at = store_now_ms();
	strlcpy(ev.app, app, sizeof(ev.app));
	strlcpy(ev.service, service, sizeof(ev.service));
	strlcpy(ev.kind, "Applied", sizeof(ev.kind));
	snprintf(detail, sizeof(detail), "{\"revision\":%lld}",
	    (long long)revision);
	ev.detail_json = detail;
	return store_event_add(hk->store, &ev);
}

/* Writes one app; appends what happened to report. */
static int
write_app(struct hk *hk, const struct app_config *app, json_t *report)
{
	const struct service_spec *sp;
	char **keep, **removed = NULL;
	size_t s, nremoved = 0;
	int64_t revision;
	int changed, code, was_off;

	if ((code = apply_check_installation(hk, app)) != EX_OK)
		return code;
	if ((code = apply_check_gateway(hk, app, 1)) != EX_OK)
		return code;
	if (store_app_put(hk->store, app->name, app->path) == -1)
		return hk_store_failed(hk, "record app");
	if ((keep = calloc(app->nservices + 1, sizeof(*keep))) == NULL)
		fatal(EX_OSERR, "calloc");
	for (s = 0; s < app->nservices; s++) {
		sp = &app->services[s];
		keep[s] = (char *)sp->name;
		/* The code first: no spec names a hash the store lacks. */
		if (sp->code_hash != NULL && store_code_put(hk->store,
		    sp->code_hash, sp->code, sp->code_len) == -1) {
			free(keep);
			return hk_store_failed(hk, "write code");
		}
		if ((code = enabled_before(hk, app->name, sp->name,
		    &was_off)) != EX_OK) {
			free(keep);
			return code;
		}
		if (store_service_put(hk->store, app->name, sp->name,
		    sp->spec_json, sp->serverless, &revision, &changed) == -1 ||
		    (changed && hk_revision_applied(hk, app->name, sp->name,
		    revision, sp->spec_json) == -1)) {
			free(keep);
			return hk_store_failed(hk, "write service");
		}
		if ((code = enabled_apply(hk, app->name, sp, was_off)) !=
		    EX_OK) {
			free(keep);
			return code;
		}
		json_array_append_new(report, json_pack("{s:s, s:s, s:I, s:s, "
		    "s:s*}", "app", app->name, "service", sp->name, "revision",
		    (json_int_t)revision, "result", !changed ? "unchanged" :
		    revision == 1 ? "created" : "updated", "code",
		    sp->code_hash));
	}
	code = store_service_prune(hk->store, app->name, keep, app->nservices,
	    &removed, &nremoved);
	free(keep);
	if (code == -1)
		return hk_store_failed(hk, "remove services");
	for (s = 0; s < nremoved; s++) {
		json_array_append_new(report, json_pack("{s:s, s:s, s:I, s:s}",
		    "app", app->name, "service", removed[s], "revision",
		    (json_int_t)0, "result", "removed"));
		free(removed[s]);
	}
	free(removed);
	return apply_runs(hk, app, report);
}

static void
print_report(json_t *report)
{
	json_t *r;
	size_t idx;

	json_array_foreach(report, idx, r) {
		if (json_object_get(r, "job") != NULL) {
			printf("%s/%s\tjob run_id %lld\t%s\n",
			    json_string_value(json_object_get(r, "app")),
			    json_string_value(json_object_get(r, "job")),
			    (long long)json_integer_value(json_object_get(r,
			    "run_id")), json_string_value(json_object_get(r,
			    "result")));
			continue;
		}
		printf("%s/%s\t", json_string_value(json_object_get(r, "app")),
		    json_string_value(json_object_get(r, "service")));
		if (json_object_get(r, "schedule") != NULL)
			printf("schedule %s\t", json_string_value(
			    json_object_get(r, "schedule")));
		if (json_integer_value(json_object_get(r, "revision")))
			printf("revision %lld\t", (long long)
			    json_integer_value(json_object_get(r,
			    "revision")));
		printf("%s", json_string_value(json_object_get(r, "result")));
		/* The short hash: which code the revision runs. */
		if (json_is_string(json_object_get(r, "code")))
			printf("\tcode %.*s", SRCTREE_SHORT_LEN,
			    json_string_value(json_object_get(r, "code")));
		putchar('\n');
	}
	fflush(stdout);
}

/*
 * With --wait we subscribe to hk-scale before it hears of the reload, so
 * that no message about the new revisions is missed (wait.c).
 */
int
cmd_apply(struct hk *hk, int argc, char **argv)
{
	struct apply_opts o = { 0, APPLY_WAIT_DEFAULT, 0, 0 };
	struct app_config *apps;
	json_t *report;
	int first, i, n, code, wait, timeout, fd, left;
	time_t start;

	if ((first = take_files(argc, argv, &o)) == -1)
		return EX_USAGE;
	wait = o.wait;
	timeout = o.timeout;
	n = argc - first;
	/* pinned first: the plan shows the digests apply would store */
	if ((code = apps_load(hk, n, argv + first, &apps)) == EX_OK &&
	    (code = images_pin(hk, apps, n)) == EX_OK && o.dry_run)
		code = plan_apps(hk, apps, n, o.json);
	if (code != EX_OK || o.dry_run ||
	    (code = hk_store(hk)) != EX_OK ||
	    (code = vet_apps(hk, apps, n)) != EX_OK) {
		apps_free(apps, n);
		return code;
	}
	report = json_array();
	if (store_begin(hk->store) == -1)
		code = hk_store_failed(hk, "begin transaction");
	for (i = 0; code == EX_OK && i < n; i++)
		if ((code = secrets_resolve(hk, &apps[i])) == EX_OK)
			code = write_app(hk, &apps[i], report);
	/*
	 * In the same transaction: no spec names a hash the store lacks;
	 * the code of the kept revisions stays (keep_revisions).
	 */
	if (code == EX_OK && (store_revision_prune(hk->store,
	    hk->cfg.keep_revisions, NULL) == -1 ||
	    store_code_prune(hk->store, NULL) == -1))
		code = hk_store_failed(hk, "remove unused code");
	if (code == EX_OK && store_commit(hk->store) == -1)
		code = hk_store_failed(hk, "commit");
	if (code != EX_OK)
		store_rollback(hk->store);
	apps_free(apps, n);
	if (code == EX_OK) {
		print_report(report);
		fd = wait ? wait_subscribe(hk, &code) : -1;
		daemons_tell(hk, "reload", NULL);
		if (fd != -1) {
			start = time(NULL);
			code = wait_deploy(hk, fd, report, timeout);
			close(fd);
			/* The jobs' runs, within what is left of --timeout. */
			left = timeout - (int)(time(NULL) - start);
			if (code == EX_OK)
				code = apply_wait_jobs(hk, report,
				    left > 0 ? left : 1);
		}
	}
	json_decref(report);
	return code;
}
