/*
 * source.c - the sources of services (hk.toml(5) "source") written out
 * where instances run from: RUNTIME/src/HASH, once per hash, read-only
 * (files 0444 or 0555, directories 0555), by srctree_write(), which
 * checks what it wrote against the hash before it renames it into place.
 * A directory no service's current revision and no live instance names
 * goes (source_sweep()).
 *
 * The archive comes from the store, so any host of the installation can
 * write it.  Its hash is checked again here: the store is shared and may
 * be edited by hand.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "scale.h"
#include "srctree.h"

#define SOURCE_SUBDIR	"src"

static int	write_tree(struct scale *, const char *, const char *, char *,
		    size_t);
static int	kept(struct scale *, const char *);

int
source_dir(struct scale *sc, const char *hash, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/" SOURCE_SUBDIR "%s%s",
	    sc->cfg.runtime_dir, hash != NULL ? "/" : "",
	    hash != NULL ? hash : "") >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The archive of hash from the store, checked, written out at dir. */
static int
write_tree(struct scale *sc, const char *hash, const char *dir, char *err,
    size_t errlen)
{
	char top[PATH_MAX], got[SRCTREE_HASH_LEN + 1];
	unsigned char *data;
	size_t len;
	int r;

	if ((r = store_code_get(sc->store, hash, &data, &len)) == -1) {
		snprintf(err, errlen, "code %.12s: %s", hash,
		    store_error(sc->store));
		return -1;
	}
	if (r == 1) {
		snprintf(err, errlen, "code %.12s: not in the store", hash);
		return -1;
	}
	if (srctree_hash(data, len, got) == -1 || strcmp(got, hash) != 0) {
		snprintf(err, errlen, "code %.12s: the store's copy has hash "
		    "%.12s", hash, got);
		free(data);
		return -1;
	}
	(void)source_dir(sc, NULL, top, sizeof(top));
	/*
	 * 0755 whatever the umask (hk-scale's unit has UMask=0027): the
	 * instances' users, nobody or systemd's dynamic ones, pass it.
	 */
	if ((mkdir(top, 0755) == -1 && errno != EEXIST) ||
	    chmod(top, 0755) == -1) {
		snprintf(err, errlen, "%s: %s", top, strerror(errno));
		free(data);
		return -1;
	}
	r = srctree_write(data, len, dir, err, errlen);
	free(data);
	return r;
}

/*
 * The service's tree written out if it is not there yet, and its
 * directory set to it.  -1 with a reason: the directory is still set, so
 * that a start fails there if nothing else is tried.
 */
int
source_prepare(struct scale *sc, struct service_spec *sp, char *err,
    size_t errlen)
{
	char dir[PATH_MAX];
	struct stat st;

	if (sp->code_hash == NULL)
		return 0;
	if (source_dir(sc, sp->code_hash, dir, sizeof(dir)) == -1) {
		snprintf(err, errlen, "%s: %s", sc->cfg.runtime_dir,
		    strerror(errno));
		return -1;
	}
	if (sp->directory == NULL || strcmp(sp->directory, dir) != 0) {
		free(sp->directory);
		if ((sp->directory = strdup(dir)) == NULL) {
			snprintf(err, errlen, "%s", strerror(errno));
			return -1;
		}
	}
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (write_tree(sc, sp->code_hash, dir, err, errlen) == -1)
		return -1;
	log_info("code %.12s: written to %s", sp->code_hash, dir);
	return 0;
}

/*
 * Some service's current revision, the revision that serves while it
 * has not passed (release.c), or some live instance uses hash.
 */
static int
kept(struct scale *sc, const char *hash)
{
	struct service *s;
	struct inst *in;

	TAILQ_FOREACH(s, &sc->services, entry) {
		if (!s->removed && s->def.spec.code_hash != NULL &&
		    strcmp(s->def.spec.code_hash, hash) == 0)
			return 1;
		if (!s->removed && s->good.spec.code_hash != NULL &&
		    strcmp(s->good.spec.code_hash, hash) == 0)
			return 1;
	}
	TAILQ_FOREACH(in, &sc->insts, entry)
		if (strcmp(in->code_hash, hash) == 0)
			return 1;
	return 0;
}

/*
 * Removes the trees nothing uses, and what an interrupted write left.
 * Nothing goes while an instance of unknown code runs (adopted from an
 * earlier run, of another revision than its service's).
 */
void
source_sweep(struct scale *sc)
{
	char top[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	struct inst *in;
	DIR *d;

	TAILQ_FOREACH(in, &sc->insts, entry)
		if (in->code_unknown)
			return;
	if (source_dir(sc, NULL, top, sizeof(top)) == -1 ||
	    (d = opendir(top)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && (strncmp(de->d_name, ".tmp.", 5) !=
		    0 || strstr(de->d_name + 5, ".") == NULL))
			continue;	/* ".", "..", and strangers */
		if (de->d_name[0] != '.' && (!srctree_valid_hash(de->d_name) ||
		    kept(sc, de->d_name)))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", top,
		    de->d_name) >= sizeof(path))
			continue;
		if (srctree_remove(path) == -1)
			log_warn("unable to remove %s", path);
		else
			log_info("code %.12s: removed, no longer used",
			    de->d_name);
	}
	closedir(d);
}
