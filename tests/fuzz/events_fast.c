/*
 * events_fast.c - libFuzzer target for hk-events' fast path
 * (cmd/hk-events/fast.c), with the general path as its oracle.
 *
 * fast_requests() reads request batches without jansson, and may decline
 * any datagram it finds not plain; it must never take one differently
 * from the general path, ipc_decode() and record_requests(), which the
 * daemon runs on what it declines.  So, on any bytes, into a batch that
 * already holds a record (strings are packed as changes from the one
 * before), with room for CAP_SMALL and for CAP_BIG more:
 *
 *	declined: nothing is taken (the sink and its batch as they were);
 *	taken: the bytes decode to a requests message, and the general path
 *	    packs the very same bytes, refuses as many records (with the
 *	    same last reason) and drops as many; and what was packed
 *	    unpacks (reqbatch_decode()), every record.
 *
 * The gateway's packed form is held to the same rules: the records the
 * JSON path takes, packed and sent as the gateway sends them, are taken
 * into the same bytes (fast_packed()); and any bytes as the packed value
 * are taken or refused as the general path has them, what is taken
 * unpacking again.
 *
 * Both read past nothing (ASan: the bytes are not terminated).
 *
 *	make build/fuzz/events_fast && build/fuzz/events_fast \
 *	    -dict=tests/fuzz/events_fast.dict tests/fuzz/corpus/events_fast
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "b64.h"
#include "events.h"
#include "ipc.h"

#define CAP_SMALL	2	/* most batches overflow it: drops */
#define CAP_BIG		512	/* more than a datagram can hold */

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	first_record(struct reqbatch_build *);
static int	same_value(struct reqbatch_build *, struct reqbatch_build *);
static int	count(const struct store_request *, void *);
static int	decodes(struct reqbatch_build *);
static void	one(const char *, size_t, json_t *, size_t);
static char	*envelope(const unsigned char *, size_t, size_t *);
static void	as_packed(const char *, size_t);
static void	any_packed(const uint8_t *, size_t);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "events_fast fuzz: %s\n", what);
		abort();
	}
}

/* The batch as hk-events may have it when the datagram comes. */
static void
first_record(struct reqbatch_build *b)
{
	static const char datagram[] = "{\"op\":\"requests\",\"records\":"
	    "[{\"at\":1,\"service\":\"a/b\",\"method\":\"GET\",\"host\":"
	    "\"h\",\"path\":\"/x\",\"status\":200,\"duration_us\":1,"
	    "\"wait_us\":0,\"wake_id\":null,\"bytes_in\":0,\"bytes_out\":0,"
	    "\"outcome\":\"ok\"}]}";
	struct rec_sink k = { b, 1, 0, 0, 0 };
	char err[IPC_ERR_LEN];

	reqbatch_build_init(b);
	check(fast_requests(datagram, sizeof(datagram) - 1, &k, err,
	    sizeof(err)) == 0 && k.n == 1, "the first record packs");
}

static int
same_value(struct reqbatch_build *x, struct reqbatch_build *y)
{
	struct reqbatch vx, vy;

	reqbatch_view(x, &vx);
	reqbatch_view(y, &vy);
	return vx.len == vy.len && vx.n == vy.n && vx.min_at == vy.min_at &&
	    vx.max_at == vy.max_at && memcmp(vx.buf, vy.buf, vx.len) == 0;
}

static int
count(const struct store_request *r, void *arg)
{
	(void)r;
	(*(size_t *)arg)++;
	return 0;
}

/* What was packed unpacks, every record of it: nothing the store refuses. */
static int
decodes(struct reqbatch_build *b)
{
	struct reqbatch v;
	char err[256];
	size_t n = 0;

	reqbatch_view(b, &v);
	return reqbatch_decode(v.buf, v.len, 1, count, &n, err,
	    sizeof(err)) == 0 && n == v.n;
}

/* msg: the bytes as ipc_decode() reads them, or NULL. */
static void
one(const char *buf, size_t len, json_t *msg, size_t room)
{
	struct reqbatch_build fb, sb, before;
	struct rec_sink fk = { &fb, 1 + room, 0, 0, 0 };
	struct rec_sink sk = { &sb, 1 + room, 0, 0, 0 };
	char ferr[IPC_ERR_LEN], serr[IPC_ERR_LEN];
	const char *op;

	ferr[0] = serr[0] = '\0';
	first_record(&fb);
	first_record(&sb);
	first_record(&before);
	if (fast_requests(buf, len, &fk, ferr, sizeof(ferr)) == -1) {
		check(fk.n == 0 && fk.dropped == 0 && fk.bad == 0,
		    "declined, yet something was counted");
		check(same_value(&fb, &before),
		    "declined, yet the batch changed");
		goto out;
	}
	check(fk.n <= room, "no more than the room");
	check(msg != NULL, "taken, but not JSON to ipc_decode()");
	op = ipc_op(msg);
	check(op != NULL && strcmp(op, "requests") == 0,
	    "taken, but not op requests");
	check(record_requests(msg, &sk, serr, sizeof(serr)) == 0,
	    "taken, but the general path refuses the datagram");
	if (sk.bad != fk.bad || sk.n != fk.n || sk.dropped != fk.dropped)
		fprintf(stderr, "fast: %d refused, %zu taken, %zu dropped; "
		    "general: %d refused, %zu taken, %zu dropped (%s)\n",
		    fk.bad, fk.n, fk.dropped, sk.bad, sk.n, sk.dropped, serr);
	check(sk.bad == fk.bad, "as many refused as the general path");
	check(sk.n == fk.n, "as many taken as the general path");
	check(sk.dropped == fk.dropped, "as many dropped as the general path");
	check(same_value(&fb, &sb), "the same packed bytes as the general path");
	check(decodes(&fb), "the packed records unpack");
	if (fk.bad > 0)
		check(strcmp(ferr, serr) == 0, "the same last reason");
out:
	reqbatch_build_free(&fb);
	reqbatch_build_free(&sb);
	reqbatch_build_free(&before);
}

/* {"op":"requests","packed":"<base64 of value>"}, malloc'd, in *len. */
static char *
envelope(const unsigned char *value, size_t vlen, size_t *len)
{
	static const char head[] = REQBATCH_MSG_HEAD;
	char *e;

	e = malloc(sizeof(head) + B64_LEN(vlen) + 2);
	check(e != NULL, "memory");
	memcpy(e, head, sizeof(head) - 1);
	*len = sizeof(head) - 1;
	*len += b64_encode(value, vlen, e + *len);
	memcpy(e + *len, REQBATCH_MSG_TAIL, 2);
	*len += 2;
	return e;
}

/*
 * The records the JSON path takes, packed as the gateway sends them, are
 * all taken by the packed path, into the very same bytes.
 */
static void
as_packed(const char *buf, size_t len)
{
	struct reqbatch_build jb, pb;
	struct rec_sink jk = { &jb, CAP_BIG, 0, 0, 0 };
	struct rec_sink pk = { &pb, CAP_BIG, 0, 0, 0 };
	struct reqbatch v;
	char err[IPC_ERR_LEN], *e;
	size_t elen;

	reqbatch_build_init(&jb);
	reqbatch_build_init(&pb);
	if (fast_requests(buf, len, &jk, err, sizeof(err)) == 0 && jk.n > 0) {
		reqbatch_view(&jb, &v);
		e = envelope(v.buf, v.len, &elen);
		check(fast_packed(e, elen, &pk, err, sizeof(err)) == 0 &&
		    pk.n == jk.n && pk.bad == 0 && pk.dropped == 0,
		    "what the JSON path takes, the packed path takes");
		check(same_value(&jb, &pb), "into the same bytes");
		free(e);
	}
	reqbatch_build_free(&jb);
	reqbatch_build_free(&pb);
}

/*
 * Any bytes as a packed value: the packed path takes it as the general
 * path (jansson) does, and what it takes unpacks; what it refuses leaves
 * the batch as it was.
 */
static void
any_packed(const uint8_t *data, size_t len)
{
	struct reqbatch_build fb, sb, before;
	struct rec_sink fk = { &fb, 1 + CAP_SMALL, 0, 0, 0 };
	struct rec_sink sk = { &sb, 1 + CAP_SMALL, 0, 0, 0 };
	char ferr[IPC_ERR_LEN], serr[IPC_ERR_LEN], *e;
	json_t *msg;
	size_t elen;
	int fr, sr;

	first_record(&fb);
	first_record(&sb);
	first_record(&before);
	e = envelope(data, len, &elen);
	fr = fast_packed(e, elen, &fk, ferr, sizeof(ferr));
	check(fr == 0 || fr == -1, "the envelope is the gateway's");
	msg = ipc_decode(e, elen, serr, sizeof(serr));
	check(msg != NULL, "the envelope is JSON");
	sr = record_requests(msg, &sk, serr, sizeof(serr));
	check(fr == sr, "taken or refused as the general path has it");
	if (fr == -1)
		check(fk.n == 0 && fk.bad == 0 && fk.dropped == 0 &&
		    same_value(&fb, &before), "refused: nothing taken");
	else {
		check(fk.n == sk.n && fk.bad == sk.bad &&
		    fk.dropped == sk.dropped && same_value(&fb, &sb),
		    "the same records as the general path");
		check(decodes(&fb), "the packed records unpack");
	}
	json_decref(msg);
	free(e);
	reqbatch_build_free(&fb);
	reqbatch_build_free(&sb);
	reqbatch_build_free(&before);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char err[IPC_ERR_LEN];
	json_t *msg;

	/* The daemon refuses longer datagrams before either path. */
	if (len > IPC_MSG_MAX)
		return 0;
	msg = ipc_decode((const char *)data, len, err, sizeof(err));
	one((const char *)data, len, msg, CAP_SMALL);
	one((const char *)data, len, msg, CAP_BIG);
	json_decref(msg);
	as_packed((const char *)data, len);
	if (B64_LEN(len) + 40 <= IPC_MSG_MAX)
		any_packed(data, len);
	return 0;
}
