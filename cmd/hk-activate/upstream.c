/*
 * upstream.c - the backend side: connect (or take an idle keep-alive
 * connection from the service's pool), send the request as the client's
 * body arrives, parse the response into the client's buffer only as far
 * as that buffer has room, and give the connection back to the pool when
 * the exchange ended cleanly.  A pool is dropped when its endpoint changes
 * or goes down.
 *
 * A connection refused before any byte was sent is not a request: conn.c
 * parks it again (conn_refused), to be tried again within its startup
 * deadline.  Anything later is never retried.  What befalls a request
 * here is told to conn.c, which owns the connection: upstream.c calls
 * nothing of park.c.
 *
 * New connections are paced, so that the gateway is not what overloads a
 * service it just woke: a burst of parked requests released at once would
 * otherwise open as many connections in the same instant, more than a
 * server's listen backlog takes (Python's is 5), and the kernel drops the
 * rest.  A connection is unproven until the backend answers on it (or, a
 * check PACE_CHECK_MS later, its TCP has taken the request: the server
 * had that long to accept it); at most svc->window are unproven at once,
 * PACE_WINDOW, within the smallest listen backlog in common use.  Proven
 * connections do not count, so that the connections to an endpoint grow
 * by PACE_WINDOW with each round of answers (or each check), and a
 * request that has one reuses it.  A window that grew with its answers,
 * as TCP's does, was tried: its rounds end together, and the next opens
 * as many connections in one instant.  A request with no connection waits in
 * svc->upwait, in arrival order, and takes the next that frees up (pooled)
 * or may be opened.  A connection to a loopback endpoint that the backend
 * never accepted (its connect or its request bytes not acknowledged at the
 * check, after a retransmission) did not deliver a byte to the service: it
 * is closed, the window halved (one proven connection gives one back), and
 * the request goes on the next
 * connection, resent from its first byte.  That is why the bytes of c->up
 * sent on an unproven connection are kept until it is proven.
 *
 * An instance that only the gateway reaches (hk.toml(5) listen = "unix")
 * has a Unix socket as its endpoint.  A connect to it is done or refused
 * at once, never in progress: done, it sits in the listener's queue,
 * where no byte can be lost as a SYN can, so it is proven at once.
 * Refused (ECONNREFUSED, or ENOENT once the socket is gone) is a refused
 * TCP connect.  EAGAIN says the queue is full (a program that listened
 * again with a backlog below the gateway's concurrency): the request
 * waits first in line and the connect is tried again PACE_CHECK_MS later.
 * Nagle, delayed ACKs and TCP_INFO are TCP's: not asked of a Unix socket.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <linux/tcp.h>	/* struct tcp_info with tcpi_bytes_acked */
#include <arpa/inet.h>


#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activate.h"
#include "log.h"

static void	upstream_io(struct loop *, int, int, void *);
static void	up_timer(struct loop *, void *);
static void	up_check(struct upconn *, int);
static void	up_proven(struct upconn *);
static void	up_retry(struct conn *);
static void	up_start(struct conn *, int);
static void	up_connect(struct conn *);
static void	up_wait(struct conn *, int);
static void	kick_soon(struct service *);
static void	kick_fire(struct loop *, void *);
static int	loopback(const struct service *);
static int	same_peer(const struct sockaddr_storage *,
		    const struct sockaddr_storage *);
static size_t	up_unsent(const struct conn *);
static void	up_quickack(struct conn *);
static struct upconn *pool_take(struct service *);
static void	upconn_close(struct upconn *);
static void	up_connected(struct conn *);
static void	up_write(struct conn *);
static int	up_read(struct conn *);
static void	up_eof(struct conn *, int);
static void	up_refused(struct conn *);
static void	up_full(struct conn *);
static int	up_splice(struct conn *);
static void	up_relay(struct conn *, struct upconn *);

static char	scratch[XBUF_SIZE];

static struct upconn *
pool_take(struct service *svc)
{
	struct upconn *u;

	while ((u = TAILQ_FIRST(&svc->pool)) != NULL) {
		TAILQ_REMOVE(&svc->pool, u, entry);
		svc->npool--;
		loop_timer_cancel(gw->loop, &u->timer);
		if (u->gen == svc->gen)
			return u;
		upconn_close(u);
	}
	return NULL;
}

void
upstream_init(struct service *svc)
{
	TAILQ_INIT(&svc->pool);
	TAILQ_INIT(&svc->upwait);
	svc->window = PACE_WINDOW;
	svc->gift_fd = -1;
	loop_timer_init(&svc->kick, kick_fire, svc);
}

static int
same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;
	const struct sockaddr_in *b4 = (const struct sockaddr_in *)b;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in6 *b6 = (const struct sockaddr_in6 *)b;

	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_UNIX)
		return strcmp(((const struct sockaddr_un *)a)->sun_path,
		    ((const struct sockaddr_un *)b)->sun_path) == 0;
	if (a->ss_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		    a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a->ss_family == AF_INET6 && a6->sin6_port == b6->sin6_port &&
	    memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) == 0;
}

/*
 * hk-scale's readiness probe connected to the new endpoint and passed
 * its connection on with the "ready": the first request that needs a
 * new connection takes it rather than connecting, so that the service
 * sees one connection at its cold start.  It must be a connected stream
 * socket to the endpoint; otherwise it is closed and ignored.
 */
void
upstream_gift(struct service *svc, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int type = 0;
	socklen_t tlen = sizeof(type);

	upstream_gift_drop(svc);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == -1 ||
	    type != SOCK_STREAM ||
	    getpeername(fd, (struct sockaddr *)&ss, &len) == -1 ||
	    !same_peer(&ss, &svc->addr)) {
		log_warnx("service=%s: the connection passed with \"ready\" "
		    "is not one to %s; ignored", svc->id, svc->endpoint);
		close(fd);
		return;
	}
	svc->gift_fd = fd;	/* up_connect() sets TCP_NODELAY */
}

/* Not taken by a request: closed. */
void
upstream_gift_drop(struct service *svc)
{
	if (svc->gift_fd != -1) {
		close(svc->gift_fd);
		svc->gift_fd = -1;
	}
}

static int
loopback(const struct service *svc)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)&svc->addr;
	const struct sockaddr_in6 *in6 =
	    (const struct sockaddr_in6 *)&svc->addr;

	if (svc->addr.ss_family == AF_INET)
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	return svc->addr.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

/* Bytes of c->up not yet sent on its connection. */
static size_t
up_unsent(const struct conn *c)
{
	return xbuf_used(&c->up) - (c->upc->proven ? 0 : c->upc->sent);
}

static void
kick_soon(struct service *svc)
{
	if (!TAILQ_EMPTY(&svc->upwait) && !loop_timer_armed(&svc->kick))
		loop_timer_at(gw->loop, &svc->kick, loop_now_ms(gw->loop));
}

/*
 * The next turn of the loop (never inside a callback that may still hold
 * one of these): waiting requests take what connections there are, or go
 * back to the parked queue if the endpoint is gone; none was sent.
 */
static void
kick_fire(struct loop *l, void *arg)
{
	struct service *svc = arg;
	struct conn *c;

	(void)l;
	while ((c = TAILQ_FIRST(&svc->upwait)) != NULL) {
		if (svc->state == SVC_RUNNING && TAILQ_EMPTY(&svc->pool) &&
		    svc->unproven >= svc->window)
			return;
		upstream_unwait(c);
		if (svc->state != SVC_RUNNING) {
			conn_park(c);
			continue;
		}
		up_start(c, 1);
		if (c->upwait)		/* back first in line (up_full) */
			return;
		if (c->fd != -1 && c->upc != NULL) {
			upstream_flush(c);
			if (c->fd != -1)
				conn_update(c);
		}
	}
}

/* In arrival order (a retried request keeps its place, the first). */
static void
up_wait(struct conn *c, int first)
{
	struct service *svc = c->svc;
	struct conn *p;

	c->upwait = 1;
	if (first) {
		TAILQ_INSERT_HEAD(&svc->upwait, c, park);
		return;
	}
	TAILQ_FOREACH_REVERSE(p, &svc->upwait, parkq, park)
		if (p->seq < c->seq)
			break;
	if (p == NULL)
		TAILQ_INSERT_HEAD(&svc->upwait, c, park);
	else
		TAILQ_INSERT_AFTER(&svc->upwait, p, c, park);
}

void
upstream_unwait(struct conn *c)
{
	if (!c->upwait)
		return;
	TAILQ_REMOVE(&c->svc->upwait, c, park);
	c->upwait = 0;
}

static void
upconn_close(struct upconn *u)
{
	struct service *svc = u->svc;

	if (!u->proven && u->gen == svc->gen && svc->unproven > 0) {
		svc->unproven--;
		kick_soon(svc);
	}
	loop_timer_cancel(gw->loop, &u->timer);
	loop_close_fd(gw->loop, &u->fd);
	free(u);
}

/* The endpoint changed or went: its connections, and a new pace. */
void
upstream_pool_drop(struct service *svc)
{
	struct upconn *u;

	while ((u = TAILQ_FIRST(&svc->pool)) != NULL) {
		TAILQ_REMOVE(&svc->pool, u, entry);
		svc->npool--;
		upconn_close(u);
	}
	svc->unproven = 0;
	svc->window = PACE_WINDOW;
	kick_soon(svc);
}

/* A pooled connection idle too long, or an unproven one to check. */
static void
up_timer(struct loop *l, void *arg)
{
	struct upconn *u = arg;

	(void)l;
	if (u->c != NULL) {
		up_check(u, 1);
		return;
	}
	TAILQ_REMOVE(&u->svc->pool, u, entry);
	u->svc->npool--;
	upconn_close(u);
}

/*
 * An unproven connection: the backend's TCP has taken the request (it is
 * proven: what the service does with it is its own affair), or, at the
 * timed check, it never accepted the connection (retried), or wait more.
 */
static void
up_check(struct upconn *u, int timed)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int acked = 0, lost = u->connecting;

	if (!u->connecting && u->sent > 0 &&
	    getsockopt(u->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
		acked = ti.tcpi_bytes_acked > 1;	/* the SYN is one */
		lost = !acked && ti.tcpi_unacked > 0 &&
		    ti.tcpi_total_retrans > 0;
	}
	if (acked)
		up_proven(u);
	else if (timed && lost && loopback(u->svc))
		up_retry(u->c);
	else if (timed)
		loop_timer_at(gw->loop, &u->timer, loop_now_ms(gw->loop) +
		    PACE_CHECK_MS);
}

static void
up_proven(struct upconn *u)
{
	struct service *svc = u->svc;

	if (u->proven)
		return;
	u->proven = 1;
	loop_timer_cancel(gw->loop, &u->timer);
	if (u->c != NULL)
		xbuf_consumed(&u->c->up, u->sent);
	u->sent = 0;
	if (u->gen != svc->gen)
		return;
	if (svc->unproven > 0)
		svc->unproven--;
	if (svc->window < PACE_WINDOW)
		svc->window++;
	kick_soon(svc);
}

/* Not accepted: nothing reached the service; the request goes again. */
static void
up_retry(struct conn *c)
{
	struct upconn *u = c->upc;
	struct service *svc = c->svc;

	log_info("service=%s endpoint=%s: a connection was not accepted "
	    "within %d ms; its request goes on another", svc->id,
	    svc->endpoint, PACE_CHECK_MS);
	c->upc = NULL;
	u->c = NULL;
	if (svc->window > 1)
		svc->window /= 2;
	upconn_close(u);
	c->spool_off = 0;
	up_wait(c, 1);
	kick_soon(svc);
}

void
upstream_start(struct conn *c)
{
	up_start(c, 0);
}

/* A pooled connection, or a new one if the pace allows, else wait. */
static void
up_start(struct conn *c, int turn)
{
	struct service *svc = c->svc;
	struct upconn *u;

	if (!turn && !TAILQ_EMPTY(&svc->upwait)) {
		up_wait(c, 0);		/* behind those already waiting */
		return;
	}
	if ((u = pool_take(svc)) != NULL) {
		/*
		 * Still watched, with this callback and u: only the mask
		 * changes, lazily.  The request is written at once and
		 * reading is what the pool watched for, so the common case
		 * costs no epoll_ctl.
		 */
		u->c = c;
		c->upc = u;
		loop_mod_fd(gw->loop, u->fd, LOOP_WRITE);
	} else if (svc->unproven >= svc->window)
		up_wait(c, 0);
	else
		up_connect(c);
}

/* A new connection for c: the probe's gift if there is one. */
static void
up_connect(struct conn *c)
{
	struct service *svc = c->svc;
	struct upconn *u;
	int fd, one = 1, gift;

	if ((gift = (fd = svc->gift_fd) != -1))
		svc->gift_fd = -1;	/* connected already */
	else
		fd = socket(svc->addr.ss_family, SOCK_STREAM |
		    SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || (u = calloc(1, sizeof(*u))) == NULL) {
		log_warn("service=%s: unable to connect", svc->id);
		if (fd != -1)
			close(fd);
		conn_fail(c, 502, "unable to reach the service");
		return;
	}
	if (svc->addr.ss_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	u->fd = fd;
	u->svc = svc;
	u->gen = svc->gen;
	svc->unproven++;
	loop_timer_init(&u->timer, up_timer, u);
	loop_timer_at(gw->loop, &u->timer, loop_now_ms(gw->loop) +
	    PACE_CHECK_MS);
	u->c = c;
	c->upc = u;
	if (!gift && connect(fd, (struct sockaddr *)&svc->addr,
	    svc->addrlen) == -1) {
		if (errno == EAGAIN && svc->addr.ss_family == AF_UNIX) {
			up_full(c);
			return;
		}
		if (errno != EINPROGRESS) {
			svc->m_connect_fail++;
			if (errno == ECONNREFUSED || (errno == ENOENT &&
			    svc->addr.ss_family == AF_UNIX))
				up_refused(c);
			else
				up_eof(c, errno);
			return;
		}
		u->connecting = 1;
	}
	if (svc->addr.ss_family == AF_UNIX)
		up_proven(u);		/* in the listener's queue */
	if (loop_add_fd(gw->loop, u->fd, LOOP_WRITE, upstream_io, u) == -1) {
		upstream_release(c, 0);
		conn_fail(c, 502, "unable to reach the service");
	}
}

void
upstream_release(struct conn *c, int reuse)
{
	struct upconn *u = c->upc;
	struct service *svc = u->svc;

	c->upc = NULL;
	u->c = NULL;
	if (!reuse || !u->proven || u->gen != svc->gen ||
	    svc->state != SVC_RUNNING ||
	    svc->npool >= svc->policy.max_concurrency || gw->draining) {
		upconn_close(u);
		return;
	}
	TAILQ_INSERT_HEAD(&svc->pool, u, entry);
	svc->npool++;
	loop_mod_fd(gw->loop, u->fd, LOOP_READ);
	loop_timer_at(gw->loop, &u->timer, loop_now_ms(gw->loop) +
	    POOL_IDLE_MS);
	kick_soon(svc);		/* a waiting request takes it */
}

void
upstream_update(struct conn *c)
{
	struct upconn *u = c->upc;
	size_t room = xbuf_room(&c->out) + c->out.off;
	int m = 0;

	if (u->connecting)
		m = LOOP_WRITE;
	else {
		if (up_unsent(c) > 0 || body_pending(c))
			m |= LOOP_WRITE;
		/* the answer waits for the whole request: a body over the
		 * limit is the gateway's 413, whatever the service says */
		if (c->state == CS_FORWARD && c->req_done && !c->resp_done &&
		    (c->splicing ? splice_room(c) > 0 : room > FRAME_RESERVE))
			m |= LOOP_READ;
		if (c->state == CS_TUNNEL && !c->eof_up && room > 0)
			m |= LOOP_READ;
	}
	loop_mod_fd(gw->loop, u->fd, m);
}

/*
 * From the backend to the client: each part is written at once rather
 * than after another turn of the loop, and while a read fills all the
 * room it had and the client takes all of it, the backend is read again,
 * so that a response already in reaches the client whole, not a part a
 * turn (HAProxy's speculative reads do the same).
 */
static void
up_relay(struct conn *c, struct upconn *u)
{
	int full, ended, turns;

	for (turns = 0; turns < RELAY_TURNS; turns++) {
		full = up_read(c);
		/* judged before the flush, which may finish the exchange and
		 * start the next pipelined one, even on this upconn */
		ended = c->fd == -1 || c->upc != u || c->state != CS_FORWARD ||
		    c->resp_done;
		if (c->fd != -1 && conn_unsent(c))
			conn_flush(c);
		if (!full || ended || c->fd == -1 || conn_unsent(c))
			return;
	}
}

static void
upstream_io(struct loop *l, int fd, int mask, void *arg)
{
	struct upconn *u = arg;
	struct conn *c = u->c;

	(void)l;
	(void)fd;
	if (c == NULL) {	/* pooled: the backend closed or spoke */
		TAILQ_REMOVE(&u->svc->pool, u, entry);
		u->svc->npool--;
		upconn_close(u);
		return;
	}
	if (u->connecting) {
		if (!(mask & LOOP_WRITE))
			return;
		up_connected(c);
		if (c->fd == -1 || c->upc != u)
			return;
	}
	if (mask & LOOP_WRITE)
		up_write(c);
	if (c->fd != -1 && c->upc == u && (mask & LOOP_READ))
		up_relay(c, u);
	if (c->fd != -1)
		conn_update(c);
}

/* Sends what waits for the backend now, if it is connected. */
void
upstream_flush(struct conn *c)
{
	if (c->upc != NULL && !c->upc->connecting &&
	    (up_unsent(c) > 0 || body_pending(c)))
		up_write(c);
}

static void
up_connected(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(int), sslen = sizeof(ss);
	int err = 0;

	if (getsockopt(c->upc->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0)
		c->svc->m_connect_fail++;
	if (err == ECONNREFUSED) {
		up_refused(c);
		return;
	}
	if (err != 0) {
		up_eof(c, err);
		return;
	}
	if (getpeername(c->upc->fd, (struct sockaddr *)&ss, &sslen) == -1)
		return;		/* not yet: a stale event */
	c->upc->connecting = 0;
}

/*
 * Part of a response is in, the rest not: acknowledge now.  A backend that
 * writes its head and its body in two sends (Python's http.server does)
 * holds the second, by Nagle's algorithm, until the first is acknowledged,
 * and a reused connection is in delayed-ACK mode: without this each such
 * response waits up to 40 ms for the ACK timer.  Once per response: quick
 * ACK mode lasts until the gateway sends on the connection again.
 */
static void
up_quickack(struct conn *c)
{
	int one = 1;

	c->quickacked = 1;
	if (c->svc->addr.ss_family != AF_UNIX)
		setsockopt(c->upc->fd, IPPROTO_TCP, TCP_QUICKACK, &one,
		    sizeof(one));
}

/* Nothing was sent: back to the queue within the startup deadline. */
static void
up_refused(struct conn *c)
{
	struct service *svc = c->svc;
	uint64_t gen = c->upc->gen;

	log_debug("service=%s endpoint=%s: connection refused", svc->id,
	    svc->endpoint);
	upstream_release(c, 0);
	conn_refused(c, gen);
}

/*
 * A Unix listener's queue is full: nothing was sent.  The request waits
 * first in line; the queue is tried again PACE_CHECK_MS later, not at
 * once, which would spin until the service accepts.
 */
static void
up_full(struct conn *c)
{
	struct upconn *u = c->upc;
	struct service *svc = c->svc;

	log_debug("service=%s endpoint=%s: its queue is full", svc->id,
	    svc->endpoint);
	c->upc = NULL;
	u->c = NULL;
	if (svc->window > 1)
		svc->window /= 2;
	upconn_close(u);
	up_wait(c, 1);
	loop_timer_at(gw->loop, &svc->kick, loop_now_ms(gw->loop) +
	    PACE_CHECK_MS);
}

static void
up_write(struct conn *c)
{
	struct upconn *u = c->upc;
	size_t left;
	ssize_t n;

	while ((left = up_unsent(c)) > 0) {
		n = send(u->fd, c->up.data + c->up.off + (u->proven ? 0 :
		    u->sent), left, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n == -1) {
			up_eof(c, errno);
			return;
		}
		if (u->proven)
			xbuf_consumed(&c->up, (size_t)n);
		else
			u->sent += (size_t)n;
	}
	/* kept bytes leave no room for a streamed body: taken yet? */
	if (!u->proven && xbuf_room(&c->up) + c->up.off <= FRAME_RESERVE)
		up_check(u, 0);
	if (up_unsent(c) == 0 && body_send(c, u->fd) == -1) {
		up_eof(c, errno);
		return;
	}
	if (c->state == CS_TUNNEL) {
		if (xbuf_used(&c->up) == 0 && c->eof_client)
			shutdown(c->upc->fd, SHUT_WR);
		return;
	}
	conn_parse(c);		/* more body fits now */
}

/*
 * One read from the backend, parsed; 1 if it filled the room it had, so
 * that more may be waiting.
 */
static int
up_read(struct conn *c)
{
	size_t room = xbuf_room(&c->out) + c->out.off, want, np;
	enum http_errno e;
	ssize_t n;

	if (c->state == CS_FORWARD && !c->req_done) {
		/* not asked for: a hang-up (EPOLLHUP or ERR) while the answer
		 * waits for the whole request; the service ended it early */
		up_eof(c, ECONNRESET);
		return 0;
	}
	if (c->state == CS_FORWARD && !c->resp_done && splice_begin(c))
		return up_splice(c);
	if (c->state != CS_TUNNEL) {
		if (room <= FRAME_RESERVE || c->resp_done)
			return 0;
		room -= FRAME_RESERVE;
	}
	want = room < sizeof(scratch) ? room : sizeof(scratch);
	if (want == 0)
		return 0;
	n = read(c->upc->fd, scratch, want);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		up_eof(c, n == 0 ? 0 : errno);
		return 0;
	}
	up_proven(c->upc);
	if (c->state == CS_TUNNEL) {
		xbuf_add(&c->out, scratch, (size_t)n);
		return (size_t)n == want;
	}
	np = http_parser_execute(&c->resp, &resp_settings, scratch, (size_t)n);
	e = HTTP_PARSER_ERRNO(&c->resp);
	if (!c->resp_done && !c->quickacked && e == HPE_OK)
		up_quickack(c);
	if (c->status == 101 && c->upgrade) {
		c->resp_done = 0;
		conn_tunnel(c);
		if (np < (size_t)n)
			xbuf_add(&c->out, scratch + np, (size_t)n - np);
		return 0;
	}
	if (e == HPE_PAUSED) {
		if (np < (size_t)n)
			c->resp_close = 1;	/* bytes after the response */
		return 0;
	}
	if (e != HPE_OK) {
		log_debug("service=%s: invalid response: %s", c->svc->id,
		    http_errno_name(e));
		c->outcome = "bad_response";
		upstream_release(c, 0);
		conn_fail(c, 502, "invalid response from the service");
		return 0;
	}
	return (size_t)n == want;
}

/*
 * Body bytes from the backend onto the client's pipe (splice.c); the
 * parser counts them as it would have read them (body_identity reads no
 * byte of the body, so scratch stands for them) and ends the response;
 * 1 if the pipe filled, so that more may be waiting.
 */
static int
up_splice(struct conn *c)
{
	size_t left, part;
	ssize_t n;

	n = splice_in(c, c->upc->fd);
	if (n == -1 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		up_eof(c, n == 0 ? 0 : errno);
		return 0;
	}
	up_proven(c->upc);
	for (left = (size_t)n; left > 0; left -= part) {
		part = left < sizeof(scratch) ? left : sizeof(scratch);
		http_parser_execute(&c->resp, &resp_settings, scratch, part);
	}
	if (!c->resp_done && !c->quickacked)
		up_quickack(c);
	return splice_room(c) == 0;	/* the pipe, not the socket, ran out */
}

/* The backend closed (err 0) or failed; a body read to EOF ends here. */
static void
up_eof(struct conn *c, int err)
{
	c->eof_up = 1;
	if (c->state == CS_TUNNEL) {
		if (xbuf_used(&c->out) == 0)
			conn_abort(c, "tunnel");
		else
			loop_mod_fd(gw->loop, c->upc->fd, 0);
		return;
	}
	if (err == 0 && c->resp_started && !c->resp_done) {
		http_parser_execute(&c->resp, &resp_settings, NULL, 0);
		if (c->resp_done) {
			c->resp_close = 1;
			upstream_release(c, 0);
			return;
		}
	}
	if (c->resp_done) {
		upstream_release(c, 0);
		return;
	}
	log_debug("service=%s: backend connection ended: %s", c->svc->id,
	    err ? strerror(err) : "closed");
	c->outcome = "upstream_error";
	upstream_release(c, 0);
	if (!c->req_done && c->head_done) {
		/* a streamed body: read to its end, still held to the limit
		 * (413), then 502 (conn_body_done) */
		c->up_broken = 1;
		conn_parse(c);
		return;
	}
	conn_fail(c, 502, "the service closed the connection");
}
