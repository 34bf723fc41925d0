/*
 * srctree.h - a service's source (hk.toml(5) "source"): a file or a
 * directory tree read once into one canonical byte string, the archive,
 * whose SHA-256 is the code hash.  The archive is what the store keeps
 * (the code table) and what hk-scale writes out again, read-only, for
 * the service to run from.
 *
 * The archive, which hk.toml(5) documents as the hash's input:
 *
 *	"hk-source 1\n"
 *	then one record per entry, in bytewise order of its path:
 *	    "d 0555 PATH\0"			a directory (not the root)
 *	    "f MODE SIZE PATH\0" CONTENTS	a regular file
 *
 * PATH is relative to the source, '/'-separated, without "." or "..";
 * MODE is 0555 for a file with any execute bit, else 0444; SIZE is the
 * decimal number of bytes of CONTENTS.  A single file is an archive of
 * that one file under its base name.
 */
#ifndef HK_SRCTREE_H
#define HK_SRCTREE_H

#include <stddef.h>

#define SRCTREE_HASH_LEN	64			/* hex digits */
#define SRCTREE_SHORT_LEN	12			/* hk status */
#define SRCTREE_BYTES_MAX	(16 * 1024 * 1024)	/* of contents */
#define SRCTREE_ENTRIES_MAX	4096
#define SRCTREE_PATH_MAX	1024			/* relative path */
/*
 * "ROOT/REL: reason" whole: ROOT a path (PATH_MAX), REL an entry's path
 * (at most SRCTREE_PATH_MAX for its directory, a name of 255 after it:
 * a path found too long is shown whole too), and the reason.
 */
#define SRCTREE_ERR_LEN		(4096 + SRCTREE_PATH_MAX + 256 + 512)

struct srctree {
	unsigned char	*data;		/* the archive */
	size_t		 len;
	char		 hash[SRCTREE_HASH_LEN + 1];
};

/*
 * Reads a file or a directory into an archive.  -1 with "PATH: reason"
 * in err when it holds anything but directories and regular files, is
 * over a limit, cannot be read, or changes while it is read.
 */
int	srctree_read(const char *, struct srctree *, char *, size_t);
/*
 * Writes an archive out under dir, which must not exist: the tree made
 * in a temporary directory beside it with the archive's modes, read
 * back and compared by hash, then renamed into place.  -1 with a reason.
 */
int	srctree_write(const unsigned char *, size_t, const char *, char *,
	    size_t);
/* Removes what srctree_write made (its modes forbid a plain rm). */
int	srctree_remove(const char *);

/*
 * The archive's decoder, a pure function over its bytes (srctree_write()
 * uses it; tests/fuzz/srctree.c runs it alone).  srctree_iter_init() is
 * -1 for bytes that do not start with the magic line; srctree_next()
 * then gives one record at a time: 1 with *r filled in (path and data
 * point into the archive), 0 at its end, -1 for a record that is not
 * exactly as srctree_read() writes it (fields, modes, a size in plain
 * decimal that the bytes left hold, a relative path without "", "." or
 * ".." parts, paths in strictly increasing order) or one past
 * SRCTREE_ENTRIES_MAX.  Whether each parent is a directory of the
 * archive is for the writer to find.
 */
struct srctree_rec {
	int			 dir;
	unsigned int		 mode;		/* 0555 or 0444 */
	const char		*path;		/* NUL-terminated */
	const unsigned char	*data;		/* files */
	size_t			 size;
};

struct srctree_iter {
	const unsigned char	*p, *end;
	size_t			 n;		/* records so far */
	char			 prev[SRCTREE_PATH_MAX + 1];
};

int	srctree_iter_init(struct srctree_iter *, const unsigned char *,
	    size_t);
int	srctree_next(struct srctree_iter *, struct srctree_rec *);
/* The hex SHA-256 of bytes: 0, or -1 if the library cannot start. */
int	srctree_hash(const void *, size_t, char [SRCTREE_HASH_LEN + 1]);
/* 64 lower-case hex digits. */
int	srctree_valid_hash(const char *);
void	srctree_free(struct srctree *);

#endif
