/*
 * b64.h - base64 (RFC 4648, the standard alphabet, padded), for binary
 * values inside JSON messages: the gateway's packed request records.
 */
#ifndef HK_B64_H
#define HK_B64_H

#include <stddef.h>

/* Bytes of the encoding of n bytes. */
#define B64_LEN(n)	(((n) + 2) / 3 * 4)

/* Encodes src[0..n) into dst (B64_LEN(n) bytes, not terminated). */
size_t	b64_encode(const unsigned char *, size_t, char *);
/*
 * Decodes src[0..n) into dst (at most cap bytes): its length, or -1 if
 * src is not base64 as b64_encode() writes it (a length that is not a
 * multiple of 4, a byte outside the alphabet, padding other than at the
 * end, or a result longer than cap).
 */
long	b64_decode(const char *, size_t, unsigned char *, size_t);

#endif
