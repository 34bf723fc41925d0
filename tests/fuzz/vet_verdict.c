/*
 * vet_verdict.c - libFuzzer target for vet_verdict() (lib/vet.c), the
 * reader of a chat-completions reply, on any bytes.
 *
 * Its promises: a result of the enum; a cause or reason NUL-terminated in
 * the buffer; for VET_UNSAFE, a reason that is non-empty, at most
 * VET_REASON_MAX bytes, UTF-8 throughout and free of control characters
 * (C0, DEL, C1), since it goes to a terminal and a log line; for
 * VET_SAFE, an empty one.  The same bytes read into a small buffer give
 * the same result, with a reason cut there and still UTF-8.
 *
 *	make build/fuzz/vet_verdict && build/fuzz/vet_verdict \
 *	    -max_total_time=60 -dict=tests/fuzz/vet_verdict.dict \
 *	    CORPUS tests/fuzz/corpus/vet_verdict
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vet.h"

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	check_reason(const char *, size_t);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "vet_verdict fuzz: invariant broken: %s\n",
		    what);
		abort();
	}
}

/* Non-empty, at most max bytes, strict UTF-8, no control character. */
static void
check_reason(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i, k;
	uint32_t c;

	check(len > 0 && len <= max, "reason length");
	for (i = 0; i < len; i += k) {
		c = p[i];
		if (c < 0x80)
			k = 1;
		else if (c >= 0xc2 && c <= 0xdf)
			k = 2, c &= 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			k = 3, c &= 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 4, c &= 0x07;
		else
			check(0, "reason: a bad lead byte");
		check(i + k <= len, "reason: a character cut");
		for (size_t j = 1; j < k; j++) {
			check((p[i + j] & 0xc0) == 0x80, "reason: a bad byte");
			c = c << 6 | (p[i + j] & 0x3f);
		}
		check((k != 3 || c >= 0x800) && (k != 4 || (c >= 0x10000 &&
		    c <= 0x10ffff)) && (c < 0xd800 || c > 0xdfff),
		    "reason: overlong, surrogate or past U+10FFFF");
		check(c >= 0x20 && (c < 0x7f || c > 0x9f),
		    "reason: a control character");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char why[VET_CAUSE_LEN], small[8];
	enum vet_result res, again;

	memset(why, 'Z', sizeof(why));
	res = vet_verdict((const char *)data, len, why, sizeof(why));
	check(res == VET_SAFE || res == VET_UNSAFE || res == VET_SKIPPED,
	    "result in range");
	check(memchr(why, '\0', sizeof(why)) != NULL, "why terminated");
	if (res == VET_UNSAFE)
		check_reason(why, VET_REASON_MAX);
	else if (res == VET_SAFE)
		check(why[0] == '\0', "safe: an empty why");
	else
		check(why[0] != '\0', "skipped: a cause");
	again = vet_verdict((const char *)data, len, small, sizeof(small));
	check(again == res, "the same result into a small buffer");
	if (res == VET_UNSAFE)
		check_reason(small, sizeof(small) - 1);
	return 0;
}
