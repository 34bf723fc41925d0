/*
 * table.h - rows of text cells, printed as TSV for scripts (stable, no
 * header, one row a line, cells separated by tabs) or as aligned columns
 * under a header for a terminal.  hk and hk-events print with it.
 *
 * Cells are copied.  A table that could not grow (out of memory) says so
 * from table_print(); until then calls on it are harmless, and a NULL
 * table is accepted everywhere.
 */
#ifndef HK_TABLE_H
#define HK_TABLE_H

#include <stddef.h>

struct table;

/* A table of ncols columns with its header row; NULL without memory. */
struct table	*table_new(size_t, const char *const *);
/* Appends a row of ncols cells (NULL cells print as "-"); 0 or -1. */
int		 table_add(struct table *, const char *const *);
/* Aligned with the header, or TSV without it; -1 if a row was lost. */
int		 table_print(struct table *, int);
void		 table_free(struct table *);

#endif
