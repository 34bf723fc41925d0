/*
 * endpoint.c - lib/endpoint.c: the endpoints hk-scale announces, IPv4,
 * bracketed IPv6 and unix:/PATH, made socket addresses; and what is not
 * one.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stddef.h>
#include <string.h>

#include "endpoint.h"
#include "tap.h"

static const char *const refused[] = {
	"", ":80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
	"127.0.0.1:80x", "localhost:80", "::1:80", "[::1:80", "[]:80", "[:80",
	"]:80", "[127.0.0.1]:80", "127.0.0.256:80", " 127.0.0.1:80",
	"[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000]:80",
	"unix:", "unix:relative.sock", "UNIX:/x.sock",
	/* 108 bytes of path: no room for its NUL in sun_path */
	"unix:/23456789012345678901234567890123456789012345678901234567890"
	"123456789012345678901234567890123456789012345678",
};

int
main(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
	struct in6_addr lo6 = IN6ADDR_LOOPBACK_INIT;
	socklen_t len = 0;
	size_t i;

	plan(3 + (int)(sizeof(refused) / sizeof(refused[0])));
	ok(endpoint_parse("127.0.0.1:8080", &ss, &len) == 0 &&
	    sin->sin_family == AF_INET && ntohs(sin->sin_port) == 8080 &&
	    sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
	    len == sizeof(*sin), "IPv4 endpoint");
	ok(endpoint_parse("[::1]:65535", &ss, &len) == 0 &&
	    sin6->sin6_family == AF_INET6 && ntohs(sin6->sin6_port) == 65535 &&
	    memcmp(&sin6->sin6_addr, &lo6, sizeof(lo6)) == 0 &&
	    len == sizeof(*sin6), "bracketed IPv6 endpoint");
	ok(endpoint_parse("unix:/run/hakopod/listen/a.sock", &ss, &len) == 0 &&
	    sun->sun_family == AF_UNIX &&
	    strcmp(sun->sun_path, "/run/hakopod/listen/a.sock") == 0 &&
	    len == offsetof(struct sockaddr_un, sun_path) + 27,
	    "unix:/PATH endpoint");
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ok(endpoint_parse(refused[i], &ss, &len) == -1,
		    "refused: \"%s\"", refused[i]);
	return done();
}
