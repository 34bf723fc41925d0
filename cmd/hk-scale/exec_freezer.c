/*
 * exec_freezer.c - the exec backend's instances in cgroups of their own
 * (hakopod.toml(5) freezer), so that idle_action = "suspend" freezes
 * every process of an instance, whatever session or group it made, and
 * what is left of one when its leader ends is killed with it.
 *
 * The hierarchy: cgroup2 (cgroup.freeze, Linux 5.2) or cgroup v1's
 * freezer controller (freezer.state), as the key says; "auto" takes the
 * first of them that works, else signals (SIGSTOP to the process group).
 * Signals are the default: a cgroup costs every start, up to 1 ms made in
 * it by clone3, 4 to 20 ms by a move, which waits for an RCU grace period
 * of the kernel (hakopod.toml(5) has the figures).
 * Each instance's cgroup is made under hk-scale's own cgroup of that
 * hierarchy (/proc/self/cgroup) and named hk.INSTALLATION.PID.SEQ: an
 * adopted instance is known as ours by its name, and one installation's
 * sweep never touches another's.  Under cgroup2 the child is made in it
 * (clone3, backend_exec.c and exec_spawn.c); else it joins between vfork
 * and exec, by writing 0 to its cgroup.procs, which the parent opened.
 *
 * A cgroup is removed once its instance is released.  One whose
 * processes have not all ended by then is tried again every second; one
 * left by a killed hk-scale is removed by the next one's sweep once it is
 * empty (rmdir(2) refuses a cgroup that has processes).
 *
 * The freezer's state (the hierarchy, our cgroup, the cgroups left to
 * remove) is this file's own: freezer_setup() and freezer_shutdown() are
 * the exec backend's setup and teardown (struct backend).
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "log.h"
#include "scale.h"

#define FZ_RETRY_MS	1000	/* a cgroup that still had processes */
#define FZ_END_TRIES	100	/* at exit: 100 times 2 ms at most */
#define FZ_END_PAUSE_NS	2000000

/* How the exec backend freezes (hakopod.toml(5) freezer). */
enum fz_kind {
	FZ_SIGNAL,	/* SIGSTOP and SIGCONT to the process group */
	FZ_CGROUP1,	/* cgroup v1's freezer.state */
	FZ_CGROUP2,	/* cgroup.freeze */
};

struct fz_stale {
	TAILQ_ENTRY(fz_stale)	 entry;
	char			 path[FZ_PATH_MAX];
};

static struct freezer {
	enum fz_kind		 kind;
	char			 base[FZ_PATH_MAX];	/* our own cgroup */
	unsigned		 seq;			/* of names */
	int			 clone3;	/* cgroup2, clone3 not refused */
	TAILQ_HEAD(, fz_stale)	 stale;	/* to remove once empty */
	struct loop_timer	 retry;
} fz;

static int	lists_freezer(char *);
struct fz_find;
static int	each_line(const char *, int (*)(char *, struct fz_find *),
		    struct fz_find *);
static int	mount_line(char *, struct fz_find *);
static int	cgroup_line(char *, struct fz_find *);
static int	try_kind(struct scale *, enum fz_kind, char *, size_t);
static int	write_file(const char *, const char *, const char *);
static void	retry_fire(struct loop *, void *);

static const char *const kind_names[] = {
	[FZ_SIGNAL] = "signal", [FZ_CGROUP1] = "cgroup1",
	[FZ_CGROUP2] = "cgroup2",
};

/* Whether a comma-separated list (options, controllers) has "freezer". */
static int
lists_freezer(char *list)
{
	char *w;

	while ((w = strsep(&list, ",")) != NULL)
		if (strcmp(w, "freezer") == 0)
			return 1;
	return 0;
}

/* What a line of mountinfo or cgroup is looked at for, and the answer. */
struct fz_find {
	enum fz_kind	 k;
	char		*a, *b;		/* mount point and root; path */
	size_t		 alen, blen;
};

/* match(line, arg) on each line of path until it is 1: 0, else -1. */
static int
each_line(const char *path, int (*match)(char *, struct fz_find *),
    struct fz_find *arg)
{
	FILE *fp;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if ((fp = fopen(path, "re")) == NULL)
		return -1;
	while (!found && getline(&line, &cap, fp) != -1) {
		line[strcspn(line, "\n")] = '\0';
		found = match(line, arg);
	}
	free(line);
	fclose(fp);
	return found ? 0 : -1;
}

/*
 * A line of mountinfo: the hierarchy's mount point (a), and the cgroup
 * path its root is (b; the fourth field: "/" unless a namespace or a
 * bind made it another).  A path with an escaped byte (\040) is not
 * used.
 */
static int
mount_line(char *line, struct fz_find *q)
{
	char *f[8], *p, *sep;
	int n, found = 0;

	if ((sep = strstr(line, " - ")) == NULL)
		return 0;
	*sep = '\0';
	for (n = 0, p = line; n < 5 && p != NULL; n++)
		f[n] = strsep(&p, " ");
	for (p = sep + 3; n < 8 && p != NULL; n++)
		f[n] = strsep(&p, " ");
	if (n < 8 || strchr(f[3], '\\') != NULL || strchr(f[4], '\\') != NULL)
		return 0;
	if (q->k == FZ_CGROUP2 && strcmp(f[5], "cgroup2") == 0)
		found = 1;
	else if (q->k == FZ_CGROUP1 && strcmp(f[5], "cgroup") == 0)
		found = lists_freezer(f[7]);
	return found && strlcpy(q->a, f[4], q->alen) < q->alen &&
	    strlcpy(q->b, f[3], q->blen) < q->blen;
}

/* A line of /proc/PID/cgroup: the process's cgroup in the hierarchy. */
static int
cgroup_line(char *line, struct fz_find *q)
{
	char *p = line, *ctl;
	int found = 0;

	if (strsep(&p, ":") == NULL || (ctl = strsep(&p, ":")) == NULL ||
	    p == NULL)
		return 0;
	if (q->k == FZ_CGROUP2 && strcmp(line, "0") == 0 && *ctl == '\0')
		found = 1;
	else if (q->k == FZ_CGROUP1)
		found = lists_freezer(ctl);
	return found && strlcpy(q->b, p, q->blen) < q->blen;
}

/* The directory of pid's cgroup in the hierarchy k: mount + path. */
static int
cgroup_dir(pid_t pid, enum fz_kind k, char *dir, size_t len)
{
	char mnt[FZ_PATH_MAX], root[FZ_PATH_MAX], path[FZ_PATH_MAX];
	struct fz_find m = { k, mnt, root, sizeof(mnt), sizeof(root) };
	struct fz_find c = { k, NULL, path, 0, sizeof(path) };
	char file[64];
	size_t rl;

	snprintf(file, sizeof(file), "/proc/%ld/cgroup", (long)pid);
	if (each_line("/proc/self/mountinfo", mount_line, &m) == -1 ||
	    each_line(file, cgroup_line, &c) == -1)
		return -1;
	rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
	if (strncmp(path, root, rl) != 0 || (path[rl] != '/' &&
	    path[rl] != '\0'))
		return -1;	/* outside what is mounted */
	if ((size_t)snprintf(dir, len, "%s%s", mnt, strcmp(path + rl, "/") ==
	    0 ? "" : path + rl) >= len)
		return -1;
	return 0;
}

/*
 * The directory of pid's cgroup in cgroup v1's freezer hierarchy (v1),
 * or in cgroup2: whatever freezer the exec backend uses (ct_freezer.c
 * finds a container's own cgroup with it).
 */
int
freezer_cgroup_of(pid_t pid, int v1, char *dir, size_t len)
{
	return cgroup_dir(pid, v1 ? FZ_CGROUP1 : FZ_CGROUP2, dir, len);
}

/*
 * Whether k works here: our own cgroup's directory, and a cgroup made
 * in it that has the freezer's file (cgroup.freeze is missing before
 * Linux 5.2); that trial cgroup is removed.  err says why not.
 */
static int
try_kind(struct scale *sc, enum fz_kind k, char *err, size_t errlen)
{
	char dir[FZ_PATH_MAX], probe[FZ_PATH_MAX + FZ_NAME_MAX + 2];
	char file[sizeof(probe) + 16];
	int saved;

	if (cgroup_dir(getpid(), k, dir, sizeof(dir)) == -1) {
		snprintf(err, errlen, "no such hierarchy mounted, or our "
		    "cgroup is outside it");
		return -1;
	}
	if (strlen(dir) > FZ_PATH_MAX - FZ_NAME_MAX - 2) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	snprintf(probe, sizeof(probe), "%s/hk.%s.%ld.0", dir,
	    sc->installation, (long)getpid());
	if (mkdir(probe, 0755) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", probe, strerror(errno));
		return -1;
	}
	snprintf(file, sizeof(file), "%s/%s", probe, k == FZ_CGROUP2 ?
	    "cgroup.freeze" : "freezer.state");
	if (access(file, W_OK) == -1) {
		saved = errno;
		rmdir(probe);
		snprintf(err, errlen, "%s: %s", file, strerror(saved));
		return -1;
	}
	rmdir(probe);
	fz.kind = k;
	strlcpy(fz.base, dir, sizeof(fz.base));
	return 0;
}

/*
 * Whether clone3 can be called, so that an instance is made in its
 * cgroup: a size too small for any clone_args is refused with EINVAL by
 * a kernel that has it, with ENOSYS by one that has not or by a filter.
 */
static int
clone3_allowed(void)
{
	return syscall(SYS_clone3, NULL, (size_t)0) == -1 && errno != ENOSYS;
}

/*
 * At start, before adoption: the hierarchy the key names, or with
 * "auto" the first that works.  -1 with err when the one named does not.
 */
int
freezer_setup(struct scale *sc, char *err, size_t errlen)
{
	const char *want = sc->cfg.freezer[0] != '\0' ? sc->cfg.freezer :
	    "signal";
	char why2[FZ_PATH_MAX + 128], why1[FZ_PATH_MAX + 128];

	TAILQ_INIT(&fz.stale);
	loop_timer_init(&fz.retry, retry_fire, sc);
	fz.kind = FZ_SIGNAL;
	fz.clone3 = 0;
	if (strcmp(want, "signal") == 0)
		return 0;
	if (installation_id(sc) == -1) {
		snprintf(err, errlen, "freezer: unable to read or record the "
		    "installation's ID: %s", store_error(sc->store));
		return strcmp(want, "auto") == 0 ? 0 : -1;
	}
	if (strcmp(want, "cgroup1") != 0 &&
	    try_kind(sc, FZ_CGROUP2, why2, sizeof(why2)) == 0)
		goto done;
	if (strcmp(want, "cgroup2") == 0) {
		snprintf(err, errlen, "freezer = \"cgroup2\": %s", why2);
		return -1;
	}
	if (try_kind(sc, FZ_CGROUP1, why1, sizeof(why1)) == 0)
		goto done;
	if (strcmp(want, "cgroup1") == 0) {
		snprintf(err, errlen, "freezer = \"cgroup1\": %s", why1);
		return -1;
	}
	log_info("freezer: no cgroup freezer (cgroup2: %s; cgroup1: %s): a "
	    "suspend stops the process group with SIGSTOP", why2, why1);
	return 0;
done:
	log_info("freezer: instances in cgroups of their own under %s (%s)",
	    fz.base, kind_names[fz.kind]);
	fz.clone3 = fz.kind == FZ_CGROUP2 && clone3_allowed();
	if (fz.kind == FZ_CGROUP2 && !fz.clone3)
		log_info("freezer: clone3 is refused here (a seccomp filter, "
		    "such as systemd's RestrictNamespaces=, or Linux before "
		    "5.3): each instance moves into its cgroup after the fork, "
		    "4 to 20 ms a start, 0.2 ms where cgroup2 is mounted with "
		    "favordynmods");
	return 0;
}

/*
 * A new cgroup for an instance: its directory in dir, its cgroup.procs
 * open for the child to write 0 to, and under cgroup2 the directory
 * open for clone3's CLONE_INTO_CGROUP where clone3 may be called (fds[1],
 * else -1), all
 * close-on-exec.  dir is "" and both -1 under signals.
 */
int
freezer_make(struct scale *sc, char *dir, size_t len, int fds[2],
    char *err, size_t errlen)
{
	char file[FZ_PATH_MAX + 16];

	*dir = '\0';
	fds[0] = fds[1] = -1;
	if (fz.kind == FZ_SIGNAL)
		return 0;
	snprintf(dir, len, "%s/hk.%s.%ld.%u", fz.base, sc->installation,
	    (long)getpid(), ++fz.seq);
	if (mkdir(dir, 0755) == -1) {
		snprintf(err, errlen, "cgroup %s: %s", dir, strerror(errno));
		*dir = '\0';
		return -1;
	}
	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	if ((fds[0] = open(file, O_WRONLY | O_CLOEXEC)) == -1 ||
	    (fz.clone3 && (fds[1] = open(dir, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1)) {
		snprintf(err, errlen, "%s: %s", fds[0] == -1 ? file : dir,
		    strerror(errno));
		if (fds[0] != -1)
			close(fds[0]);
		fds[0] = -1;
		rmdir(dir);
		*dir = '\0';
		return -1;
	}
	return 0;
}

/*
 * An adopted instance's cgroup: pid's, if it is one of this
 * installation's under our base; else dir is "" (signals).
 */
void
freezer_find(struct scale *sc, pid_t pid, char *dir, size_t len)
{
	char got[FZ_PATH_MAX], prefix[FZ_PATH_MAX + 64];
	int n;

	*dir = '\0';
	if (fz.kind == FZ_SIGNAL ||
	    cgroup_dir(pid, fz.kind, got, sizeof(got)) == -1)
		return;
	n = snprintf(prefix, sizeof(prefix), "%s/hk.%s.", fz.base,
	    sc->installation);
	if (strncmp(got, prefix, (size_t)n) == 0 &&
	    strchr(got + n, '/') == NULL)
		strlcpy(dir, got, len);
}

static int
write_file(const char *dir, const char *name, const char *text)
{
	char file[FZ_PATH_MAX + 32];
	ssize_t n;
	int fd, saved;

	snprintf(file, sizeof(file), "%s/%s", dir, name);
	if ((fd = open(file, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = write(fd, text, strlen(text));
	saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Freezes (on) or thaws the cgroup dir: NULL, or why it could not. */
const char *
freezer_set(const char *dir, int on)
{
	int r;

	if (fz.kind == FZ_CGROUP2)
		r = write_file(dir, "cgroup.freeze", on ? "1" : "0");
	else
		r = write_file(dir, "freezer.state", on ? "FROZEN" : "THAWED");
	return r == -1 ? strerror(errno) : NULL;
}

/* cgroup v1's freezer holds a kill until the thaw. */
int
freezer_cgroup1(void)
{
	return fz.kind == FZ_CGROUP1;
}

/*
 * SIGKILL to every process of the cgroup dir, then a thaw: a frozen
 * process acts on it at once under cgroup2, under cgroup v1 only once
 * thawed.
 */
void
freezer_end(const char *dir)
{
	char file[FZ_PATH_MAX + 16];
	FILE *fp;
	long pid;

	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	if ((fp = fopen(file, "re")) == NULL)
		return;
	while (fscanf(fp, "%ld", &pid) == 1)
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
	fclose(fp);
	if (fz.kind == FZ_CGROUP1)
		freezer_set(dir, 0);
}

/*
 * The instance is released: its cgroup goes, now, or once what is left
 * in it (killed here) has ended.
 */
void
freezer_remove(struct scale *sc, const char *dir)
{
	struct fz_stale *st;

	if (rmdir(dir) == 0 || errno == ENOENT)
		return;
	if (errno != EBUSY) {
		log_warn("freezer: unable to remove %s", dir);
		return;
	}
	freezer_end(dir);
	if ((st = calloc(1, sizeof(*st))) == NULL) {
		log_warn("freezer: %s kept", dir);
		return;
	}
	strlcpy(st->path, dir, sizeof(st->path));
	TAILQ_INSERT_TAIL(&fz.stale, st, entry);
	if (!loop_timer_armed(&fz.retry))
		loop_timer_at(sc->loop, &fz.retry, loop_now_ms(sc->loop) +
		    FZ_RETRY_MS);
}

static void
retry_fire(struct loop *l, void *arg)
{
	struct fz_stale *st, *next;

	(void)arg;
	TAILQ_FOREACH_SAFE(st, &fz.stale, entry, next) {
		if (rmdir(st->path) == -1 && errno == EBUSY) {
			freezer_end(st->path);
			continue;
		}
		TAILQ_REMOVE(&fz.stale, st, entry);
		free(st);
	}
	if (!TAILQ_EMPTY(&fz.stale))
		loop_timer_at(l, &fz.retry, loop_now_ms(l) + FZ_RETRY_MS);
}

/*
 * After adoption: this installation's cgroups that earlier runs left
 * empty are removed (one that still has processes stays: rmdir refuses).
 */
void
freezer_sweep(struct scale *sc)
{
	char prefix[FZ_NAME_MAX], path[FZ_PATH_MAX + 256 + 2];
	struct dirent *de;
	DIR *d;
	size_t n;

	if (fz.kind == FZ_SIGNAL || (d = opendir(fz.base)) == NULL)
		return;
	n = (size_t)snprintf(prefix, sizeof(prefix), "hk.%s.",
	    sc->installation);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, n) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", fz.base, de->d_name);
		if (rmdir(path) == 0)
			log_debug("freezer: removed %s, left empty", path);
	}
	closedir(d);
}

/*
 * The end: each cgroup still kept is waited for a little (its killed
 * processes end in a few ms), then left to the next run's sweep.
 */
void
freezer_shutdown(struct scale *sc)
{
	const struct timespec pause = { 0, FZ_END_PAUSE_NS };
	struct fz_stale *st;
	int tries;

	loop_timer_cancel(sc->loop, &fz.retry);
	while ((st = TAILQ_FIRST(&fz.stale)) != NULL) {
		for (tries = 0; rmdir(st->path) == -1 && errno == EBUSY &&
		    tries < FZ_END_TRIES; tries++) {
			freezer_end(st->path);
			nanosleep(&pause, NULL);
		}
		TAILQ_REMOVE(&fz.stale, st, entry);
		free(st);
	}
}
