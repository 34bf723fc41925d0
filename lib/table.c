/*
 * table.c - rows of text cells, as TSV or aligned columns (table.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct table {
	size_t	  ncols;
	size_t	  nrows;	/* row 0 is the header */
	char	**cells;	/* nrows * ncols */
	int	  lost;		/* a row could not be added */
};

struct table *
table_new(size_t ncols, const char *const *header)
{
	struct table *t;

	if (ncols == 0 || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->ncols = ncols;
	if (table_add(t, header) == -1) {
		table_free(t);
		return NULL;
	}
	return t;
}

int
table_add(struct table *t, const char *const *row)
{
	char **cells;
	size_t c, base;

	if (t == NULL)
		return -1;
	cells = reallocarray(t->cells, (t->nrows + 1) * t->ncols,
	    sizeof(*cells));
	if (cells == NULL) {
		t->lost = 1;
		return -1;
	}
	t->cells = cells;
	base = t->nrows * t->ncols;
	for (c = 0; c < t->ncols; c++) {
		cells[base + c] = strdup(row[c] != NULL ? row[c] : "-");
		if (cells[base + c] == NULL) {
			while (c-- > 0)
				free(cells[base + c]);
			t->lost = 1;
			return -1;
		}
	}
	t->nrows++;
	return 0;
}

int
table_print(struct table *t, int aligned)
{
	const char *cell;
	size_t r, c, *width;

	if (t == NULL || (width = calloc(t->ncols, sizeof(*width))) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++)
			if (strlen(t->cells[r * t->ncols + c]) > width[c])
				width[c] = strlen(t->cells[r * t->ncols + c]);
	for (r = aligned ? 0 : 1; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			cell = t->cells[r * t->ncols + c];
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
	if (t->lost) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
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
