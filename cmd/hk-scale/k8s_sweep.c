/*
 * k8s_sweep.c - once every row is adopted (backend_sweep()): the
 * Deployments of this installation (label hakopod.io/installation) at 1
 * replica or more that no instance of hk-scale names are scaled to 0, so
 * that nothing hk made runs unwatched: a row lost with its store, a
 * service removed while hk-scale was down.  Another installation's are
 * not listed, and so left alone.  Only when a service runs on
 * kubernetes: hk-scale opens no cluster it does not use.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "k8s.h"
#include "log.h"

static int	k8s_used(struct scale *);
static void	on_listed(void *, int, json_t *, const char *);
static void	on_zeroed(void *, int, json_t *, const char *);

void
k8s_sweep(struct scale *sc)
{
	char err[SCALE_REASON_MAX], path[K8S_PATH_MAX];
	struct k8s *k;

	if (!k8s_used(sc))
		return;
	if ((k = k8s_cluster(sc, err, sizeof(err))) == NULL) {
		log_warnx("%s: Deployments left by an earlier run not looked "
		    "for", err);
		return;
	}
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/"
	    "deployments?labelSelector=hakopod.io%%2Finstallation%%3D%s",
	    k->ns, sc->installation);
	if (k8s_call(k, "GET", path, NULL, on_listed, sc) == NULL)
		log_warn("kubernetes: Deployments of this installation");
}

/* Whether a service of this installation runs on kubernetes. */
static int
k8s_used(struct scale *sc)
{
	struct service *s;

	TAILQ_FOREACH(s, &sc->services, entry)
		if (s->def.spec.backend == BACKEND_KUBERNETES)
			return 1;
	return 0;
}

static void
on_listed(void *arg, int status, json_t *body, const char *err)
{
	struct scale *sc = arg;
	char err2[SCALE_REASON_MAX], path[K8S_PATH_MAX];
	const char *name;
	struct k8s *k;
	json_t *dep;
	size_t i;

	(void)status;
	if (err != NULL || (k = k8s_cluster(sc, err2, sizeof(err2))) == NULL) {
		log_warnx("kubernetes: Deployments of this installation: %s",
		    err != NULL ? err : err2);
		return;
	}
	json_array_foreach(json_object_get(body, "items"), i, dep) {
		name = json_string_value(json_object_get(json_object_get(dep,
		    "metadata"), "name"));
		if (name == NULL || strlen(name) > K8S_NAME_MAX ||
		    json_integer_value(json_object_get(json_object_get(dep,
		    "spec"), "replicas")) < 1 || k8s_claimed(sc, name))
			continue;
		log_info("kubernetes: deployment %s/%s: no instance of this "
		    "installation: scaled to 0", k->ns, name);
		snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/"
		    "deployments/%s/scale", k->ns, name);
		if (k8s_call(k, "PUT", path, k8s_scale(k->ns, name, 0),
		    on_zeroed, NULL) == NULL)
			log_warn("kubernetes: scale %s to 0", name);
	}
}

static void
on_zeroed(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)body;
	if (err != NULL && status != 404)
		log_warnx("kubernetes: a Deployment to 0 replicas: %s", err);
}
