/*
 * conn.c - the client side: accept, read and parse request heads under a
 * header deadline, dispatch, stream the request body to the backend as its
 * buffer drains, write responses and the gateway's own answers, keep-alive.
 *
 * A connection is in one state at a time and on that state's list
 * (pgbouncer).  conn.c acts, park.c decides: the dispatch asks
 * park_dispatch for a verdict and carries it out (conn_resume), and a
 * request comes back from the park by conn_resume alone.  What the backend
 * side learns of a request (a refused connect, a failure) it tells conn.c,
 * which owns the connection.  Writes happen only when the loop reports the
 * socket writable, so no path recurses.  A closed connection goes to a
 * free list with fd -1; callers test c->fd after a call that may close it.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activate.h"
#include "listen.h"
#include "log.h"

#define ACCEPT_BURST	64
/*
 * The listener hk binds hands a connection over only once its first
 * bytes are in (TCP_DEFER_ACCEPT), or after this many seconds of silence:
 * the read that follows the accept then finds the request, and a close
 * connection costs one turn of the loop less (close:16: epoll_wait per
 * request 1.1-1.2 before, 0.40-0.42 after; context switches halved).
 */
#define DEFER_ACCEPT_S	1
#define LISTEN_BACKLOG	1024

static char	gw_scratch[16384];	/* input dropped while lingering */

static struct conn *conn_new(int, const struct sockaddr_storage *);
static void	conn_reset(struct conn *);
static void	client_io(struct loop *, int, int, void *);
static void	client_read(struct conn *);
static void	client_write(struct conn *);
static void	client_eof(struct conn *);
static void	conn_timeout(struct loop *, void *);
static void	conn_set_state(struct conn *, enum conn_state);
static void	conn_answer(struct conn *, int, const char *, int);
static void	conn_dispatch(struct conn *);
static void	conn_admit(struct conn *);
static void	conn_go(struct conn *);
static void	conn_facts(struct conn *);
static void	conn_parse_error(struct conn *);
static void	conn_body_done(struct conn *);
static size_t	parse_room(const struct conn *, size_t);
static void	accept_resume(struct loop *, void *);
static void	conn_linger(struct conn *);
static size_t	skip_crlf(struct conn *);
static int	client_wants_read(const struct conn *);
static size_t	lex_ahead(struct conn *, size_t);
static void	answer_begin(struct conn *, int);
static void	answer_end(struct conn *, int);
static int	proxy_front(struct conn *);
static void	proxy_refuse(struct conn *, const char *);

static void
conn_set_state(struct conn *c, enum conn_state s)
{
	TAILQ_REMOVE(&gw->conns[c->state], c, entry);
	gw->nconns[c->state]--;
	c->state = s;
	TAILQ_INSERT_TAIL(&gw->conns[s], c, entry);
	gw->nconns[s]++;
}

size_t
conn_count(void)
{
	size_t n = 0;
	int i;

	for (i = 0; i < CS_COUNT; i++)
		n += gw->nconns[i];
	return n;
}

/*
 * The client listener: the one systemd passed, else bound, with a
 * deferred accept.  -1 with a reason; *bad tells a wrong address (a
 * configuration error) from a failed call.
 */
int
conn_listen(const char *addr, char *err, size_t errlen, int *bad)
{
	socklen_t len = sizeof(int);
	int fd, secs = 0;

	*bad = 0;
	if ((fd = listen_inherit()) == -2) {
		snprintf(err, errlen, "inherited fd 3: %s", strerror(errno));
		return -1;
	}
	if (fd != -1)
		log_info("listening on the inherited socket (fd 3); "
		    "serverless_listen is ignored");
	else if ((fd = listen_tcp(addr, LISTEN_BACKLOG, err, errlen,
	    bad)) != -1) {
		(void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT,
		    &(int){ DEFER_ACCEPT_S }, sizeof(int));
		log_info("listening on %s", addr);
	}
	gw->lfd_deferred = fd != -1 && getsockopt(fd, IPPROTO_TCP,
	    TCP_DEFER_ACCEPT, &secs, &len) == 0 && secs > 0;
	return fd;
}

static void
accept_resume(struct loop *l, void *arg)
{
	(void)arg;
	if (gw->lfd != -1)
		loop_mod_fd(l, gw->lfd, LOOP_READ);
}

void
conn_accept(struct loop *l, int fd, int mask, void *arg)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct conn *c;
	int i, cfd, one = 1;

	(void)mask;
	(void)arg;
	for (i = 0; i < ACCEPT_BURST; i++) {
		len = sizeof(ss);
		cfd = accept4(fd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				log_warn("unable to accept");
				loop_mod_fd(l, fd, 0);
				loop_timer_init(&gw->accept_timer,
				    accept_resume, NULL);
				loop_timer_at(l, &gw->accept_timer,
				    loop_now_ms(l) + 100);
			}
			return;
		}
		setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((c = conn_new(cfd, &ss)) == NULL) {
			log_warn("unable to take a connection");
			return;
		}
		/*
		 * A deferred accept comes with the request: read it at once
		 * rather than one turn of the loop later.  Without (a
		 * listener inherited as it is), the read would mostly find
		 * EAGAIN (93-96% at close:16).
		 */
		if (gw->lfd_deferred)
			client_io(l, cfd, LOOP_READ, c);
	}
}

/* A connection for the accepted fd; NULL, with fd closed, if none can be. */
static struct conn *
conn_new(int fd, const struct sockaddr_storage *ss)
{
	struct conn *c;

	if ((c = TAILQ_FIRST(&gw->free_conns)) != NULL) {
		TAILQ_REMOVE(&gw->free_conns, c, entry);
		gw->nfree--;
	} else if ((c = malloc(sizeof(*c))) == NULL) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->state = CS_IDLE;
	c->upc = NULL;
	c->in_off = c->in_len = 0;
	http_lex_init(&c->lex);
	c->lexed = 0;
	c->parsed = 0;
	c->spool_fd = -1;
	c->spool_len = c->spool_off = 0;
	c->pipe_r = c->pipe_w = -1;
	c->piped = 0;
	c->splicing = c->pipe_full = 0;
	xbuf_reset(&c->up);
	xbuf_reset(&c->out);
	loop_timer_init(&c->timer, conn_timeout, c);
	proxyproto_ntop((const struct sockaddr *)ss, c->peer, sizeof(c->peer));
	memcpy(c->client, c->peer, sizeof(c->client));
	c->trusted = c->proxy_wait = proxyproto_nets_match(&gw->trusted,
	    (const struct sockaddr *)ss);
	c->sniff = !c->trusted;
	c->proxy_local = 0;
	TAILQ_INSERT_TAIL(&gw->conns[CS_IDLE], c, entry);
	gw->nconns[CS_IDLE]++;
	conn_reset(c);
	if (loop_add_fd(gw->loop, fd, LOOP_READ, client_io, c) == -1) {
		conn_close(c);
		return NULL;
	}
	loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) +
	    HEADER_TIMEOUT_MS);
	return c;
}

/* Per request: everything but the socket and its read-ahead. */
static void
conn_reset(struct conn *c)
{
	c->head_done = c->req_done = c->resp_started = c->resp_done = 0;
	c->keepalive = c->chunked_in = c->chunked_out = c->expect100 = 0;
	c->upgrade = c->close_after = c->counted = c->head_sent = 0;
	c->resp_close = c->resp_nobody = c->sent_100 = c->eof_client = 0;
	c->eof_up = c->cold = c->interim = c->overlimit = 0;
	c->parse_paused = c->bad = c->linger = c->buffering = 0;
	c->up_broken = c->upwait = c->quickacked = 0;
	c->refuse = 0;
	http_lex_next(&c->lex);	/* the previous request has ended */
	body_close(c);
	splice_end(c);
	c->outcome = NULL;
	c->svc = NULL;
	c->strip = 0;
	c->head_bytes = 0;
	c->body_len = 0;
	c->wait_us = c->t_park_us = c->wake_id = 0;
	c->page_at = 0;
	c->bytes_in = c->bytes_out = 0;
	c->status = 0;
	c->method[0] = c->host[0] = c->path[0] = '\0';
	http_head_reset(&c->head);
	http_parser_init(&c->req, HTTP_REQUEST);
	c->req.data = c;
}

void
conn_close(struct conn *c)
{
	if (c->fd == -1)
		return;
	loop_timer_cancel(gw->loop, &c->timer);
	if (c->state == CS_PARKED)
		park_unlink(c);
	upstream_unwait(c);
	if (c->upc != NULL)
		upstream_release(c, 0);
	park_release(c);
	body_close(c);
	splice_end(c);
	loop_close_fd(gw->loop, &c->fd);
	TAILQ_REMOVE(&gw->conns[c->state], c, entry);
	gw->nconns[c->state]--;
	TAILQ_INSERT_HEAD(&gw->free_conns, c, entry);
	gw->nfree++;
	if (gw->draining && conn_count() == 0)
		loop_stop(gw->loop);
}

/* Ends a request without an answer: recorded, then the socket closed. */
void
conn_abort(struct conn *c, const char *outcome)
{
	if (c->outcome == NULL)
		c->outcome = outcome;
	if (c->head_done) {
		stats_request(c);
		records_add(c, c->outcome);
	}
	conn_close(c);
}

/*
 * A failure after dispatch: the gateway's answer while the response has
 * not started, else the connection is closed (the only signal left).
 */
void
conn_fail(struct conn *c, int status, const char *msg)
{
	if (c->resp_started) {
		conn_abort(c, c->outcome != NULL ? c->outcome : "cut");
		return;
	}
	c->close_after = 1;
	conn_answer(c, status, msg, 0);
}

static void
conn_answer(struct conn *c, int status, const char *msg, int retry)
{
	answer_begin(c, status);
	answer_end(c, emit_answer(&c->out, status, msg, retry,
	    c->close_after, c->head_done && c->req.method == HTTP_HEAD));
}

/* The same with an HTML body (the waiting page). */
void
conn_answer_html(struct conn *c, int status, const char *body, size_t len,
    int retry)
{
	answer_begin(c, status);
	answer_end(c, emit_answer_html(&c->out, status, body, len, retry,
	    c->close_after, c->head_done && c->req.method == HTTP_HEAD));
}

/* The request ends here: what it holds is let go, the answer decided. */
static void
answer_begin(struct conn *c, int status)
{
	upstream_unwait(c);
	if (c->upc != NULL)
		upstream_release(c, 0);
	if (c->state == CS_PARKED)
		park_unlink(c);
	if (c->head_done && !c->chunked_in && c->body_len == 0 && !c->upgrade)
		c->req_done = 1;	/* no body: a next request may follow */
	if (status == 400 || status == 408 || status == 413 || status == 431 ||
	    !c->keepalive || c->upgrade || gw->draining ||
	    (!c->req_done && (c->chunked_in || c->body_len > 0)))
		c->close_after = 1;
	if (c->outcome == NULL)
		c->outcome = status == 504 || status == 408 ? "timeout" :
		    "rejected";
	c->status = status;
	stats_answer(status);
}

/* r: how writing the answer went (-1: it did not fit). */
static void
answer_end(struct conn *c, int r)
{
	if (r == -1) {
		conn_abort(c, c->outcome);
		return;
	}
	c->resp_started = c->resp_done = 1;
	conn_set_state(c, CS_ANSWER);
	loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) +
	    WRITE_TIMEOUT_MS);
	conn_update(c);
}

/*
 * The client socket is read whenever its bytes have room: a request head,
 * a body, or, while a request waits or is with the backend, to see the
 * client leave (EOF or reset) and free what its request holds at once.
 * Bytes of a next request wait in in[] (up to IN_SIZE).
 */
static int
client_wants_read(const struct conn *c)
{
	switch (c->state) {
	case CS_ANSWER:
		return c->linger;
	case CS_TUNNEL:
		return !c->eof_client && xbuf_room(&c->up) + c->up.off > 0;
	default:
		return c->in_len - c->in_off < IN_SIZE;
	}
}

/* Response bytes still to go to the client, copied or on the pipe. */
int
conn_unsent(const struct conn *c)
{
	return xbuf_used(&c->out) > 0 || c->piped > 0;
}

void
conn_update(struct conn *c)
{
	int m = 0;

	if (client_wants_read(c))
		m = LOOP_READ;
	if (conn_unsent(c))
		m |= LOOP_WRITE;
	loop_mod_fd(gw->loop, c->fd, m);
	if (c->upc != NULL)
		upstream_update(c);
}

static void
client_io(struct loop *l, int fd, int mask, void *arg)
{
	struct conn *c = arg;

	(void)l;
	(void)fd;
	if (mask & LOOP_WRITE)
		client_write(c);
	if (c->fd != -1 && (mask & LOOP_READ)) {
		client_read(c);
		if (c->fd != -1)
			upstream_flush(c);
	}
	if (c->fd != -1)
		conn_update(c);
}

/* Writes what waits for the client now (called from the backend side). */
void
conn_flush(struct conn *c)
{
	client_write(c);
}

static void
client_read(struct conn *c)
{
	size_t room;
	ssize_t n;

	if (c->linger) {
		n = read(c->fd, gw_scratch, sizeof(gw_scratch));
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			conn_close(c);
		return;
	}
	if (c->in_off > 0) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	if (c->state == CS_TUNNEL) {
		room = xbuf_room(&c->up) + c->up.off;
		n = room == 0 ? -2 : read(c->fd, c->in, room < IN_SIZE ?
		    room : IN_SIZE);
		if (n > 0)
			xbuf_add(&c->up, c->in, (size_t)n);
	} else {
		room = IN_SIZE - c->in_len;
		n = room == 0 ? -2 : read(c->fd, c->in + c->in_len, room);
	}
	if (n == -2 || (n == -1 && (errno == EAGAIN || errno == EINTR)))
		return;
	if (n <= 0) {
		client_eof(c);
		return;
	}
	if (c->state == CS_TUNNEL)
		return;
	c->in_len += (size_t)n;
	if ((c->proxy_wait || c->sniff) && proxy_front(c) != 1)
		return;
	if (c->state == CS_IDLE && skip_crlf(c) == 0)
		return;		/* only line ends after a request */
	if (c->state == CS_IDLE) {
		conn_set_state(c, CS_HEAD);
		c->t_start_us = loop_clock_us();
		c->at_ms = wall_ms();
		loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) +
		    HEADER_TIMEOUT_MS);
	}
	conn_parse(c);
}

/*
 * trusted_proxies (hakopod.toml(5)): 0, or -1 with a reason.  Read at
 * the start and on SIGHUP; a connection keeps what held when it came.
 */
int
conn_trust_load(char *err, size_t errlen)
{
	struct proxyproto_nets nets;

	if (proxyproto_nets_parse(gw->cfg.trusted_proxies, &nets, err,
	    errlen) == -1)
		return -1;
	gw->trusted = nets;
	return 0;
}

/*
 * Before the first request of a connection: a trusted proxy's PROXY v2
 * header is read (in as many pieces as it comes in) and names the
 * client; anyone else's PROXY header is refused, so that no client can
 * pass for another.  1 go on, 0 more bytes needed, -1 closed.
 */
static int
proxy_front(struct conn *c)
{
	const unsigned char *p = (const unsigned char *)c->in + c->in_off;
	char err[PROXYPROTO_ERR_LEN];
	struct proxyproto pp;
	int r;

	if (c->sniff) {
		if ((r = proxyproto_sniff(p, c->in_len - c->in_off)) == -1)
			return 0;
		c->sniff = 0;
		if (r == 0)
			return 1;
		proxy_refuse(c, "a PROXY header from an untrusted peer");
		return -1;
	}
	r = proxyproto_parse(p, c->in_len - c->in_off, &pp, err, sizeof(err));
	if (r == 0)
		return 0;
	if (r == -1) {
		proxy_refuse(c, err);
		return -1;
	}
	c->proxy_wait = 0;
	c->in_off += (size_t)r;
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	if (!pp.local)	/* LOCAL: the proxy's own check, for itself */
		proxyproto_ntop((struct sockaddr *)&pp.src, c->client,
		    sizeof(c->client));
	else
		c->proxy_local = 1;
	return 1;
}

static void
proxy_refuse(struct conn *c, const char *why)
{
	gw->proxy_refused++;
	log_warnx("peer=%s: connection refused: %s%s", c->peer, why,
	    c->trusted ? " (a trusted proxy must send a PROXY v2 header)" :
	    "");
	conn_close(c);
}

static void
client_eof(struct conn *c)
{
	c->eof_client = 1;
	switch (c->state) {
	case CS_TUNNEL:
		if (c->upc != NULL && xbuf_used(&c->up) == 0)
			shutdown(c->upc->fd, SHUT_WR);
		if (c->eof_up || c->upc == NULL)
			conn_abort(c, "ok");
		break;
	case CS_IDLE:
	case CS_HEAD:
	case CS_ANSWER:
		conn_close(c);
		break;
	default:
		conn_abort(c, "client_closed");
		break;
	}
}

static void
client_write(struct conn *c)
{
	ssize_t n;

	if (c->linger)
		return;
	while (xbuf_used(&c->out) > 0) {
		n = send(c->fd, c->out.data + c->out.off, xbuf_used(&c->out),
		    MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n == -1) {
			conn_abort(c, "client_closed");
			return;
		}
		c->bytes_out += (uint64_t)n;
		xbuf_consumed(&c->out, (size_t)n);
	}
	if (xbuf_used(&c->out) > 0)
		return;
	/* a spliced body follows what c->out held of it */
	if (c->piped > 0 && splice_out(c) == -1) {
		conn_abort(c, "client_closed");
		return;
	}
	if (c->piped > 0)
		return;
	if (c->state == CS_TUNNEL) {
		if (c->eof_up)
			conn_abort(c, "ok");
		return;
	}
	if (c->resp_done && c->state != CS_IDLE && c->state != CS_HEAD)
		conn_finish(c);
}

/*
 * Line ends between requests are not a request yet (the parser skips
 * them too); what is left of the read-ahead after them.
 */
static size_t
skip_crlf(struct conn *c)
{
	size_t from = c->in_off, n;

	while (c->in_off < c->in_len && (c->in[c->in_off] == '\r' ||
	    c->in[c->in_off] == '\n'))
		c->in_off++;
	/* line ends the lexer has not seen are skipped for it too */
	n = c->in_off - from;
	if (n > c->lexed)
		http_lex_skip(&c->lex, n - c->lexed);
	c->lexed = c->lexed > n ? c->lexed - n : 0;
	c->parsed += n;
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	return c->in_len - c->in_off;
}

/*
 * What the parser may take now: a whole head; body bytes as long as the
 * backend's buffer has room for them re-framed (a streamed body); all of
 * a body read whole (request_buffering), while parked or before it goes.
 */
static size_t
parse_room(const struct conn *c, size_t avail)
{
	size_t room;

	if (!c->head_done)
		return avail;
	if (c->req_done)
		return 0;
	if (c->buffering)
		return c->state == CS_PARKED || c->state == CS_BODY ?
		    avail : 0;
	if (c->up_broken)
		return avail;
	if (c->state != CS_FORWARD || !c->head_sent)
		return 0;
	room = xbuf_room(&c->up) + c->up.off;
	if (room <= FRAME_RESERVE)
		return 0;
	return avail < room - FRAME_RESERVE ? avail : room - FRAME_RESERVE;
}

/*
 * The strict lexer (lib/http_lex.c) checks in[] ahead of the parser: how
 * much of want the parser may be given.  A refusal sets c->refuse.
 */
static size_t
lex_ahead(struct conn *c, size_t want)
{
	size_t used;
	int r;

	if (c->lexed < want) {
		r = http_lex(&c->lex, c->in + c->in_off + c->lexed,
		    want - c->lexed, &used);
		c->lexed += used;
		if (r != 0) {
			c->refuse = r;
			return 0;
		}
	}
	return c->lexed < want ? c->lexed : want;
}

/*
 * Feeds the parser what the next stage can take (parse_room), once the
 * lexer has found it well-formed.  The parser and the lexer must end each
 * message at the same byte; if they ever disagree, the framing is
 * ambiguous and the connection is refused.
 */
void
conn_parse(struct conn *c)
{
	size_t avail, give, n;
	enum http_errno e;
	int in_head;

	while (c->fd != -1 && (avail = c->in_len - c->in_off) > 0) {
		if (!c->head_done && c->state == CS_IDLE) {
			conn_set_state(c, CS_HEAD);
			c->t_start_us = loop_clock_us();
			c->at_ms = wall_ms();
		}
		if ((give = parse_room(c, avail)) == 0)
			return;
		give = lex_ahead(c, give);
		if (c->refuse != 0) {
			conn_parse_error(c);
			return;
		}
		if (give == 0)
			return;
		in_head = !c->head_done;
		n = http_parser_execute(&c->req, &req_settings,
		    c->in + c->in_off, give);
		c->in_off += n;
		c->lexed -= n;
		c->parsed += n;
		e = HTTP_PARSER_ERRNO(&c->req);
		if (in_head)
			c->head_bytes += n;
		if (e == HPE_PAUSED) {
			http_parser_pause(&c->req, 0);
			if (c->req_done) {
				conn_body_done(c);
				return;
			}
			conn_dispatch(c);
			continue;
		}
		if (e != HPE_OK || c->head.overflow ||
		    (!c->head_done && c->head_bytes > HEAD_MAX)) {
			conn_parse_error(c);
			return;
		}
		if (n < give)
			return;		/* after an upgrade request */
	}
}

/*
 * The request is whole.  A body read whole goes on now if its endpoint is
 * known; a parked one waits for the wake under its startup deadline only.
 */
static void
conn_body_done(struct conn *c)
{
	if (c->parsed != c->lex.msg_end) {
		log_warnx("peer=%s: the parser and the lexer disagree on the "
		    "end of a request", c->peer);
		c->refuse = 400;
		conn_parse_error(c);
		return;
	}
	if (c->up_broken)
		conn_fail(c, 502, "the service closed the connection");
	else if (c->state == CS_BODY)
		conn_forward(c);
	else if (c->state == CS_PARKED)
		park_timer(c);
}

/*
 * A routed request within its limits.  A body to be read whole is taken
 * from now on, under the request deadline, while its service wakes if it
 * must; the gateway sends the 100 Continue a client may wait for.
 */
static void
conn_admit(struct conn *c)
{
	struct service *svc = c->svc;

	c->buffering = svc->policy.request_buffering && !c->upgrade &&
	    (c->chunked_in || c->body_len > 0);
	if (!c->buffering)
		return;
	c->body_deadline = loop_now_ms(gw->loop) +
	    (int64_t)svc->policy.request_timeout_seconds * 1000;
	if (c->expect100 && !c->sent_100) {
		xbuf_add(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		c->sent_100 = 1;
	}
}

/* The endpoint is known: forward now, or once the body is whole. */
static void
conn_go(struct conn *c)
{
	if (!c->buffering || c->req_done) {
		conn_forward(c);
		return;
	}
	if (c->state == CS_PARKED)
		park_unlink(c);
	conn_set_state(c, CS_BODY);
	loop_timer_at(gw->loop, &c->timer, c->body_deadline);
	conn_parse(c);
	if (c->fd != -1)
		conn_update(c);
}

static void
conn_parse_error(struct conn *c)
{
	if (c->overlimit || c->refuse == 413) {
		c->outcome = "too_large";
		conn_fail(c, 413, "request body too large");
	} else if (c->refuse == 505) {
		c->outcome = "bad_request";
		conn_fail(c, 505, "only HTTP/1.x is served");
	} else if (c->refuse == 503) {
		c->outcome = "unavailable";
		conn_fail(c, 503, "unable to keep the request body");
	} else if (c->refuse == 400) {
		c->outcome = "bad_request";
		conn_fail(c, 400, "malformed request");
	} else if (http_head_error(&c->head, c->head_bytes,
	    c->head_done) == 431)
		conn_fail(c, 431, "request header fields too large");
	else {
		c->outcome = "bad_request";
		conn_fail(c, 400, "malformed request");
	}
}

/* What the records keep and the dispatch needs, from a complete head. */
static void
conn_facts(struct conn *c)
{
	const struct http_head *h = &c->head;

	strlcpy(c->method, http_method_str(c->req.method), sizeof(c->method));
	http_request_host(h, c->host, sizeof(c->host));
	http_request_path(h->buf + h->url_off, h->url_len, c->path,
	    sizeof(c->path));
	c->keepalive = http_should_keep_alive(&c->req);
	c->chunked_in = (c->req.flags & F_CHUNKED) != 0;
	c->body_len = (c->req.flags & F_CONTENTLENGTH) ?
	    c->req.content_length : 0;
	c->upgrade = c->req.upgrade;
	c->expect100 = http_expects_continue(h, &c->req);
}

static void
conn_dispatch(struct conn *c)
{
	struct park_verdict v;
	int st;

	conn_facts(c);
	c->seq = ++gw->seq;
	http_lex_body(&c->lex, c->upgrade ? HTTP_LEX_STOP : c->chunked_in ?
	    HTTP_LEX_CHUNKED : c->body_len > 0 ? HTTP_LEX_LENGTH :
	    HTTP_LEX_NONE, c->body_len, gw->cfg.max_body_bytes >= 0 ?
	    (uint64_t)gw->cfg.max_body_bytes : UINT64_MAX);
	if (c->head.overflow) {
		conn_fail(c, 431, "request header fields too large");
		return;
	}
	if ((st = http_check_request(&c->head, &c->req)) != 0) {
		c->outcome = "bad_request";
		conn_fail(c, st, st == 405 ? "CONNECT is not served" :
		    "malformed request framing");
		return;
	}
	if (gw->draining)
		c->close_after = 1;
	park_dispatch(c, &v);
	if (v.kind != PARK_ANSWER)
		conn_admit(c);		/* its slots are taken */
	conn_resume(c, &v);
}

/*
 * A verdict of the park carried out: the gateway's answer, the request
 * forwarded (or its body read first), or parked.  The one way back from
 * park.c: a request leaves the queue by it, whatever the outcome, once
 * park.c has taken it off (park_unlink); the dispatch uses it too.
 */
void
conn_resume(struct conn *c, const struct park_verdict *v)
{
	switch (v->kind) {
	case PARK_ANSWER:
		if (v->outcome != NULL)
			c->outcome = v->outcome;
		conn_answer(c, v->status, v->msg, v->retry);
		break;
	case PARK_FORWARD:
		conn_go(c);
		break;
	case PARK_WAIT:
		conn_park(c);
		break;
	}
}

/*
 * The request waits for its endpoint: dispatched to a service not ready,
 * or back from the backend side (conn_refused, an endpoint gone).
 */
void
conn_park(struct conn *c)
{
	conn_set_state(c, CS_PARKED);
	park_enter(c);
	if (c->fd != -1)
		conn_update(c);
}

/*
 * The backend refused the connection before a byte was sent (upstream.c):
 * not a request yet.  The park learns that the endpoint is gone, and the
 * request parks again within its startup deadline.
 */
void
conn_refused(struct conn *c, uint64_t gen)
{
	park_refused(c->svc, gen);
	if (loop_now_ms(gw->loop) < c->start_deadline)
		conn_park(c);
	else
		conn_fail(c, 502, "the service refused the connection");
}

/* The endpoint is known: the request goes to the backend, once. */
void
conn_forward(struct conn *c)
{
	struct service *svc = c->svc;
	int r;

	if (c->state == CS_PARKED)
		park_unlink(c);
	conn_set_state(c, CS_FORWARD);
	if (!c->head_sent) {
		if ((r = emit_request(c, &c->up)) != 0) {
			if (r == -2)
				conn_parse_error(c);	/* c->refuse */
			else
				conn_fail(c, 431,
				    "request header fields too large");
			return;
		}
		c->head_sent = 1;
	}
	loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) +
	    (int64_t)svc->policy.request_timeout_seconds * 1000);
	http_parser_init(&c->resp, HTTP_RESPONSE);
	c->resp.data = c;
	upstream_start(c);
	if (c->fd == -1 || c->state != CS_FORWARD)
		return;
	if (c->expect100 && !c->sent_100 && !c->req_done &&
	    (c->chunked_in || c->body_len > 0)) {
		xbuf_add(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		c->sent_100 = 1;
	}
	conn_parse(c);
	if (c->fd != -1)
		upstream_flush(c);
	if (c->fd != -1)
		conn_update(c);
}

/* After a 101: bytes both ways, no deadline, still an active request. */
void
conn_tunnel(struct conn *c)
{
	conn_set_state(c, CS_TUNNEL);
	loop_timer_cancel(gw->loop, &c->timer);
	if (c->in_len > c->in_off) {
		xbuf_add(&c->up, c->in + c->in_off, c->in_len - c->in_off);
		c->in_off = c->in_len = 0;
	}
	c->outcome = "tunnel";
}

/* The response is out: record, release, then keep-alive or close. */
void
conn_finish(struct conn *c)
{
	int reuse;

	if (c->head_done) {
		stats_request(c);
		records_add(c, c->outcome != NULL ? c->outcome : "ok");
	}
	park_release(c);
	if (c->upc != NULL) {
		reuse = c->state == CS_FORWARD && c->req_done &&
		    xbuf_used(&c->up) == 0 && !body_pending(c) &&
		    !c->resp_close && http_should_keep_alive(&c->resp);
		upstream_release(c, reuse);
	}
	if (c->close_after || !c->req_done || !c->keepalive || gw->draining) {
		if (c->state == CS_ANSWER)
			conn_linger(c);
		else
			conn_close(c);
		return;
	}
	conn_reset(c);
	conn_set_state(c, CS_IDLE);
	loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) +
	    KEEPALIVE_TIMEOUT_MS);
	if (skip_crlf(c) > 0) {
		loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) +
		    HEADER_TIMEOUT_MS);
		conn_parse(c);
	}
	if (c->fd != -1)
		conn_update(c);
}

/*
 * After an answer that closes the connection, input the client may still
 * be sending is read and dropped for a while: closing with unread input
 * would reset the connection and lose the answer on the way.
 */
static void
conn_linger(struct conn *c)
{
	c->linger = 1;
	c->in_off = c->in_len = 0;
	shutdown(c->fd, SHUT_WR);
	loop_timer_at(gw->loop, &c->timer, loop_now_ms(gw->loop) + LINGER_MS);
	conn_update(c);
}

static void
conn_timeout(struct loop *l, void *arg)
{
	struct conn *c = arg;

	(void)l;
	switch (c->state) {
	case CS_IDLE:
		conn_close(c);
		break;
	case CS_HEAD:
		c->keepalive = 0;
		conn_answer(c, 408, "request head not received in time", 0);
		break;
	case CS_BODY:
		c->outcome = "timeout";
		conn_answer(c, 408, "request body not received in time", 0);
		break;
	case CS_PARKED:
		if (c->buffering && !c->req_done &&
		    loop_now_ms(gw->loop) >= c->body_deadline) {
			c->outcome = "timeout";
			conn_answer(c, 408, "request body not received in time",
			    0);
			break;
		}
		if (c->page_at != 0 && loop_now_ms(gw->loop) >= c->page_at &&
		    loop_now_ms(gw->loop) < c->start_deadline) {
			page_answer(c);
			break;
		}
		if (!ctl_scale_up()) {	/* hk-scale never came back */
			c->outcome = "unavailable";
			conn_answer(c, 503, "activation unavailable", 1);
			break;
		}
		c->outcome = "startup_timeout";
		conn_answer(c, 504, "startup deadline exceeded", 0);
		break;
	case CS_FORWARD:
		c->outcome = "request_timeout";
		conn_fail(c, 504, "request deadline exceeded");
		break;
	case CS_ANSWER:
		if (c->linger) {
			conn_close(c);
			break;
		}
		/* FALLTHROUGH */
	default:
		conn_abort(c, "timeout");
		break;
	}
}

/* Draining: idle keep-alive connections go at once. */
void
conn_close_idle(void)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&gw->conns[CS_IDLE])) != NULL)
		conn_close(c);
}

/*
 * From the before-sleep hook, never from a callback (one may still hold a
 * closed connection): the free list is cut back to FREE_CONNS_MAX.
 */
void
conn_trim(void)
{
	struct conn *c;

	while (gw->nfree > FREE_CONNS_MAX &&
	    (c = TAILQ_LAST(&gw->free_conns, connq)) != NULL) {
		TAILQ_REMOVE(&gw->free_conns, c, entry);
		gw->nfree--;
		free(c);
	}
}

void
conn_free_all(void)
{
	struct conn *c;
	int i;

	for (i = 0; i < CS_COUNT; i++)
		while ((c = TAILQ_FIRST(&gw->conns[i])) != NULL)
			conn_close(c);
	while ((c = TAILQ_FIRST(&gw->free_conns)) != NULL) {
		TAILQ_REMOVE(&gw->free_conns, c, entry);
		gw->nfree--;
		free(c);
	}
}
