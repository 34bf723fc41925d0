/*
 * proxyproto.c - lib/proxyproto.c: PROXY v2 headers taken (IPv4, IPv6,
 * LOCAL, TLVs skipped), read in every split, and refused; the sniffing of
 * a header from an untrusted peer; trusted address lists and matching.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "proxyproto.h"
#include "tap.h"

#define SIG	"\r\n\r\n\0\r\nQUIT\n"

/* A header: the signature then the given bytes (hex pairs). */
static size_t
mk(unsigned char *buf, const char *hex)
{
	size_t n = 12;

	memcpy(buf, SIG, 12);
	while (hex[0] != '\0' && hex[1] != '\0') {
		buf[n++] = (unsigned char)strtoul((char[3]){ hex[0], hex[1],
		    '\0' }, NULL, 16);
		hex += 2;
		while (*hex == ' ')
			hex++;
	}
	return n;
}

static const struct {
	const char	*what, *hex;
	int		 len;		/* parse result */
	const char	*src;		/* client address, "" for LOCAL */
	int		 port;
} good[] = {
	{ "PROXY TCP over IPv4", "21 11 000c 7f000003 7f000001 d431 1f92",
	  28, "127.0.0.3", 54321 },
	{ "PROXY TCP over IPv6",
	  "21 21 0024 20010db8000000000000000000000001"
	  " 00000000000000000000000000000001 0050 1f92",
	  52, "2001:db8::1", 80 },
	{ "TLVs after the addresses are skipped",
	  "21 11 0013 0a000001 0a000002 0001 0002 04 0004 00000000",
	  35, "10.0.0.1", 1 },
	{ "LOCAL: the proxy's own connection", "20 00 0000", 16, "", 0 },
	{ "LOCAL with addresses: they are ignored",
	  "20 11 000c 7f000003 7f000001 d431 1f92", 28, "", 0 },
};

static const struct {
	const char	*what, *hex;
} bad[] = {
	{ "version 1 in the binary form", "11 11 000c 7f000003 7f000001 d431 1f92" },
	{ "version 3", "31 11 000c 7f000003 7f000001 d431 1f92" },
	{ "command 2", "22 11 000c 7f000003 7f000001 d431 1f92" },
	{ "UDP over IPv4", "21 12 000c 7f000003 7f000001 d431 1f92" },
	{ "AF_UNIX", "21 31 0000" },
	{ "UNSPEC with PROXY", "21 00 0000" },
	{ "IPv4 addresses too short", "21 11 000b 7f000003 7f000001 d431 1f" },
	{ "IPv6 addresses too short", "21 21 000c 7f000003 7f000001 d431 1f92" },
	{ "longer than PROXYPROTO_MAX", "21 11 03f5" },
};

static void
t_good(void)
{
	unsigned char buf[128];
	char err[PROXYPROTO_ERR_LEN], a[64];
	struct proxyproto pp;
	size_t i, n, k;
	int r, port, splits;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		n = mk(buf, good[i].hex);
		buf[n] = 'G';	/* the request that follows is not taken */
		r = proxyproto_parse(buf, n + 1, &pp, err, sizeof(err));
		proxyproto_ntop((struct sockaddr *)&pp.src, a, sizeof(a));
		port = pp.src.ss_family == AF_INET ?
		    ntohs(((struct sockaddr_in *)&pp.src)->sin_port) :
		    pp.src.ss_family == AF_INET6 ?
		    ntohs(((struct sockaddr_in6 *)&pp.src)->sin6_port) : 0;
		ok(r == good[i].len && strcmp(a, good[i].src) == 0 &&
		    port == good[i].port && pp.local == (a[0] == '\0'),
		    "%s", good[i].what);
		if (r != good[i].len)
			diag("r %d: %s", r, err);
		/* in pieces: every prefix asks for more */
		for (k = 0, splits = 0; k < n; k++)
			splits += proxyproto_parse(buf, k, &pp, err,
			    sizeof(err)) == 0;
		isint(splits, n, "%s: every shorter prefix needs more",
		    good[i].what);
	}
}

static void
t_bad(void)
{
	unsigned char buf[128];
	char err[PROXYPROTO_ERR_LEN];
	struct proxyproto pp;
	size_t i, n;
	int r;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = mk(buf, bad[i].hex);
		err[0] = '\0';
		r = proxyproto_parse(buf, n, &pp, err, sizeof(err));
		ok(r == -1 && err[0] != '\0', "refused: %s (%s)", bad[i].what,
		    err);
	}
	r = proxyproto_parse((const unsigned char *)"GET / HTTP/1.1\r\n", 16,
	    &pp, err, sizeof(err));
	ok(r == -1, "refused: an HTTP request (%s)", err);
	r = proxyproto_parse((const unsigned char *)"PROXY TCP4 1.2.3.4 "
	    "5.6.7.8 1 2\r\n", 31, &pp, err, sizeof(err));
	ok(r == -1, "refused: version 1 text (%s)", err);
	r = proxyproto_parse((const unsigned char *)"\r\n\r\n\0\r\nQUIT", 11,
	    &pp, err, sizeof(err));
	isint(r, 0, "a signature cut short needs more");
}

static void
t_sniff(void)
{
	isint(proxyproto_sniff((const unsigned char *)SIG "!", 13), 1,
	    "sniff: the v2 signature");
	isint(proxyproto_sniff((const unsigned char *)SIG, 5), -1,
	    "sniff: its first bytes: too few to tell");
	isint(proxyproto_sniff((const unsigned char *)"PROXY TCP4 ", 11), 1,
	    "sniff: a v1 header");
	isint(proxyproto_sniff((const unsigned char *)"PRO", 3), -1,
	    "sniff: PRO: too few to tell");
	isint(proxyproto_sniff((const unsigned char *)"POST / ", 7), 0,
	    "sniff: a POST is not one");
	isint(proxyproto_sniff((const unsigned char *)"\r\n\r\nGET", 7), 0,
	    "sniff: line ends then GET is not one");
	isint(proxyproto_sniff((const unsigned char *)"", 0), -1,
	    "sniff: nothing yet");
}

static int
match(const struct proxyproto_nets *nets, const char *addr)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	return proxyproto_nets_match(nets, (struct sockaddr *)&ss);
}

static void
t_nets(void)
{
	static const char *const refused[] = {
		"127.0.0.1/33", "::1/129", "10.0.0.0/", "10.0.0.0/-1",
		"localhost", "1.2.3.4,", ",1.2.3.4", "1.2.3.4,,5.6.7.8",
		"1.2.3", "10.0.0.0/8x",
	};
	struct proxyproto_nets nets;
	char err[PROXYPROTO_ERR_LEN];
	size_t i, n = 0;

	ok(proxyproto_nets_parse("", &nets, err, sizeof(err)) == 0 &&
	    nets.n == 0 && !match(&nets, "127.0.0.1"),
	    "an empty list trusts nobody");
	ok(proxyproto_nets_parse(" 127.0.0.2 , 10.1.0.0/16,2001:db8::/32,"
	    "::1", &nets, err, sizeof(err)) == 0 && nets.n == 4,
	    "a list of addresses and CIDR blocks, IPv4 and IPv6");
	ok(match(&nets, "127.0.0.2") && !match(&nets, "127.0.0.1"),
	    "a bare IPv4 address is itself only");
	ok(match(&nets, "10.1.255.7") && !match(&nets, "10.2.0.1"),
	    "an IPv4 block");
	ok(match(&nets, "2001:db8:ffff::9") && !match(&nets, "2001:db9::1"),
	    "an IPv6 block");
	ok(match(&nets, "::1") && !match(&nets, "::2"), "an IPv6 address");
	ok(match(&nets, "::ffff:127.0.0.2") && !match(&nets,
	    "::ffff:127.0.0.1"), "an IPv4-mapped peer counts as IPv4");
	ok(proxyproto_nets_parse("0.0.0.0/0,10.0.0.1/20", &nets, err,
	    sizeof(err)) == 0 && match(&nets, "192.0.2.1") &&
	    !match(&nets, "::1") && match(&nets, "10.0.15.255"),
	    "/0, and a host part that is cleared");
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (proxyproto_nets_parse(refused[i], &nets, err,
		    sizeof(err)) == -1)
			n++;
		else
			diag("taken: %s", refused[i]);
	isint(n, sizeof(refused) / sizeof(refused[0]),
	    "bad items are refused (\"%s\")", err);
}

int
main(void)
{
	t_good();
	t_bad();
	t_sniff();
	t_nets();
	return done();
}
