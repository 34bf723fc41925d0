/*
 * srctar.c - a srctree archive as a ustar archive (srctar.h).
 *
 * The output is built in one buffer, grown as records come: a source is
 * at most SRCTREE_BYTES_MAX of contents and SRCTREE_ENTRIES_MAX entries,
 * so the whole is bounded, and the engine takes it as one request body.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srctar.h"
#include "srctree.h"

#define NAME_LEN	100
#define PREFIX_LEN	155
#define PAX_NAME	"././@PaxHeader"

struct tarbuf {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
};

static int	grow(struct tarbuf *, size_t);
static void	octal(unsigned char *, size_t, unsigned long long);
static int	split_ustar(const char *, size_t *);
static int	header(struct tarbuf *, const char *, char, unsigned int,
		    size_t);
static int	header_owned(struct tarbuf *, const char *, char,
		    unsigned int, size_t, unsigned int, unsigned int);
static int	data(struct tarbuf *, const void *, size_t);
static int	pax_path(struct tarbuf *, const char *);
static int	entry(struct tarbuf *, const char *, char, unsigned int,
		    const void *, size_t);

/* Room for n more bytes, zeroed. */
static int
grow(struct tarbuf *t, size_t n)
{
	unsigned char *np;
	size_t cap;

	if (t->cap - t->len >= n)
		return 0;
	for (cap = t->cap ? t->cap : 64 * SRCTAR_BLOCK; cap - t->len < n;
	    cap *= 2)
		;
	if ((np = realloc(t->p, cap)) == NULL)
		return -1;
	memset(np + t->cap, 0, cap - t->cap);
	t->p = np;
	t->cap = cap;
	return 0;
}

/* v in octal, zero-padded, in a field of len bytes ending in NUL. */
static void
octal(unsigned char *f, size_t len, unsigned long long v)
{
	size_t i = len - 1;

	f[i] = '\0';
	while (i-- > 0) {
		f[i] = '0' + (v & 7);
		v >>= 3;
	}
}

/*
 * Where path is cut into ustar's prefix and name (at a '/'): 0 with *cut
 * the length of the prefix (0: none), -1 when it does not fit.
 */
static int
split_ustar(const char *path, size_t *cut)
{
	size_t len = strlen(path), i;

	if (len <= NAME_LEN) {
		*cut = 0;
		return 0;
	}
	for (i = len < PREFIX_LEN ? len : PREFIX_LEN; i > 0; i--)
		if (path[i] == '/' && len - i - 1 <= NAME_LEN && len - i - 1 >
		    0) {
			*cut = i;
			return 0;
		}
	return -1;
}

/* One header block of root's. */
static int
header(struct tarbuf *t, const char *path, char type, unsigned int mode,
    size_t size)
{
	return header_owned(t, path, type, mode, size, 0, 0);
}

/* One header block; a path that does not fit is cut short (pax has it). */
static int
header_owned(struct tarbuf *t, const char *path, char type,
    unsigned int mode, size_t size, unsigned int uid, unsigned int gid)
{
	unsigned char *h;
	unsigned int sum = 0;
	size_t cut, i;

	if (grow(t, SRCTAR_BLOCK) == -1)
		return -1;
	h = t->p + t->len;
	if (split_ustar(path, &cut) == 0 && cut > 0) {
		memcpy(h + 345, path, cut);
		memcpy(h, path + cut + 1, strlen(path) - cut - 1);
	} else
		memcpy(h, path, strnlen(path, NAME_LEN));
	octal(h + 100, 8, mode);
	octal(h + 108, 8, uid);
	octal(h + 116, 8, gid);
	octal(h + 124, 12, size);
	octal(h + 136, 12, 0);
	h[156] = type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	if (uid == 0)
		memcpy(h + 265, "root", 4);
	if (gid == 0)
		memcpy(h + 297, "root", 4);
	memset(h + 148, ' ', 8);
	for (i = 0; i < SRCTAR_BLOCK; i++)
		sum += h[i];
	octal(h + 148, 7, sum);
	h[155] = ' ';
	t->len += SRCTAR_BLOCK;
	return 0;
}

/* Contents, padded to a whole block. */
static int
data(struct tarbuf *t, const void *p, size_t len)
{
	size_t padded = (len + SRCTAR_BLOCK - 1) / SRCTAR_BLOCK * SRCTAR_BLOCK;

	if (grow(t, padded) == -1)
		return -1;
	if (len > 0)
		memcpy(t->p + t->len, p, len);
	t->len += padded;
	return 0;
}

/* A pax extended header whose one record is "LEN path=PATH\n". */
static int
pax_path(struct tarbuf *t, const char *path)
{
	char rec[SRCTREE_PATH_MAX + SRCTAR_TOP_MAX + 32];
	size_t body = strlen(" path=\n") + strlen(path), len, digits;
	int n;

	/* LEN counts its own digits: found by trying, at most twice */
	for (len = body + 1; (digits = (size_t)snprintf(NULL, 0, "%zu", len)) !=
	    len - body; len = body + digits)
		;
	n = snprintf(rec, sizeof(rec), "%zu path=%s\n", len, path);
	if (n < 0 || (size_t)n != len || (size_t)n >= sizeof(rec)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (header(t, PAX_NAME, 'x', 0644, len) == -1)
		return -1;
	return data(t, rec, len);
}

static int
entry(struct tarbuf *t, const char *path, char type, unsigned int mode,
    const void *p, size_t size)
{
	size_t cut;

	if (split_ustar(path, &cut) == -1 && pax_path(t, path) == -1)
		return -1;
	if (header(t, path, type, mode, size) == -1)
		return -1;
	return type == '0' ? data(t, p, size) : 0;
}

int
srctar_build(const unsigned char *arch, size_t alen, const char *top,
    unsigned char **out, size_t *outlen, char *err, size_t errlen)
{
	char path[SRCTAR_TOP_MAX + 1 + SRCTREE_PATH_MAX + 2];
	struct tarbuf t = { NULL, 0, 0 };
	struct srctree_iter it;
	struct srctree_rec r;
	int n;

	if (top[0] == '\0' || strlen(top) > SRCTAR_TOP_MAX ||
	    strchr(top, '/') != NULL || strcmp(top, ".") == 0 ||
	    strcmp(top, "..") == 0) {
		snprintf(err, errlen, "\"%s\": not a directory's name", top);
		return -1;
	}
	if (srctree_iter_init(&it, arch, alen) == -1) {
		snprintf(err, errlen, "not a source archive");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/", top);
	if (entry(&t, path, '5', 0555, NULL, 0) == -1)
		goto fail;
	while ((n = srctree_next(&it, &r)) == 1) {
		snprintf(path, sizeof(path), "%s/%s%s", top, r.path,
		    r.dir ? "/" : "");
		if (entry(&t, path, r.dir ? '5' : '0', r.mode, r.data,
		    r.size) == -1)
			goto fail;
	}
	if (n == -1) {
		snprintf(err, errlen, "a record of the source archive is "
		    "not one");
		free(t.p);
		return -1;
	}
	if (grow(&t, 2 * SRCTAR_BLOCK) == -1)
		goto fail;
	t.len += 2 * SRCTAR_BLOCK;
	*out = t.p;
	*outlen = t.len;
	return 0;
fail:
	snprintf(err, errlen, "%s", strerror(errno));
	free(t.p);
	return -1;
}

/*
 * Plain files (and directories, path ending in '/'), each in one ustar
 * header: the buffer is sized first and allocated once, so that the
 * contents of a secret are never left behind in memory a realloc freed
 * (the caller wipes *out after its use: explicit_bzero).
 */
int
srctar_files(const struct srctar_file *f, size_t n, unsigned char **out,
    size_t *outlen)
{
	struct tarbuf t = { NULL, 0, 0 };
	size_t i, size = 2 * SRCTAR_BLOCK;
	int dir;

	for (i = 0; i < n; i++) {
		if (f[i].path[0] == '\0' || strlen(f[i].path) > NAME_LEN ||
		    f[i].len > SRCTAR_FILE_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		size += SRCTAR_BLOCK + (f[i].len + SRCTAR_BLOCK - 1) /
		    SRCTAR_BLOCK * SRCTAR_BLOCK;
	}
	if ((t.p = calloc(1, size)) == NULL)
		return -1;
	t.cap = size;
	for (i = 0; i < n; i++) {
		dir = f[i].path[strlen(f[i].path) - 1] == '/';
		/* cannot fail: the buffer has room for all of it */
		(void)header_owned(&t, f[i].path, dir ? '5' : '0', f[i].mode,
		    dir ? 0 : f[i].len, f[i].uid, f[i].gid);
		if (!dir)
			(void)data(&t, f[i].data, f[i].len);
	}
	t.len += 2 * SRCTAR_BLOCK;
	*out = t.p;
	*outlen = t.len;
	return 0;
}
