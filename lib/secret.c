/*
 * secret.c - the key file, sealing, opening and digests of secrets
 * (secret.h), with libsodium.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "privfile.h"
#include "secret.h"

#define FORMAT		'1'
#define NONCE_LEN	crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_LEN		crypto_aead_xchacha20poly1305_ietf_ABYTES
#define KDF_CONTEXT	"hksecret"	/* crypto_kdf_CONTEXTBYTES, 8 */
#define KDF_SEAL	1
#define KDF_DIGEST	2
#define KEYFILE_LEN	(2 * SECRET_KEY_LEN + 1)	/* hex and newline */
#define AD_MAX		(16 + 2 * 64 + 2)

static int	key_read(const char *, unsigned char *, char *, size_t);
static int	key_create(const char *, char *, size_t);
static size_t	assoc(const char *, const char *, unsigned char *);

static int
ready(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

/* The file's 32 bytes; 1 when it does not exist. */
static int
key_read(const char *path, unsigned char *raw, char *err, size_t errlen)
{
	char buf[KEYFILE_LEN + 1];
	struct stat st;
	ssize_t n;
	size_t got;
	int fd;

	if ((fd = privfile_open(path, &st, err, errlen)) == -1)
		return errno == ENOENT ? 1 : -1;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != KEYFILE_LEN || buf[KEYFILE_LEN - 1] != '\n' ||
	    sodium_hex2bin(raw, SECRET_KEY_LEN, buf, KEYFILE_LEN - 1, NULL,
	    &got, NULL) != 0 || got != SECRET_KEY_LEN) {
		snprintf(err, errlen, "%s: not a key (64 hex digits and a "
		    "newline)", path);
		sodium_memzero(buf, sizeof(buf));
		return -1;
	}
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

/*
 * A temporary file written whole, then linked to path: link() fails if
 * path exists, so a key is never replaced and never seen half written.
 */
static int
key_create(const char *path, char *err, size_t errlen)
{
	char tmp[PATH_MAX], hex[KEYFILE_LEN + 1];
	unsigned char raw[SECRET_KEY_LEN];
	int fd, r = -1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >=
	    sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	if ((fd = mkstemp(tmp)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
	hex[KEYFILE_LEN - 1] = '\n';
	if (fchmod(fd, 0600) == -1 ||
	    write(fd, hex, KEYFILE_LEN) != KEYFILE_LEN || fsync(fd) == -1)
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
	else if (link(tmp, path) == -1 && errno != EEXIST)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else
		r = 0;
	close(fd);
	unlink(tmp);
	sodium_memzero(raw, sizeof(raw));
	sodium_memzero(hex, sizeof(hex));
	return r;
}

int
secret_key_load(const char *path, int create, struct secret_key *k,
    char *err, size_t errlen)
{
	unsigned char raw[SECRET_KEY_LEN];
	int r;

	if (ready() == -1) {
		snprintf(err, errlen, "libsodium: unable to initialize");
		return -1;
	}
	if ((r = key_read(path, raw, err, errlen)) == 1 && create) {
		if (key_create(path, err, errlen) == -1)
			return -1;
		r = key_read(path, raw, err, errlen);
	}
	if (r == 1)
		snprintf(err, errlen, "%s: no such file (hk secret set makes "
		    "it)", path);
	if (r != 0)
		return -1;
	crypto_kdf_derive_from_key(k->seal, sizeof(k->seal), KDF_SEAL,
	    KDF_CONTEXT, raw);
	crypto_kdf_derive_from_key(k->digest, sizeof(k->digest), KDF_DIGEST,
	    KDF_CONTEXT, raw);
	sodium_memzero(raw, sizeof(raw));
	return 0;
}

void
secret_key_clear(struct secret_key *k)
{
	sodium_memzero(k, sizeof(*k));
}

int
secret_valid_name(const char *s)
{
	size_t i;

	if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (i >= SECRET_NAME_MAX || !(s[i] == '_' ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* "hk-secret-1", app and name, each ended by a NUL: unambiguous. */
static size_t
assoc(const char *app, const char *name, unsigned char *ad)
{
	size_t n = 0, a = strnlen(app, 64), b = strnlen(name, 64);

	memcpy(ad, "hk-secret-1", 12);
	n = 12;
	memcpy(ad + n, app, a);
	n += a;
	ad[n++] = '\0';
	memcpy(ad + n, name, b);
	n += b;
	ad[n++] = '\0';
	return n;
}

int
secret_seal(const struct secret_key *k, const char *app, const char *name,
    const void *val, size_t len, unsigned char **out, size_t *outlen)
{
	unsigned char ad[AD_MAX], *b;
	unsigned long long clen;
	size_t adlen;

	*out = NULL;
	if (ready() == -1 || len > SECRET_VALUE_MAX)
		return -1;
	if ((b = malloc(1 + NONCE_LEN + len + TAG_LEN)) == NULL)
		return -1;
	b[0] = FORMAT;
	randombytes_buf(b + 1, NONCE_LEN);
	adlen = assoc(app, name, ad);
	crypto_aead_xchacha20poly1305_ietf_encrypt(b + 1 + NONCE_LEN, &clen,
	    val, len, ad, adlen, NULL, b + 1, k->seal);
	*out = b;
	*outlen = 1 + NONCE_LEN + (size_t)clen;
	return 0;
}

int
secret_open(const struct secret_key *k, const char *app, const char *name,
    const unsigned char *b, size_t len, unsigned char **out, size_t *outlen)
{
	unsigned char ad[AD_MAX], *v;
	unsigned long long vlen;
	size_t adlen;

	*out = NULL;
	if (ready() == -1 || len < 1 + NONCE_LEN + TAG_LEN || b[0] != FORMAT ||
	    len > SECRET_SEALED_MAX)
		return -1;
	if ((v = malloc(len)) == NULL)
		return -1;
	adlen = assoc(app, name, ad);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(v, &vlen, NULL,
	    b + 1 + NONCE_LEN, len - 1 - NONCE_LEN, ad, adlen, b + 1,
	    k->seal) != 0) {
		free(v);
		return -1;
	}
	v[vlen] = '\0';	/* len > vlen: the tag and nonce */
	*out = v;
	*outlen = (size_t)vlen;
	return 0;
}

void
secret_free(unsigned char *v, size_t len)
{
	if (v == NULL)
		return;
	sodium_memzero(v, len);
	free(v);
}

int
secret_digest(const struct secret_key *k, const char *app, const char *name,
    const void *val, size_t len, char hex[SECRET_DIGEST_LEN + 1])
{
	crypto_generichash_state st;
	unsigned char ad[AD_MAX], h[SECRET_DIGEST_LEN / 2];
	size_t adlen;

	if (ready() == -1)
		return -1;
	adlen = assoc(app, name, ad);
	crypto_generichash_init(&st, k->digest, sizeof(k->digest), sizeof(h));
	crypto_generichash_update(&st, ad, adlen);
	crypto_generichash_update(&st, val, len);
	crypto_generichash_final(&st, h, sizeof(h));
	sodium_bin2hex(hex, SECRET_DIGEST_LEN + 1, h, sizeof(h));
	return 0;
}

int
secret_valid_digest(const char *s)
{
	size_t i;

	for (i = 0; i < SECRET_DIGEST_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}
