/*
 * loop.h - one thread, one loop per daemon (after Redis' ae and skalibs'
 * iopause): level-triggered epoll with an fd-indexed callback table, a
 * min-heap of absolute CLOCK_MONOTONIC deadlines, "now" cached once per
 * turn, signals through signalfd, and a before-sleep hook that flushes
 * batches.
 *
 * Timers are embedded in the caller's own structures (no allocation per
 * timer): a connection owns its deadline.  EPOLLERR and EPOLLHUP are reported
 * as readable and writable, so a waiting callback meets the error itself.
 */
#ifndef HK_LOOP_H
#define HK_LOOP_H

#include <stddef.h>
#include <stdint.h>

#define LOOP_READ	0x1
#define LOOP_WRITE	0x2

struct loop;

typedef void	loop_fd_fn(struct loop *, int, int, void *);
typedef void	loop_timer_fn(struct loop *, void *);
typedef void	loop_signal_fn(struct loop *, int, void *);
typedef void	loop_hook_fn(struct loop *, void *);

struct loop_timer {
	int64_t		 deadline;	/* loop_now_ms() clock */
	size_t		 slot;		/* index in the heap + 1; 0 = idle */
	loop_timer_fn	*fn;
	void		*arg;
};

struct loop	*loop_new(void);
void		 loop_free(struct loop *);

/*
 * Watches fd for mask (LOOP_READ|LOOP_WRITE); a second call replaces the
 * callback and the mask, and so does a call for a number that was closed
 * without loop_del_fd and now names another file.  A new owner never gets
 * an event that was meant for the number's previous one.  Masks change
 * lazily (see loop.c): no system call until an unwanted event arrives or
 * the next wait needs more interest.
 */
int	loop_add_fd(struct loop *, int, int, loop_fd_fn *, void *);
/* Changes the mask of a watched fd; 0 keeps it registered but silent. */
int	loop_mod_fd(struct loop *, int, int);
void	loop_del_fd(struct loop *, int);
/*
 * Stops watching *fdp, closes it and sets it to -1; nothing if it is -1.
 * Only for a descriptor that is its file's only one: a file that another
 * descriptor or process keeps open (an inherited listener, a pipe handed
 * to a relay) stays in epoll, and must be left with loop_del_fd.
 */
void	loop_close_fd(struct loop *, int *);

void	loop_timer_init(struct loop_timer *, loop_timer_fn *, void *);
/* Arms (or moves) the timer to an absolute deadline in loop_now_ms() time. */
int	loop_timer_at(struct loop *, struct loop_timer *, int64_t);
void	loop_timer_cancel(struct loop *, struct loop_timer *);
int	loop_timer_armed(const struct loop_timer *);

/* Monotonic milliseconds, cached once per turn of the loop. */
int64_t	loop_now_ms(const struct loop *);
/* Monotonic microseconds, read from the clock (for durations). */
int64_t	loop_clock_us(void);

/* Blocks the signals and delivers them through a signalfd. */
int	loop_signals(struct loop *, const int *, size_t, loop_signal_fn *,
	    void *);
void	loop_before_sleep(struct loop *, loop_hook_fn *, void *);

/* Runs until loop_stop(); 0, or -1 with errno when epoll fails. */
int	loop_run(struct loop *);
void	loop_stop(struct loop *);

#endif
