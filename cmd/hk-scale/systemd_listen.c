/*
 * systemd_listen.c - the systemd backend's listening sockets: for
 * readiness "socket" one of the instance's own, and the one socket that
 * the replicas of a fixed port share (exec_listen.c, hk-scale's, kept in
 * systemd's fd store across a restart of hk-scale, fdstore.c).
 *
 * A transient unit of systemd 252 takes no file descriptor but as its
 * standard input, output or error (StandardInputFileDescriptor=:
 * ExtraFileDescriptors= and OpenFile= are later, and Sockets= or
 * TriggeredBy= cannot be set on a transient unit).  So the socket is the
 * unit's standard input, and a shell at the head of ExecStart makes it
 * fd 3 with LISTEN_FDS and LISTEN_PID, as socket activation does, before
 * it execs the command: same pid, so the unit's main process is the
 * command's, and LISTEN_PID its own.
 */
#include <sys/types.h>

#include <stdio.h>
#include <unistd.h>

#include "scale.h"
#include "systemd.h"
#include "xlisten.h"

/*
 * The shell: the socket made fd 3, standard input /dev/null again, and
 * LISTEN_FDS with LISTEN_PID, the shell's pid, which exec keeps for the
 * command ($1, with its arguments after).  $0 names it in ps.  systemd
 * expands $NAME in ExecStart itself, and makes $$ a dollar: the script's
 * $$ and $@ are written $$$$ and $$@.
 */
#define SDL_SHELL	"/bin/sh"
#define SDL_SCRIPT \
	"exec 3<&0 0</dev/null; LISTEN_FDS=1 LISTEN_PID=$$$$ exec \"$$@\""
#define SDL_BACKLOG	128

/*
 * The listening socket the unit is handed, if any (*lfd, -1 if none),
 * and the instance's port: the socket its replicas share (*xport its
 * port: a reference held until sdlisten_drop()), or for readiness
 * "socket" one of its own; else the spec's port, or a free one.  With
 * listen = "unix", a Unix socket of its own and no port (exec_unix.c).
 */
int
sdlisten_take(struct inst *in, const struct service_spec *sp, int *lfd,
    int *xport, char *err, size_t errlen)
{
	*lfd = -1;
	*xport = 0;
	if (sp->listen_unix)
		return unixlisten_bind(in, lfd, err, errlen);
	if (command_shares_port(sp)) {
		if (xlisten_take(in, sp->port, lfd, err, errlen) == -1)
			return -1;
		*xport = in->port = sp->port;
		return 0;
	}
	if (sp->readiness != READY_SOCKET)
		return command_port(in, sp->port, err, errlen);
	*lfd = xlisten_bind(sp->port, SDL_BACKLOG, &in->port, err, errlen);
	return *lfd == -1 ? -1 : 0;
}

/* The start message holds its copy: a socket of the instance's own goes. */
void
sdlisten_done(int lfd, int xport)
{
	if (lfd != -1 && xport == 0)
		close(lfd);
}

/* The instance is released: its reference to the shared socket goes. */
void
sdlisten_drop(const struct inst *in, int xport)
{
	if (xport != 0)
		xlisten_drop(in, xport);
}

/* The listening socket, if any, as the unit's standard input. */
int
sdlisten_prop(sd_bus_message *m, int lfd)
{
	if (lfd == -1)
		return 0;
	return sd_bus_message_append(m, "(sv)", "StandardInputFileDescriptor",
	    "h", lfd);
}

/* ExecStart: the shell above, then the command's program and arguments. */
int
sdlisten_exec(sd_bus_message *m, const char *exe, char **argv)
{
	size_t i;
	int r;

	if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
	    (r = sd_bus_message_append(m, "s", "ExecStart")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'v', "a(sasb)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "(sasb)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'r', "sasb")) < 0 ||
	    (r = sd_bus_message_append(m, "s", SDL_SHELL)) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "s")) < 0 ||
	    (r = sd_bus_message_append(m, "ssss", "sh", "-c", SDL_SCRIPT,
	    "hk-listen")) < 0 ||
	    (r = sdbus_append_literal(m, exe)) < 0)
		return r;
	for (i = 1; argv[i] != NULL; i++)
		if ((r = sdbus_append_literal(m, argv[i])) < 0)
			return r;
	if ((r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_append(m, "b", 0)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0)
		return r;
	return sd_bus_message_close_container(m);
}

/*
 * An adopted replica of a service whose replicas share a socket: a
 * reference to the socket, known again from systemd's fd store, else
 * taken from the unit's main process (exec_listen.c), so that a replica
 * started later shares it.  The port of the reference, 0 if none.
 */
int
sdlisten_adopt(struct inst *in, const struct store_instance *r)
{
	struct service *s = service_find(in->sc, in->id);
	const struct service_spec *sp;

	/* in->svc is not set until the adoption is answered */
	if (s == NULL)
		return 0;
	sp = &s->def.spec;
	if (!command_shares_port(sp) || in->port != sp->port)
		return 0;
	if (xlisten_adopt_pid(in, sp->port, (pid_t)r->pid,
	    r->pid_start) == -1)
		return 0;
	return sp->port;
}
