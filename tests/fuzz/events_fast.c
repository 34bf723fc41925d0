/*
 * events_fast.c - libFuzzer target for hk-events' fast path
 * (cmd/hk-events/fast.c), with the general path as its oracle.
 *
 * fast_requests() reads request batches without jansson, and may decline
 * any datagram it finds not plain; it must never take one differently
 * from the general path, ipc_decode() and record_requests(), which the
 * daemon runs on what it declines.  So, on any bytes and for a room of
 * CAP_SMALL and of CAP_BIG records:
 *
 *	declined: nothing is taken (*nout and *dropped untouched);
 *	taken: the bytes decode to a requests message, and the general path
 *	    takes the same records, field for field and in order, refuses
 *	    as many (with the same last reason) and drops as many.
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

#include "../request_same.h"
#include "events.h"
#include "ipc.h"

#define CAP_SMALL	2	/* most batches overflow it: drops */
#define CAP_BIG		512	/* more than a datagram can hold */
#define UNTOUCHED	((size_t)-7)

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	one(const char *, size_t, json_t *, size_t);

static struct store_request fast[CAP_BIG], slow[CAP_BIG];

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "events_fast fuzz: %s\n", what);
		abort();
	}
}


/* msg: the bytes as ipc_decode() reads them, or NULL. */
static void
one(const char *buf, size_t len, json_t *msg, size_t cap)
{
	char ferr[IPC_ERR_LEN], serr[IPC_ERR_LEN];
	size_t fn = UNTOUCHED, fd = UNTOUCHED, sn = 0, sd = 0, i;
	const char *op;
	int fr, sr;

	ferr[0] = serr[0] = '\0';
	fr = fast_requests(buf, len, fast, cap, &fn, &fd, ferr, sizeof(ferr));
	if (fr == -1) {
		check(fn == UNTOUCHED && fd == UNTOUCHED,
		    "declined, yet something was taken");
		return;
	}
	check(fr >= 0, "a count of refusals or -1");
	check(fn <= cap, "no more than the room");
	check(msg != NULL, "taken, but not JSON to ipc_decode()");
	op = ipc_op(msg);
	check(op != NULL && strcmp(op, "requests") == 0,
	    "taken, but not op requests");
	sr = record_requests(msg, slow, cap, &sn, &sd, serr, sizeof(serr));
	if (sr != fr || sn != fn || sd != fd)
		fprintf(stderr, "fast: %d refused, %zu taken, %zu dropped; "
		    "general: %d refused, %zu taken, %zu dropped (%s)\n", fr,
		    fn, fd, sr, sn, sd, serr);
	check(sr == fr, "as many refused as the general path");
	check(sn == fn, "as many taken as the general path");
	check(sd == fd, "as many dropped as the general path");
	for (i = 0; i < fn; i++)
		check(request_same(&fast[i], &slow[i], 0),
		    "each record as the general path has it");
	if (fr > 0)
		check(strcmp(ferr, serr) == 0, "the same last reason");
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
	return 0;
}
