/*
 * table.c - rows of text cells, printed as TSV for scripts (stable, no
 * header) or as aligned columns under a header for a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "hk.h"
#include "log.h"

struct table {
	size_t	  ncols;
	size_t	  nrows;	/* row 0 is the header */
	char	**cells;	/* nrows * ncols */
};

struct table *
table_new(size_t ncols, const char *const *header)
{
	struct table *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatal(EX_OSERR, "calloc");
	t->ncols = ncols;
	table_add(t, header);
	return t;
}

int
table_add(struct table *t, const char *const *row)
{
	char **cells;
	size_t c;

	cells = reallocarray(t->cells, (t->nrows + 1) * t->ncols,
	    sizeof(*cells));
	if (cells == NULL)
		fatal(EX_OSERR, "reallocarray");
	t->cells = cells;
	for (c = 0; c < t->ncols; c++)
		if ((cells[t->nrows * t->ncols + c] = strdup(row[c])) == NULL)
			fatal(EX_OSERR, "strdup");
	t->nrows++;
	return 0;
}

void
table_print(struct table *t, int aligned)
{
	size_t r, c, *width;

	if ((width = calloc(t->ncols, sizeof(*width))) == NULL)
		fatal(EX_OSERR, "calloc");
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++)
			if (strlen(t->cells[r * t->ncols + c]) > width[c])
				width[c] = strlen(t->cells[r * t->ncols + c]);
	for (r = aligned ? 0 : 1; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];

			if (!aligned)
				printf("%s%s", cell, c + 1 < t->ncols ?
				    "\t" : "\n");
			else if (c + 1 < t->ncols)
				printf("%-*s  ", (int)width[c], cell);
			else
				printf("%s\n", cell);
		}
	}
	free(width);
}

void
table_free(struct table *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
