/*
 * cron.c - libFuzzer target for cron_parse() and cron_next() (lib/cron.c).
 *
 * Any bytes, as a C string: the parser must not crash or read past the
 * string, and returns 0 or -1 with a terminated, non-empty reason.  An
 * expression it accepts is searched in a few zones from a few starts (one
 * drawn from the input, others just before daylight-saving changes): a
 * firing is after its start, on a whole minute, within the 8 years, and
 * matches the expression on the zone's clock, or is the first minute
 * after the clock jumped forward (a fixed time that was skipped); the
 * search from just before it finds it again, and the next is later.
 *
 *	make build/fuzz/cron && build/fuzz/cron tests/fuzz/corpus/cron
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"

#define HORIZON	((int64_t)8 * 366 * 86400)

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static int	matches(const struct cron *, const struct tm *);
static void	one(const struct cron *, const char *, int64_t);

static const char *const zones[] = {
	"UTC", "Europe/Berlin", "Australia/Lord_Howe", "America/New_York",
};

/* Just before changes: Berlin 2026-03-29 and 2026-10-25, Lord Howe
 * 2026-10-04, New York 2026-11-01. */
static const int64_t starts[] = {
	1774745940, 1792886100, 1791041100, 1793512800,
};

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "cron fuzz: invariant broken: %s\n", what);
		abort();
	}
}

static int
matches(const struct cron *c, const struct tm *tm)
{
	int dom = c->dom >> tm->tm_mday & 1, dow = c->dow >> tm->tm_wday & 1;
	int day = c->dom_star || c->dow_star ? dom && dow : dom || dow;

	return (c->minute >> tm->tm_min & 1) && (c->hour >> tm->tm_hour & 1) &&
	    (c->month >> (tm->tm_mon + 1) & 1) && day;
}

/* TZ is the zone's already: cron_next() then leaves it alone. */
static void
one(const struct cron *c, const char *tz, int64_t after)
{
	struct tm tm, before;
	int64_t r, again;
	time_t t, b;

	r = cron_next(c, tz, after);
	if (r == -1)
		return;
	check(r > after, "after its start");
	check(r % 60 == 0, "a whole minute");
	check(r - after <= HORIZON, "within the horizon");
	t = (time_t)r;
	b = t - 60;
	check(localtime_r(&t, &tm) != NULL && localtime_r(&b, &before) != NULL,
	    "localtime");
	check(matches(c, &tm) ||
	    (c->fixed && before.tm_gmtoff < tm.tm_gmtoff),
	    "matches, or the first minute after a jump forward");
	again = cron_next(c, tz, r - 1);
	check(again == r, "found again from a second before");
	again = cron_next(c, tz, r);
	check(again == -1 || again > r, "the next is later");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *s, err[256], tzval[128];
	struct cron c;
	uint64_t h = 1469598103934665603ULL;
	size_t i, z;
	int r;

	if ((s = malloc(len + 1)) == NULL)
		return 0;
	memcpy(s, data, len);
	s[len] = '\0';
	memset(err, 'x', sizeof(err));
	r = cron_parse(&c, s, err, sizeof(err));
	check(r == 0 || r == -1, "0 or -1");
	if (r == -1) {
		check(memchr(err, '\0', sizeof(err)) != NULL, "reason ends");
		check(err[0] != '\0', "reason given");
		free(s);
		return 0;
	}
	for (i = 0; i < len; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	for (z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
		snprintf(tzval, sizeof(tzval), ":/usr/share/zoneinfo/%s",
		    zones[z]);
		setenv("TZ", tzval, 1);
		tzset();
		/* 2020-01-01 and 11 years on. */
		one(&c, zones[z], 1577836800 + (int64_t)(h % (11 * 31556952)));
		one(&c, zones[z], starts[z]);
	}
	unsetenv("TZ");
	tzset();
	free(s);
	return 0;
}
