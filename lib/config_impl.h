/*
 * config_impl.h - private to lib/config*.c: the walk of an application
 * file, shared by config.c (apps and services) and config_runs.c (jobs
 * and schedules).  Nothing else includes it.
 */
#ifndef HK_CONFIG_IMPL_H
#define HK_CONFIG_IMPL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "config.h"
#include "cw.h"
#include "spec.h"
#include "toml.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define NAME_REASON	"must be 1 to 63 of a-z, 0-9 and '-', " \
			"starting and ending with a letter or digit"

/* One host of the file, for the duplicate check. */
struct hostref {
	const char		*host;
	const struct toml_kv	*svc;	/* [services.NAME] */
	size_t			 seq;	/* order in the file */
	int			 line;
};

struct actx {
	struct cw			 w;	/* the file, its diagnostics */
	const struct server_config	*srv;
	char				 dir[PATH_MAX];	/* of the file */
	struct app_config		*app;
	size_t				 nserverless;
	struct hostref			*hosts;
	size_t				 nhosts;
	size_t				 caphosts;
};

/* config_vet.c: [vet] of hakopod.toml */
void	 vet_defaults(struct config_vet *);
int	 vet_walk(struct config_vet *, const struct toml_kv *, const char *,
	    struct config_diag *);
void	 vet_print(FILE *, const struct config_vet *);

/* config_metrics.c: [metrics] of hakopod.toml */
int	 metrics_walk(struct config_metrics *, const struct toml_kv *,
	    const char *, struct config_diag *);
int	 metrics_cross(const struct server_config *, const char *,
	    struct config_diag *);
void	 metrics_print(FILE *, const struct config_metrics *);
/* config.c: host:port as [server]'s addresses are checked */
int	 config_check_addr(const char *, char *, size_t);

/* config_runs.c: [jobs.NAME] and [services.X.schedules.NAME] */
void	 app_jobs(struct actx *, const struct toml_kv *);
void	 app_jobs_check(struct actx *);
void	 svc_schedules(struct actx *, const struct toml_kv *,
	    const struct toml_kv *, const char *, struct service_spec *);
void	 svc_schedules_check(struct actx *, const char *,
	    const struct toml_kv *, struct service_spec *);
void	 job_clear(struct job_spec *);

#endif
