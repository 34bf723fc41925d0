/*
 * systemd_bus.c - the systemd backend's connection to systemd, over
 * sd-bus, and the state of it, which is this file's alone: made when
 * first needed (sdbus_ensure()), driven from hk-scale's loop, never
 * blocking it: sd_bus_get_fd(), _get_events() and _get_timeout() give
 * the fd, its mask and a timer, sd_bus_process() runs on either, and
 * every call is asynchronous (sdbus_call()).  As root it is systemd's
 * private socket, as systemctl uses; otherwise the system bus.  A lost
 * connection is made again a second later.
 *
 * What the connection's life means for instances is backend_systemd.c's,
 * told through systemd_connected(), _dropped(), _lost() and _again()
 * (systemd.h).
 */
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "log.h"
#include "scale.h"
#include "systemd.h"

#define SD_PRIVATE	"/run/systemd/private"

/* The connection to systemd: one per hk-scale, made when first needed. */
static struct {
	struct scale		*sc;
	sd_bus			*bus;
	int			 fd;
	struct loop_timer	 timer;		/* sd_bus_get_timeout() */
	struct loop_timer	 retry;		/* a new connection */
} sdb = { .fd = -1 };

static int	bus_connect(sd_bus **);
static void	bus_io(struct loop *, int, int, void *);
static void	bus_timer(struct loop *, void *);
static void	bus_process(void);
static void	bus_lost(int);
static void	bus_retry(struct loop *, void *);
static int	subscribed(sd_bus_message *, void *, sd_bus_error *);

/* The connection, or NULL while there is none. */
sd_bus *
sdbus_bus(void)
{
	return sdb.bus;
}

/*
 * The connection, made when first needed; its fd on the loop, systemd
 * asked for its signals, and the units of this installation swept.
 */
int
sdbus_ensure(struct scale *sc, char *err, size_t errlen)
{
	sd_bus *bus;
	int r;

	if (sdb.bus != NULL)
		return 0;
	if (sdb.sc == NULL) {
		sdb.sc = sc;
		loop_timer_init(&sdb.timer, bus_timer, NULL);
		loop_timer_init(&sdb.retry, bus_retry, NULL);
	}
	if (loop_timer_armed(&sdb.retry)) {
		snprintf(err, errlen, "systemd: not connected");
		return -1;
	}
	if ((r = bus_connect(&bus)) < 0) {
		snprintf(err, errlen, "systemd: unable to connect: %s",
		    strerror(-r));
		loop_timer_at(sc->loop, &sdb.retry, loop_now_ms(sc->loop) +
		    SD_RETRY_MS);
		return -1;
	}
	sdb.bus = bus;
	if ((sdb.fd = sd_bus_get_fd(bus)) < 0 ||
	    loop_add_fd(sc->loop, sdb.fd, LOOP_READ, bus_io, NULL) == -1) {
		snprintf(err, errlen, "systemd: unable to watch the "
		    "connection");
		sdb.fd = -1;
		bus_lost(EBADF);
		return -1;
	}
	if ((r = sdbus_call(NULL, subscribed, NULL, SD_PATH, SD_MANAGER,
	    "Subscribe", "")) < 0) {
		snprintf(err, errlen, "systemd: Subscribe: %s", strerror(-r));
		bus_lost(-r);
		return -1;
	}
	log_info("systemd: connected (%s)", sd_bus_is_bus_client(bus) ?
	    "system bus" : SD_PRIVATE);
	systemd_connected();
	sdbus_arm();
	return 0;
}

/* As root systemd's own socket, as systemctl; else the system bus. */
static int
bus_connect(sd_bus **busp)
{
	sd_bus *bus = NULL;
	int r;

	if (geteuid() != 0 || access(SD_PRIVATE, F_OK) == -1)
		return sd_bus_open_system(busp);
	if ((r = sd_bus_new(&bus)) < 0 ||
	    (r = sd_bus_set_address(bus, "unix:path=" SD_PRIVATE)) < 0 ||
	    (r = sd_bus_start(bus)) < 0) {
		sd_bus_unref(bus);
		return r;
	}
	*busp = bus;
	return 0;
}

/* After every call and every turn: the fd's mask and the timer. */
void
sdbus_arm(void)
{
	struct loop *l = sdb.sc->loop;
	uint64_t usec;
	int ev, mask = LOOP_READ;

	if (sdb.bus == NULL)
		return;
	if ((ev = sd_bus_get_events(sdb.bus)) > 0 && (ev & POLLOUT))
		mask |= LOOP_WRITE;
	loop_mod_fd(l, sdb.fd, mask);
	if (sd_bus_get_timeout(sdb.bus, &usec) < 0 || usec == UINT64_MAX)
		loop_timer_cancel(l, &sdb.timer);
	else
		loop_timer_at(l, &sdb.timer, (int64_t)((usec + 999) / 1000));
}

static void
bus_io(struct loop *l, int fd, int mask, void *arg)
{
	(void)l;
	(void)fd;
	(void)mask;
	(void)arg;
	bus_process();
}

static void
bus_timer(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	bus_process();
}

/* Everything there is to do now; a closed connection is made again. */
static void
bus_process(void)
{
	int r;

	while (sdb.bus != NULL) {
		if ((r = sd_bus_process(sdb.bus, NULL)) < 0) {
			bus_lost(-r);
			return;
		}
		if (r == 0)
			break;
	}
	sdbus_arm();
}

/*
 * The connection is gone (systemd re-executed, or the bus went away):
 * what was asked of it has been answered with errors, which left every
 * instance where it stood.  A second later a new connection looks at
 * them all again.
 */
static void
bus_lost(int err)
{
	struct scale *sc = sdb.sc;

	log_warnx("systemd: connection lost: %s: connecting again in %d ms",
	    strerror(err), SD_RETRY_MS);
	if (sdb.fd != -1)
		loop_del_fd(sc->loop, sdb.fd);
	sdb.fd = -1;
	loop_timer_cancel(sc->loop, &sdb.timer);
	systemd_dropped();
	sdb.bus = sd_bus_close_unref(sdb.bus);
	loop_timer_at(sc->loop, &sdb.retry, loop_now_ms(sc->loop) +
	    SD_RETRY_MS);
	systemd_lost();
}

/* Connected again: the backend looks at every instance. */
static void
bus_retry(struct loop *l, void *arg)
{
	struct scale *sc = sdb.sc;
	char err[SCALE_REASON_MAX];

	(void)arg;
	if (sdbus_ensure(sc, err, sizeof(err)) == -1) {
		log_warnx("%s: again in %d ms", err, SD_RETRY_MS);
		return;
	}
	systemd_again();
	(void)l;
	sdbus_arm();
}

/* A method of systemd's, asynchronously; slot NULL: a floating call. */
int
sdbus_call(sd_bus_slot **slot, sd_bus_message_handler_t cb, void *arg,
    const char *path, const char *iface, const char *method,
    const char *types, ...)
{
	sd_bus_message *m = NULL;
	va_list ap;
	int r;

	if ((r = sd_bus_message_new_method_call(sdb.bus, &m, SD_DEST, path,
	    iface, method)) < 0)
		return r;
	va_start(ap, types);
	r = sd_bus_message_appendv(m, types, ap);
	va_end(ap);
	if (r >= 0)
		r = sd_bus_call_async(sdb.bus, slot, m, cb, arg, 0);
	sd_bus_message_unref(m);
	sdbus_arm();
	return r;
}

static int
subscribed(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)arg;
	(void)ret;
	if (e != NULL && sd_bus_is_open(sdb.bus))
		log_warnx("systemd: unable to subscribe to its signals: %s: "
		    "exits go unseen",
		    sdbus_why(e, sd_bus_message_get_errno(m)));
	return 0;
}

/* systemd's own words, else the errno's. */
const char *
sdbus_why(const sd_bus_error *e, int err)
{
	if (e != NULL && e->message != NULL && e->message[0] != '\0')
		return e->message;
	if (e != NULL && e->name != NULL)
		return e->name;
	return strerror(err);
}

/*
 * One argument of an ExecStart= command line, as given: systemd expands
 * $NAME and ${NAME} there (and makes $$ a dollar), which the exec backend
 * never does, so each dollar is doubled.
 */
int
sdbus_append_literal(sd_bus_message *m, const char *arg)
{
	const char *c;
	char *buf, *p;
	size_t n = 0;
	int r;

	for (c = arg; *c != '\0'; c++)
		n += *c == '$';
	if (n == 0)
		return sd_bus_message_append(m, "s", arg);
	if ((buf = malloc(strlen(arg) + n + 1)) == NULL)
		return -ENOMEM;
	for (p = buf; *arg != '\0'; arg++) {
		if (*arg == '$')
			*p++ = '$';
		*p++ = *arg;
	}
	*p = '\0';
	r = sd_bus_message_append(m, "s", buf);
	free(buf);
	return r;
}
