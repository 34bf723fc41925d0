/*
 * k8s.h - the Kubernetes backend's own (backend_kubernetes.c): the
 * cluster's client and the objects hk makes (k8s_api.c), and the watch
 * of a Service's EndpointSlices (k8s_watch.c).  The HTTP transport is
 * the container backend's (engine.c, opened with engine_conf.api): the
 * same libcurl multi client on hk-scale's loop.
 */
#ifndef HK_K8S_H
#define HK_K8S_H

#include <jansson.h>

#include "engine.h"
#include "kubeconfig.h"
#include "scale.h"

#define K8S_NAME_MAX		63	/* a DNS label: the objects' names */
#define K8S_PATH_MAX		512
#define K8S_PORT_DEFAULT	8080	/* containerPort for port = 0 */
#define K8S_RETRY_MS		1000	/* a watch that failed, again */
#define K8S_CONFLICTS		5	/* a Deployment's PUT, read again */

/* The cluster, opened at the first start of a service on it. */
struct k8s {
	struct engine	*api;
	char		 ns[KUBE_NAMESPACE_MAX + 1];
	char		 who[KUBE_SERVER_MAX + KUBE_NAMESPACE_MAX + 16]; /* logs */
};

/*
 * What names a service's objects, copied at its instance's start: its
 * service may go (retired, removed) before the instance's stop.
 */
struct k8s_ref {
	char		 app[STORE_NAME_MAX + 1];
	char		 service[STORE_NAME_MAX + 1];
	char		 name[K8S_NAME_MAX + 1];	/* the objects' */
	char		 deployment[K8S_NAME_MAX + 1];	/* name, or the
						   operator's (theirs) */
	int		 theirs;	/* kubernetes_deployment: never
					   written, only scaled */
	int64_t		 revision;
	const char	*installation;	/* hk-scale's */
	const char	*node;		/* reportingInstance */
};

/* k8s_api.c */
struct k8s	*k8s_cluster(struct scale *, char *, size_t);
void		 k8s_close(void);
void		 k8s_ref(const struct inst *, const struct svc *,
		    struct k8s_ref *);
int		 k8s_port(const struct service_spec *);
json_t		*k8s_labels(const struct k8s_ref *, int);
json_t		*k8s_deployment(const struct k8s_ref *,
		    const struct service_spec *, int64_t);
json_t		*k8s_service(const struct k8s_ref *, const struct service_spec *,
		    const json_t *);
json_t		*k8s_scale(const char *, const char *, int64_t);
struct engine_call *k8s_call(struct k8s *, const char *, const char *,
		    json_t *, engine_done_fn *, void *);
struct engine_call *k8s_call_owning(struct k8s *, const char *,
		    const char *, json_t *, engine_done_fn *, void *,
		    void (*)(void *));
void		 k8s_event(struct k8s *, const struct k8s_ref *, const char *,
		    const char *, const char *);
int64_t		 k8s_revision_of(const json_t *);

/* k8s_pod.c: size, user, node_name and secrets in a Deployment's pod */
int		 k8s_pod_apply(json_t *, const struct k8s_ref *,
		    const struct service_spec *);

/*
 * k8s_secret.c: the Secret of a revision's secrets, its name; those of
 * the service's other revisions deleted (not waited for).
 */
#define K8S_SECRET_NAME_MAX	(K8S_NAME_MAX + 24)
#define K8S_SECRETS_MOUNT	"/run/secrets"
void		 k8s_secret_name(const struct k8s_ref *, char *, size_t);
json_t		*k8s_secret(struct scale *, const struct k8s_ref *,
		    const struct service_spec *, char *, size_t);
void		 k8s_secrets_prune(struct k8s *, const struct k8s_ref *);

/*
 * backend_kubernetes.c: 1 if an instance's objects are named so; 1 if
 * an instance runs app/service's revision.
 */
int		 k8s_claimed(struct scale *, const char *);
int		 k8s_revision_used(struct scale *, const char *, const char *,
		    int64_t);

/*
 * k8s_sweep.c: this installation's Deployments that no instance names,
 * to 0; then its Secrets nothing uses, deleted, and again every so
 * often while hk-scale runs (until k8s_sweep_stop())
 */
void		 k8s_sweep(struct scale *);
void		 k8s_sweep_stop(struct scale *);

/*
 * k8s_watch.c: a collection (path: its list's, with ?labelSelector=)
 * listed, then watched from the list's resourceVersion; resumed from the
 * last one seen when the stream ends, relisted after a 410 Gone.  fn is
 * called after each change; k8s_watch_objects() then holds the objects
 * by name (NULL before the first list).  what names it in the logs.
 */
typedef void	k8s_watch_fn(void *);
struct k8s_watch;
struct k8s_watch *k8s_watch_open(struct scale *, struct k8s *, const char *,
		    const char *, k8s_watch_fn *, void *);
json_t		*k8s_watch_objects(const struct k8s_watch *);
void		 k8s_watch_close(struct k8s_watch *);

/*
 * k8s_ready.c: what the EndpointSlices say of a revision's pods (those
 * its Pods watch lists): a ready endpoint of one ("" none), how many of
 * the endpoints are theirs, how many there are in all.  k8s_pod_trouble:
 * why one of the pods will not start (its container's waiting reason:
 * ErrImagePull, CrashLoopBackOff...).
 */
struct k8s_seen {
	char		 ep[SCALE_ENDPOINT_MAX];
	size_t		 mine;
	size_t		 all;
};
void		 k8s_seen(const json_t *, const json_t *, struct k8s_seen *);
int		 k8s_slices_path(const struct k8s *, const char *, char *,
		    size_t);
int		 k8s_pod_trouble(const json_t *, char *, size_t);
int		 k8s_pods_path(const struct k8s *, const struct k8s_ref *,
		    char *, size_t);
int		 k8s_selector_pods_path(const struct k8s *, const json_t *,
		    char *, size_t);

#endif
