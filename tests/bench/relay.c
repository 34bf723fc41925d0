/*
 * relay - the least a proxy can do, for bench/bench-floor: every client
 * connection gets a backend connection of its own, and bytes are copied
 * both ways blind: no HTTP, no routing, no limits, no log.  Whatever it
 * serves beside HAProxy on a machine is the most any proxy built the same
 * way could serve there.
 *
 *	relay [-u] PORT BACKEND_PORT
 *
 * Without -u, the loop of hk-activate: level-triggered epoll, a read and
 * then at once the send of what it read.  With -u, io_uring: a receive is
 * always posted on both sockets of a pair, its completion posts the send,
 * the send's completion the next receive, and one io_uring_enter a turn
 * submits the new requests and waits for completions.  Both listen on
 * 127.0.0.1:PORT and connect to 127.0.0.1:BACKEND_PORT.  A benchmark's
 * tool, not part of hk: it runs until killed.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/queue.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <err.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#define RELAY_BUF	65536	/* bytes a read may take */
#define RELAY_EVENTS	64	/* epoll events a turn */
#define RELAY_RING	1024	/* io_uring entries */

enum dir { C2B, B2C };
enum op { OP_RECV, OP_SEND };

/* One direction: what was read from one socket and waits for the other. */
struct half {
	struct pair	*p;
	enum dir	 dir;
	enum op		 op;	/* io_uring: what is posted */
	int		 from, to;
	char		*buf;
	size_t		 len, off;
};

struct pair {
	struct half	 h[2];		/* C2B, B2C */
	int		 dead;
	int		 posted;	/* io_uring requests in flight */
	SLIST_ENTRY(pair) dead_next;
};

static int	listener(int);
static int	backend(int);
static struct pair *pair_new(int, int);
static void	pair_free(struct pair *);
static void	run_epoll(int, int);
static void	run_uring(int, int);

int
main(int argc, char *argv[])
{
	const char *e;
	int uring = 0, port, bport;

	if (argc > 1 && strcmp(argv[1], "-u") == 0) {
		uring = 1;
		argc--, argv++;
	}
	if (argc != 3)
		errx(64, "usage: relay [-u] PORT BACKEND_PORT");
	port = strtonum(argv[1], 1, 65535, &e);
	if (e != NULL)
		errx(64, "PORT %s: %s", argv[1], e);
	bport = strtonum(argv[2], 1, 65535, &e);
	if (e != NULL)
		errx(64, "BACKEND_PORT %s: %s", argv[2], e);
	if (uring)
		run_uring(listener(port), bport);
	else
		run_epoll(listener(port), bport);
	return 0;
}

/* A TCP socket and the address 127.0.0.1:port in *a. */
static int
loopback(int port, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static int
listener(int port)
{
	struct sockaddr_in a;
	int fd, one = 1;

	if ((fd = loopback(port, &a)) == -1)
		err(71, "socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
		err(71, "SO_REUSEADDR");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == -1 ||
	    listen(fd, 1024) == -1)
		err(71, "listen on 127.0.0.1:%d", port);
	return fd;
}

/* A connection to the backend; a connect on loopback completes at once. */
static int
backend(int bport)
{
	struct sockaddr_in a;
	int fd, one = 1;

	if ((fd = loopback(bport, &a)) == -1) {
		warn("socket");
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == -1) {
		warn("connect to 127.0.0.1:%d", bport);
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static struct pair *
pair_new(int cfd, int bport)
{
	struct pair *p;
	char *c2b, *b2c;
	int bfd, one = 1;

	if ((bfd = backend(bport)) == -1) {
		close(cfd);
		return NULL;
	}
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (c2b = malloc(RELAY_BUF)) == NULL ||
	    (b2c = malloc(RELAY_BUF)) == NULL)
		err(71, "malloc");
	p->h[C2B] = (struct half){ p, C2B, OP_RECV, cfd, bfd, c2b, 0, 0 };
	p->h[B2C] = (struct half){ p, B2C, OP_RECV, bfd, cfd, b2c, 0, 0 };
	return p;
}

static void
pair_free(struct pair *p)
{
	close(p->h[C2B].from);
	close(p->h[B2C].from);
	free(p->h[C2B].buf);
	free(p->h[B2C].buf);
	free(p);
}

/* ---- epoll ------------------------------------------------------------ */

static int ep;

static void
ep_want(struct half *h, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	if (epoll_ctl(ep, op, h->from, &ev) == -1)
		err(71, "epoll_ctl");
}

/* Send what h holds; 1 when all of it went, 0 when the socket is full. */
static int
ep_flush(struct half *h)
{
	ssize_t n;

	while (h->off < h->len) {
		n = send(h->to, h->buf + h->off, h->len - h->off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		h->off += n;
	}
	h->off = h->len = 0;
	return 1;
}

/*
 * Each socket is watched through the half that reads it: for input while
 * that half holds nothing, and for room while the other half holds bytes
 * for it.  Only a send that fills a socket, or the room that frees it,
 * changes what is watched.
 */
static void
ep_arm(struct pair *p)
{
	struct half *h;
	int d;

	for (d = C2B; d <= B2C; d++) {
		h = &p->h[d];
		ep_want(h, EPOLL_CTL_MOD, (h->len == 0 ? EPOLLIN : 0) |
		    (p->h[!d].len > 0 ? EPOLLOUT : 0));
	}
}

static int
ep_event(struct half *h, uint32_t events)
{
	struct half *o = &h->p->h[!h->dir];
	ssize_t n;
	int r;

	if ((events & EPOLLOUT) && o->len > 0) {
		if ((r = ep_flush(o)) == -1)
			return -1;
		if (r == 1)
			ep_arm(h->p);
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || h->len > 0)
		return 0;
	n = recv(h->from, h->buf, RELAY_BUF, MSG_DONTWAIT);
	if (n == -1 && errno == EAGAIN)
		return 0;
	if (n <= 0)
		return -1;
	h->len = n;
	if ((r = ep_flush(h)) == 0)
		ep_arm(h->p);
	return r == -1 ? -1 : 0;
}

static void
run_epoll(int lfd, int bport)
{
	struct epoll_event ev[RELAY_EVENTS];
	SLIST_HEAD(, pair) dead = SLIST_HEAD_INITIALIZER(dead);
	struct pair *p;
	struct half *h;
	int cfd, i, n;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(71, "epoll_create1");
	ev[0] = (struct epoll_event){ .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev[0]) == -1)
		err(71, "epoll_ctl");
	for (;;) {
		if ((n = epoll_wait(ep, ev, RELAY_EVENTS, -1)) == -1 &&
		    errno != EINTR)
			err(71, "epoll_wait");
		for (i = 0; i < n; i++) {
			if ((h = ev[i].data.ptr) == NULL) {
				cfd = accept4(lfd, NULL, NULL,
				    SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (cfd == -1 ||
				    (p = pair_new(cfd, bport)) == NULL)
					continue;
				ep_want(&p->h[C2B], EPOLL_CTL_ADD, EPOLLIN);
				ep_want(&p->h[B2C], EPOLL_CTL_ADD, EPOLLIN);
				continue;
			}
			if (h->p->dead || ep_event(h, ev[i].events) == 0)
				continue;
			/* Later events of this turn may name the pair. */
			h->p->dead = 1;
			SLIST_INSERT_HEAD(&dead, h->p, dead_next);
		}
		while ((p = SLIST_FIRST(&dead)) != NULL) {
			SLIST_REMOVE_HEAD(&dead, dead_next);
			pair_free(p);
		}
	}
}

/* ---- io_uring --------------------------------------------------------- */

static struct io_uring ring;

static struct io_uring_sqe *
u_sqe(void)
{
	struct io_uring_sqe *sqe;

	while ((sqe = io_uring_get_sqe(&ring)) == NULL)
		io_uring_submit(&ring);
	return sqe;
}

static void
u_post(struct half *h, enum op op)
{
	struct io_uring_sqe *sqe = u_sqe();

	h->op = op;
	if (op == OP_RECV)
		io_uring_prep_recv(sqe, h->from, h->buf, RELAY_BUF, 0);
	else
		io_uring_prep_send(sqe, h->to, h->buf + h->off,
		    h->len - h->off, MSG_NOSIGNAL);
	io_uring_sqe_set_data(sqe, h);
	h->p->posted++;
}

static void
u_accept(int lfd)
{
	struct io_uring_sqe *sqe = u_sqe();

	io_uring_prep_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data(sqe, NULL);
}

/* The pair ends: its sockets are shut so that what is posted completes. */
static void
u_end(struct pair *p)
{
	if (!p->dead) {
		p->dead = 1;
		shutdown(p->h[C2B].from, SHUT_RDWR);
		shutdown(p->h[B2C].from, SHUT_RDWR);
	}
	if (p->posted == 0)
		pair_free(p);
}

static void
u_done(struct half *h, int res)
{
	struct pair *p = h->p;

	p->posted--;
	if (p->dead || res <= 0) {
		u_end(p);
		return;
	}
	if (h->op == OP_RECV) {
		h->len = res;
		h->off = 0;
		u_post(h, OP_SEND);
	} else if ((h->off += res) < h->len)
		u_post(h, OP_SEND);
	else
		u_post(h, OP_RECV);
}

static void
run_uring(int lfd, int bport)
{
	struct io_uring_params pa;
	struct io_uring_cqe *cqe;
	struct pair *p;
	unsigned int head, seen;
	int r;

	memset(&pa, 0, sizeof(pa));
	pa.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	if ((r = io_uring_queue_init_params(RELAY_RING, &ring, &pa)) < 0)
		errc(71, -r, "io_uring_queue_init");
	u_accept(lfd);
	for (;;) {
		if ((r = io_uring_submit_and_wait(&ring, 1)) < 0 &&
		    r != -EINTR)
			errc(71, -r, "io_uring_enter");
		seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			seen++;
			if (io_uring_cqe_get_data(cqe) != NULL) {
				u_done(io_uring_cqe_get_data(cqe), cqe->res);
				continue;
			}
			if (cqe->res >= 0 &&
			    (p = pair_new(cqe->res, bport)) != NULL) {
				u_post(&p->h[C2B], OP_RECV);
				u_post(&p->h[B2C], OP_RECV);
			}
			u_accept(lfd);
		}
		io_uring_cq_advance(&ring, seen);
	}
}
