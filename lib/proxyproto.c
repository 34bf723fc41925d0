/*
 * proxyproto.c - the PROXY protocol v2 header, and trusted proxies.
 *
 * The header (HAProxy's doc/proxy-protocol.txt, section 2.2):
 *
 *	12 bytes	\r\n\r\n\0\r\nQUIT\n
 *	1 byte		version (high nibble, 2) and command (0 LOCAL, 1 PROXY)
 *	1 byte		family (1 INET, 2 INET6, ...) and protocol (1 STREAM)
 *	2 bytes		length of what follows, network order
 *	length bytes	addresses (source, destination, source port,
 *			destination port), then TLVs, which we skip
 *
 * Only version 2: it cannot be mistaken for HTTP, and its length is known
 * after 16 bytes, so a header arriving in pieces is simply asked for more.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxyproto.h"

#define ITEM_MAX	64	/* one address or CIDR, as text */

static const unsigned char sig[PROXYPROTO_SIG_LEN] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a,
};

static int	fail(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static void	set_in(struct sockaddr_storage *, const unsigned char *,
		    const unsigned char *);
static void	set_in6(struct sockaddr_storage *, const unsigned char *,
		    const unsigned char *);
static int	net_parse(char *, struct proxyproto_net *);
static int	net_has(const struct proxyproto_net *, int,
		    const unsigned char *);

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void
set_in(struct sockaddr_storage *ss, const unsigned char *a,
    const unsigned char *port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;

	in->sin_family = AF_INET;
	memcpy(&in->sin_addr, a, 4);
	memcpy(&in->sin_port, port, 2);
}

static void
set_in6(struct sockaddr_storage *ss, const unsigned char *a,
    const unsigned char *port)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	memcpy(&in6->sin6_addr, a, 16);
	memcpy(&in6->sin6_port, port, 2);
}

int
proxyproto_parse(const unsigned char *buf, size_t len, struct proxyproto *out,
    char *err, size_t errlen)
{
	const unsigned char *a = buf + PROXYPROTO_FIXED_LEN;
	size_t n = len < PROXYPROTO_SIG_LEN ? len : PROXYPROTO_SIG_LEN;
	size_t body, need;

	if (memcmp(buf, sig, n) != 0)
		return fail(err, errlen, "not a PROXY v2 signature");
	if (len < PROXYPROTO_FIXED_LEN)
		return 0;
	if ((buf[12] >> 4) != 2)
		return fail(err, errlen, "version %d, not 2", buf[12] >> 4);
	if ((buf[12] & 0x0f) > 1)
		return fail(err, errlen, "command %d, not LOCAL or PROXY",
		    buf[12] & 0x0f);
	body = (size_t)buf[14] << 8 | buf[15];
	if (PROXYPROTO_FIXED_LEN + body > PROXYPROTO_MAX)
		return fail(err, errlen, "%zu bytes, over %d",
		    PROXYPROTO_FIXED_LEN + body, PROXYPROTO_MAX);
	if (len < PROXYPROTO_FIXED_LEN + body)
		return 0;
	memset(out, 0, sizeof(*out));
	if ((buf[12] & 0x0f) == 0) {
		out->local = 1;
		return (int)(PROXYPROTO_FIXED_LEN + body);
	}
	switch (buf[13]) {
	case 0x11:	/* TCP over IPv4 */
		if (body < (need = 12))
			break;
		set_in(&out->src, a, a + 8);
		set_in(&out->dst, a + 4, a + 10);
		return (int)(PROXYPROTO_FIXED_LEN + body);
	case 0x21:	/* TCP over IPv6 */
		if (body < (need = 36))
			break;
		set_in6(&out->src, a, a + 32);
		set_in6(&out->dst, a + 16, a + 34);
		return (int)(PROXYPROTO_FIXED_LEN + body);
	default:
		return fail(err, errlen, "family and protocol 0x%02x: not "
		    "TCP over IPv4 or IPv6", buf[13]);
	}
	return fail(err, errlen, "addresses: %zu bytes, %zu needed", body,
	    need);
}

int
proxyproto_sniff(const unsigned char *buf, size_t len)
{
	static const char v1[] = "PROXY ";
	size_t n;

	if (len == 0)
		return -1;
	n = len < sizeof(sig) ? len : sizeof(sig);
	if (memcmp(buf, sig, n) == 0)
		return n == sizeof(sig) ? 1 : -1;
	n = len < sizeof(v1) - 1 ? len : sizeof(v1) - 1;
	if (memcmp(buf, v1, n) == 0)
		return n == sizeof(v1) - 1 ? 1 : -1;
	return 0;
}

/* One item, trimmed, in s (modified): 0, or -1. */
static int
net_parse(char *s, struct proxyproto_net *net)
{
	const char *errstr;
	char *slash;
	int i, max;

	memset(net, 0, sizeof(*net));
	if ((slash = strchr(s, '/')) != NULL)
		*slash++ = '\0';
	if (inet_pton(AF_INET, s, net->addr) == 1) {
		net->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, s, net->addr) == 1) {
		net->family = AF_INET6;
		max = 128;
	} else
		return -1;
	net->bits = max;
	if (slash != NULL) {
		if (*slash < '0' || *slash > '9')
			return -1;
		net->bits = (int)strtonum(slash, 0, max, &errstr);
		if (errstr != NULL)
			return -1;
	}
	for (i = net->bits; i < max; i++)	/* the host part, cleared */
		net->addr[i / 8] &= (unsigned char)~(0x80 >> (i % 8));
	return 0;
}

int
proxyproto_nets_parse(const char *list, struct proxyproto_nets *nets,
    char *err, size_t errlen)
{
	char item[ITEM_MAX];
	const char *p = list, *end;
	size_t len;

	memset(nets, 0, sizeof(*nets));
	while (*p != '\0') {
		while (*p == ' ' || *p == '\t')
			p++;
		if ((end = strchr(p, ',')) == NULL)
			end = p + strlen(p);
		len = (size_t)(end - p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0 || len >= sizeof(item))
			return fail(err, errlen, "\"%.*s\": not an address "
			    "or CIDR block", (int)(len < 64 ? len : 64), p);
		memcpy(item, p, len);
		item[len] = '\0';
		if (nets->n == PROXYPROTO_NETS_MAX)
			return fail(err, errlen, "more than %d addresses",
			    PROXYPROTO_NETS_MAX);
		if (net_parse(item, &nets->net[nets->n]) == -1)
			return fail(err, errlen, "\"%.*s\": not an address "
			    "or CIDR block", (int)len, p);
		nets->n++;
		p = *end == ',' ? end + 1 : end;
		if (*end == ',' && *p == '\0')
			return fail(err, errlen, "an empty item at the end");
	}
	return 0;
}

static int
net_has(const struct proxyproto_net *net, int family, const unsigned char *a)
{
	int full = net->bits / 8, rest = net->bits % 8;

	if (net->family != family || memcmp(net->addr, a, (size_t)full) != 0)
		return 0;
	return rest == 0 || ((a[full] ^ net->addr[full]) &
	    (0xff << (8 - rest)) & 0xff) == 0;
}

int
proxyproto_nets_match(const struct proxyproto_nets *nets,
    const struct sockaddr *sa)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
	const unsigned char *a;
	size_t i;
	int family = sa->sa_family;

	if (family == AF_INET)
		a = (const unsigned char *)
		    &((const struct sockaddr_in *)sa)->sin_addr;
	else if (family == AF_INET6) {
		a = in6->sin6_addr.s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			family = AF_INET;
			a += 12;
		}
	} else
		return 0;
	for (i = 0; i < nets->n; i++)
		if (net_has(&nets->net[i], family, a))
			return 1;
	return 0;
}

void
proxyproto_ntop(const struct sockaddr *sa, char *buf, size_t len)
{
	buf[0] = '\0';
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    buf, (socklen_t)len);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)sa)->sin6_addr, buf,
		    (socklen_t)len);
}
