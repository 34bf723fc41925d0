/*
 * listen.h - TCP listeners, as a daemon gets one: adopted from its
 * supervisor (systemd socket activation: LISTEN_PID, LISTEN_FDS, fd 3),
 * or bound to "host:port" ("[::1]:8080" for IPv6; the port numeric, the
 * host a name or an address).  Every descriptor is non-blocking and
 * close-on-exec.  The gateway's client listener takes both; a [metrics]
 * listener binds.
 */
#ifndef HK_LISTEN_H
#define HK_LISTEN_H

#include <stddef.h>

#define LISTEN_INHERITED_FD	3	/* SD_LISTEN_FDS_START */

/*
 * The listener the supervisor passed to this process: LISTEN_INHERITED_FD,
 * -1 when there is none (or more than one: warned, none used), -2 with
 * errno when it cannot be made non-blocking.  The variables are unset,
 * so that no child takes them for its own.
 */
int	listen_inherit(void);

/*
 * A socket bound to addr and listening with backlog: the fd, or -1 with
 * a reason in err; *bad says the address itself is wrong (a
 * configuration error), not a call that failed.
 */
int	listen_tcp(const char *, int, char *, size_t, int *);

#endif
