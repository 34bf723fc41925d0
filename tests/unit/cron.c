/*
 * cron.c - lib/cron.c: what cron_parse() makes of expressions (the sets,
 * the day-field stars, fixed or wildcard), what it refuses and why, in
 * exact words; cron_tz_valid(); and cron_next() on a few cases, TZ left
 * as it was.  The firings at large are tests/integration/7004's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"
#include "tap.h"

/*
 * An expression and its sets as "m=.. h=.. dom=.. mon=.. dow=..", runs of
 * three or more values as a-b, a '*' after a day field that counts as '*'
 * (crontab(5)'s day rule), then "fixed" or "wild".
 */
static const struct {
	const char	*expr, *want;
} accepted[] = {
	{ "* * * * *", "m=0-59 h=0-23 dom=1-31* mon=1-12 dow=0-6* wild" },
	{ "0 0 * * *", "m=0 h=0 dom=1-31* mon=1-12 dow=0-6* fixed" },
	{ "*/15 9-17 * * mon-fri",
	    "m=0,15,30,45 h=9-17 dom=1-31* mon=1-12 dow=1-5 wild" },
	{ "30 2 * * *", "m=30 h=2 dom=1-31* mon=1-12 dow=0-6* fixed" },
	{ "0 */2 * * *", "m=0 h=0,2,4,6,8,10,12,14,16,18,20,22 dom=1-31* "
	    "mon=1-12 dow=0-6* wild" },
	{ "5,10-12,40-50/5 1 1 1 1",
	    "m=5,10-12,40,45,50 h=1 dom=1 mon=1 dow=1 fixed" },
	{ "0 0 1,15 * 1", "m=0 h=0 dom=1,15 mon=1-12 dow=1 fixed" },
	{ "0 0 */10 * 1", "m=0 h=0 dom=1,11,21,31* mon=1-12 dow=1 fixed" },
	{ "0 0 1 * */3", "m=0 h=0 dom=1 mon=1-12 dow=0,3,6* fixed" },
	{ "0 12 * JAN,jul,Dec *", "m=0 h=12 dom=1-31* mon=1,7,12 dow=0-6* "
	    "fixed" },
	{ "0 12 * mar-oct/2 *", "m=0 h=12 dom=1-31* mon=3,5,7,9 dow=0-6* "
	    "fixed" },
	{ "0 0 * * 7", "m=0 h=0 dom=1-31* mon=1-12 dow=0 fixed" },
	{ "0 0 * * 5-7", "m=0 h=0 dom=1-31* mon=1-12 dow=0,5,6 fixed" },
	{ "0 0 * * fri-sun", "m=0 h=0 dom=1-31* mon=1-12 dow=0,5,6 fixed" },
	{ "0 0 * * 0-7", "m=0 h=0 dom=1-31* mon=1-12 dow=0-6 fixed" },
	{ "0 0 * * SUN,Sat", "m=0 h=0 dom=1-31* mon=1-12 dow=0,6 fixed" },
	{ "  1\t2   3 4 5  ", "m=1 h=2 dom=3 mon=4 dow=5 fixed" },
	{ "00 05 09 01 00", "m=0 h=5 dom=9 mon=1 dow=0 fixed" },
	{ "59 23 31 12 6", "m=59 h=23 dom=31 mon=12 dow=6 fixed" },
	{ "0-59/59 0-23/23 1-31/30 1-12/11 0-7/7",
	    "m=0,59 h=0,23 dom=1,31 mon=1,12 dow=0 fixed" },
	{ "*/1 * * * *", "m=0-59 h=0-23 dom=1-31* mon=1-12 dow=0-6* wild" },
	{ "0 * * * *", "m=0 h=0-23 dom=1-31* mon=1-12 dow=0-6* wild" },
	{ "@yearly", "m=0 h=0 dom=1 mon=1 dow=0-6* fixed" },
	{ "@annually", "m=0 h=0 dom=1 mon=1 dow=0-6* fixed" },
	{ "@monthly", "m=0 h=0 dom=1 mon=1-12 dow=0-6* fixed" },
	{ "@weekly", "m=0 h=0 dom=1-31* mon=1-12 dow=0 fixed" },
	{ "@daily", "m=0 h=0 dom=1-31* mon=1-12 dow=0-6* fixed" },
	{ "@midnight", "m=0 h=0 dom=1-31* mon=1-12 dow=0-6* fixed" },
	{ " @hourly ", "m=0 h=0-23 dom=1-31* mon=1-12 dow=0-6* wild" },
	{ "@DAILY", "m=0 h=0 dom=1-31* mon=1-12 dow=0-6* fixed" },
};

static const struct {
	const char	*expr, *why;
} refused[] = {
	{ "", "empty expression" },
	{ " \t ", "empty expression" },
	{ "* * * *", "4 fields: expected 5" },
	{ "* * * * * *", "6 fields: expected 5" },
	{ "0 0 * * * /bin/true", "6 fields: expected 5" },
	{ "*", "1 field: expected 5" },
	{ "60 * * * *", "field 1 (minute): 60 is out of range 0-59" },
	{ "* 24 * * *", "field 2 (hour): 24 is out of range 0-23" },
	{ "* * 0 * *", "field 3 (day of month): 0 is out of range 1-31" },
	{ "* * 32 * *", "field 3 (day of month): 32 is out of range 1-31" },
	{ "* * * 13 *", "field 4 (month): 13 is out of range 1-12" },
	{ "* * * 0 *", "field 4 (month): 0 is out of range 1-12" },
	{ "* * * * 8", "field 5 (day of week): 8 is out of range 0-7" },
	{ "99999999999 * * * *",
	    "field 1 (minute): 99999999999 is out of range 0-59" },
	{ "5-2 * * * *", "field 1 (minute): 5-2 is a backward range" },
	{ "* * * dec-jan *", "field 4 (month): dec-jan is a backward range" },
	{ "*/0 * * * *", "field 1 (minute): step 0 is out of range 1-59" },
	{ "*/60 * * * *", "field 1 (minute): step 60 is out of range 1-59" },
	{ "* */24 * * *", "field 2 (hour): step 24 is out of range 1-23" },
	{ "*/ * * * *", "field 1 (minute): */: no step after /" },
	{ "*/x * * * *", "field 1 (minute): */x: unexpected 'x'" },
	{ "*/123456 * * * *",
	    "field 1 (minute): step 123456 is out of range 1-59" },
	{ "5/10 * * * *",
	    "field 1 (minute): 5/10: a step needs a range or *" },
	{ "1,,2 * * * *", "field 1 (minute): empty list element" },
	{ "1, * * * *", "field 1 (minute): empty list element" },
	{ ",1 * * * *", "field 1 (minute): empty list element" },
	{ "* * * * mon,", "field 5 (day of week): empty list element" },
	{ "x * * * *", "field 1 (minute): x is not a number" },
	{ "* jan * * *", "field 2 (hour): jan is not a number" },
	{ "* * * foo *", "field 4 (month): foo is not a month name (jan-dec)" },
	{ "* * * january *",
	    "field 4 (month): january is not a month name (jan-dec)" },
	{ "* * * * monday",
	    "field 5 (day of week): monday is not a day name (sun-sat)" },
	{ "* * * mon *", "field 4 (month): mon is not a month name (jan-dec)" },
	{ "* * * * jan", "field 5 (day of week): jan is not a day name "
	    "(sun-sat)" },
	{ "1x * * * *", "field 1 (minute): 1x: unexpected 'x'" },
	{ "1-2-3 * * * *", "field 1 (minute): 1-2-3: unexpected '-'" },
	{ "*-5 * * * *", "field 1 (minute): *-5: unexpected '-'" },
	{ "** * * * *", "field 1 (minute): **: unexpected '*'" },
	{ "-1 * * * *", "field 1 (minute): -1: unexpected '-'" },
	{ "1- * * * *", "field 1 (minute): 1-: no value after -" },
	{ "? * * * *", "field 1 (minute): ?: unexpected '?'" },
	{ "* * L * *", "field 3 (day of month): L is not a number" },
	{ "* * * * 1#2", "field 5 (day of week): 1#2: unexpected '#'" },
	{ "0 0 * * *\n", "field 5 (day of week): unexpected byte 0x0a" },
	{ "0\n0 * * *", "4 fields: expected 5" },
	{ "\xc3\xa9 * * * *", "field 1 (minute): unexpected byte 0xc3" },
	{ "@reboot", "@reboot is not supported" },
	{ "@every 5m", "@every takes no fields" },
	{ "@daily 5", "@daily takes no fields" },
	{ "@fortnightly", "@fortnightly is not a schedule (@yearly, "
	    "@annually, @monthly, @weekly, @daily, @midnight, @hourly)" },
	{ "@", "@ is not a schedule (@yearly, @annually, @monthly, @weekly, "
	    "@daily, @midnight, @hourly)" },
};

static const struct {
	const char	*tz, *why;	/* why NULL: valid */
} zones[] = {
	{ "UTC", NULL },
	{ "Europe/Berlin", NULL },
	{ "America/Argentina/Buenos_Aires", NULL },
	{ "Etc/GMT+5", NULL },
	{ "America/Port-au-Prince", NULL },
	{ "", "empty time zone" },
	{ "/etc/passwd", "/etc/passwd: a zone name, not a path" },
	{ "/usr/share/zoneinfo/UTC", "/usr/share/zoneinfo/UTC: a zone name, "
	    "not a path" },
	{ "../../../etc/passwd", "../../../etc/passwd: \"..\" in a zone "
	    "name" },
	{ "Europe/../UTC", "Europe/../UTC: \"..\" in a zone name" },
	{ "Europe/Berlin ", "' ' in a zone name" },
	{ "Europe/Berlin\n", "byte 0x0a in a zone name" },
	{ "Europe.Berlin", "'.' in a zone name" },
	{ "Mars/Olympus_Mons", "Mars/Olympus_Mons: no such zone in "
	    "/usr/share/zoneinfo" },
	{ "Europe", "Europe: not a zone file in /usr/share/zoneinfo" },
	{ "Europe/", "Europe/: an empty part in a zone name" },
	{ "Europe//Berlin", "Europe//Berlin: an empty part in a zone name" },
	{ "Europe/Berlin/", "Europe/Berlin/: an empty part in a zone name" },
	{ "posix/Europe/Berlin", "posix/Europe/Berlin: posix/ is a copy of the "
	    "zones: name the zone as Europe/Berlin" },
	{ "zone.tab", "'.' in a zone name" },
	{ "right/UTC", "right/UTC: leap-second zones are not supported" },
	{ "Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "time zone longer than 63 bytes" },
};

/* Firings: an expression, a zone, a start and the next (RFC 3339, UTC). */
static const struct {
	const char	*expr, *tz, *after, *want;
} nexts[] = {
	{ "* * * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z" },
	{ "* * * * *", NULL, "2026-01-01T00:00:30Z", "2026-01-01T00:01:00Z" },
	{ "0 0 1 1 *", "UTC", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z" },
	{ "0 0 29 2 *", "UTC", "2026-06-01T00:00:00Z",
	    "2028-02-29T00:00:00Z" },
	{ "0 0 29 2 *", "UTC", "2097-01-01T00:00:00Z",
	    "2104-02-29T00:00:00Z" },
	/* Both day fields restricted: either.  One starting '*': both. */
	{ "0 0 13 * fri", "UTC", "2026-02-01T00:00:00Z",
	    "2026-02-06T00:00:00Z" },
	{ "0 0 */13 * fri", "UTC", "2026-02-01T00:00:00Z",
	    "2026-02-27T00:00:00Z" },
	{ "0 0 13 * */5", "UTC", "2026-02-01T00:00:00Z",
	    "2026-02-13T00:00:00Z" },
	{ "0 9 * * 7", "Asia/Kolkata", "2026-03-01T00:00:00Z",
	    "2026-03-01T03:30:00Z" },
	/* Berlin: 02:30 skipped, fires at 03:00 CEST; repeated, once. */
	{ "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
	    "2026-03-29T01:00:00Z" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
	    "2026-10-25T00:30:00Z" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z",
	    "2026-10-26T01:30:00Z" },
	{ "30 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z",
	    "2026-10-25T01:30:00Z" },
	{ "0 0 31 2 *", "UTC", "2026-01-01T00:00:00Z", NULL },
	{ "0 0 30 2 *", "Europe/Berlin", "2026-01-01T00:00:00Z", NULL },
};

/* s, printable on one TAP line (two at a time). */
static const char *
shown(const char *s)
{
	static char buf[2][128];
	static int k;
	char *b = buf[k ^= 1];
	size_t n = 0;

	if (s == NULL)
		return "NULL";
	for (; *s != '\0' && n + 5 < sizeof(buf[0]); s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= ' ' && ch < 0x7f)
			b[n++] = (char)ch;
		else
			n += snprintf(b + n, sizeof(buf[0]) - n, "\\x%02x", ch);
	}
	b[n] = '\0';
	return b;
}

static int64_t
when(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL)
		return -2;
	return (int64_t)timegm(&tm);
}

static void
runs(char *buf, size_t len, uint64_t set, int lo, int hi)
{
	int v, w, first = 1;
	size_t n = strlen(buf);

	for (v = lo; v <= hi; v = w + 1) {
		if (!(set >> v & 1)) {
			w = v;
			continue;
		}
		for (w = v; w + 1 <= hi && (set >> (w + 1) & 1); w++)
			;
		if (w - v >= 2)
			n += snprintf(buf + n, len - n, "%s%d-%d",
			    first ? "" : ",", v, w);
		else if (w == v)
			n += snprintf(buf + n, len - n, "%s%d",
			    first ? "" : ",", v);
		else
			n += snprintf(buf + n, len - n, "%s%d,%d",
			    first ? "" : ",", v, w);
		first = 0;
	}
}

static void
render(const struct cron *c, char *buf, size_t len)
{
	buf[0] = '\0';
	strlcat(buf, "m=", len);
	runs(buf, len, c->minute, 0, 59);
	strlcat(buf, " h=", len);
	runs(buf, len, c->hour, 0, 23);
	strlcat(buf, " dom=", len);
	runs(buf, len, c->dom, 1, 31);
	strlcat(buf, c->dom_star ? "* mon=" : " mon=", len);
	runs(buf, len, c->month, 1, 12);
	strlcat(buf, " dow=", len);
	runs(buf, len, c->dow, 0, 6);
	strlcat(buf, c->dow_star ? "*" : "", len);
	strlcat(buf, c->fixed ? " fixed" : " wild", len);
}

static void
test_parse(void)
{
	struct cron c;
	char err[256], got[512], big[CRON_EXPR_MAX + 2];
	size_t i;

	for (i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		err[0] = '\0';
		if (!ok(cron_parse(&c, accepted[i].expr, err, sizeof(err)) == 0,
		    "accepts '%s'", shown(accepted[i].expr))) {
			diag("refused: %s", err);
			continue;
		}
		render(&c, got, sizeof(got));
		is(got, accepted[i].want, "'%s': its sets",
		    shown(accepted[i].expr));
	}
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		strlcpy(err, "(none)", sizeof(err));
		ok(cron_parse(&c, refused[i].expr, err, sizeof(err)) == -1,
		    "refuses '%s'", shown(refused[i].expr));
		is(err, refused[i].why, "why");
	}

	/* CRON_EXPR_MAX bytes, and one more. */
	memset(big, ' ', sizeof(big));
	memcpy(big, "* * * * *", 9);
	big[CRON_EXPR_MAX] = '\0';
	ok(cron_parse(&c, big, err, sizeof(err)) == 0,
	    "%d bytes: accepted", CRON_EXPR_MAX);
	big[CRON_EXPR_MAX] = ' ';
	big[CRON_EXPR_MAX + 1] = '\0';
	ok(cron_parse(&c, big, err, sizeof(err)) == -1,
	    "%d bytes: refused", CRON_EXPR_MAX + 1);
	is(err, "longer than 255 bytes", "why");
	ok(cron_parse(&c, NULL, err, sizeof(err)) == -1, "NULL: refused");
	/* A short buffer holds the start of the reason, terminated. */
	ok(cron_parse(&c, "* 24 * * *", err, 8) == -1 &&
	    strcmp(err, "field 2") == 0, "a short buffer: truncated");
}

static void
test_tz(void)
{
	char err[256];
	size_t i;
	int r;

	for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		strlcpy(err, "(none)", sizeof(err));
		r = cron_tz_valid(zones[i].tz, err, sizeof(err));
		if (zones[i].why == NULL) {
			if (!ok(r == 0, "zone '%s' valid", zones[i].tz))
				diag("refused: %s", err);
		} else {
			ok(r == -1, "zone '%s' refused", shown(zones[i].tz));
			is(err, zones[i].why, "why");
		}
	}
	ok(cron_tz_valid(NULL, err, sizeof(err)) == -1, "zone NULL refused");
}

static void
test_next(void)
{
	struct cron c;
	char err[256];
	int64_t got;
	size_t i;
	clock_t t0;

	for (i = 0; i < sizeof(nexts) / sizeof(nexts[0]); i++) {
		if (cron_parse(&c, nexts[i].expr, err, sizeof(err)) == -1) {
			ok(0, "'%s' parses: %s", nexts[i].expr, err);
			continue;
		}
		got = cron_next(&c, nexts[i].tz, when(nexts[i].after));
		isint(got, nexts[i].want ? when(nexts[i].want) : -1,
		    "'%s' in %s after %s: %s", nexts[i].expr,
		    nexts[i].tz ? nexts[i].tz : "NULL", nexts[i].after,
		    nexts[i].want ? nexts[i].want : "never");
	}

	/* An unknown zone: -1, EINVAL. */
	cron_parse(&c, "* * * * *", err, sizeof(err));
	errno = 0;
	ok(cron_next(&c, "Mars/Olympus_Mons", 0) == -1 && errno == EINVAL,
	    "an unknown zone: -1, EINVAL");
	ok(cron_next(&c, "UTC", (int64_t)1 << 60) == -1,
	    "a start past year 9999: -1");

	/* TZ is put back as it was, set or not. */
	setenv("TZ", "Asia/Tokyo", 1);
	cron_next(&c, "Europe/Berlin", 0);
	is(getenv("TZ"), "Asia/Tokyo", "TZ put back after a search");
	unsetenv("TZ");
	cron_next(&c, "Europe/Berlin", 0);
	ok(getenv("TZ") == NULL, "TZ left unset after a search");

	/* Leap days in a zone: no minute-by-minute walk. */
	cron_parse(&c, "0 0 29 2 *", err, sizeof(err));
	t0 = clock();
	for (i = 0; i < 100; i++)
		cron_next(&c, "America/New_York", when("2028-03-01T00:00:00Z"));
	ok((clock() - t0) * 10 < CLOCKS_PER_SEC,
	    "100 searches of a leap day in New York in under 0.1 s");
}

int
main(void)
{
	test_parse();
	test_tz();
	test_next();
	return done();
}
