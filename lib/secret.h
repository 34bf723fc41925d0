/*
 * secret.h - secrets (hk.toml(5) "secrets"): sealed for the store, opened
 * for an instance, and a keyed digest that names a value without
 * revealing it.
 *
 * The installation's key is a file on the host (hakopod.toml(5)
 * secret_key_file): 64 hex digits and a newline, mode 0600, made by
 * secret_key_load() when it is absent and asked to.  Two keys are derived
 * from it (crypto_kdf): one seals, one digests, so that a digest says
 * nothing of the sealing key.
 *
 * A sealed value is "1" (format), a random 24-byte nonce, then the
 * XChaCha20-Poly1305 ciphertext and tag of the value, with the app and
 * the name as associated data: a row copied under another app or name
 * does not open.  The digest is a keyed BLAKE2b of app, name and value:
 * without the key file, not even a short value can be guessed from it.
 */
#ifndef HK_SECRET_H
#define HK_SECRET_H

#include <stddef.h>

#define SECRET_KEY_LEN		32
#define SECRET_NAME_MAX		63	/* an environment variable's name */
#define SECRET_VALUE_MAX	65536	/* bytes of a value */
#define SECRET_DIGEST_LEN	64	/* hex digits */
#define SECRET_SHORT_LEN	12	/* of it, as hk secret list shows */
#define SECRET_ERR_LEN		(4096 + 128)
#define SECRET_SEALED_MAX	(1 + 24 + SECRET_VALUE_MAX + 16)

struct secret_key {
	unsigned char	seal[SECRET_KEY_LEN];
	unsigned char	digest[SECRET_KEY_LEN];
};

/*
 * Reads the key file at path into k; when it does not exist and create
 * is set, makes one first, mode 0600, whole or not at all (a temporary
 * file linked into place: of two hosts or commands racing, one key
 * wins and both use it).  A key file that others may read is refused.
 * 0, or -1 with err set ("PATH: reason").
 */
int	secret_key_load(const char *, int, struct secret_key *, char *,
	    size_t);
void	secret_key_clear(struct secret_key *);

/* [A-Za-z_][A-Za-z0-9_]*, 1..SECRET_NAME_MAX bytes. */
int	secret_valid_name(const char *);

/*
 * Seals len bytes (at most SECRET_VALUE_MAX) for app/name: *out is
 * malloc'd, *outlen bytes.  0 or -1 (out of memory, too long).
 */
int	secret_seal(const struct secret_key *, const char *, const char *,
	    const void *, size_t, unsigned char **, size_t *);
/*
 * Opens what secret_seal() made for app/name: *out is malloc'd (free it
 * with secret_free()), *outlen bytes, and a NUL after them.  -1 when it
 * does not open: another key, another app or name, a changed byte.
 */
int	secret_open(const struct secret_key *, const char *, const char *,
	    const unsigned char *, size_t, unsigned char **, size_t *);
/* Wipes and frees a value. */
void	secret_free(unsigned char *, size_t);
/* The keyed digest of app/name's value, in hex. */
int	secret_digest(const struct secret_key *, const char *, const char *,
	    const void *, size_t, char [SECRET_DIGEST_LEN + 1]);
int	secret_valid_digest(const char *);

#endif
