/*
 * evsink.h - fire-and-forget records to hk-events (events.sock, datagram).
 *
 * Senders never block and never fail because of hk-events: when its socket
 * is absent, full or slow, the record is dropped and counted.  A record is
 * one JSON object: {"op":"event", ...} or {"op":"requests", ...}.
 */
#ifndef HK_EVSINK_H
#define HK_EVSINK_H

#include <stdint.h>

#include <jansson.h>

struct evsink;

struct evsink	*evsink_open(const char *);	/* runtime_dir */
void		 evsink_close(struct evsink *);
/*
 * Sends {"op":"event","kind":K,"service":S,"at":ms,"detail":D}; detail may
 * be NULL and is consumed (reference stolen).  Also logged at info level
 * by the caller's choice, not here.
 */
void		 evsink_event(struct evsink *, const char *, const char *,
		    json_t *);
/* Sends any record (not consumed); 0 sent, -1 dropped. */
int		 evsink_send(struct evsink *, const json_t *);
/* Sends one datagram already encoded as JSON; 0 sent, -1 dropped. */
int		 evsink_send_raw(struct evsink *, const char *, size_t);
/* Records dropped since the sink was opened. */
uint64_t	 evsink_dropped(const struct evsink *);

#endif
