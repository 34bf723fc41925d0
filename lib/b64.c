/*
 * b64.c - base64, strict: what b64_encode() writes, and nothing else, is
 * decoded (no line breaks, no missing padding, no unused bits set).
 */
#include <stdint.h>

#include "b64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
b64_encode(const unsigned char *src, size_t n, char *dst)
{
	char *p = dst;
	uint32_t v;
	size_t i;

	for (i = 0; i + 3 <= n; i += 3) {
		v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 |
		    src[i + 2];
		*p++ = alphabet[v >> 18];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = alphabet[(v >> 6) & 63];
		*p++ = alphabet[v & 63];
	}
	if (i < n) {
		v = (uint32_t)src[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)src[i + 1] << 8;
		*p++ = alphabet[v >> 18];
		*p++ = alphabet[(v >> 12) & 63];
		*p++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		*p++ = '=';
	}
	return (size_t)(p - dst);
}

/* The value of each byte as a base64 digit; BAD for one outside. */
#define BAD	0xff
#define X	BAD
static const unsigned char digit[256] = {
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, 62, X, X, X, 63,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, X, X, X, X, X, X,
	X, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, X, X, X, X, X,
	X, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
};
#undef X

/*
 * A group of four digits into three bytes, the last group aside: one
 * table lookup a byte and one test a group (hk-events decodes every
 * request record of the gateway through this; a branch a byte was a
 * sixth of its cost).
 */
long
b64_decode(const char *src, size_t n, unsigned char *dst, size_t cap)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i, out = 0, pad = 0;
	uint32_t v;
	unsigned d[4], k;

	if (n % 4 != 0)
		return -1;
	if (n == 0)
		return 0;
	if (s[n - 1] == '=')
		pad = s[n - 2] == '=' ? 2 : 1;
	if (n / 4 * 3 - pad > cap)
		return -1;
	for (i = 0; i + 4 < n; i += 4, out += 3) {
		d[0] = digit[s[i]];
		d[1] = digit[s[i + 1]];
		d[2] = digit[s[i + 2]];
		d[3] = digit[s[i + 3]];
		if (((d[0] | d[1] | d[2] | d[3]) & 0x80) != 0)
			return -1;	/* BAD has it, a digit never */
		v = d[0] << 18 | d[1] << 12 | d[2] << 6 | d[3];
		dst[out] = (unsigned char)(v >> 16);
		dst[out + 1] = (unsigned char)(v >> 8);
		dst[out + 2] = (unsigned char)v;
	}
	/* The last group: '=' only as its padding. */
	for (k = 0; k < 4; k++) {
		d[k] = digit[s[i + k]];
		if (k >= 4 - pad)
			d[k] = 0;
		else if (d[k] == BAD)
			return -1;
	}
	v = d[0] << 18 | d[1] << 12 | d[2] << 6 | d[3];
	dst[out++] = (unsigned char)(v >> 16);
	if (pad < 2)
		dst[out++] = (unsigned char)(v >> 8);
	if (pad < 1)
		dst[out++] = (unsigned char)v;
	/* the bits the padding leaves out must be zero */
	if ((pad == 2 && (v & 0xffff) != 0) || (pad == 1 && (v & 0xff) != 0))
		return -1;
	return (long)out;
}
