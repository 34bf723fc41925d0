/*
 * app_rules_k8s.c - what backend = "kubernetes" can run (hk.toml(5),
 * hk-backends(7)): an image, with its port, environment, size, user
 * and node_name (app.c reads the last two as the pod's: numbers, a node
 * of the cluster), as a Deployment hk makes.  Every other key of the
 * service that says how or where it runs is refused with the reason
 * rather than kept unapplied.
 */
#include <stddef.h>
#include <string.h>

#include "app_impl.h"
#include "config.h"
#include "cw.h"
#include "spec.h"
#include "toml.h"

static const struct {
	int		 key;	/* SK_* */
	const char	*why;
} k8s_refused[] = {
	{ SK_COMMAND,	"the Deployment runs the image's own entrypoint" },
	{ SK_DIRECTORY,	"a pod works in its image's directory" },
	{ SK_SOURCE,	"a pod runs its image; hk mounts no source into it" },
	{ SK_VOLUMES,	"a Deployment hk makes mounts no volume" },
	{ SK_IMAGE_PULL, "the cluster's kubelet pulls the image, as its "
	    "imagePullPolicy says" },
};

/*
 * With kubernetes_deployment, the operator's Deployment says what runs:
 * keys that would write into it make no sense, for hk never does.
 */
static const struct {
	int		 key;	/* SK_* */
	const char	*why;
} k8s_operator_refused[] = {
	{ SK_IMAGE,	"the operator's Deployment names its image" },
	{ SK_ENVIRONMENT, "hk does not rewrite the operator's Deployment" },
	{ SK_SIZE,	"hk does not rewrite the operator's Deployment" },
	{ SK_USER,	"hk does not rewrite the operator's Deployment" },
	{ SK_NODE_NAME,	"hk does not rewrite the operator's Deployment" },
	{ SK_SECRETS,	"hk mounts nothing into the operator's Deployment" },
	{ SK_SECRETS_ENV, "hk mounts nothing into the operator's "
	    "Deployment" },
};

static void
k8s_operator_rules(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];
	size_t i;

	if (s->k8s_deployment == NULL)
		return;
	if (!config_backend_can(s->backend, BACKEND_IMAGE_ONLY)) {
		cw_kpath_s(key, prefix, "kubernetes_deployment");
		cw_diag(&c->w, slot[SK_KUBERNETES_DEPLOYMENT]->line, key,
		    "only with backend \"kubernetes\"");
		return;
	}
	for (i = 0; i < sizeof(k8s_operator_refused) /
	    sizeof(k8s_operator_refused[0]); i++) {
		if (slot[k8s_operator_refused[i].key] == NULL)
			continue;
		cw_kpath_s(key, prefix,
		    app_svc_keys[k8s_operator_refused[i].key].name);
		cw_diag(&c->w, slot[k8s_operator_refused[i].key]->line, key,
		    "not with kubernetes_deployment: %s",
		    k8s_operator_refused[i].why);
	}
}

/* Each key of s that a Deployment hk makes would not apply. */
void
app_rules_kubernetes(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];
	size_t i;

	k8s_operator_rules(c, slot, prefix, s);
	if (!config_backend_can(s->backend, BACKEND_IMAGE_ONLY))
		return;
	for (i = 0; i < sizeof(k8s_refused) / sizeof(k8s_refused[0]); i++) {
		if (slot[k8s_refused[i].key] == NULL)
			continue;
		cw_kpath_s(key, prefix, app_svc_keys[k8s_refused[i].key].name);
		cw_diag(&c->w, slot[k8s_refused[i].key]->line, key, "not with "
		    "backend \"kubernetes\": %s", k8s_refused[i].why);
	}
	/* hk's own probe of the pod's endpoint, once its slice says ready */
	if (slot[SK_READINESS] != NULL && s->readiness != READY_TCP &&
	    s->readiness != READY_HTTP) {
		cw_kpath_s(key, prefix, "readiness");
		cw_diag(&c->w, slot[SK_READINESS]->line, key, "only \"tcp\" "
		    "or \"http:/PATH\" with backend \"kubernetes\": the pod "
		    "is ready once its EndpointSlice says so and its port "
		    "accepts a connection (or answers PATH)");
	}
}
