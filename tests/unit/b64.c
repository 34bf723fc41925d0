/*
 * b64.c - lib/b64.c: the vectors of RFC 4648, every length of a round
 * trip over all byte values, and what the strict decoder refuses.
 */
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "tap.h"

static const struct {
	const char	*plain, *coded;
} vectors[] = {
	{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

static const struct {
	const char	*coded, *why;
} refused[] = {
	{ "Zg=", "a length not a multiple of 4" },
	{ "Zg", "no padding" },
	{ "Zg=a", "padding before the end" },
	{ "Z===", "three padding bytes" },
	{ "====", "padding only" },
	{ "Zh==", "bits set that the padding leaves out (one byte)" },
	{ "Zm9=", "bits set that the padding leaves out (two bytes)" },
	{ "Zm9v\n", "a line break" },
	{ "Zm9 v", "a space" },
	{ "Zm-v", "the URL alphabet" },
	{ "Zg==Zm8=", "padding in the middle" },
	{ "Zm9\xc3", "a byte outside ASCII, in the last group" },
	{ "\xc3m9vZm9v", "a byte outside ASCII, in a group before it" },
	{ "Zm9vZm9v=m9v", "padding in a group before the last" },
};

static void
t_vectors(void)
{
	unsigned char dec[16];
	char enc[16];
	size_t i, n, good = 0;
	long m;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		n = b64_encode((const unsigned char *)vectors[i].plain,
		    strlen(vectors[i].plain), enc);
		m = b64_decode(vectors[i].coded, strlen(vectors[i].coded),
		    dec, sizeof(dec));
		if (n == strlen(vectors[i].coded) &&
		    memcmp(enc, vectors[i].coded, n) == 0 &&
		    m == (long)strlen(vectors[i].plain) &&
		    memcmp(dec, vectors[i].plain, (size_t)m) == 0)
			good++;
		else
			diag("vector \"%s\"", vectors[i].plain);
	}
	isint(good, sizeof(vectors) / sizeof(vectors[0]),
	    "the vectors of RFC 4648, both ways");
}

/* Every length up to 300 of bytes 0..255 comes back, B64_LEN long. */
static void
t_round_trip(void)
{
	unsigned char in[300], out[300];
	char enc[B64_LEN(300)];
	size_t len, i, good = 0;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 3);
	for (len = 0; len <= sizeof(in); len++)
		if (b64_encode(in, len, enc) == B64_LEN(len) &&
		    b64_decode(enc, B64_LEN(len), out, len) == (long)len &&
		    memcmp(in, out, len) == 0)
			good++;
	isint(good, sizeof(in) + 1, "lengths 0 to 300 round trip");
	ok(b64_decode(enc, B64_LEN(sizeof(in)), out, sizeof(in) - 1) == -1,
	    "a result longer than the room is refused");
}

static void
t_refused(void)
{
	unsigned char dec[16];
	size_t i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		isint(b64_decode(refused[i].coded, strlen(refused[i].coded),
		    dec, sizeof(dec)), -1, "refused: %s", refused[i].why);
}

int
main(void)
{
	plan(3 + (int)(sizeof(refused) / sizeof(refused[0])));
	t_vectors();
	t_round_trip();
	t_refused();
	return done();
}
