/*
 * table.c - lib/table.c: rows as TSV for scripts (no header) or aligned
 * under a header for a terminal; NULL cells print "-"; a NULL table is
 * harmless.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "table.h"
#include "tap.h"

static char	*printed(struct table *, int, int *);

/* What table_print() writes on standard output, and its result. */
static char *
printed(struct table *t, int aligned, int *r)
{
	static char buf[4096];
	FILE *tmp;
	size_t n;
	int saved;

	fflush(stdout);
	if ((tmp = tmpfile()) == NULL || (saved = dup(STDOUT_FILENO)) == -1)
		exit(1);
	dup2(fileno(tmp), STDOUT_FILENO);
	*r = table_print(t, aligned);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

int
main(void)
{
	static const char *const header[] = { "APP", "SERVICE", "STATE" };
	static const char *const r1[] = { "fn", "py", "running" };
	static const char *const r2[] = { "http-functions", NULL, "x" };
	struct table *t;
	int r;

	plan(8);
	t = table_new(3, header);
	ok(t != NULL, "a new table");
	ok(table_add(t, r1) == 0 && table_add(t, r2) == 0, "two rows added");
	is(printed(t, 0, &r), "fn\tpy\trunning\nhttp-functions\t-\tx\n",
	    "TSV: no header, tabs, NULL is -");
	isint(r, 0, "TSV: printed");
	is(printed(t, 1, &r),
	    "APP             SERVICE  STATE\n"
	    "fn              py       running\n"
	    "http-functions  -        x\n",
	    "aligned: a header, columns two spaces apart");
	table_free(t);
	t = table_new(2, header);
	is(printed(t, 0, &r), "", "a table of no rows prints nothing");
	table_free(t);
	ok(table_new(0, header) == NULL, "a table needs a column");
	ok(table_add(NULL, r1) == -1 && printed(NULL, 0, &r)[0] == '\0' &&
	    r == -1, "a NULL table is refused, harmlessly");
	table_free(NULL);
	return done();
}
