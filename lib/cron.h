/*
 * cron.h - cron expressions and their firing times in a time zone.
 *
 * The five fields of crontab(5) (minute hour day-of-month month
 * day-of-week) with '*', ranges, lists and steps, month and day names
 * (jan..dec, sun..sat), 7 as Sunday, and the forms @yearly (@annually),
 * @monthly, @weekly, @daily (@midnight) and @hourly.  Day of month and
 * day of week, both restricted, fire on either (crontab(5)).
 *
 * Daylight-saving transitions follow cron(8)'s documented rules: a
 * firing at a fixed local time (neither the minute nor the hour field
 * starts with '*', and not @hourly) that falls in a skipped hour fires at
 * the first minute after the jump; one that falls in a repeated hour fires once,
 * at its first occurrence.  Other expressions follow the local clock:
 * they fire on every minute the clock shows that matches, the repeated
 * ones included, and none in the skipped time.
 */
#ifndef HK_CRON_H
#define HK_CRON_H

#include <stddef.h>
#include <stdint.h>

#define CRON_EXPR_MAX	255	/* bytes of an expression */
#define CRON_TZ_MAX	63	/* bytes of an IANA zone name */

struct cron {
	uint64_t	minute;		/* bits 0..59 */
	uint32_t	hour;		/* bits 0..23 */
	uint32_t	dom;		/* bits 1..31 */
	uint16_t	month;		/* bits 1..12 */
	uint8_t		dow;		/* bits 0..6, Sunday 0 */
	unsigned	dom_star:1;	/* day of month was '*' */
	unsigned	dow_star:1;	/* day of week was '*' */
	unsigned	fixed:1;	/* minute and hour fixed: DST rules */
};

/* 0, or -1 with why ("field 2 (hour): 24 is out of range 0-23"). */
int	cron_parse(struct cron *, const char *, char *, size_t);

/*
 * An IANA time zone name ("UTC", "Europe/Berlin"): 0 if the system's
 * zoneinfo has it, -1 with why.  Never a path: no leading '/', no "..";
 * one name for a zone: no empty part ("Europe//Berlin", "Europe/"), no
 * posix/ or right/ tree.
 */
int	cron_tz_valid(const char *, char *, size_t);

/*
 * The first firing strictly after `after` (Unix seconds) in time zone tz
 * (NULL or "UTC": UTC), as Unix seconds; -1 if none within 8 years (the
 * 30th of February).  Firings are on whole minutes.
 */
int64_t	cron_next(const struct cron *, const char *, int64_t);

#endif
