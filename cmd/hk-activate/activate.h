/*
 * activate.h - declarations private to hk-activate, the HTTP/1.1
 * activation gateway.
 *
 * One process, one loop.  A client connection (struct conn) carries one
 * request at a time through explicit states, one list per state.  Its
 * buffers are embedded and bounded, and connections are recycled through a
 * free list, so the steady state allocates nothing per request.  A service
 * (struct service) holds the policy read from the store and what the
 * gateway knows at run time: its endpoint, active requests, parked
 * requests and idle keep-alive connections to its backend.
 *
 * The layers, top down: main.c sets up; ctl.c carries out what hk-scale,
 * hk-idle and hk say, through park.c and route.c; conn.c owns each client
 * connection and carries out what park.c decides for its request; park.c
 * decides (limits, the queue, each service's instance) and hands a
 * request back only through conn_resume; upstream.c owns the backend
 * connections and tells conn.c what befalls a request; route.c is the
 * table, and calls up into none of them.
 */
#ifndef HK_ACTIVATE_H
#define HK_ACTIVATE_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/tree.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <http_parser.h>

#include "config.h"
#include "http.h"
#include "loop.h"
#include "retry.h"
#include "metrics.h"
#include "proxyproto.h"
#include "spec.h"
#include "store.h"

#define PROG			"hk-activate"

#define HEAD_MAX		HTTP_HEAD_MAX	/* request or response head */
#define IN_SIZE			8192	/* client bytes read ahead */
#define XBUF_SIZE		(HEAD_MAX + 4096)	/* each direction */
#define FRAME_RESERVE		64	/* chunk framing per read */
#define HEADER_TIMEOUT_MS	10000	/* slow-loris cut */
#define KEEPALIVE_TIMEOUT_MS	60000	/* idle client connection */
#define WRITE_TIMEOUT_MS	30000	/* own answer, stalled client */
#define LINGER_MS		2000	/* input drained before close */
#define POOL_IDLE_MS		2000	/* idle backend connection */
#define BODY_MEM_MAX		(XBUF_SIZE / 2)	/* body bytes kept in memory */
#define PACE_WINDOW		4	/* unproven connections to an endpoint */
#define PACE_CHECK_MS		200	/* then: was it accepted? */
#define FREE_CONNS_MAX		256	/* closed connections kept */
#define DRAIN_DEFAULT_S		10
#define REC_HOST_MAX		127
#define REC_PATH_MAX		255
#define SVC_ID_MAX		(2 * STORE_NAME_MAX + 1)
#define REASON_MAX		640	/* hk-scale's are at most 608 */
#define STATS_CODES		5	/* 400 413 429 503 504, stats.c */
#define PAGE_MAX		16384	/* bytes of the waiting page */
#define PAGE_MAX_TEXT		"16384"
#define SPLICE_MIN		16384	/* body bytes worth a pipe, splice.c */
#define PIPES_MAX		64	/* idle pipes kept */
#define RELAY_TURNS		8	/* backend reads an event, upstream.c */

enum conn_state {
	CS_IDLE,	/* keep-alive, no request yet */
	CS_HEAD,	/* reading a request head */
	CS_PARKED,	/* waiting for an endpoint (cold start) */
	CS_BODY,	/* reading a body whole before forwarding it */
	CS_FORWARD,	/* connecting, sending, receiving */
	CS_TUNNEL,	/* after a 101: bytes both ways */
	CS_ANSWER,	/* writing the gateway's own answer */
	CS_COUNT
};

enum svc_state {
	SVC_SLEEPING,
	SVC_STARTING,
	SVC_RUNNING,
	SVC_DRAINING,	/* fenced: waiting for its down */
};

/* A byte queue with a stated bound. */
struct xbuf {
	size_t	off;
	size_t	len;
	char	data[XBUF_SIZE];
};

struct service;
struct conn;
struct park_verdict;
TAILQ_HEAD(parkq, conn);
TAILQ_HEAD(connq, conn);
STAILQ_HEAD(svc_list, service);

struct upconn {
	TAILQ_ENTRY(upconn)	 entry;		/* service pool */
	int			 fd;
	int			 connecting;
	int			 proven;	/* the backend answered on it */
	size_t			 sent;		/* of c->up, kept until proven */
	uint64_t		 gen;		/* endpoint generation */
	struct service		*svc;
	struct conn		*c;		/* NULL while pooled */
	struct loop_timer	 timer;		/* pool idle, or pace check */
};

struct conn {
	TAILQ_ENTRY(conn)	 entry;		/* list of its state */
	TAILQ_ENTRY(conn)	 park;		/* service's parked */
	enum conn_state		 state;
	int			 fd;
	struct loop_timer	 timer;
	char			 peer[64];	/* the TCP peer */
	char			 client[64];	/* its PROXY source, or peer */
	unsigned		 trusted:1,	/* peer in trusted_proxies */
				 proxy_wait:1,	/* its header not yet read */
				 proxy_local:1,	/* LOCAL: the proxy's own check */
				 sniff:1;	/* untrusted: no header, first */
	uint64_t		 seq;		/* arrival order */

	http_parser		 req;
	http_parser		 resp;
	struct http_head	 head;
	size_t			 head_bytes;
	char			 in[IN_SIZE];
	size_t			 in_off, in_len;
	struct http_lex		 lex;		/* strict framing, ahead of req */
	size_t			 lexed;		/* in[] it took past in_off */
	uint64_t		 parsed;	/* bytes req took, as lex.pos */
	int			 spool_fd;	/* a body beyond BODY_MEM_MAX */
	uint64_t		 spool_len, spool_off;
	int			 pipe_r, pipe_w;	/* splice.c; -1 */
	size_t			 piped;		/* bytes in it */
	struct xbuf		 up;		/* to the backend */
	struct xbuf		 out;		/* to the client */

	struct service		*svc;
	struct upconn		*upc;
	size_t			 strip;		/* /fn/app/svc */

	/* one request */
	unsigned		 head_done:1, req_done:1, resp_started:1,
				 resp_done:1, keepalive:1, chunked_in:1,
				 chunked_out:1, expect100:1, upgrade:1,
				 close_after:1, counted:1, head_sent:1,
				 resp_close:1, resp_nobody:1, sent_100:1,
				 eof_client:1, eof_up:1, cold:1,
				 interim:1, overlimit:1, parse_paused:1,
				 bad:1, linger:1, buffering:1, up_broken:1,
				 upwait:1, quickacked:1, splicing:1,
				 pipe_full:1;
	int			 refuse;	/* answer of a refused body */
	const char		*outcome;	/* records: NULL = "ok" */
	uint64_t		 body_len;	/* declared Content-Length */
	int64_t			 start_deadline;	/* loop ms */
	int64_t			 body_deadline;	/* loop ms, buffering */
	int64_t			 page_at;	/* loop ms: waiting page; 0 */
	int64_t			 t_start_us;
	int64_t			 t_park_us;
	int64_t			 wait_us;
	int64_t			 wake_id;	/* the wake it joined; 0 none */
	int64_t			 at_ms;		/* wall clock */
	uint64_t		 bytes_in, bytes_out;
	int			 status;
	char			 method[16];
	char			 host[REC_HOST_MAX + 1];
	char			 path[REC_PATH_MAX + 1];
};

struct service {
	RB_ENTRY(service)	 rb;
	char			 id[SVC_ID_MAX + 1];
	int64_t			 revision;
	int			 routed;	/* public serverless */
	int			 stopped;	/* desired = stopped */
	int			 disabled;	/* by hk.toml: enabled = false */
	struct serverless_policy policy;
	char			**hosts;
	size_t			 nhosts;

	enum svc_state		 state;
	char			 endpoint[STORE_ENDPOINT_MAX + 1];
	struct sockaddr_storage	 addr;
	socklen_t		 addrlen;
	int64_t			 ep_revision;
	uint64_t		 gen;
	char			 fenced_ep[STORE_ENDPOINT_MAX + 1];
	int64_t			 fenced_rev;
	int			 active;
	int			 nparked;
	int64_t			 idle_since;	/* wall ms */
	int64_t			 ready_at;	/* wall ms */
	int64_t			 wake_at;	/* loop ms, 0 = none */
	int64_t			 wake_id;	/* of the last wake sent */
	int64_t			 fb_wake_id;	/* a wake whose first response */
	int64_t			 fb_from;	/* is awaited; since (loop ms) */
	int64_t			 failed_until;	/* loop ms */
	int			 retry_after;
	uint64_t		 waiting_pages;	/* sent instead of waiting */
	char			 reason[REASON_MAX + 1];
	struct parkq		 parked;
	TAILQ_HEAD(, upconn)	 pool;
	int			 npool;
	struct parkq		 upwait;	/* forwarded, no connection yet */
	int			 unproven;	/* new connections not answered */
	int			 window;	/* at most that many unproven */
	int			 gift_fd;	/* hk-scale's probe connection,
						   within park_ready only */
	struct loop_timer	 kick;		/* serve upwait, next turn */
	struct loop_timer	 timer;		/* delayed wake */
	uint64_t		 m_requests[5];	/* by class, stats.c */
	uint64_t		 m_connect_fail;
	STAILQ_ENTRY(service)	 drop;		/* route_reload's dropped */
};

RB_HEAD(svc_tree, service);

struct route {
	const char	*host;
	struct service	*svc;
};

struct gw {
	struct loop		*loop;
	struct server_config	 cfg;
	const char		*cfg_path;
	const char		*listen_flag;
	struct store		*store;
	struct evsink		*ev;
	int			 lfd;
	int			 lfd_deferred;	/* accept after the first bytes */
	int			 draining;
	int			 drain_s;
	struct loop_timer	 drain_timer;
	struct loop_timer	 accept_timer;	/* pause after EMFILE */
	int64_t			 start_wall;

	struct connq		 conns[CS_COUNT];
	size_t			 nconns[CS_COUNT];
	struct connq		 free_conns;
	size_t			 nfree;
	size_t			 inflight;
	uint64_t		 seq;
	uint64_t		 wake_seq;	/* makes wake ids unique */
	struct proxyproto_nets	 trusted;	/* trusted_proxies */
	uint64_t		 proxy_refused;	/* connections closed for it */

	struct svc_tree		 services;
	struct route		*routes;
	size_t			 nroutes;

	/* ctl.c */
	int			 ctl_fd;
	TAILQ_HEAD(, gctl)	 ctls;		/* ctl.c: activate.sock's peers */
	size_t			 nctls;
	int			 sub_fd;
	int			 wake_fd;
	int			 sub_ok;	/* subscribe acknowledged */
	int			 scale_backoff;
	struct loop_timer	 scale_timer;
	int			 scale_was_up;	/* subscribed since last loss, or
						   starting (ctl_scale_start) */
	int64_t			 scale_lost_at;	/* loop ms; 0 = never up */
	struct loop_timer	 grace_timer;	/* end of the restart grace */
	struct retry		 reload_retry;	/* a reload the store refused */

	/* stats.c: what GET /metrics shows besides the services' own */
	struct metrics_srv	*metrics;
	uint64_t		 m_answers[STATS_CODES];
	uint64_t		 m_unrouted[5];	/* no service, by class */
	struct metrics_hist	 m_wake_wait;
	struct metrics_hist	 m_first_byte;
	/* splice.c */
	int			 pipes[PIPES_MAX][2];	/* idle, empty */
	int			 npipes;
	size_t			 pipe_size;
	int			 splice_off;	/* the kernel refused it */
	/* page.c */
	char			 page[PAGE_MAX];
	size_t			 page_len;
	uint64_t		 waiting_pages;
};

extern struct gw	*gw;

/* The wall clock, ms: what records and hk-idle's idle_since are in. */
static inline int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * conn.c: client connections.  conn_resume carries out what park.c
 * decides, at the dispatch and for a request leaving the queue: it is the
 * one function park.c calls.  upstream.c tells conn.c what befalls a
 * request (conn_park, conn_refused, conn_fail, conn_abort...).
 */
int	conn_listen(const char *, char *, size_t, int *);
void	conn_accept(struct loop *, int, int, void *);
void	conn_resume(struct conn *, const struct park_verdict *);
void	conn_park(struct conn *);
void	conn_refused(struct conn *, uint64_t);
void	conn_update(struct conn *);
void	conn_answer_html(struct conn *, int, const char *, size_t, int);
void	conn_close(struct conn *);
void	conn_parse(struct conn *);
void	conn_forward(struct conn *);
void	conn_finish(struct conn *);
void	conn_abort(struct conn *, const char *);
void	conn_close_idle(void);
void	conn_fail(struct conn *, int, const char *);
void	conn_tunnel(struct conn *);
void	conn_flush(struct conn *);
int	conn_unsent(const struct conn *);
void	conn_free_all(void);
int	conn_trust_load(char *, size_t);
void	conn_trim(void);
size_t	conn_count(void);

/* body.c */
int	body_store(struct conn *, const char *, size_t);
int	body_spill(struct conn *);
int	body_pending(const struct conn *);
int	body_send(struct conn *, int);
void	body_close(struct conn *);

/* http.c */
extern const http_parser_settings	req_settings;
extern const http_parser_settings	resp_settings;
int	emit_request(struct conn *, struct xbuf *);
int	emit_answer(struct xbuf *, int, const char *, int, int, int);
int	emit_answer_html(struct xbuf *, int, const char *, size_t, int, int,
	    int);
size_t	xbuf_room(const struct xbuf *);
size_t	xbuf_used(const struct xbuf *);
int	xbuf_add(struct xbuf *, const void *, size_t);
void	xbuf_reset(struct xbuf *);
void	xbuf_release(struct xbuf *);
void	xbuf_consumed(struct xbuf *, size_t);

/* splice.c */
int	splice_begin(struct conn *);
void	splice_end(struct conn *);
size_t	splice_room(const struct conn *);
ssize_t	splice_in(struct conn *, int);
int	splice_out(struct conn *);
void	splice_free_all(void);

/*
 * upstream.c: backend connections, pooled and paced per service.  What
 * befalls a request it tells conn.c; park.c and ctl.c change a service's
 * endpoint through it (upstream_pool_drop, the gift); its address is
 * endpoint_parse()'s.
 */
void	upstream_start(struct conn *);
void	upstream_release(struct conn *, int);
void	upstream_update(struct conn *);
void	upstream_flush(struct conn *);
void	upstream_pool_drop(struct service *);
void	upstream_init(struct service *);
void	upstream_gift(struct service *, int);
void	upstream_gift_drop(struct service *);
void	upstream_unwait(struct conn *);

/*
 * route.c: the table, from the store.  A reload gives back the services
 * it no longer serves (removed, or stopped), a stop or start the service:
 * ctl.c acts on them; route.c answers no request.
 */
int	route_reload(struct svc_list *, char *, size_t);
struct service *route_lookup(const char *, const char *, size_t, size_t *);
struct service *route_service(const char *);
void	route_free(void);
int	route_set_desired(const char *, struct service **, char *, size_t);
RB_PROTOTYPE(svc_tree, service, rb, svc_cmp)

/*
 * park.c: the limits, the cold-start queue and each service's instance.
 * It decides, and conn.c acts: park_dispatch's verdict, and every request
 * leaving the queue taken off it (park_unlink) and handed to conn_resume.
 * park_dispatch, park_enter, park_unlink, park_timer, park_release and
 * park_refused are conn.c's; the rest ctl.c's, for what hk-scale, hk-idle
 * and hk say.
 */
enum park_kind {
	PARK_ANSWER,	/* the gateway's own answer */
	PARK_FORWARD,	/* the endpoint is known: to the backend */
	PARK_WAIT,	/* parked for a cold start (at the dispatch only) */
};

struct park_verdict {
	enum park_kind	 kind;
	int		 status;	/* PARK_ANSWER: the answer */
	int		 retry;		/* its Retry-After; 0 none */
	const char	*msg;
	const char	*outcome;	/* for the records; NULL: by status */
	char		 buf[REASON_MAX + 32];	/* msg, when it is made up */
};

void	park_dispatch(struct conn *, struct park_verdict *);
void	park_enter(struct conn *);
void	park_unlink(struct conn *);
void	park_timer(struct conn *);
void	park_release(struct conn *);
void	park_refused(struct service *, uint64_t);
void	park_ready(struct service *, const char *, int64_t, int *);
void	park_down(struct service *, const char *);
void	park_failed(struct service *, const char *, int);
void	park_wake_again(struct service *);
void	park_answer_all(struct service *, int, const char *, int);
void	park_wake_reply(struct service *, int, const char *);
void	park_desired(struct service *);
int	park_fence(struct service *, int64_t, int64_t *);
const char *park_state_name(const struct service *);
const char *park_stopped_msg(const struct service *);

/* ctl.c: the Unix sockets; reloads, stop and start carried out. */
int	ctl_listen(char *, size_t);
int	ctl_reload(char *, size_t);
void	ctl_scale_start(void);
void	ctl_scale_connect(void);
int	ctl_scale_up(void);
int	ctl_scale_grace(void);
int	ctl_wake(struct service *);
void	ctl_close(void);
void	ctl_close_listener(void);

/* stats.c */
void	stats_listen(void);
void	stats_request(const struct conn *);
void	stats_answer(int);
void	stats_first_byte(struct conn *);
void	stats_close(void);
/* gwmove.c: the gateway's address, guarded (gwaddr.h). */
void	gwmove_reload(void);
void	gwmove_check(void);
void	gwmove_start(int);

/* page.c */
void	page_load(int, int);
int	page_wanted(const struct conn *);
void	page_answer(struct conn *);

/* records.c */
void	records_add(const struct conn *, const char *);
void	records_flush(int);
uint64_t records_dropped(void);

#endif
