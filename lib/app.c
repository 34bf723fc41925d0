/*
 * app.c - the application config, hk.toml (see app.h and hk.toml(5)):
 * its root, each key of each [services.NAME], the hosts of the file and
 * its services' canonical JSON.  The rules between a service's keys are
 * app_rules.c's, the runs the file declares app_runs.c's.
 *
 * The file is read whole (at most CONFIG_MAX_FILE bytes, checked before
 * reading), parsed by lib/toml.c and walked here, against the operator
 * config.  Every problem becomes one diagnostic "file:line: key: reason";
 * the walk goes on after a problem so that one run reports all of them.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "app.h"
#include "app_impl.h"
#include "config.h"
#include "cw.h"
#include "secret.h"
#include "spec.h"
#include "srctree.h"
#include "toml.h"
#include "user.h"
#include "volume.h"

#define IMAGE_MAX	255	/* an image reference (lib/engine's bound) */
#define ENV_NAME_MAX	255
#define READY_PATH_MAX	1024
#define REPLICAS_MAX	SPEC_REPLICAS_MAX
#define SECRETS_MAX	64	/* names in a service's secrets */


/*
 * why: a key hk accepts but cannot yet honour on an ordinary service is
 * refused with this reason rather than kept and ignored (hk.toml(5)).
 */
#define NOT_YET		"not supported yet: "
const struct app_svc_key app_svc_keys[SK_COUNT] = {
	[SK_AUTOSCALE] =		{ "autoscale", 1, NOT_YET "hk runs "
	    "one instance of an ordinary service and scales none" },
	[SK_BACKEND] =			{ "backend", 0, NULL },
	[SK_BACKEND_CERTIFICATE] =	{ "backend_certificate", 1, NOT_YET
	    "hk mounts no certificate into a service" },
	[SK_BACKEND_HTTP2] =		{ "backend_http2", 1, NULL },
	[SK_COMMAND] =			{ "command", 0, NULL },
	[SK_DIRECTORY] =		{ "directory", 0, NULL },
	[SK_ENABLED] =			{ "enabled", 0, NULL },
	[SK_ENVIRONMENT] =		{ "environment", 0, NULL },
	[SK_GPU] =			{ "gpu", 1, NOT_YET "hk gives an "
	    "instance no GPU" },
	[SK_HOSTS] =			{ "hosts", 0, NULL },
	[SK_IMAGE] =			{ "image", 0, NULL },
	[SK_IMAGE_PULL] =		{ "image_pull", 0, NULL },
	[SK_JOBS] =			{ "jobs", 1, NOT_YET "hk runs no "
	    "deployment jobs (runs are the file's [jobs.NAME] tables)" },
	[SK_KUBERNETES_DEPLOYMENT] =	{ "kubernetes_deployment", 0, NULL },
	[SK_LISTEN] =			{ "listen", 0, NULL },
	[SK_NODE_NAME] =		{ "node_name", 0, NULL },
	[SK_PORT] =			{ "port", 0, NULL },
	[SK_PORTS] =			{ "ports", 1, NOT_YET "hk gives a "
	    "service one port, port" },
	[SK_PUBLIC] =			{ "public", 0, NULL },
	[SK_READINESS] =		{ "readiness", 0, NULL },
	[SK_REPLICAS] =			{ "replicas", 0, NULL },
	[SK_SCHEDULES] =		{ "schedules", 0, NULL },
	[SK_SECRETS] =			{ "secrets", 0, NULL },
	[SK_SECRETS_ENV] =		{ "secrets_env", 0, NULL },
	[SK_SERVERLESS] =		{ "serverless", 0, NULL },
	[SK_SIZE] =			{ "size", 0, NULL },
	[SK_SOURCE] =			{ "source", 0, NULL },
	[SK_STARTUP_TIMEOUT] =		{ "startup_timeout_seconds", 1, NULL },
	[SK_TCP_PORTS] =		{ "tcp_ports", 1, NOT_YET "the "
	    "gateway routes HTTP by host and publishes no TCP port" },
	[SK_USER] =			{ "user", 0, NULL },
	[SK_VOLUMES] =			{ "volumes", 1, NULL },
};

/* Variables hk itself gives the process. */
const char *const app_env_reserved[APP_ENV_RESERVED] = {
	"CREDENTIALS_DIRECTORY", "LISTEN_FDNAMES", "LISTEN_FDS", "LISTEN_PID", "NOTIFY_SOCKET", "PORT",
};

static int	 valid_image(const char *);
static int	 path_norm(const char *, char *, size_t);
static int	 file_dir(const char *, char *, size_t);
static void	 app_root(struct actx *, const struct toml_value *);
static void	 svc_parse(struct actx *, const struct toml_kv *,
		    struct service_spec *);
static void	 svc_value(struct actx *, int, const struct toml_kv *,
		    const struct toml_kv *, int, struct service_spec *);
static void	 svc_command(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_source(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static char	*svc_path(struct actx *, const struct toml_kv *, const char *);
static void	 svc_directory(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_secrets(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_environment(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_hosts(struct actx *, const struct toml_kv *,
		    const struct toml_kv *, const char *,
		    struct service_spec *);
static void	 svc_default_host(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_readiness(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_policy(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static const char *svc_unknown_why(const struct toml_kv *);
static void	 policy_idle_check(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 policy_enum(struct actx *, const struct toml_kv *,
		    const char *, const char *const *, int *);
static void	 svc_user(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_user_numeric(struct actx *, const struct toml_kv *,
		    const char *, const char *, struct service_spec *);
static void	 svc_volumes(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 host_note(struct actx *, const char *,
		    const struct toml_kv *, int);
static int	 hostref_cmp(const void *, const void *);
static void	 hosts_check(struct actx *);
static int	 svc_extras(struct actx *, json_t *,
		    const struct toml_kv *const *, const char *);
static char	*svc_json(struct actx *, const struct service_spec *,
		    const struct toml_kv *const *, const char *);

/*
 * An image reference as an engine takes it: [registry[:port]/]name[:tag]
 * [@digest], in the characters those may hold; the engine judges the rest.
 */
static int
valid_image(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:/@");

	return s[n] == '\0' && (cw_is_alpha((unsigned char)s[0]) ||
	    cw_is_digit((unsigned char)s[0]));
}

/* Normalizes an absolute path lexically: no ".", "..", "//" or final '/'. */
static int
path_norm(const char *in, char *out, size_t outsz)
{
	const char *p = in, *e;
	size_t o = 0, n;

	if (*in != '/' || outsz < 2)
		return -1;
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e != '\0' && *e != '/'; e++)
			;
		n = e - p;
		if (n == 1 && p[0] == '.')
			;
		else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			if (o + 1 + n + 1 > outsz)
				return -1;
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* The absolute directory holding the file path names. */
static int
file_dir(const char *path, char *out, size_t outsz)
{
	char cwd[PATH_MAX], *tmp;
	const char *slash;
	size_t dl;
	int rc;

	slash = strrchr(path, '/');
	dl = slash == NULL ? 0 : (size_t)(slash - path);
	if (path[0] == '/') {
		if ((tmp = strndup(path, dl == 0 ? 1 : dl)) == NULL)
			return -1;
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return -1;
		if (asprintf(&tmp, "%s/%.*s", cwd, (int)dl, path) == -1)
			return -1;
	}
	rc = path_norm(tmp, out, outsz);
	free(tmp);
	return rc;
}

static void
svc_command(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	size_t i;

	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of strings");
		return;
	}
	if (v->u.array.len == 0) {
		cw_diag(&c->w, kv->line, key, "must not be empty");
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING) {
			cw_diag(&c->w, e->line, key, "must be an array "
			    "of strings");
			return;
		}
		if (strlen(e->u.string.ptr) != e->u.string.len) {
			cw_diag(&c->w, e->line, key, "must not contain NUL");
			return;
		}
	}
	if (v->u.array.items[0]->u.string.len == 0) {
		cw_diag(&c->w, kv->line, key, "program name must not be empty");
		return;
	}
	s->command = calloc(v->u.array.len + 1, sizeof(*s->command));
	if (s->command == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if ((s->command[i] = cw_strndup(&c->w, e->u.string.ptr,
		    e->u.string.len)) == NULL)
			return;
		s->ncommand++;
	}
}

/* A path, relative ones resolved against the file's directory; or NULL. */
static char *
svc_path(struct actx *c, const struct toml_kv *kv, const char *key)
{
	char out[PATH_MAX], *tmp = NULL;
	const char *d;
	int rc;

	if ((d = cw_str(&c->w, kv, key, PATH_MAX - 1)) == NULL)
		return NULL;
	if (*d == '/')
		rc = path_norm(d, out, sizeof(out));
	else if (asprintf(&tmp, "%s/%s", c->dir, d) == -1) {
		c->w.oom = 1;
		return NULL;
	} else
		rc = path_norm(tmp, out, sizeof(out));
	free(tmp);
	if (rc == -1) {
		cw_diag(&c->w, kv->line, key, "too long (at most %d bytes)",
		    PATH_MAX - 1);
		return NULL;
	}
	return cw_strndup(&c->w, out, strlen(out));
}

static void
svc_directory(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	s->directory = svc_path(c, kv, key);
}

/*
 * The source is read here, once: what is hashed is what apply stores,
 * and validate reports what apply would refuse.
 */
static void
svc_source(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	struct srctree t;
	char err[SRCTREE_ERR_LEN];

	if ((s->source = svc_path(c, kv, key)) == NULL)
		return;
	if (srctree_read(s->source, &t, err, sizeof(err)) == -1) {
		cw_diag(&c->w, kv->line, key, "%s", err);
		return;
	}
	if ((s->code_hash = cw_strndup(&c->w, t.hash,
	    strlen(t.hash))) == NULL) {
		srctree_free(&t);
		return;
	}
	s->code = t.data;
	s->code_len = t.len;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names of the secrets the service gets, each once, sorted: the
 * spec's bytes do not depend on their order.  Whether each exists is the
 * store's to say (hk apply, and hk validate when it reaches the store).
 */
static void
svc_secrets(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	size_t i, n;

	s->secrets_line = kv->line;
	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of names");
		return;
	}
	if (v->u.array.len > SECRETS_MAX) {
		cw_diag(&c->w, kv->line, key, "at most %d secrets",
		    SECRETS_MAX);
		return;
	}
	if ((s->secrets = calloc(v->u.array.len + 1,
	    sizeof(*s->secrets))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING || strlen(e->u.string.ptr) !=
		    e->u.string.len || !secret_valid_name(e->u.string.ptr)) {
			cw_diag(&c->w, e->line, key, "not a secret name "
			    "(letters, digits and _, not starting with a "
			    "digit, at most %d bytes)", SECRET_NAME_MAX);
			continue;
		}
		for (n = 0; n < s->nsecrets; n++)
			if (strcmp(s->secrets[n], e->u.string.ptr) == 0)
				break;
		if (n < s->nsecrets) {
			cw_diag(&c->w, e->line, key, "\"%s\" named twice",
			    e->u.string.ptr);
			continue;
		}
		if ((s->secrets[s->nsecrets] = cw_strndup(&c->w,
		    e->u.string.ptr, e->u.string.len)) == NULL)
			return;
		s->nsecrets++;
	}
	qsort(s->secrets, s->nsecrets, sizeof(*s->secrets), name_cmp);
}

static void
svc_environment(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value;
	const struct toml_kv *e;
	char ek[CW_KEYPATH_LEN];
	size_t i, j;
	int bad;

	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, key, "must be a table");
		return;
	}
	if (v->u.table.len == 0)
		return;
	if ((s->env = calloc(v->u.table.len, sizeof(*s->env))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.table.len; i++) {
		e = &v->u.table.items[i];
		cw_kpath(ek, key, e->key, e->keylen);
		bad = e->keylen == 0 || e->keylen > ENV_NAME_MAX ||
		    cw_is_digit((unsigned char)e->key[0]);
		for (j = 0; !bad && j < e->keylen; j++)
			if (!cw_is_alpha((unsigned char)e->key[j]) &&
			    !cw_is_digit((unsigned char)e->key[j]) &&
			    e->key[j] != '_')
				bad = 1;
		if (bad) {
			cw_diag(&c->w, e->line, ek, "invalid variable name");
			continue;
		}
		for (j = 0; j < APP_ENV_RESERVED; j++)
			if (cw_key_is(e, app_env_reserved[j]))
				bad = 1;
		if (bad) {
			cw_diag(&c->w, e->line, ek, "reserved (set by hk)");
			continue;
		}
		if (e->value->type != TOML_STRING) {
			cw_diag(&c->w, e->line, ek, "must be a string");
			continue;
		}
		if (strlen(e->value->u.string.ptr) != e->value->u.string.len) {
			cw_diag(&c->w, e->line, ek, "must not contain NUL");
			continue;
		}
		s->env[s->nenv].name = cw_strndup(&c->w, e->key, e->keylen);
		s->env[s->nenv].value = cw_strndup(&c->w,
		    e->value->u.string.ptr, e->value->u.string.len);
		s->nenv++;
		if (c->w.oom)
			return;
	}
}

/* Remembers a host of the file for the duplicate check. */
static void
host_note(struct actx *c, const char *host, const struct toml_kv *svc,
    int line)
{
	struct hostref *h;
	size_t cap;

	if (c->nhosts == c->caphosts) {
		cap = c->caphosts == 0 ? 16 : c->caphosts * 2;
		if ((h = reallocarray(c->hosts, cap, sizeof(*h))) == NULL) {
			c->w.oom = 1;
			return;
		}
		c->hosts = h;
		c->caphosts = cap;
	}
	h = &c->hosts[c->nhosts];
	h->host = host;
	h->svc = svc;
	h->seq = c->nhosts;
	h->line = line;
	c->nhosts++;
}

static void
svc_hosts(struct actx *c, const struct toml_kv *skv, const struct toml_kv *kv,
    const char *key, struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	char shown[CW_KEYSHOW_MAX * 6 + 8], *h;
	struct in_addr a4;
	size_t i, j;

	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of strings");
		return;
	}
	if (v->u.array.len == 0) {
		cw_diag(&c->w, kv->line, key, "must not be empty");
		return;
	}
	if ((s->hosts = calloc(v->u.array.len, sizeof(*s->hosts))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING) {
			cw_diag(&c->w, e->line, key, "must be an array "
			    "of strings");
			continue;
		}
		if ((h = cw_strndup(&c->w, e->u.string.ptr,
		    e->u.string.len)) == NULL)
			return;
		for (j = 0; h[j] != '\0'; j++)
			if (h[j] >= 'A' && h[j] <= 'Z')
				h[j] += 'a' - 'A';
		/* An IPv4 literal is a Host a client may send too. */
		if (j != e->u.string.len || (!config_valid_host(h, 0) &&
		    inet_pton(AF_INET, h, &a4) != 1)) {
			cw_show(shown, sizeof(shown), e->u.string.ptr,
			    e->u.string.len, 1);
			cw_diag(&c->w, e->line, key, "invalid host %s", shown);
			free(h);
			continue;
		}
		if (c->srv != NULL && config_gateway_host(c->srv, h)) {
			cw_diag(&c->w, e->line, key, "%s: the gateway's own "
			    "address (serverless_address): it routes by /fn/ "
			    "path only, for runs and for clients alike", h);
			free(h);
			continue;
		}
		s->hosts[s->nhosts++] = h;
		host_note(c, h, skv, e->line);
	}
}

/* <service>.<app>.<base_domain> */
static void
svc_default_host(struct actx *c, const struct toml_kv *skv, const char *key,
    struct service_spec *s)
{
	const char *base = c->srv != NULL ? c->srv->base_domain : "localhost";
	char *h;

	if (s->name[0] == '\0' || c->app->name[0] == '\0')
		return;		/* already diagnosed */
	if ((s->hosts = calloc(1, sizeof(*s->hosts))) == NULL ||
	    asprintf(&h, "%s.%s.%s", s->name, c->app->name, base) == -1) {
		c->w.oom = 1;
		return;
	}
	if (!config_valid_host(h, 0)) {
		cw_diag(&c->w, s->line, key,
		    "default host is longer than %d bytes: set hosts",
		    CONFIG_HOST_MAX);
		free(h);
		return;
	}
	s->hosts[s->nhosts++] = h;
	host_note(c, h, skv, s->line);
}

/* An unknown key of a service; a key of [serverless] says where it goes. */
static const char *
svc_unknown_why(const struct toml_kv *kv)
{
	if (cw_key_is(kv, "idle_check") ||
	    cw_key_is(kv, "idle_check_max_seconds"))
		return "unknown key (a key of [serverless]: only a serverless "
		    "service sleeps)";
	return "unknown key";
}

static void
svc_readiness(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const char *r, *p;

	if ((r = cw_str(&c->w, kv, key, 5 + READY_PATH_MAX)) == NULL)
		return;
	if (strcmp(r, "tcp") == 0)
		s->readiness = READY_TCP;
	else if (strcmp(r, "notify") == 0)
		s->readiness = READY_NOTIFY;
	else if (strcmp(r, "socket") == 0)
		s->readiness = READY_SOCKET;
	else if (strcmp(r, "healthcheck") == 0)
		s->readiness = READY_HEALTH;
	else if ((p = spec_http_check(r)) != NULL) {
		s->readiness = READY_HTTP;
		s->readiness_path = cw_strndup(&c->w, p, strlen(p));
	} else
		cw_diag(&c->w, kv->line, key,
		    "must be tcp, http:/PATH, notify, socket or healthcheck");
}

/* [serverless] idle_check: an HTTP check as readiness's, and only that. */
static void
policy_idle_check(struct actx *c, const struct toml_kv *e, const char *key,
    struct service_spec *s)
{
	const char *r, *p;

	if ((r = cw_str(&c->w, e, key, 5 + READY_PATH_MAX)) == NULL)
		return;
	if ((p = spec_http_check(r)) == NULL) {
		cw_diag(&c->w, e->line, key, "\"%s\": must be http:/PATH (a "
		    "GET whose 2xx answer says the service is idle)", r);
		return;
	}
	free(s->idle_check_path);
	s->idle_check_path = cw_strndup(&c->w, p, strlen(p));
}

static void
svc_policy(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value;
	const struct spec_policy_key *keys;
	const struct toml_kv *e;
	char pk[CW_KEYPATH_LEN];
	size_t i, j, nkeys;
	int64_t n;
	int *f;

	keys = spec_policy_keys(&nkeys);
	for (j = 0; j < nkeys; j++)
		*(int *)((char *)&s->policy + keys[j].off) = keys[j].def;
	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, key, "must be a table");
		return;
	}
	s->serverless = 1;
	for (i = 0; i < v->u.table.len; i++) {
		e = &v->u.table.items[i];
		cw_kpath(pk, key, e->key, e->keylen);
		if (cw_key_is(e, "idle_check")) {
			policy_idle_check(c, e, pk, s);
			continue;
		}
		for (j = 0; j < nkeys; j++)
			if (cw_key_is(e, keys[j].name))
				break;
		if (j == nkeys) {
			cw_diag(&c->w, e->line, pk, "%s",
			    e->value->type == TOML_TABLE ? "unknown table" :
			    "unknown key");
			continue;
		}
		f = (int *)((char *)&s->policy + keys[j].off);
		if (keys[j].flags & SPEC_PK_BOOL)
			(void)cw_bool(&c->w, e, pk, f);
		else if (keys[j].flags & SPEC_PK_ENUM)
			policy_enum(c, e, pk, keys[j].names, f);
		else if (cw_int(&c->w, e, pk, keys[j].min, keys[j].max,
		    &n) == 0)
			*f = (int)n;
	}
}

/* A SPEC_PK_ENUM key: its index in names, or a diagnostic naming them. */
static void
policy_enum(struct actx *c, const struct toml_kv *e, const char *key,
    const char *const *names, int *f)
{
	const char *str;
	char list[128];
	size_t i;

	if ((str = cw_str(&c->w, e, key, 32)) == NULL)
		return;
	list[0] = '\0';
	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(str, names[i]) == 0) {
			*f = (int)i;
			return;
		}
		if (i > 0)
			strlcat(list, names[i + 1] == NULL ? " or " : ", ",
			    sizeof(list));
		strlcat(list, "\"", sizeof(list));
		strlcat(list, names[i], sizeof(list));
		strlcat(list, "\"", sizeof(list));
	}
	cw_diag(&c->w, e->line, key, "\"%s\": must be %s", str, list);
}

/*
 * A user of this host, checked now rather than at the first wake; uid 0
 * only where the operator allows root services.
 */
/*
 * A pod's user is runAsUser (and runAsGroup), numbers the cluster's
 * nodes apply as they are: a name would be looked up on this host, whose
 * users the nodes and the image need not share.
 */
static void
svc_user_numeric(struct actx *c, const struct toml_kv *kv, const char *key,
    const char *str, struct service_spec *s)
{
	int64_t uid, gid;

	if (user_numeric(str, &uid, &gid) == -1) {
		cw_diag(&c->w, kv->line, key, "\"%s\": with backend "
		    "\"kubernetes\", UID or UID:GID, numbers (the pod's "
		    "runAsUser and runAsGroup): a user name of this host "
		    "means nothing on the cluster's nodes", str);
		return;
	}
	if (uid == 0 && (c->srv == NULL || !c->srv->allow_root_services)) {
		cw_diag(&c->w, kv->line, key, "\"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", str);
		return;
	}
	s->user = cw_strndup(&c->w, str, strlen(str));
}

static void
svc_user(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	struct user_ids u;
	char why[USER_ERR_LEN];
	const char *str;

	if ((str = cw_str(&c->w, kv, key, USER_SPEC_MAX)) == NULL)
		return;
	if (config_backend_can(s->backend, BACKEND_IMAGE_ONLY)) {
		svc_user_numeric(c, kv, key, str, s);
		return;
	}
	if (user_resolve(str, &u, why, sizeof(why)) == -1) {
		cw_diag(&c->w, kv->line, key, "%s", why);
		return;
	}
	if (u.uid == 0 && (c->srv == NULL || !c->srv->allow_root_services)) {
		cw_diag(&c->w, kv->line, key, "\"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", str);
		return;
	}
	s->user = cw_strndup(&c->w, str, strlen(str));
}

/*
 * volumes: entries volume.h reads, each container path once.  Whether the
 * backend mounts them is svc_volume_rules()'s to say, once it is known.
 */
static void
svc_volumes(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	char why[VOLUME_ERR_LEN];
	size_t i, j;

	s->volumes_line = kv->line;
	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of strings");
		return;
	}
	if (v->u.array.len > VOLUMES_MAX) {
		cw_diag(&c->w, kv->line, key, "at most %d volumes",
		    VOLUMES_MAX);
		return;
	}
	if (v->u.array.len == 0 || (s->volumes = calloc(v->u.array.len,
	    sizeof(*s->volumes))) == NULL) {
		c->w.oom = v->u.array.len > 0;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING ||
		    strlen(e->u.string.ptr) != e->u.string.len) {
			cw_diag(&c->w, e->line, key, "must be an array of "
			    "strings");
			continue;
		}
		if (volume_parse(e->u.string.ptr, &s->volumes[s->nvolumes],
		    why, sizeof(why)) == -1) {
			cw_diag(&c->w, e->line, key, "%s", why);
			continue;
		}
		for (j = 0; j < s->nvolumes; j++)
			if (strcmp(s->volumes[j].target,
			    s->volumes[s->nvolumes].target) == 0)
				break;
		if (j < s->nvolumes) {
			cw_diag(&c->w, e->line, key, "%s: a container path "
			    "named twice", s->volumes[j].target);
			volume_clear(&s->volumes[s->nvolumes]);
			continue;
		}
		s->nvolumes++;
	}
}

/* One key of a service, in slot k; sless: the service has [serverless]. */
static void
svc_value(struct actx *c, int k, const struct toml_kv *skv,
    const struct toml_kv *kv, int sless, struct service_spec *s)
{
	char prefix[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];
	const char *str;
	int64_t n, mem, cpus;

	cw_kpath(prefix, "services", skv->key, skv->keylen);
	cw_kpath_s(key, prefix, app_svc_keys[k].name);
	switch (k) {
	case SK_IMAGE:
		if ((str = cw_str(&c->w, kv, key, IMAGE_MAX)) == NULL)
			break;
		if (!valid_image(str))
			cw_diag(&c->w, kv->line, key, "not an image reference "
			    "(letters, digits and _.-:/@, starting with a "
			    "letter or digit)");
		else
			s->image = cw_strndup(&c->w, str, strlen(str));
		break;
	case SK_IMAGE_PULL:
		if ((str = cw_str(&c->w, kv, key, SIZE_MAX)) == NULL)
			break;
		if ((n = spec_image_pull_find(str)) == -1)
			cw_diag(&c->w, kv->line, key,
			    "must be missing, always or never");
		else
			s->image_pull = (enum image_pull)n;
		break;
	case SK_COMMAND:
		svc_command(c, kv, key, s);
		break;
	case SK_DIRECTORY:
		svc_directory(c, kv, key, s);
		break;
	case SK_SOURCE:
		svc_source(c, kv, key, s);
		break;
	case SK_ENVIRONMENT:
		svc_environment(c, kv, key, s);
		break;
	case SK_SECRETS:
		svc_secrets(c, kv, key, s);
		break;
	case SK_SCHEDULES:
		app_schedules(c, skv, kv, key, s);
		break;
	case SK_VOLUMES:
		if (!sless)	/* else refused: not with [serverless] */
			svc_volumes(c, kv, key, s);
		break;
	case SK_SECRETS_ENV:
		(void)cw_bool(&c->w, kv, key, &s->secrets_env);
		break;
	case SK_PORT:
		if (cw_int(&c->w, kv, key, 0, 65535, &n) == 0)
			s->port = (int)n;
		break;
	case SK_PUBLIC:
		(void)cw_bool(&c->w, kv, key, &s->public_);
		break;
	case SK_STARTUP_TIMEOUT:
		if (!sless && cw_int(&c->w, kv, key, ORDINARY_START_MIN,
		    ORDINARY_START_MAX, &n) == 0)
			s->ordinary_start_timeout = (int)n;
		break;
	case SK_ENABLED:
		if (cw_bool(&c->w, kv, key, &s->disabled) == 0)
			s->disabled = !s->disabled;
		break;
	case SK_SIZE:
		if ((str = cw_str(&c->w, kv, key, SIZE_MAX)) == NULL)
			break;
		if (spec_size_limits(str, &mem, &cpus) == -1)
			cw_diag(&c->w, kv->line, key,
			    "must be small, medium or large");
		else
			s->size = cw_strndup(&c->w, str, strlen(str));
		break;
	case SK_REPLICAS:
		if (sless && (kv->value->type != TOML_INTEGER ||
		    kv->value->u.integer != 1))
			cw_diag(&c->w, kv->line, key, "must be 1 with "
			    "[serverless]");
		else if (cw_int(&c->w, kv, key, 1, REPLICAS_MAX, &n) == 0)
			s->replicas = (int)n;	/* the rest: app_rules.c */
		break;
	case SK_HOSTS:
		svc_hosts(c, skv, kv, key, s);
		break;
	case SK_READINESS:
		svc_readiness(c, kv, key, s);
		break;
	case SK_LISTEN:
		if ((str = cw_str(&c->w, kv, key, SIZE_MAX)) == NULL)
			break;
		if (strcmp(str, "unix") == 0)
			s->listen_unix = 1;
		else if (strcmp(str, "tcp") != 0)
			cw_diag(&c->w, kv->line, key, "must be unix or tcp");
		break;
	case SK_KUBERNETES_DEPLOYMENT:
		/* a Deployment the operator made: a DNS label, as hk's */
		if ((str = cw_str(&c->w, kv, key, CONFIG_NAME_MAX)) == NULL)
			break;
		if (!config_valid_name(str))
			cw_diag(&c->w, kv->line, key, "not a Deployment's name "
			    "(a-z, 0-9 and '-', 1 to 63, starting and ending "
			    "with a letter or digit)");
		else
			s->k8s_deployment = cw_strndup(&c->w, str,
			    strlen(str));
		break;
	case SK_NODE_NAME:
		if ((str = cw_str(&c->w, kv, key, CONFIG_HOST_MAX)) == NULL)
			break;
		if (!config_valid_host(str, 0))
			cw_diag(&c->w, kv->line, key, "invalid node name");
		else if (config_backend_can(s->backend, BACKEND_IMAGE_ONLY))
			/* a node of the cluster: the scheduler's to know */
			s->node_name = cw_strndup(&c->w, str, strlen(str));
		else if (c->srv == NULL || config_node_find(c->srv, str) ==
		    NULL)
			cw_diag(&c->w, kv->line, key, "no node \"%s\" in the "
			    "operator configuration", str);
		else
			s->node_name = cw_strndup(&c->w, str, strlen(str));
		break;
	case SK_BACKEND:
		if ((str = cw_str(&c->w, kv, key, SIZE_MAX)) == NULL)
			break;
		if ((n = config_backend_find(str)) == -1)
			cw_diag(&c->w, kv->line, key,
			    "must be exec, container, s6, systemd or kubernetes");
		else
			s->backend = (enum backend_kind)n;
		break;
	case SK_SERVERLESS:
		svc_policy(c, kv, key, s);
		break;
	case SK_USER:
		svc_user(c, kv, key, s);
		break;
	case SK_BACKEND_HTTP2:
		if (kv->value->type != TOML_BOOL)
			cw_diag(&c->w, kv->line, key, "must be a boolean");
		else if (!sless && kv->value->u.boolean)
			cw_diag(&c->w, kv->line, key, NOT_YET "the gateway "
			    "speaks HTTP/1.1 to every backend");
		break;
	default:
		/* ordinary-only: refused, with [serverless] or for why */
		if (!sless && app_svc_keys[k].why != NULL)
			cw_diag(&c->w, kv->line, key, "%s", app_svc_keys[k].why);
		break;
	}
}

/* One [services.NAME]; s->name is "" when NAME is not a valid name. */
static void
svc_parse(struct actx *c, const struct toml_kv *skv, struct service_spec *s)
{
	const struct toml_kv *slot[SK_COUNT] = { NULL }, *kv;
	const struct toml_value *sv = skv->value;
	char prefix[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];
	size_t i, k;
	int sless;

	cw_kpath(prefix, "services", skv->key, skv->keylen);
	s->line = sv->line > 0 ? sv->line : skv->line;
	s->replicas = 1;
	s->ordinary_start_timeout = ORDINARY_START_DEFAULT;
	s->backend = BACKEND_COUNT;	/* none given (yet) */
	s->readiness = READY_TCP;
	if (strlen(skv->key) != skv->keylen || !config_valid_name(skv->key))
		cw_diag(&c->w, skv->line, prefix, NAME_REASON);
	else
		(void)strlcpy(s->name, skv->key, sizeof(s->name));
	if (sv->type != TOML_TABLE) {
		cw_diag(&c->w, skv->line, prefix, "must be a table");
		return;
	}
	for (i = 0; i < sv->u.table.len; i++) {
		kv = &sv->u.table.items[i];
		for (k = 0; k < SK_COUNT; k++)
			if (cw_key_is(kv, app_svc_keys[k].name))
				break;
		if (k < SK_COUNT) {
			slot[k] = kv;
			continue;
		}
		cw_kpath(key, prefix, kv->key, kv->keylen);
		cw_diag(&c->w, kv->line, key, "%s",
		    kv->value->type == TOML_TABLE ? "unknown table" :
		    svc_unknown_why(kv));
	}
	sless = slot[SK_SERVERLESS] != NULL &&
	    slot[SK_SERVERLESS]->value->type == TOML_TABLE;
	for (k = 0; k < SK_COUNT; k++)
		if (slot[k] != NULL)
			svc_value(c, k, skv, slot[k], sless, s);
	if (slot[SK_IMAGE] == NULL && slot[SK_COMMAND] == NULL &&
	    slot[SK_KUBERNETES_DEPLOYMENT] == NULL)
		cw_diag(&c->w, s->line, prefix, "requires image or command");
	else
		app_rules_backend(c, slot, prefix, s);
	app_rules_secrets(c, slot, prefix, s);
	if (slot[SK_SOURCE] != NULL && slot[SK_DIRECTORY] != NULL) {
		cw_kpath_s(key, prefix, "directory");
		cw_diag(&c->w, slot[SK_DIRECTORY]->line, key, "not allowed "
		    "with source (the source is the working directory)");
	}
	/* With a source, hk-scale says where it runs (spec.h). */
	if (s->directory == NULL && slot[SK_DIRECTORY] == NULL &&
	    slot[SK_SOURCE] == NULL)
		s->directory = cw_strndup(&c->w, c->dir, strlen(c->dir));
	if (s->size == NULL && slot[SK_SIZE] == NULL)
		s->size = cw_strndup(&c->w, "small", 5);
	if (slot[SK_HOSTS] == NULL) {
		cw_kpath_s(key, prefix, "hosts");
		svc_default_host(c, skv, key, s);
	}
	app_rules_routing(c, slot, prefix, s);
	app_schedules_check(c, prefix, slot[SK_SCHEDULES], s);
	if (!c->w.oom)
		s->spec_json = svc_json(c, s, slot, prefix);
}

static int
hostref_cmp(const void *a, const void *b)
{
	const struct hostref *x = a, *y = b;
	int r;

	if ((r = strcmp(x->host, y->host)) != 0)
		return r;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A host may appear once in the file; the later use is the error. */
static void
hosts_check(struct actx *c)
{
	const struct toml_kv *s, *first;
	char key[CW_KEYPATH_LEN], other[CW_KEYPATH_LEN];
	char shown[CW_KEYSHOW_MAX * 6 + 8];
	size_t i, f;

	if (c->nhosts < 2)
		return;
	qsort(c->hosts, c->nhosts, sizeof(c->hosts[0]), hostref_cmp);
	for (i = 1, f = 0; i < c->nhosts; i++) {
		if (strcmp(c->hosts[i].host, c->hosts[f].host) != 0) {
			f = i;
			continue;
		}
		s = c->hosts[i].svc;
		first = c->hosts[f].svc;
		cw_kpath(other, "services", s->key, s->keylen);
		cw_kpath_s(key, other, "hosts");
		cw_kpath(other, "services", first->key, first->keylen);
		cw_show(shown, sizeof(shown), c->hosts[i].host,
		    strlen(c->hosts[i].host), 1);
		cw_diag(&c->w, c->hosts[i].line, key, "duplicate host %s "
		    "(also %s)", shown, other);
	}
}

static void
app_root(struct actx *c, const struct toml_value *root)
{
	const struct toml_kv *kv, *ver = NULL, *name = NULL, *svcs = NULL;
	const struct toml_kv *jobs = NULL;
	const struct toml_value *sv;
	char key[CW_KEYPATH_LEN];
	size_t i;

	for (i = 0; i < root->u.table.len; i++) {
		kv = &root->u.table.items[i];
		if (cw_key_is(kv, "schema_version"))
			ver = kv;
		else if (cw_key_is(kv, "name"))
			name = kv;
		else if (cw_key_is(kv, "services"))
			svcs = kv;
		else if (cw_key_is(kv, "jobs"))
			jobs = kv;
		else {
			cw_kpath(key, NULL, kv->key, kv->keylen);
			cw_diag(&c->w, kv->line, key, "%s",
			    kv->value->type == TOML_TABLE ? "unknown table" :
			    "unknown key");
		}
	}
	if (ver == NULL)
		cw_diag(&c->w, 1, "schema_version", "missing");
	else if (ver->value->type != TOML_INTEGER)
		cw_diag(&c->w, ver->line, "schema_version",
		    "must be an integer");
	else if (ver->value->u.integer != 1)
		cw_diag(&c->w, ver->line, "schema_version", "must be 1");
	if (name == NULL)
		cw_diag(&c->w, 1, "name", "missing");
	else if (name->value->type != TOML_STRING)
		cw_diag(&c->w, name->line, "name", "must be a string");
	else if (strlen(name->value->u.string.ptr) !=
	    name->value->u.string.len ||
	    !config_valid_name(name->value->u.string.ptr))
		cw_diag(&c->w, name->line, "name", NAME_REASON);
	else
		(void)strlcpy(c->app->name, name->value->u.string.ptr,
		    sizeof(c->app->name));
	if (jobs != NULL)
		app_jobs(c, jobs);
	if (svcs == NULL)
		return;
	sv = svcs->value;
	if (sv->type != TOML_TABLE) {
		cw_diag(&c->w, svcs->line, "services", "must be a table");
		return;
	}
	if (sv->u.table.len == 0)
		return;
	c->app->services = calloc(sv->u.table.len, sizeof(*c->app->services));
	if (c->app->services == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < sv->u.table.len && !c->w.oom; i++) {
		svc_parse(c, &sv->u.table.items[i],
		    &c->app->services[c->app->nservices]);
		c->app->nservices++;
	}
	if (!c->w.oom)
		hosts_check(c);
}
/* The ordinary-only keys, as written; -1 on failure (diagnosed or oom). */
static int
svc_extras(struct actx *c, json_t *o, const struct toml_kv *const *slot,
    const char *prefix)
{
	char key[CW_KEYPATH_LEN];
	json_t *e;
	size_t k;
	int deep = 0;

	for (k = 0; k < SK_COUNT; k++) {
		/* spec_encode()'s, canonical */
		if (!app_svc_keys[k].ordinary || slot[k] == NULL ||
		    k == SK_VOLUMES || k == SK_STARTUP_TIMEOUT)
			continue;
		if ((e = cw_json(slot[k]->value, 0, &deep)) == NULL) {
			if (!deep) {
				c->w.oom = 1;
				return -1;
			}
			cw_kpath_s(key, prefix, app_svc_keys[k].name);
			cw_diag(&c->w, slot[k]->line, key,
			    "nested too deeply (at most %d levels)",
			    CW_JSON_DEPTH_MAX);
			return -1;
		}
		if (json_object_set_new(o, app_svc_keys[k].name, e) == -1) {
			c->w.oom = 1;
			return -1;
		}
	}
	return 0;
}

/*
 * The canonical JSON of a service (spec_encode()) with its ordinary-only
 * keys, keys sorted, compact; no line numbers.  Unchanged input gives the
 * same bytes.  NULL on failure (diagnosed, or c->w.oom).
 */
static char *
svc_json(struct actx *c, const struct service_spec *s,
    const struct toml_kv *const *slot, const char *prefix)
{
	char *out = NULL;
	json_t *o;

	if ((o = spec_encode(s)) == NULL) {
		c->w.oom = 1;
		return NULL;
	}
	if (svc_extras(c, o, slot, prefix) == 0 &&
	    (out = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT)) == NULL)
		c->w.oom = 1;
	json_decref(o);
	return out;
}

int
app_parse(struct app_config *app, const char *path, const char *buf,
    size_t len, const struct server_config *srv, struct config_diag *d)
{
	struct toml_value *root;
	struct toml_error terr;
	struct actx *c;
	int rc = 0;

	memset(app, 0, sizeof(*app));
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		cw_diag_add(d, "%s: %s", path, strerror(errno));
		return -1;
	}
	c->w.file = path;
	c->srv = srv;
	c->app = app;
	if ((app->path = strdup(path)) == NULL) {
		cw_diag_add(d, "%s: %s", path, strerror(errno));
		free(c);
		return -1;
	}
	if (file_dir(path, c->dir, sizeof(c->dir)) == -1) {
		cw_diag_add(d, "%s: unable to resolve its directory: %s",
		    path, strerror(errno != 0 ? errno : ENAMETOOLONG));
		rc = -1;
		goto out;
	}
	if ((root = toml_parse(buf, len, &terr)) == NULL) {
		if (terr.line > 0)
			cw_diag_add(d, "%s:%d: syntax: %s", path,
			    terr.line, terr.msg);
		else
			cw_diag_add(d, "%s: syntax: %s", path, terr.msg);
		rc = -1;
		goto out;
	}
	app_root(c, root);
	if (!c->w.oom)
		app_jobs_check(c);
	toml_free(root);
	if (c->w.oom)
		cw_diag_add(d, "%s: %s", path, strerror(ENOMEM));
	cw_flush(&c->w.dl, d);
	if (c->w.oom || c->w.dl.count > 0)
		rc = -1;
out:
	free(c->hosts);
	free(c);
	if (rc == -1)
		app_free(app);
	return rc;
}

int
app_load(struct app_config *app, const char *path,
    const struct server_config *srv, struct config_diag *d, int *missing)
{
	char *buf;
	size_t len;
	int rc, dummy;

	if (missing == NULL)
		missing = &dummy;
	*missing = 0;
	memset(app, 0, sizeof(*app));
	if (cw_read(path, 0, &buf, &len, missing, d) != 0)
		return -1;
	rc = app_parse(app, path, buf, len, srv, d);
	free(buf);
	return rc;
}

void
app_free(struct app_config *app)
{
	size_t i;

	if (app == NULL)
		return;
	for (i = 0; i < app->nservices; i++)
		spec_clear(&app->services[i]);
	free(app->services);
	for (i = 0; i < app->njobs; i++)
		app_job_clear(&app->jobs[i]);
	free(app->jobs);
	free(app->path);
	memset(app, 0, sizeof(*app));
}

size_t
app_count_serverless(const struct app_config *app)
{
	size_t i, n = 0;

	for (i = 0; i < app->nservices; i++)
		if (app->services[i].serverless)
			n++;
	return n;
}
