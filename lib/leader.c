/*
 * leader.c - a daemon's store fenced by the lease it runs under
 * (leader.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "leader.h"
#include "log.h"
#include "store.h"

static void	leader_fenced(void *, const char *) __attribute__((noreturn));

static void
leader_fenced(void *arg, const char *why)
{
	(void)arg;
	fatalx(EX_TEMPFAIL, "%s: stopping", why);
}

int
leader_fence(struct store *s, char *err, size_t errlen)
{
	const char *name = getenv("HAKOPOD_LEASE_NAME");
	const char *epoch = getenv("HAKOPOD_LEASE_EPOCH");
	const char *errstr;
	long long e;

	if (name == NULL && epoch == NULL)
		return 0;
	if (name == NULL || epoch == NULL) {
		(void)snprintf(err, errlen, "HAKOPOD_LEASE_%s is set but not "
		    "HAKOPOD_LEASE_%s: both come from hk-lease",
		    name == NULL ? "EPOCH" : "NAME",
		    name == NULL ? "NAME" : "EPOCH");
		return -1;
	}
	e = strtonum(epoch, 1, LLONG_MAX, &errstr);
	if (errstr != NULL) {
		(void)snprintf(err, errlen, "HAKOPOD_LEASE_EPOCH %.32s: %s",
		    epoch, errstr);
		return -1;
	}
	if (store_fence(s, name, (int64_t)e, leader_fenced, NULL) == -1) {
		(void)snprintf(err, errlen, "%s", store_error(s));
		return -1;
	}
	leader_bound(s, 0);
	log_debug("writes fenced by lease %s, epoch %lld", name, e);
	return 0;
}

void
leader_bound(struct store *s, int quarter)
{
	const char *v = getenv("HAKOPOD_LEASE_TTL_MS");
	const char *errstr;
	long long ttl;

	if (v == NULL)
		return;
	ttl = strtonum(v, 1, 3600000, &errstr);
	if (errstr != NULL) {
		log_warnx("HAKOPOD_LEASE_TTL_MS %.32s: %s: store calls "
		    "unbounded", v, errstr);
		return;
	}
	store_bound(s, quarter ? STORE_LEASE_WAIT((int64_t)ttl) :
	    (int64_t)ttl);
}
