/*
 * config_vet.c - [vet] of hakopod.toml (hakopod.toml(5)): the code
 * vetting gate of hk apply.  Off by default; when it is on, the endpoint
 * and the model are required, and a key is never sent in clear: an
 * http:// endpoint must be on this host (a loopback address).
 */
#include <sys/stat.h>

#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_impl.h"
#include "toml.h"

#define VET_TIMEOUT_DEF		15
#define VET_TIMEOUT_MAX		300
#define VET_BYTES_DEF		(100 * 1024)
#define VET_BYTES_MIN		1024
#define VET_BYTES_MAX		(16 * 1024 * 1024)

static const char *const default_exts[] = {
	".py", ".js", ".ts", ".json", ".yaml", ".yml", ".txt", ".sh", ".sql",
	".go",
};

static int	vet_key(struct config_vet *, const struct toml_kv *,
		    const char *, struct config_diag *);
static int	vet_str(const struct toml_kv *, char *, size_t, int,
		    const char *, const char *, struct config_diag *);
static int	vet_exts(struct config_vet *, const struct toml_kv *,
		    const char *, const char *, struct config_diag *);
static int	valid_ext(const char *, size_t);
static int	check_endpoint(const char *, char *, size_t);
static int	loopback_host(const char *, size_t);

void
config_vet_defaults(struct config_vet *v)
{
	size_t i;

	memset(v, 0, sizeof(*v));
	v->timeout_seconds = VET_TIMEOUT_DEF;
	v->max_bytes = VET_BYTES_DEF;
	(void)strlcpy(v->prompt_file, CONFIG_VET_PROMPT,
	    sizeof(v->prompt_file));
	for (i = 0; i < nitems(default_exts); i++)
		(void)strlcpy(v->extensions[i], default_exts[i],
		    sizeof(v->extensions[i]));
	v->nextensions = nitems(default_exts);
}

/* A string key into dst; abs: an absolute path. */
static int
vet_str(const struct toml_kv *kv, char *dst, size_t size, int abs,
    const char *key, const char *file, struct config_diag *d)
{
	const struct toml_value *v = kv->value;

	if (v->type != TOML_STRING || strlen(v->u.string.ptr) !=
	    v->u.string.len) {
		cw_diag_add(d, "%s:%d: %s: must be a string", file,
		    kv->line, key);
		return -1;
	}
	if (v->u.string.len == 0 || v->u.string.len >= size) {
		cw_diag_add(d, "%s:%d: %s: must be 1 to %zu bytes", file,
		    kv->line, key, size - 1);
		return -1;
	}
	if (abs && v->u.string.ptr[0] != '/') {
		cw_diag_add(d, "%s:%d: %s: must be an absolute path",
		    file, kv->line, key);
		return -1;
	}
	(void)strlcpy(dst, v->u.string.ptr, size);
	return 0;
}

/* ".py": a dot, then letters, digits, '.', '_' or '-'. */
static int
valid_ext(const char *s, size_t len)
{
	size_t i;

	if (len < 2 || len > CONFIG_EXT_MAX || s[0] != '.')
		return 0;
	for (i = 1; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' &&
		    s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static int
vet_exts(struct config_vet *v, const struct toml_kv *kv, const char *key,
    const char *file, struct config_diag *d)
{
	const struct toml_value *a = kv->value, *e;
	size_t i;

	if (a->type != TOML_ARRAY || a->u.array.len == 0 ||
	    a->u.array.len > CONFIG_EXTS_MAX) {
		cw_diag_add(d, "%s:%d: %s: must be an array of 1 to %d "
		    "extensions", file, kv->line, key, CONFIG_EXTS_MAX);
		return -1;
	}
	for (i = 0; i < a->u.array.len; i++) {
		e = a->u.array.items[i];
		if (e->type != TOML_STRING || !valid_ext(e->u.string.ptr,
		    e->u.string.len)) {
			cw_diag_add(d, "%s:%d: %s: each must be a dot and "
			    "1 to %d letters, digits, '.', '_' or '-', as "
			    "\".py\"", file, kv->line, key, CONFIG_EXT_MAX - 1);
			return -1;
		}
		(void)strlcpy(v->extensions[i], e->u.string.ptr,
		    sizeof(v->extensions[i]));
	}
	v->nextensions = a->u.array.len;
	return 0;
}

/* Whether the host part (bracketed IPv6 or not) is a loopback address. */
static int
loopback_host(const char *h, size_t len)
{
	char buf[64];
	struct in_addr a4;
	struct in6_addr a6;

	if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
		h++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(buf))
		return 0;
	memcpy(buf, h, len);
	buf[len] = '\0';
	if (strcmp(buf, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, buf, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, buf, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}

/*
 * https://HOST[:PORT]/PATH, or http:// to a loopback address only: the
 * key and the code go over it.  No user or password in the URL.
 */
static int
check_endpoint(const char *url, char *why, size_t whylen)
{
	const char *host, *end;
	int tls;

	if (strncmp(url, "https://", 8) == 0)
		tls = 1;
	else if (strncmp(url, "http://", 7) == 0)
		tls = 0;
	else {
		(void)snprintf(why, whylen, "must start with https:// (or "
		    "http:// to this host)");
		return -1;
	}
	host = url + (tls ? 8 : 7);
	end = host + strcspn(host, "/?#");
	if (memchr(host, '@', (size_t)(end - host)) != NULL) {
		(void)snprintf(why, whylen, "must not hold a user or password "
		    "(the key goes in api_key_file)");
		return -1;
	}
	if (end == host || strpbrk(url, " \t\r\n") != NULL) {
		(void)snprintf(why, whylen, "not a URL");
		return -1;
	}
	/* The port, if any, follows the last ':' outside brackets. */
	if (!tls) {
		const char *colon = end;

		while (colon > host && colon[-1] != ':' && colon[-1] != ']')
			colon--;
		if (colon > host && colon[-1] == ':')
			end = colon - 1;
		if (!loopback_host(host, (size_t)(end - host))) {
			(void)snprintf(why, whylen, "http:// only to a loopback "
			    "address (the code and the key would cross the "
			    "network in clear): use https://");
			return -1;
		}
	}
	return 0;
}

static int
vet_key(struct config_vet *v, const struct toml_kv *kv, const char *file,
    struct config_diag *d)
{
	char key[CW_KEYPATH_LEN], why[256];
	const struct toml_value *val = kv->value;

	cw_kpath(key, "vet", kv->key, kv->keylen);
	if (cw_key_is(kv, "enabled")) {
		if (val->type != TOML_BOOL) {
			cw_diag_add(d, "%s:%d: %s: must be a boolean",
			    file, kv->line, key);
			return -1;
		}
		v->enabled = val->u.boolean != 0;
		return 0;
	}
	if (cw_key_is(kv, "timeout_seconds") || cw_key_is(kv, "max_bytes")) {
		int t = cw_key_is(kv, "timeout_seconds");
		int64_t lo = t ? 1 : VET_BYTES_MIN;
		int64_t hi = t ? VET_TIMEOUT_MAX : VET_BYTES_MAX;

		if (val->type != TOML_INTEGER || val->u.integer < lo ||
		    val->u.integer > hi) {
			cw_diag_add(d, "%s:%d: %s: must be an integer "
			    "between %lld and %lld", file, kv->line, key,
			    (long long)lo, (long long)hi);
			return -1;
		}
		*(t ? &v->timeout_seconds : &v->max_bytes) = val->u.integer;
		return 0;
	}
	if (cw_key_is(kv, "endpoint")) {
		if (vet_str(kv, v->endpoint, sizeof(v->endpoint), 0, key, file,
		    d) == -1)
			return -1;
		if (check_endpoint(v->endpoint, why, sizeof(why)) == -1) {
			cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
			    why);
			return -1;
		}
		return 0;
	}
	if (cw_key_is(kv, "model"))
		return vet_str(kv, v->model, sizeof(v->model), 0, key, file, d);
	if (cw_key_is(kv, "api_key_file"))
		return vet_str(kv, v->api_key_file, sizeof(v->api_key_file), 1,
		    key, file, d);
	if (cw_key_is(kv, "ca_file"))
		return vet_str(kv, v->ca_file, sizeof(v->ca_file), 1, key,
		    file, d);
	if (cw_key_is(kv, "prompt_file"))
		return vet_str(kv, v->prompt_file, sizeof(v->prompt_file), 1,
		    key, file, d);
	if (cw_key_is(kv, "extensions"))
		return vet_exts(v, kv, key, file, d);
	cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
	    val->type == TOML_TABLE ? "unknown table" : "unknown key");
	return -1;
}

int
config_vet_walk(struct config_vet *v, const struct toml_kv *kv,
    const char *file, struct config_diag *d)
{
	const struct toml_value *t = kv->value;
	size_t i;
	int rc = 0;

	if (t->type != TOML_TABLE) {
		cw_diag_add(d, "%s:%d: vet: must be a table", file,
		    kv->line);
		return -1;
	}
	v->given = 1;
	v->line = t->line > 0 ? t->line : kv->line;
	for (i = 0; i < t->u.table.len; i++)
		if (vet_key(v, &t->u.table.items[i], file, d) == -1)
			rc = -1;
	if (rc == 0 && v->enabled && (v->endpoint[0] == '\0' ||
	    v->model[0] == '\0')) {
		cw_diag_add(d, "%s:%d: vet: enabled = true requires %s",
		    file, v->line, v->endpoint[0] == '\0' ? "endpoint" :
		    "model");
		rc = -1;
	}
	return rc;
}

/* As "-n -v" prints the keys; the key file's name, never its content. */
void
config_vet_print(FILE *fp, const struct config_vet *v)
{
	const char *src = v->given ? "file" : "default";
	size_t i;

	fprintf(fp, "vet.enabled = %s (%s)\n", v->enabled ? "true" : "false",
	    src);
	fprintf(fp, "vet.endpoint = \"%s\" (%s)\n", v->endpoint, src);
	fprintf(fp, "vet.model = \"%s\" (%s)\n", v->model, src);
	fprintf(fp, "vet.api_key_file = \"%s\" (%s)\n", v->api_key_file, src);
	fprintf(fp, "vet.ca_file = \"%s\" (%s)\n", v->ca_file, src);
	fprintf(fp, "vet.prompt_file = \"%s\" (%s)\n", v->prompt_file, src);
	fprintf(fp, "vet.timeout_seconds = %lld (%s)\n",
	    (long long)v->timeout_seconds, src);
	fprintf(fp, "vet.max_bytes = %lld (%s)\n", (long long)v->max_bytes,
	    src);
	fprintf(fp, "vet.extensions = [");
	for (i = 0; i < v->nextensions; i++)
		fprintf(fp, "%s\"%s\"", i > 0 ? ", " : "", v->extensions[i]);
	fprintf(fp, "] (%s)\n", src);
}
