/*
 * reqbatch.c - packs request records into the stored form of a batch and
 * unpacks it (the format is in reqbatch.h).  Pure: no I/O, no state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reqbatch.h"

#define NSTR		6
#define NNUM		6
#define VARINT_MAX	10		/* bytes of a 64-bit varint */

/* The string fields of a record, in the order of the format. */
struct strs {
	const char	*p[NSTR];
	size_t		 len[NSTR];
};

static const size_t str_max[NSTR] = { STORE_NAME_MAX, STORE_NAME_MAX,
    STORE_METHOD_MAX, STORE_HOST_MAX, STORE_PATH_MAX, STORE_OUTCOME_MAX };
static const char *const str_name[NSTR] = { "app", "service", "method",
    "host", "path", "outcome" };

/* The most bytes one record takes. */
#define RECORD_MAX	(VARINT_MAX * (1 + NSTR + NNUM) + 2 * STORE_NAME_MAX \
			 + STORE_METHOD_MAX + STORE_HOST_MAX + STORE_PATH_MAX \
			 + STORE_OUTCOME_MAX)

static unsigned char *
put_uint(unsigned char *p, uint64_t u)
{
	while (u >= 0x80) {
		*p++ = (unsigned char)(u | 0x80);
		u >>= 7;
	}
	*p++ = (unsigned char)u;
	return p;
}

static unsigned char *
put_int(unsigned char *p, int64_t v)
{
	return put_uint(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static unsigned char *
put_str(unsigned char *p, const char *s, size_t len, const char *prev,
    size_t prevlen)
{
	if (len == prevlen && memcmp(s, prev, len) == 0)
		return put_uint(p, 0);
	p = put_uint(p, (uint64_t)len + 1);
	memcpy(p, s, len);
	return p + len;
}

static void
record_strs(const struct store_request *r, struct strs *s)
{
	s->p[0] = r->app;
	s->p[1] = r->service;
	s->p[2] = r->method;
	s->p[3] = r->host;
	s->p[4] = r->path;
	s->p[5] = r->outcome;
}

/* The lengths of record k's strings: -1 if one is unterminated. */
static int
measure(struct strs *s, size_t k, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < NSTR; i++) {
		s->len[i] = strnlen(s->p[i], str_max[i] + 1);
		if (s->len[i] > str_max[i]) {
			(void)snprintf(err, errlen, "request %zu: %s: longer "
			    "than %zu bytes", k, str_name[i], str_max[i]);
			return -1;
		}
	}
	return 0;
}

static int
grow(struct reqbatch *b, size_t *cap, size_t need, char *err,
    size_t errlen)
{
	unsigned char *nb;
	size_t ncap = *cap;

	if (b->len + need <= *cap)
		return 0;
	while (b->len + need > ncap)
		ncap *= 2;
	if ((nb = realloc(b->buf, ncap)) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
		return -1;
	}
	b->buf = nb;
	*cap = ncap;
	return 0;
}

int
reqbatch_encode(const struct store_request *v, size_t n, struct reqbatch *b,
    char *err, size_t errlen)
{
	struct strs cur, prev = { { "", "", "", "", "", "" }, { 0 } };
	size_t i, j, cap = 64 + n * 48;
	int64_t prev_at = 0;
	unsigned char *p;

	memset(b, 0, sizeof(*b));
	if ((b->buf = malloc(cap)) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
		return -1;
	}
	p = b->buf;
	*p++ = REQBATCH_VERSION;
	p = put_uint(p, n);
	b->len = (size_t)(p - b->buf);
	for (i = 0; i < n; i++) {
		const struct store_request *r = &v[i];

		record_strs(r, &cur);
		if (r->status < 0 || r->status > 999)
			(void)snprintf(err, errlen, "request %zu: status %d",
			    i, r->status);
		if (r->status < 0 || r->status > 999 ||
		    measure(&cur, i, err, errlen) == -1 ||
		    grow(b, &cap, RECORD_MAX, err, errlen) == -1) {
			free(b->buf);
			memset(b, 0, sizeof(*b));
			return -1;
		}
		if (i == 0 || r->at < b->min_at)
			b->min_at = r->at;
		if (i == 0 || r->at > b->max_at)
			b->max_at = r->at;
		p = put_int(b->buf + b->len, (int64_t)((uint64_t)r->at -
		    (uint64_t)prev_at));
		prev_at = r->at;
		for (j = 0; j < NSTR; j++)
			p = put_str(p, cur.p[j], cur.len[j], prev.p[j],
			    prev.len[j]);
		p = put_int(p, r->status);
		p = put_int(p, r->duration_us);
		p = put_int(p, r->wait_us);
		p = put_int(p, r->wake_id);
		p = put_int(p, r->bytes_in);
		p = put_int(p, r->bytes_out);
		b->len = (size_t)(p - b->buf);
		prev = cur;
	}
	return 0;
}

/* The reading side: a cursor over the value. */
struct rd {
	const unsigned char	*p, *end;
};

/* Even NULL + 0 is undefined behaviour, so a NULL value gets no end. */
#define RD(buf, len)	{ (buf), (buf) != NULL ? (buf) + (len) : NULL }

static int
get_uint(struct rd *r, uint64_t *out)
{
	uint64_t u = 0;
	unsigned shift = 0;

	while (r->p < r->end && shift < 64) {
		unsigned char c = *r->p++;

		if (shift == 63 && c > 1)
			return -1;	/* more than 64 bits */
		u |= (uint64_t)(c & 0x7f) << shift;
		if ((c & 0x80) == 0) {
			*out = u;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

static int
get_int(struct rd *r, int64_t *out)
{
	uint64_t u;

	if (get_uint(r, &u) == -1)
		return -1;
	*out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

/* String i into its field of rec; L = 0 keeps what the field holds. */
static int
get_str(struct rd *r, char *field, size_t i, char *err, size_t errlen)
{
	uint64_t l;

	if (get_uint(r, &l) == -1) {
		(void)snprintf(err, errlen, "%s: truncated or too long",
		    str_name[i]);
		return -1;
	}
	if (l == 0)
		return 0;
	l--;
	if (l > str_max[i] || l > (uint64_t)(r->end - r->p) ||
	    memchr(r->p, '\0', (size_t)l) != NULL) {
		(void)snprintf(err, errlen, "%s: bad length or byte",
		    str_name[i]);
		return -1;
	}
	memcpy(field, r->p, (size_t)l);
	field[l] = '\0';
	r->p += l;
	return 0;
}

static int
get_record(struct rd *r, struct store_request *rec, char *err, size_t errlen)
{
	char *const fields[NSTR] = { rec->app, rec->service, rec->method,
	    rec->host, rec->path, rec->outcome };
	int64_t d, num[NNUM];
	size_t i;

	if (get_int(r, &d) == -1) {
		(void)snprintf(err, errlen, "at: truncated or too long");
		return -1;
	}
	rec->at = (int64_t)((uint64_t)rec->at + (uint64_t)d);
	for (i = 0; i < NSTR; i++)
		if (get_str(r, fields[i], i, err, errlen) == -1)
			return -1;
	for (i = 0; i < NNUM; i++)
		if (get_int(r, &num[i]) == -1) {
			(void)snprintf(err, errlen, "numbers: truncated or "
			    "too long");
			return -1;
		}
	if (num[0] < 0 || num[0] > 999) {
		(void)snprintf(err, errlen, "status %jd", (intmax_t)num[0]);
		return -1;
	}
	rec->status = (int)num[0];
	rec->duration_us = num[1];
	rec->wait_us = num[2];
	rec->wake_id = num[3];
	rec->bytes_in = num[4];
	rec->bytes_out = num[5];
	return 0;
}

static int
get_header(struct rd *r, uint64_t *n)
{
	if (r->p >= r->end || *r->p != REQBATCH_VERSION)
		return -1;
	r->p++;
	return get_uint(r, n);
}

int64_t
reqbatch_count(const unsigned char *buf, size_t len)
{
	struct rd r = RD(buf, len);
	uint64_t n;

	if (buf == NULL || get_header(&r, &n) == -1 || n > (uint64_t)len)
		return -1;
	return (int64_t)n;
}

int
reqbatch_decode(const unsigned char *buf, size_t len, int64_t first_id,
    reqbatch_fn *fn, void *arg, char *err, size_t errlen)
{
	struct rd r = RD(buf, len);
	struct store_request rec;
	char why[96];
	uint64_t n, i;
	int stop;

	if (buf == NULL || get_header(&r, &n) == -1) {
		(void)snprintf(err, errlen, "request batch %jd: not of "
		    "format %d", (intmax_t)first_id, REQBATCH_VERSION);
		return -1;
	}
	memset(&rec, 0, sizeof(rec));
	for (i = 0; i < n; i++) {
		if (get_record(&r, &rec, why, sizeof(why)) == -1) {
			(void)snprintf(err, errlen, "request batch %jd, "
			    "record %ju: %s", (intmax_t)first_id,
			    (uintmax_t)i, why);
			return -1;
		}
		rec.id = first_id + (int64_t)i;
		if ((stop = fn(&rec, arg)) != 0)
			return stop;
	}
	if (r.p != r.end) {
		(void)snprintf(err, errlen, "request batch %jd: %zu bytes "
		    "after its %ju records", (intmax_t)first_id,
		    (size_t)(r.end - r.p), (uintmax_t)n);
		return -1;
	}
	return 0;
}
