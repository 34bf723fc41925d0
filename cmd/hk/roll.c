/*
 * roll.c - the "roll:" of hk status: a new revision of an ordinary
 * service with replicas replaces them one at a time (hk-scale(8),
 * Replicas).  While replicas of an older revision run beside replica 0's,
 * the roll is under way, or stopped at a replica whose start failed
 * (hk-scale's StartFailed event with roll "stopped", since replica 0 of
 * that revision started), and the older ones go on serving.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "hk.h"
#include "store.h"

static int	 is_of(const struct store_instance *,
		    const struct store_service *);
static json_t	*roll_stop_event(struct hk *, const struct store_service *,
		    int64_t, int64_t);

static int
is_of(const struct store_instance *in, const struct store_service *svc)
{
	return strcmp(in->app, svc->app) == 0 &&
	    strcmp(in->service, svc->name) == 0;
}

/*
 * The detail of the newest StartFailed that stopped the roll to rev, at
 * or after since (replica 0's start), or NULL.
 */
static json_t *
roll_stop_event(struct hk *hk, const struct store_service *svc, int64_t rev,
    int64_t since)
{
	struct store_event *ev = NULL;
	const char *roll;
	json_t *d;
	size_t n = 0, i;

	if (store_event_list(hk->store, svc->app, svc->name, "StartFailed",
	    since, 0, &ev, &n) == -1)
		return NULL;
	for (i = n; i > 0; i--) {
		if (ev[i - 1].detail_json == NULL ||
		    (d = json_loads(ev[i - 1].detail_json, 0, NULL)) == NULL)
			continue;
		roll = json_string_value(json_object_get(d, "roll"));
		if (roll != NULL && strcmp(roll, "stopped") == 0 &&
		    json_integer_value(json_object_get(d, "revision")) == rev)
			break;
		json_decref(d);
	}
	if (i == 0)
		d = NULL;
	store_event_free(ev, n);
	return d;
}

/*
 * {"state": "under way" | "stopped", "revision": replica 0's, "replicas":
 * rows in all, "at_revision": rows of it, "older": [[replica, revision]],
 * and once stopped "replica" and "reason"}, or NULL when every replica
 * runs replica 0's revision.
 */
json_t *
hk_roll_json(struct hk *hk, const struct store_service *svc,
    const struct store_instance *insts, size_t n)
{
	const struct store_instance *lead = NULL;
	json_t *o, *older, *stop;
	size_t i;
	int rows = 0, at = 0;

	for (i = 0; i < n; i++)
		if (is_of(&insts[i], svc) && insts[i].replica == 0)
			lead = &insts[i];
	if (svc->serverless || lead == NULL)
		return NULL;
	older = json_array();
	for (i = 0; i < n; i++) {
		if (!is_of(&insts[i], svc))
			continue;
		rows++;
		if (insts[i].revision == lead->revision)
			at++;
		else
			json_array_append_new(older, json_pack("[i, I]",
			    insts[i].replica, (json_int_t)insts[i].revision));
	}
	if (json_array_size(older) == 0) {
		json_decref(older);
		return NULL;
	}
	o = json_pack("{s:s, s:I, s:i, s:i, s:o}", "state", "under way",
	    "revision", (json_int_t)lead->revision, "replicas", rows,
	    "at_revision", at, "older", older);
	stop = roll_stop_event(hk, svc, lead->revision, lead->started_at);
	if (o != NULL && stop != NULL) {
		json_object_set_new(o, "state", json_string("stopped"));
		json_object_set(o, "replica", json_object_get(stop,
		    "replica"));
		json_object_set(o, "reason", json_object_get(stop, "reason"));
	}
	json_decref(stop);
	return o;
}

/*
 * "roll:  stopped at replica 1 (revision 3): REASON; replica 2 of
 * revision 2 goes on serving", or "roll:  under way to revision 3: 2 of
 * 3 replicas; replica 2 of revision 2 serves meanwhile".
 */
void
hk_roll_print(const json_t *o)
{
	const json_t *older, *e;
	const char *state, *reason;
	size_t i;

	if (o == NULL)
		return;
	state = json_string_value(json_object_get(o, "state"));
	older = json_object_get(o, "older");
	if (strcmp(state, "stopped") == 0) {
		reason = json_string_value(json_object_get(o, "reason"));
		printf("%-12s stopped at replica %lld (revision %lld): %s;",
		    "roll:", (long long)json_integer_value(json_object_get(o,
		    "replica")), (long long)json_integer_value(
		    json_object_get(o, "revision")), reason != NULL ? reason :
		    "-");
	} else
		printf("%-12s under way to revision %lld: %lld of %lld "
		    "replicas;", "roll:", (long long)json_integer_value(
		    json_object_get(o, "revision")), (long long)
		    json_integer_value(json_object_get(o, "at_revision")),
		    (long long)json_integer_value(json_object_get(o,
		    "replicas")));
	json_array_foreach(older, i, e)
		printf("%s replica %lld of revision %lld", i > 0 ? "," : "",
		    (long long)json_integer_value(json_array_get(e, 0)),
		    (long long)json_integer_value(json_array_get(e, 1)));
	if (strcmp(state, "stopped") == 0)
		printf(" %s on serving\n", i > 1 ? "go" : "goes");
	else
		printf(" %s meanwhile\n", i > 1 ? "serve" : "serves");
}
