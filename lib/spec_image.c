/*
 * spec_image.c - a container service's image keys in its spec (spec.h):
 * image_pull, and what hk apply pinned its tag to.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "spec.h"

static const char *const pull_names[] = {
	[IMAGE_PULL_MISSING] = "missing",
	[IMAGE_PULL_ALWAYS] = "always",
	[IMAGE_PULL_NEVER] = "never",
};

/* The image_pull of that name, or -1. */
int
spec_image_pull_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(pull_names) / sizeof(pull_names[0]); i++)
		if (strcmp(name, pull_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *
spec_image_pull_name(enum image_pull p)
{
	return pull_names[p];
}

/* Only what is not the default: older specs keep their bytes. */
int
spec_image_put(json_t *o, const struct service_spec *s)
{
	int err = 0;

	if (s->image_pull != IMAGE_PULL_MISSING)
		err |= json_object_set_new(o, "image_pull",
		    json_string(pull_names[s->image_pull]));
	return err != 0 ? -1 : 0;
}

int
spec_image_get(json_t *o, struct service_spec *s)
{
	json_t *v;
	int k;

	s->image_pull = IMAGE_PULL_MISSING;
	if ((v = json_object_get(o, "image_pull")) != NULL) {
		if (!json_is_string(v) ||
		    (k = spec_image_pull_find(json_string_value(v))) == -1)
			return -1;
		s->image_pull = (enum image_pull)k;
	}
	return 0;
}
