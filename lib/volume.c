/*
 * volume.c - one entry of a service's volumes (see volume.h): its syntax,
 * its canonical form, and the engine's name of a named volume.  The
 * entries come from a file (app.c) and from the shared store (spec.c),
 * which may be edited by hand: nothing here trusts them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "volume.h"

static char	*path_take(const char *, size_t, char *, size_t);

int
volume_valid_name(const char *s)
{
	size_t n;

	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	    (*s >= '0' && *s <= '9')))
		return 0;
	n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.-");
	return s[n] == '\0' && n <= VOLUME_NAME_MAX;
}

/*
 * The len bytes of p as a normalized absolute path, allocated; NULL with
 * the reason.  ".." is refused rather than resolved: a path that climbs
 * reads as under a directory it is not under.
 */
static char *
path_take(const char *p, size_t len, char *err, size_t errlen)
{
	char *out;
	size_t i = 0, o = 0, n;

	if (len == 0 || p[0] != '/') {
		snprintf(err, errlen, "\"%.*s\": not an absolute path",
		    (int)len, p);
		return NULL;
	}
	if (len > VOLUME_PATH_MAX) {
		snprintf(err, errlen, "a path over %d bytes", VOLUME_PATH_MAX);
		return NULL;
	}
	if ((out = malloc(len + 2)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	while (i < len) {
		while (i < len && p[i] == '/')
			i++;
		for (n = 0; i + n < len && p[i + n] != '/'; n++)
			;
		if (n == 0)
			break;
		if (n == 2 && p[i] == '.' && p[i + 1] == '.') {
			snprintf(err, errlen, "\"%.*s\": \"..\" is not "
			    "allowed", (int)len, p);
			free(out);
			return NULL;
		}
		if (!(n == 1 && p[i] == '.')) {
			out[o++] = '/';
			memcpy(out + o, p + i, n);
			o += n;
		}
		i += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

int
volume_parse(const char *entry, struct spec_volume *v, char *err,
    size_t errlen)
{
	const char *c1, *c2, *end;
	char *name;

	memset(v, 0, sizeof(*v));
	if ((c1 = strchr(entry, ':')) == NULL) {
		snprintf(err, errlen, "\"%s\": not NAME:/PATH or "
		    "/HOST:/PATH (a ':' between them)", entry);
		return -1;
	}
	c2 = strchr(c1 + 1, ':');
	end = c2 != NULL ? c2 : c1 + strlen(c1);
	if (c2 != NULL && strcmp(c2, ":ro") != 0 && strcmp(c2, ":rw") != 0) {
		snprintf(err, errlen, "\"%s\": the options after the path are "
		    "ro or rw", entry);
		return -1;
	}
	v->read_only = c2 != NULL && strcmp(c2, ":ro") == 0;
	v->bind = entry[0] == '/';
	if (v->bind)
		v->source = path_take(entry, c1 - entry, err, errlen);
	else if ((name = strndup(entry, c1 - entry)) == NULL)
		snprintf(err, errlen, "out of memory");
	else if (!volume_valid_name(name)) {
		snprintf(err, errlen, "\"%s\": not a volume name (letters, "
		    "digits and _.-, a letter or digit first, at most %d "
		    "bytes) nor an absolute path", name, VOLUME_NAME_MAX);
		free(name);
	} else
		v->source = name;
	if (v->source == NULL)
		return -1;
	if ((v->target = path_take(c1 + 1, end - c1 - 1, err,
	    errlen)) == NULL) {
		volume_clear(v);
		return -1;
	}
	if (strcmp(v->target, "/") == 0) {
		snprintf(err, errlen, "\"%s\": the container's / cannot be "
		    "a volume", entry);
		volume_clear(v);
		return -1;
	}
	return 0;
}

char *
volume_format(const struct spec_volume *v)
{
	char *s;

	if (asprintf(&s, "%s:%s%s", v->source, v->target,
	    v->read_only ? ":ro" : "") == -1)
		return NULL;
	return s;
}

void
volume_clear(struct spec_volume *v)
{
	free(v->source);
	free(v->target);
	memset(v, 0, sizeof(*v));
}

int
volume_engine_name(const char *inst, const char *app, const char *svc,
    const char *name, char *out, size_t outsz)
{
	int n;

	n = snprintf(out, outsz, "hk_%s_%s_%s_%s", inst, app, svc, name);
	return n < 0 || (size_t)n >= outsz || (size_t)n > VOLUME_ENGINE_MAX ?
	    -1 : 0;
}

int
volume_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/');
}
