/*
 * endpoint.h - an instance's endpoint, as hk-scale announces it and the
 * store keeps it ("127.0.0.1:8080", "[::1]:8080", or "unix:/PATH" for an
 * instance only the gateway may reach, hk.toml(5) listen), made a socket
 * address for the gateway, the readiness probe and the idle check alike.
 */
#ifndef HK_ENDPOINT_H
#define HK_ENDPOINT_H

#include <sys/socket.h>

#define ENDPOINT_UNIX	"unix:"

int		 endpoint_parse(const char *, struct sockaddr_storage *,
		    socklen_t *);
const char	*endpoint_host(const char *);

#endif
