/*
 * k8s_api.c - the cluster a service runs on with backend = "kubernetes"
 * (hk-backends(7)): its credentials ([server] kubernetes_config, a
 * kubeconfig file, or the pod's own in-cluster ones), and the objects hk
 * makes there for a service: a Deployment of its image, a Service whose
 * EndpointSlices say where the pod is ready, the Deployment's scale, and
 * an events.k8s.io/v1 Event for each wake and sleep.
 *
 * Every object carries the labels that name the installation, the app,
 * the service and (a Deployment) the revision; the Deployment's selector
 * holds the first three alone, for a selector cannot change.
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "container.h"
#include "engine_impl.h"
#include "k8s.h"
#include "log.h"

#define K8S_CONTROLLER	"hakopod.io/hk-scale"

/* The one cluster of this hk-scale: opened once, closed at the end. */
static struct k8s *k8s_the;

static void	on_event_posted(void *, int, json_t *, const char *);

/*
 * The cluster, opened at its first use: a service on it fails to start
 * with the reason (err) when its credentials cannot be read.
 */
struct k8s *
k8s_cluster(struct scale *sc, char *err, size_t errlen)
{
	struct engine_conf ec;
	struct kube_creds cr;
	const char *file = sc->cfg.kubernetes_config;
	char why[KUBE_ERR_LEN];
	struct k8s *k;

	if (k8s_the != NULL)
		return k8s_the;
	/* the objects' labels name it: read (or made) once, now */
	if (installation_id(sc) == -1) {
		snprintf(err, errlen, "kubernetes: unable to read or record "
		    "the installation's ID: %s", store_error(sc->store));
		return NULL;
	}
	memset(&cr, 0, sizeof(cr));
	if ((file[0] != '\0' ? kubeconfig_load(file, NULL, &cr, why,
	    sizeof(why)) : kube_incluster(KUBE_SA_DIR, &cr, why,
	    sizeof(why))) == -1) {
		snprintf(err, errlen, "kubernetes: %s: %s", file[0] != '\0' ?
		    file : "in-cluster credentials (kubernetes_config is "
		    "unset)", why);
		kube_creds_clear(&cr);
		return NULL;
	}
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		snprintf(err, errlen, "kubernetes: out of memory");
		kube_creds_clear(&cr);
		return NULL;
	}
	strlcpy(k->ns, sc->cfg.kubernetes_namespace[0] != '\0' ?
	    sc->cfg.kubernetes_namespace : cr.namespace_, sizeof(k->ns));
	snprintf(k->who, sizeof(k->who), "%s (namespace %s)", cr.server,
	    k->ns);
	memset(&ec, 0, sizeof(ec));
	ec.url = cr.server;
	ec.api = 1;
	ec.ca_pem = cr.ca_pem;
	ec.cert_pem = cr.cert_pem;
	ec.key_pem = cr.key_pem;
	ec.bearer = cr.token;
	k->api = engine_open(sc->loop, &ec, why, sizeof(why));
	kube_creds_clear(&cr);
	if (k->api == NULL) {
		snprintf(err, errlen, "kubernetes: %s", why);
		free(k);
		return NULL;
	}
	log_info("kubernetes: %s", k->who);
	k8s_the = k;
	return k;
}

/* The end of hk-scale: calls still under way go without their callbacks. */
void
k8s_close(void)
{
	if (k8s_the == NULL)
		return;
	engine_close(k8s_the->api);
	free(k8s_the);
	k8s_the = NULL;
}

/*
 * What names in's objects, of service d.  Their name is hk-APP-SVC, a DNS label (names
 * are a-z, 0-9 and '-'); one too long is cut, with a hash of the whole so
 * that two cut alike still differ.
 */
void
k8s_ref(const struct inst *in, const struct svc *d, struct k8s_ref *r)
{
	char whole[2 * STORE_NAME_MAX + 8];
	uint32_t h = 2166136261u;	/* FNV-1a */
	const char *p;

	strlcpy(r->app, d->app, sizeof(r->app));
	strlcpy(r->service, d->name, sizeof(r->service));
	r->revision = in->revision;
	r->installation = in->sc->installation;
	r->node = in->sc->node;
	snprintf(whole, sizeof(whole), "hk-%s-%s", d->app, d->name);
	r->theirs = d->spec.k8s_deployment != NULL;
	if (strlen(whole) <= K8S_NAME_MAX) {
		strlcpy(r->name, whole, sizeof(r->name));
		strlcpy(r->deployment, r->theirs ? d->spec.k8s_deployment :
		    r->name, sizeof(r->deployment));
		return;
	}
	for (p = whole; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(r->name, sizeof(r->name), "%.*s-%08x", K8S_NAME_MAX - 9,
	    whole, h);
	if (r->name[K8S_NAME_MAX - 10] == '-')	/* no "--" */
		r->name[K8S_NAME_MAX - 10] = 'x';
	strlcpy(r->deployment, r->theirs ? d->spec.k8s_deployment : r->name,
	    sizeof(r->deployment));
}

int
k8s_port(const struct service_spec *sp)
{
	return sp->port != 0 ? sp->port : K8S_PORT_DEFAULT;
}

/* The labels of r's objects: with the revision when rev is set. */
json_t *
k8s_labels(const struct k8s_ref *r, int rev)
{
	char revision[24];
	json_t *l;

	snprintf(revision, sizeof(revision), "%lld", (long long)r->revision);
	l = json_pack("{s:s, s:s, s:s, s:s}",
	    "app.kubernetes.io/managed-by", "hakopod",
	    "hakopod.io/installation", r->installation,
	    "hakopod.io/app", r->app, "hakopod.io/service", r->service);
	if (l != NULL && rev && json_object_set_new(l, "hakopod.io/revision",
	    json_string(revision)) == -1) {
		json_decref(l);
		return NULL;
	}
	return l;
}

/* The container's environment: the service's, and PORT. */
static json_t *
env(const struct service_spec *sp)
{
	json_t *a;
	size_t i;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < sp->nenv; i++)
		if (strcmp(sp->env[i].name, "PORT") != 0 &&
		    json_array_append_new(a, json_pack("{s:s, s:s}", "name",
		    sp->env[i].name, "value", sp->env[i].value)) == -1)
			goto fail;
	if (json_array_append_new(a, json_pack("{s:s, s:o}", "name", "PORT",
	    "value", json_sprintf("%d", k8s_port(sp)))) == -1)
		goto fail;
	return a;
fail:
	json_decref(a);
	return NULL;
}

/* The Deployment of r's revision (its spec sp), at replicas. */
json_t *
k8s_deployment(const struct k8s_ref *r, const struct service_spec *sp,
    int64_t replicas)
{
	char image[ENGINE_IMAGE_MAX + 80];
	json_t *dep;

	if (ct_image_ref(sp, image, sizeof(image)) == -1)
		return NULL;
	dep = json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:I, s:{s:o}, "
	    "s:{s:{s:o}, s:{s:[{s:s, s:s, s:[{s:s, s:i, s:s}], s:o}]}}}}",
	    "apiVersion", "apps/v1", "kind", "Deployment",
	    "metadata", "name", r->name, "labels", k8s_labels(r, 1),
	    "spec", "replicas", (json_int_t)replicas,
	    "selector", "matchLabels", k8s_labels(r, 0),
	    "template", "metadata", "labels", k8s_labels(r, 1),
	    "spec", "containers", "name", "service", "image", image,
	    "ports", "name", "http", "containerPort", k8s_port(sp),
	    "protocol", "TCP", "env", env(sp));
	/* a roll: the new pod beside the old, which goes once it is ready */
	if (dep != NULL && json_object_set_new(json_object_get(dep, "spec"),
	    "strategy", json_pack("{s:s, s:{s:i, s:i}}", "type",
	    "RollingUpdate", "rollingUpdate", "maxSurge", 1,
	    "maxUnavailable", 0)) == -1) {
		json_decref(dep);
		return NULL;
	}
	if (dep != NULL && k8s_pod_apply(dep, r, sp) == -1) {
		json_decref(dep);
		return NULL;
	}
	return dep;
}

/*
 * The Service whose EndpointSlices say where r's pod is ready; selector:
 * the operator's Deployment's matchLabels (its port then by number), or
 * NULL for hk's labels.
 */
json_t *
k8s_service(const struct k8s_ref *r, const struct service_spec *sp,
    const json_t *selector)
{
	int port = k8s_port(sp);

	if (selector != NULL)
		return json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:O, s:[{s:s, "
		    "s:i, s:i, s:s}]}}", "apiVersion", "v1", "kind", "Service",
		    "metadata", "name", r->name, "labels", k8s_labels(r, 0),
		    "spec", "selector", selector, "ports", "name", "http",
		    "port", port, "targetPort", port, "protocol", "TCP");
	return json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:o, s:[{s:s, s:i, "
	    "s:s, s:s}]}}", "apiVersion", "v1", "kind", "Service",
	    "metadata", "name", r->name, "labels", k8s_labels(r, 0),
	    "spec", "selector", k8s_labels(r, 0), "ports", "name", "http",
	    "port", port, "targetPort", "http", "protocol", "TCP");
}

/* A Scale (autoscaling/v1) of the Deployment name to replicas. */
json_t *
k8s_scale(const char *ns, const char *name, int64_t replicas)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:I}}",
	    "apiVersion", "autoscaling/v1", "kind", "Scale",
	    "metadata", "name", name, "namespace", ns,
	    "spec", "replicas", (json_int_t)replicas);
}

/* The revision a Deployment's labels name, or 0. */
int64_t
k8s_revision_of(const json_t *dep)
{
	const char *s = json_string_value(json_object_get(json_object_get(
	    json_object_get(dep, "metadata"), "labels"),
	    "hakopod.io/revision"));

	return s != NULL ? strtoll(s, NULL, 10) : 0;
}

/*
 * A call of method on path (from the server's root) with body (taken,
 * may be NULL); fn as engine.h says.  NULL with errno.
 */
struct engine_call *
k8s_call(struct k8s *k, const char *method, const char *path, json_t *body,
    engine_done_fn *fn, void *arg)
{
	return k8s_call_owning(k, method, path, body, fn, arg, NULL);
}

/*
 * As k8s_call(), but the call owns arg and frees it with argfree (if not
 * NULL) when it ends, answered or not (hk-scale exiting with the call in
 * flight): fn must not free it.  On failure arg is freed too.
 */
struct engine_call *
k8s_call_owning(struct k8s *k, const char *method, const char *path,
    json_t *body, engine_done_fn *fn, void *arg, void (*argfree)(void *))
{
	struct engine_call *c;

	c = engine_call_new(k->api, method, path, body);
	json_decref(body);
	if (c == NULL) {
		if (argfree != NULL)
			argfree(arg);
		return NULL;
	}
	c->fn = fn;
	c->arg = arg;
	if (argfree != NULL) {
		c->ctx = arg;
		c->ctxfree = argfree;
	}
	if (engine_call_start(c) == -1)
		return NULL;
	return c;
}

/*
 * An events.k8s.io/v1 Event on r's Deployment: reason (HTTPIdleWake,
 * HTTPIdleSleep), action and note (the cause).  Not waited for: one
 * refused is logged, and hk's own event is written anyway.
 */
void
k8s_event(struct k8s *k, const struct k8s_ref *r, const char *reason,
    const char *action, const char *note)
{
	char name[K8S_NAME_MAX + 24], when[40];
	char path[K8S_PATH_MAX];
	struct timespec ts;
	struct tm tm;
	json_t *ev;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when),
	    ".%06ldZ", ts.tv_nsec / 1000);
	/* as the API server's recorders name theirs: OBJECT.HEX */
	snprintf(name, sizeof(name), "%s.%llx", r->deployment,
	    (unsigned long long)ts.tv_sec * 1000000000ull +
	    (unsigned long long)ts.tv_nsec);
	ev = json_pack("{s:s, s:s, s:{s:s, s:o}, s:s, s:s, s:s, s:s, s:s, "
	    "s:s, s:s, s:{s:s, s:s, s:s, s:s}}",
	    "apiVersion", "events.k8s.io/v1", "kind", "Event",
	    "metadata", "name", name, "labels", k8s_labels(r, 1),
	    "eventTime", when, "reportingController", K8S_CONTROLLER,
	    "reportingInstance", r->node, "action", action,
	    "reason", reason, "note", note, "type", "Normal",
	    "regarding", "apiVersion", "apps/v1", "kind", "Deployment",
	    "name", r->deployment, "namespace", k->ns);
	snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/"
	    "events", k->ns);
	if (ev == NULL || k8s_call(k, "POST", path, ev, on_event_posted,
	    NULL) == NULL)
		log_warnx("service=%s/%s: kubernetes: event %s: not written",
		    r->app, r->service, reason);
}

static void
on_event_posted(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)status;
	(void)body;
	if (err != NULL)
		log_warnx("kubernetes: an event: %s", err);
}
