/*
 * fdstore.c - systemd's file descriptor store (FileDescriptorStoreMax=,
 * sd_pid_notify_with_fds(3)): where hk-scale runs as a unit that has one
 * (etc/systemd/hk-scale.service), the sockets it must not lose when it
 * dies are handed to systemd, which keeps them while the unit restarts
 * and hands them back to the next hk-scale as LISTEN_FDS, named.  No ptrace
 * rights are needed to have them again (exec_listen.c's fallback).
 *
 * Without NOTIFY_SOCKET (hk-scale run by hand, under s6) there is no store:
 * put and remove do nothing, take finds nothing.  A unit without
 * FileDescriptorStoreMax= refuses the fds (systemd logs it), and hk-scale
 * goes on as without a store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "xlisten.h"

static int	 fdstore_here(void);

/* hk-scale runs under systemd, which may keep its fds. */
static int
fdstore_here(void)
{
	const char *s = getenv("NOTIFY_SOCKET");

	return s != NULL && s[0] != '\0';
}

/*
 * fd kept by systemd under name (a copy: the caller keeps its own).  0
 * when kept or when there is no store; -1 when the message failed.
 */
int
fdstore_put(const char *name, int fd)
{
	char msg[FDSTORE_NAME_MAX + 32];
	int r;

	if (!fdstore_here())
		return 0;
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
	if ((r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1)) < 0) {
		errno = -r;
		log_warn("unable to hand %s to systemd's fd store", name);
		return -1;
	}
	return 0;
}

/* The fds kept under name no longer kept (closed by systemd). */
void
fdstore_remove(const char *name)
{
	char msg[FDSTORE_NAME_MAX + 32];
	int r;

	if (!fdstore_here())
		return;
	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	if ((r = sd_pid_notify(0, 0, msg)) < 0) {
		errno = -r;
		log_warn("unable to remove %s from systemd's fd store", name);
	}
}

/*
 * The fds an earlier hk-scale kept, handed back at this start: each to
 * got(name, fd), which owns it from then on.  LISTEN_FDS and the like
 * are removed from the environment, so that no instance inherits them.
 */
void
fdstore_take(void (*got)(const char *, int))
{
	char **names = NULL;
	int i, n;

	if ((n = sd_listen_fds_with_names(1, &names)) < 0) {
		errno = -n;
		log_warn("unable to read the fds systemd kept");
		return;
	}
	for (i = 0; i < n; i++) {
		got(names != NULL && names[i] != NULL ? names[i] : "",
		    SD_LISTEN_FDS_START + i);
		free(names != NULL ? names[i] : NULL);
	}
	free(names);
}
