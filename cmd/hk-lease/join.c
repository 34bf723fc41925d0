/*
 * join.c - hk-lease -j: prog runs under a lease that another hk-lease of
 * this host holds (the gateway's, so that the daemons of the control plane
 * run on the host that leads, and only there).  Nothing is acquired or
 * released: the holder of this host is the one whose record
 * (runtime_dir/lease-NAME.pid, local.c) names a live process of this boot
 * and the epoch the store's row has.  A joiner waits until there is one,
 * runs prog with that epoch, and checks it every third of the TTL as a
 * holder renews: once the record's process is gone or the row has a new
 * epoch, the lease is lost for prog too (renew_lose()), and prog's writes
 * are refused meanwhile by the fence of that epoch (leader.h).
 */
#include <sys/types.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lease.h"
#include "log.h"
#include "proc.h"

#define JOIN_POLL_MS	500

/*
 * 0 this host holds the lease (l->row is its row), 1 it does not (why
 * says who does), JOIN_GONE the epoch prog runs under is still the row's
 * but its holder here is gone (a successor may take it again), -1 the
 * store failed.
 */
static int
join_holder(struct lease *l, char *why, size_t whylen)
{
	struct store_lease row;
	pid_t pid;
	int64_t epoch, start;
	int r;

	if ((r = store_lease_get(l->store, l->row.name, &row)) == -1)
		return -1;
	if (r == 1) {
		(void)snprintf(why, whylen, "no host has taken it yet");
		return 1;
	}
	if (l->row.epoch != 0 && l->row.epoch == row.epoch &&
	    (local_current(l, 1, &epoch, &pid, &start) == 0 ||
	    epoch != row.epoch || !local_alive(pid, start))) {
		(void)snprintf(why, whylen, "this host's holder of epoch %jd "
		    "is gone", (intmax_t)row.epoch);
		return JOIN_GONE;
	}
	if (local_current(l, 1, &epoch, &pid, &start) == 0 ||
	    epoch != row.epoch || !local_alive(pid, start)) {
		(void)snprintf(why, whylen, "held by %s (epoch %jd)",
		    row.holder, (intmax_t)row.epoch);
		return 1;
	}
	if (l->row.epoch != 0 && l->row.epoch != row.epoch) {
		(void)snprintf(why, whylen, "this host took it again, as "
		    "epoch %jd", (intmax_t)row.epoch);
		return 1;
	}
	l->row = row;
	return 0;
}

/* Before prog: until this host holds the lease; 75 if a signal ends it. */
int
join_wait(struct lease *l)
{
	struct timespec ts = { JOIN_POLL_MS / 1000,
	    (JOIN_POLL_MS % 1000) * 1000000L };
	char why[STORE_ERR_LEN + STORE_HOLDER_MAX + 64], last[sizeof(why)];
	int r;

	last[0] = '\0';
	for (;;) {
		why[0] = '\0';
		if ((r = join_holder(l, why, sizeof(why))) == 0)
			break;
		if (r == -1)
			(void)snprintf(why, sizeof(why), "%s",
			    store_error(l->store));
		if (strcmp(why, last) != 0)
			log_info("lease %s: waiting for this host to hold "
			    "it: %s", l->row.name, why);
		(void)memcpy(last, why, sizeof(last));
		(void)nanosleep(&ts, NULL);
	}
	log_info("lease %s: joined this host's holder (epoch %jd)",
	    l->row.name, (intmax_t)l->row.epoch);
	return 0;
}

/*
 * The renewal of a joiner: 0 still ours, 1 lost, -1 the store failed or
 * the holder is gone and its successor is awaited.
 *
 * A holder of this host that dies (a crash, a kill) is restarted by its
 * supervisor and takes the lease again at once, at a newer epoch.  If
 * prog were told to stop the moment the holder is seen gone, hk-scale
 * would stop every instance, as a host that loses the control plane
 * does.  So the joiner waits a third of the TTL for the successor; once
 * it holds a newer epoch, prog's stop finds its epoch replaced (the
 * fence, leader.h) and hk-scale ends leaving its instances to the
 * successor's.  The wait keeps prog's end within the row's expiry: the
 * holder renewed at most a third of the TTL before it died, and was seen
 * gone at most a third of the TTL later.
 */
int
join_check(struct lease *l, char *why, size_t whylen)
{
	int64_t now = renew_clock();
	int r;

	if ((r = join_holder(l, why, whylen)) == -1)
		(void)snprintf(why, whylen, "%s", store_error(l->store));
	if (r != JOIN_GONE) {
		l->gone_at = 0;
		return r;
	}
	if (l->gone_at == 0)
		l->gone_at = now;
	if (now - l->gone_at >= l->ttl_ms / 3)
		return 1;
	(void)strlcat(why, ": waiting for its successor", whylen);
	return -1;
}
