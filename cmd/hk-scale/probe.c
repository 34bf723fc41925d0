/*
 * probe.c - readiness of a starting instance, without blocking the loop:
 *
 *	tcp		a non-blocking connect to its endpoint succeeds
 *	http:/path	GET /path answers 2xx, the answer read to its end
 *	notify		READY=1 arrives on the instance's NOTIFY_SOCKET
 *			(ours), or the backend says so (backend_ready()):
 *			systemd's own, for a Type=notify unit
 *	socket		the backend says so (backend_ready()): the exec
 *			backend's listener was bound by hk-scale and
 *			handed over, and the command was executed
 *	healthcheck	the backend says so: the container backend ran the
 *			image's HEALTHCHECK in the container, and it passed
 *
 * The endpoint is the instance's, in->endpoint, as the gateway will
 * reach it: 127.0.0.1:PORT for a process of this host, a node's address
 * and a published port for a container.  A published port may be a
 * forwarder's (slirp4netns, docker-proxy), which accepts a connection
 * before anything listens behind it and closes it once it finds nothing
 * there: a backend says so with in->probe_hold, and a tcp probe then
 * counts only a connection that stays open that many milliseconds, or 8
 * times the longest a close took in this start (at most
 * SCALE_PROBE_HOLD_MAX), with nothing closing it.  Where the backend can
 * name a process in the network namespace behind the forwarder
 * (in->probe_ns_pid), the probe reads that namespace's sockets instead
 * (/proc/PID/net/tcp and tcp6): it connects only once the port listens
 * there, and counts the connection at once.  A hold is a guess about
 * time, and on a busy machine the forwarder's close came later than it.
 *
 * A failed tcp or http probe is retried after a pause of 1/128 of the
 * time the start has taken so far, at least 250 us and at most 50 ms: a
 * service is seen ready within about 1% of its own start time, 0.4 ms on
 * average for a 100 ms Python start (where 1/32 overshot by 1.5 ms, and
 * doubling delays by up to 50 ms), and one that starts for seconds costs
 * 20 connects a second.  A failed connect to a port nothing listens on is
 * answered at once by the kernel, so about 280 of them over such a start
 * cost little.  Behind a forwarder (a published port: probe_hold), where
 * each try is a connection the forwarder makes into the container, the
 * pause is 1/32, at least 1 ms; but where the probe reads the namespace
 * (in->probe_ns_pid), a try before the port listens is a read of /proc
 * that costs the forwarder nothing, and the pause is 1/128 again (at
 * 1/32 a 300 ms container start was seen ready about 5 ms late).  The pause needs finer than the loop's
 * milliseconds: a timerfd of the instance's own.  The startup deadline (service.c) ends
 * the attempt.
 *
 * An http probe reads the whole answer before it closes, whatever its
 * status: a close with unread bytes is a reset, and a server still writing
 * its body logs it (Python's http.server a ConnectionResetError traceback
 * at every cold start).  The end of the body is http_parser's to find
 * (Content-Length, chunks, or the server's close).  The reading is bounded:
 * SCALE_PROBE_READ_MAX bytes in all, and SCALE_PROBE_REST_MS for what comes
 * after the head; past either the probe cuts the answer, and its status
 * decides as if it had ended.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <sys/param.h>	/* MAX */
#include <sys/timerfd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "endpoint.h"
#include "log.h"
#include "scale.h"

static int	probe_hold_ms(const struct inst *);
static void	probe_held(struct inst *);
static void	probe_try(struct inst *);
static void	probe_close(struct inst *);
static void	probe_retry(struct inst *);
static void	probe_fire(struct loop *, void *);
static void	probe_pause_end(struct loop *, int, int, void *);
static void	probe_io(struct loop *, int, int, void *);
static void	probe_on_head(void *);
static void	probe_read(struct inst *);
static void	probe_end(struct inst *, const char *, int);
static void	probe_pass(struct inst *);
static ssize_t	notify_recv(int, char *, size_t, uid_t *);
static void	notify_read(struct loop *, int, int, void *);


/*
 * A datagram socket of our own in runtime_dir, for NOTIFY_SOCKET.  The
 * instance runs as a user of its own, which we may not give the file to
 * (a non-root hk-scale lacks CAP_CHOWN): anyone may send to it, and the
 * sender's credentials decide (notify_read()).
 */
int
probe_notify_open(struct inst *in, char *err, size_t errlen)
{
	struct scale *sc = in->sc;
	struct sockaddr_un sun;
	int fd, on = 1;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(in->notify_path, sizeof(in->notify_path),
	    "%s/scale-notify.%ld.%u", sc->cfg.runtime_dir, (long)getpid(),
	    ++sc->seq) >= sizeof(in->notify_path)) {
		snprintf(err, errlen, "notify socket path too long");
		return -1;
	}
	strlcpy(sun.sun_path, in->notify_path, sizeof(sun.sun_path));
	unlink(in->notify_path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on,
	    sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(in->notify_path, 0666) == -1) {
		snprintf(err, errlen, "%s: %s", in->notify_path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	in->notifyfd = fd;
	return 0;
}

void
probe_start(struct inst *in)
{
	const struct service_spec *sp = &inst_def(in)->spec;

	loop_timer_init(&in->probe_timer, probe_fire, in);
	switch (sp->readiness) {
	case READY_TCP:
	case READY_HTTP:
		probe_try(in);
		break;
	case READY_NOTIFY:
		if (in->notifyfd == -1)
			break;		/* the backend's: backend_ready() */
		if (loop_add_fd(in->sc->loop, in->notifyfd, LOOP_READ,
		    notify_read, in) == -1)
			log_warn("service=%s: unable to watch %s", in->id,
			    in->notify_path);
		break;
	case READY_SOCKET:
	case READY_HEALTH:
		break;		/* backend_ready() */
	}
}

/* The probe's connection, if one is open: closed and no longer watched. */
static void
probe_close(struct inst *in)
{
	loop_close_fd(in->sc->loop, &in->probefd);
}

void
probe_stop(struct inst *in)
{
	struct loop *l = in->sc->loop;

	probe_close(in);
	if (in->probe_timer.fn != NULL)
		loop_timer_cancel(l, &in->probe_timer);
	loop_close_fd(l, &in->probe_tfd);
	if (in->notifyfd != -1) {
		loop_close_fd(l, &in->notifyfd);
		unlink(in->notify_path);
		in->notifyfd = -1;
	}
}

/* The pause before the next try, or the deadline of an answer's rest. */
static void
probe_fire(struct loop *l, void *arg)
{
	struct inst *in = arg;

	(void)l;
	if (in->probefd != -1 && in->probe_sent &&
	    inst_def(in)->spec.readiness == READY_TCP) {
		log_debug("service=%s: probe: open for %d ms", in->id,
		    probe_hold_ms(in));
		probe_pass(in);
	} else if (in->probefd != -1 && in->probe_sent)
		probe_end(in, "its rest did not come in time", 1);
	else
		probe_try(in);
}

static void
probe_retry(struct inst *in)
{
	struct loop *l = in->sc->loop;
	struct itimerspec it = { { 0, 0 }, { 0, 0 } };
	int64_t us;

	probe_close(in);
	/* a held connection's or an answer's deadline ends with it */
	loop_timer_cancel(l, &in->probe_timer);
	us = (loop_clock_us() - in->start_mono * 1000);
	/* a forwarder's: each try costs it, unless the namespace says */
	if (in->probe_hold > 0 && in->probe_ns_pid <= 0)
		us = MAX(us / SCALE_HC_DIV, SCALE_HC_MIN_MS * 1000);
	else
		us = MAX(us / SCALE_PROBE_DIV, SCALE_PROBE_MIN_US);
	if (us > SCALE_PROBE_MAX_MS * 1000)
		us = SCALE_PROBE_MAX_MS * 1000;
	it.it_value.tv_sec = us / 1000000;
	it.it_value.tv_nsec = us % 1000000 * 1000;
	if (in->probe_tfd == -1 && (in->probe_tfd = timerfd_create(
	    CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) != -1 &&
	    loop_add_fd(l, in->probe_tfd, LOOP_READ, probe_pause_end,
	    in) == -1) {
		close(in->probe_tfd);
		in->probe_tfd = -1;
	}
	if (in->probe_tfd == -1 ||
	    timerfd_settime(in->probe_tfd, 0, &it, NULL) == -1)
		/* no timerfd: the loop's milliseconds, rounded up */
		loop_timer_at(l, &in->probe_timer, loop_now_ms(l) +
		    (us + 999) / 1000);
}

static void
probe_pause_end(struct loop *l, int fd, int mask, void *arg)
{
	uint64_t n;

	(void)l;
	(void)mask;
	if (read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		probe_try(arg);
}

/*
 * Ready by a tcp probe: its connection goes to the gateway with the
 * "ready" (ctl_ready), which sends the first request on it.  The service
 * then sees one connection at its cold start, not an empty one first: a
 * Node server spends 1.5 ms on the empty one's accept and close, before
 * it reads the request.
 */
static void
probe_pass(struct inst *in)
{
	loop_del_fd(in->sc->loop, in->probefd);
	in->conn_fd = in->probefd;
	in->probefd = -1;
	probe_stop(in);
	service_inst_ready(in);
}

static int
probe_hold_ms(const struct inst *in)
{
	int64_t ms = in->probe_shut * 8;

	if (ms < in->probe_hold)
		ms = in->probe_hold;
	return ms > SCALE_PROBE_HOLD_MAX ? SCALE_PROBE_HOLD_MAX : (int)ms;
}

/*
 * A held tcp probe's connection has something to say: a close (a
 * forwarder found nothing listening), or bytes (a server that speaks
 * first, which is ready).
 */
static void
probe_held(struct inst *in)
{
	struct loop *l = in->sc->loop;
	char c;
	ssize_t n;

	n = recv(in->probefd, &c, 1, MSG_PEEK);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == 1) {
		probe_stop(in);
		service_inst_ready(in);
		return;
	}
	if (loop_now_ms(l) - in->probe_at > in->probe_shut)
		in->probe_shut = loop_now_ms(l) - in->probe_at;
	log_debug("service=%s: probe: closed after %lld ms", in->id,
	    (long long)(loop_now_ms(l) - in->probe_at));
	probe_retry(in);
}

/*
 * Whether in->probe_ns_port listens in the network namespace of
 * in->probe_ns_pid: 1, 0, or -1 when that cannot be read (the process is
 * gone, or was never ours to see), and the hold decides.
 */
static int
probe_listens(const struct inst *in)
{
	static const char *const tables[] = { "tcp", "tcp6" };
	char path[64], line[512];
	unsigned int port, st;
	size_t i;
	FILE *fp;
	int seen = -1;

	if (in->probe_ns_pid <= 0)
		return -1;
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]) && seen != 1; i++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s",
		    (int)in->probe_ns_pid, tables[i]);
		if ((fp = fopen(path, "re")) == NULL)
			continue;
		seen = 0;
		/* "sl local:PORT remote:PORT st ...", hex; 0A is LISTEN */
		while (seen == 0 && fgets(line, sizeof(line), fp) != NULL)
			if (sscanf(line, "%*s %*[0-9A-Fa-f]:%x %*s %x", &port,
			    &st) == 2 && st == 0x0A &&
			    (int)port == in->probe_ns_port)
				seen = 1;
		fclose(fp);
	}
	return seen;
}

static void
probe_try(struct inst *in)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int fd;

	probe_close(in);	/* one probe at a time */

	if ((inst_def(in)->spec.readiness == READY_TCP ||
	    inst_def(in)->spec.readiness == READY_HTTP) &&
	    probe_listens(in) == 0) {	/* the forwarder's would not count */
		probe_retry(in);
		return;
	}
	if (endpoint_parse(in->endpoint, &ss, &sslen) == -1) {
		log_warnx("service=%s: probe: endpoint \"%s\" is not an "
		    "address", in->id, in->endpoint);
		probe_retry(in);
		return;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		log_warn("service=%s: probe: socket", in->id);
		probe_retry(in);
		return;
	}
	in->probefd = fd;
	in->probe_sent = 0;
	hget_init(&in->probe_get, SCALE_PROBE_READ_MAX, probe_on_head, in);
	if (connect(fd, (struct sockaddr *)&ss, sslen) == -1 &&
	    errno != EINPROGRESS) {
		probe_retry(in);
		return;
	}
	if (loop_add_fd(in->sc->loop, fd, LOOP_WRITE, probe_io, in) == -1)
		probe_retry(in);
}

static void
probe_io(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	socklen_t len = sizeof(int);
	int soerr = 0;

	(void)mask;
	if (in->probe_sent && inst_def(in)->spec.readiness == READY_TCP) {
		probe_held(in);
		return;
	}
	if (in->probe_sent) {
		probe_read(in);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1 ||
	    soerr != 0) {
		probe_retry(in);
		return;
	}
	/* The cold start's breakdown: when the port first accepted. */
	if (in->port_mono == 0)
		in->port_mono = loop_now_ms(l);
	if (inst_def(in)->spec.readiness == READY_TCP && in->probe_hold > 0 &&
	    probe_listens(in) == 1) {
		log_debug("service=%s: probe: port %d listens in the network "
		    "namespace of pid %d", in->id, in->probe_ns_port,
		    (int)in->probe_ns_pid);
		probe_pass(in);
		return;
	}
	if (inst_def(in)->spec.readiness == READY_TCP && in->probe_hold > 0) {
		in->probe_sent = 1;	/* connected: held */
		in->probe_at = loop_now_ms(l);
		loop_mod_fd(l, fd, LOOP_READ);
		loop_timer_at(l, &in->probe_timer, in->probe_at +
		    probe_hold_ms(in));
		return;
	}
	if (inst_def(in)->spec.readiness == READY_TCP) {
		probe_pass(in);
		return;
	}
	if (hget_send(fd, inst_def(in)->spec.readiness_path,
	    endpoint_host(in->endpoint), "hk-scale") == -1) {
		probe_retry(in);
		return;
	}
	in->probe_sent = 1;
	loop_mod_fd(l, fd, LOOP_READ);
}

/* The head is in: its status will decide, and the rest has a deadline. */
static void
probe_on_head(void *arg)
{
	struct inst *in = arg;
	struct loop *l = in->sc->loop;

	if (loop_timer_at(l, &in->probe_timer, loop_now_ms(l) +
	    SCALE_PROBE_REST_MS) == -1)
		log_warn("service=%s: probe: timer", in->id);
}

/*
 * One read of the answer.  Its end, a close, an error or the limit on
 * bytes ends the exchange; so does the deadline of its rest (probe_fire).
 */
static void
probe_read(struct inst *in)
{
	const char *why;

	switch (hget_read(&in->probe_get, in->probefd, &why)) {
	case HGET_MORE:
		break;
	case HGET_END:
	case HGET_FAILED:
		probe_end(in, why, 0);
		break;
	case HGET_CUT:
		probe_end(in, "longer than the probe reads", 1);
		break;
	}
}

/*
 * The exchange is over, why says how if not at the answer's end, cut if
 * the probe stopped reading: a 2xx head makes the instance ready, anything
 * else is retried.  A cut may show in the service's log as a reset, so it
 * is a warning.
 */
static void
probe_end(struct inst *in, const char *why, int cut)
{
	const char *path = inst_def(in)->spec.readiness_path;
	int code = in->probe_get.status;

	if (code < 200 || code > 299) {
		if (code != 0)
			log_debug("service=%s: probe %s: status %d", in->id,
			    path, code);
		else
			log_debug("service=%s: probe %s: no answer: %s",
			    in->id, path, why != NULL ? why : "empty");
		probe_retry(in);
		return;
	}
	if (cut)
		log_warnx("service=%s: probe %s: status %d, answer cut after "
		    "%zu bytes: %s (at most %d bytes, %d ms after the head)",
		    in->id, path, code, in->probe_get.len, why,
		    SCALE_PROBE_READ_MAX, SCALE_PROBE_REST_MS);
	else if (why != NULL)
		log_debug("service=%s: probe %s: status %d, %s", in->id, path,
		    code, why);
	probe_stop(in);
	service_inst_ready(in);
}

/*
 * The sender of a datagram, from SCM_CREDENTIALS (SO_PASSCRED makes the
 * kernel attach them to every datagram); -1 when there are none.
 */
static ssize_t
notify_recv(int fd, char *buf, size_t len, uid_t *uid)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(struct ucred))];
	} cm;
	struct iovec iov = { buf, len };
	struct msghdr msg;
	struct cmsghdr *c;
	struct ucred cred;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	*uid = (uid_t)-1;
	if ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) <= 0)
		return n;
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(cred))) {
			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			*uid = cred.uid;
		}
	return n;
}

/*
 * READY=1 as one line of a datagram, as sd_notify(3) sends it, from a
 * process of the instance's user: the socket is open to anyone.
 */
static void
notify_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	char buf[4096], *line, *next;
	ssize_t n;
	uid_t uid;

	(void)l;
	(void)mask;
	while ((n = notify_recv(fd, buf, sizeof(buf) - 1, &uid)) > 0) {
		if (uid != in->uid) {
			log_debug("service=%s: notify: ignored a datagram of "
			    "uid %ld", in->id, (long)uid);
			continue;
		}
		buf[n] = '\0';
		for (line = buf; line != NULL; line = next) {
			if ((next = strchr(line, '\n')) != NULL)
				*next++ = '\0';
			if (strcmp(line, "READY=1") == 0 && !in->ready &&
			    in->svc != NULL) {
				probe_stop(in);
				service_inst_ready(in);
				return;
			}
		}
	}
}
