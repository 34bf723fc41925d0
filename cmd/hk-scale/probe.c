/*
 * probe.c - readiness of a starting instance, without blocking the loop:
 *
 *	tcp		a non-blocking connect to 127.0.0.1:PORT succeeds
 *	http:/path	GET /path answers 2xx
 *	notify		READY=1 arrives on the instance's NOTIFY_SOCKET
 *	socket		the exec happened (backend_exec.c): the listener was
 *			bound by hk-scale and handed over
 *
 * A failed tcp or http probe is retried after a pause of 1/32 of the time
 * the start has taken so far, at least 1 ms and at most 50 ms: a service
 * is seen ready within about 3% of its own start time (a 60 ms Node start
 * is probed every 2 ms, where doubling delays overshot by up to 50 ms),
 * and one that starts for seconds costs 20 connects a second.  The startup
 * deadline (service.c) ends the attempt.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "scale.h"

static void	probe_try(struct inst *);
static void	probe_retry(struct inst *);
static void	probe_fire(struct loop *, void *);
static void	probe_io(struct loop *, int, int, void *);
static int	probe_send(struct inst *);
static int	probe_status(const struct inst *);
static void	notify_read(struct loop *, int, int, void *);

/* A datagram socket of our own in runtime_dir, for NOTIFY_SOCKET. */
int
probe_notify_open(struct inst *in, char *err, size_t errlen)
{
	struct scale *sc = in->sc;
	struct sockaddr_un sun;
	int fd;

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
	if (fd == -1 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(in->notify_path, 0660) == -1) {
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
	const struct service_spec *sp = &in->svc->def.spec;

	loop_timer_init(&in->probe_timer, probe_fire, in);
	switch (sp->readiness) {
	case READY_TCP:
	case READY_HTTP:
		probe_try(in);
		break;
	case READY_NOTIFY:
		if (loop_add_fd(in->sc->loop, in->notifyfd, LOOP_READ,
		    notify_read, in) == -1)
			log_warn("service=%s: unable to watch %s", in->id,
			    in->notify_path);
		break;
	case READY_SOCKET:
		break;		/* exec_read() */
	}
}

void
probe_stop(struct inst *in)
{
	struct loop *l = in->sc->loop;

	if (in->probefd != -1) {
		loop_del_fd(l, in->probefd);
		close(in->probefd);
		in->probefd = -1;
	}
	if (in->probe_timer.fn != NULL)
		loop_timer_cancel(l, &in->probe_timer);
	if (in->notifyfd != -1) {
		loop_del_fd(l, in->notifyfd);
		close(in->notifyfd);
		unlink(in->notify_path);
		in->notifyfd = -1;
	}
}

static void
probe_fire(struct loop *l, void *arg)
{
	(void)l;
	probe_try(arg);
}

static void
probe_retry(struct inst *in)
{
	struct loop *l = in->sc->loop;

	if (in->probefd != -1) {
		loop_del_fd(l, in->probefd);
		close(in->probefd);
		in->probefd = -1;
	}
	in->probe_delay = (loop_now_ms(l) - in->start_mono) / 32;
	if (in->probe_delay < SCALE_PROBE_MIN_MS)
		in->probe_delay = SCALE_PROBE_MIN_MS;
	if (in->probe_delay > SCALE_PROBE_MAX_MS)
		in->probe_delay = SCALE_PROBE_MAX_MS;
	loop_timer_at(l, &in->probe_timer, loop_now_ms(l) + in->probe_delay);
}

static void
probe_try(struct inst *in)
{
	struct sockaddr_in sin;
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)in->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		log_warn("service=%s: probe: socket", in->id);
		probe_retry(in);
		return;
	}
	in->probefd = fd;
	in->probe_sent = 0;
	in->probe_len = 0;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS) {
		probe_retry(in);
		return;
	}
	if (loop_add_fd(in->sc->loop, fd, LOOP_WRITE, probe_io, in) == -1)
		probe_retry(in);
}

static int
probe_send(struct inst *in)
{
	char req[256];
	int n;

	n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n"
	    "User-Agent: hk-scale\r\nConnection: close\r\n\r\n",
	    in->svc->def.spec.readiness_path, in->endpoint);
	if (n < 0 || (size_t)n >= sizeof(req))
		return -1;
	return send(in->probefd, req, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

/* The status code of "HTTP/1.x NNN ...", or -1 while incomplete. */
static int
probe_status(const struct inst *in)
{
	const char *b = in->probe_buf;

	if (in->probe_len < 12 || strncmp(b, "HTTP/1.", 7) != 0 ||
	    b[8] != ' ')
		return in->probe_len >= 12 ? 0 : -1;
	if (b[9] < '1' || b[9] > '5' || b[10] < '0' || b[10] > '9' ||
	    b[11] < '0' || b[11] > '9')
		return 0;
	return (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
}

static void
probe_io(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	socklen_t len = sizeof(int);
	ssize_t n;
	int soerr = 0, code;

	(void)mask;
	if (!in->probe_sent) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1 ||
		    soerr != 0) {
			probe_retry(in);
			return;
		}
		if (in->svc->def.spec.readiness == READY_TCP) {
			probe_stop(in);
			service_inst_ready(in);
			return;
		}
		if (probe_send(in) == -1) {
			probe_retry(in);
			return;
		}
		in->probe_sent = 1;
		loop_mod_fd(l, fd, LOOP_READ);
		return;
	}
	n = recv(fd, in->probe_buf + in->probe_len,
	    sizeof(in->probe_buf) - in->probe_len, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		in->probe_len += (size_t)n;
	code = probe_status(in);
	if (code == -1 && n > 0)
		return;		/* the status line is not all there yet */
	if (code >= 200 && code <= 299) {
		probe_stop(in);
		service_inst_ready(in);
		return;
	}
	log_debug("service=%s: probe %s: status %d", in->id,
	    in->svc->def.spec.readiness_path, code);
	probe_retry(in);
}

/* READY=1 as one line of a datagram, as sd_notify(3) sends it. */
static void
notify_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	char buf[4096], *line, *next;
	ssize_t n;

	(void)l;
	(void)mask;
	while ((n = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
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
