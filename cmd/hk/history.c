/*
 * history.c - the revisions of a service: each one recorded as hk apply
 * (or hk secret set, or hk rollback) makes it, and "hk history", which
 * lists the kept ones with their gate, and says which one is current and
 * which one serves (hk-scale(8) "Releases": the current revision once it
 * passed its readiness gate, else the newest one that passed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "hk.h"
#include "log.h"
#include "srctree.h"
#include "store.h"

#define HISTORY_SYNOPSIS	"history [--json] service"

static void	history_row(struct table *, const struct store_revision *,
		    int64_t, int64_t);
static json_t	*history_json(const struct store_revision *, int64_t,
		    int64_t);

/*
 * A new revision: its row (pending until hk-scale sees it pass its
 * gate), with the code hash its spec names, and the Applied event.
 */
int
hk_revision_applied(struct hk *hk, const char *app, const char *service,
    int64_t revision, const char *spec_json)
{
	json_t *spec, *code;
	int r;

	spec = json_loads(spec_json, 0, NULL);
	code = json_object_get(spec, "code_hash");
	r = store_revision_add(hk->store, app, service, revision, spec_json,
	    json_is_string(code) ? json_string_value(code) : NULL);
	json_decref(spec);
	if (r == -1)
		return -1;
	return hk_record_applied(hk, app, service, revision);
}

/*
 * Which revision serves: the current one if it passed its gate, else
 * the newest that passed; 0 when none has.
 */
int64_t
hk_serving_revision(const struct store_revision *v, size_t n,
    int64_t current)
{
	int64_t best = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(v[i].gate, "passed") != 0)
			continue;
		if (v[i].revision == current)
			return current;
		if (v[i].revision < current && v[i].revision > best)
			best = v[i].revision;
	}
	return best;
}

static void
history_row(struct table *t, const struct store_revision *r,
    int64_t current, int64_t serving)
{
	char rev[24], at[32], code[SRCTREE_SHORT_LEN + 1], note[32];
	const char *row[6];

	snprintf(rev, sizeof(rev), "%lld", (long long)r->revision);
	fmt_time(at, sizeof(at), r->applied_at);
	snprintf(code, sizeof(code), "%.*s", SRCTREE_SHORT_LEN, r->code_hash);
	snprintf(note, sizeof(note), "%s%s%s",
	    r->revision == current ? "current" : "",
	    r->revision == current && r->revision == serving ? "," : "",
	    r->revision == serving ? "serving" : "");
	row[0] = rev;
	row[1] = at;
	row[2] = code[0] != '\0' ? code : NULL;
	row[3] = r->gate;
	row[4] = note[0] != '\0' ? note : NULL;
	row[5] = r->reason[0] != '\0' ? r->reason : NULL;
	table_add(t, row);
}

static json_t *
history_json(const struct store_revision *r, int64_t current,
    int64_t serving)
{
	char at[32], gate_at[32];

	fmt_time(at, sizeof(at), r->applied_at);
	fmt_time(gate_at, sizeof(gate_at), r->gate_at);
	return json_pack("{s:s, s:s, s:I, s:s, s:s?, s:s, s:s?, s:s?, "
	    "s:b, s:b}", "app", r->app, "service", r->service, "revision",
	    (json_int_t)r->revision, "applied_at", at, "code_hash",
	    r->code_hash[0] != '\0' ? r->code_hash : NULL, "gate", r->gate,
	    "gate_at", r->gate_at != 0 ? gate_at : NULL, "reason",
	    r->reason[0] != '\0' ? r->reason : NULL, "current",
	    r->revision == current, "serving", r->revision == serving);
}

int
cmd_history(struct hk *hk, int argc, char **argv)
{
	static const char *const header[] = {
		"REVISION", "APPLIED", "CODE", "GATE", "NOTE", "REASON",
	};
	struct store_service svc;
	struct store_revision *v;
	struct table *t;
	json_t *all;
	size_t n, i;
	int64_t serving;
	int first, as_json, code;

	if ((first = hk_json_flag(argc, argv, HISTORY_SYNOPSIS, 1,
	    &as_json)) == -1)
		return EX_USAGE;
	if ((code = hk_store(hk)) != EX_OK ||
	    (code = resolve_service(hk, argv[first], &svc)) != EX_OK)
		return code;
	if (store_revision_list(hk->store, svc.app, svc.name, &v, &n) == -1) {
		store_service_clear(&svc);
		return hk_store_failed(hk, "list revisions");
	}
	serving = hk_serving_revision(v, n, svc.revision);
	t = table_new(6, header);
	all = json_array();
	for (i = 0; i < n; i++) {
		history_row(t, &v[i], svc.revision, serving);
		json_array_append_new(all, history_json(&v[i], svc.revision,
		    serving));
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
	store_revision_free(v, n);
	store_service_clear(&svc);
	return code;
}

/*
 * The release state of a service, for hk status: its current revision's
 * gate (and why it failed), and the revision that serves.  NULL when the
 * store fails (said) or keeps no row of the current revision.
 */
json_t *
hk_release_json(struct hk *hk, const struct store_service *svc)
{
	struct store_revision *v;
	size_t n, i;
	json_t *o = NULL;
	int64_t serving;

	if (store_revision_list(hk->store, svc->app, svc->name, &v, &n) ==
	    -1) {
		log_warnx("%s/%s: unable to list revisions: %s", svc->app,
		    svc->name, store_error(hk->store));
		return NULL;
	}
	serving = hk_serving_revision(v, n, svc->revision);
	for (i = 0; i < n; i++) {
		if (v[i].revision != svc->revision)
			continue;
		o = json_pack("{s:I, s:s, s:s?, s:I}", "revision",
		    (json_int_t)v[i].revision, "gate", v[i].gate, "reason",
		    v[i].reason[0] != '\0' ? v[i].reason : NULL, "serving",
		    (json_int_t)serving);
	}
	store_revision_free(v, n);
	return o;
}

void
hk_release_print(const json_t *o)
{
	const char *gate, *reason;
	int64_t rev, serving;

	if (o == NULL)
		return;
	gate = json_string_value(json_object_get(o, "gate"));
	reason = json_string_value(json_object_get(o, "reason"));
	rev = json_integer_value(json_object_get(o, "revision"));
	serving = json_integer_value(json_object_get(o, "serving"));
	printf("%-12s revision %lld %s%s%s\n", "gate:", (long long)rev,
	    gate, reason != NULL ? ": " : "", reason != NULL ? reason : "");
	if (serving == 0)
		printf("%-12s none (no revision passed its gate yet)\n",
		    "serving:");
	else if (serving == rev)
		printf("%-12s revision %lld\n", "serving:", (long long)rev);
	else
		printf("%-12s revision %lld (the newest that passed its "
		    "gate)\n", "serving:", (long long)serving);
}
