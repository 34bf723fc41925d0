/*
 * ctl.c - idle.sock: one JSON request per message, one reply each.
 *
 *	status			every serverless service: its timer
 *	reload			policies read again from the store
 *	stop, start {service}	the same (hk tells every daemon)
 *
 * At most IPC_CONNS_MAX connections are kept: a new one past that closes
 * the one idle the longest, so that the operator always gets in.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "idle.h"
#include "ipc.h"
#include "log.h"

/* A peer of idle.sock. */
struct ictl {
	TAILQ_ENTRY(ictl)	 entry;
	struct idle		*ix;
	int			 fd;
};

static void	ctl_accept(struct loop *, int, int, void *);
static void	ctl_drop(struct ictl *);
static void	ctl_read(struct loop *, int, int, void *);
static json_t	*ctl_handle(struct idle *, const json_t *);
static json_t	*op_status(struct idle *);
static json_t	*op_reload(struct idle *, const json_t *);
static json_t	*error_reply(const char *);

int
ctl_listen(struct idle *ix, char *err, size_t errlen)
{
	ix->listenfd = ipc_listen(ix->idle_path, SOCK_SEQPACKET, err, errlen);
	if (ix->listenfd == -1)
		return -1;
	if (loop_add_fd(ix->loop, ix->listenfd, LOOP_READ, ctl_accept,
	    ix) == -1) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The listener goes, and the connections with it. */
void
ctl_close(struct idle *ix)
{
	while (!TAILQ_EMPTY(&ix->ctls))
		ctl_drop(TAILQ_FIRST(&ix->ctls));
	if (ix->listenfd == -1)
		return;
	loop_del_fd(ix->loop, ix->listenfd);
	close(ix->listenfd);
	unlink(ix->idle_path);
	ix->listenfd = -1;
}

static void
ctl_drop(struct ictl *c)
{
	TAILQ_REMOVE(&c->ix->ctls, c, entry);
	c->ix->nctls--;
	loop_close_fd(c->ix->loop, &c->fd);
	free(c);
}

/* The list is in order of use: its head was idle the longest. */
static void
ctl_accept(struct loop *l, int fd, int mask, void *arg)
{
	struct idle *ix = arg;
	struct ictl *c;
	int cfd;

	(void)mask;
	if ((cfd = ipc_accept(fd, "idle.sock")) == -1)
		return;
	if (ix->nctls >= IPC_CONNS_MAX) {
		log_debug("idle.sock: %d connections: the one idle the "
		    "longest is closed", IPC_CONNS_MAX);
		ctl_drop(TAILQ_FIRST(&ix->ctls));
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    loop_add_fd(l, cfd, LOOP_READ, ctl_read, c) == -1) {
		log_warn("idle.sock: connection");
		free(c);
		close(cfd);
		return;
	}
	c->ix = ix;
	c->fd = cfd;
	TAILQ_INSERT_TAIL(&ix->ctls, c, entry);
	ix->nctls++;
}

static void
ctl_read(struct loop *l, int fd, int mask, void *arg)
{
	struct ictl *c = arg;
	struct idle *ix = c->ix;
	char err[IPC_ERR_LEN];
	json_t *msg, *reply;
	ssize_t n;

	(void)l;
	(void)mask;
	n = recv(fd, ix->rbuf, IPC_MSG_MAX + 1, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ctl_drop(c);
		return;
	}
	TAILQ_REMOVE(&ix->ctls, c, entry);	/* used last, closed last */
	TAILQ_INSERT_TAIL(&ix->ctls, c, entry);
	if ((msg = ipc_decode(ix->rbuf, (size_t)n, err, sizeof(err))) ==
	    NULL)
		reply = error_reply(err);
	else {
		reply = ctl_handle(ix, msg);
		json_decref(msg);
	}
	if (reply == NULL || ipc_send(fd, reply, err, sizeof(err)) == -1) {
		log_debug("idle.sock: dropping a connection");
		ctl_drop(c);
	}
	json_decref(reply);
}

static json_t *
error_reply(const char *why)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", why);
}

static json_t *
ctl_handle(struct idle *ix, const json_t *msg)
{
	const char *op = ipc_op(msg);

	if (op == NULL)
		return error_reply("op: missing or not a string");
	if (strcmp(op, "status") == 0)
		return op_status(ix);
	if (strcmp(op, "reload") == 0 || strcmp(op, "stop") == 0 ||
	    strcmp(op, "start") == 0)
		return op_reload(ix, msg);
	return error_reply("unknown op");
}

static json_t *
op_status(struct idle *ix)
{
	struct isvc *s;
	json_t *list, *o;
	int64_t dl;

	if ((list = json_array()) == NULL)
		return NULL;
	TAILQ_FOREACH(s, &ix->services, entry) {
		if (s->removed || !s->serverless)
			continue;
		dl = isvc_deadline_wall(s);
		o = json_pack("{s:s, s:i, s:i, s:b, s:s, s:o, s:o}",
		    "service", s->id, "idle_seconds", s->idle_seconds,
		    "min_replicas", s->min_replicas, "awake", s->awake,
		    "step", isvc_step_name(s),
		    "deadline", dl == -1 ? json_null() : json_integer(dl),
		    "busy_since", s->busy_since == 0 ? json_null() :
		    json_integer(wall_ms() - (loop_now_ms(ix->loop) -
		    s->busy_since)));
		if (o == NULL || json_array_append_new(list, o) == -1) {
			json_decref(list);
			return NULL;
		}
	}
	return json_pack("{s:b, s:o, s:b, s:b, s:I}", "ok", 1,
	    "services", list, "subscribed", ix->sub == SUB_STREAM ||
	    ix->sub == SUB_SNAPSHOT, "gateway", !ix->gw_down,
	    "time_unit_ms", (json_int_t)ix->cfg.time_unit_ms);
}

/* reload, and stop/start of one service: the store says what changed. */
static json_t *
op_reload(struct idle *ix, const json_t *msg)
{
	json_t *id = json_object_get(msg, "service");

	if (strcmp(ipc_op(msg), "reload") != 0 && !json_is_string(id))
		return error_reply("service: missing or not a string");
	if (policy_reload(ix) == -1)
		return error_reply("unable to read services from the store");
	return json_pack("{s:b}", "ok", 1);
}
