/*
 * hk.h - declarations private to the hk front end.
 */
#ifndef HK_HK_H
#define HK_HK_H

#include <stddef.h>

#include <jansson.h>

#include "app.h"
#include "config.h"
#include "store.h"
#include "table.h"

#define PROG	"hk"

/* What every command gets: the operator config and, once opened, the store. */
struct hk {
	struct server_config	 cfg;
	struct store		*store;	/* opened by hk_store() on first use */
};

/* A command's outcome is a sysexits code. */
int	cmd_apply(struct hk *, int, char **);
int	cmd_validate(struct hk *, int, char **);
int	cmd_ps(struct hk *, int, char **);
int	cmd_status(struct hk *, int, char **);
int	cmd_start(struct hk *, int, char **);
int	cmd_stop(struct hk *, int, char **);
int	cmd_wake(struct hk *, int, char **);
int	cmd_routes(struct hk *, int, char **);
int	cmd_new(struct hk *, int, char **);
int	cmd_logs(struct hk *, int, char **);
int	cmd_secret(struct hk *, int, char **);
int	cmd_invoke(struct hk *, int, char **);
int	cmd_runs(struct hk *, int, char **);
int	cmd_volumes(struct hk *, int, char **);

int	cmd_vet(struct hk *, int, char **);
int	cmd_history(struct hk *, int, char **);
int	cmd_rollback(struct hk *, int, char **);

/* history.c: a new revision's row and event; which revision serves */
int	hk_revision_applied(struct hk *, const char *, const char *, int64_t,
	    const char *);
int64_t	hk_serving_revision(const struct store_revision *, size_t, int64_t);
json_t	*hk_release_json(struct hk *, const struct store_service *);
void	 hk_release_print(const json_t *);
/* roll.c */
json_t	*hk_roll_json(struct hk *, const struct store_service *,
	    const struct store_instance *, size_t);
void	 hk_roll_print(const json_t *);

/* apply.c: every file loaded and checked (EX_OK, 65, 66); then freed */
int	apps_load(struct hk *, int, char **, struct app_config **);
void	apps_free(struct app_config *, int);

/* vet.c: the code vetting gate before hk apply writes (hakopod.toml(5)) */
int	vet_apps(struct hk *, struct app_config *, int);
/* vet.c, for --dry-run: [vet]'s files readable; code apply would send */
int	vet_gate_check(struct hk *);
int	vet_would_send(struct hk *, const char *, const struct service_spec *);

/* secret.c: the digests of the secrets an app's services name */
int	secrets_resolve(struct hk *, struct app_config *);
/* pin.c */
int	images_pin(struct hk *, struct app_config *, int);

/* apply.c: the installation's limits on an app (read only) */
int	apply_check_installation(struct hk *, const struct app_config *);
int	apply_check_gateway(struct hk *, const struct app_config *, int);

/* enabled.c: hk.toml's enabled = false, kept by hk apply (hk.toml(5)) */
int	enabled_off(const char *);
int	enabled_before(struct hk *, const char *, const char *, int *);
int	enabled_apply(struct hk *, const char *, const struct service_spec *,
	    int);

/* plan.c: "hk apply --dry-run [--json]": what apply would do */
int	plan_apps(struct hk *, struct app_config *, int, int);

/* apply.c: the event of a new revision */
int	hk_record_applied(struct hk *, const char *, const char *, int64_t);

/* main.c */
int	hk_store(struct hk *);
int	hk_store_failed(struct hk *, const char *);

/* resolve.c: "app/service", or a service name unique in the installation */
int	resolve_service(struct hk *, const char *, struct store_service *);

/* wait.c: "hk apply --wait" */
int	wait_subscribe(struct hk *, int *);
int	wait_deploy(struct hk *, int, json_t *, int);

/* apply_runs.c: jobs and schedules of hk apply; --wait for job runs */
int	apply_runs(struct hk *, const struct app_config *, json_t *);
int	job_run_id_check(struct hk *, const struct app_config *,
	    const struct job_spec *, const char **);
int	apply_wait_jobs(struct hk *, const json_t *, int);

/* daemons.c: tell the running daemons; absent ones are skipped */
void	daemons_tell(const struct hk *, const char *, const char *);

/* util */
int	hk_json_flag(int, char **, const char *, int, int *);

/* --wait and --timeout S of hk invoke and hk wake (getopt 'w', 't') */
struct hk_wait {
	int		 wait;
	int		 timeout;	/* seconds */
	int		 timeout_given;
};
int	hk_wait_opt(int, struct hk_wait *);
int	hk_wait_done(const struct hk_wait *);
int64_t	hk_mono_ms(void);
void	fmt_time(char *, size_t, long long);
void	fmt_policy(char *, size_t, const char *);
void	fmt_hosts(char *, size_t, const char *);
const char *service_state(const struct store_service *,
	    const struct store_instance *);

#endif
