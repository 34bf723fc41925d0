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
 *	byte		2, the version
 *	varint		n, the number of records
 *	n records	at (signed, the difference from the previous
 *			record's at; the first from 0), then the strings
 *			app, service, method, host, path, outcome, client
 *			(the client's address), each a
 *			varint L then L - 1 bytes, L = 0 meaning the same
 *			string as the previous record's (the first
 *			record's previous strings are empty), then the
 *			signed status, duration_us, wait_us, wake_id,
 *			bytes_in, bytes_out
 *
 * Version 1, before the client was recorded, has no client string; its
 * values are still read, with an empty client.  Nothing may follow the
 * last record.  The decoder checks every length
 * against the limits of struct store_request and refuses a NUL byte in a
 * string, so a damaged value is an error, never a wrong record.
 */
#ifndef HK_REQBATCH_H
#define HK_REQBATCH_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define REQBATCH_VERSION	2
#define REQBATCH_VERSION_MIN	1	/* still read */

/*
 * How the gateway sends a value to hk-events: this, the value in base64
 * (lib/b64.h), then REQBATCH_MSG_TAIL.  One spelling for both sides: the
 * daemon reads exactly this form without jansson.
 */
#define REQBATCH_MSG_HEAD	"{\"op\":\"requests\",\"packed\":\""
#define REQBATCH_MSG_TAIL	"\"}"

/* The strings and the numbers of a record, in the order of the format. */
enum { RB_APP, RB_SERVICE, RB_METHOD, RB_HOST, RB_PATH, RB_OUTCOME,
    RB_CLIENT, RB_NSTR };
enum { RB_STATUS, RB_DURATION_US, RB_WAIT_US, RB_WAKE_ID, RB_BYTES_IN,
    RB_BYTES_OUT, RB_NNUM };

/* A value, as the store takes it. */
struct reqbatch {
	unsigned char	*buf;
	size_t		 len;
	size_t		 n;		/* records */
	int64_t		 min_at;	/* of the records, ms */
	int64_t		 max_at;
};

/*
 * A record to pack, its strings (pointer, length) not terminated, so that
 * a record can be packed straight from the bytes it was read from.
 */
struct reqbatch_rec {
	int64_t		 at;
	const char	*s[RB_NSTR];
	size_t		 len[RB_NSTR];
	int64_t		 num[RB_NNUM];
};

/*
 * A value being built a record at a time (hk-events packs each record as
 * it reads it, not through a struct store_request).  The header is
 * written when the value is taken, in room kept before the records.
 */
struct reqbatch_pos {
	size_t		 len;		/* bytes used of buf */
	size_t		 n;
	int64_t		 min_at, max_at, prev_at;
	size_t		 prev_off[RB_NSTR];	/* the strings last written */
	size_t		 prev_len[RB_NSTR];
};
struct reqbatch_build {
	unsigned char		*buf;	/* malloc'd, NULL until a record */
	size_t			 cap;
	struct reqbatch_pos	 pos;
};

void	reqbatch_build_init(struct reqbatch_build *);	/* empty */
void	reqbatch_build_clear(struct reqbatch_build *);	/* empty, keeps buf */
void	reqbatch_build_free(struct reqbatch_build *);
/*
 * Appends a record: 0, or -1 with err set and nothing appended (out of
 * memory, a string over its limit in struct store_request, status
 * outside 0..999).  Its strings must hold no NUL byte: the decoder would
 * refuse the whole value.
 */
int	reqbatch_add(struct reqbatch_build *, const struct reqbatch_rec *,
	    char *, size_t);
/*
 * The value of what was appended, in *v (buf points into the builder:
 * valid until it changes).  More records may be appended afterwards.
 */
void	reqbatch_view(struct reqbatch_build *, struct reqbatch *);
/*
 * Marks a place to come back to: appending after it and rewinding to it
 * leaves the value as it was at the mark.
 */
#define reqbatch_mark(b)	((b)->pos)
#define reqbatch_rewind(b, m)	((b)->pos = (m))

/*
 * A record of the store's form as one to pack, its strings pointing into
 * q: -1 with err set if one is not terminated within its field.
 */
int	reqbatch_rec_of(const struct store_request *, struct reqbatch_rec *,
	    char *, size_t);

/*
 * Packs v[0..n) into a value of its own: 0, or -1 with err set (as
 * reqbatch_add(), or a string of v not terminated within its field).
 * Free b->buf.
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

/*
 * The same as views: fn gets each record with its strings pointing into
 * the value (valid while it is) and its index.  err begins "packed
 * records".
 */
typedef int	reqbatch_rec_fn(const struct reqbatch_rec *, uint64_t, void *);
int	reqbatch_each(const unsigned char *, size_t, reqbatch_rec_fn *, void *,
	    char *, size_t);

/*
 * Appends the records of a value whole, when fn takes each as it is (returns
 * 0 for each view) and cap records at most would then wait: its bytes are
 * copied, only the first record is packed again (its previous record
 * changes).  1 when appended; 0 when not (fn refused one, it is of an
 * older version, or cap), with the builder unchanged, so that the caller
 * takes the records one at a time; -1 with err set (as reqbatch_each())
 * when the value is damaged.  A copy is a fifth of the cost of packing
 * each record again, which was most of hk-events' share of the gateway's
 * throughput.
 */
int	reqbatch_append(struct reqbatch_build *, const unsigned char *,
	    size_t, size_t, reqbatch_rec_fn *, void *, char *, size_t);

/* The number of records of a value, or -1 if it has no valid header. */
int64_t	reqbatch_count(const unsigned char *, size_t);

#endif
