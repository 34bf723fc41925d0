/*
 * enabled.c - the declarative off switch of hk.toml(5): a service with
 * "enabled = false" is stopped, and stays stopped across applies and
 * restarts, until its file says "enabled = true" (the default) again.
 *
 * The spec carries the switch ("enabled": false, spec.c), so that every
 * reader knows why the service is down; hk apply also writes the desired
 * state the daemons already obey ("stopped", as hk stop writes it), so
 * that hk-scale, hk-activate and hk-jobs need nothing new to keep it
 * down.  The file wins over the commands: hk start is refused on a
 * disabled service, and a service enabled again runs per its kind even
 * if hk stop stopped it before it was disabled.
 */
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include <jansson.h>

#include "hk.h"
#include "log.h"
#include "spec.h"
#include "store.h"

/* Whether a stored spec says enabled = false. */
int
enabled_off(const char *spec_json)
{
	json_t *spec;
	int off;

	if (spec_json == NULL || strstr(spec_json, "\"enabled\"") == NULL)
		return 0;
	spec = json_loads(spec_json, 0, NULL);
	off = json_is_false(json_object_get(spec, "enabled"));
	json_decref(spec);
	return off;
}

/*
 * Before hk apply writes a service: whether the store has it disabled
 * (*was_off), for enabled_apply() to tell a service enabled again.
 */
int
enabled_before(struct hk *hk, const char *app, const char *service,
    int *was_off)
{
	struct store_service row;
	int r;

	*was_off = 0;
	if ((r = store_service_get(hk->store, app, service, &row)) == -1)
		return hk_store_failed(hk, "read service");
	if (r == 0) {
		*was_off = enabled_off(row.spec_json);
		store_service_clear(&row);
	}
	return EX_OK;
}

/*
 * After hk apply wrote a service, in its transaction: stopped while the
 * file disables it; started again (desired "auto") when the file enables
 * a service it disabled.  Otherwise hk stop and hk start's state stays.
 */
int
enabled_apply(struct hk *hk, const char *app, const struct service_spec *sp,
    int was_off)
{
	if (!sp->disabled && !was_off)
		return EX_OK;
	if (store_service_set_desired(hk->store, app, sp->name, sp->disabled ?
	    STORE_DESIRED_STOPPED : STORE_DESIRED_AUTO) != 0)
		return hk_store_failed(hk, "set desired state");
	return EX_OK;
}
