/*
 * regauth.c - X-Registry-Auth from the operator's registry_auth_file
 * (regauth.h).  The engine takes the header as base64url of
 * {"username", "password", "serveraddress"} (the Docker Engine API,
 * "Authentication"); podman's compatible API reads the same.  What was
 * decoded is wiped before it is freed.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "b64.h"
#include "privfile.h"
#include "regauth.h"

#define HEADER_NAME	"X-Registry-Auth: "

static int	 file_read(const char *, char **, size_t *, char *, size_t);
static json_t	*entry_find(json_t *, const char *);
static int	 host_is(const char *, const char *);
static int	 creds_take(json_t *, const char *, char **, char **, char *,
		    size_t);
static char	*header_make(const char *, const char *, const char *);
static void	 wipe_free(char *, size_t);

int
regauth_registry(const char *image, char *dst, size_t size)
{
	const char *slash = strchr(image, '/');
	size_t n;

	if (slash == NULL || (memchr(image, '.', slash - image) == NULL &&
	    memchr(image, ':', slash - image) == NULL &&
	    (slash - image != 9 || strncmp(image, "localhost", 9) != 0))) {
		if (strlcpy(dst, "docker.io", size) >= size)
			return -1;
		return 0;
	}
	n = (size_t)(slash - image);
	if (n >= size)
		return -1;
	memcpy(dst, image, n);
	dst[n] = '\0';
	return 0;
}

int
regauth_creds(const char *path, const char *image, char **user, char **pass,
    char *err, size_t errlen)
{
	char host[REGAUTH_HOST_MAX + 1], why[REGAUTH_HOST_MAX + 64], *text;
	json_error_t jerr;
	json_t *doc, *entry;
	size_t len;
	int rc = 0;

	*user = *pass = NULL;
	if (path == NULL || path[0] == '\0')
		return 0;
	if (regauth_registry(image, host, sizeof(host)) == -1) {
		snprintf(err, errlen, "%s: registry name over %d bytes", path,
		    REGAUTH_HOST_MAX);
		return -1;
	}
	if (file_read(path, &text, &len, err, errlen) == -1)
		return -1;
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	wipe_free(text, len);
	if (doc == NULL) {
		/* jerr.text may quote the file: only where it broke */
		snprintf(err, errlen, "%s: not JSON (line %d)", path,
		    jerr.line);
		return -1;
	}
	if (!json_is_object(json_object_get(doc, "auths"))) {
		snprintf(err, errlen, "%s: no \"auths\" object", path);
		rc = -1;
	} else if ((entry = entry_find(json_object_get(doc, "auths"),
	    host)) != NULL && creds_take(entry, host, user, pass, why,
	    sizeof(why)) == -1) {
		snprintf(err, errlen, "%s: %s", path, why);
		rc = -1;
	}
	json_decref(doc);
	return rc;
}

int
regauth_header(const char *path, const char *image, char **out, char *err,
    size_t errlen)
{
	char host[REGAUTH_HOST_MAX + 1], *user, *pass;

	*out = NULL;
	if (regauth_creds(path, image, &user, &pass, err, errlen) == -1)
		return -1;
	if (user == NULL)
		return 0;
	(void)regauth_registry(image, host, sizeof(host));
	*out = header_make(user, pass, host);
	regauth_free(user);
	regauth_free(pass);
	if (*out == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	return 0;
}

void
regauth_free(char *h)
{
	if (h != NULL)
		wipe_free(h, strlen(h));
}

/* The whole file, if it is the owner's alone. */
static int
file_read(const char *path, char **out, size_t *len, char *err,
    size_t errlen)
{
	struct stat st;
	ssize_t n;
	char *buf;
	int fd;

	if ((fd = privfile_open(path, &st, err, errlen)) == -1)
		return -1;
	if (st.st_size > REGAUTH_FILE_MAX) {
		snprintf(err, errlen, "%s: over %d bytes", path,
		    REGAUTH_FILE_MAX);
		close(fd);
		return -1;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	n = read(fd, buf, (size_t)st.st_size + 1);
	close(fd);
	if (n < 0 || n > st.st_size) {
		snprintf(err, errlen, "%s: %s", path, n < 0 ?
		    strerror(errno) : "changed while read");
		wipe_free(buf, (size_t)st.st_size + 1);
		return -1;
	}
	*out = buf;
	*len = (size_t)n;
	return 0;
}

/* The entry of host: keys may carry a scheme and a path, as docker's. */
static json_t *
entry_find(json_t *auths, const char *host)
{
	const char *key;
	json_t *v;

	if (!json_is_object(auths))
		return NULL;
	json_object_foreach(auths, key, v)
		if (host_is(key, host))
			return v;
	/* docker login writes Docker Hub's under its old index URL */
	if (strcmp(host, "docker.io") == 0)
		json_object_foreach(auths, key, v)
			if (host_is(key, "index.docker.io") ||
			    host_is(key, "registry-1.docker.io"))
				return v;
	return NULL;
}

static int
host_is(const char *key, const char *host)
{
	const char *p;
	size_t n = strlen(host);

	if ((p = strstr(key, "://")) != NULL)
		key = p + 3;
	return strncmp(key, host, n) == 0 && (key[n] == '\0' ||
	    key[n] == '/');
}

/* The entry's user and password, each malloc'd. */
static int
creds_take(json_t *entry, const char *host, char **user, char **pass,
    char *err, size_t errlen)
{
	const char *auth, *u, *p;
	unsigned char *raw;
	char *colon;
	size_t n;
	long got;

	*user = *pass = NULL;
	u = json_string_value(json_object_get(entry, "username"));
	p = json_string_value(json_object_get(entry, "password"));
	if ((auth = json_string_value(json_object_get(entry, "auth"))) !=
	    NULL) {
		n = strlen(auth);
		if ((raw = malloc(n + 1)) == NULL) {
			snprintf(err, errlen, "%s", strerror(errno));
			return -1;
		}
		if ((got = b64_decode(auth, n, raw, n)) == -1 ||
		    (colon = memchr(raw, ':', (size_t)got)) == NULL) {
			wipe_free((char *)raw, n + 1);
			snprintf(err, errlen, "%s: \"auth\" is not "
			    "base64 of USER:PASSWORD", host);
			return -1;
		}
		raw[got] = '\0';
		*colon = '\0';
		*user = strdup((char *)raw);
		*pass = strdup(colon + 1);
		wipe_free((char *)raw, n + 1);
	} else if (u != NULL && p != NULL) {
		*user = strdup(u);
		*pass = strdup(p);
	} else {
		snprintf(err, errlen, "%s: neither \"auth\" nor \"username\" "
		    "and \"password\"", host);
		return -1;
	}
	if (*user == NULL || *pass == NULL) {
		regauth_free(*user);
		regauth_free(*pass);
		*user = *pass = NULL;
		snprintf(err, errlen, "%s: out of memory", host);
		return -1;
	}
	return 0;
}

/* "X-Registry-Auth: " and base64url (padded) of the JSON. */
static char *
header_make(const char *user, const char *pass, const char *host)
{
	json_t *o;
	char *js, *h, *p;
	size_t n;

	if ((o = json_pack("{s:s, s:s, s:s}", "username", user, "password",
	    pass, "serveraddress", host)) == NULL)
		return NULL;
	js = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (js == NULL)
		return NULL;
	n = strlen(js);
	if ((h = malloc(sizeof(HEADER_NAME) + B64_LEN(n))) != NULL) {
		memcpy(h, HEADER_NAME, sizeof(HEADER_NAME) - 1);
		p = h + sizeof(HEADER_NAME) - 1;
		p[b64_encode((unsigned char *)js, n, p)] = '\0';
		for (; *p != '\0'; p++)
			if (*p == '+')
				*p = '-';
			else if (*p == '/')
				*p = '_';
	}
	wipe_free(js, n);
	return h;
}

static void
wipe_free(char *p, size_t n)
{
	if (p == NULL)
		return;
	explicit_bzero(p, n);
	free(p);
}
