/*
 * spec_image.c - a container service's image keys in its spec (spec.h):
 * image_pull, and the digest hk apply pinned its tag to (image_digest,
 * set by cmd/hk/pin.c; absent from a file's parse).
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
	if (s->image_digest != NULL)
		err |= json_object_set_new(o, "image_digest",
		    json_string(s->image_digest));
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
	if ((v = json_object_get(o, "image_digest")) != NULL) {
		if (!json_is_string(v) ||
		    !spec_valid_digest(json_string_value(v)) ||
		    (s->image_digest = strdup(json_string_value(v))) == NULL)
			return -1;
	}
	return 0;
}

int
spec_valid_digest(const char *d)
{
	return strncmp(d, "sha256:", 7) == 0 && strlen(d + 7) == 64 &&
	    strspn(d + 7, "0123456789abcdef") == 64;
}

int
spec_set_image_digest(struct service_spec *s, const char *digest)
{
	json_t *o;
	char *out = NULL, *d;

	if (!spec_valid_digest(digest) || (d = strdup(digest)) == NULL)
		return -1;
	free(s->image_digest);
	s->image_digest = d;
	if ((o = json_loads(s->spec_json, 0, NULL)) == NULL)
		return -1;
	if (json_object_set_new(o, "image_digest", json_string(d)) == 0)
		out = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(o);
	if (out == NULL)
		return -1;
	free(s->spec_json);
	s->spec_json = out;
	return 0;
}
