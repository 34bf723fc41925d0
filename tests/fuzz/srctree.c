/*
 * srctree.c - libFuzzer target: the source archive's decoder
 * (srctree_iter_init(), srctree_next()) on any bytes, in memory, with
 * its promises checked: every record inside the bytes, its path
 * relative, without "", "." or ".." parts, and greater than the last.
 * An archive it reads to the end, if small, is also written out by
 * srctree_write() under a temporary directory, which must then hold a
 * tree of the same hash, and is removed.  Every archive it reads to the
 * end is also made a tar (srctar_build()), which must succeed: whole
 * blocks, each header's checksum right, ending in two zero blocks.
 *
 *	make build/fuzz/srctree && build/fuzz/srctree -max_total_time=60
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srctar.h"
#include "srctree.h"

#define WRITE_MAX_RECORDS	32

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	top[64];

static void
cleanup(void)
{
	(void)srctree_remove(top);
}

/* The tar of an archive srctree_next() read to its end. */
static void
check_tar(const uint8_t *data, size_t len)
{
	unsigned char *tar, zero[2 * SRCTAR_BLOCK] = { 0 };
	char err[256], sum[8];
	unsigned int want;
	size_t tlen, off, i, size = 0;

	if (srctar_build(data, len, "app", &tar, &tlen, err, sizeof(err)) ==
	    -1 || tlen % SRCTAR_BLOCK != 0 || tlen < 3 * SRCTAR_BLOCK ||
	    memcmp(tar + tlen - sizeof(zero), zero, sizeof(zero)) != 0)
		__builtin_trap();
	for (off = 0; off < tlen - sizeof(zero); off += SRCTAR_BLOCK +
	    (size + SRCTAR_BLOCK - 1) / SRCTAR_BLOCK * SRCTAR_BLOCK) {
		for (want = 0, i = 0; i < SRCTAR_BLOCK; i++)
			want += i >= 148 && i < 156 ? ' ' : tar[off + i];
		memcpy(sum, tar + off + 148, 7);
		sum[7] = '\0';
		if (strtoul(sum, NULL, 8) != want)
			__builtin_trap();
		size = strtoul((const char *)tar + off + 124, NULL, 8);
		if (size > tlen - off)
			__builtin_trap();
	}
	if (off != tlen - sizeof(zero))
		__builtin_trap();
	free(tar);
}

static void
check_path(const char *p, const char *prev)
{
	const char *s;
	size_t len = strlen(p);

	if (len == 0 || len > SRCTREE_PATH_MAX || p[0] == '/' ||
	    p[len - 1] == '/' || strstr(p, "//") != NULL ||
	    strcmp(p, prev) <= 0)
		__builtin_trap();
	for (s = p; s != NULL; s = strchr(s, '/')) {
		if (*s == '/')
			s++;
		if ((s[0] == '.' && (s[1] == '/' || s[1] == '\0')) ||
		    (s[0] == '.' && s[1] == '.' && (s[2] == '/' ||
		    s[2] == '\0')))
			__builtin_trap();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char prev[SRCTREE_PATH_MAX + 1] = "", dir[128], err[SRCTREE_ERR_LEN];
	char want[SRCTREE_HASH_LEN + 1];
	struct srctree_iter it;
	struct srctree_rec r;
	struct srctree back;
	size_t n = 0;
	int rc;

	if (top[0] == '\0') {
		strlcpy(top, "/tmp/hk-fuzz-srctree.XXXXXX", sizeof(top));
		if (mkdtemp(top) == NULL)
			__builtin_trap();
		atexit(cleanup);
	}
	if (srctree_iter_init(&it, data, len) == -1)
		return 0;
	while ((rc = srctree_next(&it, &r)) == 1) {
		if (r.path < (const char *)data ||
		    r.path >= (const char *)data + len ||
		    r.data < data || r.size > (size_t)(data + len - r.data) ||
		    (r.mode != 0555 && r.mode != 0444) ||
		    (r.dir && (r.mode != 0555 || r.size != 0)))
			__builtin_trap();
		check_path(r.path, prev);
		strlcpy(prev, r.path, sizeof(prev));
		n++;
	}
	if (rc == 0)
		check_tar(data, len);
	if (rc == -1 || n > WRITE_MAX_RECORDS)
		return 0;
	if (n > SRCTREE_ENTRIES_MAX)
		__builtin_trap();
	snprintf(dir, sizeof(dir), "%s/t", top);
	if (srctree_write(data, len, dir, err, sizeof(err)) == 0) {
		if (srctree_hash(data, len, want) == -1 ||
		    srctree_read(dir, &back, err, sizeof(err)) == -1 ||
		    strcmp(back.hash, want) != 0)
			__builtin_trap();
		srctree_free(&back);
	} else if (access(dir, F_OK) == 0 || errno != ENOENT)
		__builtin_trap();	/* a failed write leaves nothing */
	if (srctree_remove(dir) == -1)
		__builtin_trap();
	return 0;
}
