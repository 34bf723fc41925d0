/*
 * privfile.c - opens a file that must be its owner's alone (privfile.h).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "privfile.h"

/*
 * The descriptor, with the file's status in *st; or -1 with the reason in
 * err, and errno ENOENT when the file does not exist (for callers that
 * make it then).
 */
int
privfile_open(const char *path, struct stat *st, char *err, size_t errlen)
{
	int fd, saved;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		saved = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		errno = EINVAL;
		return -1;
	}
	/* What others can read is no longer a secret. */
	if ((st->st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: mode %04o: must be 0600 or "
		    "stricter", path, (unsigned)(st->st_mode & 07777));
		close(fd);
		errno = EACCES;
		return -1;
	}
	return fd;
}
