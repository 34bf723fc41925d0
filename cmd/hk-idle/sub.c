/*
 * sub.c - the subscription to hk-scale (scale.sock).  hk-scale answers
 * {"ok":true}, then a ready for every running service, then the stream.
 * Before each subscription every service is forgotten, so the snapshot is
 * the complete set of awake services; once it is read (the socket has
 * nothing more), the gateway's status says since when each one is idle.
 * When hk-scale goes away nothing is awake; the subscription is made again
 * with a backoff.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "idle.h"
#include "ipc.h"
#include "log.h"

static void	sub_connect(struct idle *);
static void	sub_retry(struct loop *, void *);
static void	sub_lost(struct idle *, const char *);
static void	sub_read(struct loop *, int, int, void *);
static int	sub_one(struct idle *, json_t *);
static void	sync_start(struct idle *);
static void	sync_done(struct call *, json_t *, const char *);

void
sub_start(struct idle *ix)
{
	ix->subfd = -1;
	ix->sub = SUB_DOWN;
	loop_timer_init(&ix->sub_timer, sub_retry, ix);
	call_init(&ix->sync, ix, ix);
	sub_connect(ix);
}

static void
sub_connect(struct idle *ix)
{
	char err[IPC_ERR_LEN];
	json_t *req;
	int fl, rc;

	isvc_forget_all(ix);
	err[0] = '\0';
	req = json_pack("{s:s}", "op", "subscribe");
	ix->subfd = ipc_connect(ix->scale_path, err, sizeof(err));
	rc = ix->subfd == -1 || req == NULL ||
	    (fl = fcntl(ix->subfd, F_GETFL)) == -1 ||
	    fcntl(ix->subfd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    ipc_send(ix->subfd, req, err, sizeof(err)) == -1 ||
	    loop_add_fd(ix->loop, ix->subfd, LOOP_READ, sub_read, ix) == -1 ?
	    -1 : 0;
	json_decref(req);
	if (rc == -1) {
		sub_lost(ix, err[0] != '\0' ? err : strerror(errno));
		return;
	}
	ix->sub = SUB_WAIT_OK;
}

static void
sub_retry(struct loop *l, void *arg)
{
	(void)l;
	sub_connect(arg);
}

void
sub_close(struct idle *ix)
{
	loop_timer_cancel(ix->loop, &ix->sub_timer);
	call_cancel(&ix->sync);
	loop_close_fd(ix->loop, &ix->subfd);
	ix->sub = SUB_DOWN;
}

static void
sub_lost(struct idle *ix, const char *why)
{
	if (ix->sub_backoff == 0)
		log_warnx("scale.sock: hk-scale unavailable, nothing sleeps "
		    "until it is back: %s", why);
	else
		log_debug("scale.sock: hk-scale unavailable: %s", why);
	sub_close(ix);
	isvc_forget_all(ix);
	ix->sub_backoff = ix->sub_backoff == 0 ? IDLE_BACKOFF_MIN_MS :
	    ix->sub_backoff * 2;
	if (ix->sub_backoff > IDLE_BACKOFF_MAX_MS)
		ix->sub_backoff = IDLE_BACKOFF_MAX_MS;
	loop_timer_at(ix->loop, &ix->sub_timer, loop_now_ms(ix->loop) +
	    ix->sub_backoff);
}

/* Reads every message there is; the first lull ends the snapshot. */
static void
sub_read(struct loop *l, int fd, int mask, void *arg)
{
	struct idle *ix = arg;
	char err[IPC_ERR_LEN];
	json_t *msg;
	ssize_t n;

	(void)l;
	(void)mask;
	for (;;) {
		n = recv(fd, ix->rbuf, IPC_MSG_MAX + 1, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n <= 0) {
			sub_lost(ix, n == 0 ? "connection closed" :
			    strerror(errno));
			return;
		}
		if ((msg = ipc_decode(ix->rbuf, (size_t)n, err,
		    sizeof(err))) == NULL) {
			log_warnx("scale.sock: bad message: %s", err);
			continue;
		}
		n = sub_one(ix, msg);
		json_decref(msg);
		if (n == -1) {
			sub_lost(ix, "subscribe refused");
			return;
		}
	}
	if (ix->sub == SUB_SNAPSHOT) {
		ix->sub = SUB_STREAM;
		sync_start(ix);
	}
}

static int
sub_one(struct idle *ix, json_t *msg)
{
	const char *op = ipc_op(msg), *id;

	if (ix->sub == SUB_WAIT_OK) {
		if (op != NULL || !json_is_true(json_object_get(msg, "ok")))
			return -1;
		log_info("scale.sock: subscribed");
		ix->sub = SUB_SNAPSHOT;
		ix->sub_backoff = 0;
		return 0;
	}
	id = json_string_value(json_object_get(msg, "service"));
	if (op == NULL || id == NULL) {
		log_debug("scale.sock: message without op or service");
		return 0;
	}
	if (strcmp(op, "ready") == 0)
		isvc_ready(ix, id, json_string_value(json_object_get(msg,
		    "endpoint")));
	else if (strcmp(op, "down") == 0)
		isvc_down(ix, id);
	return 0;
}

static void
sync_start(struct idle *ix)
{
	json_t *req;

	call_cancel(&ix->sync);
	req = json_pack("{s:s}", "op", "status");
	call_start(&ix->sync, sync_done, ix->gw_path, req, IDLE_STATUS_MS);
	json_decref(req);
}

static void
sync_done(struct call *c, json_t *reply, const char *why)
{
	struct idle *ix = c->arg;
	struct isvc *s;
	const char *id, *state;
	json_t *list, *e;
	size_t i;

	gw_seen(ix, reply == NULL ? why : NULL);
	list = json_object_get(reply, "services");
	if (reply != NULL && !json_is_array(list))
		log_warnx("activate.sock: status without services");
	json_array_foreach(list, i, e) {
		id = json_string_value(json_object_get(e, "service"));
		state = json_string_value(json_object_get(e, "state"));
		if (id != NULL && state != NULL &&
		    (s = isvc_find(ix, id)) != NULL)
			isvc_sync(s, state, e);
	}
}
