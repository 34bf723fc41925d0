/*
 * volume.h - the volumes of a container service (hk.toml(5) "volumes"):
 * one entry is "NAME:/PATH[:ro]", a named volume the engine keeps, or
 * "/HOST:/PATH[:ro]", a bind mount of a host directory.  app.c checks the
 * entries of a file against the operator's volume_dirs, spec.c stores
 * them (volume_format(), canonical) and reads them back (volume_parse()),
 * hk-scale mounts them and "hk volumes" lists and removes the named ones.
 *
 * A named volume is the engine's volume volume_engine_name() names:
 * "hk_INSTALLATION_APP_SERVICE_NAME".  '_' is in no installation, app or
 * service name, so the name reads back whole; labels hk.installation,
 * hk.app, hk.service and hk.volume say the same to a filter.
 */
#ifndef HK_VOLUME_H
#define HK_VOLUME_H

#include <stddef.h>

#define VOLUME_NAME_MAX		63	/* NAME of "NAME:/PATH" */
#define VOLUME_PATH_MAX		1023	/* either path */
#define VOLUME_ENGINE_MAX	255	/* the engine's volume name */
#define VOLUMES_MAX		32	/* entries of a service */
#define VOLUME_ERR_LEN		160

struct spec_volume {
	char	*source;	/* NAME, or an absolute host path */
	char	*target;	/* absolute, in the container */
	int	 bind;		/* source is a host path */
	int	 read_only;	/* ":ro" */
};

/*
 * Reads one entry into v (strings allocated): 0, or -1 with the reason
 * (v left empty).  Paths are absolute, hold no ':' nor ".." component,
 * and come back normalized (no "//", "." or final '/'); a target is not
 * "/".
 */
int	volume_parse(const char *, struct spec_volume *, char *, size_t);
/* The canonical entry, "SOURCE:TARGET" or "SOURCE:TARGET:ro"; NULL oom. */
char	*volume_format(const struct spec_volume *);
void	volume_clear(struct spec_volume *);
/* A NAME: letters, digits and "_.-", a letter or digit first. */
int	volume_valid_name(const char *);
/* The engine's name of a named volume; -1 if it does not fit. */
int	volume_engine_name(const char *, const char *, const char *,
	    const char *, char *, size_t);
/* path (normalized) is dir or under it: 1, else 0. */
int	volume_under(const char *, const char *);

#endif
