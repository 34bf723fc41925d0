/*
 * reqbatch.c - packs request records into the stored form of a batch and
 * unpacks it (the format is in reqbatch.h).  Pure: no I/O, no state.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reqbatch.h"

#define NSTR		RB_NSTR
#define NNUM		RB_NNUM
#define VARINT_MAX	10		/* bytes of a 64-bit varint */
#define HEAD_MAX	(1 + VARINT_MAX)	/* version, count */

static const size_t str_max[NSTR] = { STORE_NAME_MAX, STORE_NAME_MAX,
    STORE_METHOD_MAX, STORE_HOST_MAX, STORE_PATH_MAX, STORE_OUTCOME_MAX,
    STORE_CLIENT_MAX };
static const char *const str_name[NSTR] = { "app", "service", "method",
    "host", "path", "outcome", "client" };

/* The most bytes one record takes. */
#define RECORD_MAX	(VARINT_MAX * (1 + NSTR + NNUM) + 2 * STORE_NAME_MAX \
			 + STORE_METHOD_MAX + STORE_HOST_MAX + STORE_PATH_MAX \
			 + STORE_OUTCOME_MAX + STORE_CLIENT_MAX)

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

void
reqbatch_build_init(struct reqbatch_build *b)
{
	memset(b, 0, sizeof(*b));
	b->pos.len = HEAD_MAX;
}

void
reqbatch_build_clear(struct reqbatch_build *b)
{
	unsigned char *buf = b->buf;
	size_t cap = b->cap;

	reqbatch_build_init(b);
	b->buf = buf;
	b->cap = cap;
}

void
reqbatch_build_free(struct reqbatch_build *b)
{
	free(b->buf);
	reqbatch_build_init(b);
}

/* Room for need more bytes. */
static int
grow_by(struct reqbatch_build *b, size_t need)
{
	unsigned char *nb;
	size_t ncap = b->cap > 0 ? b->cap : 16384;

	if (b->pos.len + need <= b->cap)
		return 0;
	while (b->pos.len + need > ncap)
		ncap *= 2;
	if ((nb = realloc(b->buf, ncap)) == NULL)
		return -1;
	b->buf = nb;
	b->cap = ncap;
	return 0;
}

/* Room for one more record of any size. */
static int
grow(struct reqbatch_build *b, char *err, size_t errlen)
{
	if (grow_by(b, RECORD_MAX) == -1) {
		(void)snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * What the decoder would refuse but a NUL byte (the callers' strings
 * cannot hold one: searching them all showed in hk-events' profile).
 */
static int
rec_valid(const struct reqbatch_rec *r, char *err, size_t errlen)
{
	size_t i;

	if (r->num[RB_STATUS] < 0 || r->num[RB_STATUS] > 999) {
		(void)snprintf(err, errlen, "status %jd",
		    (intmax_t)r->num[RB_STATUS]);
		return -1;
	}
	for (i = 0; i < NSTR; i++)
		if (r->len[i] > str_max[i]) {
			(void)snprintf(err, errlen, "%s: longer than %zu "
			    "bytes", str_name[i], str_max[i]);
			return -1;
		}
	return 0;
}

/*
 * Most strings are the previous record's and short: a loop, not a call
 * to memcmp() (a tenth of hk-events' cost of reading a record).
 */
static int
same(const char *a, const unsigned char *b, size_t len)
{
	size_t i;

	if (len > 32)
		return memcmp(a, b, len) == 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)a[i] != b[i])
			return 0;
	return 1;
}

/* String i: its bytes, or L = 0 when it is the previous record's. */
static unsigned char *
put_str(struct reqbatch_build *b, unsigned char *p,
    const struct reqbatch_rec *r, size_t i)
{
	struct reqbatch_pos *pos = &b->pos;
	size_t len = r->len[i];

	if (len == pos->prev_len[i] && same(r->s[i], b->buf +
	    pos->prev_off[i], len))
		return put_uint(p, 0);
	p = put_uint(p, (uint64_t)len + 1);
	memcpy(p, r->s[i], len);
	pos->prev_off[i] = (size_t)(p - b->buf);
	pos->prev_len[i] = len;
	return p + len;
}

int
reqbatch_add(struct reqbatch_build *b, const struct reqbatch_rec *r,
    char *err, size_t errlen)
{
	struct reqbatch_pos *pos = &b->pos;
	unsigned char *p;
	size_t i;

	if (rec_valid(r, err, errlen) == -1 || grow(b, err, errlen) == -1)
		return -1;
	if (pos->n == 0 || r->at < pos->min_at)
		pos->min_at = r->at;
	if (pos->n == 0 || r->at > pos->max_at)
		pos->max_at = r->at;
	p = put_int(b->buf + pos->len, (int64_t)((uint64_t)r->at -
	    (uint64_t)pos->prev_at));
	pos->prev_at = r->at;
	for (i = 0; i < NSTR; i++)
		p = put_str(b, p, r, i);
	for (i = 0; i < NNUM; i++)
		p = put_int(p, r->num[i]);
	pos->len = (size_t)(p - b->buf);
	pos->n++;
	return 0;
}

/* The header goes right before the records, in the room kept for it. */
void
reqbatch_view(struct reqbatch_build *b, struct reqbatch *v)
{
	static const unsigned char empty[2] = { REQBATCH_VERSION, 0 };
	unsigned char head[HEAD_MAX], *p = head;
	size_t hlen;

	memset(v, 0, sizeof(*v));
	if (b->pos.n == 0) {
		v->buf = (unsigned char *)empty;
		v->len = sizeof(empty);
		return;
	}
	*p++ = REQBATCH_VERSION;
	p = put_uint(p, b->pos.n);
	hlen = (size_t)(p - head);
	v->buf = b->buf + HEAD_MAX - hlen;
	memcpy(v->buf, head, hlen);
	v->len = b->pos.len - HEAD_MAX + hlen;
	v->n = b->pos.n;
	v->min_at = b->pos.min_at;
	v->max_at = b->pos.max_at;
}

int
reqbatch_rec_of(const struct store_request *q, struct reqbatch_rec *r,
    char *err, size_t errlen)
{
	const char *const s[NSTR] = { q->app, q->service, q->method,
	    q->host, q->path, q->outcome, q->client };
	size_t i;

	r->at = q->at;
	for (i = 0; i < NSTR; i++) {
		r->s[i] = s[i];
		if ((r->len[i] = strnlen(s[i], str_max[i] + 1)) > str_max[i]) {
			(void)snprintf(err, errlen, "%s: longer than %zu "
			    "bytes", str_name[i], str_max[i]);
			return -1;
		}
	}
	r->num[RB_STATUS] = q->status;
	r->num[RB_DURATION_US] = q->duration_us;
	r->num[RB_WAIT_US] = q->wait_us;
	r->num[RB_WAKE_ID] = q->wake_id;
	r->num[RB_BYTES_IN] = q->bytes_in;
	r->num[RB_BYTES_OUT] = q->bytes_out;
	return 0;
}

int
reqbatch_encode(const struct store_request *v, size_t n, struct reqbatch *b,
    char *err, size_t errlen)
{
	struct reqbatch_build bb;
	struct reqbatch_rec r;
	char why[96];
	size_t i;

	memset(b, 0, sizeof(*b));
	reqbatch_build_init(&bb);
	for (i = 0; i < n; i++) {
		if (reqbatch_rec_of(&v[i], &r, why, sizeof(why)) == -1 ||
		    reqbatch_add(&bb, &r, why, sizeof(why)) == -1) {
			(void)snprintf(err, errlen, "request %zu: %s", i, why);
			goto fail;
		}
	}
	reqbatch_view(&bb, b);
	/* A value of its own, from its first byte. */
	if ((b->buf = n > 0 ? memmove(bb.buf, b->buf, b->len) :
	    malloc(b->len)) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (n == 0) {
		b->buf[0] = REQBATCH_VERSION;
		b->buf[1] = 0;
	}
	return 0;
fail:
	reqbatch_build_free(&bb);
	memset(b, 0, sizeof(*b));
	return -1;
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

/* String i of rec; L = 0 keeps the previous record's. */
static int
get_str(struct rd *r, struct reqbatch_rec *rec, size_t i, char *err,
    size_t errlen)
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
	rec->s[i] = (const char *)r->p;
	rec->len[i] = (size_t)l;
	r->p += l;
	return 0;
}

/* nstr: how many strings a record of its version has. */
static int
get_record(struct rd *r, struct reqbatch_rec *rec, size_t nstr, char *err,
    size_t errlen)
{
	int64_t d;
	size_t i;

	if (get_int(r, &d) == -1) {
		(void)snprintf(err, errlen, "at: truncated or too long");
		return -1;
	}
	rec->at = (int64_t)((uint64_t)rec->at + (uint64_t)d);
	for (i = 0; i < nstr; i++)
		if (get_str(r, rec, i, err, errlen) == -1)
			return -1;
	for (i = 0; i < NNUM; i++)
		if (get_int(r, &rec->num[i]) == -1) {
			(void)snprintf(err, errlen, "numbers: truncated or "
			    "too long");
			return -1;
		}
	if (rec->num[RB_STATUS] < 0 || rec->num[RB_STATUS] > 999) {
		(void)snprintf(err, errlen, "status %jd",
		    (intmax_t)rec->num[RB_STATUS]);
		return -1;
	}
	return 0;
}

/* The version in *v. */
static int
get_header(struct rd *r, uint64_t *n, int *v)
{
	if (r->p >= r->end || *r->p < REQBATCH_VERSION_MIN ||
	    *r->p > REQBATCH_VERSION)
		return -1;
	*v = *r->p++;
	return get_uint(r, n);
}

int64_t
reqbatch_count(const unsigned char *buf, size_t len)
{
	struct rd r = RD(buf, len);
	uint64_t n;
	int v;

	if (buf == NULL || get_header(&r, &n, &v) == -1 || n > (uint64_t)len)
		return -1;
	return (int64_t)n;
}

/*
 * The records of a value as views, to fn; err without the name of the
 * value (": ..." or ", record N: ..."), that the callers put in front.
 */
static int
each(const unsigned char *buf, size_t len, reqbatch_rec_fn *fn, void *arg,
    const unsigned char **first_end, char *err, size_t errlen)
{
	struct rd r = RD(buf, len);
	struct reqbatch_rec rec;
	char why[96];
	uint64_t n, i;
	size_t k;
	int stop, v;

	if (buf == NULL || get_header(&r, &n, &v) == -1) {
		(void)snprintf(err, errlen, ": not of format %d to %d",
		    REQBATCH_VERSION_MIN, REQBATCH_VERSION);
		return -1;
	}
	memset(&rec, 0, sizeof(rec));
	for (k = 0; k < NSTR; k++)
		rec.s[k] = "";
	for (i = 0; i < n; i++) {
		if (get_record(&r, &rec, v == 1 ? RB_CLIENT : NSTR, why,
		    sizeof(why)) == -1) {
			(void)snprintf(err, errlen, ", record %ju: %s",
			    (uintmax_t)i, why);
			return -1;
		}
		if (i == 0 && first_end != NULL)
			*first_end = r.p;
		if ((stop = fn(&rec, i, arg)) != 0)
			return stop;
	}
	if (r.p != r.end) {
		(void)snprintf(err, errlen, ": %zu bytes after its %ju "
		    "records", (size_t)(r.end - r.p), (uintmax_t)n);
		return -1;
	}
	return 0;
}

int
reqbatch_each(const unsigned char *buf, size_t len, reqbatch_rec_fn *fn,
    void *arg, char *err, size_t errlen)
{
	char why[128];
	int r;

	if ((r = each(buf, len, fn, arg, NULL, why, sizeof(why))) == -1)
		(void)snprintf(err, errlen, "packed records%s", why);
	return r;
}

/*
 * What reqbatch_append() learns by reading a value: its first record and
 * its last, whose strings point where each was last written.
 */
struct walk {
	reqbatch_rec_fn		*fn;
	void			*arg;
	struct reqbatch_rec	 first, last;
	int64_t			 min_at, max_at;
	uint64_t		 n;
};

#define WALK_REFUSED	2	/* fn refused a record */

static int
walk_one(const struct reqbatch_rec *v, uint64_t i, void *arg)
{
	struct walk *w = arg;

	if (w->fn(v, i, w->arg) != 0)
		return WALK_REFUSED;
	if (i == 0) {
		w->first = *v;
		w->min_at = w->max_at = v->at;
	} else if (v->at < w->min_at)
		w->min_at = v->at;
	else if (v->at > w->max_at)
		w->max_at = v->at;
	w->last = *v;
	w->n = i + 1;
	return 0;
}

int
reqbatch_append(struct reqbatch_build *b, const unsigned char *buf,
    size_t len, size_t cap, reqbatch_rec_fn *fn, void *arg, char *err,
    size_t errlen)
{
	struct reqbatch_pos *pos = &b->pos, mark = b->pos;
	struct walk w = { fn, arg, { 0 }, { 0 }, 0, 0, 0 };
	const unsigned char *end, *first_end = NULL;
	char why[128];
	size_t rest, base, k;
	int r;

	/* A value of an older version is left to the caller, whole. */
	if (buf == NULL || (len > 0 && buf[0] >= REQBATCH_VERSION_MIN &&
	    buf[0] < REQBATCH_VERSION))
		return 0;
	if ((r = each(buf, len, walk_one, &w, &first_end, why,
	    sizeof(why))) == -1) {
		(void)snprintf(err, errlen, "packed records%s", why);
		return -1;
	}
	if (r != 0 || w.n > cap || pos->n > cap - w.n)
		return 0;
	if (w.n == 0)
		return 1;
	end = buf + len;
	if (reqbatch_add(b, &w.first, err, errlen) == -1)
		return 0;
	rest = (size_t)(end - first_end);
	if (grow_by(b, rest) == -1) {
		reqbatch_rewind(b, mark);
		return 0;
	}
	base = pos->len;
	memcpy(b->buf + base, first_end, rest);
	/*
	 * A string last written after the first record (an empty one
	 * too) is in the copy; one written in the first record or never
	 * is where reqbatch_add() left it.
	 */
	for (k = 0; k < NSTR; k++) {
		uintptr_t s = (uintptr_t)w.last.s[k];

		if (s >= (uintptr_t)first_end && s < (uintptr_t)end) {
			pos->prev_off[k] = base + (size_t)(s -
			    (uintptr_t)first_end);
			pos->prev_len[k] = w.last.len[k];
		}
	}
	pos->len = base + rest;
	pos->n += w.n - 1;
	pos->prev_at = w.last.at;
	if (w.min_at < pos->min_at)
		pos->min_at = w.min_at;
	if (w.max_at > pos->max_at)
		pos->max_at = w.max_at;
	return 1;
}

/* reqbatch_decode(): each view copied into a struct, with its id. */
struct copy {
	struct store_request	 rec;
	int64_t			 first_id;
	reqbatch_fn		*fn;
	void			*arg;
};

static int
copy_out(const struct reqbatch_rec *v, uint64_t i, void *arg)
{
	struct copy *c = arg;
	char *const fields[NSTR] = { c->rec.app, c->rec.service,
	    c->rec.method, c->rec.host, c->rec.path, c->rec.outcome,
	    c->rec.client };
	size_t k;

	for (k = 0; k < NSTR; k++) {
		memcpy(fields[k], v->s[k], v->len[k]);
		fields[k][v->len[k]] = '\0';
	}
	c->rec.id = c->first_id + (int64_t)i;
	c->rec.at = v->at;
	c->rec.status = (int)v->num[RB_STATUS];
	c->rec.duration_us = v->num[RB_DURATION_US];
	c->rec.wait_us = v->num[RB_WAIT_US];
	c->rec.wake_id = v->num[RB_WAKE_ID];
	c->rec.bytes_in = v->num[RB_BYTES_IN];
	c->rec.bytes_out = v->num[RB_BYTES_OUT];
	return c->fn(&c->rec, c->arg);
}

int
reqbatch_decode(const unsigned char *buf, size_t len, int64_t first_id,
    reqbatch_fn *fn, void *arg, char *err, size_t errlen)
{
	struct copy c;
	char why[128];
	int r;

	memset(&c.rec, 0, sizeof(c.rec));
	c.first_id = first_id;
	c.fn = fn;
	c.arg = arg;
	if ((r = each(buf, len, copy_out, &c, NULL, why, sizeof(why))) == -1)
		(void)snprintf(err, errlen, "request batch %jd%s",
		    (intmax_t)first_id, why);
	return r;
}
