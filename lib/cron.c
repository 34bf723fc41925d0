/*
 * cron.c - cron expressions (crontab(5)) and their next firing in a zone.
 *
 * Parsing is a pure function over at most CRON_EXPR_MAX bytes.  The
 * search walks forward in Unix time, in segments where the zone's UTC
 * offset is constant, and jumps from wall-clock time to the next wall
 * time that could match (next month, day, hour or minute in the sets)
 * rather than stepping minute by minute.  A jump that meets an offset
 * change stops at it: where the clock goes back, the walk looks again at
 * the repeated wall times; where it goes forward, a fixed-time expression
 * that matched a skipped wall time fires at once (cron(8)).
 *
 * The process's TZ: zone_next() is the one place that touches it.  It
 * sets TZ to the zone's file for the search (glibc's localtime_r is the
 * only reader of zoneinfo we use), and puts the previous value back
 * before returning.  hk-jobs is single-threaded; nothing else may run
 * localtime() meanwhile, and nothing does.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cron.h"

#define ZONEINFO	"/usr/share/zoneinfo"
#define DAY		86400
/* cron_next's horizon: 8 years, leap days included. */
#define HORIZON		((int64_t)8 * 366 * DAY)
/* The longest step taken without looking at the offset: one day, less
 * than any zone has had between two changes, so that two which cancel
 * out are never jumped over unseen. */
#define SEG_MAX		DAY
/* cron(8): the clock moving back by less than 3 hours does not re-run
 * fixed-time jobs; by more, they run again as at a new time. */
#define REPEAT_MAX	(3 * 3600)
/* Times cron_next accepts: year 1 to year 9999 less the horizon. */
#define T_MIN		(-62135596800LL + 2 * DAY)
#define T_MAX		(253402300799LL - HORIZON - 2 * DAY)

struct field {
	const char		*name;
	int			 lo, hi;
	const char *const	*names;	/* NULL, or names of lo.. */
	int			 names_lo;
};

/* A wall-clock time, broken down. */
struct civil {
	int64_t		year;
	int		mon, mday, hour, min, wday;
};

/* One search: the expression and whether the zone is UTC. */
struct walk {
	const struct cron	*c;
	int			 utc;
};

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec", NULL
};
static const char *const day_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL
};

static const struct field fields[5] = {
	{ "minute", 0, 59, NULL, 0 },
	{ "hour", 0, 23, NULL, 0 },
	{ "day of month", 1, 31, NULL, 0 },
	{ "month", 1, 12, month_names, 1 },
	{ "day of week", 0, 7, day_names, 0 },
};

/* The @ forms, as the five fields they stand for. */
static const struct {
	const char	*name;
	const char	*fields;
} aliases[] = {
	{ "@yearly", "0 0 1 1 *" },
	{ "@annually", "0 0 1 1 *" },
	{ "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" },
	{ "@daily", "0 0 * * *" },
	{ "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

static int	is_blank(char);
static size_t	split(const char *, size_t, const char **, size_t *, size_t);
static int	alias(struct cron *, const char *, size_t, char *, size_t);
static int	fields5(struct cron *, const char *const *, const size_t *,
		    char *, size_t);
static int	field_parse(int, const char *, size_t, uint64_t *, char *,
		    size_t);
static int	element(int, const char *, size_t, uint64_t *, char *,
		    size_t);
static int	value(int, const char *, size_t, size_t *, int *, char *,
		    size_t);
static int	number(const char *, size_t, size_t *, int *);
static void	bad_char(const char *, size_t, size_t, char *, size_t);
static int64_t	days_from_civil(int64_t, int, int);
static void	split_wall(int64_t, struct civil *);
static int	day_ok(const struct cron *, const struct civil *);
static int	matches(const struct cron *, const struct civil *);
static int	next_bit(uint64_t, int, int);
static int	low_bit(uint64_t);
static int64_t	skip(const struct cron *, const struct civil *);
static int64_t	floor_div(int64_t, int64_t);
static int64_t	ceil_minute(int64_t);
static int64_t	off(const struct walk *, int64_t);
static int64_t	change(const struct walk *, int64_t, int64_t, int64_t);
static int	skipped_match(const struct cron *, int64_t, int64_t);
static int64_t	seek(const struct walk *, int64_t, int64_t, int *);
static int	repeated(const struct walk *, int64_t, int64_t);
static int64_t	search(const struct walk *, int64_t);
static int64_t	zone_next(const struct cron *, const char *, int64_t);

static int
is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/*
 * The blank-separated words of s[0..n): their starts and lengths, at most
 * max of them; returns how many there are, counting those beyond max.
 */
static size_t
split(const char *s, size_t n, const char **w, size_t *wl, size_t max)
{
	size_t i = 0, k = 0, start;

	for (;;) {
		while (i < n && is_blank(s[i]))
			i++;
		if (i == n)
			return k;
		start = i;
		while (i < n && !is_blank(s[i]))
			i++;
		if (k < max) {
			w[k] = s + start;
			wl[k] = i - start;
		}
		k++;
	}
}

int
cron_parse(struct cron *c, const char *s, char *err, size_t errlen)
{
	const char *w[5];
	size_t wl[5], n, nw;

	memset(c, 0, sizeof(*c));
	if (s == NULL) {
		snprintf(err, errlen, "no expression");
		return -1;
	}
	/* Never past the terminator, nor past CRON_EXPR_MAX + 1 bytes. */
	n = strnlen(s, CRON_EXPR_MAX + 1);
	if (n > CRON_EXPR_MAX) {
		snprintf(err, errlen, "longer than %d bytes", CRON_EXPR_MAX);
		return -1;
	}
	nw = split(s, n, w, wl, 5);
	if (nw == 0) {
		snprintf(err, errlen, "empty expression");
		return -1;
	}
	if (w[0][0] == '@') {
		if (nw > 1) {
			snprintf(err, errlen, "%.*s takes no fields",
			    (int)(wl[0] > 32 ? 32 : wl[0]), w[0]);
			return -1;
		}
		return alias(c, w[0], wl[0], err, errlen);
	}
	if (nw != 5) {
		snprintf(err, errlen, "%zu field%s: expected 5", nw,
		    nw == 1 ? "" : "s");
		return -1;
	}
	return fields5(c, w, wl, err, errlen);
}

/* An @ form: one of aliases[], compared without case. */
static int
alias(struct cron *c, const char *w, size_t wl, char *err, size_t errlen)
{
	const char *a[5];
	size_t al[5], i;
	int shown = (int)(wl > 32 ? 32 : wl);

	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strlen(aliases[i].name) != wl ||
		    strncasecmp(aliases[i].name, w, wl) != 0)
			continue;
		split(aliases[i].fields, strlen(aliases[i].fields), a, al, 5);
		return fields5(c, a, al, err, errlen);
	}
	if (wl == 7 && strncasecmp(w, "@reboot", 7) == 0)
		snprintf(err, errlen, "@reboot is not supported");
	else
		snprintf(err, errlen, "%.*s is not a schedule (@yearly, "
		    "@annually, @monthly, @weekly, @daily, @midnight, @hourly)",
		    shown, w);
	return -1;
}

static int
fields5(struct cron *c, const char *const *w, const size_t *wl, char *err,
    size_t errlen)
{
	uint64_t set[5];
	int i;

	for (i = 0; i < 5; i++)
		if (field_parse(i, w[i], wl[i], &set[i], err, errlen) == -1)
			return -1;
	c->minute = set[0];
	c->hour = (uint32_t)set[1];
	c->dom = (uint32_t)set[2];
	c->month = (uint16_t)set[3];
	/* 7 is Sunday, as 0. */
	c->dow = (uint8_t)((set[4] | set[4] >> 7) & 0x7f);
	/* cron(8) looks at the first character, so "*\/2" is a star too. */
	c->dom_star = w[2][0] == '*';
	c->dow_star = w[4][0] == '*';
	c->fixed = w[0][0] != '*' && w[1][0] != '*';
	return 0;
}

/* Field i, s[0..n): a comma-separated list of elements into *set. */
static int
field_parse(int i, const char *s, size_t n, uint64_t *set, char *err,
    size_t errlen)
{
	size_t a = 0, b;
	char why[160];

	*set = 0;
	for (;;) {
		for (b = a; b < n && s[b] != ','; b++)
			;
		if (b == a) {
			snprintf(why, sizeof(why), "empty list element");
			goto bad;
		}
		if (element(i, s + a, b - a, set, why, sizeof(why)) == -1)
			goto bad;
		if (b == n)
			return 0;
		a = b + 1;
		if (a == n) {
			snprintf(why, sizeof(why), "empty list element");
			goto bad;
		}
	}
bad:
	snprintf(err, errlen, "field %d (%s): %s", i + 1, fields[i].name,
	    why);
	return -1;
}

/* One element: '*', a value or a range, then perhaps "/step". */
static int
element(int i, const char *s, size_t n, uint64_t *set, char *why,
    size_t wlen)
{
	const struct field *f = &fields[i];
	size_t p = 0, q;
	int lo, hi, step = 1, v, range = 1;

	if (s[0] == '*') {
		lo = f->lo;
		hi = f->hi;
		p = 1;
	} else {
		if (value(i, s, n, &p, &lo, why, wlen) == -1)
			return -1;
		hi = lo;
		range = 0;
		if (p < n && s[p] == '-') {
			p++;
			if (value(i, s, n, &p, &hi, why, wlen) == -1)
				return -1;
			/* "fri-sun": a week's range may end on Sunday, 0. */
			if (i == 4 && hi == 0 && lo > 0)
				hi = 7;
			if (hi < lo) {
				snprintf(why, wlen, "%.*s is a backward range",
				    (int)p, s);
				return -1;
			}
			range = 1;
		}
	}
	if (p < n && s[p] == '/') {
		if (!range) {
			snprintf(why, wlen, "%.*s: a step needs a range or *",
			    (int)n, s);
			return -1;
		}
		q = ++p;
		if (number(s, n, &p, &step) == -1) {
			if (p == n)
				snprintf(why, wlen, "%.*s: no step after /",
				    (int)n, s);
			else if (p == q)
				bad_char(s, n, p, why, wlen);
			else
				snprintf(why, wlen, "step %.*s is out of range "
				    "1-%d", (int)(n - q), s + q, f->hi);
			return -1;
		}
		if (step < 1 || step > f->hi) {
			snprintf(why, wlen, "step %d is out of range 1-%d",
			    step, f->hi);
			return -1;
		}
	}
	if (p < n) {
		bad_char(s, n, p, why, wlen);
		return -1;
	}
	for (v = lo; v <= hi; v += step)
		*set |= (uint64_t)1 << v;
	return 0;
}

/* A number or (month, day of week) a name at s[*p], into *v, in range. */
static int
value(int i, const char *s, size_t n, size_t *p, int *v, char *why,
    size_t wlen)
{
	const struct field *f = &fields[i];
	size_t a = *p, k;

	if (a == n) {
		snprintf(why, wlen, "%.*s: no value after -", (int)n, s);
		return -1;
	}
	if (s[a] >= '0' && s[a] <= '9') {
		if (number(s, n, p, v) == -1 || *v < f->lo || *v > f->hi) {
			while (*p < n && s[*p] >= '0' && s[*p] <= '9')
				(*p)++;
			snprintf(why, wlen, "%.*s is out of range %d-%d",
			    (int)(*p - a), s + a, f->lo, f->hi);
			return -1;
		}
		return 0;
	}
	while (*p < n && ((s[*p] | 0x20) >= 'a' && (s[*p] | 0x20) <= 'z'))
		(*p)++;
	if (*p == a) {
		bad_char(s, n, a, why, wlen);
		return -1;
	}
	if (f->names != NULL && *p - a == 3)
		for (k = 0; f->names[k] != NULL; k++)
			if (strncasecmp(f->names[k], s + a, 3) == 0) {
				*v = f->names_lo + (int)k;
				return 0;
			}
	if (f->names == NULL)
		snprintf(why, wlen, "%.*s is not a number", (int)(*p - a),
		    s + a);
	else
		snprintf(why, wlen, "%.*s is not a %s name (%s-%s)",
		    (int)(*p - a), s + a, i == 3 ? "month" : "day",
		    f->names[0], f->names[i == 3 ? 11 : 6]);
	return -1;
}

/* Decimal digits at s[*p]: -1 if none, or more than 4 of them. */
static int
number(const char *s, size_t n, size_t *p, int *v)
{
	size_t a = *p;

	*v = 0;
	while (*p < n && s[*p] >= '0' && s[*p] <= '9' && *p - a < 4)
		*v = *v * 10 + (s[(*p)++] - '0');
	if (*p == a || (*p < n && s[*p] >= '0' && s[*p] <= '9'))
		return -1;
	return 0;
}

static void
bad_char(const char *s, size_t n, size_t p, char *why, size_t wlen)
{
	unsigned char ch = (unsigned char)s[p];

	if (ch > ' ' && ch < 0x7f)
		snprintf(why, wlen, "%.*s: unexpected '%c'", (int)n, s, ch);
	else
		snprintf(why, wlen, "unexpected byte 0x%02x", ch);
}

int
cron_tz_valid(const char *tz, char *err, size_t errlen)
{
	char path[sizeof(ZONEINFO) + CRON_TZ_MAX + 1], magic[4];
	struct stat st;
	size_t n, i;
	ssize_t r;
	int fd;

	n = tz == NULL ? 0 : strnlen(tz, CRON_TZ_MAX + 1);
	if (n == 0) {
		snprintf(err, errlen, "empty time zone");
		return -1;
	}
	if (n > CRON_TZ_MAX) {
		snprintf(err, errlen, "time zone longer than %d bytes",
		    CRON_TZ_MAX);
		return -1;
	}
	if (tz[0] == '/') {
		snprintf(err, errlen, "%s: a zone name, not a path", tz);
		return -1;
	}
	if (strstr(tz, "..") != NULL) {
		snprintf(err, errlen, "%s: \"..\" in a zone name", tz);
		return -1;
	}
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)tz[i];

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || strchr("/_+-", ch) != NULL)
			continue;
		snprintf(err, errlen, ch >= ' ' && ch < 0x7f ?
		    "'%c' in a zone name" : "byte 0x%02x in a zone name", ch);
		return -1;
	}
	/* One name for one zone: its path in the tree, and no other. */
	if (strstr(tz, "//") != NULL || tz[n - 1] == '/') {
		snprintf(err, errlen, "%s: an empty part in a zone name", tz);
		return -1;
	}
	if (strncmp(tz, "posix/", 6) == 0) {
		snprintf(err, errlen, "%s: posix/ is a copy of the zones: name "
		    "the zone as %s", tz, tz + 6);
		return -1;
	}
	/* Leap-second zones count seconds that Unix time does not. */
	if (strncmp(tz, "right/", 6) == 0) {
		snprintf(err, errlen, "%s: leap-second zones are not supported",
		    tz);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", ZONEINFO, tz);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		snprintf(err, errlen, "%s: no such zone in %s", tz, ZONEINFO);
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (r = read(fd, magic, sizeof(magic))) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "TZif", 4) != 0) {
		close(fd);
		snprintf(err, errlen, "%s: not a zone file in %s", tz,
		    ZONEINFO);
		return -1;
	}
	close(fd);
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Wall-clock seconds (as if UTC) broken down. */
static void
split_wall(int64_t w, struct civil *v)
{
	int64_t days = floor_div(w, DAY), secs = w - days * DAY;
	int64_t z = days + 719468, era, doe, yoe, doy, mp;

	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	v->mday = (int)(doy - (153 * mp + 2) / 5 + 1);
	v->mon = (int)(mp < 10 ? mp + 3 : mp - 9);
	v->year = yoe + era * 400 + (v->mon <= 2);
	v->hour = (int)(secs / 3600);
	v->min = (int)(secs / 60 % 60);
	v->wday = (int)(days + 4 - floor_div(days + 4, 7) * 7);
}

/* crontab(5): both day fields restricted, either matches; else both. */
static int
day_ok(const struct cron *c, const struct civil *v)
{
	int dom = c->dom >> v->mday & 1, dow = c->dow >> v->wday & 1;

	if (c->dom_star || c->dow_star)
		return dom && dow;
	return dom || dow;
}

static int
matches(const struct cron *c, const struct civil *v)
{
	return (c->month >> v->mon & 1) && day_ok(c, v) &&
	    (c->hour >> v->hour & 1) && (c->minute >> v->min & 1);
}

/* The lowest bit of set at from..to, or -1. */
static int
next_bit(uint64_t set, int from, int to)
{
	for (; from <= to; from++)
		if (set >> from & 1)
			return from;
	return -1;
}

static int
low_bit(uint64_t set)
{
	return next_bit(set, 0, 63);
}

/*
 * The next wall time after v's minute that could match: no wall time in
 * between does.  The sets are not empty (search() checks).
 */
static int64_t
skip(const struct cron *c, const struct civil *v)
{
	int64_t day = days_from_civil(v->year, v->mon, v->mday), y = v->year;
	int64_t first = low_bit(c->hour) * 3600 + low_bit(c->minute) * 60;
	int m, h, mi;

	if (!(c->month >> v->mon & 1)) {
		for (m = v->mon + 1;; m++) {
			if (m > 12) {
				m = 1;
				y++;
			}
			if (c->month >> m & 1)
				break;
		}
		return days_from_civil(y, m, 1) * DAY + first;
	}
	if (!day_ok(c, v))
		return (day + 1) * DAY + first;
	if ((c->hour >> v->hour & 1) &&
	    (mi = next_bit(c->minute, v->min + 1, 59)) != -1)
		return day * DAY + v->hour * 3600 + mi * 60;
	if ((h = next_bit(c->hour, v->hour + 1, 23)) == -1)
		return (day + 1) * DAY + first;
	return day * DAY + h * 3600 + low_bit(c->minute) * 60;
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int64_t
ceil_minute(int64_t t)
{
	return -floor_div(-t, 60) * 60;
}

/* The zone's offset east of UTC at t, in seconds. */
static int64_t
off(const struct walk *k, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (k->utc || localtime_r(&tt, &tm) == NULL)
		return 0;
	return tm.tm_gmtoff;
}

/* The first second in (lo, hi] whose offset is not o (off(hi) != o). */
static int64_t
change(const struct walk *k, int64_t lo, int64_t hi, int64_t o)
{
	int64_t mid;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (off(k, mid) == o)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* Whether a wall minute in [from, to) matches. */
static int
skipped_match(const struct cron *c, int64_t from, int64_t to)
{
	struct civil v;
	int64_t w;

	for (w = ceil_minute(from); w < to; w += 60) {
		split_wall(w, &v);
		if (matches(c, &v))
			return 1;
	}
	return 0;
}

/*
 * From t (wall time before W), the first whole minute whose wall time is
 * at least W; or the first after an offset change that turns the clock
 * back, for the caller to look at the repeated times.  *fire: the clock
 * jumped over W and a fixed-time expression matched a skipped minute.
 */
static int64_t
seek(const struct walk *k, int64_t t, int64_t W, int *fire)
{
	int64_t o = off(k, t), g, probe, T, on;

	*fire = 0;
	for (;;) {
		g = W - o;
		probe = g < t + SEG_MAX ? g : t + SEG_MAX;
		if (off(k, probe) == o) {
			if (probe == g)
				return ceil_minute(g);
			t = probe;
			continue;
		}
		T = change(k, t, probe, o);
		if (g < T)
			return ceil_minute(g);
		on = off(k, T);
		if (on < o)
			return ceil_minute(T);
		if (T + on >= W) {
			*fire = k->c->fixed && skipped_match(k->c, W, T + on);
			return ceil_minute(T);
		}
		t = T;
		o = on;
	}
}

/* Whether t's wall time was shown before, the clock turned back since. */
static int
repeated(const struct walk *k, int64_t t, int64_t o)
{
	int64_t p = off(k, t - REPEAT_MAX);

	return p > o && off(k, t - (p - o)) == p;
}

static int64_t
search(const struct walk *k, int64_t after)
{
	const struct cron *c = k->c;
	struct civil v;
	int64_t t, o, W;
	int fire;

	if (c->minute == 0 || c->hour == 0 || c->month == 0 ||
	    (c->dom == 0 && c->dow == 0) || after < T_MIN || after > T_MAX) {
		errno = EINVAL;
		return -1;
	}
	t = after;
	W = floor_div(after + off(k, after), 60) * 60 + 60;
	for (;;) {
		t = seek(k, t, W, &fire);
		if (t - after > HORIZON)
			break;
		if (fire)
			return t;
		o = off(k, t);
		split_wall(t + o, &v);
		if (!matches(c, &v))
			W = skip(c, &v);
		else if (c->fixed && repeated(k, t, o))
			W = floor_div(t + o, 60) * 60 + 60;
		else
			return t;
	}
	errno = ERANGE;
	return -1;
}

/*
 * The one function that changes TZ: to the zone's file (by path, so that
 * TZDIR cannot make it another file than cron_tz_valid() checked), for
 * one search, then back to what it was.
 */
static int64_t
zone_next(const struct cron *c, const char *tz, int64_t after)
{
	struct walk k = { c, 0 };
	char val[sizeof(ZONEINFO) + CRON_TZ_MAX + 2], *saved = NULL;
	const char *old;
	int64_t r;
	int e;

	snprintf(val, sizeof(val), ":%s/%s", ZONEINFO, tz);
	old = getenv("TZ");
	if (old != NULL && strcmp(old, val) == 0)
		return search(&k, after);
	if (old != NULL && (saved = strdup(old)) == NULL)
		return -1;
	if (setenv("TZ", val, 1) == -1) {
		free(saved);
		return -1;
	}
	tzset();
	r = search(&k, after);
	e = errno;
	if (saved != NULL)
		(void)setenv("TZ", saved, 1);
	else
		(void)unsetenv("TZ");
	tzset();
	free(saved);
	errno = e;
	return r;
}

int64_t
cron_next(const struct cron *c, const char *tz, int64_t after)
{
	struct walk k = { c, 1 };
	char err[128];

	if (tz == NULL || strcmp(tz, "UTC") == 0)
		return search(&k, after);
	if (cron_tz_valid(tz, err, sizeof(err)) == -1) {
		errno = EINVAL;
		return -1;
	}
	return zone_next(c, tz, after);
}
