/*
 * wake.c - "hk wake": start a sleeping serverless service without a
 * request, before a known burst or from another proxy's health hook.
 *
 * hk-scale's own "wake" does it, as for the gateway's first request; the
 * running instance then announces itself to every subscriber (gateway,
 * hk-idle) and sleeps again after its idle time like any other.  With
 * --wait we subscribe before asking, so that its "ready" (or "failed")
 * cannot pass unseen; a service already running is announced to a new
 * subscriber at once.  A stopped service stays stopped: "hk stop" is the
 * operator's word, and only "hk start" takes it back.
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

#include "hk.h"
#include "ipc.h"
#include "log.h"
#include "store.h"

#define WAKE_USAGE \
	"usage: hk [-v] [-f config] wake [--wait [--timeout seconds]] " \
	"service\n"
#define WAKE_REPLY_MS	5000
#define WAKE_WAIT_S	310	/* past the longest startup deadline */
#define WAKE_ID_MAX	(2 * STORE_NAME_MAX + 2)

struct wake {
	struct hk_wait	 wt;
	const char	*service;
	char		 id[WAKE_ID_MAX];
};

static int	parse_args(int, char **, struct wake *);
static int	subscribe(struct hk *);
static int	ask(struct hk *, const struct wake *);
static int	refused(const struct wake *, const char *);
static int	await_ready(int, const struct wake *);

static int
parse_args(int argc, char **argv, struct wake *w)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "timeout", required_argument, NULL, 't' },
		{ "wait", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	w->wt.timeout = WAKE_WAIT_S;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			fputs(WAKE_USAGE, stdout);
			exit(EX_OK);
		case 't':
		case 'w':
			if (hk_wait_opt(ch, &w->wt) == -1)
				goto bad;
			break;
		default:
			goto bad;
		}
	}
	if (hk_wait_done(&w->wt) == -1)
		goto bad;
	if (argc - optind != 1)
		goto bad;
	w->service = argv[optind];
	return 0;
bad:
	fputs(WAKE_USAGE, stderr);
	return -1;
}

/* A subscription on scale.sock: its fd, or -1 (hk-scale is absent). */
static int
subscribe(struct hk *hk)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	json_t *req, *reply = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/scale.sock", hk->cfg.runtime_dir);
	if ((fd = ipc_connect(path, err, sizeof(err))) == -1) {
		log_errorx("hk-scale is not running: %s", err);
		return -1;
	}
	req = json_pack("{s:s}", "op", "subscribe");
	if (ipc_send(fd, req, err, sizeof(err)) == -1 ||
	    (reply = ipc_recv(fd, WAKE_REPLY_MS, err, sizeof(err))) == NULL) {
		log_errorx("scale.sock: %s", err);
		close(fd);
		fd = -1;
	}
	json_decref(req);
	json_decref(reply);
	return fd;
}

/* hk-scale's refusal, as an exit code. */
static int
refused(const struct wake *w, const char *why)
{
	if (strcmp(why, "stopped") == 0) {
		log_errorx("%s is stopped (hk start %s)", w->id, w->id);
		return EX_DATAERR;
	}
	if (strcmp(why, "disabled") == 0) {
		log_errorx("%s: disabled in hk.toml: set enabled = true and "
		    "apply", w->id);
		return EX_DATAERR;
	}
	if (strcmp(why, "not serverless") == 0) {
		log_errorx("%s is not serverless: it runs always", w->id);
		return EX_DATAERR;
	}
	if (strcmp(why, "unknown service") == 0) {
		/* applied, but hk-scale has not read the store since */
		log_errorx("%s: hk-scale does not know it yet", w->id);
		return EX_TEMPFAIL;
	}
	log_errorx("%s: hk-scale refused: %s", w->id, why);
	return EX_SOFTWARE;
}

static int
ask(struct hk *hk, const struct wake *w)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	json_t *req, *reply;
	const char *why;
	int code = EX_OK;

	snprintf(path, sizeof(path), "%s/scale.sock", hk->cfg.runtime_dir);
	req = json_pack("{s:s, s:s, s:s}", "op", "wake", "service", w->id,
	    "reason", "manual");
	if (ipc_call(path, req, &reply, WAKE_REPLY_MS, err,
	    sizeof(err)) == -1) {
		json_decref(req);
		if (errno == ENOENT || errno == ECONNREFUSED) {
			log_errorx("hk-scale is not running: %s", err);
			return EX_UNAVAILABLE;
		}
		log_errorx("scale.sock: %s", err);
		return EX_UNAVAILABLE;
	}
	json_decref(req);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		why = json_string_value(json_object_get(reply, "error"));
		code = refused(w, why != NULL ? why : "no reason given");
	}
	json_decref(reply);
	return code;
}

/* Until hk-scale says ready (0) or failed (75), the time (75), or EOF. */
static int
await_ready(int fd, const struct wake *w)
{
	char err[IPC_ERR_LEN];
	int64_t deadline = hk_mono_ms() + (int64_t)w->wt.timeout * 1000, left;
	const char *op, *id, *why;
	json_t *msg;
	int code = -1;

	while (code == -1) {
		if ((left = deadline - hk_mono_ms()) <= 0) {
			log_errorx("%s: not ready within %d s", w->id,
			    w->wt.timeout);
			return EX_TEMPFAIL;
		}
		if ((msg = ipc_recv(fd, (int)left, err, sizeof(err))) == NULL) {
			if (errno == ETIMEDOUT)
				continue;
			log_errorx("scale.sock: %s", err);
			return EX_UNAVAILABLE;
		}
		op = ipc_op(msg);
		id = json_string_value(json_object_get(msg, "service"));
		if (op != NULL && id != NULL && strcmp(id, w->id) == 0) {
			if (strcmp(op, "ready") == 0)
				code = EX_OK;
			else if (strcmp(op, "failed") == 0) {
				why = json_string_value(json_object_get(msg,
				    "reason"));
				log_errorx("%s: unable to start: %s", w->id,
				    why != NULL ? why : "no reason given");
				code = EX_TEMPFAIL;
			}
		}
		json_decref(msg);
	}
	return code;
}

int
cmd_wake(struct hk *hk, int argc, char **argv)
{
	struct store_service svc;
	struct wake w;
	int code, fd = -1;

	memset(&w, 0, sizeof(w));
	if (parse_args(argc, argv, &w) == -1)
		return EX_USAGE;
	if ((code = hk_store(hk)) != EX_OK)
		return code;
	if ((code = resolve_service(hk, w.service, &svc)) != EX_OK)
		return code;
	snprintf(w.id, sizeof(w.id), "%s/%s", svc.app, svc.name);
	if (!svc.serverless)
		code = refused(&w, "not serverless");
	else if (svc.desired == STORE_DESIRED_STOPPED &&
	    enabled_off(svc.spec_json))
		code = refused(&w, "disabled");
	else if (svc.desired == STORE_DESIRED_STOPPED)
		code = refused(&w, "stopped");
	store_service_clear(&svc);
	if (code != EX_OK)
		return code;
	if (w.wt.wait && (fd = subscribe(hk)) == -1)
		return EX_UNAVAILABLE;
	if ((code = ask(hk, &w)) == EX_OK && fd != -1)
		code = await_ready(fd, &w);
	if (fd != -1)
		close(fd);
	if (code == EX_OK)
		printf("%s\t%s\n", w.id, w.wt.wait ? "ready" : "waking");
	return code;
}
