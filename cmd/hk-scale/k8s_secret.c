/*
 * k8s_secret.c - a service's secrets (hk.toml(5) "secrets") on
 * backend = "kubernetes" (hk-backends(7)): one Secret per revision,
 * NAME-rREVISION, labelled as hk's other objects (installation, app,
 * service, revision), whose keys are the secrets' names; the Deployment's
 * pod mounts it read-only at /run/secrets (k8s_pod.c), as the container
 * backend mounts its files.  With secrets_env its container's variables
 * of the same names refer to its keys (secretKeyRef): the kubelet reads
 * the values, and the Deployment holds none.
 *
 * The values are opened from the store as secrets.c opens them, each at
 * the start that writes the Secret, so that "hk secret set" reaches the
 * next start.  None is logged; the request that carries them is the
 * API's, over TLS, and the cluster keeps them from then on (the reason a
 * Secret, not the Deployment's environment, holds them).
 *
 * Once the service's pod runs alone (or none runs), the Secrets of its
 * earlier revisions are deleted: no pod uses them any more.  A later
 * revision's is not: its readiness gate may be starting meanwhile, as an
 * instance of its own (revisions only grow: a rollback is a new one).
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "k8s.h"
#include "log.h"
#include "scale.h"
#include "secret.h"

/* What a prune's answers need: r may be gone by then. */
struct prune {
	struct k8s	*k;
	char		 name[K8S_SECRET_NAME_MAX + 1];	/* the one kept */
	int64_t		 revision;	/* and any of a later revision */
};

static void	on_listed(void *, int, json_t *, const char *);
static void	on_deleted(void *, int, json_t *, const char *);

void
k8s_secret_name(const struct k8s_ref *r, char *dst, size_t size)
{
	snprintf(dst, size, "%s-r%lld", r->name, (long long)r->revision);
}

/*
 * Secret name's value in base64, into data; -1 with a reason.  As a
 * variable too (env: secrets_env), one with a NUL is refused, as the
 * exec backend refuses it (secrets.c): no environment can hold it.
 */
static int
secret_put(struct scale *sc, const struct secret_key *k, const char *app,
    const char *name, int env, json_t *data, char *err, size_t errlen)
{
	unsigned char *v = NULL;
	size_t vlen = 0, n;
	char *b;
	int r;

	if (secrets_fetch(sc, k, app, name, &v, &vlen, err, errlen) == -1)
		return -1;
	if (env && memchr(v, '\0', vlen) != NULL) {
		secret_free(v, vlen);
		snprintf(err, errlen, "secret %s: holds a NUL byte: not a "
		    "variable (secrets_env)", name);
		return -1;
	}
	r = -1;
	if ((b = malloc(B64_LEN(vlen) + 1)) != NULL) {
		n = b64_encode(v, vlen, b);
		b[n] = '\0';
		r = json_object_set_new(data, name, json_string(b));
		explicit_bzero(b, n);
		free(b);
	}
	secret_free(v, vlen);
	if (r == -1)
		snprintf(err, errlen, "secret %s: out of memory", name);
	return r;
}

/* The Secret of r's revision, of sp's secrets; NULL with a reason. */
json_t *
k8s_secret(struct scale *sc, const struct k8s_ref *r,
    const struct service_spec *sp, char *err, size_t errlen)
{
	char name[K8S_SECRET_NAME_MAX + 1];
	struct secret_key key;
	json_t *o, *data;
	size_t i;
	int rc = 0;

	if (secret_key_load(sc->cfg.secret_key_file, 0, &key, err,
	    errlen) == -1)
		return NULL;
	k8s_secret_name(r, name, sizeof(name));
	o = json_pack("{s:s, s:s, s:{s:s, s:o}, s:s, s:{}}", "apiVersion",
	    "v1", "kind", "Secret", "metadata", "name", name, "labels",
	    k8s_labels(r, 1), "type", "Opaque", "data");
	data = json_object_get(o, "data");
	if (o == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	for (i = 0; rc == 0 && i < sp->nsecrets; i++)
		rc = secret_put(sc, &key, r->app, sp->secrets[i],
		    sp->secrets_env, data, err, errlen);
	secret_key_clear(&key);
	if (rc == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * The Secrets of r's service of revisions before its own, deleted:
 * listed by the labels of this installation, app and service.
 */
void
k8s_secrets_prune(struct k8s *k, const struct k8s_ref *r)
{
	char path[K8S_PATH_MAX];
	struct prune *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return;
	p->k = k;
	p->revision = r->revision;
	k8s_secret_name(r, p->name, sizeof(p->name));
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets?"
	    "labelSelector=hakopod.io%%2Finstallation%%3D%s%%2C"
	    "hakopod.io%%2Fapp%%3D%s%%2Chakopod.io%%2Fservice%%3D%s", k->ns,
	    r->installation, r->app, r->service);
	if (k8s_call_owning(k, "GET", path, NULL, on_listed, p, free) == NULL)
		log_warn("kubernetes: secrets of %s", r->name);
}

static void
on_listed(void *arg, int status, json_t *body, const char *err)
{
	struct prune *p = arg;
	char path[K8S_PATH_MAX];
	const char *name;
	json_t *sec;
	size_t i;

	(void)status;
	if (err != NULL)
		log_warnx("kubernetes: secrets of revisions before %s: %s",
		    p->name, err);
	json_array_foreach(json_object_get(body, "items"), i, sec) {
		name = json_string_value(json_object_get(json_object_get(sec,
		    "metadata"), "name"));
		if (err != NULL || name == NULL || strcmp(name, p->name) == 0 ||
		    strlen(name) > K8S_SECRET_NAME_MAX ||
		    k8s_revision_of(sec) >= p->revision)
			continue;
		log_info("kubernetes: secret %s/%s: no pod uses it: deleted",
		    p->k->ns, name);
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s",
		    p->k->ns, name);
		if (k8s_call(p->k, "DELETE", path, NULL, on_deleted, NULL) ==
		    NULL)
			log_warn("kubernetes: delete secret %s", name);
	}
}

static void
on_deleted(void *arg, int status, json_t *body, const char *err)
{
	(void)arg;
	(void)body;
	if (err != NULL && status != 404)
		log_warnx("kubernetes: a Secret of an old revision: %s", err);
}
