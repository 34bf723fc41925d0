/*
 * secret_check.c - the key file against the store's secrets
 * (secret_check.h).  A key is the installation's when it opens the
 * secret sealed last: each value is sealed with its app and name as
 * associated data (secret.h), so one that opens was sealed with this
 * key.  The store keeps no copy nor hash of the key to compare with: the
 * secrets themselves are the record of which key sealed them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "secret_check.h"

#define HOW_TO_COPY	"copy the key file from a host that sealed them, " \
			"mode 0600 (hakopod.toml(5) secret_key_file)"

static int	opens(const char *, const struct secret_key *, const char *,
		    const char *, const unsigned char *, size_t, char *,
		    size_t);

int
secret_key_check(struct store *st, const char *path, int create,
    struct secret_key *out, char *err, size_t errlen)
{
	char app[STORE_NAME_MAX + 1], name[STORE_NAME_MAX + 1];
	struct secret_key k;
	struct stat sb;
	unsigned char *sealed;
	size_t slen;
	int r;

	r = store_secret_newest(st, app, name, &sealed, &slen);
	if (r == -1) {
		snprintf(err, errlen, "the store's secrets: %s",
		    store_error(st));
		return -1;
	}
	if (r == 1) {
		if (out == NULL)
			return 0;
		return secret_key_load(path, create, out, err, errlen) == -1 ?
		    1 : 0;
	}
	if (stat(path, &sb) == -1 && errno == ENOENT) {
		snprintf(err, errlen, "%s: no such file, and the store holds "
		    "secrets sealed with a key: " HOW_TO_COPY, path);
		free(sealed);
		return 1;
	}
	if (secret_key_load(path, 0, &k, err, errlen) == -1) {
		free(sealed);
		return 1;
	}
	r = opens(path, &k, app, name, sealed, slen, err, errlen);
	free(sealed);
	if (r == 0 && out != NULL)
		*out = k;
	secret_key_clear(&k);
	return r;
}

/* 0 when k opens app/name's sealed value; else 1 with the reason. */
static int
opens(const char *path, const struct secret_key *k, const char *app,
    const char *name, const unsigned char *sealed, size_t slen, char *err,
    size_t errlen)
{
	unsigned char *v;
	size_t vlen;

	if (secret_open(k, app, name, sealed, slen, &v, &vlen) == -1) {
		snprintf(err, errlen, "%s is not the key the store's secrets "
		    "were sealed with (it does not open %s/%s, the one set "
		    "last): " HOW_TO_COPY, path, app, name);
		return 1;
	}
	secret_free(v, vlen + 1);
	return 0;
}
