/*
 * k8s_sweep.c - once every row is adopted (backend_sweep()): the
 * Deployments of this installation (label hakopod.io/installation) at 1
 * replica or more that no instance of hk-scale names are scaled to 0, so
 * that nothing hk made runs unwatched: a row lost with its store, a
 * service removed while hk-scale was down.  Then the Secrets of this
 * installation that nothing uses are deleted: those of a revision no
 * instance runs and no Deployment left at 1 replica or more holds, of a
 * service that is gone or whose current (or serving) revision is
 * another.  Another installation's are not listed, and so left alone.
 * Only when a service runs on kubernetes: hk-scale opens no cluster it
 * does not use.
 *
 * While hk-scale runs, the Secrets are swept again every
 * K8S_SWEEP_SECONDS (time_unit_ms "seconds": 5 minutes), for a Secret
 * can be orphaned then too (a prune that failed, a revision whose gate
 * never passed, one another client made with this installation's
 * labels).  The Deployments are listed then only for the revisions they
 * hold: one at 1 replica that no instance names is scaled to 0 at the
 * start alone, for while hk-scale runs the instance that would claim it
 * may be starting on another connection, whose scale to 1 the sweep's
 * to 0 could overtake.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "log.h"

#define SEL	"labelSelector=hakopod.io%%2Finstallation%%3D%s"

#define K8S_SWEEP_SECONDS	300

static int	k8s_used(struct scale *);
static void	sweep_list(struct scale *, int);
static void	sweep_arm(struct scale *);
static void	on_sweep_timer(struct loop *, void *);
static void	on_listed(void *, int, json_t *, const char *);
static void	on_zeroed(void *, int, json_t *, const char *);
static void	orphan_secrets(struct scale *, struct k8s *, json_t *);
static void	on_secrets(void *, int, json_t *, const char *);
static void	ssweep_free(void *);
static void	on_secret_deleted(void *, int, json_t *, const char *);

/* What a Secret sweep needs: the Deployments' in-use revisions. */
struct ssweep {
	struct scale	*sc;
	json_t		*held;	/* "app/service/revision" -> true */
};

/* What a Deployment list's answer needs. */
struct dsweep {
	struct scale	*sc;
	int		 zero;	/* scale the unclaimed to 0: at the start */
};

/* The one timer of the Secrets' sweeps while hk-scale runs. */
static struct loop_timer sweep_timer;
static int sweep_timer_set;

/* At the start, once every row is adopted; then every so often. */
void
k8s_sweep(struct scale *sc)
{
	sweep_list(sc, 1);
	sweep_arm(sc);
}

/* hk-scale's end: no sweep after it. */
void
k8s_sweep_stop(struct scale *sc)
{
	if (sweep_timer_set)
		loop_timer_cancel(sc->loop, &sweep_timer);
}

static void
sweep_arm(struct scale *sc)
{
	if (!sweep_timer_set) {
		loop_timer_init(&sweep_timer, on_sweep_timer, sc);
		sweep_timer_set = 1;
	}
	loop_timer_at(sc->loop, &sweep_timer, loop_now_ms(sc->loop) +
	    K8S_SWEEP_SECONDS * sc->cfg.time_unit_ms);
}

static void
on_sweep_timer(struct loop *loop, void *arg)
{
	struct scale *sc = arg;

	(void)loop;
	scale_fence(sc);	/* a host that no longer leads sweeps nothing */
	sweep_list(sc, 0);
	sweep_arm(sc);
}

/* This installation's Deployments listed: on_listed() (zero: at start). */
static void
sweep_list(struct scale *sc, int zero)
{
	char err[SCALE_REASON_MAX], path[K8S_PATH_MAX];
	struct dsweep *ds;
	struct k8s *k;

	if (!k8s_used(sc))
		return;
	if ((k = k8s_cluster(sc, err, sizeof(err))) == NULL) {
		log_warnx("%s: %s", err, zero ? "Deployments left by an "
		    "earlier run not looked for" : "Secrets not swept");
		return;
	}
	if ((ds = calloc(1, sizeof(*ds))) == NULL) {
		log_warn("kubernetes: Deployments of this installation");
		return;
	}
	ds->sc = sc;
	ds->zero = zero;
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/"
	    "deployments?" SEL, k->ns, sc->installation);
	if (k8s_call_owning(k, "GET", path, NULL, on_listed, ds, free) ==
	    NULL)
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

/* "app/service/revision" of an object's labels, or -1. */
static int
labels_key(const json_t *obj, char *dst, size_t size)
{
	const json_t *l = json_object_get(json_object_get(obj, "metadata"),
	    "labels");
	const char *app, *svc, *rev;
	int n;

	app = json_string_value(json_object_get(l, "hakopod.io/app"));
	svc = json_string_value(json_object_get(l, "hakopod.io/service"));
	rev = json_string_value(json_object_get(l, "hakopod.io/revision"));
	if (app == NULL || svc == NULL || rev == NULL)
		return -1;
	n = snprintf(dst, size, "%s/%s/%s", app, svc, rev);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

static void
on_listed(void *arg, int status, json_t *body, const char *err)
{
	struct dsweep *ds = arg;
	struct scale *sc = ds->sc;
	char err2[SCALE_REASON_MAX], path[K8S_PATH_MAX];
	char key[3 * STORE_NAME_MAX + 32];
	const char *name;
	struct k8s *k;
	json_t *dep, *held;
	size_t i;

	(void)status;
	if (err != NULL || (k = k8s_cluster(sc, err2, sizeof(err2))) == NULL) {
		log_warnx("kubernetes: Deployments of this installation: %s",
		    err != NULL ? err : err2);
		return;
	}
	if ((held = json_object()) == NULL) {
		log_warnx("kubernetes: out of memory");
		return;
	}
	json_array_foreach(json_object_get(body, "items"), i, dep) {
		name = json_string_value(json_object_get(json_object_get(dep,
		    "metadata"), "name"));
		if (name == NULL || strlen(name) > K8S_NAME_MAX ||
		    json_integer_value(json_object_get(json_object_get(dep,
		    "spec"), "replicas")) < 1)
			continue;
		if (k8s_claimed(sc, name) || !ds->zero) {
			/* its pod may mount one */
			if (labels_key(dep, key, sizeof(key)) == 0)
				json_object_set_new(held, key, json_true());
			continue;
		}
		log_info("kubernetes: deployment %s/%s: no instance of this "
		    "installation: scaled to 0", k->ns, name);
		snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/"
		    "deployments/%s/scale", k->ns, name);
		if (k8s_call(k, "PUT", path, k8s_scale(k->ns, name, 0),
		    on_zeroed, NULL) == NULL)
			log_warn("kubernetes: scale %s to 0", name);
	}
	orphan_secrets(sc, k, held);
}

static void
on_zeroed(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)body;
	if (err != NULL && status != 404)
		log_warnx("kubernetes: a Deployment to 0 replicas: %s", err);
}

/* The Secrets of this installation, listed: on_secrets() (held taken). */
static void
orphan_secrets(struct scale *sc, struct k8s *k, json_t *held)
{
	char path[K8S_PATH_MAX];
	struct ssweep *sw;

	if ((sw = calloc(1, sizeof(*sw))) == NULL) {
		json_decref(held);
		log_warn("kubernetes: Secrets of this installation");
		return;
	}
	sw->sc = sc;
	sw->held = held;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets?" SEL,
	    k->ns, sc->installation);
	if (k8s_call_owning(k, "GET", path, NULL, on_secrets, sw,
	    ssweep_free) == NULL)
		log_warn("kubernetes: Secrets of this installation");
}

static void
ssweep_free(void *arg)
{
	struct ssweep *sw = arg;

	json_decref(sw->held);
	free(sw);
}

/*
 * 1 if the Secret of app/service/rev may be used: by an instance, by a
 * Deployment at 1 replica or more, or as the service's current or
 * serving revision (its next start writes it again anyway).
 */
static int
secret_used(const struct ssweep *sw, const json_t *sec)
{
	char key[3 * STORE_NAME_MAX + 32];
	const json_t *l = json_object_get(json_object_get(sec, "metadata"),
	    "labels");
	const char *app, *svc;
	struct service *s;
	int64_t rev;

	if (labels_key(sec, key, sizeof(key)) == -1)
		return 1;	/* not one of hk's per revision: left */
	if (json_object_get(sw->held, key) != NULL)
		return 1;
	app = json_string_value(json_object_get(l, "hakopod.io/app"));
	svc = json_string_value(json_object_get(l, "hakopod.io/service"));
	rev = k8s_revision_of(sec);
	if (k8s_revision_used(sw->sc, app, svc, rev))
		return 1;
	TAILQ_FOREACH(s, &sw->sc->services, entry) {
		if (strcmp(s->def.app, app) != 0 ||
		    strcmp(s->def.name, svc) != 0)
			continue;
		return rev == s->def.revision || rev == s->good.revision;
	}
	return 0;	/* its service is gone */
}

static void
on_secrets(void *arg, int status, json_t *body, const char *err)
{
	struct ssweep *sw = arg;
	char err2[SCALE_REASON_MAX], path[K8S_PATH_MAX];
	const char *name;
	struct k8s *k;
	json_t *sec;
	size_t i;

	(void)status;
	if (err != NULL || (k = k8s_cluster(sw->sc, err2, sizeof(err2))) ==
	    NULL) {
		log_warnx("kubernetes: Secrets of this installation: %s",
		    err != NULL ? err : err2);
		return;
	}
	json_array_foreach(json_object_get(body, "items"), i, sec) {
		name = json_string_value(json_object_get(json_object_get(sec,
		    "metadata"), "name"));
		if (name == NULL || strlen(name) > K8S_SECRET_NAME_MAX ||
		    strncmp(name, "hk-", 3) != 0 || secret_used(sw, sec))
			continue;
		log_info("kubernetes: secret %s/%s: no instance or Deployment "
		    "uses it: deleted", k->ns, name);
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s",
		    k->ns, name);
		if (k8s_call(k, "DELETE", path, NULL, on_secret_deleted,
		    NULL) == NULL)
			log_warn("kubernetes: delete secret %s", name);
	}
}

static void
on_secret_deleted(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)body;
	if (err != NULL && status != 404)
		log_warnx("kubernetes: a Secret's delete: %s", err);
}
