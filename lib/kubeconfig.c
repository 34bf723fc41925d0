/*
 * kubeconfig.c - a kubeconfig file's credentials, or a pod's service
 * account's (kubeconfig.h).  The file is YAML (JSON is YAML too), read
 * with libyaml into a document and walked by names, never recursively:
 * an alias is followed as the node it names, so neither a cycle nor an
 * alias that names a large node costs more than its one lookup.
 *
 * Of a context: its cluster (server; certificate-authority-data, else
 * certificate-authority; insecure-skip-tls-verify refused), its user
 * (token, else tokenFile; client-certificate-data or client-certificate
 * with client-key-data or client-key; exec, auth-provider, username and
 * password refused) and its namespace.  kubectl's own order where both
 * a value and a file are given: the value.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>
#include <yaml.h>

#include "b64.h"
#include "kubeconfig.h"
#include "privfile.h"

struct kdoc {
	yaml_document_t	 doc;
	const char	*dir;		/* relative paths start here */
	char		*err;
	size_t		 errlen;
};

static yaml_node_t	*map_get(struct kdoc *, yaml_node_t *, const char *);
static const char	*scalar(struct kdoc *, yaml_node_t *);
static yaml_node_t	*named(struct kdoc *, const char *, const char *,
			    const char *);
static char		*value_or_file(struct kdoc *, yaml_node_t *,
			    const char *, const char *, const char *, int);
static char		*read_file(const char *, int, char *, size_t);
static int		 read_cluster(struct kdoc *, const char *,
			    struct kube_creds *);
static int		 read_user(struct kdoc *, const char *,
			    struct kube_creds *);
static int		 read_context(struct kdoc *, yaml_node_t *,
			    const char *, struct kube_creds *);
static int		 set_server(const char *, struct kube_creds *, char *,
			    size_t);
static int		 set_namespace(const char *, struct kube_creds *,
			    char *, size_t);

/* The value of key in mapping m; NULL when m is not one, or has none. */
static yaml_node_t *
map_get(struct kdoc *k, yaml_node_t *m, const char *key)
{
	yaml_node_pair_t *p;
	const char *s;

	if (m == NULL || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	    p++) {
		s = scalar(k, yaml_document_get_node(&k->doc, p->key));
		if (s != NULL && strcmp(s, key) == 0)
			return yaml_document_get_node(&k->doc, p->value);
	}
	return NULL;
}

/* n's text, if n is a scalar without a NUL inside; else NULL. */
static const char *
scalar(struct kdoc *k, yaml_node_t *n)
{
	(void)k;
	if (n == NULL || n->type != YAML_SCALAR_NODE ||
	    strlen((const char *)n->data.scalar.value) !=
	    n->data.scalar.length)
		return NULL;
	return (const char *)n->data.scalar.value;
}

/*
 * Of the list under top-level key list, the item whose "name" is name:
 * its mapping under field (cluster, user, context).  NULL with err.
 */
static yaml_node_t *
named(struct kdoc *k, const char *list, const char *name, const char *field)
{
	yaml_node_t *root = yaml_document_get_root_node(&k->doc), *seq, *it;
	yaml_node_item_t *i;
	const char *s;

	seq = map_get(k, root, list);
	for (i = seq != NULL && seq->type == YAML_SEQUENCE_NODE ?
	    seq->data.sequence.items.start : NULL; i != NULL &&
	    i < seq->data.sequence.items.top; i++) {
		it = yaml_document_get_node(&k->doc, *i);
		if ((s = scalar(k, map_get(k, it, "name"))) == NULL ||
		    strcmp(s, name) != 0)
			continue;
		if ((it = map_get(k, it, field)) != NULL &&
		    it->type == YAML_MAPPING_NODE)
			return it;
		snprintf(k->err, k->errlen, "%s \"%s\": no %s mapping", field,
		    name, field);
		return NULL;
	}
	snprintf(k->err, k->errlen, "%s \"%s\": not in %s", field, name, list);
	return NULL;
}

/*
 * The text of m's key data (base64), else of the file its key file
 * names (relative to the kubeconfig's directory; private: its owner's
 * alone).  NULL without err when neither is there; NULL with err.
 */
static char *
value_or_file(struct kdoc *k, yaml_node_t *m, const char *data,
    const char *file, const char *what, int private)
{
	char path[PATH_MAX], *out;
	const char *s;
	long n;

	k->err[0] = '\0';
	if (data != NULL && (s = scalar(k, map_get(k, m, data))) != NULL) {
		if ((out = malloc(strlen(s) + 1)) == NULL) {
			snprintf(k->err, k->errlen, "%s: out of memory", what);
			return NULL;
		}
		if ((n = b64_decode(s, strlen(s), (unsigned char *)out,
		    strlen(s))) == -1 || memchr(out, '\0', (size_t)n) != NULL) {
			free(out);
			snprintf(k->err, k->errlen, "%s: %s is not base64 of "
			    "text", what, data);
			return NULL;
		}
		out[n] = '\0';
		return out;
	}
	if ((s = scalar(k, map_get(k, m, file))) == NULL)
		return NULL;
	if ((s[0] == '/' ? snprintf(path, sizeof(path), "%s", s) :
	    snprintf(path, sizeof(path), "%s/%s", k->dir, s)) >=
	    (int)sizeof(path)) {
		snprintf(k->err, k->errlen, "%s: %s: path too long", what, file);
		return NULL;
	}
	if ((out = read_file(path, private, k->err, k->errlen)) == NULL)
		return NULL;
	return out;
}

/* The whole of a small file, NUL-terminated; NULL with err. */
static char *
read_file(const char *path, int private, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd;

	if (private)
		fd = privfile_open(path, &st, err, errlen);
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	if (fd == -1)
		return NULL;
	if ((buf = malloc(KUBE_FILE_MAX + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		close(fd);
		return NULL;
	}
	while (len < KUBE_FILE_MAX && (n = read(fd, buf + len,
	    KUBE_FILE_MAX - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			sodium_memzero(buf, len);
			free(buf);
			return NULL;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len == KUBE_FILE_MAX || memchr(buf, '\0', len) != NULL) {
		snprintf(err, errlen, "%s: %s", path, len == KUBE_FILE_MAX ?
		    "larger than " "1 MiB" : "not text");
		sodium_memzero(buf, len);
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

static int
set_server(const char *s, struct kube_creds *c, char *err, size_t errlen)
{
	size_t n = strlen(s);

	if (strncmp(s, "https://", 8) != 0 || n == 8 ||
	    n > KUBE_SERVER_MAX || strpbrk(s, " \t\r\n?#") != NULL) {
		snprintf(err, errlen, "server \"%.*s\": not an https URL (hk "
		    "always verifies the cluster's certificate)", 128, s);
		return -1;
	}
	while (n > 8 && s[n - 1] == '/')
		n--;
	memcpy(c->server, s, n);
	c->server[n] = '\0';
	return 0;
}

/* A namespace is a DNS label: a-z, 0-9 and '-', 1 to 63 of them. */
static int
set_namespace(const char *s, struct kube_creds *c, char *err, size_t errlen)
{
	size_t i, n = strlen(s);

	for (i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) ||
		    isdigit((unsigned char)s[i]) || (s[i] == '-' && i > 0 &&
		    i < n - 1)))
			break;
	if (n == 0 || n > KUBE_NAMESPACE_MAX || i < n) {
		snprintf(err, errlen, "namespace \"%.*s\": not a DNS label "
		    "(a-z, 0-9 and '-', at most 63)", 64, s);
		return -1;
	}
	memcpy(c->namespace_, s, n + 1);
	return 0;
}

static int
read_cluster(struct kdoc *k, const char *name, struct kube_creds *c)
{
	yaml_node_t *m, *v;
	const char *s;

	if ((m = named(k, "clusters", name, "cluster")) == NULL)
		return -1;
	v = map_get(k, m, "insecure-skip-tls-verify");
	if ((s = scalar(k, v)) != NULL && strcmp(s, "true") == 0) {
		snprintf(k->err, k->errlen, "cluster \"%s\": "
		    "insecure-skip-tls-verify is refused: hk always verifies "
		    "the cluster's certificate", name);
		return -1;
	}
	if ((s = scalar(k, map_get(k, m, "server"))) == NULL) {
		snprintf(k->err, k->errlen, "cluster \"%s\": no server", name);
		return -1;
	}
	if (set_server(s, c, k->err, k->errlen) == -1)
		return -1;
	c->ca_pem = value_or_file(k, m, "certificate-authority-data",
	    "certificate-authority", "certificate-authority", 0);
	return k->err[0] != '\0' ? -1 : 0;
}

static int
read_user(struct kdoc *k, const char *name, struct kube_creds *c)
{
	static const char *const refused[] = { "exec", "auth-provider",
	    "username", "password" };
	yaml_node_t *m;
	const char *t;
	size_t i;

	if ((m = named(k, "users", name, "user")) == NULL)
		return -1;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (map_get(k, m, refused[i]) != NULL) {
			snprintf(k->err, k->errlen, "user \"%s\": %s is not "
			    "supported: give hk a token or a client "
			    "certificate", name, refused[i]);
			return -1;
		}
	/* token is the value itself, neither base64 nor a file */
	if ((t = scalar(k, map_get(k, m, "token"))) != NULL &&
	    (c->token = strdup(t)) == NULL) {
		snprintf(k->err, k->errlen, "token: out of memory");
		return -1;
	}
	if (c->token == NULL && (c->token = value_or_file(k, m, NULL,
	    "tokenFile", "tokenFile", 0)) == NULL && k->err[0] != '\0')
		return -1;
	if (c->token != NULL)
		c->token[strcspn(c->token, "\r\n")] = '\0';
	c->cert_pem = value_or_file(k, m, "client-certificate-data",
	    "client-certificate", "client-certificate", 0);
	if (k->err[0] != '\0')
		return -1;
	c->key_pem = value_or_file(k, m, "client-key-data", "client-key",
	    "client-key", 1);
	if (k->err[0] != '\0')
		return -1;
	if ((c->cert_pem == NULL) != (c->key_pem == NULL)) {
		snprintf(k->err, k->errlen, "user \"%s\": a client certificate "
		    "and its key go together", name);
		return -1;
	}
	return 0;
}

static int
read_context(struct kdoc *k, yaml_node_t *root, const char *context,
    struct kube_creds *c)
{
	yaml_node_t *m;
	const char *s, *name = context;

	if (name == NULL &&
	    (name = scalar(k, map_get(k, root, "current-context"))) == NULL) {
		snprintf(k->err, k->errlen, "no current-context, and no "
		    "context named");
		return -1;
	}
	if ((m = named(k, "contexts", name, "context")) == NULL)
		return -1;
	if ((s = scalar(k, map_get(k, m, "cluster"))) == NULL) {
		snprintf(k->err, k->errlen, "context \"%s\": no cluster", name);
		return -1;
	}
	if (read_cluster(k, s, c) == -1)
		return -1;
	if ((s = scalar(k, map_get(k, m, "user"))) != NULL &&
	    read_user(k, s, c) == -1)
		return -1;
	s = scalar(k, map_get(k, m, "namespace"));
	return set_namespace(s != NULL ? s : "default", c, k->err, k->errlen);
}

int
kubeconfig_parse(const char *text, size_t len, const char *dir,
    const char *context, struct kube_creds *c, char *err, size_t errlen)
{
	struct kdoc k = { .dir = dir, .err = err, .errlen = errlen };
	yaml_parser_t p;
	yaml_node_t *root;
	int r = -1;

	memset(c, 0, sizeof(*c));
	err[0] = '\0';
	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &k.doc)) {
		snprintf(err, errlen, "line %zu: %s", p.problem_mark.line + 1,
		    p.problem != NULL ? p.problem : "not YAML");
		yaml_parser_delete(&p);
		return -1;
	}
	root = yaml_document_get_root_node(&k.doc);
	if (root == NULL || root->type != YAML_MAPPING_NODE)
		snprintf(err, errlen, "not a kubeconfig (no mapping at its top)");
	else
		r = read_context(&k, root, context, c);
	yaml_document_delete(&k.doc);
	yaml_parser_delete(&p);
	if (r == -1)
		kube_creds_clear(c);
	return r;
}

int
kubeconfig_load(const char *path, const char *context, struct kube_creds *c,
    char *err, size_t errlen)
{
	char dir[PATH_MAX], *text, *slash, why[KUBE_ERR_LEN];
	int r;

	memset(c, 0, sizeof(*c));
	if ((text = read_file(path, 1, err, errlen)) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	r = kubeconfig_parse(text, strlen(text), dir, context, c, why,
	    sizeof(why));
	sodium_memzero(text, strlen(text));
	free(text);
	if (r == -1)
		snprintf(err, errlen, "%s: %s", path, why);
	return r;
}

int
kube_incluster(const char *dir, struct kube_creds *c, char *err,
    size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char url[KUBE_SERVER_MAX + 2], path[PATH_MAX], *ns;
	int r;

	memset(c, 0, sizeof(*c));
	if (host == NULL || port == NULL || *host == '\0' || *port == '\0') {
		snprintf(err, errlen, "not in a pod: KUBERNETES_SERVICE_HOST "
		    "and KUBERNETES_SERVICE_PORT are not both set");
		return -1;
	}
	snprintf(url, sizeof(url), strchr(host, ':') != NULL ?
	    "https://[%s]:%s" : "https://%s:%s", host, port);
	if (set_server(url, c, err, errlen) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/token", dir);
	if ((c->token = read_file(path, 0, err, errlen)) == NULL)
		goto fail;
	c->token[strcspn(c->token, "\r\n")] = '\0';	/* not the newline */
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if ((c->ca_pem = read_file(path, 0, err, errlen)) == NULL)
		goto fail;
	snprintf(path, sizeof(path), "%s/namespace", dir);
	if ((ns = read_file(path, 0, err, errlen)) == NULL) {
		snprintf(c->namespace_, sizeof(c->namespace_), "default");
		return 0;
	}
	ns[strcspn(ns, "\r\n")] = '\0';
	r = set_namespace(ns, c, err, errlen);
	free(ns);
	if (r == -1)
		goto fail;
	return 0;
fail:
	kube_creds_clear(c);
	return -1;
}

void
kube_creds_clear(struct kube_creds *c)
{
	if (c->token != NULL)
		sodium_memzero(c->token, strlen(c->token));
	if (c->key_pem != NULL)
		sodium_memzero(c->key_pem, strlen(c->key_pem));
	free(c->token);
	free(c->key_pem);
	free(c->cert_pem);
	free(c->ca_pem);
	memset(c, 0, sizeof(*c));
}
