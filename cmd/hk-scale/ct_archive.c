/*
 * ct_archive.c - a service's source sent into its container on another
 * node through that node's engine: the tree hk-scale wrote out here
 * (source.c) read back as a srctree archive, checked against the
 * instance's code hash, made a tar (srctar.h) whose top directory is
 * "app", and put at "/" of the created container before it starts
 * (PUT /containers/ID/archive).  The files land in the container's own
 * file system, root's, 0444 or 0555 in directories of 0555, so that a
 * container user other than root cannot change them; the next wake's
 * container is a fresh one and gets them again.
 *
 * A container on this host's own node bind-mounts the tree read-only
 * instead (backend_container.c): no copy per start, and read-only even
 * for a root user.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "srctar.h"
#include "srctree.h"

#define CT_ARCHIVE_TOP	"app"	/* CT_SOURCE's name, under "/" */

static int	ct_archive_tar(struct ct *, unsigned char **, size_t *,
		    char *, size_t);

/* A source goes through the engine when the node is not this host's. */
int
ct_archive_wanted(const struct ct *x)
{
	return x->in->code_hash[0] != '\0' &&
	    strcmp(x->node->name, x->in->sc->node) != 0;
}

/* The instance's tree as a tar, checked against its hash. */
static int
ct_archive_tar(struct ct *x, unsigned char **tar, size_t *len, char *err,
    size_t errlen)
{
	char dir[PATH_MAX], why[SRCTREE_ERR_LEN];
	struct srctree t;

	if (source_dir(x->in->sc, x->in->code_hash, dir, sizeof(dir)) == -1) {
		snprintf(err, errlen, "%s", strerror(ENAMETOOLONG));
		return -1;
	}
	if (srctree_read(dir, &t, why, sizeof(why)) == -1) {
		strlcpy(err, why, errlen);	/* cut short if it must */
		return -1;
	}
	if (strcmp(t.hash, x->in->code_hash) != 0) {
		snprintf(err, errlen, "%.200s: hash %.12s, not the instance's "
		    "%.12s", dir, t.hash, x->in->code_hash);
		srctree_free(&t);
		return -1;
	}
	if (srctar_build(t.data, t.len, CT_ARCHIVE_TOP, tar, len, why,
	    sizeof(why)) == -1) {
		snprintf(err, errlen, "tar: %.200s", why);
		srctree_free(&t);
		return -1;
	}
	srctree_free(&t);
	return 0;
}

/*
 * Puts the source into the created container x->id: 0 with x->op the
 * call (fn follows), -1 with "source: reason".
 */
int
ct_archive_put(struct ct *x, engine_done_fn *fn, char *err, size_t errlen)
{
	char why[SCALE_REASON_MAX];
	unsigned char *tar;
	size_t len;

	if (ct_archive_tar(x, &tar, &len, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "source: %.400s", why);
		return -1;
	}
	x->op = engine_archive_put(x->node->e, x->id, "/", tar, len, fn, x);
	free(tar);
	if (x->op == NULL) {
		snprintf(err, errlen, "source: %s", strerror(errno));
		return -1;
	}
	return 0;
}
