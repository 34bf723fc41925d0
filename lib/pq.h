/*
 * pq.h - libpq on demand (see pq.c): the PQ* functions of <libpq-fe.h>
 * work once pq_load() succeeded.
 */
#ifndef HK_PQ_H
#define HK_PQ_H

#include <stddef.h>

/* Opens libpq; 0, or -1 with the reason in err. */
int	pq_load(char *, size_t);

#endif
