/*
 * ct_volumes.c - a container's volumes (hk.toml(5) "volumes"): the named
 * ones made through the engine's volumes API before the container is
 * created, and every entry as a bind of the create (HostConfig.Binds).
 *
 * A named volume is made at each start, one create after the other: the
 * engine answers an existing one as it is, so a volume made by an earlier
 * start, revision or run of hk-scale is the one mounted again, and one
 * the operator removed is made anew, empty.  Nothing here removes a
 * volume: a container is removed with its anonymous volumes only (v=1),
 * and a named volume goes when the operator says so ("hk volumes rm").
 * The labels say whose it is (hk.installation, hk.app, hk.service,
 * hk.volume), as a container's do; the name is volume_engine_name()'s.
 * Its root directory is made the container user's when it is made, where
 * the engine can: podman's local driver takes the owner as an option
 * (o=uid=U,gid=G); Docker's would take it for a mount's options and fail
 * every start, so on Docker the volume is the engine's own (an empty
 * volume takes the owner of the image's directory at that path, if the
 * image has one).  The node's engine is asked which it is (GET /version)
 * before its first volume.
 *
 * A bind mount names a directory of this host, resolved now with
 * realpath(): a symbolic link that leads out of every volume_dirs
 * directory is refused here, as ".." was at validate; the directory must
 * exist.  hk validate refuses a bind mount on another node; one that
 * comes anyway is refused here.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "user.h"
#include "volume.h"

#define VOL_LABEL_MAX	(VOLUME_NAME_MAX + 32)

static void	on_volume(void *, int, json_t *, const char *);
static void	on_version(void *, int, json_t *, const char *);
static int	bind_allowed(const struct scale *, const char *);
static char	*bind_of(struct ct *, const struct spec_volume *, char *,
		    size_t);

/*
 * Starts the create of the next named volume, from x->vol_next: 1 when a
 * call is under way (x->op; ct_volumes_done() follows), 0 when none is
 * left, -1 with the reason.
 */
int
ct_volumes_next(struct ct *x, char *err, size_t errlen)
{
	const struct service *s = x->in->svc;
	/* the instance's revision (good's while def has not passed), whose
	   volumes ct_volume_binds() mounts: each one made with its labels */
	const struct service_spec *sp = &inst_def(x->in)->spec;
	const struct spec_volume *v;
	char name[VOLUME_ENGINE_MAX + 1], l[4][VOL_LABEL_MAX];
	const char *labels[5];
	struct user_ids u;

	while (x->vol_next < sp->nvolumes && sp->volumes[x->vol_next].bind)
		x->vol_next++;
	if (x->vol_next >= sp->nvolumes)
		return 0;
	if (x->node->flavour == CT_FLAVOUR_UNKNOWN) {
		if ((x->op = engine_version(x->node->e, on_version, x)) ==
		    NULL) {
			snprintf(err, errlen, "volumes: the engine's version: "
			    "%s", strerror(errno));
			return -1;
		}
		return 1;
	}
	v = &sp->volumes[x->vol_next];
	if (volume_engine_name(x->in->sc->installation, s->def.app,
	    s->def.name, v->source, name, sizeof(name)) == -1) {
		snprintf(err, errlen, "volume %s: its engine name is over %d "
		    "bytes", v->source, VOLUME_ENGINE_MAX);
		return -1;
	}
	if (ct_volume_owner(x, &u, err, errlen) == -1)
		return -1;
	snprintf(l[0], sizeof(l[0]), "hk.installation=%s",
	    x->in->sc->installation);
	snprintf(l[1], sizeof(l[1]), "hk.app=%s", s->def.app);
	snprintf(l[2], sizeof(l[2]), "hk.service=%s", s->def.name);
	snprintf(l[3], sizeof(l[3]), "hk.volume=%s", v->source);
	labels[0] = l[0];
	labels[1] = l[1];
	labels[2] = l[2];
	labels[3] = l[3];
	labels[4] = NULL;
	x->op = engine_volume_create(x->node->e, name, labels,
	    x->node->flavour == CT_FLAVOUR_PODMAN ? (long)u.uid : -1,
	    x->node->flavour == CT_FLAVOUR_PODMAN ? (long)u.gid : -1,
	    on_volume, x);
	if (x->op == NULL) {
		snprintf(err, errlen, "volume %s: %s", v->source,
		    strerror(errno));
		return -1;
	}
	return 1;
}

static void
on_volume(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	char why[SCALE_REASON_MAX];
	const char *name;

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		name = x->in != NULL && x->vol_next <
		    inst_def(x->in)->spec.nvolumes ?
		    inst_def(x->in)->spec.volumes[x->vol_next].source : "?";
		snprintf(why, sizeof(why), "volume %s: %s", name, err);
		ct_volumes_done(x, why);
		return;
	}
	x->vol_next++;
	ct_volumes_done(x, NULL);
}

static void
on_version(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	char why[SCALE_REASON_MAX];

	(void)status;
	x->op = NULL;
	if (err != NULL) {
		snprintf(why, sizeof(why), "volumes: the engine's version: %s",
		    err);
		ct_volumes_done(x, why);
		return;
	}
	x->node->flavour = ct_flavour_of(body);
	ct_volumes_done(x, NULL);
}

/* Podman names itself in the components of its version; Docker not. */
enum ct_flavour
ct_flavour_of(const json_t *body)
{
	const char *name;
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(body, "Components"), i, c)
		if ((name = json_string_value(json_object_get(c,
		    "Name"))) != NULL && strstr(name, "Podman") != NULL)
			return CT_FLAVOUR_PODMAN;
	return CT_FLAVOUR_DOCKER;
}

/* Under one of volume_dirs, each as given or as it resolves. */
static int
bind_allowed(const struct scale *sc, const char *path)
{
	struct server_config one;
	char dir[PATH_MAX], real[PATH_MAX];
	const char *p, *comma;
	size_t n;

	if (config_volume_dir_allows(&sc->cfg, path))
		return 1;
	for (p = sc->cfg.volume_dirs; *p != '\0';
	    p = comma != NULL ? comma + 1 : p + n) {
		comma = strchr(p, ',');
		n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (n >= sizeof(dir))
			continue;
		memcpy(dir, p, n);
		dir[n] = '\0';
		if (realpath(dir, real) == NULL)
			continue;
		memset(&one, 0, sizeof(one));
		strlcpy(one.volume_dirs, real, sizeof(one.volume_dirs));
		if (config_volume_dir_allows(&one, path))
			return 1;
	}
	return 0;
}

/* The bind of one entry, allocated; NULL with the reason. */
static char *
bind_of(struct ct *x, const struct spec_volume *v, char *err, size_t errlen)
{
	const struct service *s = x->in->svc;
	char name[VOLUME_ENGINE_MAX + 1], real[PATH_MAX], *b;
	const char *src = name;

	if (!v->bind) {
		if (volume_engine_name(x->in->sc->installation, s->def.app,
		    s->def.name, v->source, name, sizeof(name)) == -1) {
			snprintf(err, errlen, "volume %s: its engine name is "
			    "too long", v->source);
			return NULL;
		}
	} else if (strcmp(x->node->name, x->in->sc->node) != 0) {
		snprintf(err, errlen, "volumes: %s: a bind mount names this "
		    "host's directories, not node %s's", v->source,
		    x->node->name);
		return NULL;
	} else if (realpath(v->source, real) == NULL) {
		snprintf(err, errlen, "volumes: %s: %s", v->source,
		    strerror(errno));
		return NULL;
	} else if (!bind_allowed(x->in->sc, real)) {
		snprintf(err, errlen, "volumes: %s (%s): not under "
		    "server.volume_dirs", v->source, real);
		return NULL;
	} else if (strchr(real, ':') != NULL) {
		snprintf(err, errlen, "volumes: %s: resolves to a path with "
		    "':' (%s)", v->source, real);
		return NULL;
	} else
		src = real;
	if (asprintf(&b, "%s:%s%s", src, v->target,
	    v->read_only ? ":ro" : "") == -1) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return b;
}

/*
 * The binds of every entry, appended to binds (of room for them and a
 * NULL), allocated in store (freed by the caller, a NULL-terminated
 * array); 0, or -1 with the reason.
 */
int
ct_volume_binds(struct ct *x, const char **binds, size_t nbinds,
    char ***store, char *err, size_t errlen)
{
	const struct service_spec *sp = &inst_def(x->in)->spec;
	size_t i;

	*store = NULL;
	if (sp->nvolumes == 0)
		return 0;
	if ((*store = calloc(sp->nvolumes + 1, sizeof(**store))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < sp->nvolumes; i++) {
		if (((*store)[i] = bind_of(x, &sp->volumes[i], err,
		    errlen)) == NULL)
			return -1;
		binds[nbinds + i] = (*store)[i];
	}
	binds[nbinds + i] = NULL;
	return 0;
}
