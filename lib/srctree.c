/*
 * srctree.c - a service's source read into its archive, hashed, and
 * written out again read-only (srctree.h).
 *
 * Reading trusts nothing about the tree: every entry is looked at without
 * following links, every file is opened without following them and
 * checked to be the one looked at, and a file or directory whose size or
 * times differ after it was read has changed under us: the archive would
 * hold a tree that never existed, so it is refused.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "srctree.h"

#define SRCTREE_MAGIC		"hk-source 1\n"
#define SRCTREE_DEPTH_MAX	64	/* directories, each an open fd */
#define SRCTREE_FTW_FDS		16

struct entry {
	char		*path;		/* relative */
	int		 dir;
	int		 exec;		/* any execute bit */
	unsigned char	*data;		/* files */
	size_t		 size;
};

struct walk {
	const char	*root;		/* as given, for messages */
	struct entry	*v;
	size_t		 n, cap;
	size_t		 bytes;		/* of contents so far */
	char		*err;
	size_t		 errlen;
};

static int	 fail(struct walk *, const char *, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static struct entry *add(struct walk *, const char *, const char *);
static int	 same_times(const struct stat *, const struct stat *);
static int	 read_fd(struct walk *, int, const char *, struct entry *,
		    const struct stat *);
static int	 read_file(struct walk *, int, const char *, const char *,
		    const struct stat *);
static int	 walk_dir(struct walk *, int, const char *, int);
static int	 walk_entry(struct walk *, int, const char *, const char *,
		    int);
static const char *kind_refused(mode_t);
static int	 entry_cmp(const void *, const void *);
static int	 pack(struct walk *, struct srctree *);
static void	 walk_free(struct walk *);
static int	 valid_rel(const char *, size_t);
static int	 unpack(const unsigned char *, size_t, int, char *, size_t);
static int	 unpack_one(const struct srctree_rec *, int);
static int	 seal_dirs(const char *, const struct stat *, int,
		    struct FTW *);
static int	 chmod_dirs(const char *, const struct stat *, int,
		    struct FTW *);
static int	 remove_one(const char *, const struct stat *, int,
		    struct FTW *);

/* "ROOT/REL: reason"; always -1. */
static int
fail(struct walk *w, const char *rel, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (rel == NULL || *rel == '\0')
		snprintf(w->err, w->errlen, "%s: %s", w->root, why);
	else
		snprintf(w->err, w->errlen, "%s/%s: %s", w->root, rel, why);
	return -1;
}

/* A new entry for dir/name (dir "" is the root); NULL: diagnosed. */
static struct entry *
add(struct walk *w, const char *dir, const char *name)
{
	struct entry *e, *v;
	char *p;

	if (w->n == SRCTREE_ENTRIES_MAX) {
		fail(w, NULL, "more than %d files and directories (the limit "
		    "of a source)", SRCTREE_ENTRIES_MAX);
		return NULL;
	}
	if (asprintf(&p, "%s%s%s", dir, *dir != '\0' ? "/" : "", name) == -1) {
		fail(w, NULL, "%s", strerror(ENOMEM));
		return NULL;
	}
	if (strlen(p) > SRCTREE_PATH_MAX) {
		fail(w, p, "path longer than %d bytes", SRCTREE_PATH_MAX);
		free(p);
		return NULL;
	}
	if (w->n == w->cap) {
		v = reallocarray(w->v, w->cap ? w->cap * 2 : 64, sizeof(*v));
		if (v == NULL) {
			free(p);
			fail(w, NULL, "%s", strerror(ENOMEM));
			return NULL;
		}
		w->v = v;
		w->cap = w->cap ? w->cap * 2 : 64;
	}
	e = &w->v[w->n++];
	memset(e, 0, sizeof(*e));
	e->path = p;
	return e;
}

static int
same_times(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The contents of fd, which must be the file seen as *seen. */
static int
read_fd(struct walk *w, int fd, const char *rel, struct entry *e,
    const struct stat *seen)
{
	struct stat before, after;
	size_t got = 0;
	ssize_t r;

	if (fstat(fd, &before) == -1)
		return fail(w, rel, "%s", strerror(errno));
	if (!S_ISREG(before.st_mode) || !same_times(seen, &before))
		return fail(w, rel, "changed while it was read");
	if ((uint64_t)before.st_size > SRCTREE_BYTES_MAX - w->bytes)
		return fail(w, rel, "the source is larger than %d MiB (the "
		    "limit of a source)", SRCTREE_BYTES_MAX / (1024 * 1024));
	/* One byte more than the size: a file that grew is seen. */
	if ((e->data = malloc((size_t)before.st_size + 1)) == NULL)
		return fail(w, rel, "%s", strerror(ENOMEM));
	while (got < (size_t)before.st_size + 1) {
		r = read(fd, e->data + got, (size_t)before.st_size + 1 - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return fail(w, rel, "%s", strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (fstat(fd, &after) == -1)
		return fail(w, rel, "%s", strerror(errno));
	if (got != (size_t)before.st_size || !same_times(&before, &after))
		return fail(w, rel, "changed while it was read");
	e->size = got;
	e->exec = (before.st_mode & 0111) != 0;
	w->bytes += got;
	return 0;
}

static int
read_file(struct walk *w, int dfd, const char *dir, const char *name,
    const struct stat *seen)
{
	struct entry *e;
	int fd, rc;

	if ((e = add(w, dir, name)) == NULL)
		return -1;
	/* O_NONBLOCK: a fifo swapped in for the file must not hang us. */
	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return fail(w, e->path, "%s", errno == ELOOP ?
		    "changed while it was read" : strerror(errno));
	rc = read_fd(w, fd, e->path, e, seen);
	close(fd);
	return rc;
}

static const char *
kind_refused(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link (a source holds only files and "
		    "directories)";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device (a source holds only files and directories)";
	if (S_ISFIFO(m))
		return "a fifo (a source holds only files and directories)";
	if (S_ISSOCK(m))
		return "a socket (a source holds only files and directories)";
	return "not a file or a directory";
}

static int
walk_entry(struct walk *w, int dfd, const char *dir, const char *name,
    int depth)
{
	struct entry *e;
	struct stat st;
	char rel[SRCTREE_PATH_MAX + 256 + 2];	/* a directory, a name */
	int fd;

	snprintf(rel, sizeof(rel), "%s%s%s", dir, *dir ? "/" : "", name);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return fail(w, rel, "%s", errno == ENOENT ?
		    "changed while it was read" : strerror(errno));
	if (S_ISREG(st.st_mode))
		return read_file(w, dfd, dir, name, &st);
	if (!S_ISDIR(st.st_mode))
		return fail(w, rel, "%s", kind_refused(st.st_mode));
	if (depth == SRCTREE_DEPTH_MAX)
		return fail(w, rel, "deeper than %d directories",
		    SRCTREE_DEPTH_MAX);
	if ((e = add(w, dir, name)) == NULL)
		return -1;
	e->dir = 1;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return fail(w, rel, "%s", strerror(errno));
	return walk_dir(w, fd, e->path, depth + 1);
}

/* The entries of the directory fd (closed here), rel its path. */
static int
walk_dir(struct walk *w, int fd, const char *rel, int depth)
{
	struct stat before, after;
	struct dirent *de;
	char *path;
	DIR *d;
	int rc = 0;

	if (fstat(fd, &before) == -1 || (d = fdopendir(fd)) == NULL) {
		close(fd);
		return fail(w, rel, "%s", strerror(errno));
	}
	/* Entries append to w->v, which may move: keep our own path. */
	if ((path = strdup(rel)) == NULL) {
		closedir(d);
		return fail(w, rel, "%s", strerror(ENOMEM));
	}
	while (rc == 0) {
		errno = 0;
		if ((de = readdir(d)) == NULL) {
			if (errno != 0)
				rc = fail(w, path, "%s", strerror(errno));
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		rc = walk_entry(w, dirfd(d), path, de->d_name, depth);
	}
	if (rc == 0 && (fstat(dirfd(d), &after) == -1 ||
	    !same_times(&before, &after)))
		rc = fail(w, path, "changed while it was read");
	closedir(d);
	free(path);
	return rc;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* The archive of the entries, sorted; see srctree.h. */
static int
pack(struct walk *w, struct srctree *t)
{
	size_t i, len = sizeof(SRCTREE_MAGIC) - 1, o;
	struct entry *e;
	int n;

	if (w->n > 1)	/* an empty tree has no array: qsort wants one */
		qsort(w->v, w->n, sizeof(*w->v), entry_cmp);
	for (i = 0; i < w->n; i++)	/* "f 0444 " SIZE " " PATH NUL */
		len += 7 + 21 + strlen(w->v[i].path) + 1 + w->v[i].size;
	if ((t->data = malloc(len)) == NULL)
		return fail(w, NULL, "%s", strerror(ENOMEM));
	memcpy(t->data, SRCTREE_MAGIC, sizeof(SRCTREE_MAGIC) - 1);
	o = sizeof(SRCTREE_MAGIC) - 1;
	for (i = 0; i < w->n; i++) {
		e = &w->v[i];
		if (e->dir)
			n = snprintf((char *)t->data + o, len - o, "d 0555 %s",
			    e->path);
		else
			n = snprintf((char *)t->data + o, len - o,
			    "f %s %zu %s", e->exec ? "0555" : "0444", e->size,
			    e->path);
		o += (size_t)n + 1;	/* its NUL is the record's */
		if (e->size > 0)
			memcpy(t->data + o, e->data, e->size);
		o += e->size;
	}
	t->len = o;
	if (srctree_hash(t->data, t->len, t->hash) == -1)
		return fail(w, NULL, "unable to start libsodium");
	return 0;
}

static void
walk_free(struct walk *w)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		free(w->v[i].path);
		free(w->v[i].data);
	}
	free(w->v);
}

int
srctree_read(const char *path, struct srctree *t, char *err, size_t errlen)
{
	struct walk w;
	struct stat st;
	const char *base;
	int fd, rc;

	memset(t, 0, sizeof(*t));
	memset(&w, 0, sizeof(w));
	w.root = path;
	w.err = err;
	w.errlen = errlen;
	/* The source itself may be a link: only what is inside may not. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return fail(&w, NULL, "%s", strerror(errno));
	if (fstat(fd, &st) == -1) {
		close(fd);
		return fail(&w, NULL, "%s", strerror(errno));
	}
	if (S_ISDIR(st.st_mode))
		rc = walk_dir(&w, fd, "", 0);
	else if (S_ISREG(st.st_mode)) {
		base = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 :
		    path;
		if (*base == '\0' || strcmp(base, ".") == 0 ||
		    strcmp(base, "..") == 0)
			rc = fail(&w, NULL, "not a file name");
		else if (add(&w, "", base) == NULL)
			rc = -1;
		else
			rc = read_fd(&w, fd, NULL, &w.v[0], &st);
		close(fd);
	} else {
		close(fd);
		rc = fail(&w, NULL, "%s", kind_refused(st.st_mode));
	}
	if (rc == 0)
		rc = pack(&w, t);
	walk_free(&w);
	if (rc == -1)
		srctree_free(t);
	return rc;
}

int
srctree_hash(const void *p, size_t len, char hex[SRCTREE_HASH_LEN + 1])
{
	unsigned char h[crypto_hash_sha256_BYTES];

	if (sodium_init() == -1)
		return -1;
	crypto_hash_sha256(h, p, len);
	sodium_bin2hex(hex, SRCTREE_HASH_LEN + 1, h, sizeof(h));
	return 0;
}

int
srctree_valid_hash(const char *s)
{
	size_t i;

	for (i = 0; i < SRCTREE_HASH_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

void
srctree_free(struct srctree *t)
{
	free(t->data);
	memset(t, 0, sizeof(*t));
}

/* Relative, '/'-separated, no empty, "." or ".." part: stays inside. */
static int
valid_rel(const char *p, size_t len)
{
	const char *s = p, *e;

	if (len == 0 || len > SRCTREE_PATH_MAX)
		return 0;
	for (;;) {
		e = strchr(s, '/');
		if (e == NULL)
			e = p + len;
		if (e == s || (e - s == 1 && s[0] == '.') ||
		    (e - s == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		if (e == p + len)
			return 1;
		s = e + 1;
	}
}

int
srctree_iter_init(struct srctree_iter *it, const unsigned char *p,
    size_t len)
{
	memset(it, 0, sizeof(*it));
	if (len < sizeof(SRCTREE_MAGIC) - 1 ||
	    memcmp(p, SRCTREE_MAGIC, sizeof(SRCTREE_MAGIC) - 1) != 0)
		return -1;
	it->p = p + sizeof(SRCTREE_MAGIC) - 1;
	it->end = p + len;
	return 0;
}

/* The next record; see srctree.h. */
int
srctree_next(struct srctree_iter *it, struct srctree_rec *r)
{
	const unsigned char *p = it->p, *nul;
	const char *path, *d;
	size_t size = 0;

	if (p == it->end)
		return 0;
	if (it->n == SRCTREE_ENTRIES_MAX ||
	    (nul = memchr(p, '\0', it->end - p)) == NULL || nul - p < 8 ||
	    (p[0] != 'd' && p[0] != 'f') || p[1] != ' ' ||
	    (memcmp(p + 2, "0555 ", 5) != 0 && memcmp(p + 2, "0444 ", 5) != 0))
		return -1;
	memset(r, 0, sizeof(*r));
	r->dir = p[0] == 'd';
	r->mode = p[3] == '5' ? 0555 : 0444;
	path = (const char *)p + 7;
	if (!r->dir) {
		/* Plain decimal, as written: no sign, space or leading 0. */
		for (d = path; *d >= '0' && *d <= '9'; d++) {
			if (size > (SIZE_MAX - 9) / 10)
				return -1;
			size = size * 10 + (size_t)(*d - '0');
		}
		if (d == path || *d != ' ' || (path[0] == '0' && d - path > 1) ||
		    size > (size_t)(it->end - nul - 1))
			return -1;
		path = d + 1;
	} else if (r->mode != 0555)
		return -1;
	/* Strictly increasing: no duplicates, parents before children. */
	if (!valid_rel(path, (const char *)nul - path) ||
	    strcmp(path, it->prev) <= 0)
		return -1;
	(void)strlcpy(it->prev, path, sizeof(it->prev));
	r->path = path;
	r->data = nul + 1;
	r->size = size;
	it->p = nul + 1 + size;
	it->n++;
	return 1;
}

/* One record made under dfd; -1 with errno. */
static int
unpack_one(const struct srctree_rec *r, int dfd)
{
	const unsigned char *p, *end = r->data + r->size;
	ssize_t w;
	int fd;

	if (r->dir)
		return mkdirat(dfd, r->path, 0700);
	if ((fd = openat(dfd, r->path, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return -1;
	for (p = r->data; p < end; p += w)
		if ((w = write(fd, p, end - p)) == -1) {
			close(fd);
			return -1;
		}
	if (fchmod(fd, r->mode) == -1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int
unpack(const unsigned char *p, size_t len, int dfd, char *err,
    size_t errlen)
{
	struct srctree_iter it;
	struct srctree_rec r;
	int n;

	if (srctree_iter_init(&it, p, len) == -1) {
		snprintf(err, errlen, "not a source archive");
		return -1;
	}
	for (;;) {
		errno = 0;
		if ((n = srctree_next(&it, &r)) == 0)
			return 0;
		if (n == -1 || unpack_one(&r, dfd) == -1) {
			snprintf(err, errlen, "archive entry %zu: %s",
			    n == -1 ? it.n + 1 : it.n, n == -1 ? "malformed" :
			    strerror(errno));
			return -1;
		}
	}
}

/* Directories made 0700 while written: 0555 once every file is in. */
static int
seal_dirs(const char *path, const struct stat *st, int type,
    struct FTW *f)
{
	(void)f;
	if (type == FTW_DP && S_ISDIR(st->st_mode))
		return chmod(path, 0555);
	return 0;
}

int
srctree_write(const unsigned char *data, size_t len, const char *dir,
    char *err, size_t errlen)
{
	struct srctree back;
	char tmp[PATH_MAX], hash[SRCTREE_HASH_LEN + 1];
	const char *slash = strrchr(dir, '/');
	int dfd, rc = -1;

	if (slash == NULL || srctree_hash(data, len, hash) == -1 ||
	    snprintf(tmp, sizeof(tmp), "%.*s/.tmp.%s.%ld", (int)(slash - dir),
	    dir, slash + 1, (long)getpid()) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: bad path or no libsodium", dir);
		return -1;
	}
	(void)srctree_remove(tmp);	/* an earlier try of ours */
	if (mkdir(tmp, 0700) == -1 || (dfd = open(tmp, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	rc = unpack(data, len, dfd, err, errlen);
	close(dfd);
	if (rc == 0 && nftw(tmp, seal_dirs, SRCTREE_FTW_FDS,
	    FTW_PHYS | FTW_DEPTH) != 0) {
		snprintf(err, errlen, "%s: chmod: %s", tmp, strerror(errno));
		rc = -1;
	}
	/* What the service will see is what was applied, or nothing. */
	if (rc == 0 && (rc = srctree_read(tmp, &back, err, errlen)) == 0) {
		if (strcmp(back.hash, hash) != 0) {
			snprintf(err, errlen, "%s: written tree has hash %s, "
			    "not %s", tmp, back.hash, hash);
			rc = -1;
		}
		srctree_free(&back);
	}
	if (rc == 0 && rename(tmp, dir) == -1) {
		snprintf(err, errlen, "rename %s: %s", dir, strerror(errno));
		rc = -1;
	}
	if (rc == -1)
		(void)srctree_remove(tmp);
	return rc;
}

static int
chmod_dirs(const char *path, const struct stat *st, int type,
    struct FTW *f)
{
	(void)f;
	if (type == FTW_D && S_ISDIR(st->st_mode))
		(void)chmod(path, 0700);
	return 0;
}

static int
remove_one(const char *path, const struct stat *st, int type,
    struct FTW *f)
{
	(void)st;
	(void)f;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) == -1 ? -1 : 0;
}

int
srctree_remove(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	/* Pre-order: each directory writable before its entries go. */
	if (nftw(path, chmod_dirs, SRCTREE_FTW_FDS, FTW_PHYS) != 0 ||
	    nftw(path, remove_one, SRCTREE_FTW_FDS, FTW_PHYS | FTW_DEPTH) != 0)
		return -1;
	return 0;
}
