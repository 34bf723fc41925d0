/*
 * endpoint.c - libFuzzer target: endpoint_parse() on any text; what it
 * takes is a socket address of the family and length it says.
 *
 *	make build/fuzz/endpoint && build/fuzz/endpoint -max_total_time=60
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	char text[128];

	if (len >= sizeof(text))
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	if (endpoint_parse(text, &ss, &sl) == 0 &&
	    !((ss.ss_family == AF_INET && sl == sizeof(struct sockaddr_in)) ||
	    (ss.ss_family == AF_INET6 && sl == sizeof(struct sockaddr_in6))))
		abort();
	return 0;
}
