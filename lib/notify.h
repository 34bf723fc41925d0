/*
 * notify.h - readiness, both ways (STYLE.md 2.6).
 *
 * s6: "-d FD" names the fd from the service dir's notification-fd; a newline
 * is written to it when ready, then it is closed.  systemd: if NOTIFY_SOCKET
 * is set, datagrams READY=1, RELOADING=1 with MONOTONIC_USEC=, STOPPING=1
 * and STATUS= go to it ('@' is the abstract namespace).  The protocol is
 * documented as stable to reimplement; no libsystemd.
 */
#ifndef HK_NOTIFY_H
#define HK_NOTIFY_H

/* Both ways at once; fd -1 means no notification fd.  0 or -1. */
int	notify_ready(int);
int	notify_reloading(void);
int	notify_stopping(void);
int	notify_status(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Sends one raw datagram to $NOTIFY_SOCKET; 0 also when it is unset. */
int	notify_send(const char *);
/* Checks that "-d FD" names an open fd; -1 otherwise. */
int	notify_fd_valid(int);

#endif
