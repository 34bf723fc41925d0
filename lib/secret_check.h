/*
 * secret_check.h - is this host's key file the installation's?  Every
 * host that opens or seals the store's secrets must hold the same key
 * (hakopod.toml(5) secret_key_file): a host with another one would fail each
 * start that needs a secret, or seal values no other host can open.
 */
#ifndef HK_SECRET_CHECK_H
#define HK_SECRET_CHECK_H

#include <stddef.h>

#include "secret.h"
#include "store.h"

/*
 * The key at path, checked against the store: it must open the secret
 * sealed last, when the store holds one (and then it must exist).  When
 * the store holds none, the key is loaded as secret_key_load() does,
 * made if create is set.  k may be NULL: the check alone, and no key is
 * needed while the store holds no secret.  0; 1 when the key cannot be
 * used: not the installation's (err says which secret it does not
 * open), missing, or refused as secret_key_load() refuses one; -1 when
 * the store fails (err).
 */
int	secret_key_check(struct store *, const char *, int,
	    struct secret_key *, char *, size_t);

#endif
