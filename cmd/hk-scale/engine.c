/*
 * engine.c - the engine client's transport (see engine.h): libcurl's multi
 * interface on lib/loop, one easy handle per call.
 *
 * libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and
 * when to call it back (CURLMOPT_TIMERFUNCTION); both become the loop's fd
 * callbacks and one loop timer, which call curl_multi_socket_action().
 * Inside libcurl's callbacks we only keep bytes; engine_run() then moves
 * every call on, outside libcurl (engine_impl.h).
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "engine_impl.h"
#include "loop.h"

static int	parse_url(struct engine *, const char *, int, char *, size_t);
static int	on_socket(CURL *, curl_socket_t, int, void *, void *);
static int	on_timer(CURLM *, long, void *);
static void	fd_ready(struct loop *, int, int, void *);
static void	timer_fired(struct loop *, void *);
static void	engine_run(struct engine *);
static void	call_step(struct engine_call *);
static void	call_finish(struct engine_call *);
static void	call_detach(struct engine_call *);
static void	sweep(struct engine *);
static size_t	on_write(char *, size_t, size_t, void *);
static size_t	on_header(char *, size_t, size_t, void *);
static void	transport_reason(struct engine_call *, char *, size_t);
static void	status_reason(struct engine_call *, char *, size_t);
static int	is_2xx(long);
static int	setup_easy(struct engine_call *, const char *, const char *);

static int
is_2xx(long status)
{
	return status >= 200 && status <= 299;
}

/* Copies a reason, bounded, with control characters shown as '?'. */
void
engine_reason(char *dst, size_t size, const char *src)
{
	size_t i;

	if (size == 0)
		return;
	for (i = 0; i + 1 < size && src[i] != '\0'; i++)
		dst[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ?
		    '?' : src[i];
	dst[i] = '\0';
}

static int
parse_url(struct engine *e, const char *url, int tls, char *err,
    size_t errlen)
{
	const char *p;
	size_t n;

	if (strlcpy(e->url, url, sizeof(e->url)) >= sizeof(e->url)) {
		snprintf(err, errlen, "engine URL over %zu bytes",
		    sizeof(e->url) - 1);
		return -1;
	}
	if (strncmp(url, "unix://", 7) == 0) {
		p = url + 7;
		if (*p != '/' || strlcpy(e->sock, p, sizeof(e->sock)) >=
		    sizeof(e->sock)) {
			snprintf(err, errlen, "%s: not an absolute socket path "
			    "of at most %zu bytes", url, sizeof(e->sock) - 1);
			return -1;
		}
		snprintf(e->base, sizeof(e->base), "http://localhost/%s",
		    ENGINE_API);
		return 0;
	}
	if (strncmp(url, "tcp://", 6) == 0) {
		p = url + 6;
		n = strspn(p, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]");
		if (n == 0 || p[n] != '\0' || strrchr(p, ':') == NULL ||
		    strrchr(p, ':')[1] == '\0' || strrchr(p, ':')[1] == ']') {
			snprintf(err, errlen, "%s: not tcp://host:port", url);
			return -1;
		}
		snprintf(e->base, sizeof(e->base), "%s://%s/%s",
		    tls ? "https" : "http", p, ENGINE_API);
		return 0;
	}
	snprintf(err, errlen, "%s: not an engine URL (unix:///path or "
	    "tcp://host:port)", url);
	return -1;
}

/* Another API (engine_conf.api): its https URL is the base as it is. */
static int
api_open(struct engine *e, const struct engine_conf *conf, char *err,
    size_t errlen)
{
	if (strncmp(conf->url, "https://", 8) != 0 ||
	    strlcpy(e->url, conf->url, sizeof(e->url)) >= sizeof(e->url) ||
	    strlcpy(e->base, conf->url, sizeof(e->base)) >= sizeof(e->base)) {
		snprintf(err, errlen, "%.128s: not an https:// URL of at most "
		    "%zu bytes", conf->url, sizeof(e->url) - 1);
		return -1;
	}
	if ((conf->ca_pem && (e->ca_pem = strdup(conf->ca_pem)) == NULL) ||
	    (conf->cert_pem && (e->cert_pem = strdup(conf->cert_pem)) ==
	    NULL) ||
	    (conf->key_pem && (e->key_pem = strdup(conf->key_pem)) == NULL) ||
	    (conf->bearer && asprintf(&e->auth, "Authorization: Bearer %s",
	    conf->bearer) == -1)) {
		e->auth = NULL;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static void
secret_free(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

struct engine *
engine_open(struct loop *l, const struct engine_conf *conf, char *err,
    size_t errlen)
{
	static int inited;
	struct engine *e;
	int tls;

	if (!inited && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "unable to initialize libcurl");
		return NULL;
	}
	inited = 1;
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	e->loop = l;
	TAILQ_INIT(&e->calls);
	TAILQ_INIT(&e->streams);
	loop_timer_init(&e->timer, timer_fired, e);
	e->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms :
	    ENGINE_TIMEOUT_MS;
	tls = conf->tls_cert != NULL || conf->tls_key != NULL ||
	    conf->tls_ca != NULL;
	if (conf->url == NULL || (conf->api ? api_open(e, conf, err,
	    errlen) : parse_url(e, conf->url, tls, err, errlen)) == -1) {
		if (conf->url == NULL)
			snprintf(err, errlen, "no engine URL");
		engine_close(e);
		return NULL;
	}
	if ((conf->tls_cert && (e->cert = strdup(conf->tls_cert)) == NULL) ||
	    (conf->tls_key && (e->key = strdup(conf->tls_key)) == NULL) ||
	    (conf->tls_ca && (e->ca = strdup(conf->tls_ca)) == NULL) ||
	    (e->multi = curl_multi_init()) == NULL) {
		snprintf(err, errlen, "out of memory");
		engine_close(e);
		return NULL;
	}
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	return e;
}

void
engine_close(struct engine *e)
{
	struct engine_call *c;

	if (e == NULL)
		return;
	engine_streams_close(e);
	while ((c = TAILQ_FIRST(&e->calls)) != NULL) {
		call_detach(c);
		TAILQ_REMOVE(&e->calls, c, entry);
		engine_call_free(c);
	}
	loop_timer_cancel(e->loop, &e->timer);
	if (e->multi != NULL)
		curl_multi_cleanup(e->multi);
	free(e->cert);
	free(e->key);
	free(e->ca);
	free(e->ca_pem);
	free(e->cert_pem);
	secret_free(e->key_pem);
	secret_free(e->auth);
	free(e);
}

const char *
engine_url(const struct engine *e)
{
	return e->url;
}

/* libcurl: watch s for what, or no more. */
static int
on_socket(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct engine *e = arg;
	int mask = 0;

	(void)easy;
	(void)sockp;
	if (what == CURL_POLL_REMOVE) {
		loop_del_fd(e->loop, s);
		return 0;
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		mask |= LOOP_READ;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		mask |= LOOP_WRITE;
	return loop_add_fd(e->loop, s, mask, fd_ready, e) == -1 ? -1 : 0;
}

/* libcurl: call back in ms milliseconds; -1: not at all. */
static int
on_timer(CURLM *multi, long ms, void *arg)
{
	struct engine *e = arg;

	(void)multi;
	if (ms < 0) {
		loop_timer_cancel(e->loop, &e->timer);
		return 0;
	}
	return loop_timer_at(e->loop, &e->timer, loop_now_ms(e->loop) + ms);
}

static void
fd_ready(struct loop *l, int fd, int mask, void *arg)
{
	struct engine *e = arg;
	int running, ev = 0;

	(void)l;
	if (mask & LOOP_READ)
		ev |= CURL_CSELECT_IN;
	if (mask & LOOP_WRITE)
		ev |= CURL_CSELECT_OUT;
	curl_multi_socket_action(e->multi, fd, ev, &running);
	engine_run(e);
}

static void
timer_fired(struct loop *l, void *arg)
{
	struct engine *e = arg;
	int running;

	(void)l;
	curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	engine_run(e);
}

/*
 * After libcurl has run: note the transfers that ended, then move every
 * call on (its callbacks may start and cancel calls), then free the dead.
 */
static void
engine_run(struct engine *e)
{
	struct engine_call *c;
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(e->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		c = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
		    (char **)&c);
		if (c == NULL)
			continue;
		c->res = m->data.result;
		call_detach(c);
		c->ended = 1;
	}
	e->busy++;
	TAILQ_FOREACH(c, &e->calls, entry)
		if (!c->dead)
			call_step(c);
	e->busy--;
	sweep(e);
}

static void
sweep(struct engine *e)
{
	struct engine_call *c, *next;

	if (e->busy)
		return;
	for (c = TAILQ_FIRST(&e->calls); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->dead) {
			TAILQ_REMOVE(&e->calls, c, entry);
			engine_call_free(c);
		}
	}
}

/* Takes the call's handle off the multi handle (not from its callbacks). */
static void
call_detach(struct engine_call *c)
{
	if (c->easy != NULL && !c->ended) {
		curl_multi_remove_handle(c->e->multi, c->easy);
		c->ended = 1;
	}
}

static void
call_step(struct engine_call *c)
{
	size_t before;

	if (!c->head || !is_2xx(c->status) || c->feedfn == NULL) {
		if (c->ended)
			call_finish(c);
		return;
	}
	if (!c->headtold) {
		c->headtold = 1;
		if (c->headfn != NULL)
			c->headfn(c);
	}
	while (!c->dead && c->len > 0) {
		before = c->len;
		if (c->feedfn(c) == -1 || (c->paused && c->len == before)) {
			if (c->err[0] == '\0')	/* a write over the bound */
				snprintf(c->err, sizeof(c->err), "%s: "
				    "answer over %zu bytes", c->e->url,
				    c->max);
			call_detach(c);
			break;
		}
		if (c->dead || !c->paused)
			break;
		c->paused = 0;		/* may write at once: feed again */
		curl_easy_pause(c->easy, CURLPAUSE_CONT);
	}
	if (!c->dead && c->ended)
		call_finish(c);
}

/* The exchange is over: its kind's end, once, with the reason if any. */
static void
call_finish(struct engine_call *c)
{
	char reason[ENGINE_ERR_LEN];
	const char *err = NULL;

	if (c->err[0] != '\0')
		err = c->err;
	else if (c->res != CURLE_OK) {
		transport_reason(c, reason, sizeof(reason));
		err = reason;
	} else if (!is_2xx(c->status) && !(c->status == 304 && c->ok304)) {
		status_reason(c, reason, sizeof(reason));
		err = reason;
	}
	c->dead = 1;
	c->endfn(c, (int)c->status, err);	/* 0 until a head came */
}

static void
transport_reason(struct engine_call *c, char *buf, size_t size)
{
	const char *url = c->e->url;
	curl_off_t us = 0;
	long oserr = 0;

	switch (c->res) {
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &oserr);
		snprintf(buf, size, "unable to connect to %s: %s", url,
		    oserr ? strerror((int)oserr) : "refused");
		break;
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		snprintf(buf, size, "%s closed the connection %s", url,
		    c->head ? "before the end of its answer" :
		    "without an answer");
		break;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(c->easy, CURLINFO_TOTAL_TIME_T, &us);
		snprintf(buf, size, "no answer from %s within %lld ms", url,
		    (long long)us / 1000);
		break;
	default:
		snprintf(buf, size, "%s: %s%s%.96s", url,
		    curl_easy_strerror(c->res), c->curlerr[0] ? ": " : "",
		    c->curlerr);
		break;
	}
	engine_reason(buf, size, buf);
}

/* A non-2xx answer: the engine's "message", else the status. */
static void
status_reason(struct engine_call *c, char *buf, size_t size)
{
	json_t *body, *msg;

	body = json_loadb(c->buf ? c->buf : "", c->len, 0, NULL);
	msg = json_is_object(body) ? json_object_get(body, "message") : NULL;
	if (json_is_string(msg) && json_string_length(msg) > 0)
		engine_reason(buf, size, json_string_value(msg));
	else
		snprintf(buf, size, "%s: HTTP status %ld", c->e->url,
		    c->status);
	json_decref(body);
}

/* libcurl: answer bytes, kept until engine_run() uses them (bounded). */
static size_t
on_write(char *p, size_t size, size_t n, void *arg)
{
	struct engine_call *c = arg;
	size_t cap;
	char *buf;

	n *= size;
	if (n > c->max - c->len) {
		if (c->feedfn != NULL && is_2xx(c->status) && c->len > 0) {
			c->paused = 1;
			return CURL_WRITEFUNC_PAUSE;
		}
		snprintf(c->err, sizeof(c->err), "%s: answer over %zu bytes",
		    c->e->url, c->max);
		return 0;
	}
	if (c->len + n > c->cap) {
		cap = c->cap ? c->cap : 4096;
		while (cap < c->len + n)
			cap *= 2;
		if (cap > c->max)
			cap = c->max;
		if ((buf = realloc(c->buf, cap)) == NULL) {
			snprintf(c->err, sizeof(c->err), "out of memory");
			return 0;
		}
		c->buf = buf;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
	return n;
}

/* libcurl: a line of the head; the blank one ends it (1xx heads aside). */
static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct engine_call *c = arg;
	long status = 0;

	n *= size;
	if ((n == 2 && p[0] == '\r' && p[1] == '\n') ||
	    (n == 1 && p[0] == '\n')) {
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200) {
			c->status = status;
			c->head = 1;
		}
	}
	return n;
}

/* A PEM text given to libcurl (which copies it), if there is one. */
static int
pem_blob(CURL *h, CURLoption opt, char *pem)
{
	struct curl_blob b;

	if (pem == NULL)
		return 0;
	b.data = pem;
	b.len = strlen(pem);
	b.flags = CURL_BLOB_COPY;
	return curl_easy_setopt(h, opt, &b) != CURLE_OK;
}

static int
setup_easy(struct engine_call *c, const char *method, const char *url)
{
	struct engine *e = c->e;
	CURL *h = c->easy;
	int bad = 0;

	bad |= curl_easy_setopt(h, CURLOPT_URL, url);
	bad |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	bad |= curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)c);
	bad |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	bad |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curlerr);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	bad |= curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	bad |= curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	bad |= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)ENGINE_CONNECT_MS);
	bad |= curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	bad |= curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
	if (e->sock[0] != '\0')
		bad |= curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->sock);
	else
		bad |= curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (e->cert != NULL)
		bad |= curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert);
	if (e->key != NULL)
		bad |= curl_easy_setopt(h, CURLOPT_SSLKEY, e->key);
	if (e->ca != NULL)
		bad |= curl_easy_setopt(h, CURLOPT_CAINFO, e->ca);
	bad |= pem_blob(h, CURLOPT_CAINFO_BLOB, e->ca_pem);
	bad |= pem_blob(h, CURLOPT_SSLCERT_BLOB, e->cert_pem);
	bad |= pem_blob(h, CURLOPT_SSLKEY_BLOB, e->key_pem);
	if (strcmp(method, "POST") == 0 || c->post != NULL) {
		bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDS,
		    c->post != NULL ? c->post : "");
		bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE,
		    c->post != NULL ? (long)strlen(c->post) : 0L);
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
		bad |= curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	return bad ? -1 : 0;
}

/*
 * A call of method on path (under /v1.41, already escaped) with body as
 * JSON (or NULL), made but not started: the operation sets its kind.
 * NULL with errno.
 */
struct engine_call *
engine_call_new(struct engine *e, const char *method, const char *path,
    json_t *body)
{
	struct engine_call *c;
	struct curl_slist *h;
	char *url = NULL;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->e = e;
	c->max = ENGINE_BODY_MAX;
	c->endfn = engine_call_json_end;
	if ((h = curl_slist_append(NULL, "Expect:")) == NULL)
		goto fail;
	c->hdrs = h;
	if (body != NULL && ((c->post = json_dumps(body, JSON_COMPACT)) ==
	    NULL || (h = curl_slist_append(c->hdrs,
	    "Content-Type: application/json")) == NULL))
		goto fail;
	c->hdrs = h;
	if (e->auth != NULL &&
	    (h = curl_slist_append(c->hdrs, e->auth)) == NULL)
		goto fail;
	c->hdrs = h;
	if (asprintf(&url, "%s%s", e->base, path) == -1) {
		url = NULL;
		goto fail;
	}
	if ((c->easy = curl_easy_init()) == NULL ||
	    setup_easy(c, method, url) == -1)
		goto fail;
	free(url);
	return c;
fail:
	free(url);
	engine_call_free(c);
	errno = ENOMEM;
	return NULL;
}

/* Starts a call made by engine_call_new(): 0, or -1 with errno (c freed). */
int
engine_call_start(struct engine_call *c)
{
	if (curl_multi_add_handle(c->e->multi, c->easy) != CURLM_OK) {
		engine_call_free(c);
		errno = ENOMEM;
		return -1;
	}
	TAILQ_INSERT_TAIL(&c->e->calls, c, entry);
	return 0;
}

void
engine_call_free(struct engine_call *c)
{
	struct curl_slist *h;

	if (c == NULL)
		return;
	if (c->easy != NULL)
		curl_easy_cleanup(c->easy);
	/* a pull's X-Registry-Auth holds a password: not left in the heap */
	for (h = c->hdrs; h != NULL; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
	curl_slist_free_all(c->hdrs);
	free(c->post);
	free(c->buf);
	if (c->ctxfree != NULL)
		c->ctxfree(c->ctx);
	free(c);
}

void
engine_cancel(struct engine_call *c)
{
	struct engine *e;

	if (c == NULL || c->dead)
		return;
	e = c->e;
	c->dead = 1;
	call_detach(c);
	sweep(e);
}

/* An ordinary call's end: its answer as JSON to the caller's callback. */
void
engine_call_json_end(struct engine_call *c, int status, const char *err)
{
	char reason[ENGINE_ERR_LEN];
	json_error_t jerr;
	json_t *body = NULL;

	if (err == NULL && c->len > 0 && (body = json_loadb(c->buf, c->len,
	    JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		snprintf(reason, sizeof(reason),
		    "%s: answer is not JSON: %.96s", c->e->url, jerr.text);
		engine_reason(reason, sizeof(reason), reason);
		err = reason;
	}
	c->fn(c->arg, status, body, err);
	json_decref(body);
}
