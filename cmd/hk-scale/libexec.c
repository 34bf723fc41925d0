/*
 * libexec.c - the programs hk-scale runs that are not a user's: hk-listen
 * (backend_s6.c), hk-hold (ct_hold.c), hk-python-template
 * (exec_template.c) and hk-node-spare (exec_node_spare.c).  Each is
 * looked for beside hk-scale's own program first, so that a build tree
 * runs its own, then in HK_LIBEXECDIR, where make install puts them.
 */
#include <sys/types.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "libexec.h"

#ifndef HK_LIBEXECDIR
#define HK_LIBEXECDIR	"/usr/local/libexec/hk"
#endif

const char *
libexec_dir(void)
{
	return HK_LIBEXECDIR;
}

int
libexec_find(const char *name, int mode, char *buf, size_t len)
{
	char self[PATH_MAX], *slash;
	ssize_t n;

	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			if ((size_t)snprintf(buf, len, "%s/%s", self, name) <
			    len && access(buf, mode) == 0)
				return 0;
		}
	}
	if ((size_t)snprintf(buf, len, "%s/%s", HK_LIBEXECDIR, name) < len &&
	    access(buf, mode) == 0)
		return 0;
	return -1;
}
