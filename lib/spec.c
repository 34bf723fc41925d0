/*
 * spec.c - a service spec and its canonical JSON, both ways (see spec.h):
 * spec_encode() writes it from a spec that app.c has validated, and
 * spec_decode() reads it back from the store, with the tables both need
 * ([serverless]'s keys, the sizes).
 *
 * The store is shared and may be edited by hand: every field is
 * type-checked again and a bad one rejects the whole spec rather than
 * half-filling it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "spec.h"
#include "secret.h"
#include "srctree.h"

static char	*opt_string(json_t *, const char *, int *);
static char	**string_array(json_t *, size_t *, int *);
static int	decode_readiness(json_t *, struct service_spec *);
static int	decode_policy(json_t *, struct service_spec *);
static int	decode_env(json_t *, struct service_spec *);
static int	decode_backend(json_t *, struct service_spec *);
static int	decode_secrets(json_t *, struct service_spec *);
static int	decode_volumes(json_t *, struct service_spec *);
static json_t	*volumes_json(const struct service_spec *);
static void	free_strings(char **, size_t);
static json_t	*json_str_or_null(const char *);
static json_t	*json_strv(char *const *, size_t, int);
static int	idle_check_put(json_t *, const char *);

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

static const char *const idle_actions[] = { "stop", "suspend", NULL };
static const char *const start_froms[] = { "exec", "python-template",
    "node-spare", NULL };

/* [services.NAME.serverless]: spec.h says what each column holds. */
static const struct spec_policy_key policy_keys[] = {
	{ "idle_action", IDLE_STOP, IDLE_SUSPEND, IDLE_STOP, SPEC_PK_ENUM,
	    offsetof(struct serverless_policy, idle_action), idle_actions },
	{ "idle_check_max_seconds", 10, 86400, 600, SPEC_PK_SPARSE,
	    offsetof(struct serverless_policy, idle_check_max_seconds), NULL },
	{ "idle_seconds", 30, 86400, 300, 0,
	    offsetof(struct serverless_policy, idle_seconds), NULL },
	{ "max_concurrency", 1, 64, 16, 0,
	    offsetof(struct serverless_policy, max_concurrency), NULL },
	{ "min_replicas", 0, 1, 0, 0,
	    offsetof(struct serverless_policy, min_replicas), NULL },
	{ "request_buffering", 0, 1, 1, SPEC_PK_BOOL,
	    offsetof(struct serverless_policy, request_buffering), NULL },
	{ "request_timeout_seconds", 1, 300, 60, 0,
	    offsetof(struct serverless_policy, request_timeout_seconds), NULL },
	{ "start_from", START_FROM_EXEC, START_FROM_NODE, START_FROM_EXEC,
	    SPEC_PK_ENUM, offsetof(struct serverless_policy, start_from),
	    start_froms },
	{ "startup_timeout_seconds", 5, 300, 60, 0,
	    offsetof(struct serverless_policy, startup_timeout_seconds), NULL },
	{ "suspend_max_seconds", 30, 604800, 3600, SPEC_PK_SPARSE,
	    offsetof(struct serverless_policy, suspend_max_seconds), NULL },
	{ "waiting_page_after_ms", 0, 300000, 0, SPEC_PK_SPARSE,
	    offsetof(struct serverless_policy, waiting_page_after_ms), NULL },
};

/* The sizes of hk.toml(5): an instance's memory and CPUs (billionths). */
static const struct {
	const char	*name;
	int64_t		 memory;
	int64_t		 nano_cpus;
} sizes[] = {
	{ "small", 512LL << 20, 1000000000LL },
	{ "medium", 2048LL << 20, 2000000000LL },
	{ "large", 8192LL << 20, 4000000000LL },
};

static char *
opt_string(json_t *o, const char *key, int *bad)
{
	json_t *v = json_object_get(o, key);
	char *s;

	if (v == NULL || json_is_null(v))
		return NULL;
	if (!json_is_string(v) || (s = strdup(json_string_value(v))) == NULL) {
		*bad = 1;
		return NULL;
	}
	return s;
}

static char **
string_array(json_t *a, size_t *n, int *bad)
{
	char **out;
	json_t *v;
	size_t i;

	*n = 0;
	if (a == NULL || json_is_null(a))
		return NULL;
	if (!json_is_array(a) ||
	    (out = calloc(json_array_size(a) + 1, sizeof(*out))) == NULL) {
		*bad = 1;
		return NULL;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) ||
		    (out[i] = strdup(json_string_value(v))) == NULL) {
			*bad = 1;
			break;
		}
		*n = i + 1;
	}
	return out;
}

const char *
spec_http_check(const char *r)
{
	const char *p;

	if (strncmp(r, "http:/", 6) != 0)
		return NULL;
	for (p = r + 5; *p != '\0'; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return NULL;
	return r + 5;
}

static int
decode_readiness(json_t *o, struct service_spec *s)
{
	const char *r = json_string_value(json_object_get(o, "readiness"));

	if (r == NULL || strcmp(r, "tcp") == 0)
		s->readiness = READY_TCP;
	else if (strcmp(r, "notify") == 0)
		s->readiness = READY_NOTIFY;
	else if (strcmp(r, "socket") == 0)
		s->readiness = READY_SOCKET;
	else if (strcmp(r, "healthcheck") == 0)
		s->readiness = READY_HEALTH;
	else if (spec_http_check(r) != NULL) {
		s->readiness = READY_HTTP;
		if ((s->readiness_path = strdup(r + 5)) == NULL)
			return -1;
	} else
		return -1;
	return 0;
}

static int
decode_policy(json_t *o, struct service_spec *s)
{
	json_t *p = json_object_get(o, "serverless");
	const char *action = NULL, *check = NULL, *from = NULL;
	int buffering;

	if (p == NULL || json_is_null(p)) {
		s->serverless = 0;
		return 0;
	}
	buffering = 1;		/* absent: its default (see spec_json) */
	s->policy.waiting_page_after_ms = 0;
	s->policy.suspend_max_seconds = 3600;
	s->policy.idle_check_max_seconds = 600;
	if (json_unpack(p, "{s:i, s:i, s:i, s:i, s:i, s?b, s?i, s?s, s?i, "
	    "s?s, s?i, s?s}",
	    "min_replicas", &s->policy.min_replicas,
	    "idle_seconds", &s->policy.idle_seconds,
	    "startup_timeout_seconds", &s->policy.startup_timeout_seconds,
	    "request_timeout_seconds", &s->policy.request_timeout_seconds,
	    "max_concurrency", &s->policy.max_concurrency,
	    "request_buffering", &buffering,
	    "waiting_page_after_ms", &s->policy.waiting_page_after_ms,
	    "idle_action", &action,
	    "suspend_max_seconds", &s->policy.suspend_max_seconds,
	    "idle_check", &check,
	    "idle_check_max_seconds", &s->policy.idle_check_max_seconds,
	    "start_from", &from) ==
	    -1 || s->policy.waiting_page_after_ms < 0 ||
	    s->policy.suspend_max_seconds < 1 ||
	    s->policy.idle_check_max_seconds < 1)
		return -1;
	if (check != NULL && (spec_http_check(check) == NULL ||
	    (s->idle_check_path = strdup(check + 5)) == NULL))
		return -1;
	if (action == NULL || strcmp(action, "stop") == 0)
		s->policy.idle_action = IDLE_STOP;
	else if (strcmp(action, "suspend") == 0)
		s->policy.idle_action = IDLE_SUSPEND;
	else
		return -1;
	if (from == NULL || strcmp(from, "exec") == 0)
		s->policy.start_from = START_FROM_EXEC;
	else if (strcmp(from, "python-template") == 0)
		s->policy.start_from = START_FROM_PYTHON;
	else if (strcmp(from, "node-spare") == 0)
		s->policy.start_from = START_FROM_NODE;
	else
		return -1;
	s->policy.request_buffering = buffering;
	s->serverless = 1;
	return 0;
}

static int
decode_env(json_t *o, struct service_spec *s)
{
	json_t *e = json_object_get(o, "environment"), *v;
	const char *k;
	size_t i = 0;

	if (e == NULL || json_is_null(e))
		return 0;
	if (!json_is_object(e) || (s->env = calloc(json_object_size(e) + 1,
	    sizeof(*s->env))) == NULL)
		return -1;
	json_object_foreach(e, k, v) {
		if (!json_is_string(v))
			return -1;
		s->env[i].name = strdup(k);
		s->env[i].value = strdup(json_string_value(v));
		s->nenv = ++i;
		if (s->env[i - 1].name == NULL || s->env[i - 1].value == NULL)
			return -1;
	}
	return 0;
}

int
spec_python_command(char *const *argv, size_t n)
{
	const char *base;
	size_t i = 1;

	if (argv == NULL || n < 2)
		return 0;
	base = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 :
	    argv[0];
	if (strncmp(base, "python", 6) != 0)
		return 0;
	if (strcmp(argv[i], "-u") == 0)
		i++;
	if (i < n && strcmp(argv[i], "-m") == 0)
		return i + 1 < n && argv[i + 1][0] != '-';
	return i < n && argv[i][0] != '-';
}

int
spec_node_command(char *const *argv, size_t n)
{
	const char *base;

	if (argv == NULL || n < 2)
		return 0;
	base = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 :
	    argv[0];
	return (strcmp(base, "node") == 0 || strcmp(base, "nodejs") == 0) &&
	    argv[1][0] != '-' && argv[1][0] != '\0';
}

/*
 * Every spec stored before backends had names ran on exec when it could
 * (it had a command), and spec_encode() writes "backend" only where this
 * rule says otherwise: those specs keep their bytes and their revision.
 */
enum backend_kind
spec_backend_default(const struct service_spec *s)
{
	return s->command != NULL ? BACKEND_EXEC : BACKEND_CONTAINER;
}

/* After the command: the default depends on it. */
static int
decode_backend(json_t *o, struct service_spec *s)
{
	json_t *v = json_object_get(o, "backend");
	int k;

	if (v == NULL || json_is_null(v)) {
		s->backend = spec_backend_default(s);
		return 0;
	}
	if (!json_is_string(v) ||
	    (k = config_backend_find(json_string_value(v))) == -1)
		return -1;
	s->backend = (enum backend_kind)k;
	return 0;
}

int
spec_decode(const char *text, struct service_spec *s, char *err,
    size_t errlen)
{
	json_error_t jerr;
	json_t *o, *v;
	int bad = 0;

	memset(s, 0, sizeof(*s));
	if ((o = json_loads(text, JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		snprintf(err, errlen, "spec is not JSON: %s", jerr.text);
		return -1;
	}
	v = json_object_get(o, "name");
	if (!json_is_string(v) || strlcpy(s->name, json_string_value(v),
	    sizeof(s->name)) >= sizeof(s->name))
		bad = 1;
	s->image = opt_string(o, "image", &bad);
	s->command = string_array(json_object_get(o, "command"),
	    &s->ncommand, &bad);
	s->directory = opt_string(o, "directory", &bad);
	s->size = opt_string(o, "size", &bad);
	s->node_name = opt_string(o, "node_name", &bad);
	s->k8s_deployment = opt_string(o, "kubernetes_deployment", &bad);
	s->user = opt_string(o, "user", &bad);
	s->code_hash = opt_string(o, "code_hash", &bad);
	if (s->code_hash != NULL && !srctree_valid_hash(s->code_hash))
		bad = 1;
	s->hosts = string_array(json_object_get(o, "hosts"), &s->nhosts, &bad);
	v = json_object_get(o, "listen");
	if (v != NULL && (!json_is_string(v) ||
	    strcmp(json_string_value(v), "unix") != 0))
		bad = 1;
	s->listen_unix = v != NULL;
	v = json_object_get(o, "port");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 65535)
		bad = 1;
	s->port = (int)json_integer_value(v);
	s->public_ = json_is_true(json_object_get(o, "public"));
	v = json_object_get(o, "enabled");
	if (v != NULL && !json_is_boolean(v))
		bad = 1;
	s->disabled = json_is_false(v);
	s->replicas = (int)json_integer_value(json_object_get(o, "replicas"));
	v = json_object_get(o, "startup_timeout_seconds");
	if (v != NULL && (!json_is_integer(v) ||
	    json_integer_value(v) < ORDINARY_START_MIN ||
	    json_integer_value(v) > ORDINARY_START_MAX))
		bad = 1;
	s->ordinary_start_timeout = v != NULL ? (int)json_integer_value(v) :
	    ORDINARY_START_DEFAULT;
	if (decode_readiness(o, s) == -1 || decode_policy(o, s) == -1 ||
	    decode_env(o, s) == -1 || decode_backend(o, s) == -1 ||
	    decode_secrets(o, s) == -1 || decode_volumes(o, s) == -1 ||
	    spec_image_get(o, s) == -1)
		bad = 1;
	if (!bad && (s->spec_json = strdup(text)) == NULL)
		bad = 1;
	json_decref(o);
	if (bad) {
		snprintf(err, errlen, "spec has a missing or mistyped field");
		spec_clear(s);
		return -1;
	}
	return 0;
}

static void
free_strings(char **v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

void
spec_clear(struct service_spec *s)
{
	size_t i;

	free(s->image);
	free(s->image_digest);
	free_strings(s->command, s->ncommand);
	free(s->directory);
	for (i = 0; s->env != NULL && i < s->nenv; i++) {
		free(s->env[i].name);
		free(s->env[i].value);
	}
	free(s->env);
	free(s->size);
	free_strings(s->hosts, s->nhosts);
	free(s->readiness_path);
	free(s->idle_check_path);
	free(s->node_name);
	free(s->k8s_deployment);
	free(s->user);
	free(s->source);
	free(s->code_hash);
	free(s->code);
	free_strings(s->secrets, s->nsecrets);
	free_strings(s->secret_digests, s->nsecrets);
	for (i = 0; i < s->nschedules; i++)
		free(s->schedules[i].spec_json);
	free(s->schedules);
	for (i = 0; i < s->nvolumes; i++)
		volume_clear(&s->volumes[i]);
	free(s->volumes);
	free(s->spec_json);
	memset(s, 0, sizeof(*s));
}

int
spec_load_all(struct store *st, struct svc **out, size_t *nout, char *err,
    size_t errlen)
{
	struct store_service *rows;
	struct svc *svcs;
	char why[SPEC_ERR_LEN];
	size_t n, i, k = 0;

	err[0] = '\0';
	if (store_service_list(st, &rows, &n) == -1) {
		snprintf(err, errlen, "%s", store_error(st));
		return -1;
	}
	if ((svcs = calloc(n + 1, sizeof(*svcs))) == NULL) {
		store_service_free(rows, n);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (spec_decode(rows[i].spec_json, &svcs[k].spec, why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "%s/%s: %s", rows[i].app,
			    rows[i].name, why);
			continue;
		}
		strlcpy(svcs[k].app, rows[i].app, sizeof(svcs[k].app));
		strlcpy(svcs[k].name, rows[i].name, sizeof(svcs[k].name));
		snprintf(svcs[k].id, sizeof(svcs[k].id), "%s/%s", rows[i].app,
		    rows[i].name);
		svcs[k].revision = rows[i].revision;
		svcs[k].desired = rows[i].desired;
		k++;
	}
	store_service_free(rows, n);
	*out = svcs;
	*nout = k;
	return 0;
}

void
spec_free_all(struct svc *svcs, size_t n)
{
	size_t i;

	for (i = 0; svcs != NULL && i < n; i++)
		spec_clear(&svcs[i].spec);
	free(svcs);
}

/* Names valid, digests valid or "" (not looked up: refused at start). */
static int
decode_secrets(json_t *o, struct service_spec *s)
{
	json_t *m = json_object_get(o, "secrets"), *v;
	const char *name;
	size_t n;

	v = json_object_get(o, "secrets_env");
	if (v != NULL && !json_is_boolean(v))
		return -1;
	s->secrets_env = json_is_true(v);
	if (m == NULL)
		return 0;
	if (!json_is_object(m) || (n = json_object_size(m)) == 0)
		return -1;
	if ((s->secrets = calloc(n + 1, sizeof(*s->secrets))) == NULL ||
	    (s->secret_digests = calloc(n + 1,
	    sizeof(*s->secret_digests))) == NULL)
		return -1;
	json_object_foreach(m, name, v) {
		if (!secret_valid_name(name) || !json_is_string(v) ||
		    (*json_string_value(v) != '\0' &&
		    !secret_valid_digest(json_string_value(v))))
			return -1;
		if ((s->secrets[s->nsecrets] = strdup(name)) == NULL ||
		    (s->secret_digests[s->nsecrets] =
		    strdup(json_string_value(v))) == NULL) {
			s->nsecrets++;
			return -1;
		}
		s->nsecrets++;
	}
	return 0;
}

int
spec_secrets_put(json_t *o, const struct service_spec *s)
{
	json_t *m;
	size_t i;
	int err = 0;

	if ((m = json_object()) == NULL)
		return -1;
	for (i = 0; i < s->nsecrets; i++)
		err |= json_object_set_new(m, s->secrets[i], json_string(
		    s->secret_digests != NULL && s->secret_digests[i] != NULL ?
		    s->secret_digests[i] : ""));
	err |= json_object_set_new(o, "secrets", m);
	if (s->secrets_env)
		err |= json_object_set_new(o, "secrets_env", json_true());
	return err != 0 ? -1 : 0;
}

int
spec_set_secrets(struct service_spec *s, char *const *digests)
{
	json_t *o;
	char *out = NULL;
	size_t i;

	if (s->secret_digests == NULL && (s->secret_digests = calloc(
	    s->nsecrets + 1, sizeof(*s->secret_digests))) == NULL)
		return -1;
	for (i = 0; i < s->nsecrets; i++) {
		free(s->secret_digests[i]);
		if ((s->secret_digests[i] = strdup(digests[i])) == NULL)
			return -1;
	}
	if ((o = json_loads(s->spec_json, 0, NULL)) == NULL)
		return -1;
	if (spec_secrets_put(o, s) == 0)
		out = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(o);
	if (out == NULL)
		return -1;
	free(s->spec_json);
	s->spec_json = out;
	return 0;
}

const struct spec_policy_key *
spec_policy_keys(size_t *n)
{
	*n = nitems(policy_keys);
	return policy_keys;
}

/*
 * The limits of a size (hk.toml(5)): 0 and both set, or -1 for a size
 * that is not one (a spec stored by a newer hk).  NULL is the default.
 */
int
spec_size_limits(const char *size, int64_t *memory, int64_t *nano_cpus)
{
	size_t i;

	if (size == NULL)
		size = "small";
	for (i = 0; i < nitems(sizes); i++)
		if (strcmp(size, sizes[i].name) == 0) {
			*memory = sizes[i].memory;
			*nano_cpus = sizes[i].nano_cpus;
			return 0;
		}
	return -1;
}

static json_t *
json_str_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

/* An array of strings; JSON null for a NULL array when nullable. */
static json_t *
json_strv(char *const *v, size_t n, int nullable)
{
	json_t *a;
	size_t i;

	if (v == NULL && nullable)
		return json_null();
	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) == -1) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* [serverless] idle_check, written as the file has it: "http:/PATH". */
static int
idle_check_put(json_t *policy, const char *path)
{
	char *v;
	int rc;

	if (asprintf(&v, "http:%s", path) == -1)
		return -1;
	rc = json_object_set_new(policy, "idle_check", json_string(v));
	free(v);
	return rc;
}

/*
 * The canonical JSON of a service: every field with its default filled in;
 * no line numbers.  Unchanged input gives the same bytes.
 */
json_t *
spec_encode(const struct service_spec *s)
{
	static const char *const ready[] = {
		[READY_TCP] = "tcp", [READY_HTTP] = "http",
		[READY_NOTIFY] = "notify", [READY_SOCKET] = "socket",
		[READY_HEALTH] = "healthcheck",
	};
	char *rd = NULL;
	json_t *o, *e;
	size_t i;
	int err = 0, v;

	if ((o = json_object()) == NULL)
		return NULL;
	err |= json_object_set_new(o, "name", json_string(s->name));
	err |= json_object_set_new(o, "image", json_str_or_null(s->image));
	err |= json_object_set_new(o, "command",
	    json_strv(s->command, s->ncommand, 1));
	err |= json_object_set_new(o, "directory",
	    json_str_or_null(s->directory));
	e = json_object();
	for (i = 0; i < s->nenv; i++)
		err |= json_object_set_new(e, s->env[i].name,
		    json_string(s->env[i].value));
	err |= json_object_set_new(o, "environment", e);
	err |= json_object_set_new(o, "port", json_integer(s->port));
	err |= json_object_set_new(o, "public", json_boolean(s->public_));
	err |= json_object_set_new(o, "size", json_str_or_null(s->size));
	err |= json_object_set_new(o, "replicas", json_integer(s->replicas));
	err |= json_object_set_new(o, "hosts",
	    json_strv(s->hosts, s->nhosts, 0));
	if (s->readiness == READY_HTTP && s->readiness_path != NULL &&
	    asprintf(&rd, "http:%s", s->readiness_path) == -1)
		err = -1;
	err |= json_object_set_new(o, "readiness",
	    json_string(rd != NULL ? rd : ready[s->readiness]));
	free(rd);
	err |= json_object_set_new(o, "node_name",
	    json_str_or_null(s->node_name));
	/* Only when "unix", so that specs of before it keep their bytes. */
	if (s->listen_unix)
		err |= json_object_set_new(o, "listen", json_string("unix"));
	/* only when set: a stored spec without it means the same */
	if (s->k8s_deployment != NULL)
		err |= json_object_set_new(o, "kubernetes_deployment",
		    json_string(s->k8s_deployment));
	/* Only where a stored spec without it would mean another one. */
	if (s->backend != spec_backend_default(s))
		err |= json_object_set_new(o, "backend",
		    json_string(config_backend_name(s->backend)));
	e = s->serverless ? json_object() : json_null();
	for (i = 0; s->serverless && i < nitems(policy_keys); i++) {
		v = *(const int *)((const char *)&s->policy +
		    policy_keys[i].off);
		/* kept only when not its default (SPEC_PK_SPARSE) */
		if (policy_keys[i].flags != 0 && v == policy_keys[i].def)
			continue;
		err |= json_object_set_new(e, policy_keys[i].name,
		    (policy_keys[i].flags & SPEC_PK_BOOL) ? json_boolean(v) :
		    (policy_keys[i].flags & SPEC_PK_ENUM) ?
		    json_string(policy_keys[i].names[v]) : json_integer(v));
	}
	/* Only when set, as the sparse keys: older specs keep their bytes. */
	if (s->serverless && s->idle_check_path != NULL)
		err |= idle_check_put(e, s->idle_check_path);
	err |= json_object_set_new(o, "serverless", e);
	/* Only when not its default, so that older specs keep their bytes. */
	if (!s->serverless &&
	    s->ordinary_start_timeout != ORDINARY_START_DEFAULT)
		err |= json_object_set_new(o, "startup_timeout_seconds",
		    json_integer(s->ordinary_start_timeout));
	/* Only when false, so that specs of before it keep their bytes. */
	if (s->disabled)
		err |= json_object_set_new(o, "enabled", json_false());
	/* Only when set, so that specs of before it keep their bytes. */
	if (s->user != NULL)
		err |= json_object_set_new(o, "user", json_string(s->user));
	/* The hash, not the path: moving the tree is not a new revision. */
	if (s->code_hash != NULL)
		err |= json_object_set_new(o, "code_hash",
		    json_string(s->code_hash));
	err |= spec_image_put(o, s);
	/* Names; hk apply adds each one's digest (spec_set_secrets()). */
	if (s->nsecrets > 0)
		err |= spec_secrets_put(o, s);
	/* Only when there are some: specs of before them keep their bytes. */
	if (s->nvolumes > 0)
		err |= json_object_set_new(o, "volumes", volumes_json(s));
	if (err != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Each entry read as a file's is (volume_parse()); none is an error. */
static int
decode_volumes(json_t *o, struct service_spec *s)
{
	json_t *a = json_object_get(o, "volumes"), *v;
	char why[VOLUME_ERR_LEN];
	size_t i;

	if (a == NULL)
		return 0;
	if (!json_is_array(a) || json_array_size(a) == 0 ||
	    json_array_size(a) > VOLUMES_MAX ||
	    (s->volumes = calloc(json_array_size(a),
	    sizeof(*s->volumes))) == NULL)
		return -1;
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || volume_parse(json_string_value(v),
		    &s->volumes[i], why, sizeof(why)) == -1)
			return -1;
		s->nvolumes = i + 1;
	}
	return 0;
}

static json_t *
volumes_json(const struct service_spec *s)
{
	json_t *a;
	char *e;
	size_t i;

	if ((a = json_array()) == NULL)
		return NULL;
	for (i = 0; i < s->nvolumes; i++) {
		if ((e = volume_format(&s->volumes[i])) == NULL ||
		    json_array_append_new(a, json_string(e)) == -1) {
			free(e);
			json_decref(a);
			return NULL;
		}
		free(e);
	}
	return a;
}
