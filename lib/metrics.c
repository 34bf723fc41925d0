/*
 * metrics.c - histograms and the Prometheus text exposition format 0.0.4
 * (prometheus.io/docs/instrumenting/exposition_formats): "# HELP name
 * text", "# TYPE name type", then "name{label=\"value\"} number" lines.
 * The HTTP side is metrics_http.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define LINE_MAX_LEN	1024	/* one sample line, before escaping */

const int64_t metrics_wait_bounds_us[] = {
	5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
	2500000, 5000000, 10000000, 30000000, 60000000, 120000000,
	300000000,
};
const size_t metrics_wait_nbounds = sizeof(metrics_wait_bounds_us) /
    sizeof(metrics_wait_bounds_us[0]);

static const char *const classes[] = { "1xx", "2xx", "3xx", "4xx", "5xx" };

static int	out_grow(struct metrics_out *, size_t);
static void	out_add(struct metrics_out *, const char *, size_t);
static void	out_printf(struct metrics_out *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	out_escaped(struct metrics_out *, const char *, int);
static void	out_labels(struct metrics_out *, const char *const *,
		    const char *, const char *);

void
metrics_hist_init(struct metrics_hist *h, const int64_t *bounds, size_t n)
{
	memset(h, 0, sizeof(*h));
	h->bounds_us = bounds;
	h->nbounds = n > METRICS_BUCKETS_MAX ? METRICS_BUCKETS_MAX : n;
}

/* Counted in its own bucket only: rendering makes them cumulative. */
void
metrics_hist_observe(struct metrics_hist *h, int64_t us)
{
	size_t i;

	if (us < 0)
		us = 0;
	for (i = 0; i < h->nbounds && us > h->bounds_us[i]; i++)
		;
	h->counts[i]++;
	h->sum_us += us;
	h->count++;
}

int
metrics_class_index(int status)
{
	if (status < 100 || status > 599)
		return -1;
	return status / 100 - 1;
}

const char *
metrics_class(int status)
{
	int i = metrics_class_index(status);

	return i == -1 ? NULL : classes[i];
}

static int
out_grow(struct metrics_out *o, size_t need)
{
	size_t cap;
	char *nb;

	if (o->full)
		return -1;
	if (o->len + need <= o->cap)
		return 0;
	cap = o->cap == 0 ? 16384 : o->cap;
	while (cap < o->len + need)
		cap *= 2;
	if (cap > METRICS_BODY_MAX)
		cap = METRICS_BODY_MAX;
	if (o->len + need > cap || (nb = realloc(o->buf, cap)) == NULL) {
		o->full = 1;
		return -1;
	}
	o->buf = nb;
	o->cap = cap;
	return 0;
}

static void
out_add(struct metrics_out *o, const char *s, size_t n)
{
	if (out_grow(o, n) == -1)
		return;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void
out_printf(struct metrics_out *o, const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		o->full = 1;
		return;
	}
	out_add(o, line, (size_t)n);
}

/*
 * Label values escape '\\', '"' and a newline; HELP text escapes '\\'
 * and a newline only (quote = 0).
 */
static void
out_escaped(struct metrics_out *o, const char *s, int quote)
{
	size_t n;

	while (*s != '\0') {
		n = strcspn(s, quote ? "\\\"\n" : "\\\n");
		out_add(o, s, n);
		s += n;
		if (*s == '\0')
			break;
		out_add(o, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
		s++;
	}
}

/* {a="x",b="y"} with an optional extra pair (le="..."); nothing if none. */
static void
out_labels(struct metrics_out *o, const char *const *labels,
    const char *xname, const char *xval)
{
	int first = 1;

	if ((labels == NULL || labels[0] == NULL) && xname == NULL)
		return;
	out_add(o, "{", 1);
	for (; labels != NULL && labels[0] != NULL && labels[1] != NULL;
	    labels += 2) {
		out_printf(o, "%s%s=\"", first ? "" : ",", labels[0]);
		out_escaped(o, labels[1], 1);
		out_add(o, "\"", 1);
		first = 0;
	}
	if (xname != NULL) {
		out_printf(o, "%s%s=\"", first ? "" : ",", xname);
		out_escaped(o, xval, 1);
		out_add(o, "\"", 1);
	}
	out_add(o, "}", 1);
}

void
metrics_family(struct metrics_out *o, const char *name, const char *type,
    const char *help)
{
	out_printf(o, "# HELP %s ", name);
	out_escaped(o, help, 0);
	out_printf(o, "\n# TYPE %s %s\n", name, type);
}

void
metrics_u64(struct metrics_out *o, const char *name,
    const char *const *labels, uint64_t v)
{
	out_add(o, name, strlen(name));
	out_labels(o, labels, NULL, NULL);
	out_printf(o, " %llu\n", (unsigned long long)v);
}

void
metrics_i64(struct metrics_out *o, const char *name,
    const char *const *labels, int64_t v)
{
	out_add(o, name, strlen(name));
	out_labels(o, labels, NULL, NULL);
	out_printf(o, " %lld\n", (long long)v);
}

/* Seconds from microseconds, exactly: no binary fraction in the text. */
static void
fmt_seconds(char *buf, size_t size, int64_t us)
{
	(void)snprintf(buf, size, "%s%lld.%06lld", us < 0 ? "-" : "",
	    (long long)(us < 0 ? -us : us) / 1000000,
	    (long long)(us < 0 ? -us : us) % 1000000);
}

void
metrics_hist(struct metrics_out *o, const char *name,
    const char *const *labels, const struct metrics_hist *h)
{
	char le[32];
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i <= h->nbounds; i++) {
		cum += h->counts[i];
		if (i < h->nbounds)
			fmt_seconds(le, sizeof(le), h->bounds_us[i]);
		else
			(void)strlcpy(le, "+Inf", sizeof(le));
		out_printf(o, "%s_bucket", name);
		out_labels(o, labels, "le", le);
		out_printf(o, " %llu\n", (unsigned long long)cum);
	}
	fmt_seconds(le, sizeof(le), h->sum_us);
	out_printf(o, "%s_sum", name);
	out_labels(o, labels, NULL, NULL);
	out_printf(o, " %s\n%s_count", le, name);
	out_labels(o, labels, NULL, NULL);
	out_printf(o, " %llu\n", (unsigned long long)h->count);
}

void
metrics_out_free(struct metrics_out *o)
{
	free(o->buf);
	memset(o, 0, sizeof(*o));
}
