/*
 * engine_ops.c - the engine's operations (see engine.h): each checks what
 * goes into the request, builds path and body, and starts one call.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "engine_impl.h"

#define NAME_CHARS	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" \
			"0123456789_.-"
#define PATH_MAX_OPS	1024	/* a request path, filters included */

struct pull {
	struct engine_split	 split;
	json_t			*last;		/* the last progress object */
	char			 err[ENGINE_ERR_LEN];
};

static int	valid(const char *, size_t, const char *);
static int	valid_addr(const char *);
static int	valid_bind(const char *);
static int	valid_labels(const char *const *);
static char	*escape(const char *);
static char	*label_filters(const char *const *, const char *);
static struct engine_call *containers_json(struct engine *, char *,
		    engine_done_fn *, void *);
static struct engine_call *json_call(struct engine *, const char *,
		    const char *, json_t *, engine_done_fn *, void *);
static struct engine_call *id_call(struct engine *, const char *,
		    const char *, const char *, const char *,
		    engine_done_fn *, void *);
static int	pull_feed(struct engine_call *);
static int	drop_feed(struct engine_call *);
static void	drop_end(struct engine_call *, int, const char *);
static int	pull_obj(json_t *, void *);
static void	pull_end(struct engine_call *, int, const char *);
static void	pull_free(void *);
static json_t	*strings(const char *const *);
static json_t	*labels_json(const char *const *);
static json_t	*spec_json(const struct engine_spec *);
static int	spec_host(const struct engine_spec *, json_t *);
static int	spec_check(const struct engine_spec *);
static int	add_ulimit(json_t *, const char *, int);
static void	state_ports(const json_t *, int, struct engine_state *);

/* s: 1..max bytes of chars, starting with a letter or a digit. */
static int
valid(const char *s, size_t max, const char *chars)
{
	size_t n;

	if (s == NULL || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' &&
	    *s <= 'Z') || (*s >= '0' && *s <= '9')))
		return 0;
	n = strspn(s, chars);
	return s[n] == '\0' && n <= max;
}

/* An IPv4 or IPv6 address, in its characters (the engine parses it). */
static int
valid_addr(const char *s)
{
	size_t n;

	n = strspn(s, "0123456789abcdefABCDEF.:");
	return n > 0 && s[n] == '\0' && n < ENGINE_ADDR_MAX;
}

/* "key=value" each, with a key. */
static int
valid_labels(const char *const *labels)
{
	const char *eq;

	for (; labels != NULL && *labels != NULL; labels++)
		if ((eq = strchr(*labels, '=')) == NULL || eq == *labels)
			return 0;
	return 1;
}

/* Percent-encodes all but RFC 3986's unreserved characters. */
static char *
escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	unsigned char ch;
	char *out, *o;

	if ((out = reallocarray(NULL, strlen(s) + 1, 3)) == NULL)
		return NULL;
	for (o = out; (ch = (unsigned char)*s) != '\0'; s++) {
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL)
			*o++ = (char)ch;
		else {
			*o++ = '%';
			*o++ = hex[ch >> 4];
			*o++ = hex[ch & 15];
		}
	}
	*o = '\0';
	return out;
}

/*
 * The filters base (JSON, or NULL) with {"label": labels}, escaped for a
 * query.  NULL with errno: EINVAL for a label that is not UTF-8.
 */
static char *
label_filters(const char *const *labels, const char *base)
{
	json_t *f, *l;
	char *text, *out;

	if ((f = base != NULL ? json_loads(base, 0, NULL) : json_object()) ==
	    NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (labels != NULL && labels[0] != NULL &&
	    ((l = strings(labels)) == NULL ||
	    json_object_set_new(f, "label", l) == -1)) {
		json_decref(f);
		errno = EINVAL;
		return NULL;
	}
	text = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(f);
	if (text == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	out = escape(text);
	free(text);
	return out;
}

static struct engine_call *
json_call(struct engine *e, const char *method, const char *path,
    json_t *body, engine_done_fn *fn, void *arg)
{
	struct engine_call *c;

	if ((c = engine_call_new(e, method, path, body)) == NULL)
		return NULL;
	c->fn = fn;
	c->arg = arg;
	return engine_call_start(c) == -1 ? NULL : c;
}

/* method on /containers/ID<what><query>. */
static struct engine_call *
id_call(struct engine *e, const char *method, const char *id,
    const char *what, const char *query, engine_done_fn *fn, void *arg)
{
	char path[PATH_MAX_OPS];

	if (!valid(id, ENGINE_NAME_MAX, NAME_CHARS)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "/containers/%s%s%s", id, what, query);
	return json_call(e, method, path, NULL, fn, arg);
}

struct engine_call *
engine_version(struct engine *e, engine_done_fn *fn, void *arg)
{
	return json_call(e, "GET", "/version", NULL, fn, arg);
}

struct engine_call *
engine_image_inspect(struct engine *e, const char *image, engine_done_fn *fn,
    void *arg)
{
	char path[PATH_MAX_OPS];

	if (!valid(image, ENGINE_IMAGE_MAX, NAME_CHARS ":/@")) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "/images/%s/json", image);
	return json_call(e, "GET", path, NULL, fn, arg);
}

/*
 * fromImage and tag: "latest" when the reference has neither tag nor
 * digest, for an empty tag would pull every tag of the repository.
 * auth: the line "X-Registry-Auth: ..." (regauth.h), or NULL.
 */
struct engine_call *
engine_image_pull(struct engine *e, const char *image, const char *auth,
    engine_done_fn *fn, void *arg)
{
	struct curl_slist *h;
	char path[PATH_MAX_OPS], *q = NULL;
	const char *slash, *tag = "&tag=latest";
	struct engine_call *c;
	struct pull *p;

	if (!valid(image, ENGINE_IMAGE_MAX, NAME_CHARS ":/@")) {
		errno = EINVAL;
		return NULL;
	}
	slash = strrchr(image, '/');
	if (strchr(image, '@') != NULL ||
	    strchr(slash != NULL ? slash : image, ':') != NULL)
		tag = "";
	if ((p = calloc(1, sizeof(*p))) == NULL || (q = escape(image)) ==
	    NULL) {
		free(p);
		return NULL;
	}
	snprintf(path, sizeof(path), "/images/create?fromImage=%s%s", q, tag);
	free(q);
	if ((c = engine_call_new(e, "POST", path, NULL)) == NULL) {
		free(p);
		return NULL;
	}
	c->ctx = p;
	c->ctxfree = pull_free;
	/* appended: the list's head, which the handle holds, stays */
	if (auth != NULL && (h = curl_slist_append(c->hdrs, auth)) == NULL) {
		engine_call_free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->max = 2 * ENGINE_OBJ_MAX;
	c->feedfn = pull_feed;
	c->endfn = pull_end;
	c->fn = fn;
	c->arg = arg;
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS,
	    (long)ENGINE_PULL_TIMEOUT_MS);
	return engine_call_start(c) == -1 ? NULL : c;
}

static int
pull_feed(struct engine_call *c)
{
	struct pull *p = c->ctx;
	ssize_t n;

	n = engine_objects(&p->split, c->buf, c->len, pull_obj, p, c->err,
	    sizeof(c->err));
	if (n == -1)
		return -1;
	memmove(c->buf, c->buf + n, c->len - (size_t)n);
	c->len -= (size_t)n;
	return 0;
}

/*
 * A progress object; the first "error" is the pull's failure.  podman's
 * is a chain of causes, the root one last: "initializing source
 * docker://IMAGE: reading manifest ...: unauthorized: ...".  Its lead,
 * which names the image the caller knows, goes (a reference has no
 * ": "), and one still too long keeps its end.
 */
static int
pull_obj(json_t *o, void *arg)
{
	struct pull *p = arg;
	char tail[ENGINE_ERR_LEN];
	const char *m;
	json_t *error;
	size_t n;

	error = json_object_get(o, "error");
	if (json_is_string(error) && p->err[0] == '\0') {
		m = json_string_length(error) > 0 ? json_string_value(error) :
		    "pull failed";
		if (strncmp(m, "initializing source ", 20) == 0 &&
		    strstr(m, ": ") != NULL)
			m = strstr(m, ": ") + 2;
		if ((n = strlen(m)) >= sizeof(p->err)) {
			snprintf(tail, sizeof(tail), "...%s",
			    m + n - (sizeof(tail) - 4));
			m = tail;
		}
		engine_reason(p->err, sizeof(p->err), m);
	}
	json_decref(p->last);
	p->last = json_incref(o);
	return 0;
}

static void
pull_end(struct engine_call *c, int status, const char *err)
{
	struct pull *p = c->ctx;

	if (err == NULL && p->err[0] != '\0')
		err = p->err;
	c->fn(c->arg, status, err == NULL ? p->last : NULL, err);
}

static void
pull_free(void *arg)
{
	struct pull *p = arg;

	json_decref(p->last);
	free(p);
}

static json_t *
strings(const char *const *v)
{
	json_t *a;

	if ((a = json_array()) == NULL)
		return NULL;
	for (; v != NULL && *v != NULL; v++)
		if (json_array_append_new(a, json_string(*v)) == -1) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* {"key": "value"} of "key=value" strings (checked by valid_labels). */
static json_t *
labels_json(const char *const *labels)
{
	const char *eq;
	json_t *o;
	char *key;

	if ((o = json_object()) == NULL)
		return NULL;
	for (; labels != NULL && *labels != NULL; labels++) {
		eq = strchr(*labels, '=');
		if ((key = strndup(*labels, (size_t)(eq - *labels))) == NULL ||
		    json_object_set_new(o, key, json_string(eq + 1)) == -1) {
			free(key);
			json_decref(o);
			return NULL;
		}
		free(key);
	}
	return o;
}

static int
spec_check(const struct engine_spec *s)
{
	const char *const *t;

	if (!valid(s->image, ENGINE_IMAGE_MAX, NAME_CHARS ":/@") ||
	    (s->name != NULL && !valid(s->name, ENGINE_NAME_MAX,
	    NAME_CHARS)) || !valid_labels(s->labels) ||
	    !valid_labels(s->env) || s->port < 0 || s->port > 65535 ||
	    s->host_port < 0 || s->host_port > 65535 ||
	    (s->host_ip != NULL && (s->port == 0 ||
	    !valid_addr(s->host_ip))) ||
	    s->memory < 0 || s->nano_cpus < 0 || s->nofile < 0 ||
	    s->nproc < 0)
		return 0;
	for (t = s->tmpfs; t != NULL && *t != NULL; t++)
		if (**t != '/')
			return 0;
	for (t = s->binds; t != NULL && *t != NULL; t++)
		if (!valid_bind(*t))
			return 0;
	if (s->workdir != NULL && s->workdir[0] != '/')
		return 0;
	return 1;
}

/*
 * "/HOST:/PATH" or "/HOST:/PATH:OPTIONS", the options a word list; or
 * VOLUME in place of /HOST, a volume's name.
 */
static int
valid_bind(const char *b)
{
	const char *c1, *c2;
	char vol[ENGINE_VOLUME_MAX + 1];
	size_t n;

	if ((c1 = strchr(b, ':')) == NULL || c1[1] != '/')
		return 0;
	if (b[0] != '/') {
		if ((n = c1 - b) > ENGINE_VOLUME_MAX)
			return 0;
		memcpy(vol, b, n);
		vol[n] = '\0';
		if (!valid(vol, ENGINE_VOLUME_MAX, NAME_CHARS))
			return 0;
	}
	if ((c2 = strchr(c1 + 1, ':')) == NULL)
		return 1;
	return c2[1] != '\0' && strspn(c2 + 1, "abcdefghijklmnopqrstuvwxyz,") ==
	    strlen(c2 + 1);
}

static json_t *
spec_json(const struct engine_spec *s)
{
	json_t *o, *host;
	char port[16];
	int bad = 0;

	if ((o = json_object()) == NULL)
		return NULL;
	bad |= json_object_set_new(o, "Image", json_string(s->image));
	if (s->entrypoint != NULL)
		bad |= json_object_set_new(o, "Entrypoint",
		    strings(s->entrypoint));
	if (s->cmd != NULL)
		bad |= json_object_set_new(o, "Cmd", strings(s->cmd));
	if (s->env != NULL)
		bad |= json_object_set_new(o, "Env", strings(s->env));
	if (s->user != NULL)
		bad |= json_object_set_new(o, "User", json_string(s->user));
	if (s->workdir != NULL)
		bad |= json_object_set_new(o, "WorkingDir",
		    json_string(s->workdir));
	bad |= json_object_set_new(o, "Labels", labels_json(s->labels));
	if (s->port > 0) {
		snprintf(port, sizeof(port), "%d/tcp", s->port);
		bad |= json_object_set_new(o, "ExposedPorts",
		    json_pack("{s{}}", port));
	}
	bad |= json_object_set_new(o, "HostConfig", host = json_object());
	if (bad || host == NULL || spec_host(s, host) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int
add_ulimit(json_t *a, const char *name, int n)
{
	if (n == 0)
		return 0;
	return json_array_append_new(a, json_pack("{sssisi}", "Name", name,
	    "Soft", n, "Hard", n));
}

/* HostConfig: the published port, limits, tmpfs, network, init. */
static int
spec_host(const struct engine_spec *s, json_t *h)
{
	const char *const *t;
	const char *colon;
	json_t *ulimits, *tmpfs;
	char port[16], hport[16], *path;
	int bad = 0;

	if (s->port > 0 && s->host_ip != NULL) {
		snprintf(port, sizeof(port), "%d/tcp", s->port);
		snprintf(hport, sizeof(hport), "%d", s->host_port);
		bad |= json_object_set_new(h, "PortBindings",
		    json_pack("{s[{ssss}]}", port, "HostIp", s->host_ip,
		    "HostPort", s->host_port > 0 ? hport : ""));
	}
	if (s->memory > 0)
		bad |= json_object_set_new(h, "Memory",
		    json_integer(s->memory));
	if (s->nano_cpus > 0)
		bad |= json_object_set_new(h, "NanoCpus",
		    json_integer(s->nano_cpus));
	bad |= json_object_set_new(h, "Ulimits", ulimits = json_array());
	bad |= add_ulimit(ulimits, "nofile", s->nofile);
	bad |= add_ulimit(ulimits, "nproc", s->nproc);
	bad |= json_object_set_new(h, "Tmpfs", tmpfs = json_object());
	for (t = s->tmpfs; !bad && t != NULL && *t != NULL; t++) {
		colon = strchr(*t, ':');
		path = strndup(*t, colon != NULL ? (size_t)(colon - *t) :
		    strlen(*t));
		bad |= path == NULL || json_object_set_new(tmpfs, path,
		    json_string(colon != NULL ? colon + 1 : "")) == -1;
		free(path);
	}
	if (s->binds != NULL)
		bad |= json_object_set_new(h, "Binds", strings(s->binds));
	if (s->network != NULL)
		bad |= json_object_set_new(h, "NetworkMode",
		    json_string(s->network));
	if (s->init)
		bad |= json_object_set_new(h, "Init", json_true());
	if (s->no_new_privs)
		bad |= json_object_set_new(h, "SecurityOpt",
		    json_pack("[s]", "no-new-privileges"));
	if (s->cap_drop_all)
		bad |= json_object_set_new(h, "CapDrop", json_pack("[s]",
		    "ALL"));
	return bad ? -1 : 0;
}

struct engine_call *
engine_create(struct engine *e, const struct engine_spec *s,
    engine_done_fn *fn, void *arg)
{
	struct engine_call *c;
	char path[PATH_MAX_OPS];
	json_t *body;

	if (!spec_check(s)) {
		errno = EINVAL;
		return NULL;
	}
	if ((body = spec_json(s)) == NULL) {
		errno = EINVAL;		/* or a string that is not UTF-8 */
		return NULL;
	}
	snprintf(path, sizeof(path), "/containers/create%s%s",
	    s->name != NULL ? "?name=" : "", s->name != NULL ? s->name : "");
	c = json_call(e, "POST", path, body, fn, arg);
	json_decref(body);
	return c;
}

struct engine_call *
engine_start(struct engine *e, const char *id, engine_done_fn *fn,
    void *arg)
{
	struct engine_call *c;

	if ((c = id_call(e, "POST", id, "/start", "", fn, arg)) != NULL)
		c->ok304 = 1;
	return c;
}

/* The call lasts as long as the grace period, and the usual timeout more. */
struct engine_call *
engine_stop(struct engine *e, const char *id, int seconds,
    engine_done_fn *fn, void *arg)
{
	struct engine_call *c;
	char query[32];

	if (seconds < 0 || seconds > 86400) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(query, sizeof(query), "?t=%d", seconds);
	if ((c = id_call(e, "POST", id, "/stop", query, fn, arg)) == NULL)
		return NULL;
	c->ok304 = 1;
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS,
	    e->timeout_ms + seconds * 1000L);
	return c;
}

struct engine_call *
engine_kill(struct engine *e, const char *id, const char *sig,
    engine_done_fn *fn, void *arg)
{
	char query[32];

	if (!valid(sig, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(query, sizeof(query), "?signal=%s", sig);
	return id_call(e, "POST", id, "/kill", query, fn, arg);
}

/*
 * The container's processes frozen (the cgroup freezer), or thawed: a
 * paused container keeps its memory and, for the engine, runs.
 */
struct engine_call *
engine_pause(struct engine *e, const char *id, engine_done_fn *fn,
    void *arg)
{
	return id_call(e, "POST", id, "/pause", "", fn, arg);
}

struct engine_call *
engine_unpause(struct engine *e, const char *id, engine_done_fn *fn,
    void *arg)
{
	return id_call(e, "POST", id, "/unpause", "", fn, arg);
}

struct engine_call *
engine_remove(struct engine *e, const char *id, engine_done_fn *fn,
    void *arg)
{
	return id_call(e, "DELETE", id, "", "?force=1&v=1", fn, arg);
}

struct engine_call *
engine_inspect(struct engine *e, const char *id, engine_done_fn *fn,
    void *arg)
{
	return id_call(e, "GET", id, "/json", "", fn, arg);
}

/* GET /containers/json of every state with filters (taken; NULL: none). */
static struct engine_call *
containers_json(struct engine *e, char *filters, engine_done_fn *fn,
    void *arg)
{
	struct engine_call *c;
	char *path;

	if (filters == NULL)
		return NULL;
	if (asprintf(&path, "/containers/json?all=1&filters=%s",
	    filters) == -1) {
		free(filters);
		return NULL;
	}
	free(filters);
	c = json_call(e, "GET", path, NULL, fn, arg);
	free(path);
	return c;
}

struct engine_call *
engine_list(struct engine *e, const char *const *labels, engine_done_fn *fn,
    void *arg)
{
	if (!valid_labels(labels)) {
		errno = EINVAL;
		return NULL;
	}
	return containers_json(e, label_filters(labels, NULL), fn, arg);
}

/*
 * A named volume, its root the container user's: podman's local driver
 * takes uid and gid from "o" and chowns the new directory.  Docker's
 * would mount "o" as a file system's options at each start, and fail:
 * uid and gid -1 send no "o".
 */
struct engine_call *
engine_volume_create(struct engine *e, const char *name,
    const char *const *labels, long uid, long gid, engine_done_fn *fn,
    void *arg)
{
	struct engine_call *c;
	char o[64];
	json_t *body;

	if (!valid(name, ENGINE_VOLUME_MAX, NAME_CHARS) ||
	    !valid_labels(labels) || (uid < 0 && uid != -1) ||
	    (gid < 0 && gid != -1) || (uid == -1) != (gid == -1)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(o, sizeof(o), "uid=%ld,gid=%ld", uid, gid);
	if (uid == -1)
		body = json_pack("{s:s, s:o}", "Name", name, "Labels",
		    labels_json(labels));
	else
		body = json_pack("{s:s, s:o, s:{s:s}}", "Name", name, "Labels",
		    labels_json(labels), "DriverOpts", "o", o);
	if (body == NULL) {
		errno = EINVAL;
		return NULL;
	}
	c = json_call(e, "POST", "/volumes/create", body, fn, arg);
	json_decref(body);
	return c;
}

struct engine_call *
engine_volume_list(struct engine *e, const char *const *labels,
    engine_done_fn *fn, void *arg)
{
	struct engine_call *c;
	char *filters, *path;

	if (!valid_labels(labels)) {
		errno = EINVAL;
		return NULL;
	}
	if ((filters = label_filters(labels, NULL)) == NULL)
		return NULL;
	if (asprintf(&path, "/volumes?filters=%s", filters) == -1) {
		free(filters);
		return NULL;
	}
	free(filters);
	c = json_call(e, "GET", path, NULL, fn, arg);
	free(path);
	return c;
}

struct engine_call *
engine_volume_users(struct engine *e, const char *name, engine_done_fn *fn,
    void *arg)
{
	char base[ENGINE_VOLUME_MAX + 32];

	if (!valid(name, ENGINE_VOLUME_MAX, NAME_CHARS)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(base, sizeof(base), "{\"volume\":[\"%s\"]}", name);
	return containers_json(e, label_filters(NULL, base), fn, arg);
}

struct engine_call *
engine_volume_remove(struct engine *e, const char *name, engine_done_fn *fn,
    void *arg)
{
	char path[ENGINE_VOLUME_MAX + 16];

	if (!valid(name, ENGINE_VOLUME_MAX, NAME_CHARS)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "/volumes/%s", name);
	return json_call(e, "DELETE", path, NULL, fn, arg);
}

/*
 * A command run in a running container (the image's HEALTHCHECK, say):
 * created, started, inspected, as Docker's CLI does.
 */
struct engine_call *
engine_exec_create(struct engine *e, const char *id, const char *const *cmd,
    engine_done_fn *fn, void *arg)
{
	struct engine_call *c;
	char path[PATH_MAX_OPS];
	json_t *body;

	if (!valid(id, ENGINE_NAME_MAX, NAME_CHARS) || cmd == NULL ||
	    cmd[0] == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if ((body = json_pack("{s:o, s:b, s:b}", "Cmd", strings(cmd),
	    "AttachStdout", 1, "AttachStderr", 1)) == NULL) {
		errno = EINVAL;		/* or not UTF-8 */
		return NULL;
	}
	snprintf(path, sizeof(path), "/containers/%s/exec", id);
	c = json_call(e, "POST", path, body, fn, arg);
	json_decref(body);
	return c;
}

/* Its output is read to the end (the command's exit) and dropped. */
static int
drop_feed(struct engine_call *c)
{
	c->len = 0;
	return 0;
}

static void
drop_end(struct engine_call *c, int status, const char *err)
{
	c->fn(c->arg, status, NULL, err);
}

struct engine_call *
engine_exec_start(struct engine *e, const char *exec_id, engine_done_fn *fn,
    void *arg)
{
	struct engine_call *c;
	char path[PATH_MAX_OPS];
	json_t *body;

	if (!valid(exec_id, ENGINE_NAME_MAX, NAME_CHARS)) {
		errno = EINVAL;
		return NULL;
	}
	if ((body = json_pack("{s:b, s:b}", "Detach", 0, "Tty", 0)) == NULL)
		return NULL;
	snprintf(path, sizeof(path), "/exec/%s/start", exec_id);
	c = engine_call_new(e, "POST", path, body);
	json_decref(body);
	if (c == NULL)
		return NULL;
	c->max = 64 * 1024;
	c->feedfn = drop_feed;
	c->endfn = drop_end;
	c->fn = fn;
	c->arg = arg;
	return engine_call_start(c) == -1 ? NULL : c;
}

struct engine_call *
engine_exec_inspect(struct engine *e, const char *exec_id, engine_done_fn *fn,
    void *arg)
{
	char path[PATH_MAX_OPS];

	if (!valid(exec_id, ENGINE_NAME_MAX, NAME_CHARS)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
	return json_call(e, "GET", path, NULL, fn, arg);
}

/* An exec's inspection: 1 still running, 0 exited (*code), -1 not one. */
int
engine_exec_state(const json_t *o, int *code)
{
	const json_t *r = json_object_get(o, "Running");
	const json_t *x = json_object_get(o, "ExitCode");

	if (!json_is_boolean(r))
		return -1;
	if (json_is_true(r))
		return 1;
	if (!json_is_integer(x) || json_integer_value(x) < 0 ||
	    json_integer_value(x) > 255)
		*code = -1;
	else
		*code = (int)json_integer_value(x);
	return 0;
}

/*
 * For the events stream (engine_stream.c): its path, with filters on type
 * and labels.  Not on the event: podman 4.3 matches that filter against
 * its own names ("died"), not the ones it sends ("die"); engine_event()
 * keeps the events we want.
 */
char *
engine_events_path(const char *const *labels)
{
	char *filters, *path;

	if (!valid_labels(labels)) {
		errno = EINVAL;
		return NULL;
	}
	if ((filters = label_filters(labels,
	    "{\"type\": [\"container\"]}")) == NULL)
		return NULL;
	if (asprintf(&path, "/events?filters=%s", filters) == -1)
		path = NULL;
	free(filters);
	return path;
}

/* For the logs (engine_stream.c): its path; flags ENGINE_LOGS_*. */
char *
engine_logs_path(const char *id, int64_t since, int flags)
{
	char *path;

	if (!valid(id, ENGINE_NAME_MAX, NAME_CHARS) || since < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (asprintf(&path, "/containers/%s/logs?follow=%d&stdout=1&stderr=1"
	    "&timestamps=%d&since=%lld", id,
	    (flags & ENGINE_LOGS_FOLLOW) != 0,
	    (flags & ENGINE_LOGS_TIMES) != 0, (long long)since) == -1)
		return NULL;
	return path;
}

const char *
engine_id(const json_t *o)
{
	const char *id;
	size_t n;

	if (!json_is_string(json_object_get(o, "Id")))
		return NULL;
	id = json_string_value(json_object_get(o, "Id"));
	n = strspn(id, "0123456789abcdef");
	return id[n] == '\0' && n >= 12 && n < ENGINE_ID_MAX ? id : NULL;
}

/* Where port/tcp is published: the first binding with a port. */
static void
state_ports(const json_t *o, int port, struct engine_state *st)
{
	json_t *b;
	const char *ip, *hp;
	char key[16];
	size_t i;

	snprintf(key, sizeof(key), "%d/tcp", port);
	json_array_foreach(json_object_get(json_object_get(json_object_get(o,
	    "NetworkSettings"), "Ports"), key), i, b) {
		ip = json_string_value(json_object_get(b, "HostIp"));
		hp = json_string_value(json_object_get(b, "HostPort"));
		if (hp == NULL || (st->host_port = (int)strtonum(hp, 1, 65535,
		    NULL)) == 0)
			continue;
		if (ip == NULL || strlcpy(st->host_ip, ip,
		    sizeof(st->host_ip)) >= sizeof(st->host_ip))
			st->host_ip[0] = '\0';
		return;
	}
}

int
engine_state(const json_t *o, int port, struct engine_state *st, char *err,
    size_t errlen)
{
	const json_t *s;
	const char *id, *status, *health;
	json_int_t code, pid;

	memset(st, 0, sizeof(*st));
	s = json_object_get(o, "State");
	if ((id = engine_id(o)) == NULL || !json_is_object(s) ||
	    (status = json_string_value(json_object_get(s, "Status"))) ==
	    NULL || !json_is_boolean(json_object_get(s, "Running")) ||
	    !json_is_integer(json_object_get(s, "ExitCode"))) {
		snprintf(err, errlen, "not a container's inspection: no Id "
		    "or State");
		return -1;
	}
	strlcpy(st->id, id, sizeof(st->id));
	engine_reason(st->status, sizeof(st->status), status);
	st->running = json_is_true(json_object_get(s, "Running"));
	code = json_integer_value(json_object_get(s, "ExitCode"));
	st->exit_code = code >= -1 && code <= 65535 ? (int)code : -1;
	pid = json_integer_value(json_object_get(s, "Pid"));
	st->pid = pid > 0 && pid < (1 << 30) ? (int)pid : 0;
	health = json_string_value(json_object_get(json_object_get(s,
	    "Health"), "Status"));
	if (health != NULL)
		engine_reason(st->health, sizeof(st->health), health);
	if (port > 0)
		state_ports(o, port, st);
	return 0;
}
