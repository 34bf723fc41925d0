/*
 * secret.c - unit tests of lib/secret: the key file (made 0600 once,
 * refused when others may read it or when it is not a key), a round
 * trip, and every way a sealed value must not open: another key,
 * another app or name (swapped rows), a changed byte, a cut one.
 * Digests: keyed, bound to app and name.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "secret.h"
#include "tap.h"

static const char value[] = "s3cr3t-value";

static int
opens(const struct secret_key *k, const char *app, const char *name,
    const unsigned char *b, size_t len)
{
	unsigned char *v;
	size_t vlen;
	int r;

	if ((r = secret_open(k, app, name, b, len, &v, &vlen)) == 0) {
		r = vlen == strlen(value) && memcmp(v, value, vlen) == 0 ?
		    0 : -2;
		secret_free(v, vlen);
	}
	return r;
}

int
main(void)
{
	char dir[] = "/tmp/hk-secret-unit.XXXXXX", path[256], other[256];
	char err[SECRET_ERR_LEN], d1[SECRET_DIGEST_LEN + 1];
	char d2[SECRET_DIGEST_LEN + 1], d3[SECRET_DIGEST_LEN + 1];
	struct secret_key k, k2, k3;
	unsigned char *b, *b2;
	size_t len, len2;
	struct stat st;
	FILE *f;

	plan(24);
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/secret.key", dir);
	snprintf(other, sizeof(other), "%s/other.key", dir);

	ok(secret_key_load(path, 0, &k, err, sizeof(err)) == -1 &&
	    strstr(err, "no such file") != NULL, "absent key, not made: %s",
	    err);
	ok(secret_key_load(path, 1, &k, err, sizeof(err)) == 0,
	    "absent key made");
	ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600 &&
	    st.st_size == 65, "key file mode 0600, 64 hex and a newline");
	ok(secret_key_load(path, 1, &k2, err, sizeof(err)) == 0 &&
	    memcmp(&k, &k2, sizeof(k)) == 0, "a second load: the same key");
	ok(secret_key_load(other, 1, &k3, err, sizeof(err)) == 0 &&
	    memcmp(&k, &k3, sizeof(k)) != 0, "another file, another key");

	chmod(path, 0640);
	ok(secret_key_load(path, 0, &k2, err, sizeof(err)) == -1 &&
	    strstr(err, "0640") != NULL, "a key others may read: refused");
	chmod(path, 0600);
	if ((f = fopen(other, "w")) != NULL) {
		fputs("not a key\n", f);
		fclose(f);
	}
	ok(secret_key_load(other, 1, &k2, err, sizeof(err)) == -1 &&
	    strstr(err, "not a key") != NULL, "a file that is not a key");

	ok(secret_seal(&k, "app", "DB_PASSWORD", value, strlen(value), &b,
	    &len) == 0, "seal");
	ok(memmem(b, len, value, strlen(value)) == NULL,
	    "the sealed bytes do not hold the value");
	ok(opens(&k, "app", "DB_PASSWORD", b, len) == 0, "round trip");
	ok(secret_seal(&k, "app", "DB_PASSWORD", value, strlen(value), &b2,
	    &len2) == 0 && len2 == len && memcmp(b, b2, len) != 0,
	    "a random nonce: sealing twice differs");
	free(b2);
	ok(opens(&k3, "app", "DB_PASSWORD", b, len) == -1,
	    "another key: does not open");
	ok(opens(&k, "app", "OTHER", b, len) == -1,
	    "another name (a swapped row): does not open");
	ok(opens(&k, "app2", "DB_PASSWORD", b, len) == -1,
	    "another app (a swapped row): does not open");
	b[len - 1] ^= 1;
	ok(opens(&k, "app", "DB_PASSWORD", b, len) == -1,
	    "a changed tag byte: does not open");
	b[len - 1] ^= 1;
	b[30] ^= 0x40;
	ok(opens(&k, "app", "DB_PASSWORD", b, len) == -1,
	    "a changed ciphertext byte: does not open");
	b[30] ^= 0x40;
	ok(opens(&k, "app", "DB_PASSWORD", b, len - 1) == -1,
	    "a cut value: does not open");
	ok(opens(&k, "app", "DB_PASSWORD", b, len) == 0,
	    "restored: opens again");
	free(b);

	secret_digest(&k, "app", "A", value, strlen(value), d1);
	secret_digest(&k3, "app", "A", value, strlen(value), d2);
	secret_digest(&k, "app", "B", value, strlen(value), d3);
	ok(secret_valid_digest(d1) && strcmp(d1, d2) != 0,
	    "the digest depends on the key");
	ok(strcmp(d1, d3) != 0, "and on the name");
	secret_digest(&k, "app", "A", value, strlen(value), d2);
	ok(strcmp(d1, d2) == 0, "and is the same for the same value");

	ok(secret_valid_name("DB_PASSWORD") && secret_valid_name("_x1"),
	    "valid names");
	ok(!secret_valid_name("") && !secret_valid_name("1A") &&
	    !secret_valid_name("A-B") && !secret_valid_name("A/B") &&
	    !secret_valid_name("A.B"), "invalid names");
	ok(!secret_valid_name("A123456789012345678901234567890123456789"
	    "012345678901234567890123"), "a name of 64 bytes");

	unlink(path);
	unlink(other);
	rmdir(dir);
	return done();
}
