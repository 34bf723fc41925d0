/*
 * srctree.c - unit tests of lib/srctree: the archive and hash of a known
 * tree (the encoding hk.toml(5) documents, hashed by Python's hashlib to
 * get the expected values), independence of the order entries were made
 * in, modes, refusals, and the write-out's modes and check.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srctree.h"
#include "tap.h"

#define KNOWN_HASH \
	"18578b8084df6bbf76b8dc971f0bfd52f9335f4284eb7bf8990f4bdb31738bbf"
#define ONE_FILE_HASH \
	"8760bdf39afeb008dc4af5052b7eed876992c4e2e8d6010a13992137f9078543"

static const char known[] = "hk-source 1\n"
	"f 0444 6 a.txt\0hello\n"
	"d 0555 bin\0"
	"f 0555 10 bin/run\0#!/bin/sh\n"
	"d 0555 empty\0";

static void	put(const char *, const char *, const char *, mode_t);
static void	decode_table(void);
static void	make_tree(const char *, int);

static void
put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode) == -1 || close(fd) == -1)
		perror(p);
}

/* The known tree, its entries made in one order or the reverse. */
static void
make_tree(const char *dir, int reverse)
{
	char p[4096];

	mkdir(dir, 0755);
	if (!reverse) {
		put(dir, "a.txt", "hello\n", 0644);
		snprintf(p, sizeof(p), "%s/bin", dir);
		mkdir(p, 0755);
		put(dir, "bin/run", "#!/bin/sh\n", 0700);
		snprintf(p, sizeof(p), "%s/empty", dir);
		mkdir(p, 0700);
	} else {
		snprintf(p, sizeof(p), "%s/empty", dir);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/bin", dir);
		mkdir(p, 0700);
		put(dir, "bin/run", "#!/bin/sh\n", 0755);
		put(dir, "a.txt", "hello\n", 0600);
	}
}

/* The decoder alone: records as srctree_read() writes them, and not. */
static const struct {
	const char	*bytes;
	size_t		 len;
	int		 records;	/* -1: refused at some record */
} decodes[] = {
#define A(s, n)	{ s, sizeof(s) - 1, n }
	A("hk-source 1\n", 0),
	A("hk-source 1\nd 0555 a\0f 0444 2 a/b\0hi", 2),
	A("hk-source 1\nf 0555 0 x\0", 1),
	A("hk-source 1\nf 0444 +1 x\0y", -1),	/* sign */
	A("hk-source 1\nf 0444  1 x\0y", -1),	/* two spaces */
	A("hk-source 1\nf 0444 01 x\0y", -1),	/* leading 0 */
	A("hk-source 1\nf 0444 -0 x\0", -1),
	A("hk-source 1\nf 0444 2 x\0y", -1),	/* short */
	A("hk-source 1\nf 0444 99999999999999999999999 x\0", -1),
	A("hk-source 1\nd 0444 a\0", -1),		/* a directory 0444 */
	A("hk-source 1\nf 0644 0 x\0", -1),
	A("hk-source 1\nf 0444 0 b\0f 0444 0 a\0", -1),	/* order */
	A("hk-source 1\nf 0444 0 a\0f 0444 0 a\0", -1),	/* twice */
	A("hk-source 1\nf 0444 0 a/./b\0", -1),
	A("hk-source 1\nf 0444 0 /a\0", -1),
	A("hk-source 1\nf 0444 0 a/\0", -1),
	A("hk-source 1\nf 0444 0 a", -1),		/* no NUL */
	A("hk-source 2\n", -2),			/* not an archive */
#undef A
};
#define NDECODE	(sizeof(decodes) / sizeof(decodes[0]))

static void
decode_table(void)
{
	struct srctree_iter it;
	struct srctree_rec r;
	size_t i;
	int n = 0, got;

	for (i = 0; i < NDECODE; i++) {
		got = 0;
		if (srctree_iter_init(&it, (const unsigned char *)
		    decodes[i].bytes, decodes[i].len) == -1)
			got = -2;
		else
			while ((n = srctree_next(&it, &r)) == 1)
				got++;
		if (got >= 0 && n == -1)
			got = -1;
		ok(got == decodes[i].records, "decode %zu: %d records, want %d",
		    i, got, decodes[i].records);
	}
}

int
main(void)
{
	char top[] = "/tmp/hk-srctree.XXXXXX", a[256], b[256], c[512], d[1024];
	char err[SRCTREE_ERR_LEN] = "", h[SRCTREE_HASH_LEN + 1];
	struct srctree t, u;
	struct stat st;

	plan(20 + NDECODE);
	if (mkdtemp(top) == NULL)
		return 1;
	snprintf(a, sizeof(a), "%s/a", top);
	snprintf(b, sizeof(b), "%s/b", top);
	make_tree(a, 0);
	make_tree(b, 1);

	ok(srctree_read(a, &t, err, sizeof(err)) == 0, "read a tree: %s",
	    err);
	ok(t.len == sizeof(known) - 1 && memcmp(t.data, known, t.len) == 0,
	    "its archive is the documented encoding");
	is(t.hash, KNOWN_HASH, "its hash is the SHA-256 of the archive");
	ok(srctree_read(b, &u, err, sizeof(err)) == 0, "the same tree made "
	    "in another order");
	is(u.hash, KNOWN_HASH, "has the same hash (order and non-exec mode "
	    "bits do not matter)");
	srctree_free(&u);

	snprintf(c, sizeof(c), "%s/a.txt", b);
	chmod(c, 0755);
	ok(srctree_read(b, &u, err, sizeof(err)) == 0 &&
	    strcmp(u.hash, KNOWN_HASH) != 0, "an execute bit changes it");
	srctree_free(&u);
	chmod(c, 0644);
	put(b, "a.txt", "hello!\n", 0644);
	ok(srctree_read(b, &u, err, sizeof(err)) == 0 &&
	    strcmp(u.hash, KNOWN_HASH) != 0, "contents change it");
	srctree_free(&u);

	snprintf(c, sizeof(c), "%s/a.txt", a);
	ok(srctree_read(c, &u, err, sizeof(err)) == 0, "read a single file");
	is(u.hash, ONE_FILE_HASH, "a file is an archive of that file");
	srctree_free(&u);

	/* Written out: modes, contents, the same hash read back. */
	snprintf(c, sizeof(c), "%s/out", top);
	ok(srctree_write(t.data, t.len, c, err, sizeof(err)) == 0,
	    "written out: %s", err);
	ok(srctree_read(c, &u, err, sizeof(err)) == 0 &&
	    strcmp(u.hash, KNOWN_HASH) == 0, "what was written has the hash");
	srctree_free(&u);
	ok(stat(c, &st) == 0 && (st.st_mode & 07777) == 0555, "root 0555");
	snprintf(d, sizeof(d), "%s/a.txt", c);
	ok(stat(d, &st) == 0 && (st.st_mode & 07777) == 0444, "file 0444");
	snprintf(d, sizeof(d), "%s/bin/run", c);
	ok(stat(d, &st) == 0 && (st.st_mode & 07777) == 0555,
	    "executable 0555");
	ok(srctree_write(t.data, t.len, c, err, sizeof(err)) == -1,
	    "not over an existing tree");
	ok(srctree_remove(c) == 0 && stat(c, &st) == -1,
	    "srctree_remove removes the read-only tree");

	/* A malformed archive (a path leaving the tree) writes nothing. */
	static const char bad[] = "hk-source 1\nf 0444 1 ../x\0x";
	ok(srctree_write((const unsigned char *)bad, sizeof(bad) - 1, c, err,
	    sizeof(err)) == -1 && stat(c, &st) == -1,
	    "an archive naming ../x is refused: %s", err);
	srctree_hash(bad, sizeof(bad) - 1, h);
	ok(srctree_valid_hash(h) && !srctree_valid_hash("ABC"),
	    "srctree_valid_hash");

	decode_table();

	snprintf(c, sizeof(c), "%s/link", a);
	symlink("a.txt", c);
	ok(srctree_read(a, &u, err, sizeof(err)) == -1 &&
	    strstr(err, "/link: a symbolic link") != NULL,
	    "a link is refused: %s", err);
	unlink(c);
	ok(srctree_read("/dev/null", &u, err, sizeof(err)) == -1 &&
	    strcmp(err, "/dev/null: a device (a source holds only files and "
	    "directories)") == 0, "a device is refused: %s", err);
	srctree_free(&t);
	snprintf(c, sizeof(c), "rm -rf %s", top);
	if (system(c) != 0)
		return 1;
	return tap_failed != 0;
}
