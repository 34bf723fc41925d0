/*
 * ingest.c - events.sock: datagrams in, records checked (record.c), kept
 * (events in a bounded array, request records packed as they are read,
 * lib/reqbatch.h) and written to the store in one transaction per
 * batch, from the loop's before-sleep hook: when EV_FLUSH_RECORDS wait
 * or the oldest has waited EV_FLUSH_MS.  A store that fails is retried
 * every EV_RETRY_MS while at most EV_PENDING_MAX records of each kind
 * wait; more are dropped and counted.  Retention runs on its own timer.
 *
 * Senders are never waited for (lib/evsink.c): what this side cannot take
 * at once, their kernel queue refuses, and they count it.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "events.h"
#include "ipc.h"
#include "log.h"

#define EV_RCVBUF	(4 * 1024 * 1024)
#define EV_KEEP_BYTES	(1024 * 1024)	/* of packed records, kept between batches */

static void	on_read(struct loop *, int, int, void *);
static int	sender_allowed(struct msghdr *);
static void	take(struct evd *, const char *, size_t);
static void	take_event(struct evd *, const json_t *);
static void	take_requests(struct evd *, const json_t *);
static void	took(struct evd *, const struct rec_sink *, const char *);
static size_t	waiting_records(const struct evd *);
static void	log_event(const struct store_event *);
static void	waiting(struct evd *);
static void	flush_due(struct loop *, void *);
static void	flush_failed(struct evd *);
static void	clear_events(struct evd *);
static void	clear_requests(struct evd *);

int
ingest_listen(struct evd *d, char *err, size_t errlen)
{
	int one = 1, size = EV_RCVBUF;

	reqbatch_build_init(&d->rq);
	if ((d->ev = calloc(EV_PENDING_MAX, sizeof(*d->ev))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	loop_timer_init(&d->flush_timer, flush_due, d);
	loop_timer_init(&d->prune_timer, ingest_prune, d);
	if ((size_t)snprintf(d->sock_path, sizeof(d->sock_path),
	    "%s/events.sock", d->cfg.runtime_dir) >= sizeof(d->sock_path)) {
		snprintf(err, errlen, "%s: path too long", d->cfg.runtime_dir);
		return -1;
	}
	if ((d->fd = ipc_listen(d->sock_path, SOCK_DGRAM, err,
	    errlen)) == -1)
		return -1;
	if (setsockopt(d->fd, SOL_SOCKET, SO_PASSCRED, &one,
	    sizeof(one)) == -1) {
		snprintf(err, errlen, "SO_PASSCRED: %s", strerror(errno));
		return -1;
	}
	/* More room for bursts while a batch is written; best effort. */
	(void)setsockopt(d->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (loop_add_fd(d->loop, d->fd, LOOP_READ, on_read, d) == -1) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	/* Retention once at start, then every EV_PRUNE_MS. */
	loop_timer_at(d->loop, &d->prune_timer, loop_now_ms(d->loop));
	return 0;
}

/* At exit: one last write of what waits, then the socket goes. */
void
ingest_close(struct evd *d)
{
	if (d->fd != -1) {
		loop_del_fd(d->loop, d->fd);
		close(d->fd);
		unlink(d->sock_path);
		d->fd = -1;
	}
	if (waiting_records(d) > 0 && d->store != NULL &&
	    ingest_flush(d) == -1)
		log_warnx("%zu records not written at exit",
		    waiting_records(d));
	clear_events(d);
	free(d->ev);
	d->ev = NULL;
	reqbatch_build_free(&d->rq);
}

/* Root, our own uid and our group, as on every other socket (ipc.h). */
static int
sender_allowed(struct msghdr *mh)
{
	struct cmsghdr *c;
	struct ucred cred;

	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SCM_CREDENTIALS ||
		    c->cmsg_len < CMSG_LEN(sizeof(cred)))
			continue;
		memcpy(&cred, CMSG_DATA(c), sizeof(cred));
		return ipc_sender_allowed(&cred);
	}
	return 0;
}

/*
 * Reads a burst of datagrams; stops early once a batch is due, so that
 * the before-sleep hook writes it (epoll is level-triggered: the rest
 * waits in the socket).
 */
static void
on_read(struct loop *l, int fd, int mask, void *arg)
{
	struct evd *d = arg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(struct ucred))];
	} cm;
	struct iovec iov;
	struct msghdr mh;
	ssize_t n;
	int i;

	(void)l;
	(void)mask;
	for (i = 0; i < EV_READ_BURST; i++) {
		if (!d->failing && waiting_records(d) >= EV_FLUSH_RECORDS)
			break;
		iov.iov_base = d->rbuf;
		iov.iov_len = IPC_MSG_MAX + 1;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		if ((n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_TRUNC)) == -1) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("unable to receive on %s",
				    d->sock_path);
			return;
		}
		d->st.datagrams++;
		if (!sender_allowed(&mh)) {
			d->st.refused++;
			log_debug("datagram refused: sender of another uid");
		} else if ((size_t)n > IPC_MSG_MAX) {
			d->st.malformed++;
			log_debug("datagram refused: over %d bytes",
			    IPC_MSG_MAX);
		} else
			take(d, d->rbuf, (size_t)n);
	}
}

static void
take(struct evd *d, const char *buf, size_t len)
{
	struct rec_sink k = { &d->rq, EV_PENDING_MAX, 0, 0, 0 };
	char err[IPC_ERR_LEN];
	const char *op;
	json_t *msg;
	size_t before = waiting_records(d);
	int r;

	if ((r = fast_packed(buf, len, &k, err, sizeof(err))) == 0 ||
	    (r == -2 && fast_requests(buf, len, &k, err, sizeof(err)) == 0)) {
		took(d, &k, err);
		if (before == 0 && waiting_records(d) > 0)
			waiting(d);
		return;
	}
	if (r == -1) {
		d->st.malformed++;
		log_debug("datagram refused: %s", err);
		return;
	}
	if ((msg = ipc_decode(buf, len, err, sizeof(err))) == NULL) {
		d->st.malformed++;
		log_debug("datagram refused: %s", err);
		return;
	}
	if ((op = ipc_op(msg)) != NULL && strcmp(op, "event") == 0)
		take_event(d, msg);
	else if (op != NULL && strcmp(op, "requests") == 0)
		take_requests(d, msg);
	else {
		d->st.malformed++;
		log_debug("datagram refused: %s", op == NULL ? "no op" :
		    "unknown op");
	}
	json_decref(msg);
	if (before == 0 && waiting_records(d) > 0)
		waiting(d);
}

static void
take_event(struct evd *d, const json_t *msg)
{
	struct store_event ev;
	char err[IPC_ERR_LEN];

	if (record_event(msg, &ev, err, sizeof(err)) == -1) {
		d->st.malformed++;
		log_debug("record refused: %s", err);
		return;
	}
	log_event(&ev);
	if (d->nev == EV_PENDING_MAX) {
		d->st.dropped++;
		free(ev.detail_json);
		return;
	}
	d->ev[d->nev++] = ev;
}

static void
take_requests(struct evd *d, const json_t *msg)
{
	struct rec_sink k = { &d->rq, EV_PENDING_MAX, 0, 0, 0 };
	char err[IPC_ERR_LEN];

	if (record_requests(msg, &k, err, sizeof(err)) == -1) {
		d->st.malformed++;
		log_debug("datagram refused: %s", err);
		return;
	}
	took(d, &k, err);
}

/* A datagram of request records read, by either path. */
static void
took(struct evd *d, const struct rec_sink *k, const char *err)
{
	d->st.dropped += k->dropped;
	d->st.malformed += (uint64_t)k->bad;
	if (k->bad > 0)
		log_debug("%d records refused: %s", k->bad, err);
}

static size_t
waiting_records(const struct evd *d)
{
	return d->nev + d->rq.pos.n;
}

/* Each event on stderr too: the supervisor's log keeps it. */
static void
log_event(const struct store_event *ev)
{
	char svc[EV_ID_MAX + 2], detail[EV_LINE_MAX];

	record_service(ev->app, ev->service, svc, sizeof(svc));
	record_detail_text(ev->detail_json, detail, sizeof(detail));
	log_info("event=%s service=%s%s%s", ev->kind, svc,
	    detail[0] != '\0' ? " " : "", detail);
}

/* The first record of a batch: the batch is due in EV_FLUSH_MS. */
static void
waiting(struct evd *d)
{
	d->oldest = loop_now_ms(d->loop);
	if (d->retry_at == 0)
		loop_timer_at(d->loop, &d->flush_timer,
		    d->oldest + EV_FLUSH_MS);
}

/* The timer only wakes the loop: the before-sleep hook writes. */
static void
flush_due(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
}

void
ingest_before_sleep(struct loop *l, void *arg)
{
	struct evd *d = arg;
	int64_t now = loop_now_ms(l);

	if (waiting_records(d) == 0)
		return;
	if (d->retry_at != 0 && now < d->retry_at)
		return;
	if (waiting_records(d) >= EV_FLUSH_RECORDS ||
	    now - d->oldest >= EV_FLUSH_MS || d->retry_at != 0)
		(void)ingest_flush(d);
}

/*
 * One transaction for everything that waits, one batch per table (on
 * PostgreSQL one round trip each); kept as it was on failure.
 *
 * A batch of request records only does not wait for the disk (SQLite:
 * the sync of each commit was about a tenth of the cost of a record):
 * the request log already loses what waits here when the process dies,
 * and what the gateway cannot send; a crash of the host may now also
 * lose the batches of the last seconds.  A batch with an event, and the
 * last one at exit, wait for the disk, and so make every batch before
 * them durable too.
 */
int
ingest_flush(struct evd *d)
{
	struct reqbatch v;
	int r;

	if (waiting_records(d) == 0)
		return 0;
	reqbatch_view(&d->rq, &v);
	r = store_durable(d->store, d->nev > 0 || d->stopping);
	if (r == 0)
		r = store_begin(d->store);
	if (r == 0)
		r = store_events_add(d->store, d->ev, d->nev);
	if (r == 0)
		r = store_request_add_packed(d->store, &v);
	if (r == 0)
		r = store_commit(d->store);
	if (r == -1) {
		flush_failed(d);
		return -1;
	}
	if (d->failing)
		log_info("the store takes records again");
	d->failing = 0;
	d->retry_at = 0;
	d->st.events += d->nev;
	d->st.requests += v.n;
	d->since_prune += d->nev + v.n;
	log_debug("wrote %zu events and %zu requests", d->nev, v.n);
	clear_events(d);
	clear_requests(d);
	loop_timer_cancel(d->loop, &d->flush_timer);
	if (d->st.dropped > d->dropped_logged) {
		log_warnx("%ju records dropped: more than %d of a kind waited "
		    "for the store", (uintmax_t)(d->st.dropped -
		    d->dropped_logged), EV_PENDING_MAX);
		d->dropped_logged = d->st.dropped;
	}
	if (d->since_prune >= EV_PRUNE_AFTER)
		loop_timer_at(d->loop, &d->prune_timer, loop_now_ms(d->loop));
	return 0;
}

static void
flush_failed(struct evd *d)
{
	char err[STORE_ERR_LEN];

	(void)strlcpy(err, store_error(d->store), sizeof(err));
	(void)store_rollback(d->store);
	d->st.store_errors++;
	if (!d->failing)
		log_warnx("unable to write %zu records to the store: %s: "
		    "keeping them, retrying every %d ms", waiting_records(d),
		    err, EV_RETRY_MS);
	else
		log_debug("unable to write to the store: %s", err);
	d->failing = 1;
	d->retry_at = loop_now_ms(d->loop) + EV_RETRY_MS;
	loop_timer_at(d->loop, &d->flush_timer, d->retry_at);
}

/* A buffer grown for a backlog goes back once it is written. */
static void
clear_requests(struct evd *d)
{
	if (d->rq.cap > EV_KEEP_BYTES)
		reqbatch_build_free(&d->rq);
	else
		reqbatch_build_clear(&d->rq);
}

static void
clear_events(struct evd *d)
{
	size_t i;

	for (i = 0; i < d->nev; i++)
		free(d->ev[i].detail_json);
	d->nev = 0;
}

/* Retention: by age and by rows, both tables; re-armed each time. */
void
ingest_prune(struct loop *l, void *arg)
{
	struct evd *d = arg;
	int64_t now = store_now_ms(), ne = 0, nr = 0;

	loop_timer_at(l, &d->prune_timer, loop_now_ms(l) + EV_PRUNE_MS);
	d->since_prune = 0;
	if (store_event_prune(d->store, now - d->cfg.events_max_age_days *
	    EV_DAY_MS, d->cfg.events_max_rows, &ne) == -1 ||
	    store_request_prune(d->store, now -
	    d->cfg.requests_max_age_days * EV_DAY_MS,
	    d->cfg.requests_max_rows, &nr) == -1) {
		d->st.store_errors++;
		log_warnx("retention: unable to delete old rows: %s",
		    store_error(d->store));
		return;
	}
	d->st.pruned += (uint64_t)(ne + nr);
	if (ne + nr > 0)
		log_info("retention: %jd events and %jd requests deleted",
		    (intmax_t)ne, (intmax_t)nr);
}

void
ingest_log_stats(struct evd *d, const char *why)
{
	log_info("%s: %ju datagrams; %ju events and %ju requests written; "
	    "%ju malformed, %ju refused, %ju dropped; %ju rows pruned", why,
	    (uintmax_t)d->st.datagrams, (uintmax_t)d->st.events,
	    (uintmax_t)d->st.requests, (uintmax_t)d->st.malformed,
	    (uintmax_t)d->st.refused, (uintmax_t)d->st.dropped,
	    (uintmax_t)d->st.pruned);
}
