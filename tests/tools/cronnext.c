/*
 * cronnext - the next firings of cron expressions, by lib/cron.c.
 *
 *	cronnext < cases
 *
 * Each line of stdin is "EXPR<TAB>TZ<TAB>START<TAB>N": a cron expression,
 * a zone name, Unix seconds and a count.  For each, one line on stdout:
 * the N firings after START, each after the one before, in Unix seconds
 * separated by spaces ("-1" ends it early when there is no next firing),
 * or "error: reason" if the expression or the zone is refused.  One
 * process answers thousands of cases (tests/integration/7004).  Exits 0;
 * 65 on a malformed line, 74 if stdout fails.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cron.h"

#define PROG	"cronnext"
#define LINE_MAX_ 1024

static int	one(char *);

static int
one(char *line)
{
	char *expr, *tz, *start, *count, *end, err[256];
	struct cron c;
	int64_t t;
	long n, i;

	expr = line;
	if ((tz = strchr(expr, '\t')) == NULL ||
	    (start = strchr(++tz, '\t')) == NULL ||
	    (count = strchr(++start, '\t')) == NULL)
		return -1;
	tz[-1] = start[-1] = *count++ = '\0';
	t = strtoll(start, &end, 10);
	if (*end != '\0')
		return -1;
	n = strtol(count, &end, 10);
	if (*end != '\0' || n < 1 || n > 10000)
		return -1;
	if (cron_parse(&c, expr, err, sizeof(err)) == -1 ||
	    cron_tz_valid(tz, err, sizeof(err)) == -1) {
		printf("error: %s\n", err);
		return 0;
	}
	for (i = 0; i < n; i++) {
		t = cron_next(&c, tz, t);
		printf("%s%" PRId64, i ? " " : "", t);
		if (t == -1)
			break;
	}
	printf("\n");
	return 0;
}

int
main(void)
{
	char line[LINE_MAX_];
	size_t len;
	long lineno = 0;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		lineno++;
		len = strlen(line);
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(stdin)) {
			fprintf(stderr, PROG ": line %ld: too long\n", lineno);
			return EX_DATAERR;
		}
		if (one(line) == -1) {
			fprintf(stderr, PROG ": line %ld: expected "
			    "EXPR<TAB>TZ<TAB>START<TAB>N\n", lineno);
			return EX_DATAERR;
		}
	}
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror(PROG ": stdout");
		return EX_IOERR;
	}
	return 0;
}
