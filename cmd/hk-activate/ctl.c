/*
 * ctl.c - the gateway's Unix sockets: activate.sock (status, fence,
 * reload, stop, start; one reply per request) and its two connections to
 * hk-scale's scale.sock: a subscription (ready, down, failed) and one for
 * wakes, whose replies come back in order.  When hk-scale is absent or
 * goes away, both are re-made with a backoff; requests that need a wake
 * meanwhile are answered 503.  activate.sock keeps at most IPC_CONNS_MAX
 * connections: a new one past that closes the one idle the longest, so
 * that the operator always gets in.
 *
 * Reloads (a SIGHUP too) and stop/start are carried out here: route.c
 * reads the store and names the services it no longer serves, and the
 * requests parked for them are answered; a reload the store refused is
 * made again until it succeeds (lib/retry.h).
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "activate.h"
#include "evsink.h"
#include "ipc.h"
#include "log.h"

#define WAKEQ_MAX	1024	/* wakes awaiting hk-scale's reply */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	2000
#define GRACE_RETRY_MS	50	/* hk-scale away: subscription retried often */
/* hk-scale restarting: requests park (scale_grace_seconds). */
#define GRACE_MS	(gw->cfg.scale_grace_seconds * 1000)

/* A peer of activate.sock; the list in order of use. */
struct gctl {
	TAILQ_ENTRY(gctl)	 entry;
	int			 fd;
};

static void	ctl_accept(struct loop *, int, int, void *);
static void	ctl_drop(struct gctl *);
static void	ctl_read(struct loop *, int, int, void *);
static json_t	*ctl_handle(const json_t *);
static json_t	*op_status(const json_t *);
static json_t	*op_fence(const json_t *);
static json_t	*op_desired(const json_t *);
static json_t	*error_reply(const char *);
static void	scale_retry(struct loop *, void *);
static void	scale_lost(const char *);
static void	sub_read(struct loop *, int, int, void *);
static void	sub_message(const json_t *, int *);
static void	wake_read(struct loop *, int, int, void *);
static int	set_nonblock(int);
static void	forget_endpoints(void);
static int	reload_routes(char *, size_t);
static void	reload_later(void);
static int	reload_retry(void *);

static char	msgbuf[IPC_MSG_MAX + 1];
static struct service *wakeq[WAKEQ_MAX];
static size_t	wakeq_head, wakeq_len;

static json_t *
error_reply(const char *why)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", why);
}

int
ctl_listen(char *err, size_t errlen)
{
	char path[CONFIG_URL_MAX + 32];

	snprintf(path, sizeof(path), "%s/activate.sock", gw->cfg.runtime_dir);
	if ((gw->ctl_fd = ipc_listen(path, SOCK_SEQPACKET, err, errlen)) == -1)
		return -1;
	return loop_add_fd(gw->loop, gw->ctl_fd, LOOP_READ, ctl_accept, NULL);
}

static void
ctl_drop(struct gctl *c)
{
	TAILQ_REMOVE(&gw->ctls, c, entry);
	gw->nctls--;
	loop_close_fd(gw->loop, &c->fd);
	free(c);
}

static void
ctl_accept(struct loop *l, int fd, int mask, void *arg)
{
	struct gctl *c;
	int cfd;

	(void)mask;
	(void)arg;
	if ((cfd = ipc_accept(fd, "activate.sock")) == -1)
		return;
	if (gw->nctls >= IPC_CONNS_MAX) {
		log_debug("activate.sock: %d connections: the one idle the "
		    "longest is closed", IPC_CONNS_MAX);
		ctl_drop(TAILQ_FIRST(&gw->ctls));
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    loop_add_fd(l, cfd, LOOP_READ, ctl_read, c) == -1) {
		free(c);
		close(cfd);
		return;
	}
	c->fd = cfd;
	TAILQ_INSERT_TAIL(&gw->ctls, c, entry);
	gw->nctls++;
}

static void
ctl_read(struct loop *l, int fd, int mask, void *arg)
{
	struct gctl *c = arg;
	char err[IPC_ERR_LEN];
	json_t *msg, *reply;
	ssize_t n;

	(void)l;
	(void)mask;
	n = recv(fd, msgbuf, sizeof(msgbuf), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ctl_drop(c);
		return;
	}
	TAILQ_REMOVE(&gw->ctls, c, entry);	/* used last, closed last */
	TAILQ_INSERT_TAIL(&gw->ctls, c, entry);
	if ((msg = ipc_decode(msgbuf, (size_t)n, err, sizeof(err))) == NULL)
		reply = error_reply(err);
	else {
		reply = ctl_handle(msg);
		json_decref(msg);
	}
	if (reply == NULL || ipc_send(fd, reply, err, sizeof(err)) == -1)
		ctl_drop(c);
	json_decref(reply);
}

static json_t *
ctl_handle(const json_t *msg)
{
	const char *op = ipc_op(msg);
	char err[SPEC_ERR_LEN];

	if (op == NULL)
		return error_reply("missing op");
	if (strcmp(op, "status") == 0)
		return op_status(msg);
	if (strcmp(op, "fence") == 0)
		return op_fence(msg);
	if (strcmp(op, "reload") == 0) {
		if (ctl_reload(err, sizeof(err)) == -1)
			return error_reply(err);
		return json_pack("{s:b}", "ok", 1);
	}
	if (strcmp(op, "stop") == 0 || strcmp(op, "start") == 0)
		return op_desired(msg);
	return error_reply("unknown op");
}

/* Every routed service, or the one named by "service". */
static json_t *
op_status(const json_t *msg)
{
	const char *only = json_string_value(json_object_get(msg, "service"));
	struct service *s;
	json_t *list, *o;

	if ((list = json_array()) == NULL)
		return NULL;
	RB_FOREACH(s, svc_tree, &gw->services) {
		if (!s->routed || (only != NULL && strcmp(only, s->id) != 0))
			continue;
		o = json_pack("{s:s, s:s, s:i, s:i, s:o, s:o, s:I}",
		    "service", s->id, "state", park_state_name(s),
		    "active", s->active, "parked", s->nparked,
		    "idle_since", s->active > 0 ? json_null() :
		    json_integer(s->idle_since),
		    "endpoint", s->state == SVC_RUNNING ?
		    json_string(s->endpoint) : json_null(),
		    "revision", (json_int_t)(s->state == SVC_RUNNING ?
		    s->ep_revision : s->revision));
		if (o != NULL && json_object_set_new(o, "waiting_pages",
		    json_integer((json_int_t)s->waiting_pages)) == -1) {
			json_decref(o);
			o = NULL;
		}
		if (o == NULL || json_array_append_new(list, o) == -1) {
			json_decref(list);
			return NULL;
		}
	}
	return json_pack("{s:b, s:o, s:I, s:I, s:I, s:I}", "ok", 1,
	    "services", list, "requests_in_flight", (json_int_t)gw->inflight,
	    "dropped_records", (json_int_t)records_dropped(),
	    "waiting_pages", (json_int_t)gw->waiting_pages,
	    "proxy_refused", (json_int_t)gw->proxy_refused);
}

static json_t *
op_fence(const json_t *msg)
{
	struct service *s;
	json_t *v, *ms;
	const char *id;
	int64_t since;

	id = json_string_value(json_object_get(msg, "service"));
	v = json_object_get(msg, "idle_seconds");
	ms = json_object_get(msg, "idle_ms");	/* optional, finer */
	if (id == NULL || !json_is_integer(v) || json_integer_value(v) < 0 ||
	    (ms != NULL && (!json_is_integer(ms) ||
	    json_integer_value(ms) < 0)))
		return error_reply("fence needs service and idle_seconds");
	if ((s = route_service(id)) == NULL)
		return error_reply("unknown service");
	if (park_fence(s, ms != NULL ? json_integer_value(ms) :
	    json_integer_value(v) * gw->cfg.time_unit_ms, &since))
		return json_pack("{s:b}", "ok", 1);
	return json_pack("{s:b, s:i, s:I}", "ok", 0, "active", s->active,
	    "idle_since", (json_int_t)since);
}

static json_t *
op_desired(const json_t *msg)
{
	const char *id = json_string_value(json_object_get(msg, "service"));
	char err[STORE_ERR_LEN];
	struct service *s;
	int r;

	if (id == NULL)
		return error_reply("service missing");
	if ((r = route_set_desired(id, &s, err, sizeof(err))) != 0) {
		if (r == -2)
			reload_later();	/* takes the desired state then */
		return error_reply(err);
	}
	park_desired(s);
	return json_pack("{s:b}", "ok", 1);
}

/*
 * Routes read again (SIGHUP, "reload").  On failure the table in use
 * serves on, and the reload is made again until the store answers: a
 * service applied meanwhile is routed then, not at some later reload.
 */
int
ctl_reload(char *err, size_t errlen)
{
	if (reload_routes(err, errlen) == 0)
		return 0;
	log_warnx("unable to reload routes: %s: tried again until the store "
	    "answers", err);
	reload_later();
	return -1;
}

/* route_reload, then the requests parked for what it dropped answered. */
static int
reload_routes(char *err, size_t errlen)
{
	struct svc_list dropped;
	struct service *s;
	int r;

	r = route_reload(&dropped, err, errlen);
	STAILQ_FOREACH(s, &dropped, drop)
		park_answer_all(s, 503, s->routed ? park_stopped_msg(s) :
		    "service removed", 0);
	return r;
}

static void
reload_later(void)
{
	if (gw->reload_retry.fn == NULL)
		retry_init(&gw->reload_retry, gw->loop, reload_retry, NULL,
		    "routes");
	retry_later(&gw->reload_retry);
}

static int
reload_retry(void *arg)
{
	char err[STORE_ERR_LEN + SPEC_ERR_LEN];

	(void)arg;
	if (reload_routes(err, sizeof(err)) == 0)
		return 0;
	log_warnx("unable to reload routes: %s", err);
	return -1;
}

static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl == -1 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int
ctl_scale_up(void)
{
	return gw->sub_fd != -1 && gw->wake_fd != -1;
}

/*
 * hk-scale was subscribed until less than GRACE_MS ago, or the gateway
 * started less than GRACE_MS ago and hk-scale has not subscribed yet
 * (ctl_scale_start): a supervisor is most likely (re)starting it, so
 * requests for services that are not running park (within their own
 * deadline) instead of failing at once.
 */
int
ctl_scale_grace(void)
{
	return !ctl_scale_up() && gw->scale_lost_at != 0 &&
	    loop_now_ms(gw->loop) - gw->scale_lost_at < GRACE_MS;
}

/* The grace is over and hk-scale is still away: what waits gets 503. */
static void
grace_over(struct loop *l, void *arg)
{
	struct service *s;

	(void)l;
	(void)arg;
	if (ctl_scale_up())
		return;
	log_warnx("scale.sock: hk-scale still unavailable after %lld ms",
	    (long long)GRACE_MS);
	RB_FOREACH(s, svc_tree, &gw->services)
		if (s->nparked > 0)
			park_answer_all(s, 503, "activation unavailable", 1);
}

/* Resubscribed: the requests that parked meanwhile send their wakes. */
static void
wake_parked(void)
{
	struct service *s;

	loop_timer_cancel(gw->loop, &gw->grace_timer);
	RB_FOREACH(s, svc_tree, &gw->services)
		if (s->nparked > 0 && s->state != SVC_RUNNING)
			park_wake_again(s);
}

static void
scale_retry(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	ctl_scale_connect();
}

/*
 * A new subscription starts with a ready for every running instance: what
 * was known before (endpoints, fences) is dropped and rebuilt from those.
 */
static void
forget_endpoints(void)
{
	struct service *s;

	RB_FOREACH(s, svc_tree, &gw->services) {
		if (s->state == SVC_SLEEPING)
			continue;
		s->gen++;
		upstream_pool_drop(s);
		s->endpoint[0] = s->fenced_ep[0] = '\0';
		s->state = SVC_SLEEPING;
		s->wake_at = 0;
		loop_timer_cancel(gw->loop, &s->timer);
	}
}

/*
 * The gateway's start counts as a loss of hk-scale: until hk-scale first
 * subscribes, requests that need a wake park for the same grace as after a
 * restart of hk-scale (a stack started by hand races scale.sock).
 */
void
ctl_scale_start(void)
{
	gw->scale_was_up = 1;
	ctl_scale_connect();
}

/* Subscribes to hk-scale; on failure, tries again after a backoff. */
void
ctl_scale_connect(void)
{
	char path[CONFIG_URL_MAX + 32], err[IPC_ERR_LEN];
	json_t *req;
	int rc;

	snprintf(path, sizeof(path), "%s/scale.sock", gw->cfg.runtime_dir);
	/* conns: a "ready" may carry the probe's connection (park_ready) */
	req = json_pack("{s:s, s:b}", "op", "subscribe", "conns", 1);
	gw->sub_fd = ipc_connect(path, err, sizeof(err));
	rc = gw->sub_fd == -1 || set_nonblock(gw->sub_fd) == -1 ||
	    req == NULL || ipc_send(gw->sub_fd, req, err, sizeof(err)) == -1 ||
	    (gw->wake_fd = ipc_connect(path, err, sizeof(err))) == -1 ||
	    set_nonblock(gw->wake_fd) == -1 ||
	    loop_add_fd(gw->loop, gw->sub_fd, LOOP_READ, sub_read, NULL) ==
	    -1 || loop_add_fd(gw->loop, gw->wake_fd, LOOP_READ, wake_read,
	    NULL) == -1 ? -1 : 0;
	json_decref(req);
	if (rc == 0) {
		gw->scale_backoff = 0;
		gw->scale_was_up = 1;
		log_info("scale.sock: subscribed");
		forget_endpoints();
		wake_parked();
		return;
	}
	scale_lost(err);
}

static void
scale_lost(const char *why)
{
	struct service *s;

	if (gw->scale_backoff == 0)
		log_warnx("scale.sock: hk-scale unavailable: %s", why);
	else
		log_debug("scale.sock: hk-scale unavailable: %s", why);
	loop_close_fd(gw->loop, &gw->sub_fd);
	loop_close_fd(gw->loop, &gw->wake_fd);
	gw->sub_ok = 0;
	wakeq_head = wakeq_len = 0;
	if (gw->scale_was_up) {
		gw->scale_was_up = 0;
		gw->scale_lost_at = loop_now_ms(gw->loop);
		loop_timer_init(&gw->grace_timer, grace_over, NULL);
		loop_timer_at(gw->loop, &gw->grace_timer,
		    gw->scale_lost_at + GRACE_MS);
	}
	RB_FOREACH(s, svc_tree, &gw->services)
		if (s->state == SVC_STARTING || s->nparked > 0) {
			s->state = SVC_SLEEPING;
			s->wake_at = 0;
			if (!ctl_scale_grace())
				park_answer_all(s, 503,
				    "activation unavailable", 1);
		}
	gw->scale_backoff = gw->scale_backoff == 0 ? BACKOFF_MIN_MS :
	    gw->scale_backoff * 2;
	if (gw->scale_backoff > BACKOFF_MAX_MS)
		gw->scale_backoff = BACKOFF_MAX_MS;
	if (ctl_scale_grace())
		gw->scale_backoff = GRACE_RETRY_MS;
	loop_timer_init(&gw->scale_timer, scale_retry, NULL);
	loop_timer_at(gw->loop, &gw->scale_timer, loop_now_ms(gw->loop) +
	    gw->scale_backoff);
}

int
ctl_wake(struct service *s)
{
	char err[IPC_ERR_LEN];
	json_t *req;
	int rc;

	if (!ctl_scale_up() || wakeq_len == WAKEQ_MAX)
		return -1;
	req = json_pack("{s:s, s:s, s:s, s:I}", "op", "wake", "service", s->id,
	    "reason", "request", "wake_id", (json_int_t)s->wake_id);
	rc = req == NULL ? -1 : ipc_send(gw->wake_fd, req, err, sizeof(err));
	json_decref(req);
	if (rc == -1)
		return -1;
	log_debug("service=%s: wake sent", s->id);
	wakeq[(wakeq_head + wakeq_len++) % WAKEQ_MAX] = s;
	return 0;
}

static void
wake_read(struct loop *l, int fd, int mask, void *arg)
{
	char err[IPC_ERR_LEN];
	struct service *s;
	json_t *msg;
	const char *why;
	ssize_t n;

	(void)l;
	(void)mask;
	(void)arg;
	n = recv(fd, msgbuf, sizeof(msgbuf), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || wakeq_len == 0) {
		scale_lost(n <= 0 ? "connection closed" : "unexpected reply");
		return;
	}
	s = wakeq[wakeq_head];
	wakeq_head = (wakeq_head + 1) % WAKEQ_MAX;
	wakeq_len--;
	if ((msg = ipc_decode(msgbuf, (size_t)n, err, sizeof(err))) == NULL) {
		log_warnx("scale.sock: bad wake reply: %s", err);
		return;
	}
	why = json_string_value(json_object_get(msg, "error"));
	park_wake_reply(s, json_is_true(json_object_get(msg, "ok")),
	    why != NULL ? why : "refused");
	json_decref(msg);
}

static void
sub_read(struct loop *l, int fd, int mask, void *arg)
{
	char err[IPC_ERR_LEN];
	json_t *msg;
	ssize_t n;
	int passed;

	(void)l;
	(void)mask;
	(void)arg;
	n = ipc_recv_fd(fd, msgbuf, sizeof(msgbuf), &passed);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		scale_lost("connection closed");
		return;
	}
	if ((msg = ipc_decode(msgbuf, (size_t)n, err, sizeof(err))) == NULL)
		log_warnx("scale.sock: bad message: %s", err);
	else if (ipc_op(msg) != NULL)
		sub_message(msg, &passed);
	else if (!json_is_true(json_object_get(msg, "ok"))) {
		json_decref(msg);
		msg = NULL;
		scale_lost("subscribe refused");
	} else
		gw->sub_ok = 1;
	json_decref(msg);
	if (passed != -1)
		close(passed);	/* not taken: only a "ready" takes one */
}

/* *passed: a descriptor that came with msg, or -1; a "ready" takes it. */
static void
sub_message(const json_t *msg, int *passed)
{
	const char *op = ipc_op(msg), *id, *ep, *reason;
	struct service *s;
	json_t *rev, *retry;

	id = json_string_value(json_object_get(msg, "service"));
	if (id == NULL || (s = route_service(id)) == NULL) {
		log_debug("scale.sock: %s for unrouted service %s", op,
		    id != NULL ? id : "(none)");
		return;
	}
	reason = json_string_value(json_object_get(msg, "reason"));
	if (strcmp(op, "ready") == 0) {
		ep = json_string_value(json_object_get(msg, "endpoint"));
		rev = json_object_get(msg, "revision");
		if (ep == NULL || !json_is_integer(rev)) {
			log_warnx("scale.sock: ready without endpoint");
			return;
		}
		park_ready(s, ep, json_integer_value(rev), passed);
	} else if (strcmp(op, "down") == 0)
		park_down(s, reason != NULL ? reason : "unknown");
	else if (strcmp(op, "failed") == 0) {
		retry = json_object_get(msg, "retry_after");
		park_failed(s, reason != NULL ? reason : "unknown",
		    json_is_integer(retry) && json_integer_value(retry) >= 0 &&
		    json_integer_value(retry) <= 86400 ?
		    (int)json_integer_value(retry) : 5);
	} else
		log_debug("scale.sock: ignored op %s", op);
}

/* Draining: a gateway started in our place may take activate.sock. */
void
ctl_close_listener(void)
{
	if (gw->ctl_fd != -1) {
		loop_del_fd(gw->loop, gw->ctl_fd);
		close(gw->ctl_fd);
		gw->ctl_fd = -1;
	}
}

void
ctl_close(void)
{
	ctl_close_listener();
	while (!TAILQ_EMPTY(&gw->ctls))
		ctl_drop(TAILQ_FIRST(&gw->ctls));
	if (gw->sub_fd != -1)
		close(gw->sub_fd);
	if (gw->wake_fd != -1)
		close(gw->wake_fd);
	gw->sub_fd = gw->wake_fd = -1;
	loop_timer_cancel(gw->loop, &gw->scale_timer);
}
