/*
 * backend_kubernetes.c - backend = "kubernetes" (hk-backends(7)): a
 * service is a Deployment of its image in the cluster of [server]
 * kubernetes_config (k8s_api.c), scaled through its scale subresource.
 *
 * A start makes the Deployment (at 0 replicas) or updates it to the
 * instance's revision, makes the Service that selects its pod, scales it
 * to 1, and watches the Service's EndpointSlices and its revision's Pods
 * (k8s_watch.c): the first ready endpoint of one of those pods
 * (k8s_ready.c) is where the instance runs (backend_started(); the tcp
 * probe then connects to it as to any other).  Once running, an
 * endpoint that goes is the pod's end (backend_exited()).  A stop scales
 * to 0 and is over once the slices list no endpoint.  Each wake and sleep
 * is also an events.k8s.io/v1 Event on the Deployment, with its cause.
 *
 * A new revision of a running service rolls the Deployment: its template
 * is replaced (strategy RollingUpdate, maxSurge 1, maxUnavailable 0), the
 * cluster starts the new pod beside the old one, which serves until the
 * new one is ready and is then removed by the cluster.  The new
 * revision's instance (pending behind the old, service.c) is ready when
 * its own pod is; the old one's stop, with a newer instance on the same
 * Deployment, scales nothing: it waits for its pod to go.  A roll whose
 * new pod fails (it will not start, or is not ready by the deadline) is
 * rolled back: the Deployment's template is the serving revision's
 * again, the cluster removes the new pod and keeps the old one, which
 * serves on, as hk's other backends keep the healthy release
 * (release.c).  The gate's next try rolls again.
 *
 * After a restart of hk-scale, an instance an earlier run left is adopted
 * when its Deployment is there, of this installation (its label), of the
 * row's revision, at 1 replica, and its slices list a ready endpoint: it
 * is watched again from then on.  Otherwise the Deployment, if this
 * installation's, is scaled to 0, and the next wake starts it again,
 * once that scale is answered (its scale to 1 must come after);
 * then so are this installation's Deployments no instance names
 * (k8s_sweep.c), and its Secrets that nothing uses, then again every 5
 * minutes.
 *
 * A service's secrets are a Secret of its revision, written first
 * (k8s_secret.c); those of its other revisions are deleted once its pod
 * runs alone, or none does.
 *
 * Not applied (hk-backends(7)): idle_action = "suspend" (refused by
 * validate: a pod cannot be frozen through the API).
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "log.h"
#include "scale.h"

enum kb_step {
	KB_SECRET,		/* POST, then PUT if it is there */
	KB_DEPLOYMENT,		/* GET, then POST or PUT */
	KB_SERVICE,		/* GET, then POST */
	KB_SCALE_UP,
	KB_WAIT,		/* the watch: a ready endpoint */
	KB_RUNNING,
	KB_SCALE_DOWN,
	KB_DRAIN,		/* the watch: no endpoint left */
	KB_ADOPT,		/* GET: an earlier run's Deployment */
	KB_ADOPT_WATCH,		/* the watch's first word: its endpoint */
	KB_ADOPT_ZERO,		/* not adopted: to 0, before the next wake */
};

struct kube {
	struct inst		*in;
	struct k8s		*k;
	struct k8s_ref		 ref;	/* ref.name: the objects' */
	enum kb_step		 step;
	struct engine_call	*call;
	struct k8s_watch	*w;	/* the Service's EndpointSlices */
	struct k8s_watch	*pw;	/* the revision's Pods */
	int			 killed;	/* over once at 0 replicas */
	int			 failing;	/* its pod will not start (why):
						   failed once at 0 replicas */
	int			 secret_there;	/* POSTed: 409, so PUT */
	int			 conflicts;	/* a PUT refused: 409 */
	char			 why[SCALE_REASON_MAX];	/* an exit's, then */
	char			 svc_ep[SCALE_ENDPOINT_MAX]; /* the Service's
						   clusterIP:port */
	json_t			*selector;	/* ref.theirs: the Deployment's
						   matchLabels */
	long			 listed;	/* endpoints, as last told;
						   -1 before the watch told */
};

static void	kb_start(struct inst *);
static void	kb_adopt(struct inst *, const struct store_instance *);
static void	kb_stop(struct inst *);
static void	kb_kill(struct inst *);
static int	kb_release(struct inst *);
static void	kb_teardown(struct scale *);
static void	kb_fail(struct kube *, const char *, const char *);
static void	kb_path(const struct kube *, const char *, char *, size_t);
static void	kb_service(struct kube *);
static void	kb_scale(struct kube *, int64_t);
static void	kb_secret(struct kube *);
static void	kb_deployment(struct kube *);
static void	on_secret(void *, int, json_t *, const char *);
static void	on_deployment(void *, int, json_t *, const char *);
static void	on_written(void *, int, json_t *, const char *);
static void	on_service(void *, int, json_t *, const char *);
static void	on_scaled(void *, int, json_t *, const char *);
static void	kb_adopt_not(struct kube *);
static void	on_adopt_get(void *, int, json_t *, const char *);
static void	on_zero(void *, int, json_t *, const char *);
static void	on_adopt_zero(void *, int, json_t *, const char *);
static int	kb_watch(struct kube *);
static void	on_seen(void *);
static int	kb_sibling(const struct kube *);
static void	kb_trouble(struct kube *, const json_t *);
static int	kb_service_ep(struct kube *, const json_t *);
static void	on_theirs(struct kube *, int, json_t *, const char *);
static int	kb_selector(struct kube *, json_t *);
static void	on_adopt_service(void *, int, json_t *, const char *);
static void	kb_rollback(const struct kube *);
static void	on_rollback_get(void *, int, json_t *, const char *);
static void	on_rolled_back(void *, int, json_t *, const char *);
static void	rollback_free(void *);

/* A failed roll's undoing: what its calls need, x may be gone. */
struct rollback {
	struct k8s	*k;
	char		 path[K8S_PATH_MAX];	/* the Deployment's */
	char		 id[2 * STORE_NAME_MAX + 2];	/* app/service */
	int64_t		 failed;	/* the revision that failed */
	int64_t		 to;		/* the one that serves */
	json_t		*dep;		/* its Deployment, as hk wrote it */
};

const struct backend backend_kubernetes = {
	.kind = BACKEND_KUBERNETES,
	.starts_later = 1,
	.start = kb_start,
	.adopt = kb_adopt,
	.stop = kb_stop,
	.kill = kb_kill,
	.release = kb_release,
	.teardown = kb_teardown,
	.sweep = k8s_sweep,
};

/* 1 if an instance of hk-scale's runs (or adopts) Deployment name. */
int
k8s_claimed(struct scale *sc, const char *name)
{
	const struct kube *x;
	struct inst *in;

	TAILQ_FOREACH(in, &sc->insts, entry) {
		if (in->be != &backend_kubernetes || (x = in->priv) == NULL)
			continue;
		if (strcmp(x->ref.name, name) == 0)
			return 1;
	}
	return 0;
}

/* 1 if an instance of hk-scale runs app/service's revision rev. */
int
k8s_revision_used(struct scale *sc, const char *app, const char *service,
    int64_t rev)
{
	const struct kube *x;
	struct inst *in;

	TAILQ_FOREACH(in, &sc->insts, entry) {
		if (in->be != &backend_kubernetes || (x = in->priv) == NULL)
			continue;
		if (x->ref.revision == rev && strcmp(x->ref.app, app) == 0 &&
		    strcmp(x->ref.service, service) == 0)
			return 1;
	}
	return 0;
}

/* PATH of in's object of kind ("deployments", "services"), by name. */
static void
kb_path(const struct kube *x, const char *kind, char *dst, size_t size)
{
	snprintf(dst, size, "/%s/namespaces/%s/%s/%s",
	    strcmp(kind, "services") == 0 ? "api/v1" : "apis/apps/v1",
	    x->k->ns, kind, strcmp(kind, "deployments") == 0 ?
	    x->ref.deployment : x->ref.name);
}

/* in's state, for service d (in->svc is not set yet at an adoption). */
static struct kube *
kb_new(struct inst *in, const struct svc *d, char *err, size_t errlen)
{
	struct kube *x;
	struct k8s *k;

	if ((k = k8s_cluster(in->sc, err, errlen)) == NULL)
		return NULL;
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	x->in = in;
	x->k = k;
	x->listed = -1;
	k8s_ref(in, d, &x->ref);
	snprintf(in->what, sizeof(in->what), "deployment %s/%s", k->ns,
	    x->ref.deployment);
	in->priv = x;
	return x;
}

static void
kb_start(struct inst *in)
{
	const struct service *s = in->svc;
	char err[SCALE_REASON_MAX], note[128];
	struct kube *x;

	if ((x = kb_new(in, inst_def(in), err, sizeof(err))) == NULL) {
		backend_failed(in, err);
		return;
	}
	if (s != NULL && s->wake_reason[0] != '\0') {
		snprintf(note, sizeof(note), "woken: %s", s->wake_reason);
		k8s_event(x->k, &x->ref, "HTTPIdleWake", "Wake", note);
	} else
		k8s_event(x->k, &x->ref, "Started", "Start", "started");
	if (inst_def(in)->spec.nsecrets > 0 && !x->ref.theirs)
		kb_secret(x);
	else
		kb_deployment(x);
}

/*
 * The revision's Secret, written whole at each start (POST, or PUT over
 * one an earlier start wrote): its values are the store's now.
 */
static void
kb_secret(struct kube *x)
{
	char err[256], name[K8S_SECRET_NAME_MAX + 1];
	char path[K8S_PATH_MAX];
	json_t *sec;

	k8s_secret_name(&x->ref, name, sizeof(name));
	if ((sec = k8s_secret(x->in->sc, &x->ref, &inst_def(x->in)->spec,
	    err, sizeof(err))) == NULL) {
		kb_fail(x, "Secret", err);
		return;
	}
	if (snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets%s%s",
	    x->k->ns, x->secret_there ? "/" : "", x->secret_there ? name :
	    "") >= (int)sizeof(path)) {
		json_decref(sec);
		kb_fail(x, "Secret", "its path is too long");
		return;
	}
	x->step = KB_SECRET;
	if ((x->call = k8s_call(x->k, x->secret_there ? "PUT" : "POST", path,
	    sec, on_secret, x)) == NULL)
		kb_fail(x, "Secret", strerror(errno));
}

static void
on_secret(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;

	(void)body;
	x->call = NULL;
	if (err != NULL && status == 409 && !x->secret_there) {
		x->secret_there = 1;
		kb_secret(x);
	} else if (err != NULL)
		kb_fail(x, "Secret", err);
	else
		kb_deployment(x);
}

/* The Deployment: GET, then made or brought to this revision. */
static void
kb_deployment(struct kube *x)
{
	char path[K8S_PATH_MAX];

	x->step = KB_DEPLOYMENT;
	kb_path(x, "deployments", path, sizeof(path));
	if ((x->call = k8s_call(x->k, "GET", path, NULL, on_deployment, x)) ==
	    NULL)
		kb_fail(x, "Deployment", strerror(errno));
}

/* The start failed at what (an object's kind): nothing runs. */
static void
kb_fail(struct kube *x, const char *what, const char *why)
{
	char err[SCALE_REASON_MAX];

	x->call = NULL;
	snprintf(err, sizeof(err), "kubernetes: %s %s/%s: %s", what,
	    x->k->ns, strcmp(what, "Deployment") == 0 ? x->ref.deployment :
	    x->ref.name, why);
	backend_failed(x->in, err);
}

/* The Deployment as it is: made, or brought to this revision. */
static void
on_deployment(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;
	struct inst *in = x->in;
	char path[K8S_PATH_MAX];
	const char *method = "POST";
	json_t *dep, *rv;
	int64_t replicas = 0;

	x->call = NULL;
	if (x->ref.theirs) {
		on_theirs(x, status, body, err);
		return;
	}
	if (err != NULL && status != 404) {
		kb_fail(x, "Deployment", err);
		return;
	}
	if (err == NULL && k8s_revision_of(body) == in->revision) {
		kb_service(x);
		return;
	}
	if (err == NULL) {		/* another revision's: updated */
		method = "PUT";
		replicas = json_integer_value(json_object_get(
		    json_object_get(body, "spec"), "replicas"));
	}
	if ((dep = k8s_deployment(&x->ref, &inst_def(in)->spec, replicas)) ==
	    NULL) {
		kb_fail(x, "Deployment", "unable to make its object (the "
		    "image's name is too long, or no memory)");
		return;
	}
	rv = json_object_get(json_object_get(body, "metadata"),
	    "resourceVersion");
	if (err == NULL && rv != NULL)	/* refused if it changed meanwhile */
		json_object_set(json_object_get(dep, "metadata"),
		    "resourceVersion", rv);
	kb_path(x, "deployments", path, sizeof(path));
	if (err != NULL)
		*strrchr(path, '/') = '\0';	/* POST to the collection */
	if ((x->call = k8s_call(x->k, method, path, dep, on_written, x)) ==
	    NULL)
		kb_fail(x, "Deployment", strerror(errno));
}

/*
 * The operator's Deployment (kubernetes_deployment): never made nor
 * written, only read for the labels that select its pods.
 */
static void
on_theirs(struct kube *x, int status, json_t *body, const char *err)
{
	if (err != NULL) {
		kb_fail(x, "Deployment", status == 404 ? "not found "
		    "(kubernetes_deployment names a Deployment the operator "
		    "makes; hk makes none)" : err);
		return;
	}
	if (kb_selector(x, body) == -1) {
		kb_fail(x, "Deployment", "no spec.selector.matchLabels of "
		    "strings (hk selects its pods by them)");
		return;
	}
	kb_service(x);
}

/* The matchLabels of the operator's Deployment dep, kept: 0, or -1. */
static int
kb_selector(struct kube *x, json_t *dep)
{
	json_t *m = json_object_get(json_object_get(json_object_get(dep,
	    "spec"), "selector"), "matchLabels");
	const char *key;
	json_t *v;

	if (!json_is_object(m) || json_object_size(m) == 0)
		return -1;
	json_object_foreach(m, key, v)
		if (!json_is_string(v))
			return -1;
	json_decref(x->selector);
	x->selector = json_incref(m);
	return 0;
}

static void
on_written(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;

	(void)body;
	x->call = NULL;
	/* the cluster wrote it between the GET and the PUT (its status) */
	if (err != NULL && status == 409 && x->conflicts++ < K8S_CONFLICTS)
		kb_deployment(x);
	else if (err != NULL)
		kb_fail(x, "Deployment", err);
	else
		kb_service(x);
}

/* The Service whose EndpointSlices are watched: made if missing. */
static void
kb_service(struct kube *x)
{
	char path[K8S_PATH_MAX];

	x->step = KB_SERVICE;
	kb_path(x, "services", path, sizeof(path));
	if ((x->call = k8s_call(x->k, "GET", path, NULL, on_service, x)) ==
	    NULL)
		kb_fail(x, "Service", strerror(errno));
}

static void
on_service(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;
	char path[K8S_PATH_MAX];
	json_t *svc;

	x->call = NULL;
	if (x->step == KB_SCALE_UP && status == 409) {
		kb_service(x);		/* made meanwhile: read it */
		return;
	}
	if (err == NULL) {
		if (x->in->sc->cfg.kubernetes_service_address &&
		    kb_service_ep(x, body) == -1) {
			kb_fail(x, "Service", "it has no cluster IP (a "
			    "headless Service), and kubernetes_service_address "
			    "needs one");
			return;
		}
		kb_scale(x, 1);
		return;
	}
	if (status != 404 || x->step == KB_SCALE_UP) {
		kb_fail(x, "Service", err);
		return;
	}
	if ((svc = k8s_service(&x->ref, &inst_def(x->in)->spec,
	    x->ref.theirs ? x->selector : NULL)) == NULL) {
		kb_fail(x, "Service", "out of memory");
		return;
	}
	x->step = KB_SCALE_UP;		/* the POST's answer is next */
	kb_path(x, "services", path, sizeof(path));
	*strrchr(path, '/') = '\0';
	if ((x->call = k8s_call(x->k, "POST", path, svc, on_service, x)) ==
	    NULL)
		kb_fail(x, "Service", strerror(errno));
}

/*
 * kubernetes_service_address: the Service's clusterIP and first port, as
 * the endpoint the gateway forwards to.  -1 if it has none (headless).
 */
static int
kb_service_ep(struct kube *x, const json_t *svc)
{
	const json_t *spec = json_object_get(svc, "spec");
	const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
	json_int_t port = json_integer_value(json_object_get(json_array_get(
	    json_object_get(spec, "ports"), 0), "port"));

	if (ip == NULL || ip[0] == '\0' || strcmp(ip, "None") == 0 ||
	    port <= 0 || port > 65535)
		return -1;
	snprintf(x->svc_ep, sizeof(x->svc_ep), strchr(ip, ':') != NULL ?
	    "[%s]:%lld" : "%s:%lld", ip, (long long)port);
	return 0;
}

/* The endpoint the gateway forwards to: the pod's, or its Service's. */
static void
kb_endpoint(struct kube *x, const char *pod_ep)
{
	struct inst *in = x->in;
	const char *ep = in->sc->cfg.kubernetes_service_address ? x->svc_ep :
	    pod_ep;

	strlcpy(in->endpoint, ep, sizeof(in->endpoint));
	in->port = atoi(strrchr(ep, ':') + 1);
}

/* The scale subresource to replicas: on_scaled() then. */
static void
kb_scale(struct kube *x, int64_t replicas)
{
	char path[K8S_PATH_MAX];

	x->step = replicas > 0 ? KB_SCALE_UP : KB_SCALE_DOWN;
	kb_path(x, "deployments", path, sizeof(path));
	strlcat(path, "/scale", sizeof(path));
	if ((x->call = k8s_call(x->k, "PUT", path, k8s_scale(x->k->ns,
	    x->ref.deployment, replicas), on_scaled, x)) == NULL)
		on_scaled(x, 0, NULL, strerror(errno));
}

static void
on_scaled(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;
	struct inst *in = x->in;

	(void)body;
	x->call = NULL;
	if (x->failing) {
		if (err != NULL && status != 404)
			log_warnx("service=%s: kubernetes: scale %s to 0: %s",
			    in->id, x->ref.name, err);
		backend_failed(in, x->why);	/* x is freed */
		return;
	}
	if (x->step == KB_SCALE_UP && err != NULL) {
		kb_fail(x, "Deployment", err);
		return;
	}
	if (x->step == KB_SCALE_DOWN && err != NULL) {
		/* 404: nothing was made; else nothing more can be done */
		if (status != 404)
			log_warnx("service=%s: kubernetes: scale %s to 0: %s",
			    in->id, x->ref.name, err);
		backend_exited(in, -1, x->why[0] != '\0' ? x->why : NULL);
		return;
	}
	if (x->step == KB_SCALE_DOWN && (x->killed || x->listed == 0)) {
		/* none to wait for: no pod was ever listed, or it left */
		backend_exited(in, -1, x->why[0] != '\0' ? x->why : NULL);
		return;
	}
	x->step = x->step == KB_SCALE_UP ? KB_WAIT : KB_DRAIN;
	if (kb_watch(x) == -1) {
		if (x->step == KB_WAIT)
			kb_fail(x, "EndpointSlices of Service", "out of memory");
		else
			backend_exited(in, -1, NULL);
	}
}

/*
 * The watches of its Service's EndpointSlices and of its revision's Pods,
 * opened once: on_seen() at each change of either.  -1 if one cannot be.
 */
static int
kb_watch(struct kube *x)
{
	char path[K8S_PATH_MAX], what[K8S_NAME_MAX + 32];

	if (x->w == NULL) {
		snprintf(what, sizeof(what), "EndpointSlices of %s",
		    x->ref.name);
		if (k8s_slices_path(x->k, x->ref.name, path, sizeof(path)) ==
		    -1 || (x->w = k8s_watch_open(x->in->sc, x->k, what, path,
		    on_seen, x)) == NULL)
			return -1;
	}
	if (x->pw == NULL) {
		snprintf(what, sizeof(what), "Pods of %s revision %lld",
		    x->ref.name, (long long)x->ref.revision);
		if ((x->ref.theirs ? k8s_selector_pods_path(x->k, x->selector,
		    path, sizeof(path)) : k8s_pods_path(x->k, &x->ref, path,
		    sizeof(path))) == -1 ||
		    (x->pw = k8s_watch_open(x->in->sc, x->k, what, path,
		    on_seen, x)) == NULL)
			return -1;
	}
	return 0;
}

/*
 * 1 if another instance, not stopping, runs on the same Deployment: the
 * other side of a roll.  Then this one's stop or end scales nothing.
 */
static int
kb_sibling(const struct kube *x)
{
	const struct kube *o;
	struct inst *in;

	TAILQ_FOREACH(in, &x->in->sc->insts, entry) {
		if (in == x->in || in->be != &backend_kubernetes ||
		    (o = in->priv) == NULL || in->stopping)
			continue;
		if (strcmp(o->ref.name, x->ref.name) == 0)
			return 1;
	}
	return 0;
}

/*
 * A start whose pod will not start by itself (an image that cannot be
 * pulled, a container that exits): failed with the pod's reason, once
 * scaled to 0, not at the deadline.  Beside the old revision's pod (a
 * roll), the Deployment is rolled back, and the old pod serves on.
 */
static void
kb_trouble(struct kube *x, const json_t *pods)
{
	char why[SCALE_REASON_MAX - 64];

	if (x->failing || !k8s_pod_trouble(pods, why, sizeof(why)))
		return;
	snprintf(x->why, sizeof(x->why), "kubernetes: %s", why);
	log_warnx("service=%s: kubernetes: %s: %s", x->in->id, x->in->what,
	    why);
	x->failing = 1;
	if (kb_sibling(x)) {
		kb_rollback(x);
		backend_failed(x->in, x->why);
		return;
	}
	kb_scale(x, 0);
}

/*
 * The instance that serves on x's Deployment while x rolls it (ready,
 * not stopping, of another revision), or NULL.
 */
static const struct kube *
kb_serving(const struct kube *x)
{
	const struct kube *o;
	struct inst *in;

	TAILQ_FOREACH(in, &x->in->sc->insts, entry) {
		if (in == x->in || in->be != &backend_kubernetes ||
		    (o = in->priv) == NULL || in->stopping ||
		    o->step != KB_RUNNING)
			continue;
		if (strcmp(o->ref.name, x->ref.name) == 0 &&
		    o->ref.revision != x->ref.revision)
			return o;
	}
	return NULL;
}

/*
 * x's roll failed (x never got ready): the Deployment's template is the
 * serving instance's revision's again, so that the cluster keeps its pod
 * and removes x's, rather than a rollout left stuck.  Only if the
 * Deployment still holds x's revision (GET, then PUT with its
 * resourceVersion: another write meanwhile, a newer revision's, wins).
 * Not waited for; nothing when none serves, or for the operator's
 * Deployment, which hk never writes.
 */
static void
kb_rollback(const struct kube *x)
{
	const struct kube *o;
	struct rollback *rb;

	if (x->ref.theirs || x->step >= KB_RUNNING ||
	    (o = kb_serving(x)) == NULL)
		return;
	if ((rb = calloc(1, sizeof(*rb))) == NULL ||
	    (rb->dep = k8s_deployment(&o->ref, &inst_def(o->in)->spec, 1)) ==
	    NULL) {
		log_warnx("service=%s: kubernetes: %s: not rolled back to "
		    "revision %lld: out of memory", x->in->id, x->in->what,
		    (long long)o->ref.revision);
		free(rb);
		return;
	}
	rb->k = x->k;
	rb->failed = x->ref.revision;
	rb->to = o->ref.revision;
	strlcpy(rb->id, x->in->id, sizeof(rb->id));
	kb_path(x, "deployments", rb->path, sizeof(rb->path));
	if (k8s_call_owning(x->k, "GET", rb->path, NULL, on_rollback_get, rb,
	    rollback_free) == NULL)
		log_warn("service=%s: kubernetes: %s: not rolled back",
		    x->in->id, x->in->what);
}

static void
rollback_free(void *arg)
{
	struct rollback *rb = arg;

	json_decref(rb->dep);
	free(rb);
}

static void
on_rollback_get(void *arg, int status, json_t *body, const char *err)
{
	struct rollback *rb = arg;
	json_t *rv, *dep = rb->dep;

	(void)status;
	if (err != NULL) {
		log_warnx("service=%s: kubernetes: %s: not rolled back to "
		    "revision %lld: %s", rb->id, rb->path, (long long)rb->to,
		    err);
		return;
	}
	if (k8s_revision_of(body) != rb->failed)
		return;		/* written since: not ours to undo */
	json_object_set(json_object_get(dep, "spec"), "replicas",
	    json_object_get(json_object_get(body, "spec"), "replicas"));
	rv = json_object_get(json_object_get(body, "metadata"),
	    "resourceVersion");
	if (rv != NULL)
		json_object_set(json_object_get(dep, "metadata"),
		    "resourceVersion", rv);
	log_warnx("service=%s: kubernetes: revision %lld's pod failed: the "
	    "Deployment rolled back to revision %lld, whose pod serves on",
	    rb->id, (long long)rb->failed, (long long)rb->to);
	rb->dep = NULL;		/* the PUT's */
	if (k8s_call(rb->k, "PUT", rb->path, dep, on_rolled_back, NULL) ==
	    NULL)
		log_warn("service=%s: kubernetes: roll back", rb->id);
}

static void
on_rolled_back(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)body;
	if (err != NULL && status != 409)
		log_warnx("kubernetes: a Deployment's roll back: %s", err);
}

/* What the EndpointSlices say now of this revision's pods. */
static void
on_seen(void *arg)
{
	struct kube *x = arg;
	struct inst *in = x->in;
	const json_t *slices = k8s_watch_objects(x->w);
	const json_t *pods = k8s_watch_objects(x->pw);
	struct k8s_seen seen;
	char why[SCALE_REASON_MAX - 64];

	if (slices == NULL || pods == NULL)
		return;		/* the other's first list is not in yet */
	k8s_seen(slices, pods, &seen);
	x->listed = (long)seen.mine;
	switch (x->step) {
	case KB_ADOPT_WATCH:
		if (seen.ep[0] == '\0') {
			kb_adopt_not(x);
			return;
		}
		kb_endpoint(x, seen.ep);
		x->step = KB_RUNNING;
		backend_adopted(in, 1);
		return;
	case KB_WAIT:
		if (seen.ep[0] == '\0') {
			kb_trouble(x, pods);
			return;
		}
		kb_endpoint(x, seen.ep);
		x->step = KB_RUNNING;
		if (seen.all == seen.mine)	/* no other revision's runs */
			k8s_secrets_prune(x->k, &x->ref);
		log_info("service=%s: kubernetes: %s ready at %s (revision "
		    "%lld)%s%s", in->id, in->what, seen.ep,
		    (long long)in->revision, strcmp(seen.ep, in->endpoint) != 0 ?
		    ", through its Service at " : "", strcmp(seen.ep,
		    in->endpoint) != 0 ? in->endpoint : "");
		backend_started(in);
		return;
	case KB_RUNNING:
		if (seen.ep[0] != '\0')
			return;
		if (kb_sibling(x)) {
			/*
			 * The roll's end: the cluster removed this pod once
			 * the new revision's was ready, and that instance
			 * takes over (it may not have heard yet).
			 */
			log_info("service=%s: kubernetes: revision %lld's pod "
			    "left the roll", in->id, (long long)in->revision);
			return;
		}
		/*
		 * Scaled to 0, not restarted unwatched; the exit once that
		 * is answered: a wake that follows at once (a request
		 * waiting) scales to 1 after it, not before.
		 */
		if (k8s_pod_trouble(pods, why, sizeof(why)))
			snprintf(x->why, sizeof(x->why), "kubernetes: its pod "
			    "is no longer ready: %s", why);
		else
			snprintf(x->why, sizeof(x->why), "kubernetes: its pod "
			    "is no longer ready (the EndpointSlices list no "
			    "ready endpoint)");
		x->killed = 1;
		kb_scale(x, 0);
		return;
	case KB_DRAIN:
		if (seen.mine != 0)
			return;
		if (seen.all == 0)
			k8s_secrets_prune(x->k, &x->ref);	/* no pod left */
		backend_exited(in, 0, NULL);
		return;
	default:
		return;
	}
}

/* Scaled to 0; over once the slices list no endpoint. */
static void
kb_stop(struct inst *in)
{
	struct kube *x = in->priv;
	const struct service *s = in->svc;
	const char *why = s != NULL && s->down_reason != NULL ?
	    s->down_reason : "stopped";
	char note[128];

	if (x == NULL) {
		backend_exited(in, -1, NULL);
		return;
	}
	if (x->step == KB_SCALE_DOWN || x->step == KB_DRAIN)
		return;
	engine_cancel(x->call);
	x->call = NULL;
	if (kb_sibling(x)) {
		/* the Deployment is the other's now: this pod's end is the
		   cluster's (a roll's), or a roll back's (a failed one's) */
		log_info("service=%s: kubernetes: revision %lld of %s: left to "
		    "the Deployment's rollout", in->id, (long long)in->revision,
		    in->what);
		kb_rollback(x);		/* if it never got ready */
		if (x->killed || x->w == NULL || x->listed == 0) {
			backend_exited(in, -1, NULL);
			return;
		}
		x->step = KB_DRAIN;
		on_seen(x);
		return;
	}
	snprintf(note, sizeof(note), "asleep: %s", why);
	k8s_event(x->k, &x->ref, strcmp(why, "idle") == 0 ? "HTTPIdleSleep" :
	    "Stopped", strcmp(why, "idle") == 0 ? "Sleep" : "Stop", note);
	kb_scale(x, 0);
}

/*
 * Now, or the grace period is over: once the Deployment is at 0 replicas
 * (the scale under way, or asked now), its pod is the cluster's to end,
 * and hk no longer waits for it to leave the EndpointSlices.
 */
static void
kb_kill(struct inst *in)
{
	struct kube *x = in->priv;

	if (x == NULL || x->step == KB_DRAIN) {
		backend_exited(in, -1, NULL);
		return;
	}
	x->killed = 1;
	kb_stop(in);
}

/* An earlier hk-scale's instance: its Deployment, then its slices. */
static void
kb_adopt(struct inst *in, const struct store_instance *r)
{
	char err[SCALE_REASON_MAX], path[K8S_PATH_MAX];
	struct service *s = service_find(in->sc, in->id);
	struct kube *x;

	(void)r;
	if (s == NULL || (x = kb_new(in, &s->def, err, sizeof(err))) ==
	    NULL) {
		if (s != NULL)
			log_warnx("service=%s: %s", in->id, err);
		backend_adopted(in, 0);
		return;
	}
	x->step = KB_ADOPT;
	kb_path(x, "deployments", path, sizeof(path));
	if ((x->call = k8s_call(x->k, "GET", path, NULL, on_adopt_get, x)) ==
	    NULL) {
		log_warn("service=%s: kubernetes: %s", in->id, in->what);
		backend_adopted(in, 0);
	}
}

/* Adopted if it runs the row's revision, else to 0 if it is ours. */
static void
on_adopt_get(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;
	struct inst *in = x->in;
	const char *inst;
	json_int_t replicas;

	x->call = NULL;
	if (err != NULL) {
		if (status != 404)
			log_warnx("service=%s: kubernetes: %s: %s", in->id,
			    in->what, err);
		backend_adopted(in, 0);
		return;
	}
	inst = json_string_value(json_object_get(json_object_get(
	    json_object_get(body, "metadata"), "labels"),
	    "hakopod.io/installation"));
	if (x->ref.theirs) {	/* the operator's: theirs to label */
		if (kb_selector(x, body) == -1 || json_integer_value(
		    json_object_get(json_object_get(body, "spec"),
		    "replicas")) < 1) {
			kb_adopt_not(x);
			return;
		}
	} else if (inst == NULL || strcmp(inst, x->ref.installation) != 0) {
		log_warnx("service=%s: kubernetes: %s is not this "
		    "installation's: left alone", in->id, in->what);
		backend_adopted(in, 0);
		return;
	}
	replicas = json_integer_value(json_object_get(json_object_get(body,
	    "spec"), "replicas"));
	if (!x->ref.theirs && (replicas < 1 ||
	    k8s_revision_of(body) != in->revision)) {
		kb_adopt_not(x);
		return;
	}
	x->step = KB_ADOPT_WATCH;
	if (in->sc->cfg.kubernetes_service_address) {
		/* its Service's address first: the endpoint to forward to */
		char path[K8S_PATH_MAX];

		kb_path(x, "services", path, sizeof(path));
		if ((x->call = k8s_call(x->k, "GET", path, NULL,
		    on_adopt_service, x)) == NULL)
			kb_adopt_not(x);
		return;
	}
	if (kb_watch(x) == -1)
		kb_adopt_not(x);
}

static void
on_adopt_service(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;

	(void)status;
	x->call = NULL;
	if (err != NULL || kb_service_ep(x, body) == -1 || kb_watch(x) == -1)
		kb_adopt_not(x);
}

/*
 * Not adopted: scaled to 0, so that nothing runs unwatched.  The answer
 * is waited for: the service's next wake (a request the gateway holds
 * may ask it at once) scales it to 1, and must come after.
 */
static void
kb_adopt_not(struct kube *x)
{
	char path[K8S_PATH_MAX];

	log_info("service=%s: kubernetes: %s, an earlier run's: scaled to 0",
	    x->in->id, x->in->what);
	x->step = KB_ADOPT_ZERO;
	k8s_watch_close(x->w);	/* it may be the caller: that is allowed */
	k8s_watch_close(x->pw);
	x->w = NULL;
	x->pw = NULL;
	kb_path(x, "deployments", path, sizeof(path));
	strlcat(path, "/scale", sizeof(path));
	if ((x->call = k8s_call(x->k, "PUT", path, k8s_scale(x->k->ns,
	    x->ref.deployment, 0), on_adopt_zero, x)) == NULL) {
		log_warnx("service=%s: kubernetes: scale %s to 0: %s",
		    x->in->id, x->ref.name, strerror(errno));
		backend_adopted(x->in, 0);
	}
}

static void
on_adopt_zero(void *arg, int status, json_t *body, const char *err)
{
	struct kube *x = arg;

	x->call = NULL;
	on_zero(NULL, status, body, err);
	backend_adopted(x->in, 0);
}

static void
on_zero(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)body;
	if (err != NULL && status != 404)
		log_warnx("kubernetes: a Deployment to 0 replicas: %s", err);
}

static int
kb_release(struct inst *in)
{
	struct kube *x = in->priv;

	if (x == NULL)
		return 0;
	in->priv = NULL;
	engine_cancel(x->call);
	k8s_watch_close(x->w);
	k8s_watch_close(x->pw);
	json_decref(x->selector);
	free(x);
	return 0;
}

static void
kb_teardown(struct scale *sc)
{
	k8s_sweep_stop(sc);
	k8s_close();
}
