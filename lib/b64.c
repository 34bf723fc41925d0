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

/* The value of a base64 digit, or -1. */
static int
digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long
b64_decode(const char *src, size_t n, unsigned char *dst, size_t cap)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i, out = 0, pad = 0;
	uint32_t v;
	int d[4], k;

	if (n % 4 != 0)
		return -1;
	if (n > 0 && s[n - 1] == '=')
		pad = s[n - 2] == '=' ? 2 : 1;
	if (n / 4 * 3 - pad > cap)
		return -1;
	for (i = 0; i < n; i += 4) {
		for (k = 0; k < 4; k++) {
			d[k] = digit(s[i + k]);
			/* '=' only as the padding of the last group */
			if (d[k] == -1 && !(i + 4 == n && k >= 4 - (int)pad))
				return -1;
		}
		v = (uint32_t)d[0] << 18 | (uint32_t)d[1] << 12;
		if (pad < 2 || i + 4 < n)
			v |= (uint32_t)d[2] << 6;
		if (pad < 1 || i + 4 < n)
			v |= (uint32_t)d[3];
		dst[out++] = (unsigned char)(v >> 16);
		if (i + 4 < n || pad < 2)
			dst[out++] = (unsigned char)(v >> 8);
		if (i + 4 < n || pad < 1)
			dst[out++] = (unsigned char)v;
		/* the bits the padding leaves out must be zero */
		if (i + 4 == n && ((pad == 2 && (v & 0xffff) != 0) ||
		    (pad == 1 && (v & 0xff) != 0)))
			return -1;
	}
	return (long)out;
}
