/*
 * leader.h - a daemon that acts for the whole installation writes only
 * while its host holds the lease hk-lease(1) runs it under: the lease's
 * name and epoch come in HAKOPOD_LEASE_NAME and HAKOPOD_LEASE_EPOCH, and
 * leader_fence() fences a store handle by them (store_fence()).  A write
 * refused by the fence ends the process (exit 75, EX_TEMPFAIL, after the
 * reason on stderr): another host leads, and whatever this one would do
 * next it could not record.
 */
#ifndef HK_LEADER_H
#define HK_LEADER_H

#include <stddef.h>

struct store;

/*
 * Fences s by the lease of the environment: 0 fenced, or not run under a
 * lease (neither variable set); -1 with err set when the variables are
 * malformed or one is missing.
 */
int	leader_fence(struct store *, char *, size_t);

/*
 * Under a lease, bounds every wait of s (store_bound()) so that a store
 * cut off cannot hold the daemon past the lease's loss: to the TTL
 * (HAKOPOD_LEASE_TTL_MS, which leader_fence() applies), or with quarter
 * set to STORE_LEASE_WAIT(ttl), for a daemon that must act within the
 * grace period once the lease is lost (hk-scale stops its instances).
 */
void	leader_bound(struct store *, int);

#endif
