/*
 * loop.c - the event loop: timers fire in deadline order and can be moved
 * and cancelled, fds are dispatched, signals arrive through signalfd, the
 * before-sleep hook runs every turn; a descriptor number taken by a new
 * owner gets only the new owner's events.
 */
#include <sys/socket.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loop.h"
#include "tap.h"

#define NTIMERS	200

static int order[NTIMERS + 1], norder, hooks, got_signal, fd_reads;

static void
on_timer(struct loop *l, void *arg)
{
	(void)l;
	order[norder++] = (int)(intptr_t)arg;
}

static void
on_last(struct loop *l, void *arg)
{
	(void)arg;
	loop_stop(l);
}

static void
on_hook(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	hooks++;
}

static void
on_read(struct loop *l, int fd, int mask, void *arg)
{
	char c;

	(void)arg;
	if ((mask & LOOP_READ) && read(fd, &c, 1) == 1 && c == 'x')
		fd_reads++;
	loop_del_fd(l, fd);
	loop_stop(l);
}

static int counted_calls, counted_mask;

/* Counts calls and reads one byte; a timer ends the turn. */
static void
on_count(struct loop *l, int fd, int mask, void *arg)
{
	char c;

	(void)l;
	(void)arg;
	counted_calls++;
	counted_mask |= mask;
	if (mask & LOOP_READ)
		(void)read(fd, &c, 1);
}

/* Runs the loop for about ms milliseconds. */
static void
run_for(struct loop *l, int ms)
{
	static struct loop_timer stop;

	counted_calls = counted_mask = 0;
	loop_timer_init(&stop, on_last, NULL);
	loop_timer_at(l, &stop, loop_now_ms(l) + ms);
	loop_run(l);
}

/*
 * Interest is dropped lazily and added before the next wait: whatever epoll
 * holds, a callback only ever sees what its owner asked for.
 */
static void
test_interest(struct loop *l)
{
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	loop_add_fd(l, sv[1], LOOP_READ, on_count, NULL);
	loop_mod_fd(l, sv[1], 0);
	write(sv[0], "x", 1);
	run_for(l, 20);
	isint(counted_calls, 0, "interest dropped: a readable fd is silent");
	loop_mod_fd(l, sv[1], LOOP_READ);
	run_for(l, 20);
	ok(counted_calls == 1 && counted_mask == LOOP_READ,
	    "interest restored: the fd is dispatched once");
	loop_mod_fd(l, sv[1], 0);
	loop_mod_fd(l, sv[1], LOOP_READ);
	write(sv[0], "y", 1);
	run_for(l, 20);
	isint(counted_calls, 1, "dropped and restored in one turn: dispatched");
	write(sv[0], "z", 1);
	loop_mod_fd(l, sv[1], LOOP_WRITE);
	run_for(l, 5);
	ok(counted_calls > 0 && counted_mask == LOOP_WRITE,
	    "read swapped for write: only writability is reported");
	loop_mod_fd(l, sv[1], LOOP_READ);
	run_for(l, 20);
	ok(counted_calls == 1 && counted_mask == LOOP_READ,
	    "and back: the byte that waited is read");
	loop_del_fd(l, sv[1]);
	close(sv[0]);
	close(sv[1]);
}

static int	 swap_fds[2], swap_fresh, swapped, new_calls;
static int	 swap_close, swap_closed;	/* loop_close_fd, not del */

/* Counts the calls of a descriptor's new owner, reading what is there. */
static void
on_new(struct loop *l, int fd, int mask, void *arg)
{
	char c;

	(void)l;
	(void)mask;
	(void)arg;
	new_calls++;
	(void)read(fd, &c, 1);
}

/*
 * The first of two readable sockets to be dispatched closes the other and
 * puts a fresh socket, with nothing to read, under its number: as a
 * gateway closes one connection and accepts the next within one turn.
 */
static void
on_swap(struct loop *l, int fd, int mask, void *arg)
{
	int other = fd == swap_fds[0] ? swap_fds[1] : swap_fds[0];
	char c;

	(void)mask;
	(void)arg;
	(void)read(fd, &c, 1);
	if (swapped++)
		return;
	if (swap_close) {
		swap_closed = other;
		loop_close_fd(l, &swap_closed);
	} else
		loop_del_fd(l, other);
	dup2(swap_fresh, other);
	loop_add_fd(l, other, LOOP_READ, on_new, NULL);
}

/*
 * Two readable sockets; the first dispatched gives the other's number to
 * a fresh socket, with loop_del_fd and close, or with loop_close_fd.
 */
static void
swap_in_one_turn(struct loop *l, int by_close, const char *how)
{
	int a[2], b[2], fresh[2];

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fresh);
	swap_fds[0] = a[1];
	swap_fds[1] = b[1];
	swap_fresh = fresh[1];
	swap_close = by_close;
	swapped = new_calls = 0;
	loop_add_fd(l, a[1], LOOP_READ, on_swap, NULL);
	loop_add_fd(l, b[1], LOOP_READ, on_swap, NULL);
	write(a[0], "x", 1);
	write(b[0], "x", 1);	/* both ready: one epoll_wait returns both */
	run_for(l, 20);
	ok(swapped == 1 && new_calls == 0, "%s: an event for a number's old "
	    "file does not reach its new owner", how);
	write(fresh[0], "y", 1);
	run_for(l, 20);
	isint(new_calls, 1, "%s: the new owner gets its own events", how);
	loop_del_fd(l, a[1]);
	loop_del_fd(l, b[1]);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
	close(fresh[0]), close(fresh[1]);
}

static void
test_reuse(struct loop *l)
{
	int sv[2], tv[2], none = -1;

	swap_in_one_turn(l, 0, "loop_del_fd");
	swap_in_one_turn(l, 1, "loop_close_fd");
	ok(swap_closed == -1, "loop_close_fd sets the descriptor to -1");
	loop_close_fd(l, &none);
	ok(none == -1, "loop_close_fd of -1 does nothing");

	/* Closed without loop_del_fd, the number taken again by add. */
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, tv);
	loop_add_fd(l, sv[1], LOOP_READ, on_count, NULL);
	dup2(tv[1], sv[1]);	/* the old file closed, epoll forgets it */
	new_calls = 0;
	ok(loop_add_fd(l, sv[1], LOOP_READ, on_new, NULL) == 0,
	    "a number closed without loop_del_fd can be added again");
	write(tv[0], "z", 1);
	run_for(l, 20);
	isint(new_calls, 1, "and what is behind it now is watched");
	loop_del_fd(l, sv[1]);
	close(sv[0]), close(sv[1]), close(tv[0]), close(tv[1]);
}

static void
on_signal(struct loop *l, int sig, void *arg)
{
	(void)arg;
	got_signal = sig;
	loop_stop(l);
}

int
main(void)
{
	static struct loop_timer timers[NTIMERS], last, moved, cancelled;
	struct loop *l;
	int64_t now, t0;
	int i, sorted = 1, sv[2], sigs[] = { SIGUSR1 };

	plan(22);
	t0 = loop_clock_us();	/* before the loop reads its clock */
	l = loop_new();
	ok(l != NULL, "loop_new");
	now = loop_now_ms(l);
	/* Deadlines in a shuffled order: they must fire sorted. */
	for (i = 0; i < NTIMERS; i++) {
		loop_timer_init(&timers[i], on_timer,
		    (void *)(intptr_t)((i * 7919) % NTIMERS));
		loop_timer_at(l, &timers[i], now + 1 + (i * 7919) % NTIMERS / 20);
	}
	loop_timer_init(&moved, on_timer, (void *)(intptr_t)-1);
	loop_timer_at(l, &moved, now + 100000);
	loop_timer_at(l, &moved, now);		/* moved earlier: fires first */
	loop_timer_init(&cancelled, on_timer, (void *)(intptr_t)-2);
	loop_timer_at(l, &cancelled, now + 2);
	loop_timer_cancel(l, &cancelled);
	loop_timer_init(&last, on_last, NULL);
	loop_timer_at(l, &last, now + 30);
	loop_before_sleep(l, on_hook, NULL);
	ok(loop_run(l) == 0, "loop_run returns 0 after loop_stop");
	/* The deadline was now + 30 ms of a clock read after t0, in ms. */
	ok(loop_clock_us() - t0 >= 29000, "no timer fired before its deadline");
	isint(norder, NTIMERS + 1, "every armed timer fired once, none cancelled");
	ok(order[0] == -1, "a timer moved earlier fires first");
	for (i = 2; i < norder; i++)
		if (order[i] / 20 < order[i - 1] / 20)
			sorted = 0;
	ok(sorted, "timers fire in deadline order");
	ok(hooks > 0, "the before-sleep hook ran");

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
	loop_add_fd(l, sv[1], LOOP_READ, on_read, NULL);
	write(sv[0], "x", 1);
	loop_run(l);
	isint(fd_reads, 1, "a readable fd is dispatched");
	close(sv[0]);
	close(sv[1]);
	test_interest(l);
	test_reuse(l);

	loop_signals(l, sigs, 1, on_signal, NULL);
	kill(getpid(), SIGUSR1);
	loop_run(l);
	isint(got_signal, SIGUSR1, "a signal arrives through the loop");
	loop_free(l);
	return done();
}
