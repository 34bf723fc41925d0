/*
 * check.c - idle_check of hk.toml(5): before it asks the gateway for a
 * fence, hk-idle asks the instance itself whether it is idle, with one
 * GET of its path on a connection of its own to the instance's endpoint
 * (the one hk-scale's "ready" named), not through the gateway: the check
 * is no request of the service's, and moves no idle clock.
 *
 *	2xx			idle: the fence is asked
 *	another status		busy: asked again later (service.c)
 *	no answer in time	busy: a busy process answers slowly
 *	refused, closed before
 *	a head, not HTTP	idle: nothing there to wait for
 *
 * As the readiness probe of hk-scale (probe.c there), the answer is read
 * to its end before the close, so that the server sees no reset; the
 * reading is bounded by IDLE_CHECK_READ_MAX bytes and IDLE_CHECK_REST_MS
 * after the head, past which the status decides as if the answer had
 * ended.  The end calls isvc_checked() once.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "idle.h"
#include "endpoint.h"
#include "log.h"

static void	check_io(struct loop *, int, int, void *);
static void	check_read(struct icheck *);
static void	check_on_head(void *);
static void	check_timeout(struct loop *, void *);
static void	check_end(struct icheck *, enum check_result, const char *);

static const char *const result_names[CHECK_RESULTS] = {
	[CHECK_IDLE] = "idle",
	[CHECK_BUSY] = "busy",
	[CHECK_TIMEOUT] = "timeout",
	[CHECK_UNREACHABLE] = "unreachable",
};

const char *
check_result_name(enum check_result r)
{
	return result_names[r];
}

void
check_init(struct isvc *s)
{
	memset(&s->check, 0, sizeof(s->check));
	s->check.s = s;
	s->check.fd = -1;
	loop_timer_init(&s->check.timer, check_timeout, &s->check);
}

/* Abandons a check under way without calling back. */
void
check_cancel(struct isvc *s)
{
	loop_timer_cancel(s->ix->loop, &s->check.timer);
	loop_close_fd(s->ix->loop, &s->check.fd);
}

/* The check of s starts; isvc_checked() follows, maybe at once. */
void
check_start(struct isvc *s)
{
	struct icheck *k = &s->check;
	struct loop *l = s->ix->loop;
	struct sockaddr_storage ss;
	socklen_t sslen;

	check_cancel(s);
	k->sent = 0;
	hget_init(&k->get, IDLE_CHECK_READ_MAX, check_on_head, k);
	if (endpoint_parse(s->endpoint, &ss, &sslen) == -1) {
		check_end(k, CHECK_UNREACHABLE, "the endpoint is not an "
		    "address");
		return;
	}
	k->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (k->fd == -1 || (connect(k->fd, (struct sockaddr *)&ss, sslen) ==
	    -1 && errno != EINPROGRESS) ||
	    loop_add_fd(l, k->fd, LOOP_WRITE, check_io, k) == -1) {
		check_end(k, CHECK_UNREACHABLE, strerror(errno));
		return;
	}
	if (loop_timer_at(l, &k->timer, loop_now_ms(l) +
	    IDLE_CHECK_TIMEOUT_MS) == -1)
		fatal(EX_OSERR, "unable to arm a timer");
}

static void
check_io(struct loop *l, int fd, int mask, void *arg)
{
	struct icheck *k = arg;
	socklen_t len = sizeof(int);
	int soerr = 0;

	(void)mask;
	if (k->sent) {
		check_read(k);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1 ||
	    soerr != 0) {
		check_end(k, CHECK_UNREACHABLE, strerror(soerr != 0 ? soerr :
		    errno));
		return;
	}
	if (hget_send(fd, k->s->check_path, endpoint_host(k->s->endpoint),
	    "hk-idle") == -1) {
		check_end(k, CHECK_UNREACHABLE, "unable to send the request");
		return;
	}
	k->sent = 1;
	loop_mod_fd(l, fd, LOOP_READ);
}

/* The head is in: its status decides, and the rest has a deadline. */
static void
check_on_head(void *arg)
{
	struct icheck *k = arg;
	struct loop *l = k->s->ix->loop;

	if (loop_timer_at(l, &k->timer, loop_now_ms(l) +
	    IDLE_CHECK_REST_MS) == -1)
		fatal(EX_OSERR, "unable to arm a timer");
}

static void
check_read(struct icheck *k)
{
	const char *why;

	switch (hget_read(&k->get, k->fd, &why)) {
	case HGET_MORE:
		break;
	case HGET_END:
		check_end(k, CHECK_IDLE, NULL);
		break;
	case HGET_FAILED:
		check_end(k, CHECK_UNREACHABLE, why);
		break;
	case HGET_CUT:
		check_end(k, CHECK_IDLE, "longer than the check reads");
		break;
	}
}

static void
check_timeout(struct loop *l, void *arg)
{
	(void)l;
	check_end(arg, CHECK_TIMEOUT, "no answer in time");
}

/*
 * A head, however the exchange ended, decides by its status; without
 * one, r says what happened.
 */
static void
check_end(struct icheck *k, enum check_result r, const char *why)
{
	struct isvc *s = k->s;

	check_cancel(s);
	if (k->get.status != 0)
		r = k->get.status >= 200 && k->get.status <= 299 ? CHECK_IDLE :
		    CHECK_BUSY;
	isvc_checked(s, r, why);
}
