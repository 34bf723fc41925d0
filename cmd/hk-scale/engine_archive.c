/*
 * engine_archive.c - engine_archive_put() (engine.h): a tar archive
 * unpacked into a container, PUT /containers/ID/archive?path=DIR, the
 * request's body the archive's bytes (Content-Type: application/x-tar).
 * Apart from engine_ops.c because its body is bytes, not JSON: the call
 * keeps its own copy (the call's ctx) and hands it to libcurl with its
 * length, which engine.c's JSON bodies take from strlen().  The copy is
 * wiped when the call ends (a container's secrets go this way).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "engine_impl.h"

#define ARCHIVE_ID_CHARS	"abcdefghijklmnopqrstuvwxyz" \
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
#define ARCHIVE_DIR_MAX		255

struct archive_copy {
	size_t		len;
	unsigned char	bytes[];
};

static int	archive_valid(const char *, const char *, size_t);
static void	archive_free(void *);

static void
archive_free(void *p)
{
	struct archive_copy *a = p;

	if (a == NULL)
		return;
	explicit_bzero(a->bytes, a->len);
	free(a);
}

/* id a container's ID or name; dir absolute, of plain characters. */
static int
archive_valid(const char *id, const char *dir, size_t len)
{
	size_t n = strlen(id);

	if (n == 0 || n > ENGINE_NAME_MAX ||
	    strspn(id, ARCHIVE_ID_CHARS) != n || id[0] == '.' ||
	    id[0] == '-' || id[0] == '_')
		return 0;
	n = strlen(dir);
	if (dir[0] != '/' || n > ARCHIVE_DIR_MAX ||
	    strspn(dir, ARCHIVE_ID_CHARS "/") != n || strstr(dir, "..") !=
	    NULL)
		return 0;
	return len > 0 && len <= ENGINE_ARCHIVE_MAX;
}

struct engine_call *
engine_archive_put(struct engine *e, const char *id, const char *dir,
    const void *tar, size_t len, engine_done_fn *fn, void *arg)
{
	char path[ENGINE_NAME_MAX + ARCHIVE_DIR_MAX + 64];
	struct engine_call *c;
	struct curl_slist *h;
	struct archive_copy *copy;

	if (!archive_valid(id, dir, len)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "/containers/%s/archive?path=%s", id,
	    dir);
	if ((c = engine_call_new(e, "PUT", path, NULL)) == NULL)
		return NULL;
	if ((copy = malloc(sizeof(*copy) + len)) == NULL ||
	    (h = curl_slist_append(c->hdrs,
	    "Content-Type: application/x-tar")) == NULL) {
		free(copy);
		engine_call_free(c);
		errno = ENOMEM;
		return NULL;
	}
	copy->len = len;
	memcpy(copy->bytes, tar, len);
	c->hdrs = h;
	c->ctx = copy;
	c->ctxfree = archive_free;
	if (curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs) !=
	    CURLE_OK ||
	    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)len) != CURLE_OK ||
	    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS,
	    (void *)&copy->bytes[0]) != CURLE_OK) {
		engine_call_free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->fn = fn;
	c->arg = arg;
	return engine_call_start(c) == -1 ? NULL : c;
}
