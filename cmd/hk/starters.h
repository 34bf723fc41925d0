/*
 * The starters of "hk new": the files of etc/starters/<kind>/, built
 * into hk by scripts/embed so that it needs no installed data.
 */
#ifndef STARTERS_H
#define STARTERS_H

struct starter_file {
	const char		*kind;	/* python, node, fastapi, express */
	const char		*name;	/* a plain file name */
	const unsigned char	*data;	/* "@NAME@" stands for the name */
	size_t			 len;
};

extern const struct starter_file	starter_files[];
extern const size_t			starter_nfiles;

#endif
