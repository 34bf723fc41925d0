/*
 * invoke.c - "hk invoke": asks hk-jobs for a run of a service with a JSON
 * event and prints its id; with --wait, stays on jobs.sock until hk-jobs
 * tells the run's end (no polling), prints the response body, and exits
 * 0 if it succeeded, 75 if not.  The run is hk-jobs's: it goes on if hk
 * exits first.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "hk.h"
#include "ipc.h"
#include "log.h"

#define INVOKE_USAGE \
	"usage: hk [-v] [-f config] invoke [--event json | --event @file] " \
	"[--path path] [--method method] [--wait [--timeout seconds]] " \
	"service\n"
#define INVOKE_EVENT_MAX	(128 * 1024)	/* within one message */
#define INVOKE_REPLY_MS		5000
#define INVOKE_WAIT_MS		(700 * 1000)	/* past hk-jobs's own */

struct invoke {
	const char	*event;		/* text, or @file */
	const char	*path;
	const char	*method;
	struct hk_wait	 wt;		/* timeout 0 = INVOKE_WAIT_MS */
	const char	*service;
};

static int	 parse_args(int, char **, struct invoke *);
static int	 load_event(const char *, json_t **);
static int	 call(struct hk *, const struct invoke *, json_t *);
static int	 await_end(int, const struct invoke *, const char *);

static int
parse_args(int argc, char **argv, struct invoke *iv)
{
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "method", required_argument, NULL, 'm' },
		{ "path", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "wait", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'e':
			iv->event = optarg;
			break;
		case 'h':
			fputs(INVOKE_USAGE, stdout);
			exit(EX_OK);
		case 'm':
			iv->method = optarg;
			break;
		case 'p':
			iv->path = optarg;
			break;
		case 't':
		case 'w':
			if (hk_wait_opt(ch, &iv->wt) == -1)
				goto bad;
			break;
		default:
			goto bad;
		}
	}
	if (hk_wait_done(&iv->wt) == -1)
		goto bad;
	if (argc - optind != 1)
		goto bad;
	iv->service = argv[optind];
	return 0;
bad:
	fputs(INVOKE_USAGE, stderr);
	return -1;
}

/* The event: JSON text, or "@file" holding it; checked here first. */
static int
load_event(const char *arg, json_t **out)
{
	json_error_t je;
	FILE *fp;

	*out = NULL;
	if (arg == NULL)
		return EX_OK;
	if (arg[0] != '@') {
		*out = json_loads(arg, JSON_DECODE_ANY |
		    JSON_REJECT_DUPLICATES, &je);
	} else {
		if ((fp = fopen(arg + 1, "r")) == NULL) {
			log_error("--event %s", arg);
			return EX_NOINPUT;
		}
		*out = json_loadf(fp, JSON_DECODE_ANY |
		    JSON_REJECT_DUPLICATES, &je);
		fclose(fp);
	}
	if (*out == NULL) {
		log_errorx("--event: not JSON: %d:%d: %s", je.line,
		    je.column, je.text);
		return EX_DATAERR;
	}
	if ((size_t)je.position > INVOKE_EVENT_MAX) {
		log_errorx("--event: longer than %d bytes", INVOKE_EVENT_MAX);
		json_decref(*out);
		return EX_DATAERR;
	}
	return EX_OK;
}

int
cmd_invoke(struct hk *hk, int argc, char **argv)
{
	struct invoke iv;
	json_t *event;
	int code;

	memset(&iv, 0, sizeof(iv));
	iv.path = "/";
	iv.method = "POST";
	if (parse_args(argc, argv, &iv) == -1)
		return EX_USAGE;
	if ((code = load_event(iv.event, &event)) != EX_OK)
		return code;
	code = call(hk, &iv, event);
	json_decref(event);
	return code;
}

static int
call(struct hk *hk, const struct invoke *iv, json_t *event)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	json_t *req, *reply;
	const char *id;
	int fd, code;

	snprintf(path, sizeof(path), "%s/jobs.sock", hk->cfg.runtime_dir);
	if ((fd = ipc_connect(path, err, sizeof(err))) == -1) {
		log_errorx("hk-jobs is not running: %s", err);
		return EX_UNAVAILABLE;
	}
	req = json_pack("{s:s, s:s, s:s, s:s, s:b}", "op", "invoke",
	    "service", iv->service, "path", iv->path, "method", iv->method,
	    "wait", iv->wt.wait);
	if (req != NULL && event != NULL)
		json_object_set(req, "event", event);
	if (req == NULL || ipc_send(fd, req, err, sizeof(err)) == -1 ||
	    (reply = ipc_recv(fd, INVOKE_REPLY_MS, err, sizeof(err))) ==
	    NULL) {
		log_errorx("jobs.sock: %s", req == NULL ? "out of memory" :
		    err);
		json_decref(req);
		close(fd);
		return EX_UNAVAILABLE;
	}
	json_decref(req);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		log_errorx("invoke: %s",
		    json_string_value(json_object_get(reply, "error")));
		code = json_is_true(json_object_get(reply, "input")) ?
		    EX_DATAERR : EX_UNAVAILABLE;
	} else if ((id = json_string_value(json_object_get(reply, "id"))) ==
	    NULL) {
		log_errorx("jobs.sock: a reply without an id");
		code = EX_UNAVAILABLE;
	} else if (!iv->wt.wait) {
		printf("%s\n", id);
		code = EX_OK;
	} else
		code = await_end(fd, iv, id);
	json_decref(reply);
	close(fd);
	return code;
}

/* --wait: the id on stderr, the body on stdout, the phase as the code. */
static int
await_end(int fd, const struct invoke *iv, const char *id)
{
	char err[IPC_ERR_LEN];
	const char *phase, *body, *reason;
	json_t *msg, *run;
	int code;

	fprintf(stderr, "hk: run %s\n", id);
	msg = ipc_recv(fd, iv->wt.timeout > 0 ? iv->wt.timeout * 1000 :
	    INVOKE_WAIT_MS, err, sizeof(err));
	if (msg == NULL) {
		if (errno == ETIMEDOUT)
			log_errorx("run %s: not ended within %d seconds; "
			    "it goes on (hk runs show %s)", id, iv->wt.timeout,
			    id);
		else
			log_errorx("run %s: hk-jobs gone: %s", id, err);
		return EX_TEMPFAIL;
	}
	run = json_object_get(msg, "run");
	phase = json_string_value(json_object_get(run, "phase"));
	body = json_string_value(json_object_get(run, "body"));
	reason = json_string_value(json_object_get(run, "reason"));
	if (body != NULL)
		fputs(body, stdout);
	if (phase != NULL && strcmp(phase, "Succeeded") == 0)
		code = EX_OK;
	else {
		log_errorx("run %s: %s%s%s", id, phase ? phase : "unknown",
		    reason && *reason ? ": " : "", reason ? reason : "");
		code = EX_TEMPFAIL;
	}
	json_decref(msg);
	return code;
}
