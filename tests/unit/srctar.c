/*
 * srctar.c - unit tests of lib/srctar: a known source archive as tar,
 * read back by the system's tar(1) (GNU tar: names, modes, owners,
 * contents, a path long enough to need a pax header), the header fields
 * and checksum of the first block, the same bytes twice, and refusals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srctar.h"
#include "srctree.h"
#include "tap.h"

static const char known[] = "hk-source 1\n"
	"f 0444 6 a.txt\0hello\n"
	"d 0555 bin\0"
	"f 0555 10 bin/run\0#!/bin/sh\n"
	"d 0555 empty\0";

static char	*run(const char *);
static void	write_file(const char *, const void *, size_t);

/* What a shell command printed (at most 64 KiB), or "". */
static char *
run(const char *cmd)
{
	static char out[65536];
	size_t n;
	FILE *p;

	out[0] = '\0';
	if ((p = popen(cmd, "r")) == NULL)
		return out;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

static void
write_file(const char *path, const void *p, size_t len)
{
	FILE *f;

	if ((f = fopen(path, "w")) == NULL || fwrite(p, 1, len, f) != len ||
	    fclose(f) != 0)
		perror(path);
}

/* A file whose path needs a pax header: 3 directories of 90 bytes. */
static size_t
long_archive(char *buf, size_t size, char *path, size_t psize)
{
	char d[91];
	size_t n;

	memset(d, 'd', 90);
	d[90] = '\0';
	n = snprintf(buf, size, "hk-source 1\n");
	n += snprintf(buf + n, size - n, "d 0555 %s", d) + 1;
	n += snprintf(buf + n, size - n, "d 0555 %s/%s", d, d) + 1;
	n += snprintf(buf + n, size - n, "d 0555 %s/%s/%s", d, d, d) + 1;
	snprintf(path, psize, "%s/%s/%s/f", d, d, d);
	n += snprintf(buf + n, size - n, "f 0444 2 %s", path) + 1;
	memcpy(buf + n, "ok", 2);
	return n + 2;
}

int
main(void)
{
	char dir[] = "/tmp/hk-srctar.XXXXXX", cmd[8192], err[256], file[512];
	char lbuf[4096], lpath[512], want[1024];
	unsigned char *tar, *tar2, *h;
	size_t len, len2, llen, i;
	unsigned int sum = 0;

	plan(19);
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(file, sizeof(file), "%s/t.tar", dir);

	ok(srctar_build((const unsigned char *)known, sizeof(known) - 1,
	    "app", &tar, &len, err, sizeof(err)) == 0, "known: built (%s)",
	    err);
	ok(len % SRCTAR_BLOCK == 0, "a whole number of blocks");
	h = tar;
	is((char *)h, "app/", "the top directory first");
	ok(memcmp(h + 257, "ustar\0" "00", 8) == 0, "ustar magic");
	ok(h[156] == '5', "a directory");
	for (i = 0; i < SRCTAR_BLOCK; i++)
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	ok(strtoul((char *)h + 148, NULL, 8) == sum, "its checksum");
	ok(srctar_build((const unsigned char *)known, sizeof(known) - 1,
	    "app", &tar2, &len2, err, sizeof(err)) == 0 && len2 == len &&
	    memcmp(tar, tar2, len) == 0, "the same bytes twice");
	free(tar2);

	write_file(file, tar, len);
	free(tar);
	snprintf(cmd, sizeof(cmd), "tar -tvf %s --numeric-owner | "
	    "awk '{print $1, $2, $3, $6}'", file);
	is(run(cmd),
	    "dr-xr-xr-x 0/0 0 app/\n"
	    "-r--r--r-- 0/0 6 app/a.txt\n"
	    "dr-xr-xr-x 0/0 0 app/bin/\n"
	    "-r-xr-xr-x 0/0 10 app/bin/run\n"
	    "dr-xr-xr-x 0/0 0 app/empty/\n", "tar(1) lists it");
	snprintf(cmd, sizeof(cmd), "tar -xOf %s app/a.txt app/bin/run", file);
	is(run(cmd), "hello\n#!/bin/sh\n", "tar(1) extracts the contents");

	llen = long_archive(lbuf, sizeof(lbuf), lpath, sizeof(lpath));
	ok(srctar_build((unsigned char *)lbuf, llen, "app", &tar, &len, err,
	    sizeof(err)) == 0, "a long path: built (%s)", err);
	write_file(file, tar, len);
	free(tar);
	snprintf(cmd, sizeof(cmd), "tar -xOf %s app/%s", file, lpath);
	is(run(cmd), "ok", "tar(1) reads a path of %zu bytes (pax)",
	    strlen(lpath) + 4);
	snprintf(cmd, sizeof(cmd), "tar -tf %s | tail -n 1", file);
	snprintf(want, sizeof(want), "app/%s\n", lpath);
	is(run(cmd), want, "listed whole");

	ok(srctar_build((const unsigned char *)"hk-source 1\n", 12, "app",
	    &tar, &len, err, sizeof(err)) == 0 && len == 3 * SRCTAR_BLOCK,
	    "an empty source: the top directory and the end");
	free(tar);
	ok(srctar_build((const unsigned char *)"nope", 4, "app", &tar, &len,
	    err, sizeof(err)) == -1, "not an archive: refused (%s)", err);
	ok(srctar_build((const unsigned char *)"hk-source 1\nf 0444 9 x\0y",
	    24, "app", &tar, &len, err, sizeof(err)) == -1,
	    "a short record: refused (%s)", err);
	ok(srctar_build((const unsigned char *)known, sizeof(known) - 1,
	    "a/b", &tar, &len, err, sizeof(err)) == -1,
	    "a top with '/': refused (%s)", err);

	{
		struct srctar_file f[3] = {
			{ ".hk/", 0555, 0, 0, NULL, 0 },
			{ "TOKEN", 0400, 65534, 65533, "s3cret", 6 },
			{ ".hk-ready", 0400, 65534, 65533, NULL, 0 },
		};

		ok(srctar_files(f, 3, &tar, &len) == 0 &&
		    len == 6 * SRCTAR_BLOCK, "files: built, sized exactly");
		write_file(file, tar, len);
		free(tar);
		snprintf(cmd, sizeof(cmd), "tar -tvf %s --numeric-owner | "
		    "awk '{print $1, $2, $3, $6}'", file);
		is(run(cmd),
		    "dr-xr-xr-x 0/0 0 .hk/\n"
		    "-r-------- 65534/65533 6 TOKEN\n"
		    "-r-------- 65534/65533 0 .hk-ready\n",
		    "tar(1) lists them, their owners, in order");
		f[1].path = "a-name-over-one-hundred-bytes-xxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
		ok(srctar_files(f, 3, &tar, &len) == -1,
		    "files: a path over 100 bytes refused");
	}

	unlink(file);
	rmdir(dir);
	return done();
}
