/*
 * retry.h - a reload made again until it succeeds: after 1 s, then twice
 * as long each time it fails, up to 10 s.  For what a daemon reads from
 * its store when told to (routes, policies, services, jobs): a store away
 * (a PostgreSQL server restarting) must not leave it with what it read
 * before until some later reload.  What is in use goes on meanwhile.
 */
#ifndef HK_RETRY_H
#define HK_RETRY_H

#include <stdint.h>

#include "loop.h"

struct retry {
	struct loop		*loop;
	struct loop_timer	 timer;
	int64_t			 backoff;	/* ms */
	int			 (*fn)(void *);	/* 0 done, -1 again */
	void			*arg;
	const char		*what;		/* "routes", for the log */
};

void	retry_init(struct retry *, struct loop *, int (*)(void *), void *,
	    const char *);
/* fn failed: it is made again later (once armed, armed it stays). */
void	retry_later(struct retry *);
void	retry_cancel(struct retry *);

#endif
