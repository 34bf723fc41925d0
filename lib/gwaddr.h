/*
 * gwaddr.h - the gateway's address, and the serverless services deployed
 * behind it (hk-activate(8), MOVING THE GATEWAY; hakopod.toml(5)).
 *
 * Clients, fronts and hk-jobs reach serverless services at
 * serverless_address, and the gateway listens on serverless_listen (else
 * on that): moving it while such services exist is refused, by
 * hk-activate's reload, -n and start, and by hk apply of serverless
 * services, unless the operator moves it on purpose (hk-activate -m).
 *
 * The store records the address the serverless services were deployed
 * behind (one setting for the installation: hk apply writes it with the
 * first of them, the gateway at its start while there are none) and, per
 * host, the address that host's gateway listened on (a setting named
 * after the host: each host of a shared store may have its own, and the
 * gateway's lease moves between them).
 */
#ifndef HK_GWADDR_H
#define HK_GWADDR_H

#include <stddef.h>

#include "config.h"
#include "store.h"

#define GWADDR_NAMES_MAX	10	/* services named, then "and N more" */

struct gwaddr {
	char	address[CONFIG_ADDR_MAX + 1];	/* serverless_address */
	char	listen[CONFIG_ADDR_MAX + 1];	/* the effective listen one */
};

/* A move, and what it would take away. */
struct gwaddr_move {
	/* "serverless_address: \"A\" becomes \"B\"" (and/or listen) */
	char	what[2 * (2 * CONFIG_ADDR_MAX + 64)];
	/* "app/name, app/name and N more": the serverless services */
	char	services[GWADDR_NAMES_MAX * (2 * STORE_NAME_MAX + 3) + 32];
	long	nservices;
};

void	gwaddr_of(const struct server_config *, struct gwaddr *);
/*
 * The record, in rec: a part not recorded is here's (nothing to compare
 * it with).  0 read, 1 nothing recorded, -1 store error.
 */
int	gwaddr_recorded(struct store *, const struct gwaddr *,
	    struct gwaddr *);
/* Whether from -> to moves the gateway; what it moves in m->what. */
int	gwaddr_moves(const struct gwaddr *, const struct gwaddr *,
	    struct gwaddr_move *);
/*
 * A reload, or -n (read only): 1 and m filled if from -> to moves the
 * gateway while serverless services exist; 0 if not; -1 store error.
 */
int	gwaddr_check(struct store *, const struct gwaddr *,
	    const struct gwaddr *, struct gwaddr_move *);
/*
 * The gateway starts on here: 0 recorded (nothing moved under services);
 * 1 refused, m says what (move = 0); 2 moved anyway under the services m
 * names (move = 1, hk-activate -m); -1 store error.  In a transaction.
 * A listen address "" (a listener inherited from the supervisor, whose
 * address is not the configuration's) is neither compared nor recorded.
 */
int	gwaddr_claim(struct store *, const struct gwaddr *, int,
	    struct gwaddr_move *);
/*
 * hk apply deploys serverless services behind address, in its
 * transaction: 0 (recorded if it was not, or if no serverless service
 * was behind the old one); 1 refused, m says what; -1 store error.
 */
int	gwaddr_deploy(struct store *, const char *, int, struct gwaddr_move *);

#endif
