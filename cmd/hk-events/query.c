/*
 * query.c - the query modes: "list" (events), "tail" (the last events,
 * and with -f the new ones as they come), "requests" (the request log).
 * They read the store directly; no daemon is needed.  Output is TSV for
 * scripts, aligned under a header on a terminal, or JSON (--json).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "events.h"
#include "log.h"
#include "store.h"
#include "table.h"

#define Q_LIMIT_DEFAULT	1000	/* list and requests: the newest */
#define Q_TAIL_DEFAULT	10
#define Q_POLL_MS	200	/* tail -f */
#define Q_POLL_BATCH	1000

struct query {
	struct store	*store;
	const char	*cmd;
	int		 json;
	int		 follow;
	int		 status;
	size_t		 limit;
	int64_t		 since;
	const char	*kind;
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	int		 has_service;
};

static int	 q_usage(const char *, int);
static int	 q_option(struct query *, int, const char *);
static int	 q_options(struct query *, int, char **);
static int	 q_service(struct query *, const char *);
static int	 q_open(struct query *, const char *);
static int	 q_failed(struct query *, const char *);
static json_t	*event_json(const struct store_event *);
static json_t	*request_json(const struct store_request *);
static int	 print_events(struct query *, const struct store_event *,
		    size_t, int);
static int	 cmd_list(struct query *);
static int	 cmd_tail(struct query *);
static int	 cmd_requests(struct query *);
static int	 finish_stdout(int);

/* A command's synopsis: on stdout for -h (code 0), else on stderr. */
static int
q_usage(const char *cmd, int code)
{
	FILE *f = code == EX_OK ? stdout : stderr;

	if (strcmp(cmd, "tail") == 0)
		fprintf(f, "usage: hk-events [-v] [-f config] tail [-f] "
		    "[--json] [-n count]\n");
	else if (strcmp(cmd, "requests") == 0)
		fprintf(f, "usage: hk-events [-v] [-f config] requests "
		    "[--json] [--service service]\n"
		    "                 [--since time] [--status code] "
		    "[-n count]\n");
	else
		fprintf(f, "usage: hk-events [-v] [-f config] list "
		    "[--json] [--kind kind] [--service service]\n"
		    "                 [--since time] [-n count]\n");
	return code;
}

/* "app/service", or a service name of any app. */
static int
q_service(struct query *q, const char *arg)
{
	const char *slash = strchr(arg, '/');

	q->has_service = 1;
	if (slash == NULL)
		return strlcpy(q->service, arg, sizeof(q->service)) <
		    sizeof(q->service) ? 0 : -1;
	if ((size_t)(slash - arg) > STORE_NAME_MAX || slash == arg)
		return -1;
	memcpy(q->app, arg, slash - arg);
	q->app[slash - arg] = '\0';
	return strlcpy(q->service, slash + 1, sizeof(q->service)) <
	    sizeof(q->service) && slash[1] != '\0' ? 0 : -1;
}

/* One option of a query; -1 refused. */
static int
q_option(struct query *q, int ch, const char *arg)
{
	const char *errstr;

	switch (ch) {
	case 'c':
		q->status = (int)strtonum(arg, 100, 999, &errstr);
		if (errstr != NULL) {
			log_errorx("--status %s: %s (100..999)", arg, errstr);
			return -1;
		}
		return 0;
	case 'f':
		q->follow = 1;
		return 0;
	case 'j':
		q->json = 1;
		return 0;
	case 'k':
		q->kind = arg;
		return 0;
	case 'n':
		q->limit = (size_t)strtonum(arg, 0, 100000000, &errstr);
		if (errstr != NULL) {
			log_errorx("-n %s: %s", arg, errstr);
			return -1;
		}
		return 0;
	case 's':
		if (q_service(q, arg) == 0)
			return 0;
		log_errorx("--service %s: not a service", arg);
		return -1;
	case 'S':
		if (query_since(arg, store_now_ms(), &q->since) == 0)
			return 0;
		log_errorx("--since %s: not RFC 3339 nor a duration like 10m, "
		    "2h or 1d", arg);
		return -1;
	default:
		return -1;
	}
}

/*
 * Each command takes its own: tail no filter, --kind list only ...
 * 0, 1 for -h or --help, -1 refused.
 */
static int
q_options(struct query *q, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "kind", required_argument, NULL, 'k' },
		{ "service", required_argument, NULL, 's' },
		{ "since", required_argument, NULL, 'S' },
		{ "status", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, tail = strcmp(q->cmd, "tail") == 0;

	optind = 0;
	while ((ch = getopt_long(argc, argv, tail ? "fhn:" : "hn:", longopts,
	    NULL)) != -1) {
		if (ch == 'h')
			return 1;
		if (tail && (ch == 'k' || ch == 's' || ch == 'S' || ch == 'c'))
			return -1;
		if ((ch == 'k' || ch == 'c') && strcmp(q->cmd,
		    ch == 'k' ? "list" : "requests") != 0)
			return -1;
		if (q_option(q, ch, optarg) == -1)
			return -1;
	}
	return optind == argc ? 0 : -1;
}

static int
q_open(struct query *q, const char *config_path)
{
	struct server_config cfg;
	struct config_diag diag;
	char err[STORE_ERR_LEN];
	size_t i;
	int missing = 0;

	memset(&diag, 0, sizeof(diag));
	if (config_load_server(&cfg, config_path, &diag, &missing) == -1) {
		for (i = 0; i < diag.count && i < CONFIG_DIAG_MAX; i++)
			log_errorx("%s", diag.msg[i]);
		return missing ? EX_NOINPUT : EX_CONFIG;
	}
	if ((q->store = store_open(cfg.state, err, sizeof(err))) == NULL) {
		log_errorx("unable to open store %s: %s", cfg.state, err);
		return errno == EAGAIN ? EX_TEMPFAIL : EX_UNAVAILABLE;
	}
	return EX_OK;
}

static int
q_failed(struct query *q, const char *what)
{
	log_errorx("unable to %s: %s", what, store_error(q->store));
	return store_busy(q->store) ? EX_TEMPFAIL : EX_IOERR;
}

int
query_main(const char *config_path, int argc, char **argv)
{
	struct query q;
	int code;

	memset(&q, 0, sizeof(q));
	q.cmd = argv[0];
	if (strcmp(q.cmd, "list") != 0 && strcmp(q.cmd, "tail") != 0 &&
	    strcmp(q.cmd, "requests") != 0) {
		log_errorx("unknown command: %s", q.cmd);
		return q_usage("list", EX_USAGE);
	}
	q.limit = strcmp(q.cmd, "tail") == 0 ? Q_TAIL_DEFAULT :
	    Q_LIMIT_DEFAULT;
	argv[0] = log_getopt_name();
	switch (q_options(&q, argc, argv)) {
	case -1:
		return q_usage(q.cmd, EX_USAGE);
	case 1:
		return finish_stdout(q_usage(q.cmd, EX_OK));
	}
	if ((code = q_open(&q, config_path)) != EX_OK)
		return code;
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(q.cmd, "list") == 0)
		code = cmd_list(&q);
	else if (strcmp(q.cmd, "tail") == 0)
		code = cmd_tail(&q);
	else
		code = cmd_requests(&q);
	store_close(q.store);
	return finish_stdout(code);
}

/* Unix ms as RFC 3339 UTC with milliseconds. */
void
query_time(int64_t ms, char *buf, size_t len)
{
	struct tm tm;
	time_t t = (time_t)(ms / 1000);
	char base[EV_TIME_MAX];

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		(void)strlcpy(buf, "-", len);
		return;
	}
	(void)snprintf(buf, len, "%s.%03dZ", base, (int)(ms % 1000));
}

/*
 * RFC 3339 (2026-11-29T17:05:18Z, with a fraction or an offset), or a
 * duration back from now: N followed by s, m, h or d.
 */
int
query_since(const char *arg, int64_t now, int64_t *out)
{
	static const struct {
		char	unit;
		int64_t	ms;
	} units[] = {
		{ 's', 1000 }, { 'm', 60000 }, { 'h', 3600000 },
		{ 'd', 86400000 },
	};
	struct tm tm;
	const char *p, *errstr;
	char num[16];
	int64_t frac = 0, scale = 100, off = 0;
	size_t i, n = strspn(arg, "0123456789");
	long long v;

	for (i = 0; n > 0 && n < sizeof(num) && arg[n + 1] == '\0' &&
	    i < sizeof(units) / sizeof(units[0]); i++) {
		if (arg[n] != units[i].unit)
			continue;
		memcpy(num, arg, n);
		num[n] = '\0';
		v = strtonum(num, 0, 100 * 365 * 86400LL, &errstr);
		if (errstr != NULL)
			return -1;
		*out = now - v * (units[i].ms / 1000) * 1000;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	if ((p = strptime(arg, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (*p - '0') * scale;
	}
	if (*p == 'Z' || *p == 'z')
		p++;
	else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':' &&
	    strspn(p + 1, "0123456789") == 2 &&
	    strspn(p + 4, "0123456789") == 2) {
		off = ((p[1] - '0') * 10 + p[2] - '0') * 3600 +
		    ((p[4] - '0') * 10 + p[5] - '0') * 60;
		off = *p == '-' ? -off : off;
		p += 6;
	} else
		return -1;
	if (*p != '\0')
		return -1;
	*out = ((int64_t)timegm(&tm) - off) * 1000 + frac;
	return 0;
}

static json_t *
event_json(const struct store_event *ev)
{
	char t[EV_TIME_MAX], svc[EV_ID_MAX + 2];
	json_t *detail = NULL;

	query_time(ev->at, t, sizeof(t));
	record_service(ev->app, ev->service, svc, sizeof(svc));
	if (ev->detail_json != NULL)
		detail = json_loads(ev->detail_json, 0, NULL);
	return json_pack("{s:I, s:I, s:s, s:s, s:s?, s:o}",
	    "id", (json_int_t)ev->id, "at", (json_int_t)ev->at, "time", t,
	    "kind", ev->kind, "service", strcmp(svc, "-") != 0 ? svc : NULL,
	    "detail", detail != NULL ? detail : json_null());
}

static json_t *
request_json(const struct store_request *r)
{
	char t[EV_TIME_MAX], svc[EV_ID_MAX + 2];
	json_t *o;

	query_time(r->at, t, sizeof(t));
	record_service(r->app, r->service, svc, sizeof(svc));
	o = json_pack("{s:I, s:I, s:s, s:s?, s:s, s:s, s:s, s:i, s:I, s:I, "
	    "s:I, s:I, s:s}", "id", (json_int_t)r->id, "at", (json_int_t)r->at,
	    "time", t, "service", strcmp(svc, "-") != 0 ? svc : NULL,
	    "method", r->method, "host", r->host, "path", r->path,
	    "status", r->status, "duration_us", (json_int_t)r->duration_us,
	    "wait_us", (json_int_t)r->wait_us,
	    "bytes_in", (json_int_t)r->bytes_in,
	    "bytes_out", (json_int_t)r->bytes_out, "outcome", r->outcome);
	if (o != NULL) {
		json_object_set_new(o, "wake_id", r->wake_id != 0 ?
		    json_integer(r->wake_id) : json_null());
		json_object_set_new(o, "client", r->client[0] != '\0' ?
		    json_string(r->client) : json_null());
	}
	return o;
}

/*
 * Events as a table (aligned on a terminal unless streaming), a JSON
 * array, or JSON lines (lines: tail).
 */
static int
print_events(struct query *q, const struct store_event *v, size_t n,
    int lines)
{
	static const char *const header[] = {
		"TIME", "KIND", "SERVICE", "DETAIL",
	};
	char t[EV_TIME_MAX], svc[EV_ID_MAX + 2], detail[EV_LINE_MAX];
	const char *row[4];
	struct table *tb;
	json_t *all, *o;
	size_t i;
	int r;

	if (q->json) {
		all = json_array();
		for (i = 0; i < n; i++) {
			o = event_json(&v[i]);
			if (lines) {
				json_dumpf(o, stdout, JSON_COMPACT |
				    JSON_SORT_KEYS);
				putchar('\n');
				json_decref(o);
			} else
				json_array_append_new(all, o);
		}
		if (!lines) {
			json_dumpf(all, stdout, JSON_INDENT(2) |
			    JSON_SORT_KEYS);
			putchar('\n');
		}
		json_decref(all);
		return 0;
	}
	tb = table_new(4, header);
	for (i = 0; i < n; i++) {
		query_time(v[i].at, t, sizeof(t));
		record_service(v[i].app, v[i].service, svc, sizeof(svc));
		record_detail_text(v[i].detail_json, detail, sizeof(detail));
		row[0] = t;
		row[1] = v[i].kind;
		row[2] = svc;
		row[3] = detail[0] != '\0' ? detail : "-";
		(void)table_add(tb, row);
	}
	r = table_print(tb, !lines && isatty(STDOUT_FILENO));
	table_free(tb);
	return r;
}

static int
cmd_list(struct query *q)
{
	struct store_event *v;
	size_t n;
	int r;

	if (store_event_list(q->store, q->app[0] != '\0' ? q->app : NULL,
	    q->has_service ? q->service : NULL, q->kind, q->since, q->limit,
	    &v, &n) == -1)
		return q_failed(q, "list events");
	r = print_events(q, v, n, 0);
	store_event_free(v, n);
	return r == -1 ? EX_OSERR : EX_OK;
}

/* The last events, then (-f) every new one, polling by id. */
static int
cmd_tail(struct query *q)
{
	const struct timespec pause = { 0, Q_POLL_MS * 1000000L };
	struct store_event *v;
	int64_t last = 0;
	size_t n, i;

	/* -n 0: nothing old, but where to follow from. */
	if (store_event_list(q->store, NULL, NULL, NULL, 0,
	    q->limit == 0 ? 1 : q->limit, &v, &n) == -1)
		return q_failed(q, "list events");
	if (q->limit > 0)
		(void)print_events(q, v, n, q->follow || q->json);
	for (i = 0; i < n; i++)
		if (v[i].id > last)
			last = v[i].id;
	store_event_free(v, n);
	while (q->follow) {
		if (fflush(stdout) == EOF || ferror(stdout))
			return EX_OK;
		(void)nanosleep(&pause, NULL);
		if (store_event_after(q->store, last, Q_POLL_BATCH, &v,
		    &n) == -1) {
			log_warnx("unable to read events: %s",
			    store_error(q->store));
			continue;
		}
		(void)print_events(q, v, n, 1);
		if (n > 0)
			last = v[n - 1].id;
		store_event_free(v, n);
	}
	return EX_OK;
}

static int
cmd_requests(struct query *q)
{
	static const char *const header[] = {
		"TIME", "SERVICE", "METHOD", "HOST", "PATH", "STATUS",
		"DURATION_US", "WAIT_US", "WAKE", "BYTES_IN", "BYTES_OUT",
		"OUTCOME", "CLIENT",
	};
	char t[EV_TIME_MAX], svc[EV_ID_MAX + 2], num[6][24];
	struct store_request *v;
	const char *row[13];
	struct table *tb;
	json_t *all;
	size_t n, i, k;
	int r = 0;

	if (store_request_list(q->store, q->app[0] != '\0' ? q->app : NULL,
	    q->has_service ? q->service : NULL, q->status, q->since, q->limit,
	    &v, &n) == -1)
		return q_failed(q, "list requests");
	if (q->json) {
		all = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(all, request_json(&v[i]));
		json_dumpf(all, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
		json_decref(all);
		free(v);
		return EX_OK;
	}
	tb = table_new(13, header);
	for (i = 0; i < n; i++) {
		query_time(v[i].at, t, sizeof(t));
		record_service(v[i].app, v[i].service, svc, sizeof(svc));
		snprintf(num[0], sizeof(num[0]), "%d", v[i].status);
		snprintf(num[1], sizeof(num[1]), "%jd",
		    (intmax_t)v[i].duration_us);
		snprintf(num[2], sizeof(num[2]), "%jd", (intmax_t)v[i].wait_us);
		if (v[i].wake_id != 0)
			snprintf(num[3], sizeof(num[3]), "%jd",
			    (intmax_t)v[i].wake_id);
		else
			strlcpy(num[3], "-", sizeof(num[3]));
		snprintf(num[4], sizeof(num[4]), "%jd",
		    (intmax_t)v[i].bytes_in);
		snprintf(num[5], sizeof(num[5]), "%jd",
		    (intmax_t)v[i].bytes_out);
		row[0] = t;
		row[1] = svc;
		row[2] = v[i].method;
		row[3] = v[i].host[0] != '\0' ? v[i].host : "-";
		row[4] = v[i].path[0] != '\0' ? v[i].path : "-";
		for (k = 0; k < 6; k++)
			row[5 + k] = num[k];
		row[11] = v[i].outcome;
		row[12] = v[i].client[0] != '\0' ? v[i].client : "-";
		(void)table_add(tb, row);
	}
	r = table_print(tb, isatty(STDOUT_FILENO));
	table_free(tb);
	free(v);
	return r == -1 ? EX_OSERR : EX_OK;
}

/* git's rule: output that could not be written is an error. */
static int
finish_stdout(int code)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		if (errno == EPIPE)
			return code;
		log_error("unable to write standard output");
		return EX_IOERR;
	}
	return code;
}
