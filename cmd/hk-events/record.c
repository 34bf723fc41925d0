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
#include <sys/types.h>

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
	"Applied", "HTTPIdleBusy", "HTTPIdleBusyExpired", "HTTPIdleSleep",
	"HTTPIdleWake", "HTTPSuspendExpired",
	"HTTPWakeFirstByte",
	"InstanceExited",
	"LeaseAcquired", "LeaseLost", "ManualStart", "ManualStop",
	"StartFailed",
};

static int	fail(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	split_service(const char *, size_t, const char **, size_t *,
		    const char **, size_t *, char *, size_t);
static int	split_service_copy(const char *, size_t, char *, char *, char *,
		    size_t);
static int	bounded(const char *, size_t, size_t, size_t, int);
static ssize_t	path_length(const char *, size_t);
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
 * "" (none) or "app/service", both valid names: the two in *app and
 * *svc, pointing into id.  Strings here are (pointer, length), not
 * necessarily terminated (fast.c).
 */
static int
split_service(const char *id, size_t len, const char **app, size_t *alen,
    const char **svc, size_t *slen, char *err, size_t errlen)
{
	const char *slash;

	*app = *svc = "";
	*alen = *slen = 0;
	if (len == 0)
		return 0;
	if ((slash = memchr(id, '/', len)) == NULL ||
	    !config_valid_name_n(id, (size_t)(slash - id)) ||
	    !config_valid_name_n(slash + 1, len - (size_t)(slash - id) - 1))
		return fail(err, errlen, "service: not app/service");
	*app = id;
	*alen = (size_t)(slash - id);
	*svc = slash + 1;
	*slen = len - *alen - 1;
	return 0;
}

/* As split_service(), into the terminated fields of an event. */
static int
split_service_copy(const char *id, size_t len, char *app, char *svc,
    char *err, size_t errlen)
{
	const char *a, *s;
	size_t alen, slen;

	if (split_service(id, len, &a, &alen, &s, &slen, err, errlen) == -1)
		return -1;
	memcpy(app, a, alen);
	app[alen] = '\0';
	memcpy(svc, s, slen);
	svc[slen] = '\0';
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

/*
 * The length of the path without query or fragment: -1 for control bytes
 * before them, a NUL after, or too long.
 */
static ssize_t
path_length(const char *v, size_t len)
{
	size_t n;

	for (n = 0; n < len && v[n] != '?' && v[n] != '#'; n++)
		if ((unsigned char)v[n] < 0x20 || v[n] == 0x7f)
			return -1;
	if (n > STORE_PATH_MAX || (n < len && memchr(v + n, '\0',
	    len - n) != NULL))
		return -1;
	return (ssize_t)n;
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
	if (split_service_copy(svc, svclen, ev->app, ev->service, err,
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
 * if present.  The types are checked here, the values by record_fields();
 * f points into r.
 */
int
record_request(const json_t *r, struct rec_fields *f, char *err,
    size_t errlen)
{
	static const char *const nums[] = {
		"at", "status", "duration_us", "wait_us", "bytes_in",
		"bytes_out",
	};
	json_t *svc, *wake, *m, *h, *p, *o, *v;
	size_t i;

	memset(f, 0, sizeof(*f));
	if (!json_is_object(r))
		return fail(err, errlen, "request: not an object");
	for (i = 0; i < REC_NUMS; i++) {
		if (!json_is_integer(v = json_object_get(r, nums[i])))
			return fail(err, errlen, "request: %s: not an integer",
			    nums[i]);
		f->n[i] = json_integer_value(v);
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
		f->svc = json_string_value(svc);
		f->svclen = json_string_length(svc);
	} else if (!json_is_null(svc))
		return fail(err, errlen, "request: service: not a string");
	if (wake != NULL && !json_is_null(wake)) {
		if (!json_is_integer(wake))
			return fail(err, errlen, "request: wake_id: not an id");
		f->wake = json_integer_value(wake);
	}
	f->method = json_string_value(m);
	f->mlen = json_string_length(m);
	f->host = json_string_value(h);
	f->hlen = json_string_length(h);
	f->path = json_string_value(p);
	f->plen = json_string_length(p);
	f->outcome = json_string_value(o);
	f->olen = json_string_length(o);
	return 0;
}

/*
 * A decoded {"op":"requests","records":[...]} or {"op":"requests",
 * "packed":"..."}: as fast_requests() and packed_requests() (the same
 * results for the same bytes; tests/fuzz/events_fast.c holds them to
 * it), -1 when the message is not that shape, else 0, each record taken
 * into k or counted there.
 */
int
record_requests(const json_t *msg, struct rec_sink *k, char *err,
    size_t errlen)
{
	struct rec_fields f;
	json_error_t jerr;
	json_t *recs = NULL, *r;
	const char *op, *packed = NULL;
	size_t i, plen = 0;

	if (json_unpack_ex((json_t *)msg, &jerr, JSON_STRICT,
	    "{s:s, s?o, s?s%}", "op", &op, "records", &recs, "packed",
	    &packed, &plen) == -1)
		return fail(err, errlen, "requests: %s", jerr.text);
	if (strcmp(op, "requests") != 0)
		return fail(err, errlen, "requests: op: not requests");
	if ((recs == NULL) == (packed == NULL))
		return fail(err, errlen, "requests: records or packed, "
		    "one of them");
	if (packed != NULL)
		return packed_requests(packed, plen, k, err, errlen);
	if (!json_is_array(recs))
		return fail(err, errlen, "requests: records: not an array");
	json_array_foreach(recs, i, r)
		rec_take(k, record_request(r, &f, err, errlen) == 0 ? &f :
		    NULL, err, errlen);
	return 0;
}

/*
 * One record read (f NULL: its types were wrong, err says why): its
 * values checked, then packed into the batch if there is room.
 */
void
rec_take(struct rec_sink *k, const struct rec_fields *f, char *err,
    size_t errlen)
{
	struct reqbatch_rec r;

	if (f == NULL || record_fields(f, &r, err, errlen) == -1)
		k->bad++;
	else
		rec_put(k, &r);
}

/* A record whose values are checked: packed if there is room. */
void
rec_put(struct rec_sink *k, const struct reqbatch_rec *r)
{
	char why[96];

	if (k->b->pos.n >= k->cap)
		k->dropped++;
	else if (reqbatch_add(k->b, r, why, sizeof(why)) == -1)
		k->dropped++;	/* out of memory: the values pack */
	else
		k->n++;
}

/* The values of a request record, however it was parsed; r points into f. */
int
record_fields(const struct rec_fields *f, struct reqbatch_rec *r,
    char *err, size_t errlen)
{
	if (split_service(f->svc, f->svc != NULL ? f->svclen : 0,
	    &r->s[RB_APP], &r->len[RB_APP], &r->s[RB_SERVICE],
	    &r->len[RB_SERVICE], err, errlen) == -1)
		return -1;
	r->s[RB_METHOD] = f->method;
	r->len[RB_METHOD] = f->mlen;
	r->s[RB_HOST] = f->host;
	r->len[RB_HOST] = f->hlen;
	r->s[RB_PATH] = f->path;
	r->len[RB_PATH] = f->plen;
	r->s[RB_OUTCOME] = f->outcome;
	r->len[RB_OUTCOME] = f->olen;
	r->s[RB_CLIENT] = "";	/* the gateway's packed records have it */
	r->len[RB_CLIENT] = 0;
	r->at = f->n[0];
	r->num[RB_STATUS] = f->n[1];
	r->num[RB_DURATION_US] = f->n[2];
	r->num[RB_WAIT_US] = f->n[3];
	r->num[RB_BYTES_IN] = f->n[4];
	r->num[RB_BYTES_OUT] = f->n[5];
	r->num[RB_WAKE_ID] = f->wake;
	return record_check(r, 0, err, errlen);
}

/* The rules of its time and numbers alone. */
int
record_check_numbers(const struct reqbatch_rec *r, char *err, size_t errlen)
{
	const int64_t *n = r->num;

	if (r->at <= 0 || r->at > AT_MAX || n[RB_STATUS] < 0 ||
	    n[RB_STATUS] > 999 || n[RB_DURATION_US] < 0 ||
	    n[RB_WAIT_US] < 0 || n[RB_BYTES_IN] < 0 || n[RB_BYTES_OUT] < 0 ||
	    n[RB_WAKE_ID] < 0)
		return fail(err, errlen, "request: a number out of range");
	return 0;
}

/*
 * The rules of a request record's values, whatever form it came in: a
 * path loses its query (in r); apps: the app and service are checked too
 * (a JSON record's were, as "app/service", by split_service()).
 */
int
record_check(struct reqbatch_rec *r, int names, char *err, size_t errlen)
{
	ssize_t plen;

	if (record_check_numbers(r, err, errlen) == -1)
		return -1;
	if (names && (r->len[RB_APP] != 0 || r->len[RB_SERVICE] != 0) &&
	    (!config_valid_name_n(r->s[RB_APP], r->len[RB_APP]) ||
	    !config_valid_name_n(r->s[RB_SERVICE], r->len[RB_SERVICE])))
		return fail(err, errlen, "service: not app/service");
	if (!bounded(r->s[RB_METHOD], r->len[RB_METHOD], 1, STORE_METHOD_MAX,
	    B_TOKEN))
		return fail(err, errlen, "request: method: not a token");
	if (!bounded(r->s[RB_HOST], r->len[RB_HOST], 0, STORE_HOST_MAX,
	    B_VISIBLE))
		return fail(err, errlen, "request: host: not a host");
	if ((plen = path_length(r->s[RB_PATH], r->len[RB_PATH])) == -1)
		return fail(err, errlen, "request: path: too long or "
		    "control bytes");
	r->len[RB_PATH] = (size_t)plen;
	if (!bounded(r->s[RB_OUTCOME], r->len[RB_OUTCOME], 1,
	    STORE_OUTCOME_MAX, B_WORD))
		return fail(err, errlen, "request: outcome: not a word");
	if (!bounded(r->s[RB_CLIENT], r->len[RB_CLIENT], 0,
	    STORE_CLIENT_MAX, B_VISIBLE))
		return fail(err, errlen, "request: client: not an address");
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
