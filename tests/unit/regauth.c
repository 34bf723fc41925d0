/*
 * regauth.c - lib/regauth.c: the registry an image names, the header
 * made from either form of an entry, the entry of another registry left
 * alone, and the files refused (others may read it, not JSON, no
 * "auths", an "auth" that is not base64 of USER:PASSWORD) with reasons
 * that hold no byte of a credential.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b64.h"
#include "regauth.h"
#include "tap.h"

static char dir[] = "/tmp/hk-regauth.XXXXXX";
static char path[64];

static void
put(const char *text, mode_t mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd == -1 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		diag("cannot write %s", path);
	fchmod(fd, mode);
	close(fd);
}

static void
t_registry(void)
{
	static const char *const cases[][2] = {
		{ "127.0.0.1:5000/hk/fn:v1", "127.0.0.1:5000" },
		{ "ghcr.io/example/fn", "ghcr.io" },
		{ "localhost/fn:1", "localhost" },
		{ "library/postgres:16", "docker.io" },
		{ "postgres", "docker.io" },
		{ "docker.io/library/postgres:16", "docker.io" },
	};
	char host[REGAUTH_HOST_MAX + 1];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		host[0] = '\0';
		(void)regauth_registry(cases[i][0], host, sizeof(host));
		is(host, cases[i][1], "registry of %s", cases[i][0]);
	}
}

/* The JSON inside a header, decoded back. */
static char *
header_json(const char *h)
{
	static char json[512];
	char b[512], *p;
	long n;

	if (h == NULL || strncmp(h, "X-Registry-Auth: ", 17) != 0)
		return NULL;
	strlcpy(b, h + 17, sizeof(b));
	for (p = b; *p != '\0'; p++)
		if (*p == '-')
			*p = '+';
		else if (*p == '_')
			*p = '/';
	if ((n = b64_decode(b, strlen(b), (unsigned char *)json,
	    sizeof(json) - 1)) < 0)
		return NULL;
	json[n] = '\0';
	return json;
}

static void
t_header(void)
{
	char err[512], *h;
	int rc;

	/* base64("hkuser:pa:ss>?") */
	put("{\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"aGt1c2VyOnBhOnNzPj8=\"},"
	    "\"https://ghcr.io/v1/\":{\"username\":\"u2\",\"password\":"
	    "\"p2\"}}}", 0600);
	rc = regauth_header(path, "127.0.0.1:5000/hk/fn:v1", &h, err,
	    sizeof(err));
	is(rc == 0 ? header_json(h) : err, "{\"username\":\"hkuser\","
	    "\"password\":\"pa:ss>?\",\"serveraddress\":\"127.0.0.1:5000\"}",
	    "auth: the header's JSON (the password may hold ':')");
	ok(h != NULL && strpbrk(h + 17, "+/") == NULL,
	    "base64url: no '+' nor '/'");
	regauth_free(h);
	rc = regauth_header(path, "ghcr.io/example/fn:1", &h, err,
	    sizeof(err));
	is(rc == 0 ? header_json(h) : err, "{\"username\":\"u2\","
	    "\"password\":\"p2\",\"serveraddress\":\"ghcr.io\"}",
	    "username and password, a key with scheme and path");
	regauth_free(h);
	rc = regauth_header(path, "quay.io/x/y", &h, err, sizeof(err));
	ok(rc == 0 && h == NULL, "another registry: no header");
	rc = regauth_header("", "quay.io/x/y", &h, err, sizeof(err));
	ok(rc == 0 && h == NULL, "no file: no header");
}

static void
t_refused(void)
{
	static const struct {
		const char	*text;
		mode_t		 mode;
		const char	*why;
	} cases[] = {
		{ "{\"auths\":{\"r:1\":{\"auth\":\"dTpzM2NyZXQ=\"}}}", 0640,
		    "mode 0640: must be 0600 or stricter" },
		{ "{\"auths\":{\"r:1\":{\"auth\":\"dTpzM2NyZXQ=\"}}}", 0604,
		    "mode 0604: must be 0600 or stricter" },
		{ "{\"auths\": s3cret", 0600, "not JSON (line 1)" },
		{ "{\"s3cret\":1}", 0600, "no \"auths\" object" },
		{ "{\"auths\":{\"r:1\":{\"auth\":\"s3cret==\"}}}", 0600,
		    "r:1: \"auth\" is not base64 of USER:PASSWORD" },
		{ "{\"auths\":{\"r:1\":{\"auth\":\"czNjcmV0\"}}}", 0600,
		    "r:1: \"auth\" is not base64 of USER:PASSWORD" },
		{ "{\"auths\":{\"r:1\":{\"password\":\"s3cret\"}}}", 0600,
		    "r:1: neither \"auth\" nor \"username\" and \"password\"" },
	};
	char err[512], want[512], *h;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put(cases[i].text, cases[i].mode);
		err[0] = '\0';
		snprintf(want, sizeof(want), "%s: %s", path, cases[i].why);
		ok(regauth_header(path, "r:1/x", &h, err, sizeof(err)) == -1 &&
		    h == NULL, "refused: %s", cases[i].why);
		is(err, want, "the reason");
		ok(strstr(err, "s3cret") == NULL && strstr(err, "czNjcmV0") ==
		    NULL && strstr(err, "dTpzM2NyZXQ") == NULL,
		    "no credential in it");
	}
	snprintf(want, sizeof(want), "%s.none", path);
	ok(regauth_header(want, "r:1/x", &h, err, sizeof(err)) == -1 &&
	    strstr(err, "No such file") != NULL, "a missing file is refused");
}

int
main(void)
{
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/auth.json", dir);
	plan(6 + 5 + 7 * 3 + 1);
	t_registry();
	t_header();
	t_refused();
	unlink(path);
	rmdir(dir);
	return done();
}
