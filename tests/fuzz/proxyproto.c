/*
 * proxyproto.c - libFuzzer target for lib/proxyproto.c.
 *
 * Any bytes as a header: proxyproto_parse() must not crash or read past
 * them; a header it takes is 16..PROXYPROTO_MAX bytes, no longer than the
 * input, carries TCP over IPv4 or IPv6 unless it is LOCAL, and every
 * prefix of it asks for more bytes (a header in pieces is read whole, and
 * never taken from a part).  A refusal has a reason; the sniff agrees
 * that a header taken is one.  The same bytes as a trusted_proxies list:
 * parsed or refused with a reason, the networks within their bounds, and
 * matching an address does not crash.
 *
 *	make build/fuzz/proxyproto && build/fuzz/proxyproto \
 *	    -max_total_time=60 DIR
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxyproto.h"

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	header(const uint8_t *, size_t);
static void	list(const uint8_t *, size_t);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "proxyproto: %s\n", what);
		abort();
	}
}

static void
header(const uint8_t *data, size_t size)
{
	char err[PROXYPROTO_ERR_LEN], a[64];
	struct proxyproto pp;
	uint8_t *copy;
	size_t k;
	int r;

	/* an exact copy, so that ASan sees a read past the end */
	if ((copy = malloc(size + 1)) == NULL)
		return;
	memcpy(copy, data, size);
	err[0] = '\0';
	r = proxyproto_parse(copy, size, &pp, err, sizeof(err));
	check(r >= -1, "a result below -1");
	if (r == -1)
		check(err[0] != '\0', "a refusal without a reason");
	if (r > 0) {
		check(r >= PROXYPROTO_FIXED_LEN && r <= PROXYPROTO_MAX &&
		    (size_t)r <= size, "a length out of bounds");
		check(pp.local || pp.src.ss_family == AF_INET ||
		    pp.src.ss_family == AF_INET6, "PROXY without an address");
		check(pp.local || pp.src.ss_family == pp.dst.ss_family,
		    "source and destination of two families");
		proxyproto_ntop((struct sockaddr *)&pp.src, a, sizeof(a));
		check(pp.local || a[0] != '\0', "an address without text");
		check(proxyproto_sniff(copy, size) == 1,
		    "a header taken that the sniff does not see");
		for (k = 0; k < (size_t)r; k += 1 + k / 4)
			check(proxyproto_parse(copy, k, &pp, err,
			    sizeof(err)) == 0, "a prefix taken or refused");
	}
	free(copy);
}

static void
list(const uint8_t *data, size_t size)
{
	struct proxyproto_nets nets;
	struct sockaddr_in6 in6;
	struct sockaddr_in in;
	char err[PROXYPROTO_ERR_LEN], *s;
	size_t i;

	if ((s = malloc(size + 1)) == NULL)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	err[0] = '\0';
	if (proxyproto_nets_parse(s, &nets, err, sizeof(err)) == -1)
		check(err[0] != '\0', "a list refused without a reason");
	else {
		check(nets.n <= PROXYPROTO_NETS_MAX, "too many networks");
		for (i = 0; i < nets.n; i++)
			check((nets.net[i].family == AF_INET &&
			    nets.net[i].bits >= 0 && nets.net[i].bits <= 32) ||
			    (nets.net[i].family == AF_INET6 &&
			    nets.net[i].bits >= 0 && nets.net[i].bits <= 128),
			    "a network out of bounds");
		memset(&in, 0, sizeof(in));
		in.sin_family = AF_INET;
		memcpy(&in.sin_addr, data, size < 4 ? size : 4);
		(void)proxyproto_nets_match(&nets, (struct sockaddr *)&in);
		memset(&in6, 0, sizeof(in6));
		in6.sin6_family = AF_INET6;
		memcpy(&in6.sin6_addr, data, size < 16 ? size : 16);
		(void)proxyproto_nets_match(&nets, (struct sockaddr *)&in6);
	}
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	header(data, size);
	list(data, size);
	return 0;
}
