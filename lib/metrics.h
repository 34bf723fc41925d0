/*
 * metrics.h - counters, gauges and histograms, rendered in the Prometheus
 * text exposition format 0.0.4, and a small HTTP/1.1 listener on the
 * daemon's own loop that serves them at GET /metrics ([metrics] of
 * hakopod.toml(5)).
 *
 * The values live where the daemon already keeps its state (a counter is
 * a uint64_t in struct service, a gauge is a count the daemon has anyway):
 * the request path only increments, and a scrape walks that state through
 * the daemon's collect function.  Label values are bounded by the caller:
 * service names and status classes, never paths or client addresses.
 */
#ifndef HK_METRICS_H
#define HK_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct loop;

#define METRICS_BODY_MAX	(8 * 1024 * 1024)	/* one scrape */
#define METRICS_BUCKETS_MAX	16

/*
 * A histogram of durations: counts per upper bound (microseconds, the
 * last one +Inf), their sum.  Observing is a short loop, no allocation.
 */
struct metrics_hist {
	const int64_t	*bounds_us;	/* ascending, nbounds of them */
	size_t		 nbounds;
	uint64_t	 counts[METRICS_BUCKETS_MAX + 1]; /* not cumulative */
	int64_t		 sum_us;
	uint64_t	 count;
};

/* The default bounds of a wait or a start, 5 ms to 5 min. */
extern const int64_t	metrics_wait_bounds_us[];
extern const size_t	metrics_wait_nbounds;

void	metrics_hist_init(struct metrics_hist *, const int64_t *, size_t);
void	metrics_hist_observe(struct metrics_hist *, int64_t);

/* "1xx".."5xx", the class of an HTTP status; NULL outside 100..599. */
const char	*metrics_class(int);
/* Index 0..4 of that class, -1 outside. */
int		 metrics_class_index(int);

/* A text being rendered; grows to METRICS_BODY_MAX, then stays short. */
struct metrics_out {
	char	*buf;
	size_t	 len;
	size_t	 cap;
	int	 full;		/* a line did not fit: the scrape fails */
};

/* # HELP and # TYPE of a family; type "counter", "gauge", "histogram". */
void	metrics_family(struct metrics_out *, const char *, const char *,
	    const char *);
/*
 * One sample; labels are name, value pairs ending at NULL (NULL itself
 * for none).  Values are escaped as the format wants.
 */
void	metrics_u64(struct metrics_out *, const char *, const char *const *,
	    uint64_t);
void	metrics_i64(struct metrics_out *, const char *, const char *const *,
	    int64_t);
/* The _bucket, _sum and _count lines of one histogram, in seconds. */
void	metrics_hist(struct metrics_out *, const char *, const char *const *,
	    const struct metrics_hist *);
void	metrics_out_free(struct metrics_out *);

/* The daemon's part of a scrape: writes its families into out. */
typedef void	metrics_collect_fn(struct metrics_out *, void *);

struct metrics_srv;

/*
 * Binds addr (host:port) and serves GET /metrics on l.  NULL with a reason
 * in err; *bad says the address itself is wrong.
 */
struct metrics_srv *metrics_listen(struct loop *, const char *,
	    metrics_collect_fn *, void *, char *, size_t, int *);
void	metrics_close(struct metrics_srv *);

#endif
