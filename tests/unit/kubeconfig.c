/*
 * kubeconfig.c - lib/kubeconfig.c: a kubeconfig's context read into
 * credentials (values, and files beside it), what is refused and why,
 * and a pod's service account's.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kubeconfig.h"
#include "tap.h"

#define CL(x)	"clusters:\n- name: c\n  cluster:\n" x
#define CTX(x)	"contexts:\n- name: hk\n  context:\n    cluster: c\n" x
#define USR(x)	"users:\n- name: u\n  user:\n" x
#define SRV	"    server: https://127.0.0.1:6443\n"
/* base64 of "-----BEGIN CERTIFICATE-----\n" and of "KEY\n" */
#define CA64	"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
#define KEY64	"S0VZCg=="

struct refusal {
	const char	*name;
	const char	*text;
	const char	*want;		/* the start of err */
};

static const struct refusal refusals[] = {
	{ "not YAML", "a: [b", "line " },
	{ "no mapping at the top", "- a\n- b\n", "not a kubeconfig" },
	{ "no current-context", CL(SRV) CTX(""), "no current-context" },
	{ "a context not listed", "current-context: x\n" CL(SRV) CTX(""),
	    "context \"x\": not in contexts" },
	{ "a cluster not listed", "current-context: hk\n" CTX(""),
	    "cluster \"c\": not in clusters" },
	{ "no server", "current-context: hk\n" CL("    x: 1\n") CTX(""),
	    "cluster \"c\": no server" },
	{ "http", "current-context: hk\n"
	    CL("    server: http://127.0.0.1:8080\n") CTX(""),
	    "server \"http://127.0.0.1:8080\": not an https URL" },
	{ "insecure-skip-tls-verify", "current-context: hk\n"
	    CL(SRV "    insecure-skip-tls-verify: true\n") CTX(""),
	    "cluster \"c\": insecure-skip-tls-verify is refused" },
	{ "exec", "current-context: hk\n" CL(SRV) CTX("    user: u\n")
	    USR("    exec: {command: aws}\n"),
	    "user \"u\": exec is not supported" },
	{ "auth-provider", "current-context: hk\n" CL(SRV)
	    CTX("    user: u\n") USR("    auth-provider: {name: gcp}\n"),
	    "user \"u\": auth-provider is not supported" },
	{ "basic auth", "current-context: hk\n" CL(SRV) CTX("    user: u\n")
	    USR("    username: admin\n    password: pw\n"),
	    "user \"u\": username is not supported" },
	{ "a certificate without its key", "current-context: hk\n" CL(SRV)
	    CTX("    user: u\n") USR("    client-certificate-data: " CA64
	    "\n"), "user \"u\": a client certificate and its key go "
	    "together" },
	{ "data that is not base64", "current-context: hk\n"
	    CL(SRV "    certificate-authority-data: '%%%'\n") CTX(""),
	    "certificate-authority: certificate-authority-data is not "
	    "base64" },
	{ "a namespace that is no DNS label", "current-context: hk\n" CL(SRV)
	    CTX("    namespace: Fns\n"), "namespace \"Fns\": not a DNS label" },
	{ "a user not listed", "current-context: hk\n" CL(SRV)
	    CTX("    user: v\n"), "user \"v\": not in users" },
	{ "a CA file that is not there", "current-context: hk\n"
	    CL(SRV "    certificate-authority: no-such.crt\n") CTX(""),
	    "DIR/no-such.crt: No such file or directory" },
};

static char	dir[] = "/tmp/hk-kubeconfig.XXXXXX";

static int
put(const char *name, const char *text, mode_t mode)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	(void)unlink(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)) == -1)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode) == -1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void
test_values(void)
{
	static const char text[] = "apiVersion: v1\nkind: Config\n"
	    "current-context: hk\n"
	    CL("    server: https://127.0.0.1:6443/\n"
	    "    certificate-authority-data: " CA64 "\n")
	    CTX("    user: u\n    namespace: fns\n")
	    USR("    token: abc.def\n");
	struct kube_creds c;
	char err[KUBE_ERR_LEN];

	ok(kubeconfig_parse(text, strlen(text), dir, NULL, &c, err,
	    sizeof(err)) == 0, "values: parsed");
	is(c.server, "https://127.0.0.1:6443", "the server, without its '/'");
	is(c.namespace_, "fns", "the context's namespace");
	is(c.ca_pem, "-----BEGIN CERTIFICATE-----\n", "the CA, decoded");
	is(c.token, "abc.def", "the token, as it is");
	ok(c.cert_pem == NULL && c.key_pem == NULL, "no client certificate");
	kube_creds_clear(&c);
	ok(c.token == NULL && c.server[0] == '\0', "cleared");
}

static void
test_named_context_json(void)
{
	static const char text[] = "{\"current-context\": \"other\", "
	    "\"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": "
	    "\"https://[::1]:6443\"}}], \"contexts\": [{\"name\": \"other\", "
	    "\"context\": {\"cluster\": \"nope\"}}, {\"name\": \"hk\", "
	    "\"context\": {\"cluster\": \"c\", \"user\": \"u\"}}], "
	    "\"users\": [{\"name\": \"u\", \"user\": {"
	    "\"client-certificate-data\": \"" CA64 "\", "
	    "\"client-key-data\": \"" KEY64 "\"}}]}";
	struct kube_creds c;
	char err[KUBE_ERR_LEN];

	ok(kubeconfig_parse(text, strlen(text), dir, "hk", &c, err,
	    sizeof(err)) == 0, "JSON, a context named: parsed");
	is(c.server, "https://[::1]:6443", "its cluster's server");
	is(c.namespace_, "default", "no namespace: default");
	ok(c.ca_pem == NULL && c.token == NULL, "no CA (the system's), no token");
	is(c.key_pem, "KEY\n", "the client key, decoded");
	ok(c.cert_pem != NULL, "and its certificate");
	kube_creds_clear(&c);
	ok(kubeconfig_parse(text, strlen(text), dir, NULL, &c, err,
	    sizeof(err)) == -1, "the current context's cluster is not listed");
}

static void
test_files(void)
{
	static const char text[] = "current-context: hk\n"
	    CL(SRV "    certificate-authority: ca.crt\n")
	    CTX("    user: u\n")
	    USR("    client-certificate: sub/client.crt\n"
	    "    client-key: client.key\n    tokenFile: token\n");
	struct kube_creds c;
	char err[KUBE_ERR_LEN], sub[300];

	snprintf(sub, sizeof(sub), "%s/sub", dir);
	(void)mkdir(sub, 0700);
	if (put("ca.crt", "CA PEM\n", 0644) == -1 ||
	    put("sub/client.crt", "CERT PEM\n", 0644) == -1 ||
	    put("client.key", "KEY PEM\n", 0600) == -1 ||
	    put("token", "tok-from-file\n", 0644) == -1) {
		unreached(7, "unable to write the files");
		return;
	}
	ok(kubeconfig_parse(text, strlen(text), dir, NULL, &c, err,
	    sizeof(err)) == 0, "files beside it: parsed");
	is(c.ca_pem, "CA PEM\n", "the CA file");
	is(c.cert_pem, "CERT PEM\n", "the client certificate, in a subdirectory");
	is(c.key_pem, "KEY PEM\n", "the key file");
	is(c.token, "tok-from-file", "the token file, less its newline");
	kube_creds_clear(&c);
	(void)put("client.key", "KEY PEM\n", 0644);
	ok(kubeconfig_parse(text, strlen(text), dir, NULL, &c, err,
	    sizeof(err)) == -1, "a key file others may read: refused");
	diag("%s", err);
	ok(c.token == NULL && c.ca_pem == NULL, "... and nothing kept");
}

static void
test_load(void)
{
	static const char text[] = "current-context: hk\n" CL(SRV) CTX("");
	struct kube_creds c;
	char err[KUBE_ERR_LEN], path[300];

	snprintf(path, sizeof(path), "%s/config", dir);
	if (put("config", text, 0644) == -1) {
		unreached(3, "unable to write the file");
		return;
	}
	ok(kubeconfig_load(path, NULL, &c, err, sizeof(err)) == -1,
	    "a kubeconfig others may read: refused (it holds credentials)");
	(void)put("config", text, 0600);
	ok(kubeconfig_load(path, NULL, &c, err, sizeof(err)) == 0 &&
	    strcmp(c.server, "https://127.0.0.1:6443") == 0,
	    "one that is its owner's: loaded");
	kube_creds_clear(&c);
	(void)put("config", "current-context: x\n", 0600);
	ok(kubeconfig_load(path, NULL, &c, err, sizeof(err)) == -1 &&
	    strncmp(err, path, strlen(path)) == 0,
	    "a refusal names the file");
}

static void
test_incluster(void)
{
	struct kube_creds c;
	char err[KUBE_ERR_LEN];

	unsetenv("KUBERNETES_SERVICE_HOST");
	ok(kube_incluster(dir, &c, err, sizeof(err)) == -1,
	    "in-cluster, not in a pod: refused");
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	(void)put("token", "sa-token\n", 0644);
	(void)put("ca.crt", "SA CA\n", 0644);
	(void)put("namespace", "fns", 0644);
	ok(kube_incluster(dir, &c, err, sizeof(err)) == 0,
	    "in-cluster: read");
	is(c.server, "https://10.0.0.1:443", "the service's address");
	is(c.token, "sa-token", "the service account's token");
	is(c.namespace_, "fns", "its namespace");
	kube_creds_clear(&c);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	ok(kube_incluster(dir, &c, err, sizeof(err)) == 0 &&
	    strcmp(c.server, "https://[fd00::1]:443") == 0,
	    "an IPv6 service address in brackets");
	kube_creds_clear(&c);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

static void
test_refusals(void)
{
	struct kube_creds c;
	char err[KUBE_ERR_LEN], want[512];
	const char *w, *at;
	size_t i;

	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		w = refusals[i].want;
		if ((at = strstr(w, "DIR")) != NULL) {
			snprintf(want, sizeof(want), "%.*s%s%s", (int)(at - w),
			    w, dir, at + 3);
			w = want;
		}
		ok(kubeconfig_parse(refusals[i].text, strlen(refusals[i].text),
		    dir, NULL, &c, err, sizeof(err)) == -1 &&
		    strncmp(err, w, strlen(w)) == 0 && c.token == NULL &&
		    c.ca_pem == NULL, "%s: refused", refusals[i].name);
		if (strncmp(err, w, strlen(w)) != 0)
			diag("got: %s", err);
	}
}

static void
cleanup(void)
{
	static const char *const names[] = { "ca.crt", "sub/client.crt",
	    "client.key", "token", "config", "namespace" };
	char path[300];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		(void)unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sub", dir);
	(void)rmdir(path);
	(void)rmdir(dir);
}

int
main(void)
{
	plan(7 + 7 + 7 + 3 + 6 + (int)(sizeof(refusals) /
	    sizeof(refusals[0])));
	if (mkdtemp(dir) == NULL) {
		unreached(30, "no temporary directory");
		return 1;
	}
	test_values();
	test_named_context_json();
	test_files();
	test_load();
	test_incluster();
	test_refusals();
	cleanup();
	return done();
}
