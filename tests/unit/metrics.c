/*
 * metrics.c - lib/metrics.c: the exposition text of each kind of sample
 * (escaping of label values and of HELP), histograms cumulative with
 * +Inf, _sum and _count in seconds, status classes, and the bound of a
 * scrape.
 */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "tap.h"

/* The text rendered so far, NUL-terminated, then forgotten. */
static char *
text(struct metrics_out *o)
{
	static char buf[8192];
	size_t n = o->len < sizeof(buf) - 1 ? o->len : sizeof(buf) - 1;

	memcpy(buf, o->buf != NULL ? o->buf : "", n);
	buf[n] = '\0';
	metrics_out_free(o);
	return buf;
}

static void
t_samples(void)
{
	struct metrics_out o;
	const char *l[] = { "service", "fn/echo", "code", "2xx", NULL };
	const char *esc[] = { "service", "a\\b\"c\nd", NULL };

	memset(&o, 0, sizeof(o));
	metrics_family(&o, "hk_x_total", "counter", "Line one\nback\\slash "
	    "\"quoted\".");
	is(text(&o), "# HELP hk_x_total Line one\\nback\\\\slash "
	    "\"quoted\".\n# TYPE hk_x_total counter\n",
	    "HELP escapes a newline and a backslash, not a quote");
	metrics_u64(&o, "hk_x_total", NULL, 18446744073709551615ULL);
	is(text(&o), "hk_x_total 18446744073709551615\n",
	    "no labels: no braces; the whole uint64 range");
	metrics_u64(&o, "hk_x_total", l, 3);
	is(text(&o), "hk_x_total{service=\"fn/echo\",code=\"2xx\"} 3\n",
	    "two labels, in the order given");
	metrics_u64(&o, "hk_x_total", esc, 1);
	is(text(&o), "hk_x_total{service=\"a\\\\b\\\"c\\nd\"} 1\n",
	    "a label value escapes backslash, quote and newline");
	metrics_i64(&o, "hk_g", NULL, -2);
	is(text(&o), "hk_g -2\n", "a gauge may be negative");
}

static void
t_histogram(void)
{
	static const int64_t b[] = { 100000, 1000000 };
	const char *l[] = { "service", "fn/a", NULL };
	struct metrics_hist h;
	struct metrics_out o;

	memset(&o, 0, sizeof(o));
	metrics_hist_init(&h, b, 2);
	metrics_hist(&o, "hk_w_seconds", NULL, &h);
	is(text(&o), "hk_w_seconds_bucket{le=\"0.100000\"} 0\n"
	    "hk_w_seconds_bucket{le=\"1.000000\"} 0\n"
	    "hk_w_seconds_bucket{le=\"+Inf\"} 0\n"
	    "hk_w_seconds_sum 0.000000\nhk_w_seconds_count 0\n",
	    "an empty histogram: every bucket, +Inf, sum and count");
	metrics_hist_observe(&h, 50000);
	metrics_hist_observe(&h, 100000);	/* le is inclusive */
	metrics_hist_observe(&h, 250000);
	metrics_hist_observe(&h, 7500000);
	metrics_hist_observe(&h, -5);		/* a clock step: 0 */
	metrics_hist(&o, "hk_w_seconds", l, &h);
	is(text(&o), "hk_w_seconds_bucket{service=\"fn/a\",le=\"0.100000\"} 3\n"
	    "hk_w_seconds_bucket{service=\"fn/a\",le=\"1.000000\"} 4\n"
	    "hk_w_seconds_bucket{service=\"fn/a\",le=\"+Inf\"} 5\n"
	    "hk_w_seconds_sum{service=\"fn/a\"} 7.900000\n"
	    "hk_w_seconds_count{service=\"fn/a\"} 5\n",
	    "buckets cumulative, le inclusive, le after the labels, sum "
	    "in seconds");
	metrics_hist_init(&h, metrics_wait_bounds_us, metrics_wait_nbounds);
	ok(h.nbounds == metrics_wait_nbounds && h.nbounds <=
	    METRICS_BUCKETS_MAX, "the default bounds fit (%zu)", h.nbounds);
}

static void
t_classes(void)
{
	is(metrics_class(200), "2xx", "200 is 2xx");
	is(metrics_class(101), "1xx", "101 is 1xx");
	is(metrics_class(599), "5xx", "599 is 5xx");
	ok(metrics_class(600) == NULL && metrics_class(0) == NULL &&
	    metrics_class_index(99) == -1, "outside 100..599: none");
	isint(metrics_class_index(404), 3, "404 is index 3");
}

static void
t_bound(void)
{
	struct metrics_out o;
	size_t i;

	memset(&o, 0, sizeof(o));
	for (i = 0; i < METRICS_BODY_MAX / 16 + 1 && !o.full; i++)
		metrics_u64(&o, "hk_a_fairly_long_name_total", NULL, i);
	ok(o.full && o.len <= METRICS_BODY_MAX,
	    "a scrape stops at METRICS_BODY_MAX and says so");
	metrics_out_free(&o);
}

int
main(void)
{
	plan(14);
	t_samples();
	t_histogram();
	t_classes();
	t_bound();
	return done();
}
