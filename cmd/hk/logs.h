/*
 * logs.h - "hk logs": what logs.c (the service logs hk-scale keeps on
 * this host) and logs_node.c (a container's output read from its node's
 * engine) share.
 */
#ifndef HK_LOGS_H
#define HK_LOGS_H

#include <stdio.h>

#include "config.h"
#include "store.h"
#include "svclog.h"

struct hk;

/* Lines kept to be merged by time before they are shown. */
struct logs_lines {
	char	**v;
	size_t	 n;
	size_t	 cap;
};

/* What to show, and the last lines kept for it. */
struct tail {
	char	 since[SVCLOG_TIME_LEN + 1];	/* "": every line */
	long long n;				/* -1: all */
	char	**ring;
	long long count;			/* lines seen */
	int	 live;				/* following: print at once */
	/* Set: lines go into keep instead, but those skip says 1 of. */
	struct logs_lines *keep;
	int	(*skip)(const char *, void *);
	void	*skiparg;
};

/* A whole line (with its newline): shown, kept in the ring, or in keep. */
void	logs_take(struct tail *, const char *);
/* The ring shown; from then on lines are shown as they come. */
void	logs_flush(struct tail *);
/* A copy of line into l. */
void	logs_keep(struct logs_lines *, const char *);
/* The rotated files of dir then "current": EX_OK or EX_NOINPUT. */
int	logs_read_dir(struct tail *, const char *, FILE **);
/* The output of a service's containers on node n, from its engine. */
int	logs_node(struct hk *, const struct store_service *,
	    const struct config_node *, const char *, struct tail *, int);

#endif
