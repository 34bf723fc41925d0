/*
 * daemons.c - tell the running daemons that the store changed.
 *
 * The store is written first and is the truth; this is only a nudge so that
 * the daemons act now rather than at their next reload.  A daemon that is not
 * running (no socket, or nobody listening) is skipped: it reads the store
 * when it starts.  One that answers with an error is reported.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "hk.h"
#include "ipc.h"
#include "log.h"

#define DAEMON_REPLY_MS	2000

static const char *const daemon_sockets[] = {
	"scale.sock", "activate.sock", "idle.sock", "jobs.sock",
};

void
daemons_tell(const struct hk *hk, const char *op, const char *service)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	json_t *req, *reply;
	size_t i;

	req = service == NULL ? json_pack("{s:s}", "op", op) :
	    json_pack("{s:s, s:s}", "op", op, "service", service);
	for (i = 0; i < sizeof(daemon_sockets) / sizeof(daemon_sockets[0]);
	    i++) {
		snprintf(path, sizeof(path), "%s/%s", hk->cfg.runtime_dir,
		    daemon_sockets[i]);
		if (ipc_call(path, req, &reply, DAEMON_REPLY_MS, err,
		    sizeof(err)) == -1) {
			if (errno != ENOENT && errno != ECONNREFUSED)
				log_warnx("%s: %s", op, err);
			else
				log_debug("%s: skipped: %s", op, err);
			continue;
		}
		if (json_is_false(json_object_get(reply, "ok")))
			log_warnx("%s: %s refused: %s", op, daemon_sockets[i],
			    json_string_value(json_object_get(reply,
			    "error")) ? json_string_value(json_object_get(
			    reply, "error")) : "no reason given");
		else
			log_debug("%s: %s done", op, daemon_sockets[i]);
		json_decref(reply);
	}
	json_decref(req);
}
