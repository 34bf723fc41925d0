/*
 * call.c - one request to a peer daemon (activate.sock, scale.sock) on a
 * connection of its own, so that a slow reply (a sleep is answered when
 * the process is gone) holds up nothing else.  The reply, a closed
 * connection or the deadline ends the call, and the callback runs once.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "idle.h"
#include "ipc.h"

static void	call_read(struct loop *, int, int, void *);
static void	call_timeout(struct loop *, void *);
static void	call_end(struct call *, json_t *, const char *);

void
call_init(struct call *c, struct idle *ix, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->ix = ix;
	c->fd = -1;
	c->arg = arg;
	loop_timer_init(&c->timer, call_timeout, c);
}

int
call_busy(const struct call *c)
{
	return c->fd != -1;
}

/*
 * Sends req (not consumed) to the socket at path; fn gets the reply.
 * 0: fn runs later; -1: it has run already, with the reason.
 */
int
call_start(struct call *c, call_fn *fn, const char *path, json_t *req,
    int timeout_ms)
{
	char err[IPC_ERR_LEN];
	int fd, fl;

	err[0] = '\0';
	c->fn = fn;
	if (req == NULL) {
		call_end(c, NULL, "out of memory");
		return -1;
	}
	if ((fd = ipc_connect(path, err, sizeof(err))) == -1) {
		call_end(c, NULL, err);
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    ipc_send(fd, req, err, sizeof(err)) == -1 ||
	    loop_add_fd(c->ix->loop, fd, LOOP_READ, call_read, c) == -1) {
		if (err[0] == '\0')
			snprintf(err, sizeof(err), "%s", strerror(errno));
		close(fd);
		call_end(c, NULL, err);
		return -1;
	}
	c->fd = fd;
	loop_timer_at(c->ix->loop, &c->timer, loop_now_ms(c->ix->loop) +
	    timeout_ms);
	return 0;
}

/* Abandons the call without running the callback. */
void
call_cancel(struct call *c)
{
	loop_timer_cancel(c->ix->loop, &c->timer);
	loop_close_fd(c->ix->loop, &c->fd);
}

static void
call_end(struct call *c, json_t *reply, const char *why)
{
	call_cancel(c);
	c->fn(c, reply, why);
	json_decref(reply);
}

static void
call_read(struct loop *l, int fd, int mask, void *arg)
{
	struct call *c = arg;
	char err[IPC_ERR_LEN];
	json_t *msg;
	ssize_t n;

	(void)l;
	(void)mask;
	n = recv(fd, c->ix->rbuf, IPC_MSG_MAX + 1, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		call_end(c, NULL, n == 0 ? "connection closed" :
		    strerror(errno));
		return;
	}
	if ((msg = ipc_decode(c->ix->rbuf, (size_t)n, err, sizeof(err))) ==
	    NULL) {
		call_end(c, NULL, err);
		return;
	}
	call_end(c, msg, NULL);
}

static void
call_timeout(struct loop *l, void *arg)
{
	(void)l;
	call_end(arg, NULL, "no reply in time");
}
