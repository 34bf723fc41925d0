/*
 * http_accept.c - libFuzzer target for lib/http_accept.c: the Accept
 * fields that decide whether a parked request gets the waiting page.
 *
 * Every byte string is an Accept value: http_accept_scan() must not crash
 * or read past it, must return 0 or -1, must leave both weights within
 * -1..1000, and must be a maximum: scanning the same value again changes
 * nothing, and nor does scanning it as the two halves of a split at a
 * comma (one field, or two fields of the same list).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "http_accept fuzz: invariant broken: %s\n",
		    what);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *v = (const char *)data, *comma;
	char *copy;
	int h = -1, o = -1, h2, o2, r, r1, r2;

	/* a private copy, exactly size bytes: ASan sees any overread */
	if ((copy = malloc(size > 0 ? size : 1)) == NULL)
		return 0;
	memcpy(copy, v, size);
	r = http_accept_scan(copy, size, &h, &o);
	check(r == 0 || r == -1, "0 or -1");
	check(h >= -1 && h <= 1000 && o >= -1 && o <= 1000, "weights bounded");
	if (r == 0) {
		h2 = h;
		o2 = o;
		check(http_accept_scan(copy, size, &h2, &o2) == 0 &&
		    h2 == h && o2 == o, "a second scan changes nothing");
		comma = memchr(copy, ',', size);
		if (comma != NULL && memchr(copy, '"', size) == NULL) {
			h2 = o2 = -1;
			r1 = http_accept_scan(copy, (size_t)(comma - copy),
			    &h2, &o2);
			r2 = http_accept_scan(comma + 1, size - (size_t)(comma -
			    copy) - 1, &h2, &o2);
			check(r1 == 0 && r2 == 0 && h2 == h && o2 == o,
			    "two fields are one list");
		}
	}
	free(copy);
	return 0;
}
