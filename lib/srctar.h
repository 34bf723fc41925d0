/*
 * srctar.h - a service's source archive (srctree.h) as a tar archive, for
 * a container engine's PUT /containers/ID/archive: the code of a service
 * placed on another node goes there through the engine's API, not
 * through a path of this host (hk-scale's container backend).
 *
 * The tree is put under one top directory (TOP/, then TOP/PATH for each
 * record), every entry owned by uid 0, gid 0, with the archive's modes
 * (directories 0555, files 0444 or 0555) and mtime 0: the same source
 * gives the same bytes.  Headers are POSIX ustar; a path that does not
 * fit ustar's name and prefix fields gets a pax extended header ("x")
 * holding it first.  The archive ends with two zero blocks.
 *
 * Only a writer: its input is an archive srctree_next() accepts (the
 * decoder the fuzz harness runs), so it trusts no byte it is given.
 */
#ifndef HK_SRCTAR_H
#define HK_SRCTAR_H

#include <stddef.h>

#define SRCTAR_BLOCK	512
#define SRCTAR_TOP_MAX	64	/* the top directory's name */

/*
 * The tar of a srctree archive under top (a name: no '/', not "." or
 * ".."), in *out (malloc'd, *outlen bytes).  -1 with a reason for an
 * archive srctree_next() refuses, a bad top, or no memory.
 */
int	srctar_build(const unsigned char *, size_t, const char *,
	    unsigned char **, size_t *, char *, size_t);

/*
 * Files given whole, for what is not a source: hk-hold and a
 * container's secrets (hk-scale's held start).  Paths of at most 100
 * bytes; a directory's ends in '/'.
 */
#define SRCTAR_FILE_MAX	(16 * 1024 * 1024)

struct srctar_file {
	const char	*path;
	unsigned int	 mode;
	unsigned int	 uid;
	unsigned int	 gid;
	const void	*data;
	size_t		 len;
};

int	srctar_files(const struct srctar_file *, size_t, unsigned char **,
	    size_t *);

#endif
