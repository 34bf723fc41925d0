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

/* app_runs.c: [jobs.NAME] and [services.X.schedules.NAME] */
void	 app_jobs(struct actx *, const struct toml_kv *);
void	 app_jobs_check(struct actx *);
void	 app_schedules(struct actx *, const struct toml_kv *,
	    const struct toml_kv *, const char *, struct service_spec *);
void	 app_schedules_check(struct actx *, const char *,
	    const struct toml_kv *, struct service_spec *);
void	 app_job_clear(struct job_spec *);

#endif
