/*
 * engine_stream.c - the engine's long-lived answers (see engine.h): the
 * events stream, which reconnects, and a container's logs; and their
 * parsers, pure functions over bytes: whole JSON objects out of a stream
 * however it is cut, an event out of an object, lines out of the
 * multiplexed stream format.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "engine_impl.h"

struct engine_events {
	TAILQ_ENTRY(engine_events) entry;
	struct engine		*e;
	char			*path;
	struct engine_call	*call;		/* connected or connecting */
	struct engine_split	 split;
	struct loop_timer	 retry;
	int64_t			 backoff;	/* the next delay, ms */
	int64_t			 up_at;		/* when it came up, or 0 */
	engine_event_fn		*fn;		/* NULL once closed */
	void			*arg;
};

struct logs {
	struct engine_mux	 mux;
	engine_line_fn		*line;
	struct engine_call	*c;
};

static int	is_space(int);
static const char *str(const json_t *, const char *);
static int	emit(struct engine_mux *, int, engine_line_fn *, void *);
static int	mux_payload(struct engine_mux *, const char *, size_t,
		    engine_line_fn *, void *);
static int	ev_connect(struct engine_events *);
static void	ev_retry(struct loop *, void *);
static void	ev_head(struct engine_call *);
static int	ev_feed(struct engine_call *);
static int	ev_obj(json_t *, void *);
static void	ev_end(struct engine_call *, int, const char *);
static void	ev_down(struct engine_events *, const char *);
static void	ev_free(void *);
static int	logs_feed(struct engine_call *);
static int	logs_line(int, const char *, size_t, void *);
static int	logs_rest(int, const char *, size_t, void *);
static void	logs_end(struct engine_call *, int, const char *);

static int
is_space(int ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/*
 * Brackets are counted outside strings, so that an object's end is found
 * without parsing; jansson then parses exactly that object, and whatever
 * the counting let through (a "{]") fails there.
 */
ssize_t
engine_objects(struct engine_split *s, const char *buf, size_t len,
    engine_obj_fn *fn, void *arg, char *err, size_t errlen)
{
	json_error_t jerr;
	size_t i, used = 0;
	json_t *o;
	int ch, stop = 0;

	for (i = s->pos; i < len && !stop; i++) {
		ch = (unsigned char)buf[i];
		if (s->depth == 0) {
			if (is_space(ch)) {
				used = i + 1;
				continue;
			}
			if (ch != '{') {
				snprintf(err, errlen, "not a JSON object "
				    "(byte 0x%02x)", ch);
				return -1;
			}
			s->start = i;
		}
		if (s->str) {
			if (s->esc)
				s->esc = 0;
			else if (ch == '\\')
				s->esc = 1;
			else if (ch == '"')
				s->str = 0;
		} else if (ch == '"')
			s->str = 1;
		else if (ch == '{' || ch == '[')
			s->depth++;
		else if ((ch == '}' || ch == ']') && --s->depth == 0) {
			o = json_loadb(buf + s->start, i + 1 - s->start,
			    JSON_REJECT_DUPLICATES, &jerr);
			if (o == NULL) {
				snprintf(err, errlen, "not JSON: %s",
				    jerr.text);
				return -1;
			}
			used = i + 1;
			stop = fn(o, arg) != 0;
			json_decref(o);
			continue;
		}
		if (i + 1 - s->start > ENGINE_OBJ_MAX) {
			snprintf(err, errlen, "an object over %d bytes",
			    ENGINE_OBJ_MAX);
			return -1;
		}
	}
	s->pos = i - used;
	s->start = s->depth > 0 ? s->start - used : 0;
	return (ssize_t)used;
}

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/*
 * Docker and podman: Type, Action (podman also "status"), Actor.ID and
 * Actor.Attributes; a die's code is the attribute exitCode; a health
 * event is Docker's Action "health_status: STATUS" or podman's Action
 * "health_status" with HealthStatus beside it.
 */
int
engine_event(const json_t *o, struct engine_event *ev)
{
	const char *type, *action, *id, *v, *errstr;
	const json_t *actor, *attrs;
	long long code;
	json_int_t t;
	size_t n;

	memset(ev, 0, sizeof(*ev));
	ev->exit_code = -1;
	ev->name = ev->health = "";
	type = str(o, "Type");
	if ((action = str(o, "Action")) == NULL)
		action = str(o, "status");
	actor = json_object_get(o, "Actor");
	attrs = json_object_get(actor, "Attributes");
	if ((id = str(actor, "ID")) == NULL)
		id = str(o, "id");
	if ((type != NULL && strcmp(type, "container") != 0) ||
	    action == NULL || id == NULL)
		return 0;
	n = strspn(id, "0123456789abcdef");
	if (id[n] != '\0' || n < 12 || n >= sizeof(ev->id))
		return 0;
	memcpy(ev->id, id, n + 1);
	ev->attrs = json_is_object(attrs) ? attrs : NULL;
	if ((v = str(attrs, "name")) != NULL)
		ev->name = v;
	if (strcmp(action, "start") == 0)
		ev->kind = ENGINE_EV_START;
	else if (strcmp(action, "create") == 0)
		ev->kind = ENGINE_EV_CREATE;
	else if (strcmp(action, "die") == 0 || strcmp(action, "died") == 0) {
		ev->kind = ENGINE_EV_DIE;
		code = (v = str(attrs, "exitCode")) != NULL ?
		    strtonum(v, 0, 65535, &errstr) : -1;
		if (v != NULL && errstr == NULL)
			ev->exit_code = (int)code;
	} else if (strncmp(action, "health_status", 13) == 0 &&
	    (action[13] == '\0' || action[13] == ':')) {
		ev->kind = ENGINE_EV_HEALTH;
		if (action[13] == ':')
			ev->health = action + 14 + strspn(action + 14, " ");
		else if ((v = str(o, "HealthStatus")) != NULL)
			ev->health = v;
	} else
		return 0;
	if ((t = json_integer_value(json_object_get(o, "timeNano"))) > 0)
		ev->time_ns = t;
	else if ((t = json_integer_value(json_object_get(o, "time"))) > 0 &&
	    t < INT64_MAX / 1000000000)
		ev->time_ns = t * 1000000000;
	return 1;
}

/* Gives the line of stream i (0 stdout, 1 stderr) without its "\r". */
static int
emit(struct engine_mux *m, int i, engine_line_fn *fn, void *arg)
{
	size_t n = m->len[i];

	if (n > 0 && m->line[i][n - 1] == '\r')
		n--;
	m->line[i][n] = '\0';
	m->len[i] = 0;
	return fn(i + 1, m->line[i], n, arg);
}

/*
 * A line longer than ENGINE_LINE_MAX goes in pieces; a full piece waits
 * for the next byte, so that a newline right after it ends it rather than
 * making an empty line: the same lines however the bytes are cut.
 */
static int
mux_payload(struct engine_mux *m, const char *p, size_t n,
    engine_line_fn *fn, void *arg)
{
	const char *nl;
	size_t take;
	int i = m->stream == 2 ? 1 : 0;

	while (n > 0) {
		if (m->len[i] == ENGINE_LINE_MAX && *p != '\n' &&
		    emit(m, i, fn, arg) != 0)
			return -1;
		nl = memchr(p, '\n', n);
		take = nl != NULL ? (size_t)(nl - p) : n;
		if (take > ENGINE_LINE_MAX - m->len[i])
			take = ENGINE_LINE_MAX - m->len[i];
		memcpy(m->line[i] + m->len[i], p, take);
		m->len[i] += take;
		p += take;
		n -= take;
		if (n > 0 && *p == '\n') {
			p++;
			n--;
			if (emit(m, i, fn, arg) != 0)
				return -1;
		}
	}
	return 0;
}

/*
 * Frames: [stream, 0, 0, 0, length (big-endian, 4 bytes)] then length
 * bytes; stream 0 is stdin (shown as stdout), 1 stdout, 2 stderr, 3 the
 * engine's own error, which ends the stream.
 */
int
engine_mux_feed(struct engine_mux *m, const char *p, size_t n,
    engine_line_fn *fn, void *arg, char *err, size_t errlen)
{
	size_t take;

	err[0] = '\0';
	while (n > 0) {
		if (m->left == 0) {
			take = sizeof(m->hdr) - m->hlen < n ?
			    sizeof(m->hdr) - m->hlen : n;
			memcpy(m->hdr + m->hlen, p, take);
			m->hlen += take;
			p += take;
			n -= take;
			if (m->hlen < sizeof(m->hdr))
				break;
			m->hlen = 0;
			if (m->hdr[0] > 3 || m->hdr[1] || m->hdr[2] ||
			    m->hdr[3]) {
				snprintf(err, errlen, "not a multiplexed "
				    "stream (a container with a TTY?)");
				return -1;
			}
			m->stream = m->hdr[0];
			m->left = (uint32_t)m->hdr[4] << 24 |
			    (uint32_t)m->hdr[5] << 16 |
			    (uint32_t)m->hdr[6] << 8 | m->hdr[7];
			continue;
		}
		take = m->left < n ? m->left : n;
		if (m->stream == 3) {
			if (take > sizeof(m->err) - 1 - m->errlen)
				take = sizeof(m->err) - 1 - m->errlen;
			memcpy(m->err + m->errlen, p, take);
			m->errlen += take;
			m->err[m->errlen] = '\0';
			if (take == m->left ||
			    m->errlen == sizeof(m->err) - 1) {
				engine_reason(err, errlen, m->err);
				if (err[0] == '\0')
					snprintf(err, errlen, "an error from "
					    "the engine, without a word");
				return -1;
			}
		} else if (mux_payload(m, p, take, fn, arg) == -1)
			return -1;
		m->left -= (uint32_t)take;
		p += take;
		n -= take;
	}
	return 0;
}

int
engine_mux_end(struct engine_mux *m, engine_line_fn *fn, void *arg)
{
	int i;

	for (i = 0; i < 2; i++)
		if (m->len[i] > 0 && emit(m, i, fn, arg) != 0)
			return -1;
	return 0;
}

/*
 * The events stream: one call at a time, another after a backoff when it
 * ends.  Once closed while its call is live, the call owns it (ctxfree)
 * and frees it with itself, after the turn in which a callback closed it.
 */
struct engine_events *
engine_events_open(struct engine *e, const char *const *labels,
    engine_event_fn *fn, void *arg)
{
	struct engine_events *ev;

	if ((ev = calloc(1, sizeof(*ev))) == NULL)
		return NULL;
	if ((ev->path = engine_events_path(labels)) == NULL) {
		free(ev);
		return NULL;
	}
	ev->e = e;
	ev->fn = fn;
	ev->arg = arg;
	ev->backoff = ENGINE_BACKOFF_MIN_MS;
	loop_timer_init(&ev->retry, ev_retry, ev);
	if (ev_connect(ev) == -1) {
		ev_free(ev);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&e->streams, ev, entry);
	return ev;
}

void
engine_events_close(struct engine_events *ev)
{
	struct engine_call *c;

	if (ev == NULL)
		return;
	TAILQ_REMOVE(&ev->e->streams, ev, entry);
	loop_timer_cancel(ev->e->loop, &ev->retry);
	ev->fn = NULL;
	if ((c = ev->call) != NULL && !c->dead) {
		c->ctxfree = ev_free;
		engine_cancel(c);
	} else
		ev_free(ev);
}

void
engine_streams_close(struct engine *e)
{
	while (!TAILQ_EMPTY(&e->streams))
		engine_events_close(TAILQ_FIRST(&e->streams));
}

static void
ev_free(void *arg)
{
	struct engine_events *ev = arg;

	free(ev->path);
	free(ev);
}

/* A new connection: 0, or -1 with errno. */
static int
ev_connect(struct engine_events *ev)
{
	struct engine_call *c;

	memset(&ev->split, 0, sizeof(ev->split));
	ev->up_at = 0;
	if ((c = engine_call_new(ev->e, "GET", ev->path, NULL)) == NULL)
		return -1;
	c->ctx = ev;
	c->max = 2 * ENGINE_OBJ_MAX;
	c->headfn = ev_head;
	c->feedfn = ev_feed;
	c->endfn = ev_end;
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, 0L);
	if (engine_call_start(c) == -1)
		return -1;
	ev->call = c;
	return 0;
}

static void
ev_retry(struct loop *l, void *arg)
{
	struct engine_events *ev = arg;

	(void)l;
	if (ev_connect(ev) == -1)
		ev_down(ev, strerror(errno));
}

static void
ev_head(struct engine_call *c)
{
	struct engine_events *ev = c->ctx;
	struct engine_event up;

	memset(&up, 0, sizeof(up));
	up.kind = ENGINE_EV_UP;
	up.exit_code = -1;
	up.name = up.health = "";
	ev->up_at = loop_now_ms(ev->e->loop);
	ev->fn(&up, ev->arg);
}

static int
ev_feed(struct engine_call *c)
{
	struct engine_events *ev = c->ctx;
	ssize_t n;

	n = engine_objects(&ev->split, c->buf, c->len, ev_obj, c, c->err,
	    sizeof(c->err));
	if (n == -1)
		return -1;
	memmove(c->buf, c->buf + n, c->len - (size_t)n);
	c->len -= (size_t)n;
	return 0;
}

static int
ev_obj(json_t *o, void *arg)
{
	struct engine_call *c = arg;
	struct engine_events *ev = c->ctx;
	struct engine_event x;

	if (engine_event(o, &x))
		ev->fn(&x, ev->arg);
	return c->dead ? -1 : 0;
}

static void
ev_end(struct engine_call *c, int status, const char *err)
{
	struct engine_events *ev = c->ctx;
	char reason[ENGINE_ERR_LEN];

	(void)status;
	if (ev->fn == NULL)
		return;			/* closed: freed with the call */
	ev->call = NULL;
	if (err == NULL) {
		snprintf(reason, sizeof(reason), "%s: the engine ended the "
		    "events stream", ev->e->url);
		err = reason;
	}
	ev_down(ev, err);
}

/* Says why it is down, after arming the retry: fn may close it. */
static void
ev_down(struct engine_events *ev, const char *reason)
{
	struct engine_event down;
	int64_t now = loop_now_ms(ev->e->loop);

	if (ev->up_at > 0 && now - ev->up_at >= ENGINE_BACKOFF_MAX_MS)
		ev->backoff = ENGINE_BACKOFF_MIN_MS;
	loop_timer_at(ev->e->loop, &ev->retry, now + ev->backoff);
	ev->backoff = ev->backoff * 2 < ENGINE_BACKOFF_MAX_MS ?
	    ev->backoff * 2 : ENGINE_BACKOFF_MAX_MS;
	memset(&down, 0, sizeof(down));
	down.kind = ENGINE_EV_DOWN;
	down.reason = reason;
	down.exit_code = -1;
	down.name = down.health = "";
	ev->fn(&down, ev->arg);
}

struct engine_call *
engine_logs(struct engine *e, const char *id, int64_t since,
    engine_line_fn *line, engine_done_fn *fn, void *arg)
{
	return engine_logs_read(e, id, since, ENGINE_LOGS_FOLLOW, line, fn,
	    arg);
}

struct engine_call *
engine_logs_read(struct engine *e, const char *id, int64_t since, int flags,
    engine_line_fn *line, engine_done_fn *fn, void *arg)
{
	struct engine_call *c;
	struct logs *l;
	char *path;

	if ((path = engine_logs_path(id, since, flags)) == NULL)
		return NULL;
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (c = engine_call_new(e, "GET", path, NULL)) == NULL) {
		free(l);
		free(path);
		return NULL;
	}
	free(path);
	l->line = line;
	l->c = c;
	c->ctx = l;
	c->ctxfree = free;
	c->max = 64 * 1024;
	c->feedfn = logs_feed;
	c->endfn = logs_end;
	c->fn = fn;
	c->arg = arg;
	if (flags & ENGINE_LOGS_FOLLOW)	/* else the engine's call timeout */
		curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, 0L);
	return engine_call_start(c) == -1 ? NULL : c;
}

static int
logs_feed(struct engine_call *c)
{
	struct logs *l = c->ctx;
	int r;

	r = engine_mux_feed(&l->mux, c->buf, c->len, logs_line, c, c->err,
	    sizeof(c->err));
	c->len = 0;
	return r == -1 && c->err[0] != '\0' ? -1 : 0;
}

static int
logs_line(int stream, const char *line, size_t len, void *arg)
{
	struct engine_call *c = arg;
	struct logs *l = c->ctx;

	l->line(stream, line, len, c->arg);
	return c->dead ? -1 : 0;
}

/* The partial lines left at the end (the call cannot be cancelled now). */
static int
logs_rest(int stream, const char *line, size_t len, void *arg)
{
	struct engine_call *c = arg;
	struct logs *l = c->ctx;

	l->line(stream, line, len, c->arg);
	return 0;
}

static void
logs_end(struct engine_call *c, int status, const char *err)
{
	struct logs *l = c->ctx;

	if (err == NULL)
		engine_mux_end(&l->mux, logs_rest, c);
	c->fn(c->arg, status, NULL, err);
}

/*
 * The time at the start of a line of engine_logs_read(ENGINE_LOGS_TIMES):
 * "2026-12-07T08:13:21[.123456789]Z " (Docker's nanoseconds, podman's
 * seconds): its length with the space, and *ms; 0 if p does not start
 * so.
 */
size_t
engine_log_time(const char *p, size_t len, int64_t *ms)
{
	char buf[40];
	struct tm tm;
	const char *end;
	size_t n;
	int frac = 0, digits = 0;
	time_t t;

	for (n = 0; n < len && n < sizeof(buf) - 1 && p[n] != ' '; n++)
		buf[n] = p[n];
	if (n == len || p[n] != ' ' || n < 20)
		return 0;
	buf[n] = '\0';
	memset(&tm, 0, sizeof(tm));
	if ((end = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return 0;
	if (*end == '.')
		for (end++; *end >= '0' && *end <= '9'; end++)
			if (digits++ < 3)
				frac = frac * 10 + (*end - '0');
	for (; digits < 3; digits++)
		frac *= 10;
	if (strcmp(end, "Z") != 0 || (t = timegm(&tm)) == (time_t)-1 || t < 0)
		return 0;
	*ms = (int64_t)t * 1000 + frac;
	return n + 1;
}
