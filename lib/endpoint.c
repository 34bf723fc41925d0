/*
 * endpoint.c - "HOST:PORT" to a socket address (endpoint.h).  HOST is a
 * numeric IPv4 address, or an IPv6 one in brackets: endpoints are made
 * by hk-scale from the address it gave the instance, never resolved.
 * "unix:/PATH" is a Unix stream socket hk-scale bound for the instance.
 */
#include <sys/types.h>

#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"

#define HOST_MAX	64	/* the longest IPv6 text, with room */

/*
 * The Host of hk's own requests to ep (a readiness or an idle check):
 * ep itself, or "localhost" for a socket, which has no host name.
 */
const char *
endpoint_host(const char *ep)
{
	if (strncmp(ep, ENDPOINT_UNIX, strlen(ENDPOINT_UNIX)) == 0)
		return "localhost";
	return ep;
}

/* "unix:/PATH": an absolute path that fits sun_path, NUL included. */
static int
endpoint_unix(const char *path, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)ss;
	size_t pl = strlen(path);

	if (path[0] != '/' || pl >= sizeof(sun->sun_path))
		return -1;
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, pl + 1);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + pl + 1);
	return 0;
}

/* 0, or -1 when ep is not one (nothing else is said: the caller knows). */
int
endpoint_parse(const char *ep, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[HOST_MAX];
	const char *colon, *errstr;
	long long port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (strncmp(ep, ENDPOINT_UNIX, strlen(ENDPOINT_UNIX)) == 0)
		return endpoint_unix(ep + strlen(ENDPOINT_UNIX), ss, len);
	if ((colon = strrchr(ep, ':')) == NULL ||
	    (hl = (size_t)(colon - ep)) == 0 || hl >= sizeof(host))
		return -1;
	port = strtonum(colon + 1, 1, 65535, &errstr);
	if (errstr != NULL)
		return -1;
	if (hl >= 2 && ep[0] == '[' && ep[hl - 1] == ']') {
		memcpy(host, ep + 1, hl - 2);
		host[hl - 2] = '\0';
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -1;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*sin6);
		return 0;
	}
	memcpy(host, ep, hl);
	host[hl] = '\0';
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -1;
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	*len = sizeof(*sin);
	return 0;
}
