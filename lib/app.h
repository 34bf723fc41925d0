/*
 * app.h - the application config, hk.toml (schema_version 1, what "hk
 * apply" takes; hk.toml(5)): its services (struct service_spec, spec.h)
 * and the runs it declares, loaded and checked against the operator
 * config (config.h), each rejection a diagnostic as config.h has it.
 */
#ifndef HK_APP_H
#define HK_APP_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "spec.h"

/*
 * What a run sends, for [jobs.NAME] and [services.X.schedules.NAME]
 * (hk.toml(5)); spec_json is its canonical JSON, what the store keeps:
 * {"event": TEXT, "method", "path", "timeout_seconds"}, the event as the
 * JSON text that is sent, and for a schedule also "cron", "timezone",
 * "enabled", "concurrency", "catch_up".
 */
#define APP_EVENT_MAX		65536	/* bytes of an event as JSON */
#define APP_RUN_TIMEOUT_MAX	600	/* s: timeout_seconds */

struct job_spec {
	char		 name[CONFIG_NAME_MAX + 1];
	int		 line;		/* of [jobs.NAME] */
	char		 service[CONFIG_NAME_MAX + 1];
	int		 service_line;
	int64_t		 run_id;	/* >= 0, default 0 */
	int		 run_id_line;	/* of run_id, else of the table */
	char		*spec_json;
};

struct app_config {
	char			 name[CONFIG_NAME_MAX + 1];
	int			 name_line;	/* of "name = ..." */
	char			*path;
	struct service_spec	*services;	/* in file order */
	size_t			 nservices;
	struct job_spec		*jobs;		/* [jobs.NAME], in file order */
	size_t			 njobs;
};

/*
 * Loads and validates an application file against the operator config
 * (serverless_address, max_serverless_services, base_domain).  Returns 0,
 * or -1 with every diagnostic found; *missing as for config_load_server.
 */
int	app_load(struct app_config *, const char *, const struct server_config *,
	    struct config_diag *, int *);
/* The same from a buffer (for tests and fuzzing); path is used in messages. */
int	app_parse(struct app_config *, const char *, const char *, size_t,
	    const struct server_config *, struct config_diag *);
void	app_free(struct app_config *);
size_t	app_count_serverless(const struct app_config *);

/*
 * What a run sends (app_runs.c; hk-jobs checks hk invoke's the same):
 * a method of 1..APP_METHOD_MAX upper-case letters, and a path in
 * origin-form, "/" then visible ASCII, at most APP_PATH_MAX bytes.
 */
#define APP_METHOD_MAX		15	/* the store's STORE_METHOD_MAX */
#define APP_PATH_MAX		1023	/* the store's STORE_PATH_MAX */
int	app_valid_method(const char *);
int	app_valid_path(const char *);

#endif
