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

int
ct_image_ref(const struct service_spec *s, char *dst, size_t size)
{
	if (strlcpy(dst, s->image != NULL ? s->image : "", size) >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
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
