/*
 * kube-creds - lib/kubeconfig.c's reading of a kubeconfig (or of a pod's
 * in-cluster credentials), used for one GET of the API server's /version
 * over TLS verified against the CA it names, as the Kubernetes backend
 * will reach it: the credentials as hk reads them, checked by a server.
 *
 *	kube-creds [-c context] KUBECONFIG
 *	kube-creds -i DIR		in-cluster, DIR as the service
 *					account's directory
 *
 * Prints what it read, never a secret: "server URL", "namespace NS",
 * "ca yes|no", "token yes|no", "cert yes|no", then "version STATUS" and
 * the answer's gitVersion, or "version error: REASON".  Exits 0 once the
 * server answered 200; 78 when the credentials are refused; 69 when the
 * server cannot be reached or answers otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "kubeconfig.h"

#define PROG		"kube-creds"
#define ANSWER_MAX	65536

struct answer {
	char	buf[ANSWER_MAX + 1];
	size_t	len;
};

static size_t
on_write(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;

	n *= size;
	if (n > ANSWER_MAX - a->len)
		return 0;
	memcpy(a->buf + a->len, p, n);
	a->len += n;
	return n;
}

static void
set_blob(CURL *c, CURLoption opt, const char *pem)
{
	struct curl_blob b = { (void *)pem, strlen(pem), CURL_BLOB_COPY };

	curl_easy_setopt(c, opt, &b);
}

/* GET server/version with c's credentials: 0 on a 200. */
static int
get_version(const struct kube_creds *k)
{
	char url[KUBE_SERVER_MAX + 16], auth[8192], err[CURL_ERROR_SIZE] = "";
	struct curl_slist *h = NULL;
	struct answer a = { .len = 0 };
	json_t *o;
	CURL *c;
	CURLcode rc;
	long status = 0;

	if ((c = curl_easy_init()) == NULL)
		return -1;
	snprintf(url, sizeof(url), "%s/version", k->server);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	if (k->ca_pem != NULL)
		set_blob(c, CURLOPT_CAINFO_BLOB, k->ca_pem);
	if (k->cert_pem != NULL) {
		set_blob(c, CURLOPT_SSLCERT_BLOB, k->cert_pem);
		set_blob(c, CURLOPT_SSLKEY_BLOB, k->key_pem);
		curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (k->token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
		    k->token);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	explicit_bzero(auth, sizeof(auth));
	if (rc != CURLE_OK) {
		printf("version error: %s\n", err[0] != '\0' ? err :
		    curl_easy_strerror(rc));
		return -1;
	}
	a.buf[a.len] = '\0';
	o = json_loads(a.buf, 0, NULL);
	printf("version %ld %s\n", status, json_string_value(
	    json_object_get(o, "gitVersion")) != NULL ?
	    json_string_value(json_object_get(o, "gitVersion")) : "-");
	json_decref(o);
	return status == 200 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct kube_creds k;
	char err[KUBE_ERR_LEN];
	const char *context = NULL, *incluster = NULL;
	int ch, r;

	while ((ch = getopt(argc, argv, "c:i:")) != -1) {
		switch (ch) {
		case 'c':
			context = optarg;
			break;
		case 'i':
			incluster = optarg;
			break;
		default:
			goto usage;
		}
	}
	if ((incluster == NULL) != (optind == argc - 1))
		goto usage;
	if (incluster != NULL)
		r = kube_incluster(incluster, &k, err, sizeof(err));
	else
		r = kubeconfig_load(argv[optind], context, &k, err,
		    sizeof(err));
	if (r == -1) {
		fprintf(stderr, PROG ": %s\n", err);
		return EX_CONFIG;
	}
	printf("server %s\nnamespace %s\nca %s\ntoken %s\ncert %s\n",
	    k.server, k.namespace_, k.ca_pem != NULL ? "yes" : "no",
	    k.token != NULL ? "yes" : "no", k.cert_pem != NULL ? "yes" : "no");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = get_version(&k);
	kube_creds_clear(&k);
	curl_global_cleanup();
	return r == 0 ? EX_OK : EX_UNAVAILABLE;
usage:
	fprintf(stderr, "usage: " PROG " [-c context] kubeconfig\n"
	    "       " PROG " -i directory\n");
	return EX_USAGE;
}
