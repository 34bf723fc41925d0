/*
 * vet_collect.c - libFuzzer target for vet_collect() (lib/vet.c) on any
 * bytes taken as a source archive (srctree.h).
 *
 * Its promises: NULL with *over clear only for bytes the archive decoder
 * refuses ("broken archive"); otherwise a text of at most max_bytes,
 * free of NUL and UTF-8 throughout, in which each of the *nfiles files
 * starts with a "=== " header; or, past max_bytes, NULL with *over set
 * and the size in the reason, which the same bytes with no bound give.
 *
 *	make build/fuzz/vet_collect && build/fuzz/vet_collect \
 *	    -max_total_time=60 CORPUS tests/fuzz/corpus/vet_collect
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srctree.h"
#include "vet.h"

#define MAX_BYTES	256

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static int	decodes(const uint8_t *, size_t);
static size_t	headers(const char *);
static int	utf8(const char *);
static void	bound(const uint8_t *, size_t, char *const *, size_t);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "vet_collect fuzz: invariant broken: %s\n",
		    what);
		abort();
	}
}

/* Whether the decoder reads the bytes to their end. */
static int
decodes(const uint8_t *p, size_t len)
{
	struct srctree_iter it;
	struct srctree_rec r;
	int rc;

	if (srctree_iter_init(&it, p, len) == -1)
		return 0;
	while ((rc = srctree_next(&it, &r)) == 1)
		;
	return rc == 0;
}

/* Lines starting with "=== ": at least one per file. */
static size_t
headers(const char *s)
{
	size_t n = strncmp(s, "=== ", 4) == 0;

	while ((s = strstr(s, "\n=== ")) != NULL) {
		n++;
		s++;
	}
	return n;
}

/* Strict UTF-8 (RFC 3629) up to the NUL. */
static int
utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c;
	size_t k, j;

	for (; *p != '\0'; p += k) {
		c = *p;
		if (c < 0x80)
			k = 1;
		else if (c >= 0xc2 && c <= 0xdf)
			k = 2, c &= 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			k = 3, c &= 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 4, c &= 0x07;
		else
			return 0;
		for (j = 1; j < k; j++) {
			if ((p[j] & 0xc0) != 0x80)
				return 0;
			c = c << 6 | (p[j] & 0x3f);
		}
		if ((k == 3 && c < 0x800) || (k == 4 && (c < 0x10000 ||
		    c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
			return 0;
	}
	return 1;
}

/*
 * The text's length is exactly the bound that lets it through: so it
 * holds no NUL, and the headers count.
 */
static void
bound(const uint8_t *data, size_t len, char *const *exts, size_t tlen)
{
	char why[VET_CAUSE_LEN], *t;
	size_t n;
	int over;

	t = vet_collect(data, len, exts, tlen, &n, &over, why, sizeof(why));
	check(t != NULL && !over, "the text's length is enough");
	free(t);
	if (tlen == 0)
		return;
	t = vet_collect(data, len, exts, tlen - 1, &n, &over, why,
	    sizeof(why));
	check(t == NULL && over, "one byte less is over");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static char *const exts[] = { ".py", ".js", "", NULL };
	char why[VET_CAUSE_LEN], want[VET_CAUSE_LEN], *text, *all;
	size_t n, nall;
	int over, overall;

	text = vet_collect(data, len, exts, MAX_BYTES, &n, &over, why,
	    sizeof(why));
	all = vet_collect(data, len, exts, SIZE_MAX, &nall, &overall, why,
	    sizeof(why));
	check(overall == 0, "no bound, never over");
	if (!decodes(data, len)) {
		check(text == NULL && all == NULL && !over &&
		    strcmp(why, "broken archive") == 0, "a broken archive");
		return 0;
	}
	check(all != NULL, "a decoded archive is collected");
	check(headers(all) >= nall, "a header per file");
	check(utf8(all), "UTF-8 throughout");
	bound(data, len, exts, strlen(all));
	if (text == NULL) {
		check(over && strlen(all) > MAX_BYTES, "over only past the "
		    "bound");
		snprintf(want, sizeof(want), "sources over max_bytes: %zu "
		    "bytes", strlen(all));
		(void)vet_collect(data, len, exts, MAX_BYTES, &n, &over, why,
		    sizeof(why));
		check(strcmp(why, want) == 0, "over: the size in the reason");
	} else {
		check(!over && strcmp(text, all) == 0 && n == nall,
		    "within the bound, the same text");
		check(strlen(text) <= MAX_BYTES, "the bound");
		free(text);
	}
	free(all);
	return 0;
}
