/*
 * desired.c - "hk stop" and "hk start": the desired state of a service.
 *
 * The store is the truth and survives restarts: a stopped service stays
 * stopped, and traffic does not wake it, until "hk start".  The running
 * daemons are then told so that they act at once.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "hk.h"
#include "log.h"
#include "store.h"

static int	set_desired(struct hk *, int, char **, enum store_desired);

static int
set_desired(struct hk *hk, int argc, char **argv, enum store_desired want)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *verb = want == STORE_DESIRED_STOPPED ? "stop" : "start";
	struct store_service svc;
	struct store_event ev;
	char name[2 * STORE_NAME_MAX + 2];
	int ch, code;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		fprintf(ch == 'h' ? stdout : stderr,
		    "usage: hk [-v] [-f config] %s service\n", verb);
		if (ch == 'h')
			exit(EX_OK);
		return EX_USAGE;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: hk [-v] [-f config] %s service\n", verb);
		return EX_USAGE;
	}
	if ((code = hk_store(hk)) != EX_OK)
		return code;
	if ((code = resolve_service(hk, argv[optind], &svc)) != EX_OK)
		return code;
	snprintf(name, sizeof(name), "%s/%s", svc.app, svc.name);
	/* The file wins (enabled.c): only an apply starts it again. */
	if (want == STORE_DESIRED_AUTO && enabled_off(svc.spec_json)) {
		log_errorx("%s: disabled in hk.toml: set enabled = true and "
		    "apply", name);
		store_service_clear(&svc);
		return EX_DATAERR;
	}
	memset(&ev, 0, sizeof(ev));
	ev.at = store_now_ms();
	strlcpy(ev.app, svc.app, sizeof(ev.app));
	strlcpy(ev.service, svc.name, sizeof(ev.service));
	strlcpy(ev.kind, want == STORE_DESIRED_STOPPED ? "ManualStop" :
	    "ManualStart", sizeof(ev.kind));
	if (store_begin(hk->store) == -1 ||
	    store_service_set_desired(hk->store, svc.app, svc.name,
	    want) != 0 || store_event_add(hk->store, &ev) == -1 ||
	    store_commit(hk->store) == -1) {
		code = hk_store_failed(hk, "set desired state");
		store_rollback(hk->store);
		store_service_clear(&svc);
		return code;
	}
	printf("%s\t%s\n", name, want == STORE_DESIRED_STOPPED ? "stopped" :
	    "started");
	daemons_tell(hk, verb, name);
	store_service_clear(&svc);
	return EX_OK;
}

int
cmd_stop(struct hk *hk, int argc, char **argv)
{
	return set_desired(hk, argc, argv, STORE_DESIRED_STOPPED);
}

int
cmd_start(struct hk *hk, int argc, char **argv)
{
	return set_desired(hk, argc, argv, STORE_DESIRED_AUTO);
}
