/*
 * runjson.c - a run as JSON (runjson.h), for hk-jobs and hk alike.
 */
#include <jansson.h>

#include "runjson.h"
#include "store.h"

json_t *
runjson(const struct store_run *w)
{
	json_t *body = json_null();

	if (w->body != NULL &&
	    (body = json_stringn((const char *)w->body, w->body_len)) == NULL)
		body = json_null();
	return json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:I, s:s, "
	    "s:I, s:I, s:I, s:i, s:I, s:o, s:s}", "id", w->id, "app", w->app,
	    "service", w->service, "revision", (json_int_t)w->revision,
	    "trigger", w->trigger, "method", w->method, "path", w->path,
	    "event_bytes", (json_int_t)w->event_bytes, "phase", w->phase,
	    "created_at", (json_int_t)w->created_at,
	    "started_at", (json_int_t)w->started_at,
	    "finished_at", (json_int_t)w->finished_at, "status", w->status,
	    "duration_us", (json_int_t)w->duration_us, "body", body,
	    "reason", w->reason);
}
