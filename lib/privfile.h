/*
 * privfile.h - a file that must be its owner's alone (the key of secrets,
 * registry credentials): opened without following a link, a regular
 * file, and refused when its group or others may read it.
 */
#ifndef HK_PRIVFILE_H
#define HK_PRIVFILE_H

#include <sys/stat.h>

#include <stddef.h>

int	privfile_open(const char *, struct stat *, char *, size_t);

#endif
