/*
 * ct_image.c - a container's image: the reference a start gives the
 * engine, and its pull.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "container.h"
#include "log.h"

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

	log_info("service=%s: pulling %s on node %s", in->id, x->image,
	    x->node->name);
	if ((c = engine_image_pull(x->node->e, x->image, NULL, fn, x)) ==
	    NULL)
		snprintf(err, errlen, "%s", strerror(errno));
	return c;
}
