/*
 * fast.c - request batches as JSON, without jansson.
 *
 * The gateway sends its records packed (packed.c); a sender of JSON
 * batches in bulk (a script, bench/bench-events) would find jansson's
 * general parser most of the cost of taking them.  This reads the plain
 * shape, as the gateway once wrote it:
 *
 *	{"op":"requests","records":[{"at":1,...},...]}
 *
 * keys in any order, each at most once; strings of printable ASCII
 * without escapes; integers without fraction or exponent (at most 18
 * digits); null for service and wake_id only.  Anything else (an escape,
 * a byte outside ASCII, an unknown or duplicate key, a missing key, a
 * value of another type, trailing bytes) is not an error here: the
 * datagram goes whole to the general path (ipc_decode() and
 * record_request()), which decides.  So this path accepts a subset of
 * what that one accepts, and the values of each record are checked by the
 * same record_fields().  A pure function over bytes.
 */
#include <stdint.h>
#include <string.h>

#include "events.h"

struct scan {
	const char	*p;
	const char	*end;
};

enum { K_AT, K_STATUS, K_DURATION, K_WAIT, K_BYTES_IN, K_BYTES_OUT,
    K_SERVICE, K_METHOD, K_HOST, K_PATH, K_OUTCOME, K_WAKE, K_COUNT };

/* With their lengths: key() runs a dozen times for every record. */
#define KEY(k)	{ k, sizeof(k) - 1 }
static const struct {
	const char	*name;
	size_t		 len;
} keys[K_COUNT] = {
	KEY("at"), KEY("status"), KEY("duration_us"), KEY("wait_us"),
	KEY("bytes_in"), KEY("bytes_out"), KEY("service"), KEY("method"),
	KEY("host"), KEY("path"), KEY("outcome"), KEY("wake_id"),
};

/*
 * Each key as the gateway writes it, quoted and with its colon, padded to
 * 16 bytes, and masks of 0xff over its length (see key()).
 */
#define PAT	16
static const char pats[K_COUNT][PAT] = {
	"\"at\":", "\"status\":", "\"duration_us\":", "\"wait_us\":",
	"\"bytes_in\":", "\"bytes_out\":", "\"service\":", "\"method\":",
	"\"host\":", "\"path\":", "\"outcome\":", "\"wake_id\":",
};
static const unsigned char ones[2 * PAT] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

#define K_REQUIRED	((1U << K_WAKE) - 1)

/* The key after each, in the order the gateway once wrote them. */
static const unsigned char gw_next[K_COUNT] = {
	[K_AT] = K_SERVICE, [K_SERVICE] = K_METHOD, [K_METHOD] = K_HOST,
	[K_HOST] = K_PATH, [K_PATH] = K_STATUS, [K_STATUS] = K_DURATION,
	[K_DURATION] = K_WAIT, [K_WAIT] = K_WAKE, [K_WAKE] = K_BYTES_IN,
	[K_BYTES_IN] = K_BYTES_OUT, [K_BYTES_OUT] = K_OUTCOME,
	[K_OUTCOME] = K_AT,
};

static void	ws(struct scan *);
static int	lit(struct scan *, char);
static int	str(struct scan *, const char **, size_t *);
static int	num(struct scan *, int64_t *);
static int	null(struct scan *);
static int	key(struct scan *, int);
static int	record(struct scan *, struct rec_fields *);
static int	records(struct scan *, struct rec_sink *, struct rec_fields *,
		    char *, size_t);

static void
ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	    *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int
lit(struct scan *s, char c)
{
	ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return 0;
	}
	return -1;
}

/* A string of 0x20..0x7e but '"' and '\\': the value, not terminated. */
static int
str(struct scan *s, const char **v, size_t *len)
{
	const char *q;

	if (lit(s, '"') == -1)
		return -1;
	for (q = s->p; q < s->end && (unsigned char)(*q - 0x20) < 0x5f &&
	    *q != '"' && *q != '\\'; q++)
		;
	if (q == s->end || *q != '"')
		return -1;
	*v = s->p;
	*len = (size_t)(q - s->p);
	s->p = q + 1;
	return 0;
}

/* -?(0|[1-9][0-9]*), at most 18 digits, not followed by . e E. */
static int
num(struct scan *s, int64_t *v)
{
	int neg = 0, digits = 0;
	int64_t n = 0;

	ws(s);
	if (s->p < s->end && *s->p == '-') {
		neg = 1;
		s->p++;
	}
	if (s->p < s->end && *s->p == '0' && s->p + 1 < s->end &&
	    s->p[1] >= '0' && s->p[1] <= '9')
		return -1;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
		if (++digits > 18)
			return -1;
		n = n * 10 + (*s->p++ - '0');
	}
	if (digits == 0 || (s->p < s->end && (*s->p == '.' || *s->p == 'e' ||
	    *s->p == 'E')))
		return -1;
	*v = neg ? -n : n;
	return 0;
}

static int
null(struct scan *s)
{
	ws(s);
	if (s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0) {
		s->p += 4;
		return 0;
	}
	return -1;
}

/*
 * The index of the next key of a record, or -1.  The key the gateway
 * writes there (hint) is tried first, as 16 bytes against its pattern
 * under its mask: finding each key among all of them was a third of the
 * cost of reading, and comparing it byte by byte a fifth.
 */
static int
key(struct scan *s, int hint)
{
	uint64_t in[2], pat[2], mask[2];
	const char *k;
	size_t len = keys[hint].len + 3, i;	/* "key": */
	int j;

	if (s->end - s->p >= PAT) {
		memcpy(in, s->p, PAT);
		memcpy(pat, pats[hint], PAT);
		memcpy(mask, ones + PAT - len, PAT);
		if ((((in[0] ^ pat[0]) & mask[0]) |
		    ((in[1] ^ pat[1]) & mask[1])) == 0) {
			s->p += len;
			return hint;
		}
	}
	if (str(s, &k, &i) == -1)
		return -1;
	for (j = 0; j < K_COUNT; j++)
		if (keys[j].len == i && memcmp(keys[j].name, k, i) == 0)
			return lit(s, ':') == 0 ? j : -1;
	return -1;
}

/* One record into f (values unchecked); -1: not plain. */
static int
record(struct scan *s, struct rec_fields *f)
{
	unsigned seen = 0;
	int k = K_OUTCOME, r;

	/* The rest are required keys: no memset() (it showed in profiles). */
	f->svc = NULL;
	f->svclen = 0;
	f->wake = 0;
	if (lit(s, '{') == -1)
		return -1;
	do {
		if ((k = key(s, gw_next[k])) == -1 || (seen & (1U << k)))
			return -1;
		seen |= 1U << k;
		if (k < REC_NUMS)
			r = num(s, &f->n[k]);
		else if (k == K_WAKE)
			r = null(s) == 0 ? 0 : num(s, &f->wake);
		else if (k == K_SERVICE)
			r = null(s) == 0 ? 0 : str(s, &f->svc, &f->svclen);
		else
			r = str(s, k == K_METHOD ? &f->method : k == K_HOST ?
			    &f->host : k == K_PATH ? &f->path : &f->outcome,
			    k == K_METHOD ? &f->mlen : k == K_HOST ? &f->hlen :
			    k == K_PATH ? &f->plen : &f->olen);
		if (r == -1)
			return -1;
	} while (lit(s, ',') == 0);
	if (lit(s, '}') == -1 || (seen & K_REQUIRED) != K_REQUIRED)
		return -1;
	return 0;
}

/* [record, ...] into k: -1 when not plain. */
static int
records(struct scan *s, struct rec_sink *k, struct rec_fields *f, char *err,
    size_t errlen)
{
	if (lit(s, '[') == -1)
		return -1;
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return 0;
	}
	do {
		if (record(s, f) == -1)
			return -1;
		rec_take(k, f, err, errlen);
	} while (lit(s, ',') == 0);
	return lit(s, ']');
}

/*
 * Declining leaves the sink as it was: the records taken before the
 * bytes that were not plain are unpacked again (reqbatch_rewind()).
 */
int
fast_requests(const char *buf, size_t len, struct rec_sink *sink, char *err,
    size_t errlen)
{
	struct scan s = { buf, buf + len };
	struct reqbatch_pos mark = reqbatch_mark(sink->b);
	struct rec_sink k = *sink;
	struct rec_fields f;
	const char *v;
	size_t vlen;
	int op = 0, recs = 0, i;

	if (lit(&s, '{') == -1)
		return -1;
	for (i = 0; i < 2; i++) {
		if (str(&s, &v, &vlen) == -1 || lit(&s, ':') == -1)
			goto decline;
		if (vlen == 2 && memcmp(v, "op", 2) == 0 && !op) {
			if (str(&s, &v, &vlen) == -1 || vlen != 8 ||
			    memcmp(v, "requests", 8) != 0)
				goto decline;
			op = 1;
		} else if (vlen == 7 && memcmp(v, "records", 7) == 0 && !recs) {
			if (records(&s, &k, &f, err, errlen) == -1)
				goto decline;
			recs = 1;
		} else
			goto decline;
		if (i == 0 && lit(&s, ',') == -1)
			goto decline;
	}
	if (lit(&s, '}') == -1)
		goto decline;
	ws(&s);
	if (s.p != s.end)
		goto decline;
	*sink = k;
	return 0;
decline:
	reqbatch_rewind(sink->b, mark);
	return -1;
}
