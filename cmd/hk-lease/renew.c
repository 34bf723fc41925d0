/*
 * renew.c - keeping the lease: one timer renews it every ttl/3 and retries
 * a failed renewal until the lease would expire; the lease is lost when
 * the store says so (its lock or row is gone) or when no renewal succeeded
 * within the TTL.  Loss sends SIGTERM to prog, then SIGKILL after the grace
 * period; hk-lease exits 75 once prog is gone.
 *
 * The TTL is counted on the monotonic clock from the start of the last
 * renewal that succeeded, so it never outlives what the store granted (the
 * row's expiry is counted from a later moment).  A store call under a
 * lease returns within STORE_LEASE_WAIT(ttl) (store.h), so a failed
 * renewal is retried only while another attempt can end before the TTL
 * does; after that the lease counts as lost.  Those are the loop's
 * deadlines; the watchdog (watchdog.c) keeps the same ones for prog even
 * while a store call blocks, and a renewal that ends after them is a loss.
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "evsink.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "store.h"

static void	on_renew(struct loop *, void *);
static void	on_grace(struct loop *, void *);

int64_t
renew_clock(void)
{
	return loop_clock_us() / 1000;
}

/* start: when the acquisition began; -1 if the TTL has passed since. */
int
renew_start(struct lease *l, int64_t start)
{
	l->valid_until = start + l->ttl_ms;
	loop_timer_init(&l->renew, on_renew, l);
	loop_timer_init(&l->grace, on_grace, l);
	if (watchdog_extend(l->valid_until, l->valid_until + l->grace_ms) ==
	    -1 || renew_clock() >= l->valid_until)
		return -1;
	(void)loop_timer_at(l->loop, &l->renew, start + l->ttl_ms / 3);
	return 0;
}

static void
on_renew(struct loop *loop, void *arg)
{
	struct lease *l = arg;
	char reason[STORE_ERR_LEN + 64];
	int64_t start, now, next, retry;
	int64_t bound = STORE_LEASE_WAIT(l->ttl_ms);
	int r;

	start = renew_clock();
	if (l->join)
		r = join_check(l, reason, sizeof(reason));
	else if ((r = store_lease_renew(l->store, &l->row, l->ttl_ms)) != 0)
		(void)snprintf(reason, sizeof(reason), "%s",
		    store_error(l->store));
	now = renew_clock();
	if (r == 1) {
		renew_lose(l, reason);
		return;
	}
	if (r == 0 && watchdog_extend(start + l->ttl_ms,
	    start + l->ttl_ms + l->grace_ms) == 0) {
		l->valid_until = start + l->ttl_ms;
		log_debug("lease %s renewed (epoch %jd)", l->row.name,
		    (intmax_t)l->row.epoch);
		next = start + l->ttl_ms / 3;
	} else if (r == 0 || now + bound > l->valid_until) {
		(void)snprintf(reason, sizeof(reason), "no renewal within "
		    "the TTL: %s", r == 0 ? "the last one ended after it" :
		    store_error(l->store));
		renew_lose(l, reason);
		return;
	} else {
		log_warnx("lease %s: unable to %s: %s", l->row.name,
		    l->join ? "check it" : "renew", reason);
		retry = l->ttl_ms / 10;
		next = now + (retry < LEASE_RETRY_MIN_MS ?
		    LEASE_RETRY_MIN_MS : retry);
		if (next > l->valid_until - bound)
			next = l->valid_until - bound;
	}
	(void)loop_timer_at(loop, &l->renew, next);
}

/*
 * The lease is gone: prog must stop, with SIGKILL a grace period after
 * the loss or the TTL, whichever came first (the watchdog may have sent
 * both already, if a store call held the loop past them).  Without prog
 * (a wait for the previous holder's), the loop just ends.
 */
void
renew_lose(struct lease *l, const char *reason)
{
	int64_t now, kill_at;

	if (l->lost)
		return;
	l->lost = 1;
	loop_timer_cancel(l->loop, &l->renew);
	loop_timer_cancel(l->loop, &l->start);
	log_errorx("lease %s lost (epoch %jd): %s", l->row.name,
	    (intmax_t)l->row.epoch, reason);
	renew_event(l, "LeaseLost", reason);
	now = renew_clock();
	kill_at = (now < l->valid_until ? now : l->valid_until) + l->grace_ms;
	watchdog_stop(kill_at);
	if (l->child <= 0)
		loop_stop(l->loop);
	else if (now >= kill_at)
		on_grace(l->loop, l);
	else
		(void)loop_timer_at(l->loop, &l->grace, kill_at);
}

static void
on_grace(struct loop *loop, void *arg)
{
	struct lease *l = arg;

	(void)loop;
	if (l->child <= 0)
		return;
	log_warnx("prog pid %ld did not stop within %jd ms: killing it",
	    (long)l->child, (intmax_t)l->grace_ms);
	child_signal(l, SIGKILL);
}

/*
 * prog has ended.  If the TTL ran out meanwhile with no renewal, the
 * lease is lost even though the renewal timer has not said so yet: the
 * loop was held (hk-lease stopped, a store call that hung) while the
 * watchdog ended prog at its deadline, and prog's end can come out of the
 * loop before the timer does.  hk-lease then exits 75, and says why, not
 * with the status the watchdog's signal gave prog.
 */
void
renew_prog_ended(struct lease *l)
{
	if (!l->lost && renew_clock() >= l->valid_until)
		renew_lose(l, "no renewal within the TTL: prog ended after it");
}

/* LeaseAcquired, LeaseLost: {name, epoch, holder[, reason]}. */
void
renew_event(struct lease *l, const char *kind, const char *reason)
{
	json_t *d;

	d = json_pack("{s:s, s:I, s:s}", "name", l->row.name,
	    "epoch", (json_int_t)l->row.epoch, "holder", l->row.holder);
	if (d != NULL && reason != NULL)
		(void)json_object_set_new(d, "reason", json_string(reason));
	evsink_event(l->ev, kind, "", d);
}
