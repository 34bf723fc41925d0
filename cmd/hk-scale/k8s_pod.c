/*
 * k8s_pod.c - what the pod of a Deployment hk makes carries of its
 * service's keys (hk-backends(7)): size as the container's resource
 * limits, user as the pod's securityContext, node_name as its nodeName,
 * secrets as the revision's Secret (k8s_secret.c) mounted read-only, and
 * with secrets_env as variables that refer to its keys.
 *
 * Only limits are set: the cluster then requests as much as each limit
 * (a Kubernetes rule), so that a pod is placed where its size fits, as
 * the other backends' size is a share of their host that the instance
 * may use in full.
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "k8s.h"
#include "user.h"

static int	pod_secrets_env(json_t *, const char *,
		    const struct service_spec *);

/* The container's resources: size's memory (Mi) and CPUs (millicores). */
static json_t *
pod_resources(const struct service_spec *sp)
{
	int64_t memory, nano_cpus;
	char mem[32], cpu[32];

	if (spec_size_limits(sp->size, &memory, &nano_cpus) == -1)
		return NULL;
	snprintf(mem, sizeof(mem), "%lldMi", (long long)(memory >> 20));
	snprintf(cpu, sizeof(cpu), "%lldm", (long long)(nano_cpus / 1000000));
	return json_pack("{s:{s:s, s:s}}", "limits", "memory", mem, "cpu",
	    cpu);
}

/*
 * The pod's securityContext: runAsUser, and runAsGroup when the user
 * says it (validate accepted numbers only).  An empty object without a
 * user: the image's USER, as before.
 */
static json_t *
pod_security(const struct service_spec *sp)
{
	int64_t uid, gid;
	json_t *o;

	if ((o = json_object()) == NULL || sp->user == NULL ||
	    user_numeric(sp->user, &uid, &gid) == -1)
		return o;
	if (json_object_set_new(o, "runAsUser", json_integer(uid)) == -1 ||
	    (gid != -1 && json_object_set_new(o, "runAsGroup",
	    json_integer(gid)) == -1)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * The revision's Secret as files in /run/secrets, read-only, named by
 * $CREDENTIALS_DIRECTORY as the other backends name theirs.  0440 and
 * the pod's fsGroup its user's group when it has one; else 0444, for a
 * user the image names is not known here.
 */
static int
pod_secrets(json_t *pod, json_t *ct, const struct k8s_ref *r,
    const struct service_spec *sp)
{
	char name[K8S_SECRET_NAME_MAX + 1];
	json_t *sec = json_object_get(pod, "securityContext");
	json_int_t group;

	if (sp->nsecrets == 0)
		return 0;
	k8s_secret_name(r, name, sizeof(name));
	group = json_integer_value(json_object_get(sec, "runAsGroup"));
	if (json_object_get(sec, "runAsGroup") == NULL)
		group = json_integer_value(json_object_get(sec, "runAsUser"));
	if (json_object_get(sec, "runAsUser") != NULL &&
	    json_object_set_new(sec, "fsGroup", json_integer(group)) == -1)
		return -1;
	if (json_object_set_new(pod, "volumes", json_pack("[{s:s, s:{s:s, "
	    "s:i}}]", "name", "hk-secrets", "secret", "secretName", name,
	    "defaultMode", json_object_get(sec, "runAsUser") != NULL ? 0440 :
	    0444)) == -1 ||
	    json_object_set_new(ct, "volumeMounts", json_pack("[{s:s, s:s, "
	    "s:b}]", "name", "hk-secrets", "mountPath", K8S_SECRETS_MOUNT,
	    "readOnly", 1)) == -1)
		return -1;
	if (json_array_append_new(json_object_get(ct, "env"), json_pack(
	    "{s:s, s:s}", "name", "CREDENTIALS_DIRECTORY", "value",
	    K8S_SECRETS_MOUNT)) == -1)
		return -1;
	return pod_secrets_env(ct, name, sp);
}

/*
 * secrets_env: each secret also as the variable of its name, as the
 * exec backend gives it (secrets.c), but a reference to the key of the
 * revision's Secret (valueFrom.secretKeyRef, not optional): the value
 * stays in the Secret, and the kubelet reads it when it starts the
 * container.  A roll's old pod keeps its own revision's Secret.
 */
static int
pod_secrets_env(json_t *ct, const char *secret,
    const struct service_spec *sp)
{
	json_t *env = json_object_get(ct, "env");
	size_t i;

	for (i = 0; sp->secrets_env && i < sp->nsecrets; i++)
		if (json_array_append_new(env, json_pack("{s:s, s:{s:{s:s, "
		    "s:s}}}", "name", sp->secrets[i], "valueFrom",
		    "secretKeyRef", "name", secret, "key",
		    sp->secrets[i])) == -1)
			return -1;
	return 0;
}

/* sp's keys in Deployment dep's pod template; -1 out of memory. */
int
k8s_pod_apply(json_t *dep, const struct k8s_ref *r,
    const struct service_spec *sp)
{
	json_t *pod, *ct, *res, *sec;

	pod = json_object_get(json_object_get(json_object_get(dep, "spec"),
	    "template"), "spec");
	ct = json_array_get(json_object_get(pod, "containers"), 0);
	if (ct == NULL)
		return -1;
	if ((res = pod_resources(sp)) == NULL ||
	    json_object_set_new(ct, "resources", res) == -1)
		return -1;
	if ((sec = pod_security(sp)) == NULL ||
	    json_object_set_new(pod, "securityContext", sec) == -1)
		return -1;
	if (sp->node_name != NULL && json_object_set_new(pod, "nodeName",
	    json_string(sp->node_name)) == -1)
		return -1;
	return pod_secrets(pod, ct, r, sp);
}
