/*
 * ipc.h - messages between hk programs: one JSON object per SOCK_SEQPACKET
 * message (or SOCK_DGRAM datagram for events.sock), with a string "op".
 *
 * Only this module (de)serializes.  Decoding is strict: bounded size,
 * duplicate keys rejected, the top level must be an object; a request's
 * "op" must be a string (ipc_op() returns NULL otherwise), a reply has none.
 * Every message is distrusted, as relayd distrusts an imsg.
 */
#ifndef HK_IPC_H
#define HK_IPC_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

/*
 * Bytes in one message: a status reply of 512 services is about 75 KB.
 * Below the default SO_SNDBUF, which bounds one SOCK_SEQPACKET message.
 */
#define IPC_MSG_MAX	196608
#define IPC_ERR_LEN	256
/*
 * Control connections a daemon keeps: a new one past this closes the one
 * idle the longest (not a subscriber, not one owed a reply), so that the
 * operator always gets in, however many idle peers hold connections.
 */
#define IPC_CONNS_MAX	256

/* Parses one message; NULL with a reason on anything but an object. */
json_t	*ipc_decode(const char *, size_t, char *, size_t);
/* The "op" of a request, or NULL when it has no string "op". */
const char *ipc_op(const json_t *);
/* Connects a SOCK_SEQPACKET client to a socket path (blocking, CLOEXEC). */
int	 ipc_connect(const char *, char *, size_t);
int	 ipc_send(int, const json_t *, char *, size_t);
/* The same with a descriptor passed (SCM_RIGHTS); -1: none. */
int	 ipc_send_fd(int, const json_t *, int, char *, size_t);
/* recv(2) of one message; *fd: the first descriptor it carried, or -1. */
ssize_t	 ipc_recv_fd(int, char *, size_t, int *);
/* Waits up to timeout_ms for one message. */
json_t	*ipc_recv(int, int, char *, size_t);
/*
 * One request and its reply.  Returns 0 with *reply set, -1 with a reason;
 * errno is ENOENT or ECONNREFUSED when no daemon listens there.
 */
int	 ipc_call(const char *, const json_t *, json_t **, int, char *, size_t);

/* A listening socket at path, mode 0660; a live one there is not taken. */
int	 ipc_listen(const char *, int, char *, size_t);
/*
 * Who may talk to a daemon: root, the daemon's own uid, and the members
 * of its group (hk(7): the group hakopod), by their primary group or a
 * supplementary one.  ipc_peer_allowed asks of a connected socket's peer
 * (SO_PEERCRED, SO_PEERGROUPS); ipc_sender_allowed of a datagram's
 * sender (SCM_CREDENTIALS, its groups from /proc/PID/status).
 */
struct ucred;
int	 ipc_peer_allowed(int);
int	 ipc_sender_allowed(const struct ucred *);
/*
 * A connection on a listener, non-blocking, from a peer allowed; -1 when
 * there is none, or it was refused.  With no descriptor left (EMFILE) the
 * connection is taken with a spare one and closed at once, so that the
 * listener does not stay readable for ever.
 */
int	 ipc_accept(int, const char *);

#endif
