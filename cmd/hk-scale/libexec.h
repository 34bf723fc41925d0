/*
 * libexec.h - where hk-scale finds the programs it runs that are not a
 * user's (libexec.c).
 */
#ifndef HK_SCALE_LIBEXEC_H
#define HK_SCALE_LIBEXEC_H

#include <stddef.h>

/* HK_LIBEXECDIR, for messages. */
const char	*libexec_dir(void);
/*
 * NAME beside hk-scale's own program, else in libexec_dir(), if access(2)
 * allows MODE (R_OK, X_OK): its path in buf, 0; else -1, errno set.
 */
int		 libexec_find(const char *, int, char *, size_t);

#endif
