/*
 * util.c - how hk shows a service: its state, times, hosts and policy;
 * and the [--json] flag of the commands that list.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include <jansson.h>

#include "hk.h"
#include "log.h"

/*
 * The state an operator sees.  hk.toml's enabled = false wins, then a
 * manual stop; then the instance's own
 * state; with no instance a serverless service is sleeping and an ordinary
 * one is pending (hk-scale has not started it yet).
 */
const char *
service_state(const struct store_service *svc,
    const struct store_instance *inst)
{
	if (svc->desired == STORE_DESIRED_STOPPED)
		return enabled_off(svc->spec_json) ? "disabled" : "stopped";
	if (inst != NULL && inst->state[0] != '\0')
		return inst->state;
	return svc->serverless ? "sleeping" : "pending";
}

/* Unix milliseconds as RFC 3339 UTC; 0 is "-". */
void
fmt_time(char *buf, size_t len, long long ms)
{
	struct tm tm;
	time_t t;

	if (ms <= 0) {
		strlcpy(buf, "-", len);
		return;
	}
	t = (time_t)(ms / 1000);
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
fmt_hosts(char *buf, size_t len, const char *spec_json)
{
	json_t *spec, *h;
	size_t i;

	buf[0] = '\0';
	spec = json_loads(spec_json, 0, NULL);
	json_array_foreach(json_object_get(spec, "hosts"), i, h) {
		if (i > 0)
			strlcat(buf, ",", len);
		strlcat(buf, json_string_value(h) ? json_string_value(h) : "",
		    len);
	}
	if (buf[0] == '\0')
		strlcpy(buf, "-", len);
	json_decref(spec);
}

void
fmt_policy(char *buf, size_t len, const char *spec_json)
{
	json_t *spec, *p;

	spec = json_loads(spec_json, 0, NULL);
	p = json_object_get(spec, "serverless");
	if (!json_is_object(p))
		strlcpy(buf, "always-on", len);
	else
		snprintf(buf, len, "min=%lld idle=%llds start=%llds "
		    "request=%llds concurrency=%lld",
		    (long long)json_integer_value(json_object_get(p,
		    "min_replicas")),
		    (long long)json_integer_value(json_object_get(p,
		    "idle_seconds")),
		    (long long)json_integer_value(json_object_get(p,
		    "startup_timeout_seconds")),
		    (long long)json_integer_value(json_object_get(p,
		    "request_timeout_seconds")),
		    (long long)json_integer_value(json_object_get(p,
		    "max_concurrency")));
	/* Shown only when set, as the spec keeps it. */
	if (json_is_string(json_object_get(p, "idle_action"))) {
		strlcat(buf, " idle_action=", len);
		strlcat(buf, json_string_value(json_object_get(p,
		    "idle_action")), len);
	}
	if (json_is_integer(json_object_get(p, "suspend_max_seconds")))
		snprintf(buf + strlen(buf), len - strlen(buf),
		    " suspend_max=%llds", (long long)json_integer_value(
		    json_object_get(p, "suspend_max_seconds")));
	if (json_is_string(json_object_get(p, "idle_check"))) {
		strlcat(buf, " idle_check=", len);
		strlcat(buf, json_string_value(json_object_get(p,
		    "idle_check")), len);
	}
	if (json_is_integer(json_object_get(p, "idle_check_max_seconds")))
		snprintf(buf + strlen(buf), len - strlen(buf),
		    " idle_check_max=%llds", (long long)json_integer_value(
		    json_object_get(p, "idle_check_max_seconds")));
	json_decref(spec);
}

/*
 * [--json] and nargs operands; the index of the first operand, or -1 after
 * the usage line on stderr.
 */
int
hk_json_flag(int argc, char **argv, const char *synopsis, int nargs,
    int *as_json)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	*as_json = 0;
	while ((ch = getopt_long(argc, argv, "hj", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			*as_json = 1;
			break;
		case 'h':
			printf("usage: hk [-v] [-f config] %s\n", synopsis);
			exit(EX_OK);
		default:
			fprintf(stderr, "usage: hk [-v] [-f config] %s\n",
			    synopsis);
			return -1;
		}
	}
	if (argc - optind != nargs) {
		fprintf(stderr, "usage: hk [-v] [-f config] %s\n", synopsis);
		return -1;
	}
	return optind;
}

/*
 * --wait [--timeout S], as hk invoke and hk wake take them: one option
 * seen; after the last, hk_wait_done.  -1 after the reason on stderr.
 */
int
hk_wait_opt(int ch, struct hk_wait *w)
{
	const char *errstr;

	if (ch == 'w') {
		w->wait = 1;
		return 0;
	}
	w->timeout = (int)strtonum(optarg, 1, 86400, &errstr);
	if (errstr != NULL) {
		log_errorx("--timeout %s: %s (1..86400)", optarg, errstr);
		return -1;
	}
	w->timeout_given = 1;
	return 0;
}

/* --timeout means nothing without --wait: 0, or -1 said. */
int
hk_wait_done(const struct hk_wait *w)
{
	if (w->timeout_given && !w->wait) {
		log_errorx("--timeout: only with --wait");
		return -1;
	}
	return 0;
}

/* Monotonic milliseconds, for the deadlines of a command's waits. */
int64_t
hk_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
