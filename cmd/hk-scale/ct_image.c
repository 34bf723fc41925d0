/*
 * ct_image.c - a container's image: the reference a start gives the
 * engine, and its pull with the registry's credentials (hakopod.toml(5)
 * registry_auth_file, read at each pull so that a changed file needs no
 * reload; the credentials live only for the call's making).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "container.h"
#include "log.h"
#include "regauth.h"

/*
 * The image as given, or, pinned by hk apply, NAME@DIGEST: the tag goes,
 * for the digest names the image (and the engines refuse NAME:TAG@D in
 * some versions).
 */
int
ct_image_ref(const struct service_spec *s, char *dst, size_t size)
{
	const char *image = s->image != NULL ? s->image : "", *slash, *colon;
	size_t n;

	if (s->image_digest == NULL) {
		if (strlcpy(dst, image, size) >= size)
			goto toolong;
		return 0;
	}
	slash = strrchr(image, '/');
	colon = strrchr(slash != NULL ? slash : image, ':');
	n = colon != NULL ? (size_t)(colon - image) : strlen(image);
	if ((size_t)snprintf(dst, size, "%.*s@%s", (int)n, image,
	    s->image_digest) >= size)
		goto toolong;
	return 0;
toolong:
	errno = ENAMETOOLONG;
	return -1;
}

struct engine_call *
ct_image_pull(struct ct *x, engine_done_fn *fn, char *err, size_t errlen)
{
	struct inst *in = x->in;
	struct engine_call *c;
	char *auth;

	if (regauth_header(in->sc->cfg.registry_auth_file, x->image, &auth,
	    err, errlen) == -1)
		return NULL;
	log_info("service=%s: pulling %s on node %s%s", in->id, x->image,
	    x->node->name, auth != NULL ? " with the registry's credentials" :
	    "");
	if ((c = engine_image_pull(x->node->e, x->image, auth, fn, x)) ==
	    NULL)
		snprintf(err, errlen, "%s", strerror(errno));
	regauth_free(auth);
	return c;
}

