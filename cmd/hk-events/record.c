/*
 * record.c - what senders may send, checked strictly (pure functions over
 * decoded JSON: no I/O, testable alone).  An event:
 *
 *	{"op":"event","kind":K,"service":"app/svc"|"","at":MS,"detail":{...}}
 *
 * and one record of {"op":"requests","records":[...]}:
 *
 *	{"at":MS,"service":"app/svc"|null,"method":M,"host":H,"path":P,
 *	 "status":N,"duration_us":N,"wait_us":N,"bytes_in":N,"bytes_out":N,
 *	 "outcome":O[,"wake_id":N|null]}
 *
 * No other key is taken; every string is bounded and of its own alphabet;
 * numbers are integers in range.  A path loses any "?" or "#" and what
 * follows, should a sender have forgotten to strip its query.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "events.h"

#define AT_MAX		253402300799999LL	/* 9999-12-31T23:59:59.999Z */

enum { B_VISIBLE, B_TOKEN, B_WORD };	/* bounded() */

static const char *const kinds[] = {
	"Applied", "HTTPIdleSleep", "HTTPIdleWake", "InstanceExited",
	"LeaseAcquired", "LeaseLost", "ManualStart", "ManualStop",
	"StartFailed",
};

static int	fail(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	split_service(const char *, size_t, char *, char *, char *,
		    size_t);
static int	bounded(const char *, size_t, size_t, size_t, int);
static int	copy_path(const char *, size_t, char *, size_t);
static void	append(char *, size_t, size_t *, const char *);

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int
record_valid_kind(const char *kind)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i]) == 0)
			return 1;
	return 0;
}

/*
 * "" (none) or "app/service", both valid names.  Strings here are
 * (pointer, length), not necessarily terminated (fast.c).
 */
static int
split_service(const char *id, size_t len, char *app, char *svc, char *err,
    size_t errlen)
{
	const char *slash;
	size_t alen;

	app[0] = svc[0] = '\0';
	if (len == 0)
		return 0;
	if (len > EV_ID_MAX || memchr(id, '\0', len) != NULL ||
	    (slash = memchr(id, '/', len)) == NULL ||
	    (alen = (size_t)(slash - id)) > STORE_NAME_MAX ||
	    len - alen - 1 > STORE_NAME_MAX)
		return fail(err, errlen, "service: not app/service");
	memcpy(app, id, alen);
	app[alen] = '\0';
	memcpy(svc, slash + 1, len - alen - 1);
	svc[len - alen - 1] = '\0';
	if (!config_valid_name(app) || !config_valid_name(svc))
		return fail(err, errlen, "service: not app/service");
	return 0;
}

/*
 * min..max bytes, each of its class: B_VISIBLE 0x21..0x7e, B_TOKEN an
 * HTTP token's, B_WORD a-z and _ (by ranges first: strchr() for every
 * byte of every record showed in profiles).
 */
static int
bounded(const char *v, size_t len, size_t min, size_t max, int class)
{
	unsigned char c;
	size_t i;

	if (len < min || len > max)
		return 0;
	for (i = 0; i < len; i++) {
		c = (unsigned char)v[i];
		if ((c >= 'a' && c <= 'z') || (class != B_WORD &&
		    ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))))
			continue;
		if (class == B_VISIBLE ? c < 0x21 || c > 0x7e :
		    class == B_WORD ? c != '_' :
		    c == '\0' || strchr("!#$%&'*+-.^_`|~", c) == NULL)
			return 0;
	}
	return 1;
}

/* The path without query or fragment; no control bytes, bounded. */
static int
copy_path(const char *v, size_t len, char *dst, size_t size)
{
	size_t i, n;

	for (n = 0; n < len && v[n] != '?' && v[n] != '#'; n++)
		if ((unsigned char)v[n] < 0x20 || v[n] == 0x7f)
			return -1;
	if (n >= size)
		return -1;
	for (i = n; i < len; i++)
		if (v[i] == '\0')
			return -1;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

int
record_event(const json_t *msg, struct store_event *ev, char *err,
    size_t errlen)
{
	json_error_t jerr;
	json_t *detail = NULL;
	const char *op, *kind, *svc;
	size_t kindlen, svclen;
	json_int_t at;

	memset(ev, 0, sizeof(*ev));
	if (json_unpack_ex((json_t *)msg, &jerr, JSON_STRICT,
	    "{s:s, s:s%, s:s%, s:I, s?o}", "op", &op, "kind", &kind, &kindlen,
	    "service", &svc, &svclen, "at", &at, "detail", &detail) == -1)
		return fail(err, errlen, "event: %s", jerr.text);
	if (strlen(kind) != kindlen || !record_valid_kind(kind))
		return fail(err, errlen, "event: kind: unknown");
	if (at <= 0 || at > AT_MAX)
		return fail(err, errlen, "event: at: out of range");
	if (split_service(svc, svclen, ev->app, ev->service, err,
	    errlen) == -1)
		return -1;
	(void)strlcpy(ev->kind, kind, sizeof(ev->kind));
	ev->at = at;
	if (detail == NULL || json_is_null(detail))
		return 0;
	if (!json_is_object(detail))
		return fail(err, errlen, "event: detail: not an object");
	if ((ev->detail_json = json_dumps(detail, JSON_COMPACT |
	    JSON_SORT_KEYS)) == NULL)
		return fail(err, errlen, "event: detail: out of memory");
	if (strlen(ev->detail_json) > EV_DETAIL_MAX) {
		free(ev->detail_json);
		ev->detail_json = NULL;
		return fail(err, errlen, "event: detail: over %d bytes",
		    EV_DETAIL_MAX);
	}
	return 0;
}

/*
 * Strict without json_unpack(): it would build a set of the keys seen for
 * each record, and this runs for every request of the installation.  The
 * object must hold exactly the keys known: the required ones, and wake_id
 * if present.  The types are checked here, the values by record_fields().
 */
int
record_request(const json_t *r, struct store_request *rq, char *err,
    size_t errlen)
{
	static const char *const nums[] = {
		"at", "status", "duration_us", "wait_us", "bytes_in",
		"bytes_out",
	};
	struct rec_fields f;
	json_t *svc, *wake, *m, *h, *p, *o, *v;
	size_t i;

	memset(&f, 0, sizeof(f));
	if (!json_is_object(r))
		return fail(err, errlen, "request: not an object");
	for (i = 0; i < REC_NUMS; i++) {
		if (!json_is_integer(v = json_object_get(r, nums[i])))
			return fail(err, errlen, "request: %s: not an integer",
			    nums[i]);
		f.n[i] = json_integer_value(v);
	}
	svc = json_object_get(r, "service");
	wake = json_object_get(r, "wake_id");
	m = json_object_get(r, "method");
	h = json_object_get(r, "host");
	p = json_object_get(r, "path");
	o = json_object_get(r, "outcome");
	if (svc == NULL || !json_is_string(m) || !json_is_string(h) ||
	    !json_is_string(p) || !json_is_string(o))
		return fail(err, errlen, "request: a text field is missing");
	if (json_object_size(r) != 11 + (wake != NULL))
		return fail(err, errlen, "request: unknown key");
	if (json_is_string(svc)) {
		f.svc = json_string_value(svc);
		f.svclen = json_string_length(svc);
	} else if (!json_is_null(svc))
		return fail(err, errlen, "request: service: not a string");
	if (wake != NULL && !json_is_null(wake)) {
		if (!json_is_integer(wake))
			return fail(err, errlen, "request: wake_id: not an id");
		f.wake = json_integer_value(wake);
	}
	f.method = json_string_value(m);
	f.mlen = json_string_length(m);
	f.host = json_string_value(h);
	f.hlen = json_string_length(h);
	f.path = json_string_value(p);
	f.plen = json_string_length(p);
	f.outcome = json_string_value(o);
	f.olen = json_string_length(o);
	return record_fields(&f, rq, err, errlen);
}

/*
 * A decoded {"op":"requests","records":[...]}: as fast_requests() (the
 * same results for the same bytes; tests/fuzz/events_fast.c holds them to
 * it), -1 when the message is not that shape, else the number of records
 * refused, the good ones in out[0..*nout), at most cap; good ones beyond
 * are counted in *dropped.  err: the last refusal.
 */
int
record_requests(const json_t *msg, struct store_request *out, size_t cap,
    size_t *nout, size_t *dropped, char *err, size_t errlen)
{
	struct rec_sink k = { out, cap, 0, 0, 0, { 0 } };
	json_error_t jerr;
	json_t *recs = NULL, *r;
	const char *op;
	size_t i;

	if (json_unpack_ex((json_t *)msg, &jerr, JSON_STRICT, "{s:s, s:o}",
	    "op", &op, "records", &recs) == -1)
		return fail(err, errlen, "requests: %s", jerr.text);
	if (strcmp(op, "requests") != 0)
		return fail(err, errlen, "requests: op: not requests");
	if (!json_is_array(recs))
		return fail(err, errlen, "requests: records: not an array");
	json_array_foreach(recs, i, r)
		rec_took(&k, record_request(r, rec_slot(&k), err, errlen));
	*nout = k.n;
	*dropped = k.dropped;
	return k.bad;
}

struct store_request *
rec_slot(struct rec_sink *k)
{
	return k->n < k->cap ? &k->out[k->n] : &k->spare;
}

/* r: what reading the record into rec_slot() returned. */
void
rec_took(struct rec_sink *k, int r)
{
	if (r == -1)
		k->bad++;
	else if (k->n < k->cap)
		k->n++;
	else
		k->dropped++;
}

/* The values of a request record, however it was parsed. */
int
record_fields(const struct rec_fields *f, struct store_request *rq,
    char *err, size_t errlen)
{
	/* Field by field, not memset(): the struct is 1.5 KiB, mostly path. */
	rq->id = 0;
	rq->app[0] = rq->service[0] = '\0';
	if (f->n[0] <= 0 || f->n[0] > AT_MAX || f->n[1] < 0 ||
	    f->n[1] > 999 || f->n[2] < 0 || f->n[3] < 0 || f->n[4] < 0 ||
	    f->n[5] < 0 || f->wake < 0)
		return fail(err, errlen, "request: a number out of range");
	if (f->svc != NULL && split_service(f->svc, f->svclen, rq->app,
	    rq->service, err, errlen) == -1)
		return -1;
	if (!bounded(f->method, f->mlen, 1, STORE_METHOD_MAX, B_TOKEN))
		return fail(err, errlen, "request: method: not a token");
	if (!bounded(f->host, f->hlen, 0, STORE_HOST_MAX, B_VISIBLE))
		return fail(err, errlen, "request: host: not a host");
	if (copy_path(f->path, f->plen, rq->path, sizeof(rq->path)) == -1)
		return fail(err, errlen, "request: path: too long or "
		    "control bytes");
	if (!bounded(f->outcome, f->olen, 1, STORE_OUTCOME_MAX, B_WORD))
		return fail(err, errlen, "request: outcome: not a word");
	memcpy(rq->method, f->method, f->mlen);
	rq->method[f->mlen] = '\0';
	memcpy(rq->host, f->host, f->hlen);
	rq->host[f->hlen] = '\0';
	memcpy(rq->outcome, f->outcome, f->olen);
	rq->outcome[f->olen] = '\0';
	rq->at = f->n[0];
	rq->status = (int)f->n[1];
	rq->duration_us = f->n[2];
	rq->wait_us = f->n[3];
	rq->bytes_in = f->n[4];
	rq->bytes_out = f->n[5];
	rq->wake_id = f->wake;
	return 0;
}

static void
append(char *buf, size_t len, size_t *off, const char *s)
{
	size_t n = strlen(s);

	if (*off + n >= len)
		n = *off + 1 < len ? len - *off - 1 : 0;
	memcpy(buf + *off, s, n);
	*off += n;
	buf[*off] = '\0';
}

/*
 * An event's detail as "key=value ..." for a log line or a cell: plain
 * words as they are, anything else (spaces, quotes, objects) as JSON, so
 * that a line never breaks.  "" for none.
 */
void
record_detail_text(const char *detail_json, char *buf, size_t len)
{
	json_t *d, *v;
	const char *k, *s;
	char *text;
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (detail_json == NULL || (d = json_loads(detail_json, 0,
	    NULL)) == NULL)
		return;
	json_object_foreach(d, k, v) {
		append(buf, len, &off, off > 0 ? " " : "");
		append(buf, len, &off, k);
		append(buf, len, &off, "=");
		s = json_string_value(v);
		if (s != NULL && *s != '\0' && bounded(s, strlen(s), 1,
		    SIZE_MAX, B_VISIBLE) && strpbrk(s, "\"\\=") == NULL) {
			append(buf, len, &off, s);
			continue;
		}
		if ((text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
		    JSON_SORT_KEYS)) != NULL)
			append(buf, len, &off, text);
		free(text);
	}
	json_decref(d);
}

/* "app/service", or "-" for none. */
void
record_service(const char *app, const char *service, char *buf, size_t len)
{
	if (app[0] == '\0' && service[0] == '\0')
		(void)strlcpy(buf, "-", len);
	else
		(void)snprintf(buf, len, "%s/%s", app, service);
}
