/*
 * app_impl.h - private to lib/app*.c: the walk of an application file,
 * shared by app.c (the file and its services) and app_runs.c (jobs and
 * schedules).  Nothing else includes it.
 */
#ifndef HK_APP_IMPL_H
#define HK_APP_IMPL_H

#include <limits.h>
#include <stddef.h>

#include "app.h"
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

/*
 * The application config: keys of [services.NAME], alphabetical.
 */
enum svc_key {
	SK_AUTOSCALE,
	SK_BACKEND,
	SK_BACKEND_CERTIFICATE,
	SK_BACKEND_HTTP2,
	SK_COMMAND,
	SK_DIRECTORY,
	SK_ENABLED,
	SK_ENVIRONMENT,
	SK_GPU,
	SK_HOSTS,
	SK_IMAGE,
	SK_IMAGE_PULL,
	SK_JOBS,
	SK_KUBERNETES_DEPLOYMENT,
	SK_LISTEN,
	SK_NODE_NAME,
	SK_PORT,
	SK_PORTS,
	SK_PUBLIC,
	SK_READINESS,
	SK_REPLICAS,
	SK_SCHEDULES,
	SK_SECRETS,
	SK_SECRETS_ENV,
	SK_SERVERLESS,
	SK_SIZE,
	SK_SOURCE,
	SK_STARTUP_TIMEOUT,
	SK_TCP_PORTS,
	SK_USER,
	SK_VOLUMES,
	SK_COUNT
};

/* One key of [services.NAME] (app.c's table, in enum svc_key's order). */
struct app_svc_key {
	const char	*name;
	int		 ordinary;	/* only ordinary services may use it */
	const char	*why;		/* refused on an ordinary service: why */
};

#define APP_ENV_RESERVED	6
extern const struct app_svc_key	 app_svc_keys[SK_COUNT];
extern const char *const	 app_env_reserved[APP_ENV_RESERVED];

/*
 * app_rules.c: the rules between a service's keys, once each is read;
 * slot[] holds each key's entry, NULL when absent.
 */
void	 app_rules_backend(struct actx *, const struct toml_kv *const *,
	    const char *, struct service_spec *);
void	 app_rules_secrets(struct actx *, const struct toml_kv *const *,
	    const char *, const struct service_spec *);
void	 app_rules_routing(struct actx *, const struct toml_kv *const *,
	    const char *, struct service_spec *);
/* app_rules_k8s.c: the keys backend = "kubernetes" does not apply */
void	 app_rules_kubernetes(struct actx *, const struct toml_kv *const *,
	    const char *, const struct service_spec *);

/* app_runs.c: [jobs.NAME] and [services.X.schedules.NAME] */
void	 app_jobs(struct actx *, const struct toml_kv *);
void	 app_jobs_check(struct actx *);
void	 app_schedules(struct actx *, const struct toml_kv *,
	    const struct toml_kv *, const char *, struct service_spec *);
void	 app_schedules_check(struct actx *, const char *,
	    const struct toml_kv *, struct service_spec *);
void	 app_job_clear(struct job_spec *);

#endif
