/*
 * resolve.c - from what the operator typed to one service.
 *
 * "app/service" names a service exactly.  A bare "service" is accepted when
 * exactly one app has a service of that name, as a convenience; when
 * several do, the operator is told which to choose from.
 */
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "hk.h"
#include "log.h"
#include "store.h"

static int	resolve_bare(struct hk *, const char *, struct store_service *);

int
resolve_service(struct hk *hk, const char *arg, struct store_service *out)
{
	char app[STORE_NAME_MAX + 1];
	const char *slash;
	size_t len;
	int r;

	if ((slash = strchr(arg, '/')) == NULL)
		return resolve_bare(hk, arg, out);
	len = (size_t)(slash - arg);
	if (len == 0 || len > STORE_NAME_MAX || slash[1] == '\0') {
		log_errorx("%s: not a service name (app/service)", arg);
		return EX_DATAERR;
	}
	memcpy(app, arg, len);
	app[len] = '\0';
	r = store_service_get(hk->store, app, slash + 1, out);
	if (r == -1)
		return hk_store_failed(hk, "read service");
	if (r == 1) {
		log_errorx("%s: no such service", arg);
		return EX_DATAERR;
	}
	return EX_OK;
}

static int
resolve_bare(struct hk *hk, const char *name, struct store_service *out)
{
	struct store_service *all;
	size_t n, i, found = 0, which = 0;
	char choices[512] = "";

	if (store_service_list(hk->store, &all, &n) == -1)
		return hk_store_failed(hk, "list services");
	for (i = 0; i < n; i++) {
		if (strcmp(all[i].name, name) != 0)
			continue;
		if (found++ > 0)
			strlcat(choices, ", ", sizeof(choices));
		strlcat(choices, all[i].app, sizeof(choices));
		strlcat(choices, "/", sizeof(choices));
		strlcat(choices, all[i].name, sizeof(choices));
		which = i;
	}
	if (found != 1) {
		if (found == 0)
			log_errorx("%s: no such service", name);
		else
			log_errorx("%s: ambiguous, name one of: %s", name,
			    choices);
		store_service_free(all, n);
		return EX_DATAERR;
	}
	*out = all[which];
	all[which].spec_json = NULL;	/* moved to out */
	store_service_free(all, n);
	return EX_OK;
}
