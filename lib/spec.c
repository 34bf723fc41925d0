/*
 * spec.c - a service spec read back from its canonical JSON (see spec.h).
 *
 * The JSON was written by config.c from a validated file, but the store is
 * shared and may be edited by hand: every field is type-checked again and a
 * bad one rejects the whole spec rather than half-filling it.
 */
#include <errno.h>
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
static void	free_strings(char **, size_t);

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
	else if (strncmp(r, "http:/", 6) == 0) {
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
	const char *action = NULL;
	int buffering;

	if (p == NULL || json_is_null(p)) {
		s->serverless = 0;
		return 0;
	}
	buffering = 1;		/* absent: its default (see spec_json) */
	s->policy.waiting_page_after_ms = 0;
	s->policy.suspend_max_seconds = 3600;
	if (json_unpack(p, "{s:i, s:i, s:i, s:i, s:i, s?b, s?i, s?s, s?i}",
	    "min_replicas", &s->policy.min_replicas,
	    "idle_seconds", &s->policy.idle_seconds,
	    "startup_timeout_seconds", &s->policy.startup_timeout_seconds,
	    "request_timeout_seconds", &s->policy.request_timeout_seconds,
	    "max_concurrency", &s->policy.max_concurrency,
	    "request_buffering", &buffering,
	    "waiting_page_after_ms", &s->policy.waiting_page_after_ms,
	    "idle_action", &action,
	    "suspend_max_seconds", &s->policy.suspend_max_seconds) == -1 ||
	    s->policy.waiting_page_after_ms < 0 ||
	    s->policy.suspend_max_seconds < 1)
		return -1;
	if (action == NULL || strcmp(action, "stop") == 0)
		s->policy.idle_action = IDLE_STOP;
	else if (strcmp(action, "suspend") == 0)
		s->policy.idle_action = IDLE_SUSPEND;
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

/*
 * Every spec stored before backends had names ran on exec when it could
 * (it had a command), and config.c writes "backend" only where this rule
 * says otherwise: those specs keep their bytes and their revision.
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
	s->user = opt_string(o, "user", &bad);
	s->code_hash = opt_string(o, "code_hash", &bad);
	if (s->code_hash != NULL && !srctree_valid_hash(s->code_hash))
		bad = 1;
	s->hosts = string_array(json_object_get(o, "hosts"), &s->nhosts, &bad);
	v = json_object_get(o, "port");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 65535)
		bad = 1;
	s->port = (int)json_integer_value(v);
	s->public_ = json_is_true(json_object_get(o, "public"));
	s->replicas = (int)json_integer_value(json_object_get(o, "replicas"));
	if (decode_readiness(o, s) == -1 || decode_policy(o, s) == -1 ||
	    decode_env(o, s) == -1 || decode_backend(o, s) == -1 ||
	    decode_secrets(o, s) == -1)
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
	free(s->node_name);
	free(s->user);
	free(s->source);
	free(s->code_hash);
	free(s->code);
	free_strings(s->secrets, s->nsecrets);
	free_strings(s->secret_digests, s->nsecrets);
	for (i = 0; i < s->nschedules; i++)
		free(s->schedules[i].spec_json);
	free(s->schedules);
	free(s->spec_json);
	memset(s, 0, sizeof(*s));
}

int
svc_load_all(struct store *st, struct svc **out, size_t *nout, char *err,
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
svc_free_all(struct svc *svcs, size_t n)
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
