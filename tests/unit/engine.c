/*
 * engine.c - the pure parts of hk-scale's engine client
 * (cmd/hk-scale/engine*.c): whole JSON objects out of a stream however it
 * is cut, events as Docker and podman send them, the
 * multiplexed logs format, inspect answers, and what the operations refuse
 * before sending anything.  The exchanges with a real engine are
 * tests/integration/2100-engine.t.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine.h"
#include "loop.h"
#include "tap.h"

#define ID64	"0d24a1e8a9d8aa9d67d7bea7ba1209b3" \
		"28ef0e1b1e18cd071e3894f31d279c42"

struct sink {
	char	out[8192];	/* what was found, one item a line */
	size_t	len;
	int	stop_after;	/* 0: never */
	int	n;
};

static int
take_obj(json_t *o, void *arg)
{
	struct sink *s = arg;
	char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	s->len += (size_t)snprintf(s->out + s->len, sizeof(s->out) - s->len,
	    "%s\n", text ? text : "?");
	free(text);
	return ++s->n == s->stop_after ? -1 : 0;
}

/* Feeds data in pieces of the sizes given (0 ends), as the engine does. */
static int
objects_cut(const char *data, const size_t *cuts, struct sink *s, char *err,
    size_t errlen)
{
	struct engine_split sp;
	char buf[4096];
	size_t len = 0, off = 0, n, total = strlen(data);
	ssize_t used;

	memset(&sp, 0, sizeof(sp));
	memset(s, 0, sizeof(*s));
	while (off < total) {
		n = *cuts ? *cuts++ : total - off;
		if (n > total - off)
			n = total - off;
		memcpy(buf + len, data + off, n);
		len += n;
		off += n;
		if ((used = engine_objects(&sp, buf, len, take_obj, s, err,
		    errlen)) == -1)
			return -1;
		memmove(buf, buf + used, len - (size_t)used);
		len -= (size_t)used;
	}
	return (int)len;
}

static void
t_objects(void)
{
	static const char *stream = "{\"a\": \"}{\\\"\", \"b\": [1, {\"c\": "
	    "[]}]}\n{\"status\":\"die\"}\r\n  {}{\"x\":\"\\\\\"}\n";
	static const char *want = "{\"a\":\"}{\\\"\",\"b\":[1,{\"c\":[]}]}\n"
	    "{\"status\":\"die\"}\n{}\n{\"x\":\"\\\\\"}\n";
	struct sink whole, s;
	char err[ENGINE_ERR_LEN];
	size_t cuts[3], i, j, bad = 0;

	isint(objects_cut(stream, (size_t[]){ 0 }, &whole, err,
	    sizeof(err)), 0, "a stream of objects, all used");
	is(whole.out, want, "strings with brackets and escapes, newlines "
	    "or none between them");
	for (i = 1; i < strlen(stream); i++)
		for (j = 1; i + j < strlen(stream); j += 7) {
			cuts[0] = i;
			cuts[1] = j;
			cuts[2] = 0;
			if (objects_cut(stream, cuts, &s, err,
			    sizeof(err)) != 0 || strcmp(s.out, want) != 0)
				bad++;
		}
	isint(bad, 0, "the same objects however the bytes are cut");
	isint(objects_cut(stream, (size_t[]){ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0 }, &s, err, sizeof(err)), 0,
	    "byte by byte");
	is(s.out, want, "byte by byte, the same");
}

static void
t_objects_refused(void)
{
	struct engine_split sp;
	char err[ENGINE_ERR_LEN], *big;
	struct sink s;
	ssize_t r;

	memset(&sp, 0, sizeof(sp));
	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	r = engine_objects(&sp, "{\"a\":1} {\"b\":2}", 15, take_obj, &s, err,
	    sizeof(err));
	ok(r == 7 && s.n == 1, "a callback stops it: one object used (%zd)",
	    r);

	ok(objects_cut("[1]", (size_t[]){ 0 }, &s, err, sizeof(err)) == -1 &&
	    strstr(err, "not a JSON object") != NULL, "an array: refused");
	ok(objects_cut("{\"a\":1}x", (size_t[]){ 0 }, &s, err,
	    sizeof(err)) == -1 && s.n == 1, "garbage after an object: refused "
	    "after it");
	ok(objects_cut("{\"a\":]", (size_t[]){ 0 }, &s, err,
	    sizeof(err)) == -1 && strncmp(err, "not JSON", 8) == 0,
	    "unbalanced brackets: jansson says why (%s)", err);
	ok(objects_cut("{\"a\":1,\"a\":2}", (size_t[]){ 0 }, &s, err,
	    sizeof(err)) == -1, "duplicate keys: refused");

	big = malloc(ENGINE_OBJ_MAX + 16);
	memset(big, ' ', ENGINE_OBJ_MAX + 16);
	memcpy(big, "{\"a\":\"", 6);
	memset(&sp, 0, sizeof(sp));
	r = engine_objects(&sp, big, ENGINE_OBJ_MAX + 16, take_obj, &s, err,
	    sizeof(err));
	ok(r == -1 && strstr(err, "over") != NULL,
	    "an object over ENGINE_OBJ_MAX: refused");
	memset(&sp, 0, sizeof(sp));
	r = engine_objects(&sp, big, ENGINE_OBJ_MAX, take_obj, &s, err,
	    sizeof(err));
	ok(r == 0, "one of ENGINE_OBJ_MAX bytes so far: waits for more");
	free(big);
}

static const struct {
	const char	*json;
	int		 kind;		/* -1: not an event of ours */
	int		 code;
	const char	*health;
	const char	*name;
} events[] = {
	{ "{\"status\":\"die\",\"id\":\"" ID64 "\",\"Type\":\"container\","
	    "\"Action\":\"die\",\"Actor\":{\"ID\":\"" ID64 "\",\"Attributes\":"
	    "{\"containerExitCode\":\"137\",\"exitCode\":\"137\",\"name\":"
	    "\"fn\"}},\"time\":1796166371,\"timeNano\":1796166371319257098}",
	    ENGINE_EV_DIE, 137, "", "fn" },
	{ "{\"Type\":\"container\",\"Action\":\"die\",\"Actor\":{\"ID\":\""
	    ID64 "\",\"Attributes\":{\"exitCode\":\"0\"}}}", ENGINE_EV_DIE, 0,
	    "", "" },
	{ "{\"Type\":\"container\",\"Action\":\"die\",\"Actor\":{\"ID\":\""
	    ID64 "\"}}", ENGINE_EV_DIE, -1, "", "" },
	{ "{\"Action\":\"die\",\"Actor\":{\"ID\":\"" ID64 "\",\"Attributes\":"
	    "{\"exitCode\":\"x1\"}}}", ENGINE_EV_DIE, -1, "", "" },
	{ "{\"status\":\"died\",\"id\":\"" ID64 "\"}", ENGINE_EV_DIE, -1, "",
	    "" },
	{ "{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":{\"ID\":\""
	    ID64 "\",\"Attributes\":{\"name\":\"web\"}}}", ENGINE_EV_START, -1,
	    "", "web" },
	{ "{\"Type\":\"container\",\"Action\":\"create\",\"Actor\":{\"ID\":\""
	    ID64 "\",\"Attributes\":{\"name\":\"web\"}}}", ENGINE_EV_CREATE,
	    -1, "", "web" },
	{ "{\"Type\":\"container\",\"Action\":\"health_status: healthy\","
	    "\"Actor\":{\"ID\":\"" ID64 "\"}}", ENGINE_EV_HEALTH, -1,
	    "healthy", "" },
	{ "{\"Type\":\"container\",\"Action\":\"health_status\",\"Actor\":{"
	    "\"ID\":\"" ID64 "\"},\"HealthStatus\":\"unhealthy\"}",
	    ENGINE_EV_HEALTH, -1, "unhealthy", "" },
	{ "{\"Type\":\"container\",\"Action\":\"health_statusx\",\"Actor\":{"
	    "\"ID\":\"" ID64 "\"}}", -1, -1, "", "" },
	{ "{\"Type\":\"image\",\"Action\":\"start\",\"Actor\":{\"ID\":\""
	    ID64 "\"}}", -1, -1, "", "" },
	{ "{\"Type\":\"container\",\"Action\":\"kill\",\"Actor\":{\"ID\":\""
	    ID64 "\"}}", -1, -1, "", "" },
	{ "{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":{\"ID\":"
	    "\"../../etc\"}}", -1, -1, "", "" },
	{ "{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":{\"ID\":"
	    "\"0D24A1E8A9D8\"}}", -1, -1, "", "" },
	{ "{\"Type\":\"container\",\"Action\":7,\"Actor\":{\"ID\":\"" ID64
	    "\"}}", -1, -1, "", "" },
	{ "{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":\"x\"}", -1,
	    -1, "", "" },
};

static void
t_events(void)
{
	struct engine_event ev;
	size_t i, bad = 0;
	json_t *o;
	int r;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		o = json_loads(events[i].json, 0, NULL);
		r = o != NULL ? engine_event(o, &ev) : -9;
		if (events[i].kind == -1 ? r != 0 : (r != 1 ||
		    (int)ev.kind != events[i].kind ||
		    ev.exit_code != events[i].code ||
		    strcmp(ev.health, events[i].health) != 0 ||
		    strcmp(ev.name, events[i].name) != 0 ||
		    strcmp(ev.id, ID64) != 0)) {
			bad++;
			diag("event %zu: %s", i, events[i].json);
		}
		json_decref(o);
	}
	isint(bad, 0, "events of Docker and of podman, and what is not one");
	o = json_loads(events[0].json, 0, NULL);
	engine_event(o, &ev);
	ok(ev.time_ns == 1796166371319257098LL && ev.attrs != NULL &&
	    json_is_string(json_object_get(ev.attrs, "containerExitCode")),
	    "its time in nanoseconds, its attributes");
	json_decref(o);
}

static int
take_line(int stream, const char *line, size_t len, void *arg)
{
	struct sink *s = arg;

	if (strlen(line) != len)
		return -1;
	s->len += (size_t)snprintf(s->out + s->len, sizeof(s->out) - s->len,
	    "%d:%s\n", stream, line);
	return ++s->n == s->stop_after ? -1 : 0;
}

/* A frame: the header, then the payload. */
static size_t
frame(char *p, int stream, const char *payload, size_t n)
{
	p[0] = (char)stream;
	p[1] = p[2] = p[3] = 0;
	p[4] = (char)(n >> 24);
	p[5] = (char)(n >> 16);
	p[6] = (char)(n >> 8);
	p[7] = (char)n;
	memcpy(p + 8, payload, n);
	return n + 8;
}

/* Decodes data in two pieces cut at cut; -1 as engine_mux_feed. */
static int
mux_cut(const char *data, size_t len, size_t cut, struct sink *s, char *err,
    size_t errlen)
{
	struct engine_mux m;

	memset(&m, 0, sizeof(m));
	memset(s, 0, sizeof(*s));
	if (engine_mux_feed(&m, data, cut, take_line, s, err, errlen) == -1 ||
	    engine_mux_feed(&m, data + cut, len - cut, take_line, s, err,
	    errlen) == -1)
		return -1;
	return engine_mux_end(&m, take_line, s);
}

static void
t_mux(void)
{
	char data[4096], line[1400], want[2048], err[ENGINE_ERR_LEN];
	size_t n = 0, i, bad = 0;
	struct sink s;
	int r;

	n += frame(data + n, 1, "a\nb", 3);
	n += frame(data + n, 2, "err\r\n", 5);
	n += frame(data + n, 1, "", 0);
	n += frame(data + n, 1, "c\n\n", 3);
	n += frame(data + n, 2, "tail", 4);
	for (i = 0; i <= n; i++)
		if (mux_cut(data, n, i, &s, err, sizeof(err)) != 0 ||
		    strcmp(s.out, "1:a\n2:err\n1:bc\n1:\n2:tail\n") != 0) {
			bad++;
			diag("cut at %zu: %s", i, s.out);
		}
	isint(bad, 0, "lines per stream across frames, \"\\r\" dropped, an "
	    "empty frame, the partial line at the end; cut anywhere");

	memset(line, 'x', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	n = frame(data, 1, line, sizeof(line));
	n += frame(data + n, 1, line, ENGINE_LINE_MAX);
	n += frame(data + n, 1, "\n", 1);
	snprintf(want, sizeof(want), "1:%.*s\n1:%.*s\n1:%.*s\n1:%.*s\n",
	    ENGINE_LINE_MAX, line, ENGINE_LINE_MAX, line,
	    (int)sizeof(line) - 1 - 2 * ENGINE_LINE_MAX, line,
	    ENGINE_LINE_MAX, line);
	for (i = 0, bad = 0; i <= n; i++)
		if (mux_cut(data, n, i, &s, err, sizeof(err)) != 0 ||
		    strcmp(s.out, want) != 0)
			bad++;
	isint(bad, 0, "a long line in pieces of ENGINE_LINE_MAX, and one of "
	    "exactly that size; cut anywhere");

	n = frame(data, 1, "ok\n", 3);
	n += frame(data + n, 3, "no such container", 17);
	n += frame(data + n, 1, "later\n", 6);
	r = mux_cut(data, n, 5, &s, err, sizeof(err));
	ok(r == -1 && strcmp(err, "no such container") == 0 &&
	    strcmp(s.out, "1:ok\n") == 0, "stream 3, the engine's error, "
	    "ends it with its text");
	r = mux_cut("{\"message\":\"x\"}", 15, 3, &s, err, sizeof(err));
	ok(r == -1 && strstr(err, "not a multiplexed stream") != NULL,
	    "raw bytes (a TTY): refused (%s)", err);
	n = frame(data, 1, "a\nb\nc\n", 6);
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	{
		struct engine_mux m;

		memset(&m, 0, sizeof(m));
		r = engine_mux_feed(&m, data, n, take_line, &s, err,
		    sizeof(err));
	}
	ok(r == -1 && err[0] == '\0' && s.n == 2,
	    "a callback stops it: -1 without a reason");
}

static void
t_state(void)
{
	static const char *inspect = "{\"Id\":\"" ID64 "\",\"State\":{"
	    "\"Status\":\"running\",\"Running\":true,\"ExitCode\":0,\"Pid\":"
	    "2010,\"Health\":{\"Status\":\"healthy\"}},\"NetworkSettings\":{"
	    "\"Ports\":{\"8080/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":"
	    "\"18089\"}],\"9090/tcp\":null}}}";
	struct engine_state st;
	char err[ENGINE_ERR_LEN];
	json_t *o, *bad;

	o = json_loads(inspect, 0, NULL);
	ok(engine_state(o, 8080, &st, err, sizeof(err)) == 0 &&
	    strcmp(st.id, ID64) == 0 && strcmp(st.status, "running") == 0 &&
	    st.running && st.exit_code == 0 && st.pid == 2010 &&
	    strcmp(st.health, "healthy") == 0 &&
	    strcmp(st.host_ip, "127.0.0.1") == 0 && st.host_port == 18089,
	    "an inspection: state, health, where 8080 is published");
	ok(engine_state(o, 9090, &st, err, sizeof(err)) == 0 &&
	    st.host_ip[0] == '\0' && st.host_port == 0,
	    "a port not published: none");
	json_decref(o);
	bad = json_loads("{\"Id\":\"" ID64 "\",\"State\":{\"Status\":1}}", 0,
	    NULL);
	ok(engine_state(bad, 0, &st, err, sizeof(err)) == -1,
	    "no state: refused (%s)", err);
	json_decref(bad);
	bad = json_loads("{\"Id\":\"xyz\"}", 0, NULL);
	ok(engine_id(bad) == NULL, "an Id that is not one: NULL");
	json_decref(bad);
}

static void
never(void *arg, int status, json_t *body, const char *err)
{
	(void)status;
	(void)body;
	(void)err;
	*(int *)arg = 1;
}

static void
t_open(void)
{
	static const char *bad_urls[] = { "unix://relative.sock",
	    "tcp://127.0.0.1", "tcp://host:", "http://127.0.0.1:2375",
	    "tcp://a b:1", "unix:///" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxx.sock" };
	struct engine_conf conf;
	char err[ENGINE_ERR_LEN];
	struct engine *e;
	struct loop *l;
	size_t i, bad = 0;

	memset(&conf, 0, sizeof(conf));
	l = loop_new();
	for (i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++) {
		conf.url = bad_urls[i];
		if ((e = engine_open(l, &conf, err, sizeof(err))) != NULL) {
			diag("accepted %s", bad_urls[i]);
			bad++;
			engine_close(e);
		}
	}
	isint(bad, 0, "engine URLs that are not one: refused");
	conf.url = "tcp://[::1]:2376";
	e = engine_open(l, &conf, err, sizeof(err));
	ok(e != NULL, "tcp://[::1]:2376 taken");
	engine_close(e);
	loop_free(l);
}

/* Volumes: names and binds the engine could misread are refused. */
static void
t_volumes_refused(struct engine *e, struct engine_spec *spec)
{
	static const char *const bad_binds[] = {
		"-v:/d", "a b:/d", "v:d", "/h:/d:r0", "v", ":/d",
	};
	static const char *const good_binds[] = {
		"hk_0123_app_svc_data:/var/lib/pg", "/srv/hk:/d:ro", "v.1-x:/d",
	};
	const char *labels[] = { "hk.volume=data", NULL }, *bad[] = { "x",
	    NULL }, *binds[2] = { NULL, NULL };
	int called = 0;
	size_t i;

	errno = 0;
	ok(engine_volume_create(e, "../x", labels, 1, 1, never, &called) ==
	    NULL && errno == EINVAL, "a volume name with a slash: EINVAL");
	ok(engine_volume_create(e, "v", bad, 1, 1, never, &called) == NULL,
	    "a volume label without '=': refused");
	ok(engine_volume_create(e, "v", labels, -2, 1, never, &called) ==
	    NULL, "a volume owner below -1: refused");
	ok(engine_volume_create(e, "v", labels, -1, 1, never, &called) ==
	    NULL, "a volume owner of uid -1 (none) and a gid: refused");
	engine_cancel(engine_volume_create(e, "v", labels, -1, -1, never,
	    &called));
	ok(engine_volume_remove(e, "a/b", never, &called) == NULL,
	    "removing a volume name with a slash: refused");
	ok(engine_volume_users(e, "a\"b", never, &called) == NULL,
	    "the users of a volume name with a quote: refused");
	ok(engine_volume_list(e, bad, never, &called) == NULL,
	    "a volume list filter without '=': refused");
	engine_cancel(engine_volume_create(e, "v", labels, 65534, 65534,
	    never, &called));
	engine_cancel(engine_volume_list(e, labels, never, &called));
	engine_cancel(engine_volume_users(e, "v", never, &called));
	engine_cancel(engine_volume_remove(e, "v", never, &called));
	spec->binds = binds;
	for (i = 0; i < sizeof(bad_binds) / sizeof(bad_binds[0]); i++) {
		binds[0] = bad_binds[i];
		ok(engine_create(e, spec, never, &called) == NULL,
		    "bind %s: refused", bad_binds[i]);
	}
	for (i = 0; i < sizeof(good_binds) / sizeof(good_binds[0]); i++) {
		binds[0] = good_binds[i];
		engine_cancel(engine_create(e, spec, never, &called));
	}
	spec->binds = NULL;
	ok(!called, "(none of them was called back)");
}

/* engine_archive_put: an ID, a directory and a size it can send. */
static void
t_archive_refused(struct engine *e)
{
	static const char tar[1024];
	int called = 0;

	errno = 0;
	ok(engine_archive_put(e, "../x", "/", tar, sizeof(tar), never,
	    &called) == NULL && errno == EINVAL, "archive: a bad ID: EINVAL");
	ok(engine_archive_put(e, "abc", "app", tar, sizeof(tar), never,
	    &called) == NULL, "archive: a relative directory: refused");
	ok(engine_archive_put(e, "abc", "/a/../etc", tar, sizeof(tar), never,
	    &called) == NULL, "archive: a directory with \"..\": refused");
	ok(engine_archive_put(e, "abc", "/a b", tar, sizeof(tar), never,
	    &called) == NULL, "archive: a directory with a space: refused");
	ok(engine_archive_put(e, "abc", "/", tar, 0, never, &called) == NULL,
	    "archive: nothing to send: refused");
	ok(engine_archive_put(e, "abc", "/", tar, ENGINE_ARCHIVE_MAX + 1,
	    never, &called) == NULL, "archive: over ENGINE_ARCHIVE_MAX: "
	    "refused");
	engine_cancel(engine_archive_put(e, ID64, "/", tar, sizeof(tar),
	    never, &called));
	ok(!called, "archive: one cancelled at once: never called back");
}

static void
t_refused(void)
{
	const char *labels[] = { "novalue", NULL }, *ok_labels[] = { "a=b",
	    NULL };
	struct engine_conf conf = { .url = "unix:///run/none.sock" };
	struct engine_spec spec = { .image = "localhost/x:1" };
	char err[ENGINE_ERR_LEN];
	struct engine *e;
	struct loop *l;
	int called = 0;

	l = loop_new();
	e = engine_open(l, &conf, err, sizeof(err));
	ok(e != NULL && strcmp(engine_url(e), conf.url) == 0,
	    "unix:///run/none.sock taken, connecting to nothing yet");

	errno = 0;
	ok(engine_start(e, "../etc", never, &called) == NULL &&
	    errno == EINVAL, "an ID with a slash: EINVAL");
	ok(engine_kill(e, "abc", "TERM;x", never, &called) == NULL,
	    "a signal that is not a name: refused");
	ok(engine_image_pull(e, "a b", NULL, never, &called) == NULL,
	    "an image name with a space: refused");
	ok(engine_list(e, labels, never, &called) == NULL,
	    "a label filter without '=': refused");
	spec.port = 70000;
	ok(engine_create(e, &spec, never, &called) == NULL,
	    "a port over 65535: refused");
	spec.port = 0;
	spec.host_ip = "127.0.0.1";
	ok(engine_create(e, &spec, never, &called) == NULL,
	    "publishing without a port: refused");
	spec.host_ip = NULL;
	spec.labels = labels;
	ok(engine_create(e, &spec, never, &called) == NULL,
	    "a label without '=': refused");
	ok(engine_events_open(e, labels, NULL, NULL) == NULL,
	    "an events filter without '=': refused");
	spec.labels = ok_labels;
	engine_cancel(engine_create(e, &spec, never, &called));
	ok(!called, "a call cancelled at once: never called back");
	t_volumes_refused(e, &spec);
	ok(!called, "volume calls refused or cancelled: never called back");
	t_archive_refused(e);
	ok(!called, "archive puts refused or cancelled: never called back");
	engine_close(e);
	loop_free(l);
}

/* The time of a timed line: Docker's nanoseconds, podman's seconds. */
static void
t_log_time(void)
{
	static const struct {
		const char	*line;
		size_t		 len;		/* 0: none */
		long long	 ms;
	} cases[] = {
		{ "2026-12-07T08:13:21.123456789Z out1", 31, 1796631201123 },
		{ "2026-12-07T08:13:21Z out1", 21, 1796631201000 },
		{ "2026-12-07T08:13:21.5Z ", 23, 1796631201500 },
		{ "2026-12-07T08:13:21Z", 0, 0 },		/* no space */
		{ "2026-12-07T08:13:21+01:00 x", 0, 0 },	/* not UTC */
		{ "2026-12-07 08:13:21Z x", 0, 0 },
		{ "2026-12-07T08:13:21.12x4Z x", 0, 0 },
		{ "a piece of a long line", 0, 0 },
		{ "", 0, 0 },
	};
	size_t i, r;
	int64_t ms;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ms = -1;
		r = engine_log_time(cases[i].line, strlen(cases[i].line), &ms);
		isint((long long)r, (long long)cases[i].len,
		    "engine_log_time: \"%s\": its length", cases[i].line);
		if (cases[i].len > 0)
			isint((long long)ms, cases[i].ms,
			    "engine_log_time: \"%s\": its time",
			    cases[i].line);
	}
	/* within the bytes given, not up to a NUL */
	isint((long long)engine_log_time("2026-12-07T08:13:21Z out", 20, &ms),
	    0LL, "engine_log_time: a time cut before its space is none");
}

int
main(void)
{
	t_objects();
	t_objects_refused();
	t_events();
	t_mux();
	t_log_time();
	t_state();
	t_open();
	t_refused();
	return done();
}
