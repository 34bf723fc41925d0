/*
 * proxyproto.h - the PROXY protocol, version 2 (HAProxy's
 * doc/proxy-protocol.txt), as a gateway behind a trusted proxy reads it:
 * the proxy opens each connection with a binary header that says which
 * client it carries.  And the list of proxies trusted to send one
 * (hakopod.toml(5) trusted_proxies): addresses and CIDR blocks.
 *
 * Pure functions over bytes, no I/O: the gateway reads, this decides.
 */
#ifndef HK_PROXYPROTO_H
#define HK_PROXYPROTO_H

#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

#define PROXYPROTO_SIG_LEN	12
#define PROXYPROTO_FIXED_LEN	16	/* signature, command, family, length */
/*
 * The longest header taken: the addresses (36 bytes for TCP over IPv6,
 * 216 for AF_UNIX) and TLVs a proxy may add (HAProxy's send-proxy-v2
 * adds none unless told to).  A longer one is refused, not read.
 */
#define PROXYPROTO_MAX		1024
#define PROXYPROTO_ERR_LEN	96
#define PROXYPROTO_NETS_MAX	32

/* What a header says. */
struct proxyproto {
	int			 local;	/* LOCAL: the proxy's own connection */
	struct sockaddr_storage	 src;	/* PROXY: the client (AF_INET/6) */
	struct sockaddr_storage	 dst;	/* ... and the address it reached */
};

/*
 * A header at the start of buf[0..len): its length (> 0) with *out
 * filled, 0 when more bytes are needed to tell, -1 with a reason when
 * the bytes are not an acceptable header: not the signature, a version
 * other than 2, a command other than LOCAL or PROXY, a PROXY over
 * anything but TCP over IPv4 or IPv6, an address block too short, or a
 * length over PROXYPROTO_MAX.  A LOCAL header's addresses are ignored.
 */
int	proxyproto_parse(const unsigned char *, size_t, struct proxyproto *,
	    char *, size_t);

/*
 * Whether buf[0..len) could be, or begins, a PROXY header of either
 * version (the v2 signature, or v1's "PROXY "): 1 it is one, 0 it cannot
 * be, -1 too few bytes to tell.  For refusing one from an untrusted peer.
 */
int	proxyproto_sniff(const unsigned char *, size_t);

/* Trusted addresses: IPv4 and IPv6 networks, a bare address a /32 or /128. */
struct proxyproto_net {
	int		 family;	/* AF_INET or AF_INET6 */
	unsigned char	 addr[16];	/* network order, masked */
	int		 bits;
};

struct proxyproto_nets {
	struct proxyproto_net	 net[PROXYPROTO_NETS_MAX];
	size_t			 n;
};

/*
 * Parses a list "a,b/n,..." (spaces around items allowed; "" is an empty
 * list): 0, or -1 with a reason naming the bad item.
 */
int	proxyproto_nets_parse(const char *, struct proxyproto_nets *, char *,
	    size_t);
/* Whether sa (an IPv4-mapped IPv6 address counts as IPv4) is listed. */
int	proxyproto_nets_match(const struct proxyproto_nets *,
	    const struct sockaddr *);
/* sa's address as text (no port) in buf; "" for another family. */
void	proxyproto_ntop(const struct sockaddr *, char *, size_t);

#endif
