/*
 * rollback.c - "hk rollback service [revision]": a new revision made of an
 * earlier one's spec and code, by default the newest one older than the
 * current that passed its readiness gate.  It goes out as any new
 * revision does (hk-scale(8) "Releases"); the application file is not
 * touched, so the next "hk apply" of it applies it again.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "hk.h"
#include "log.h"
#include "spec.h"
#include "srctree.h"
#include "store.h"

#define ROLLBACK_USAGE \
	"usage: hk [-v] [-f config] rollback service [revision]\n"

static int	rollback_pick(struct hk *, const struct store_service *,
		    const char *, struct store_revision *);
static int	rollback_check(struct hk *, const struct store_service *,
		    const struct store_revision *, int *);
static int	rollback_limit(struct hk *, const struct store_service *, int);
static int	rollback_write(struct hk *, const struct store_service *,
		    const struct store_revision *);
static int	rollback_hosts(struct hk *, const struct store_service *,
		    const struct store_revision *);
static int	host_taken(const struct store_service *, const json_t *,
		    const char **);

/* The revision named, or the newest passed one below the current. */
static int
rollback_pick(struct hk *hk, const struct store_service *svc,
    const char *arg, struct store_revision *r)
{
	const char *errstr;
	int64_t want;
	int got;

	if (arg == NULL) {
		if ((got = store_revision_passed(hk->store, svc->app,
		    svc->name, svc->revision, r)) == -1)
			return hk_store_failed(hk, "read revisions");
		if (got == 1) {
			log_errorx("%s/%s: no revision older than %lld passed "
			    "its readiness gate: name one (hk history)",
			    svc->app, svc->name, (long long)svc->revision);
			return EX_DATAERR;
		}
		return EX_OK;
	}
	want = strtonum(arg, 1, INT64_MAX, &errstr);
	if (errstr != NULL) {
		log_errorx("%s: not a revision (%s)", arg, errstr);
		return EX_USAGE;
	}
	if ((got = store_revision_get(hk->store, svc->app, svc->name, want,
	    r)) == -1)
		return hk_store_failed(hk, "read revision");
	if (got == 1) {
		log_errorx("%s/%s: revision %lld is not kept (hk history "
		    "lists those that are)", svc->app, svc->name,
		    (long long)want);
		return EX_DATAERR;
	}
	return EX_OK;
}

/* Its code must still be there, and its spec readable. */
static int
rollback_check(struct hk *hk, const struct store_service *svc,
    const struct store_revision *r, int *serverless)
{
	struct service_spec sp;
	char err[SPEC_ERR_LEN];
	unsigned char *data = NULL;
	size_t len;
	int got;

	if (r->revision == svc->revision) {
		log_errorx("%s/%s: revision %lld is the current one", svc->app,
		    svc->name, (long long)r->revision);
		return EX_DATAERR;
	}
	if (r->code_hash[0] != '\0') {
		if ((got = store_code_get(hk->store, r->code_hash, &data,
		    &len)) == -1)
			return hk_store_failed(hk, "read code");
		free(data);
		if (got == 1) {
			log_errorx("%s/%s: revision %lld: its code %.*s is no "
			    "longer in the store", svc->app, svc->name,
			    (long long)r->revision, SRCTREE_SHORT_LEN,
			    r->code_hash);
			return EX_DATAERR;
		}
	}
	memset(&sp, 0, sizeof(sp));
	if (spec_decode(r->spec_json, &sp, err, sizeof(err)) == -1) {
		log_errorx("%s/%s: revision %lld: its spec cannot be read: %s",
		    svc->app, svc->name, (long long)r->revision, err);
		return EX_DATAERR;
	}
	*serverless = sp.serverless;
	spec_clear(&sp);
	return EX_OK;
}

/* host (a string) among the hosts of s's spec: 1, with it in *which. */
static int
host_taken(const struct store_service *s, const json_t *host,
    const char **which)
{
	json_t *spec, *h;
	size_t i;
	int found = 0;

	spec = json_loads(s->spec_json, 0, NULL);
	json_array_foreach(json_object_get(spec, "hosts"), i, h)
		if (json_is_string(h) && strcmp(json_string_value(h),
		    json_string_value(host)) == 0)
			found = 1;
	json_decref(spec);
	if (found)
		*which = json_string_value(host);
	return found;
}

/*
 * A host may belong to one service of the installation only (as hk
 * apply checks): the earlier spec's hosts may have gone to another
 * service since.
 */
static int
rollback_hosts(struct hk *hk, const struct store_service *svc,
    const struct store_revision *r)
{
	struct store_service *all;
	json_t *spec, *h;
	const char *which = NULL;
	size_t n, i, k;
	int code = EX_OK;

	if (store_service_list(hk->store, &all, &n) == -1)
		return hk_store_failed(hk, "list services");
	spec = json_loads(r->spec_json, 0, NULL);
	for (i = 0; code == EX_OK && i < n; i++) {
		if (strcmp(all[i].app, svc->app) == 0 &&
		    strcmp(all[i].name, svc->name) == 0)
			continue;
		json_array_foreach(json_object_get(spec, "hosts"), k, h) {
			if (!json_is_string(h) || !host_taken(&all[i], h,
			    &which))
				continue;
			log_errorx("%s/%s: revision %lld: host \"%s\" is "
			    "used by %s/%s now", svc->app, svc->name,
			    (long long)r->revision, which, all[i].app,
			    all[i].name);
			code = EX_DATAERR;
			break;
		}
	}
	json_decref(spec);
	store_service_free(all, n);
	return code;
}

/*
 * An ordinary service rolled back to a serverless revision counts against
 * max_serverless_services, and needs the gateway, as hk apply checks.
 */
static int
rollback_limit(struct hk *hk, const struct store_service *svc,
    int serverless)
{
	int64_t n;

	if (!serverless || svc->serverless)
		return EX_OK;
	if (hk->cfg.serverless_address[0] == '\0') {
		log_errorx("%s/%s: the revision is serverless, and "
		    "serverless_address is unset", svc->app, svc->name);
		return EX_CONFIG;
	}
	if (store_count_serverless(hk->store, NULL, &n) == -1)
		return hk_store_failed(hk, "count serverless services");
	if (n + 1 <= hk->cfg.max_serverless_services)
		return EX_OK;
	log_errorx("%s/%s: the revision is serverless: the installation "
	    "would have %lld serverless services, more than "
	    "max_serverless_services (%lld)", svc->app, svc->name,
	    (long long)(n + 1), (long long)hk->cfg.max_serverless_services);
	return EX_DATAERR;
}

/* In one transaction: the new revision, its row, retention. */
static int
rollback_write(struct hk *hk, const struct store_service *svc,
    const struct store_revision *r)
{
	int64_t rev = 0;
	int serverless = 0, changed = 0, code;

	if (store_begin(hk->store) == -1)
		return hk_store_failed(hk, "begin transaction");
	if ((code = rollback_check(hk, svc, r, &serverless)) != EX_OK ||
	    (code = rollback_limit(hk, svc, serverless)) != EX_OK ||
	    (code = rollback_hosts(hk, svc, r)) != EX_OK) {
		store_rollback(hk->store);
		return code;
	}
	if (store_service_put(hk->store, svc->app, svc->name, r->spec_json,
	    serverless, &rev, &changed) == -1 ||
	    (changed && hk_revision_applied(hk, svc->app, svc->name, rev,
	    r->spec_json) == -1) ||
	    store_revision_prune(hk->store, hk->cfg.keep_revisions,
	    NULL) == -1 || store_code_prune(hk->store, NULL) == -1 ||
	    store_commit(hk->store) == -1) {
		code = hk_store_failed(hk, "write the revision");
		store_rollback(hk->store);
		return code;
	}
	if (changed)
		printf("%s/%s\trevision %lld\tupdated\tfrom revision %lld\n",
		    svc->app, svc->name, (long long)rev,
		    (long long)r->revision);
	else
		printf("%s/%s\trevision %lld\tunchanged\n", svc->app,
		    svc->name, (long long)rev);
	fflush(stdout);
	daemons_tell(hk, "reload", NULL);
	return EX_OK;
}

int
cmd_rollback(struct hk *hk, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct store_service svc;
	struct store_revision r;
	int ch, code;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(ROLLBACK_USAGE, stdout);
			return EX_OK;
		}
		fputs(ROLLBACK_USAGE, stderr);
		return EX_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || argc > 2) {
		fputs(ROLLBACK_USAGE, stderr);
		return EX_USAGE;
	}
	if ((code = hk_store(hk)) != EX_OK ||
	    (code = resolve_service(hk, argv[0], &svc)) != EX_OK)
		return code;
	memset(&r, 0, sizeof(r));
	if ((code = rollback_pick(hk, &svc, argc == 2 ? argv[1] : NULL,
	    &r)) == EX_OK)
		code = rollback_write(hk, &svc, &r);
	store_revision_clear(&r);
	store_service_clear(&svc);
	return code;
}
