/*
 * wait.c - "hk apply --wait": until every service whose revision changed
 * is ready on it, one of them failed, or the time is up.
 *
 * Event-driven: we subscribe on hk-scale's scale.sock before telling it to
 * reload, so that no message about the new revisions can pass unseen, and
 * hk-scale tells us each "ready" (with the instance's revision) and each
 * "failed" (with the revision that failed).  Messages about an older
 * revision are ignored.  A serverless service is ready once it passed its
 * readiness gate on the revision, and hk-scale says "ready" then, even if
 * it sleeps again at once.  The store is read once after subscribing, for
 * what another reload already made ready before we listened.
 */
#include <sys/socket.h>

#include <errno.h>
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

#define WAIT_TICK_MS	1000	/* a terminal's progress line, redrawn */
#define WAIT_ID_MAX	(2 * STORE_NAME_MAX + 2)

/* One service we wait for. */
struct waited {
	char	 app[STORE_NAME_MAX + 1];
	char	 name[STORE_NAME_MAX + 1];
	char	 id[WAIT_ID_MAX];
	int64_t	 revision;
	int	 serverless;
	int	 ready;
};

struct waitset {
	struct waited	*w;
	size_t		 n;
	size_t		 left;
	int		 tty;		/* stdout is a terminal: progress */
	int64_t		 start;		/* monotonic ms */
};

static int	collect(struct hk *, json_t *, struct waitset *);
static void	from_store(struct hk *, struct waitset *);
static struct waited *find(struct waitset *, const char *);
static void	settle(struct waitset *, struct waited *);
static int	on_message(struct waitset *, json_t *);
static const char *first_waiting(const struct waitset *);
static void	progress(const struct waitset *);
static void	clear_progress(const struct waitset *);

/*
 * Connects to scale.sock and subscribes: -1 (with the exit code in
 * *code) when hk-scale is not there, as nothing could then be waited for.
 */
int
wait_subscribe(struct hk *hk, int *code)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	json_t *req, *reply;
	int fd;

	snprintf(path, sizeof(path), "%s/scale.sock", hk->cfg.runtime_dir);
	if ((fd = ipc_connect(path, err, sizeof(err))) == -1) {
		log_errorx("apply --wait: hk-scale is not running: %s", err);
		*code = EX_UNAVAILABLE;
		return -1;
	}
	req = json_pack("{s:s}", "op", "subscribe");
	if (ipc_send(fd, req, err, sizeof(err)) == -1 ||
	    (reply = ipc_recv(fd, 2000, err, sizeof(err))) == NULL) {
		json_decref(req);
		close(fd);
		log_errorx("apply --wait: scale.sock: %s", err);
		*code = EX_UNAVAILABLE;
		return -1;
	}
	json_decref(req);
	json_decref(reply);
	*code = EX_OK;
	return fd;
}

/* Services created or updated, and not stopped: what we wait for. */
static int
collect(struct hk *hk, json_t *report, struct waitset *ws)
{
	struct store_service svc;
	const char *res;
	json_t *r;
	size_t idx;
	int found;

	if ((ws->w = calloc(json_array_size(report) + 1,
	    sizeof(*ws->w))) == NULL)
		fatal(EX_OSERR, "calloc");
	json_array_foreach(report, idx, r) {
		res = json_string_value(json_object_get(r, "result"));
		/* Jobs' runs are waited for after (apply_runs.c). */
		if (json_object_get(r, "job") != NULL ||
		    json_object_get(r, "schedule") != NULL)
			continue;
		if (res == NULL || (strcmp(res, "created") != 0 &&
		    strcmp(res, "updated") != 0))
			continue;
		found = store_service_get(hk->store, json_string_value(
		    json_object_get(r, "app")), json_string_value(
		    json_object_get(r, "service")), &svc);
		if (found == -1)
			return hk_store_failed(hk, "read service");
		if (found == 1)
			continue;
		if (svc.desired != STORE_DESIRED_STOPPED) {
			struct waited *w = &ws->w[ws->n++];

			strlcpy(w->app, svc.app, sizeof(w->app));
			strlcpy(w->name, svc.name, sizeof(w->name));
			snprintf(w->id, sizeof(w->id), "%s/%s", svc.app,
			    svc.name);
			w->revision = svc.revision;
			w->serverless = svc.serverless;
		}
		free(svc.spec_json);
	}
	ws->left = ws->n;
	return EX_OK;
}

/* Ready before we subscribed: a running row, or a passed gate. */
static void
from_store(struct hk *hk, struct waitset *ws)
{
	struct store_instance row;
	char key[WAIT_ID_MAX + 32], *val;
	size_t i;

	for (i = 0; i < ws->n; i++) {
		struct waited *w = &ws->w[i];

		if (store_instance_get(hk->store, w->app, w->name,
		    &row) == 0 && strcmp(row.state, "running") == 0 &&
		    row.revision >= w->revision) {
			settle(ws, w);
			continue;
		}
		snprintf(key, sizeof(key), "hk-scale.gate.%s", w->id);
		val = NULL;
		if (w->serverless && store_setting_get(hk->store, key,
		    &val) == 0 && strtonum(val, 0, INT64_MAX, NULL) >=
		    w->revision)
			settle(ws, w);
		free(val);
	}
}

static struct waited *
find(struct waitset *ws, const char *id)
{
	size_t i;

	for (i = 0; id != NULL && i < ws->n; i++)
		if (strcmp(ws->w[i].id, id) == 0)
			return &ws->w[i];
	return NULL;
}

static void
settle(struct waitset *ws, struct waited *w)
{
	if (w->ready)
		return;
	w->ready = 1;
	ws->left--;
	clear_progress(ws);
	printf("%s revision %lld ready\n", w->id, (long long)w->revision);
	fflush(stdout);
}

/* 1: a service failed on its new revision (said on stdout); else 0. */
static int
on_message(struct waitset *ws, json_t *msg)
{
	const char *op = ipc_op(msg), *reason;
	struct waited *w;
	int64_t rev;

	w = find(ws, json_string_value(json_object_get(msg, "service")));
	if (op == NULL || w == NULL || w->ready)
		return 0;
	rev = json_integer_value(json_object_get(msg, "revision"));
	if (strcmp(op, "ready") == 0 && rev >= w->revision)
		settle(ws, w);
	else if ((strcmp(op, "failed") == 0 ||
	    strcmp(op, "gate_failed") == 0) && rev >= w->revision) {
		reason = json_string_value(json_object_get(msg, "reason"));
		clear_progress(ws);
		printf("%s revision %lld failed: %s\n", w->id,
		    (long long)w->revision, reason != NULL ? reason :
		    "no reason given");
		return 1;
	}
	return 0;
}

static const char *
first_waiting(const struct waitset *ws)
{
	size_t i;

	for (i = 0; i < ws->n; i++)
		if (!ws->w[i].ready)
			return ws->w[i].id;
	return "";
}

/* On a terminal: which services we still wait for, rewritten in place. */
static void
progress(const struct waitset *ws)
{
	size_t i;

	if (!ws->tty || ws->left == 0)
		return;
	printf("\r\033[Kwaiting %llds for", (long long)((hk_mono_ms() -
	    ws->start) / 1000));
	for (i = 0; i < ws->n; i++)
		if (!ws->w[i].ready)
			printf(" %s (revision %lld)", ws->w[i].id,
			    (long long)ws->w[i].revision);
	fflush(stdout);
}

static void
clear_progress(const struct waitset *ws)
{
	if (ws->tty)
		fputs("\r\033[K", stdout);
}

/*
 * After the reload: reads hk-scale's messages until every service is
 * ready (0), one failed (75), the timeout (75, 0 = none) or a lost
 * connection (69).
 */
int
wait_deploy(struct hk *hk, int fd, json_t *report, int timeout_s)
{
	struct waitset ws;
	char err[IPC_ERR_LEN];
	int64_t deadline, left;
	json_t *msg;
	int code = EX_OK, step;

	memset(&ws, 0, sizeof(ws));
	ws.tty = isatty(STDOUT_FILENO);
	ws.start = hk_mono_ms();
	deadline = timeout_s > 0 ? ws.start + (int64_t)timeout_s * 1000 : 0;
	if ((code = collect(hk, report, &ws)) == EX_OK)
		from_store(hk, &ws);
	while (code == EX_OK && ws.left > 0) {
		progress(&ws);
		left = deadline > 0 ? deadline - hk_mono_ms() : WAIT_TICK_MS;
		if (left <= 0) {
			clear_progress(&ws);
			log_errorx("apply --wait: %zu of %zu services not "
			    "ready within %d s: %s%s", ws.left, ws.n, timeout_s,
			    first_waiting(&ws), ws.left > 1 ? ", ..." : "");
			code = EX_TEMPFAIL;
			break;
		}
		step = left > WAIT_TICK_MS && ws.tty ? WAIT_TICK_MS : (int)left;
		if ((msg = ipc_recv(fd, step, err, sizeof(err))) == NULL) {
			if (errno == ETIMEDOUT)
				continue;
			clear_progress(&ws);
			log_errorx("apply --wait: scale.sock: %s", err);
			code = EX_UNAVAILABLE;
			break;
		}
		if (on_message(&ws, msg))
			code = EX_TEMPFAIL;
		json_decref(msg);
	}
	free(ws.w);
	return code;
}
