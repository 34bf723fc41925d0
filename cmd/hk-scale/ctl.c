/*
 * ctl.c - scale.sock: one JSON request per message, one reply each; a
 * subscriber keeps its connection and receives ready, down and failed.
 * A subscriber whose socket buffer is full is dropped, never waited for.
 * A sleep is answered when the process is gone; until then nothing more
 * is read from that connection.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "ipc.h"
#include "log.h"
#include "scale.h"

static void	ctl_accept(struct loop *, int, int, void *);
static void	conn_read(struct loop *, int, int, void *);
static void	conn_close(struct conn *);
static void	conn_make_room(struct scale *);
static void	reply(struct conn *, json_t *);
static void	reply_err(struct conn *, const char *);
static void	broadcast(struct scale *, json_t *);
static void	broadcast_fd(struct scale *, json_t *, int);
static json_t	*ready_msg(const struct service *);
static struct service *arg_service(struct conn *, json_t *);
static json_t	*status_of(const struct service *);
static void	op_wake(struct conn *, json_t *);
static void	op_sleep(struct conn *, json_t *);
static void	op_subscribe(struct conn *, json_t *);
static void	op_status(struct conn *, json_t *);
static void	op_reload(struct conn *, json_t *);
static void	op_desired(struct conn *, json_t *);

static const struct ctl_op {
	const char	*name;
	void		(*fn)(struct conn *, json_t *);
} ctl_ops[] = {
	{ "reload",	op_reload },
	{ "sleep",	op_sleep },
	{ "start",	op_desired },
	{ "status",	op_status },
	{ "stop",	op_desired },
	{ "subscribe",	op_subscribe },
	{ "wake",	op_wake },
};

int
ctl_listen(struct scale *sc, char *err, size_t errlen)
{
	if ((size_t)snprintf(sc->sock_path, sizeof(sc->sock_path),
	    "%s/scale.sock", sc->cfg.runtime_dir) >= sizeof(sc->sock_path)) {
		snprintf(err, errlen, "%s: path too long", sc->cfg.runtime_dir);
		return -1;
	}
	sc->listenfd = ipc_listen(sc->sock_path, SOCK_SEQPACKET, err, errlen);
	if (sc->listenfd == -1)
		return -1;
	if (loop_add_fd(sc->loop, sc->listenfd, LOOP_READ, ctl_accept,
	    sc) == -1) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* No more requests: the listener and every connection are closed. */
void
ctl_close(struct scale *sc)
{
	struct conn *c;

	if (sc->listenfd != -1) {
		loop_del_fd(sc->loop, sc->listenfd);
		close(sc->listenfd);
		unlink(sc->sock_path);
		sc->listenfd = -1;
	}
	TAILQ_FOREACH(c, &sc->conns, entry)
		conn_close(c);
}

/* Before the loop sleeps: closed connections are freed. */
void
ctl_reap(struct scale *sc)
{
	struct conn *c, *tmp;

	TAILQ_FOREACH_SAFE(c, &sc->conns, entry, tmp) {
		if (!c->dead)
			continue;
		TAILQ_REMOVE(&sc->conns, c, entry);
		free(c);
	}
}

static void
ctl_accept(struct loop *l, int fd, int mask, void *arg)
{
	struct scale *sc = arg;
	struct conn *c;
	int cfd;

	(void)mask;
	if ((cfd = ipc_accept(fd, "scale.sock")) == -1)
		return;
	conn_make_room(sc);
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("scale.sock: connection");
		close(cfd);
		return;
	}
	c->sc = sc;
	c->fd = cfd;
	TAILQ_INSERT_TAIL(&sc->conns, c, entry);
	if (loop_add_fd(l, cfd, LOOP_READ, conn_read, c) == -1) {
		log_warn("scale.sock: epoll");
		conn_close(c);
	}
}

/*
 * At IPC_CONNS_MAX connections, the one idle the longest is closed: not a
 * subscriber, not one owed a reply.  The list is in order of use (a
 * request moves its connection to the end), so it is the first such.
 */
static void
conn_make_room(struct scale *sc)
{
	struct conn *c, *idle = NULL;
	size_t n = 0;

	TAILQ_FOREACH(c, &sc->conns, entry) {
		if (c->dead)
			continue;
		n++;
		if (idle == NULL && !c->subscriber && c->waiting == NULL)
			idle = c;
	}
	if (n < IPC_CONNS_MAX || idle == NULL)
		return;
	log_debug("scale.sock: %zu connections: the one idle the longest "
	    "is closed", n);
	conn_close(idle);
}

static void
conn_close(struct conn *c)
{
	if (c->dead)
		return;
	loop_close_fd(c->sc->loop, &c->fd);
	c->dead = 1;
	c->waiting = NULL;
}

static void
conn_read(struct loop *l, int fd, int mask, void *arg)
{
	struct conn *c = arg;
	struct scale *sc = c->sc;
	char err[IPC_ERR_LEN];
	const char *op;
	json_t *msg;
	ssize_t n;
	size_t i;

	(void)l;
	(void)mask;
	if (c->waiting != NULL) {	/* only a hangup wakes us now */
		conn_close(c);
		return;
	}
	n = recv(fd, sc->rbuf, IPC_MSG_MAX + 1, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	TAILQ_REMOVE(&sc->conns, c, entry);	/* used last, closed last */
	TAILQ_INSERT_TAIL(&sc->conns, c, entry);
	if ((msg = ipc_decode(sc->rbuf, (size_t)n, err, sizeof(err))) ==
	    NULL) {
		reply_err(c, err);
		return;
	}
	op = ipc_op(msg);
	for (i = 0; op != NULL && i < sizeof(ctl_ops) / sizeof(ctl_ops[0]);
	    i++)
		if (strcmp(op, ctl_ops[i].name) == 0)
			break;
	if (op == NULL)
		reply_err(c, "op: missing or not a string");
	else if (i == sizeof(ctl_ops) / sizeof(ctl_ops[0]))
		reply_err(c, "unknown op");
	else
		ctl_ops[i].fn(c, msg);
	json_decref(msg);
}

/* Sends and consumes msg; a peer that cannot take it is dropped. */
static void
reply(struct conn *c, json_t *msg)
{
	char err[IPC_ERR_LEN];

	if (msg != NULL && !c->dead && ipc_send(c->fd, msg, err,
	    sizeof(err)) == -1) {
		log_debug("scale.sock: dropping a connection: %s", err);
		conn_close(c);
	}
	json_decref(msg);
}

static void
reply_err(struct conn *c, const char *why)
{
	reply(c, json_pack("{s:b, s:s}", "ok", 0, "error", why));
}

static void
broadcast(struct scale *sc, json_t *msg)
{
	broadcast_fd(sc, msg, -1);
}

/* The same, with fd passed to the first gateway that takes connections. */
static void
broadcast_fd(struct scale *sc, json_t *msg, int fd)
{
	char err[IPC_ERR_LEN];
	struct conn *c;
	int pass;

	TAILQ_FOREACH(c, &sc->conns, entry) {
		if (!c->subscriber || c->dead)
			continue;
		pass = c->takes_conns ? fd : -1;
		if (ipc_send_fd(c->fd, msg, pass, err, sizeof(err)) == -1) {
			log_warnx("scale.sock: dropping a subscriber: %s", err);
			conn_close(c);
		} else if (pass != -1)
			fd = -1;	/* one gateway sends on it */
	}
	json_decref(msg);
}

static json_t *
ready_msg(const struct service *s)
{
	return json_pack("{s:s, s:s, s:s, s:I}", "op", "ready",
	    "service", s->def.id, "endpoint", s->inst->endpoint,
	    "revision", (json_int_t)s->inst->revision);
}

/* With the probe's connection, if it left one (service_inst_ready). */
void
ctl_ready(struct service *s)
{
	if (s->inst != NULL && s->inst->ready)
		broadcast_fd(s->sc, ready_msg(s), s->inst->conn_fd);
}

void
ctl_down(struct service *s, const char *reason)
{
	broadcast(s->sc, json_pack("{s:s, s:s, s:s}", "op", "down",
	    "service", s->def.id, "reason", reason));
}

void
ctl_failed(struct service *s)
{
	broadcast(s->sc, json_pack("{s:s, s:s, s:s, s:I, s:I}", "op", "failed",
	    "service", s->def.id, "reason", s->fail_reason,
	    "retry_after", (json_int_t)service_retry_after(s),
	    "revision", (json_int_t)s->def.revision));
}

/*
 * def's readiness gate failed while an earlier revision serves
 * (release.c): for "hk apply --wait"; parked requests wait on.
 */
void
ctl_gate_failed(struct service *s)
{
	broadcast(s->sc, json_pack("{s:s, s:s, s:s, s:I, s:I}", "op",
	    "gate_failed", "service", s->def.id, "reason", s->gate_reason,
	    "revision", (json_int_t)s->def.revision, "serving",
	    (json_int_t)s->good.revision));
}

/* The sleep (or stop) of s is over: the waiting requests are answered. */
void
ctl_sleep_done(struct service *s, const char *err)
{
	struct conn *c;

	TAILQ_FOREACH(c, &s->sc->conns, entry) {
		if (c->waiting != s)
			continue;
		c->waiting = NULL;
		loop_mod_fd(s->sc->loop, c->fd, LOOP_READ);
		if (err != NULL)
			reply_err(c, err);
		else
			reply(c, json_pack("{s:b}", "ok", 1));
	}
}

static struct service *
arg_service(struct conn *c, json_t *msg)
{
	struct service *s;
	const char *id;

	id = json_string_value(json_object_get(msg, "service"));
	if (id == NULL) {
		reply_err(c, "service: missing or not a string");
		return NULL;
	}
	if ((s = service_find(c->sc, id)) == NULL)
		reply_err(c, "unknown service");
	return s;
}

static void
op_wake(struct conn *c, json_t *msg)
{
	json_t *r = json_object_get(msg, "reason");
	json_t *w = json_object_get(msg, "wake_id");
	struct service *s;

	if (r != NULL && !json_is_string(r)) {
		reply_err(c, "reason: not a string");
		return;
	}
	if (w != NULL && (!json_is_integer(w) || json_integer_value(w) < 0)) {
		reply_err(c, "wake_id: not a positive integer");
		return;
	}
	if ((s = arg_service(c, msg)) == NULL)
		return;
	if (!s->def.spec.serverless)
		reply_err(c, "not serverless");
	else if (s->def.desired == STORE_DESIRED_STOPPED)
		reply_err(c, "stopped");
	else {
		reply(c, json_pack("{s:b}", "ok", 1));
		service_wake(s, r != NULL ? json_string_value(r) : "request",
		    w != NULL ? json_integer_value(w) : 0);
	}
}

static void
op_sleep(struct conn *c, json_t *msg)
{
	struct service *s;

	if ((s = arg_service(c, msg)) == NULL)
		return;
	if (!s->def.spec.serverless)
		reply_err(c, "not serverless");
	else if (s->def.spec.policy.min_replicas > 0)
		reply_err(c, "min_replicas is 1");
	else if (s->state == SVC_STARTING ||
	    (s->state == SVC_SUSPENDED && s->inst->thawing))
		reply_err(c, "starting");
	else if (s->state == SVC_RUNNING || s->state == SVC_DRAINING ||
	    (s->state == SVC_SUSPENDED && s->inst->freezing)) {
		c->waiting = s;
		loop_mod_fd(c->sc->loop, c->fd, 0);
		if (s->state == SVC_RUNNING && service_suspends(s))
			service_suspend(s);
		else if (s->state == SVC_RUNNING)
			service_stop(s, "idle");
	} else
		reply(c, json_pack("{s:b}", "ok", 1));
}

static void
op_subscribe(struct conn *c, json_t *msg)
{
	struct service *s;

	reply(c, json_pack("{s:b}", "ok", 1));
	if (c->dead)
		return;
	c->subscriber = 1;
	c->takes_conns = json_is_true(json_object_get(msg, "conns"));
	TAILQ_FOREACH(s, &c->sc->services, entry)
		if (!s->removed && s->state == SVC_RUNNING &&
		    s->inst != NULL && s->inst->ready)
			reply(c, ready_msg(s));
}

static json_t *
status_of(const struct service *s)
{
	const struct inst *in = s->inst;
	struct store_instance r;
	json_t *o;

	o = json_pack("{s:s, s:s, s:I}", "service", s->def.id,
	    "state", service_state_name(s->state),
	    "revision", (json_int_t)(in != NULL ? in->revision :
	    s->def.revision));
	json_object_set_new(o, "endpoint", in != NULL ?
	    json_string(in->endpoint) : json_null());
	memset(&r, 0, sizeof(r));
	if (in != NULL)
		inst_row(in, &r);
	json_object_set_new(o, "pid", in != NULL ?
	    json_integer(r.pid) : json_null());
	json_object_set_new(o, "started_at", in != NULL ?
	    json_integer(in->started_at) : json_null());
	json_object_set_new(o, "ready_at", in != NULL && in->ready_at > 0 ?
	    json_integer(in->ready_at) : json_null());
	return o;
}

static void
op_status(struct conn *c, json_t *msg)
{
	struct service *s;
	json_t *all, *tmpls;

	(void)msg;
	all = json_array();
	tmpls = pool_status();
	TAILQ_FOREACH(s, &c->sc->services, entry)
		if (!s->removed)
			json_array_append_new(all, status_of(s));
	reply(c, json_pack("{s:b, s:o, s:o}", "ok", 1, "services", all,
	    "templates", tmpls));
}

static void
op_reload(struct conn *c, json_t *msg)
{
	(void)msg;
	if (scale_reload(c->sc, 1) == -1)
		reply_err(c, "unable to read services from the store");
	else
		reply(c, json_pack("{s:b}", "ok", 1));
}

/* stop and start: the store holds the desired state; read it again. */
static void
op_desired(struct conn *c, json_t *msg)
{
	const char *id = json_string_value(json_object_get(msg, "service"));

	if (id == NULL) {
		reply_err(c, "service: missing or not a string");
		return;
	}
	if (scale_reload(c->sc, 1) == -1)
		reply_err(c, "unable to read services from the store");
	else if (service_find(c->sc, id) == NULL)
		reply_err(c, "unknown service");
	else
		reply(c, json_pack("{s:b}", "ok", 1));
}
