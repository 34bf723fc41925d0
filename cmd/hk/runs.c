/*
 * runs.c - "hk runs": the runs of hk-jobs, from the store (hk-jobs(8)).
 * A list, newest last, TSV or aligned on a terminal or JSON; "show ID"
 * one run, with the excerpt of its response body.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "hk.h"
#include "log.h"
#include "runjson.h"
#include "store.h"

#define RUNS_USAGE \
	"usage: hk [-v] [-f config] runs [--json] [service]\n" \
	"       hk [-v] [-f config] runs show [--json] id\n"
#define RUNS_LIST_MAX	1000

static int	 parse_args(int, char **, int *);
static void	 run_row(struct table *, const struct store_run *);
static int	 runs_show(struct hk *, const char *, int);
static int	 runs_list(struct hk *, const char *, int);

static int
parse_args(int argc, char **argv, int *as_json)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	*as_json = 0;
	while ((ch = getopt_long(argc, argv, "+hj", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			*as_json = 1;
			break;
		case 'h':
			fputs(RUNS_USAGE, stdout);
			exit(EX_OK);
		default:
			fputs(RUNS_USAGE, stderr);
			return -1;
		}
	}
	return 0;
}

int
cmd_runs(struct hk *hk, int argc, char **argv)
{
	int as_json, j2 = 0, code;

	if (parse_args(argc, argv, &as_json) == -1)
		return EX_USAGE;
	argc -= optind;
	argv += optind;
	if (argc >= 1 && strcmp(argv[0], "show") == 0) {
		optind = 1;
		if (parse_args(argc, argv, &j2) == -1)
			return EX_USAGE;
		if (argc - optind != 1) {
			fputs(RUNS_USAGE, stderr);
			return EX_USAGE;
		}
		if ((code = hk_store(hk)) != EX_OK)
			return code;
		return runs_show(hk, argv[optind], as_json || j2);
	}
	if (argc > 1) {
		fputs(RUNS_USAGE, stderr);
		return EX_USAGE;
	}
	if ((code = hk_store(hk)) != EX_OK)
		return code;
	return runs_list(hk, argc == 1 ? argv[0] : NULL, as_json);
}

static void
run_row(struct table *t, const struct store_run *w)
{
	char created[32], status[16], dur[32];
	const char *row[8];

	fmt_time(created, sizeof(created), w->created_at);
	snprintf(status, sizeof(status), "%d", w->status);
	snprintf(dur, sizeof(dur), "%lld.%03llds",
	    (long long)(w->duration_us / 1000000),
	    (long long)(w->duration_us / 1000 % 1000));
	row[0] = w->id;
	row[1] = w->app;
	row[2] = w->service;
	row[3] = w->phase;
	row[4] = w->status != 0 ? status : "-";
	row[5] = created;
	row[6] = w->started_at != 0 && w->finished_at != 0 ? dur : "-";
	row[7] = w->trigger;
	table_add(t, row);
}

static int
runs_list(struct hk *hk, const char *service, int as_json)
{
	static const char *const header[] = {
		"ID", "APP", "SERVICE", "PHASE", "STATUS", "CREATED",
		"DURATION", "TRIGGER",
	};
	char app[STORE_NAME_MAX + 1];
	const char *svc = NULL, *slash;
	struct store_run *v;
	struct table *t;
	json_t *all;
	size_t n, i;
	int code = EX_OK;

	if (service != NULL) {
		if ((slash = strchr(service, '/')) == NULL ||
		    (size_t)(slash - service) > STORE_NAME_MAX ||
		    slash == service || slash[1] == '\0') {
			log_errorx("%s: not a service name (app/service)",
			    service);
			return EX_DATAERR;
		}
		memcpy(app, service, (size_t)(slash - service));
		app[slash - service] = '\0';
		svc = slash + 1;
	}
	if (store_run_list(hk->store, service ? app : NULL, svc,
	    RUNS_LIST_MAX, &v, &n) == -1)
		return hk_store_failed(hk, "list runs");
	t = table_new(8, header);
	all = json_array();
	for (i = 0; i < n; i++) {
		json_array_append_new(all, runjson(&v[i]));
		run_row(t, &v[i]);
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
	store_run_free(v, n);
	return code;
}

static int
runs_show(struct hk *hk, const char *id, int as_json)
{
	struct store_run w;
	char t1[32], t2[32], t3[32];
	json_t *o;
	int r;

	if (strlen(id) != STORE_RUN_ID_MAX ||
	    strspn(id, "0123456789abcdef") != STORE_RUN_ID_MAX) {
		log_errorx("%s: not a run id", id);
		return EX_DATAERR;
	}
	if ((r = store_run_get(hk->store, id, &w)) == -1)
		return hk_store_failed(hk, "read run");
	if (r == 1) {
		log_errorx("%s: no such run", id);
		return EX_DATAERR;
	}
	if (as_json) {
		o = runjson(&w);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(o);
		store_run_clear(&w);
		return EX_OK;
	}
	fmt_time(t1, sizeof(t1), w.created_at);
	fmt_time(t2, sizeof(t2), w.started_at);
	fmt_time(t3, sizeof(t3), w.finished_at);
	printf("id: %s\nservice: %s/%s\nrevision: %lld\ntrigger: %s\n"
	    "request: %s %s\nevent_bytes: %lld\nphase: %s\ncreated: %s\n"
	    "started: %s\nfinished: %s\nstatus: %d\nduration_ms: %lld\n"
	    "reason: %s\n", w.id, w.app, w.service, (long long)w.revision,
	    w.trigger, w.method, w.path, (long long)w.event_bytes, w.phase,
	    t1, t2, t3, w.status, (long long)(w.duration_us / 1000),
	    w.reason[0] != '\0' ? w.reason : "-");
	if (w.body != NULL) {
		printf("body:\n");
		fwrite(w.body, 1, w.body_len, stdout);
		if (w.body_len > 0 && w.body[w.body_len - 1] != '\n')
			putchar('\n');
	}
	store_run_clear(&w);
	return EX_OK;
}
