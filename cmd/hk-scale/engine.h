/*
 * engine.h - an asynchronous client of the Docker Engine API (Docker, or
 * podman's "podman system service"), pinned to API version 1.41, driven
 * by lib/loop through libcurl's multi interface: nothing here blocks the
 * caller's loop.  hk-scale's alone, for its container backend; the unit
 * test, the fuzz harnesses and tests/tools/engine-cli link these files
 * (UNIT_SRCS_engine and the like in the Makefile).
 *
 * THE ENGINE
 *	engine_open() takes the engine's URL:
 *
 *	unix:///run/podman/podman.sock	a Unix socket (CURLOPT_UNIX_SOCKET_PATH)
 *	tcp://host:port			TCP; HTTPS when struct engine_conf names
 *					a client certificate, key or CA file
 *
 *	and returns a handle, or NULL with a reason.  It connects to nothing
 *	yet: each call connects (or reuses an idle connection) when it runs.
 *	engine_close() ends every call and event stream at once, without
 *	their callbacks; it may not be called from one of this module's
 *	callbacks.
 *
 * CALLS
 *	Every operation below starts one HTTP exchange and returns at once:
 *	a struct engine_call, or NULL with errno (EINVAL for an argument
 *	that cannot go into a request, such as an ID that is not one, ENOMEM)
 *	and no callback.  Otherwise the callback runs exactly once, later,
 *	from the loop (never from inside the operation that started it):
 *
 *	void fn(void *arg, int status, json_t *body, const char *err)
 *
 *	status	the HTTP status, or 0 when no answer came (connection refused,
 *		timeout, a broken answer);
 *	body	the answer parsed as JSON (object or array; NULL when empty),
 *		borrowed: json_incref() it to keep it;
 *	err	NULL on success (a 2xx status, and for start and stop also 304,
 *		"already in that state"), otherwise a reason of at most
 *		ENGINE_ERR_LEN bytes: the engine's own "message" for a non-2xx
 *		status, "unable to connect to URL: Connection refused", "no
 *		answer from URL within N ms", "answer over N bytes", ...
 *		Control characters the engine sent are shown as '?'.
 *
 *	engine_cancel() drops a call before its callback (it is then never
 *	called); the handle is invalid once the callback has run.  A callback
 *	may start or cancel other calls.  Answers are bounded
 *	(ENGINE_BODY_MAX); a call has conf.timeout_ms to complete (default
 *	ENGINE_TIMEOUT_MS; a stop has its grace period more; a pull
 *	ENGINE_PULL_TIMEOUT_MS).
 *
 * OPERATIONS
 *	engine_version		GET /version: the engine answers (a ping)
 *	engine_image_inspect	GET /images/NAME/json; 404 when absent
 *	engine_image_pull	POST /images/create?fromImage=NAME (":latest"
 *				when NAME has no tag or digest); the
 *				progress stream is read to its end, and an
 *				"error" in it fails the call, as a non-2xx
 *				status does; body is the last progress object;
 *				with the header line "X-Registry-Auth: ..."
 *				when given one (regauth.h)
 *	engine_create		POST /containers/create from a struct
 *				engine_spec; body holds "Id" (engine_id())
 *	engine_start		POST /containers/ID/start
 *	engine_stop		POST /containers/ID/stop?t=SECONDS: the stop
 *				signal, then SIGKILL after SECONDS
 *	engine_kill		POST /containers/ID/kill?signal=SIGNAL
 *	engine_pause		POST /containers/ID/pause: its processes
 *				frozen; it keeps its memory, and inspect
 *				and list say "paused" (podman 4.3 answers
 *				500 for one already paused)
 *	engine_unpause		POST /containers/ID/unpause: thawed (500
 *				for one not paused).  podman 4.3 refuses to
 *				stop a paused container (500, at once), and
 *				a signal other than SIGKILL waits, pending,
 *				for the unpause: a paused container is
 *				stopped with engine_kill() of its stop
 *				signal, then engine_unpause().  Docker
 *				20.10 answers 409 for one already paused,
 *				500 "is not paused" for one that is not,
 *				and thaws a paused container itself once
 *				it has signalled it
 *	engine_remove		DELETE /containers/ID?force=1&v=1: killed if
 *				running (or paused), and its anonymous
 *				volumes removed
 *	engine_inspect		GET /containers/ID/json; engine_state() reads
 *				state, exit code, health and published port
 *	engine_list		GET /containers/json?all=1 with label filters:
 *				an array of every container (stopped ones
 *				too) carrying all the labels given; each entry
 *				has "Id", "State" and "Labels"
 *	engine_volume_create	POST /volumes/create: a named volume with
 *				labels, its root directory owned by uid:gid
 *				(DriverOpts o=uid=U,gid=G: podman's local
 *				driver sets the owner; Docker's would take
 *				them as mount options and fail at the start:
 *				-1 and -1 send none); an existing one of
 *				that name is answered as it is (both Docker
 *				and podman), not changed
 *	engine_volume_list	GET /volumes with label filters: body holds
 *				"Volumes", each with "Name", "Labels" and
 *				"CreatedAt"
 *	engine_volume_users	GET /containers/json?all=1 filtered by
 *				volume: the containers (stopped ones too)
 *				that mount it
 *	engine_volume_remove	DELETE /volumes/NAME: the engine refuses one
 *				in use (409, its reason in err), 404 for one
 *				that is not there
 *	engine_exec_create	POST /containers/ID/exec: a command to run in
 *				the running container; body holds "Id", the
 *				exec's (engine_id())
 *	engine_exec_start	POST /exec/ID/start: runs it; the call ends
 *				when the command does (its output is read and
 *				dropped, at most 64 KiB at a time)
 *	engine_exec_inspect	GET /exec/ID/json; engine_exec_state() reads
 *				whether it runs and its exit code
 *	engine_archive_put	PUT /containers/ID/archive?path=DIR: a tar
 *				archive (at most ENGINE_ARCHIVE_MAX bytes,
 *				copied) unpacked under DIR, an absolute
 *				path that exists in the container; into a
 *				created container's file system, which is
 *				on the node's disk (engine_archive.c)
 *
 *	ID is a container's ID or name: letters, digits and "_.-", at most
 *	ENGINE_NAME_MAX bytes.  An image name is a reference of letters,
 *	digits and "_.-:/@", at most ENGINE_IMAGE_MAX bytes.  Labels are
 *	"key=value" strings in NULL-terminated arrays.
 *
 * THE CONTAINER
 *	struct engine_spec says what engine_create() asks for; zero (or
 *	NULL) fields are left to the image and the engine.  The image's
 *	HEALTHCHECK is kept as it is.  entrypoint replaces the image's
 *	Entrypoint (and, as both engines do, its Cmd unless cmd is given:
 *	a caller gives both).  port (TCP) is exposed and, when
 *	host_ip is set, published on host_ip:host_port (0: the engine picks
 *	one, engine_state() tells which).  memory is in bytes, nano_cpus in
 *	billionths of a CPU.  nofile and nproc set soft and hard rlimits
 *	(podman needs both here: its defaults fail with "error setting
 *	rlimit"); tmpfs entries are "PATH" or "PATH:OPTIONS" (podman needs
 *	"/tmp:rw,notmpcopyup" here); network is the NetworkMode
 *	("slirp4netns:port_handler=slirp4netns", "host", NULL for the
 *	engine's default).  no_new_privs and cap_drop_all ask for
 *	no-new-privileges and no capability at all.  binds are bind mounts,
 *	"HOST:PATH" or "HOST:PATH:OPTIONS" ("ro"), both paths absolute and
 *	without ':', or HOST a volume's name (HostConfig.Binds); workdir is the working directory of
 *	the command (WorkingDir), absolute.  The container has no TTY, so
 *	its output is multiplexed (see LOGS).
 *
 * EVENTS
 *	engine_events_open() keeps one long-lived GET /events?filters=
 *	{type: [container], label: [...]} and calls its callback for each
 *	struct engine_event (other actions are dropped here, not by an
 *	"event" filter: podman 4.3 matches that against its own names,
 *	"died" for the "die" it sends):
 *
 *	ENGINE_EV_UP	the stream is (again) connected: events from now on
 *			arrive; what happened while it was down did not, so
 *			a caller reconciles with engine_list() here
 *	ENGINE_EV_DOWN	the stream is gone: reason says why; it reconnects
 *			by itself after a backoff (ENGINE_BACKOFF_MIN_MS,
 *			doubling to ENGINE_BACKOFF_MAX_MS)
 *	ENGINE_EV_CREATE container id was created
 *	ENGINE_EV_START	container id started
 *	ENGINE_EV_DIE	container id exited: exit_code (or -1 if the engine
 *			did not say; 128+n for a signal n)
 *	ENGINE_EV_HEALTH container id's health check ran: health holds the
 *			status the engine reported ("healthy", "unhealthy",
 *			"starting"; podman 4.3 reports the status from before
 *			the check: engine_inspect() has the current one)
 *
 *	The stream is parsed one JSON object at a time, however the bytes are
 *	cut, with or without newlines between objects; an object over
 *	ENGINE_OBJ_MAX bytes or bytes that are not JSON drop the connection
 *	(ENGINE_EV_DOWN, then a reconnection).  An event's strings are
 *	borrowed for the callback only.  engine_events_close() ends the
 *	stream; the callback may call it.
 *
 * LOGS
 *	engine_logs() follows GET /containers/ID/logs?follow=1&stdout=1&
 *	stderr=1&since=SINCE (seconds since the epoch; 0 for everything kept)
 *	and decodes the multiplexed stream (8-byte headers: stream, 0, 0, 0,
 *	big-endian length) into lines, each given to line_fn without its
 *	newline (nor a "\r" before it), with the stream it came from (1
 *	stdout, 2 stderr) and NUL-terminated; a line longer than
 *	ENGINE_LINE_MAX bytes comes in pieces of that size, and a line may
 *	hold any byte: a relay escapes them, as the exec backend does.  When
 *	the container stops, the engine ends the stream: the last partial
 *	lines are given, then fn is called as for any call (err NULL for an
 *	end of stream, a reason otherwise).  engine_cancel() stops it.  So a
 *	backend relays a container's output line by line as the exec backend
 *	relays a process's, and after a restart of its own follows it again
 *	with since = the time it restarted.  engine_logs_read() is the same
 *	with flags: without ENGINE_LOGS_FOLLOW it ends with what the engine
 *	has kept ("hk logs" of a service on a node); with ENGINE_LOGS_TIMES
 *	each frame's payload begins with its time and a space, as the
 *	engine wrote it (Docker: RFC 3339 with nanoseconds; podman 4.3:
 *	seconds), so a line cut across frames has one inside it.
 *
 * PARSERS
 *	The stream parsers are pure functions over bytes, for the tests and
 *	fuzzers: engine_objects() finds whole JSON objects at the start of a
 *	buffer, engine_event() reads one event object, engine_mux_feed()
 *	decodes a multiplexed stream, engine_log_time() reads a timed line's
 *	time; engine_state() and engine_id() read
 *	answers.  None of them trusts its input.
 */
#ifndef HK_ENGINE_H
#define HK_ENGINE_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define ENGINE_API		"v1.41"
#define ENGINE_ERR_LEN		256
#define ENGINE_URL_MAX		128
#define ENGINE_ID_MAX		65	/* 64 hex digits and a NUL */
#define ENGINE_NAME_MAX		128	/* an ID or a name */
#define ENGINE_IMAGE_MAX	255	/* an image reference */
#define ENGINE_VOLUME_MAX	255	/* a volume's name */
#define ENGINE_ADDR_MAX		46	/* an IPv6 address and a NUL */
#define ENGINE_BODY_MAX		(4 * 1024 * 1024)	/* one answer */
#define ENGINE_OBJ_MAX		(64 * 1024)	/* one object of a stream */
#define ENGINE_ARCHIVE_MAX	(64 * 1024 * 1024)	/* a tar put */
#define ENGINE_LINE_MAX		512	/* one line of output */
#define ENGINE_TIMEOUT_MS	30000
#define ENGINE_CONNECT_MS	5000
#define ENGINE_PULL_TIMEOUT_MS	600000
#define ENGINE_BACKOFF_MIN_MS	250
#define ENGINE_BACKOFF_MAX_MS	8000

struct loop;
struct engine;
struct engine_call;
struct engine_events;

struct engine_conf {
	const char	*url;		/* unix:///path or tcp://host:port */
	const char	*tls_cert;	/* PEM files for tcp://, or NULL */
	const char	*tls_key;
	const char	*tls_ca;
	long		 timeout_ms;	/* 0: ENGINE_TIMEOUT_MS */
	/*
	 * Another HTTP API on the same transport (the Kubernetes backend,
	 * k8s_api.c): url is then https://HOST[:PORT][/PATH], the base
	 * of every path as it is (no API version), verified against ca_pem
	 * (NULL: the system's CAs); a client certificate and key as PEM
	 * text, or a bearer token, or neither.  Copied; the key and token
	 * are zeroed when the engine is closed.
	 */
	int		 api;
	const char	*ca_pem;
	const char	*cert_pem;
	const char	*key_pem;
	const char	*bearer;
};

typedef void	engine_done_fn(void *, int, json_t *, const char *);

struct engine	*engine_open(struct loop *, const struct engine_conf *,
		    char *, size_t);
void		 engine_close(struct engine *);
/* The URL it was opened with. */
const char	*engine_url(const struct engine *);
void		 engine_cancel(struct engine_call *);

struct engine_call *engine_version(struct engine *, engine_done_fn *,
		    void *);
struct engine_call *engine_image_inspect(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_image_pull(struct engine *, const char *,
		    const char *, engine_done_fn *, void *);

struct engine_spec {
	const char		*name;		/* NULL: the engine names it */
	const char		*image;
	const char *const	*entrypoint;	/* NULL: the image's */
	const char *const	*cmd;		/* NULL: the image's */
	const char *const	*env;		/* "KEY=VALUE" */
	const char *const	*labels;	/* "key=value" */
	const char		*user;		/* "uid[:gid]" */
	int			 port;		/* exposed, TCP; 0: none */
	const char		*host_ip;	/* port published there */
	int			 host_port;	/* 0: the engine picks one */
	int64_t			 memory;	/* bytes */
	int64_t			 nano_cpus;	/* 1000000000 = one CPU */
	int			 nofile;	/* RLIMIT_NOFILE, soft = hard */
	int			 nproc;		/* RLIMIT_NPROC, soft = hard */
	const char *const	*tmpfs;		/* "PATH[:OPTIONS]" */
	const char *const	*binds;		/* "HOST:PATH[:OPTIONS]" */
	const char		*workdir;	/* NULL: the image's */
	const char		*network;	/* NetworkMode */
	int			 init;		/* an init as PID 1 */
	int			 no_new_privs;	/* no-new-privileges */
	int			 cap_drop_all;	/* CapDrop: ALL */
};

struct engine_call *engine_create(struct engine *,
		    const struct engine_spec *, engine_done_fn *, void *);
struct engine_call *engine_start(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_stop(struct engine *, const char *, int,
		    engine_done_fn *, void *);
struct engine_call *engine_kill(struct engine *, const char *,
		    const char *, engine_done_fn *, void *);
struct engine_call *engine_pause(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_unpause(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_remove(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_inspect(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_list(struct engine *, const char *const *,
		    engine_done_fn *, void *);

struct engine_call *engine_volume_create(struct engine *, const char *,
		    const char *const *, long, long, engine_done_fn *,
		    void *);
struct engine_call *engine_volume_list(struct engine *, const char *const *,
		    engine_done_fn *, void *);
struct engine_call *engine_volume_users(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_volume_remove(struct engine *, const char *,
		    engine_done_fn *, void *);

struct engine_call *engine_exec_create(struct engine *, const char *,
		    const char *const *, engine_done_fn *, void *);
struct engine_call *engine_exec_start(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_exec_inspect(struct engine *, const char *,
		    engine_done_fn *, void *);
struct engine_call *engine_archive_put(struct engine *, const char *,
		    const char *, const void *, size_t, engine_done_fn *,
		    void *);
/* 1 still running, 0 exited (*code: its status, -1 unknown), -1 no. */
int		 engine_exec_state(const json_t *, int *);

/* What engine_inspect() told of a container. */
struct engine_state {
	char	id[ENGINE_ID_MAX];
	char	status[16];	/* created running paused exited dead ... */
	int	running;
	int	exit_code;
	int	pid;		/* 0 when not running */
	char	health[16];	/* "" without a health check */
	char	host_ip[ENGINE_ADDR_MAX];	/* where port is published, */
	int	host_port;			/* or "" and 0 */
};

/* Reads an inspect answer; port picks the published port to report. */
int		 engine_state(const json_t *, int, struct engine_state *,
		    char *, size_t);
/* The "Id" of a create answer or a list entry, if it is an ID; or NULL. */
const char	*engine_id(const json_t *);

enum engine_ev_kind {
	ENGINE_EV_UP,
	ENGINE_EV_DOWN,
	ENGINE_EV_START,
	ENGINE_EV_DIE,
	ENGINE_EV_HEALTH,
	ENGINE_EV_CREATE
};

struct engine_event {
	enum engine_ev_kind	 kind;
	const char		*reason;	/* DOWN */
	char			 id[ENGINE_ID_MAX];
	const char		*name;		/* "" if not given */
	int			 exit_code;	/* DIE; -1 if not given */
	const char		*health;	/* HEALTH; "" if not given */
	int64_t			 time_ns;	/* 0 if not given */
	const json_t		*attrs;		/* Actor.Attributes: labels */
};

typedef void	engine_event_fn(const struct engine_event *, void *);

struct engine_events *engine_events_open(struct engine *,
		    const char *const *, engine_event_fn *, void *);
void		 engine_events_close(struct engine_events *);

typedef int	engine_line_fn(int, const char *, size_t, void *);

/* line_fn returns 0 to go on, -1 once it has cancelled the call. */
struct engine_call *engine_logs(struct engine *, const char *, int64_t,
		    engine_line_fn *, engine_done_fn *, void *);
#define ENGINE_LOGS_FOLLOW	0x1	/* on until the container stops */
#define ENGINE_LOGS_TIMES	0x2	/* each frame begins with its time */
struct engine_call *engine_logs_read(struct engine *, const char *, int64_t,
		    int, engine_line_fn *, engine_done_fn *, void *);
/* The time that begins a timed line: its length with its space, *ms. */
size_t		 engine_log_time(const char *, size_t, int64_t *);

/*
 * engine_objects: the state of a scan for whole JSON objects in a stream.
 * Zeroed to start, then kept between calls, the buffer starting each time
 * with the bytes the last call did not take, more after them.
 */
struct engine_split {
	size_t	pos;		/* bytes of the buffer already scanned */
	size_t	start;		/* where the current object starts */
	int	depth;
	int	str;		/* inside a string */
	int	esc;		/* after a backslash in a string */
};

typedef int	engine_obj_fn(json_t *, void *);

/*
 * Calls fn for each whole object at the start of buf (fn returns 0 to
 * go on, -1 to stop), and returns how many bytes they took (with the
 * white space around them): the caller drops those and keeps the rest for
 * more bytes.  -1 with a reason when buf holds something other than
 * objects, or an object over ENGINE_OBJ_MAX bytes.
 */
ssize_t		 engine_objects(struct engine_split *, const char *, size_t,
		    engine_obj_fn *, void *, char *, size_t);
/* Reads an event object: 1 for a container event of ours, 0 not. */
int		 engine_event(const json_t *, struct engine_event *);

struct engine_mux {
	unsigned char	hdr[8];
	size_t		hlen;		/* bytes of hdr read */
	int		stream;		/* of the current frame */
	uint32_t	left;		/* its payload still to come */
	char		line[2][ENGINE_LINE_MAX + 1];	/* stdout, stderr */
	size_t		len[2];
	char		err[ENGINE_ERR_LEN];	/* what stream 3 said */
	size_t		errlen;
};

/*
 * Decodes bytes of a multiplexed stream: each whole line goes to fn (0 to
 * go on, -1 to stop: then -1 is returned, the reason ""), at once.  -1
 * with a reason for a header that is not one, or for what the engine said
 * on stream 3.  engine_mux_end() gives the partial lines left.
 */
int		 engine_mux_feed(struct engine_mux *, const char *, size_t,
		    engine_line_fn *, void *, char *, size_t);
int		 engine_mux_end(struct engine_mux *, engine_line_fn *, void *);

#endif
