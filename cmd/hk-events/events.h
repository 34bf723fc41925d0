/*
 * events.h - declarations private to hk-events, the event and request
 * log: the daemon that takes records on events.sock and writes them to
 * the store in batches, and the query modes that read them back.
 */
#ifndef HK_EVENTS_H
#define HK_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "loop.h"
#include "metrics.h"
#include "reqbatch.h"
#include "store.h"

#define PROG			"hk-events"
#define EV_FLUSH_MS		50	/* a record waits at most this long */
#define EV_FLUSH_RECORDS	1000	/* or until this many wait */
#define EV_PENDING_MAX		10000	/* kept of each kind, then dropped */
#define EV_READ_BURST		64	/* datagrams per turn of the loop */
#define EV_RETRY_MS		1000	/* after a failed write to the store */
#define EV_PRUNE_MS		60000	/* retention runs this often */
#define EV_PRUNE_AFTER		100000	/* or after this many new rows */
#define EV_DETAIL_MAX		4096	/* bytes of an event's detail JSON */
#define EV_ID_MAX		(2 * STORE_NAME_MAX + 1) /* app/service */
#define EV_LINE_MAX		1536	/* an event in one log or TSV line */
#define EV_DAY_MS		(24LL * 3600 * 1000)
#define EV_TIME_MAX		32	/* "2026-11-29T17:05:18.123Z" */

/* Counters since the start, logged when they change and at exit. */
struct ev_stats {
	uint64_t	 datagrams;
	uint64_t	 events;	/* written to the store */
	uint64_t	 requests;
	uint64_t	 malformed;	/* records or datagrams refused */
	uint64_t	 refused;	/* senders of another uid */
	uint64_t	 dropped;	/* valid, but no room while waiting */
	uint64_t	 pruned;
	uint64_t	 store_errors;	/* failed writes and prunes */
};

/* The daemon: one per process. */
struct evd {
	struct loop		*loop;
	struct store		*store;
	struct server_config	 cfg;
	const char		*config_path;
	int			 fd;		/* events.sock */
	char			 sock_path[CONFIG_URL_MAX + 16];
	char			*rbuf;		/* IPC_MSG_MAX + 1 */
	struct store_event	*ev;		/* waiting for the store */
	size_t			 nev;
	struct reqbatch_build	 rq;		/* request records, packed */
	int64_t			 oldest;	/* loop ms, first waiting */
	int64_t			 retry_at;	/* loop ms; 0 = may write now */
	int			 failing;	/* the last write failed */
	uint64_t		 dropped_logged;
	uint64_t		 since_prune;	/* rows written since */
	struct loop_timer	 flush_timer;
	struct loop_timer	 prune_timer;
	struct ev_stats		 st;
	int			 stopping;
	struct metrics_srv	*metrics;	/* stats.c */
};

/* The fields of a request record, pointing into the message. */
#define REC_NUMS	6
struct rec_fields {
	int64_t		 n[REC_NUMS];	/* at status duration_us wait_us
					   bytes_in bytes_out */
	const char	*svc;		/* NULL: null */
	size_t		 svclen;
	int64_t		 wake;		/* 0: absent or null */
	const char	*method, *host, *path, *outcome;
	size_t		 mlen, hlen, plen, olen;
};

/* record.c: strict validation of what senders send (pure) */
int	record_event(const json_t *, struct store_event *, char *, size_t);
int	record_request(const json_t *, struct rec_fields *, char *, size_t);
int	record_fields(const struct rec_fields *, struct reqbatch_rec *,
	    char *, size_t);
/*
 * Where the request records of a datagram go, on either path: packed
 * into b while it holds fewer than cap; a good one beyond is counted in
 * dropped, a refused one in bad (err: the last refusal); n counts those
 * taken.
 */
struct rec_sink {
	struct reqbatch_build	*b;
	size_t			 cap;
	size_t			 n, dropped;
	int			 bad;
};
void	rec_take(struct rec_sink *, const struct rec_fields *, char *,
	    size_t);
void	rec_put(struct rec_sink *, const struct reqbatch_rec *);
int	record_check(struct reqbatch_rec *, int, char *, size_t);
int	record_check_numbers(const struct reqbatch_rec *, char *, size_t);
/*
 * A {"op":"requests"} datagram into a sink: -1 when it is not one (the
 * sink untouched), else 0.  record_requests() takes it decoded (jansson);
 * fast.c reads it from the bytes when it is plain (see there), taking
 * the same records as record_requests() would, and declines the rest:
 * -1 then sends it to the general path.
 */
int	record_requests(const json_t *, struct rec_sink *, char *, size_t);
/*
 * packed.c: the base64 of a packed value (the "packed" string of a
 * requests message) into the sink: -1 with err set when it does not
 * unpack (the sink untouched), else 0.
 */
int	packed_requests(const char *, size_t, struct rec_sink *, char *,
	    size_t);
/*
 * A whole datagram {"op":"requests","packed":"..."} exactly as the
 * gateway writes it: as packed_requests(), or -2 when it is not that
 * (ipc_decode() and record_requests() decide).
 */
int	fast_packed(const char *, size_t, struct rec_sink *, char *, size_t);
int	fast_requests(const char *, size_t, struct rec_sink *, char *,
	    size_t);
int	record_valid_kind(const char *);
void	record_detail_text(const char *, char *, size_t);
void	record_service(const char *, const char *, char *, size_t);

/* ingest.c: events.sock, the waiting records, batches, retention */
int	ingest_listen(struct evd *, char *, size_t);
void	ingest_close(struct evd *);
void	ingest_before_sleep(struct loop *, void *);
int	ingest_flush(struct evd *);
void	ingest_prune(struct loop *, void *);
void	ingest_log_stats(struct evd *, const char *);

/* stats.c: GET /metrics on [metrics] events, from st */
void	stats_listen(struct evd *);
void	stats_close(struct evd *);

/* query.c: list, tail, requests */
int	query_main(const char *, int, char **);
int	query_since(const char *, int64_t, int64_t *);
void	query_time(int64_t, char *, size_t);

#endif
