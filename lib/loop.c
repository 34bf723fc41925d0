/*
 * loop.c - the event loop (see loop.h).
 */
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"

#define LOOP_EVENTS	256	/* epoll events taken per turn */

/*
 * Interest is changed lazily, as HAProxy does: "mask" is what the owner
 * wants, "applied" what epoll has.  Dropping interest costs nothing until
 * an unwanted event actually arrives; adding it is applied once, before the
 * next epoll_wait.  A proxy that turns a socket's reading off and on again
 * for every request so makes no epoll_ctl call at all in the common case.
 */
struct loop_fd {
	loop_fd_fn	*fn;
	void		*arg;
	int		 mask;
	int		 applied;
	int		 used;
	int		 dirty;		/* in loop.dirty[] */
	uint32_t	 gen;		/* owner's; in its events' data */
};

/*
 * An event names the descriptor and the generation of its owner.  A
 * number closed and taken again within one turn (a connection closed, the
 * next accepted) gets a new generation, so an event epoll returned for
 * the old file is dropped instead of reaching the new owner.
 */
#define EV_DATA(fd, gen)	((uint64_t)(gen) << 32 | (uint32_t)(fd))
#define EV_FD(u64)		((int)(uint32_t)(u64))
#define EV_GEN(u64)		((uint32_t)((u64) >> 32))

struct loop {
	int			 epfd;
	struct loop_fd		*fds;		/* indexed by fd */
	size_t			 nfds;
	int			*dirty;		/* fds whose interest grew */
	size_t			 ndirty;
	struct loop_timer	**heap;		/* min-heap on deadline */
	size_t			 nheap;
	size_t			 capheap;
	int64_t			 now;
	int			 stop;
	int			 sigfd;
	loop_signal_fn		*sigfn;
	void			*sigarg;
	loop_hook_fn		*hook;
	void			*hookarg;
};

static int	grow_fds(struct loop *, int);
static int	apply_mask(struct loop *, int);
static void	forget_fd(struct loop *, int);
static int	watched(const struct loop *, int);
static void	apply_dirty(struct loop *);
static uint32_t	epoll_mask(int);
static void	heap_swap(struct loop *, size_t, size_t);
static void	heap_up(struct loop *, size_t);
static void	heap_down(struct loop *, size_t);
static void	heap_remove(struct loop *, size_t);
static int	next_wait_ms(struct loop *);
static void	run_timers(struct loop *);
static void	read_signals(struct loop *, int, int, void *);
static int64_t	clock_ms(void);

static int64_t
clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
loop_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct loop *
loop_new(void)
{
	struct loop *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	if ((l->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		free(l);
		return NULL;
	}
	l->sigfd = -1;
	l->now = clock_ms();
	return l;
}

void
loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	if (l->sigfd != -1)
		close(l->sigfd);
	close(l->epfd);
	free(l->fds);
	free(l->dirty);
	free(l->heap);
	free(l);
}

static int
grow_fds(struct loop *l, int fd)
{
	struct loop_fd *fds;
	int *dirty;
	size_t n;

	if ((size_t)fd < l->nfds)
		return 0;
	n = l->nfds ? l->nfds : 64;
	while (n <= (size_t)fd)
		n *= 2;
	if ((dirty = reallocarray(l->dirty, n, sizeof(*dirty))) == NULL)
		return -1;
	l->dirty = dirty;
	if ((fds = reallocarray(l->fds, n, sizeof(*fds))) == NULL)
		return -1;
	memset(fds + l->nfds, 0, (n - l->nfds) * sizeof(*fds));
	l->fds = fds;
	l->nfds = n;
	return 0;
}

static uint32_t
epoll_mask(int mask)
{
	return ((mask & LOOP_READ) ? EPOLLIN | EPOLLRDHUP : 0) |
	    ((mask & LOOP_WRITE) ? EPOLLOUT : 0);
}

int
loop_add_fd(struct loop *l, int fd, int mask, loop_fd_fn *fn, void *arg)
{
	struct loop_fd *f;
	struct epoll_event ev;
	int op = EPOLL_CTL_ADD;

	if (fd < 0 || grow_fds(l, fd) == -1)
		return -1;
	f = &l->fds[fd];
	memset(&ev, 0, sizeof(ev));
	ev.events = epoll_mask(mask);
	ev.data.u64 = EV_DATA(fd, f->gen + 1);
	/*
	 * Still ours: the number was closed without loop_del_fd (epoll
	 * forgot the file then, so the one behind the number now is added)
	 * or changes owner while open (still registered: modified).
	 */
	if (epoll_ctl(l->epfd, op, fd, &ev) == -1 && (!f->used ||
	    errno != EEXIST || epoll_ctl(l->epfd, op = EPOLL_CTL_MOD, fd,
	    &ev) == -1))
		return -1;
	f->gen++;
	f->fn = fn;
	f->arg = arg;
	f->mask = mask;
	f->applied = mask;
	f->used = 1;
	return 0;
}

/* Makes epoll's interest in fd what its owner wants now. */
static int
apply_mask(struct loop *l, int fd)
{
	struct loop_fd *f = &l->fds[fd];
	struct epoll_event ev;

	if (f->applied == f->mask)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = epoll_mask(f->mask);
	ev.data.u64 = EV_DATA(fd, f->gen);
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) == -1)
		return -1;
	f->applied = f->mask;
	return 0;
}

/* Before sleeping: interest that grew during the turn goes to epoll. */
static void
apply_dirty(struct loop *l)
{
	struct loop_fd *f;
	size_t i;
	int fd;

	for (i = 0; i < l->ndirty; i++) {
		fd = l->dirty[i];
		f = &l->fds[fd];
		f->dirty = 0;
		if (f->used && (f->mask & ~f->applied) != 0)
			(void)apply_mask(l, fd);
	}
	l->ndirty = 0;
}

int
loop_mod_fd(struct loop *l, int fd, int mask)
{
	struct loop_fd *f;

	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used) {
		errno = EBADF;
		return -1;
	}
	f = &l->fds[fd];
	f->mask = mask;
	if ((mask & ~f->applied) != 0 && !f->dirty) {
		f->dirty = 1;
		l->dirty[l->ndirty++] = fd;
	}
	return 0;
}

/* The slot of a watched fd made free; its events still in hand are stale. */
static void
forget_fd(struct loop *l, int fd)
{
	uint32_t gen;
	int dirty;

	/* Still listed in dirty[] if set: keep it so, listed only once. */
	dirty = l->fds[fd].dirty;
	gen = l->fds[fd].gen;
	memset(&l->fds[fd], 0, sizeof(l->fds[fd]));
	l->fds[fd].dirty = dirty;
	l->fds[fd].gen = gen + 1;	/* events still in hand are stale */
}

static int
watched(const struct loop *l, int fd)
{
	return fd >= 0 && (size_t)fd < l->nfds && l->fds[fd].used;
}

void
loop_del_fd(struct loop *l, int fd)
{
	if (!watched(l, fd))
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	forget_fd(l, fd);
}

/*
 * Closing the last descriptor of a file takes it out of epoll, so no
 * epoll_ctl is made: one system call less for every connection closed.
 * A child between fork and exec may hold the file a moment longer (every
 * descriptor here is close-on-exec); the events it gets meanwhile carry
 * the old generation and are dropped.
 */
void
loop_close_fd(struct loop *l, int *fdp)
{
	if (*fdp == -1)
		return;
	if (watched(l, *fdp))
		forget_fd(l, *fdp);
	close(*fdp);
	*fdp = -1;
}

void
loop_timer_init(struct loop_timer *t, loop_timer_fn *fn, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->fn = fn;
	t->arg = arg;
}

int
loop_timer_armed(const struct loop_timer *t)
{
	return t->slot != 0;
}

static void
heap_swap(struct loop *l, size_t a, size_t b)
{
	struct loop_timer *t = l->heap[a];

	l->heap[a] = l->heap[b];
	l->heap[b] = t;
	l->heap[a]->slot = a + 1;
	l->heap[b]->slot = b + 1;
}

static void
heap_up(struct loop *l, size_t i)
{
	while (i > 0 && l->heap[(i - 1) / 2]->deadline > l->heap[i]->deadline) {
		heap_swap(l, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
heap_down(struct loop *l, size_t i)
{
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= l->nheap)
			return;
		if (c + 1 < l->nheap &&
		    l->heap[c + 1]->deadline < l->heap[c]->deadline)
			c++;
		if (l->heap[i]->deadline <= l->heap[c]->deadline)
			return;
		heap_swap(l, i, c);
		i = c;
	}
}

static void
heap_remove(struct loop *l, size_t i)
{
	l->heap[i]->slot = 0;
	l->nheap--;
	if (i == l->nheap)
		return;
	l->heap[i] = l->heap[l->nheap];
	l->heap[i]->slot = i + 1;
	heap_down(l, i);
	heap_up(l, i);
}

int
loop_timer_at(struct loop *l, struct loop_timer *t, int64_t deadline)
{
	struct loop_timer **heap;
	size_t n;

	if (t->slot != 0) {
		t->deadline = deadline;
		heap_down(l, t->slot - 1);
		heap_up(l, t->slot - 1);
		return 0;
	}
	if (l->nheap == l->capheap) {
		n = l->capheap ? l->capheap * 2 : 64;
		if ((heap = reallocarray(l->heap, n, sizeof(*heap))) == NULL)
			return -1;
		l->heap = heap;
		l->capheap = n;
	}
	t->deadline = deadline;
	l->heap[l->nheap] = t;
	t->slot = ++l->nheap;
	heap_up(l, l->nheap - 1);
	return 0;
}

void
loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	if (t->slot != 0)
		heap_remove(l, t->slot - 1);
}

int64_t
loop_now_ms(const struct loop *l)
{
	return l->now;
}

static void
read_signals(struct loop *l, int fd, int mask, void *arg)
{
	struct signalfd_siginfo si;

	(void)mask;
	(void)arg;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		l->sigfn(l, (int)si.ssi_signo, l->sigarg);
}

int
loop_signals(struct loop *l, const int *sigs, size_t n, loop_signal_fn *fn,
    void *arg)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return -1;
	l->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (l->sigfd == -1)
		return -1;
	l->sigfn = fn;
	l->sigarg = arg;
	return loop_add_fd(l, l->sigfd, LOOP_READ, read_signals, NULL);
}

void
loop_before_sleep(struct loop *l, loop_hook_fn *fn, void *arg)
{
	l->hook = fn;
	l->hookarg = arg;
}

void
loop_stop(struct loop *l)
{
	l->stop = 1;
}

static int
next_wait_ms(struct loop *l)
{
	int64_t d;

	if (l->nheap == 0)
		return -1;
	d = l->heap[0]->deadline - clock_ms();
	if (d <= 0)
		return 0;
	return d > 3600000 ? 3600000 : (int)d;
}

/* Runs every timer that is due; a callback may re-arm its own timer. */
static void
run_timers(struct loop *l)
{
	struct loop_timer *t;

	while (l->nheap > 0 && l->heap[0]->deadline <= l->now && !l->stop) {
		t = l->heap[0];
		heap_remove(l, 0);
		t->fn(l, t->arg);
	}
}

int
loop_run(struct loop *l)
{
	struct epoll_event evs[LOOP_EVENTS];
	struct loop_fd *f;
	int i, n, fd, mask;

	l->stop = 0;
	while (!l->stop) {
		if (l->hook != NULL)
			l->hook(l, l->hookarg);
		if (l->stop)
			break;
		apply_dirty(l);
		n = epoll_wait(l->epfd, evs, LOOP_EVENTS, next_wait_ms(l));
		if (n == -1 && errno != EINTR)
			return -1;
		l->now = clock_ms();
		for (i = 0; i < n && !l->stop; i++) {
			fd = EV_FD(evs[i].data.u64);
			if ((size_t)fd >= l->nfds || !l->fds[fd].used ||
			    l->fds[fd].gen != EV_GEN(evs[i].data.u64))
				continue;	/* removed by an earlier callback */
			f = &l->fds[fd];
			mask = 0;
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR |
			    EPOLLHUP))
				mask |= LOOP_READ;
			if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
				mask |= LOOP_WRITE;
			if ((evs[i].events & (EPOLLIN | EPOLLOUT)) &
			    ~epoll_mask(f->mask))
				(void)apply_mask(l, fd);	/* lazily dropped */
			mask &= f->mask | ((evs[i].events &
			    (EPOLLERR | EPOLLHUP)) ? LOOP_READ | LOOP_WRITE : 0);
			if (mask)
				f->fn(l, fd, mask, f->arg);
		}
		run_timers(l);
	}
	return 0;
}
