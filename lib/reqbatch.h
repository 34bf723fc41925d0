/*
 * reqbatch.h - the stored form of a batch of request records: one value
 * of the requests table holds the records hk-events wrote in one
 * transaction, packed.  A row per request cost hk-events 1.5 us of CPU a
 * record on SQLite, most of its share of the gateway's throughput; a
 * packed batch costs about 0.1 us and a quarter of the bytes.
 *
 * The format (version 1), all integers LEB128 varints, signed ones
 * zigzagged:
 *
 *	byte		1, the version
 *	varint		n, the number of records
 *	n records	at (signed, the difference from the previous
 *			record's at; the first from 0), then the strings
 *			app, service, method, host, path, outcome, each a
 *			varint L then L - 1 bytes, L = 0 meaning the same
 *			string as the previous record's (the first
 *			record's previous strings are empty), then the
 *			signed status, duration_us, wait_us, wake_id,
 *			bytes_in, bytes_out
 *
 * Nothing may follow the last record.  The decoder checks every length
 * against the limits of struct store_request and refuses a NUL byte in a
 * string, so a damaged value is an error, never a wrong record.
 */
#ifndef HK_REQBATCH_H
#define HK_REQBATCH_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define REQBATCH_VERSION	1

struct reqbatch {
	unsigned char	*buf;		/* malloc'd */
	size_t		 len;
	int64_t		 min_at;	/* of the records, ms */
	int64_t		 max_at;
};

/*
 * Packs v[0..n): 0, or -1 with err set (out of memory, or a string of v
 * not terminated within its field).  Free b->buf.
 */
int	reqbatch_encode(const struct store_request *, size_t,
	    struct reqbatch *, char *, size_t);

/*
 * Unpacks a value: calls fn for each record in order, with id first_id
 * plus its index, until fn returns nonzero (then returns that).  0 once
 * all are done, -1 with err set if the value is damaged (records before
 * the damage have been passed to fn).
 */
typedef int	reqbatch_fn(const struct store_request *, void *);
int	reqbatch_decode(const unsigned char *, size_t, int64_t,
	    reqbatch_fn *, void *, char *, size_t);

/* The number of records of a value, or -1 if it has no valid header. */
int64_t	reqbatch_count(const unsigned char *, size_t);

#endif
