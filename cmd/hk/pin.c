/*
 * pin.c - hk apply pins a container service's image (hk.toml(5)
 * image_pull): a tag is resolved to the digest its registry serves now,
 * which goes into the spec ("image_digest"), so that a revision runs
 * one image, and a tag pushed again changes what runs only through an
 * apply that shows the new digest (a new revision).
 *
 * hk asks the registry itself, as Knative's controller does, rather than
 * an engine: podman's Docker-compatible API has no GET /distribution,
 * and the digest a pull leaves in an image's RepoDigests is not always
 * the registry's (a pushed image carries the local one too).  One HEAD
 * of /v2/NAME/manifests/TAG answers Docker-Content-Digest: the digest of
 * the manifest, or of the index of a multi-platform image, which is
 * what a pull by digest asks for.  Basic auth and the bearer token dance
 * (RFC 6750, as Docker Hub and ghcr.io) use registry_auth_file's entry;
 * TLS trusts the system's CAs, or the CA the engines trust for that
 * registry, certs.d/HOST:PORT/ca.crt under /etc/containers or
 * /etc/docker.
 *
 * Not resolved: an image given by digest (already pinned), one of
 * podman's local names (registry "localhost", which no registry
 * serves), and image_pull = "never" (the engine's image runs as named).
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "config.h"
#include "hk.h"
#include "regauth.h"
#include "spec.h"

#define PIN_TIMEOUT_MS	30000L		/* a registry's answer */
#define PIN_HDR_MAX	2048		/* a header line we keep */
#define PIN_ERR_LEN	512
#define MANIFEST_TYPES	"Accept: " \
	"application/vnd.docker.distribution.manifest.list.v2+json, " \
	"application/vnd.oci.image.index.v1+json, " \
	"application/vnd.docker.distribution.manifest.v2+json, " \
	"application/vnd.oci.image.manifest.v1+json"

struct ref {
	char	host[REGAUTH_HOST_MAX + 1];	/* as the engines name it */
	char	api[REGAUTH_HOST_MAX + 1];	/* where its API answers */
	char	repo[CONFIG_URL_MAX];
	char	tag[129];
};

struct answer {
	char	digest[SPEC_DIGEST_MAX + 1];
	char	challenge[PIN_HDR_MAX];		/* WWW-Authenticate */
	char	*body;
	size_t	len;
};

static int	 ref_parse(const char *, struct ref *);
static int	 pin_one(struct hk *, struct service_spec *, char *, size_t);
static long	 head_manifest(const struct ref *, const char *, const char *,
		    const char *, struct answer *, char *, size_t);
static int	 bearer_token(const struct ref *, const char *, const char *,
		    const char *, char **, char *, size_t);
static int	 param(const char *, const char *, char *, size_t);
static void	 trust(CURL *, const struct ref *);
static size_t	 on_header(char *, size_t, size_t, void *);
static size_t	 on_body(char *, size_t, size_t, void *);

/*
 * Pins every container service of app whose image is a tag.  EX_OK, or
 * EX_UNAVAILABLE once a tag could not be resolved: an operator who
 * applies expects what runs to be pinned, so nothing is applied then.
 */
int
images_pin(struct hk *hk, struct app_config *apps, int n)
{
	char err[PIN_ERR_LEN];
	struct service_spec *sp;
	size_t s;
	int i;

	for (i = 0; i < n; i++)
		for (s = 0; s < apps[i].nservices; s++) {
			sp = &apps[i].services[s];
			if (pin_one(hk, sp, err, sizeof(err)) == 0)
				continue;
			fprintf(stderr, "hk: %s/%s: image %s: cannot pin its "
			    "digest: %s\n", apps[i].name, sp->name, sp->image,
			    err);
			return EX_UNAVAILABLE;
		}
	return EX_OK;
}

/* 0 (pinned, or nothing to pin), or -1 with err. */
static int
pin_one(struct hk *hk, struct service_spec *sp, char *err, size_t errlen)
{
	char why[PIN_ERR_LEN], *user = NULL, *pass = NULL, *token = NULL;
	struct answer a;
	struct ref r;
	long status;
	int rc = -1;

	if (sp->image == NULL || !config_backend_can(sp->backend,
	    BACKEND_ENGINE) || sp->image_pull == IMAGE_PULL_NEVER ||
	    strchr(sp->image, '@') != NULL)
		return 0;
	if (ref_parse(sp->image, &r) == -1) {
		snprintf(err, errlen, "not a reference hk can resolve");
		return -1;
	}
	if (strcmp(r.host, "localhost") == 0)
		return 0;
	if (regauth_creds(hk->cfg.registry_auth_file, sp->image, &user,
	    &pass, err, errlen) == -1)
		return -1;
	memset(&a, 0, sizeof(a));
	status = head_manifest(&r, user, pass, NULL, &a, err, errlen);
	if (status == 401 && strncasecmp(a.challenge, "Bearer ", 7) == 0) {
		if (bearer_token(&r, a.challenge, user, pass, &token, why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "%s", why);
			goto out;
		}
		memset(&a, 0, sizeof(a));
		status = head_manifest(&r, NULL, NULL, token, &a, err,
		    errlen);
	}
	if (status == -1)
		goto out;
	if (status != 200)
		snprintf(err, errlen, "https://%s/v2/%s/manifests/%s: %ld%s",
		    r.api, r.repo, r.tag, status, status == 401 ?
		    (user != NULL ? " (the credentials of registry_auth_file "
		    "are refused)" : " (no credentials for this registry in "
		    "registry_auth_file)") : status == 404 ?
		    " (no such tag)" : "");
	else if (!spec_valid_digest(a.digest))
		snprintf(err, errlen, "the registry named no digest "
		    "(Docker-Content-Digest)");
	else if (spec_set_image_digest(sp, a.digest) == -1)
		snprintf(err, errlen, "%s", strerror(ENOMEM));
	else
		rc = 0;
out:
	regauth_free(user);
	regauth_free(pass);
	regauth_free(token);
	return rc;
}

/*
 * [HOST/]NAME[:TAG] as the engines read it: HOST when the first
 * component has a '.' or ':' or is localhost, else Docker Hub, whose
 * one-component names are under library/.
 */
static int
ref_parse(const char *image, struct ref *r)
{
	const char *name = image, *slash, *colon;
	size_t n;

	memset(r, 0, sizeof(*r));
	if (regauth_registry(image, r->host, sizeof(r->host)) == -1)
		return -1;
	slash = strchr(image, '/');
	if (slash != NULL && strncmp(image, r->host, strlen(r->host)) == 0 &&
	    image + strlen(r->host) == slash)
		name = slash + 1;
	strlcpy(r->api, strcmp(r->host, "docker.io") == 0 ?
	    "registry-1.docker.io" : r->host, sizeof(r->api));
	slash = strrchr(name, '/');
	colon = strrchr(slash != NULL ? slash : name, ':');
	n = colon != NULL ? (size_t)(colon - name) : strlen(name);
	if (strcmp(r->host, "docker.io") == 0 && memchr(name, '/', n) ==
	    NULL && strlcpy(r->repo, "library/", sizeof(r->repo)) >=
	    sizeof(r->repo))
		return -1;
	if (strlen(r->repo) + n >= sizeof(r->repo) || n == 0)
		return -1;
	strncat(r->repo, name, n);
	if (strlcpy(r->tag, colon != NULL ? colon + 1 : "latest",
	    sizeof(r->tag)) >= sizeof(r->tag) || r->tag[0] == '\0')
		return -1;
	return 0;
}

/* The status of HEAD (GET for a token's realm) , or -1 with err. */
static long
head_manifest(const struct ref *r, const char *user, const char *pass,
    const char *token, struct answer *a, char *err, size_t errlen)
{
	char url[CONFIG_URL_MAX * 2], curlerr[CURL_ERROR_SIZE] = "", *bearer;
	struct curl_slist *h;
	CURL *c;
	long status = -1;
	CURLcode res;

	snprintf(url, sizeof(url), "https://%s/v2/%s/manifests/%s", r->api,
	    r->repo, r->tag);
	if ((c = curl_easy_init()) == NULL ||
	    (h = curl_slist_append(NULL, MANIFEST_TYPES)) == NULL) {
		curl_easy_cleanup(c);
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -1;
	}
	bearer = NULL;
	if (token != NULL && (asprintf(&bearer, "Authorization: Bearer %s",
	    token) == -1 || curl_slist_append(h, bearer) == NULL)) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, PIN_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curlerr);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	if (user != NULL && pass != NULL) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, pass);
	}
	trust(c, r);
	if ((res = curl_easy_perform(c)) != CURLE_OK)
		snprintf(err, errlen, "https://%s: %s", r->api,
		    curlerr[0] != '\0' ? curlerr : curl_easy_strerror(res));
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
out:
	if (bearer != NULL) {
		explicit_bzero(bearer, strlen(bearer));
		free(bearer);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/*
 * A token from the challenge's realm, for its service and scope, asked
 * with the registry's credentials when there are some (anonymous pulls
 * of public images get one too).
 */
static int
bearer_token(const struct ref *r, const char *challenge, const char *user,
    const char *pass, char **token, char *err, size_t errlen)
{
	char realm[PIN_HDR_MAX], service[PIN_HDR_MAX], scope[PIN_HDR_MAX];
	char curlerr[CURL_ERROR_SIZE] = "", *url = NULL, *qs = NULL, *qc = NULL;
	struct answer a;
	json_t *doc = NULL;
	const char *t;
	long status = 0;
	CURL *c;
	int rc = -1;

	*token = NULL;
	memset(&a, 0, sizeof(a));
	if (param(challenge, "realm", realm, sizeof(realm)) == -1 ||
	    strncmp(realm, "https://", 8) != 0) {
		snprintf(err, errlen, "a bearer challenge without an https "
		    "realm");
		return -1;
	}
	if (param(challenge, "service", service, sizeof(service)) == -1)
		service[0] = '\0';
	if (param(challenge, "scope", scope, sizeof(scope)) == -1)
		snprintf(scope, sizeof(scope), "repository:%s:pull", r->repo);
	if ((c = curl_easy_init()) == NULL ||
	    (qs = curl_easy_escape(c, service, 0)) == NULL ||
	    (qc = curl_easy_escape(c, scope, 0)) == NULL ||
	    asprintf(&url, "%s%sservice=%s&scope=%s", realm, strchr(realm,
	    '?') != NULL ? "&" : "?", qs, qc) == -1) {
		url = NULL;
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, PIN_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curlerr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	if (user != NULL && pass != NULL) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, pass);
	}
	trust(c, r);
	if (curl_easy_perform(c) != CURLE_OK) {
		snprintf(err, errlen, "token: %s", curlerr);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		snprintf(err, errlen, "token: %.200s: %ld%s", realm, status,
		    status == 401 ? " (the credentials of registry_auth_file "
		    "are refused)" : "");
		goto out;
	}
	doc = json_loadb(a.body, a.len, 0, NULL);
	if ((t = json_string_value(json_object_get(doc, "token"))) == NULL)
		t = json_string_value(json_object_get(doc, "access_token"));
	if (t == NULL || strpbrk(t, "\r\n") != NULL ||
	    (*token = strdup(t)) == NULL)
		snprintf(err, errlen, "token: %.200s: no token in its answer",
		    realm);
	else
		rc = 0;
out:
	json_decref(doc);
	if (a.body != NULL) {
		explicit_bzero(a.body, a.len);
		free(a.body);
	}
	curl_free(qs);
	curl_free(qc);
	free(url);
	curl_easy_cleanup(c);
	return rc;
}

/* name="value" in a challenge. */
static int
param(const char *challenge, const char *name, char *dst, size_t size)
{
	const char *p = challenge, *end;
	size_t n = strlen(name);

	while ((p = strstr(p, name)) != NULL) {
		if ((p == challenge || p[-1] == ' ' || p[-1] == ',') &&
		    strncmp(p + n, "=\"", 2) == 0) {
			p += n + 2;
			if ((end = strchr(p, '"')) == NULL ||
			    (size_t)(end - p) >= size)
				return -1;
			memcpy(dst, p, end - p);
			dst[end - p] = '\0';
			return 0;
		}
		p += n;
	}
	return -1;
}

/* The CA the engines trust for this registry, when there is one. */
static void
trust(CURL *c, const struct ref *r)
{
	static const char *const dirs[] = {
		"/etc/containers/certs.d", "/etc/docker/certs.d",
	};
	char path[CONFIG_URL_MAX];
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/ca.crt", dirs[i], r->host);
		if (access(path, R_OK) == 0) {
			curl_easy_setopt(c, CURLOPT_CAINFO, path);
			return;
		}
	}
}

static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n, k;
	const char *v;

	if (len > 22 && strncasecmp(p, "Docker-Content-Digest:", 22) == 0) {
		for (v = p + 22; v < p + len && *v == ' '; v++)
			;
		for (k = 0; v + k < p + len && !isspace((unsigned char)v[k]) &&
		    k < sizeof(a->digest) - 1; k++)
			a->digest[k] = v[k];
		a->digest[k] = '\0';
	} else if (len > 17 && strncasecmp(p, "WWW-Authenticate:", 17) ==
	    0) {
		for (v = p + 17; v < p + len && *v == ' '; v++)
			;
		k = (size_t)(p + len - v);
		while (k > 0 && isspace((unsigned char)v[k - 1]))
			k--;
		if (k < sizeof(a->challenge)) {
			memcpy(a->challenge, v, k);
			a->challenge[k] = '\0';
		}
	}
	return len;
}

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;
	char *b;

	if (a->len + len > 65536 || (b = realloc(a->body, a->len + len +
	    1)) == NULL)
		return 0;
	memcpy(b + a->len, p, len);
	a->len += len;
	b[a->len] = '\0';
	a->body = b;
	return len;
}
