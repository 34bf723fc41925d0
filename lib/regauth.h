/*
 * regauth.h - credentials for image registries (hakopod.toml(5)
 * registry_auth_file): the Docker config.json "auths" form,
 *
 *	{"auths": {"HOST[:PORT]": {"auth": "base64(USER:PASSWORD)"}}}
 *
 * ("username" and "password" are taken in place of "auth"), turned
 * into the engine's X-Registry-Auth header for the registry an image
 * names.  The file must be the owner's alone (mode 0600 or stricter,
 * as secret_key_file): others could read the passwords.  No reason
 * this module gives holds a byte of a credential.
 */
#ifndef HK_REGAUTH_H
#define HK_REGAUTH_H

#include <stddef.h>

#define REGAUTH_FILE_MAX	(1024 * 1024)	/* bytes of the file */
#define REGAUTH_HOST_MAX	255

/*
 * The registry of an image reference as the engines read it: its first
 * component when that has a '.' or a ':' or is "localhost", else
 * "docker.io".  0, or -1 when it does not fit in size bytes.
 */
int	regauth_registry(const char *, char *, size_t);

/*
 * The user and password the file at path has for image's registry, each
 * malloc'd (free them with regauth_free()), or both NULL when path is ""
 * or the file has no entry for it.  0, or -1 with err ("PATH: reason").
 */
int	regauth_creds(const char *, const char *, char **, char **, char *,
	    size_t);

/*
 * The header line "X-Registry-Auth: ..." for image's registry, from the
 * file at path: *out is malloc'd (free it with regauth_free()), or NULL
 * when path is "" or the file has no entry for the registry.  0, or -1
 * with err ("PATH: reason") for a file that cannot be used.
 */
int	regauth_header(const char *, const char *, char **, char *, size_t);
/* Wipes and frees what the two above return; NULL is nothing. */
void	regauth_free(char *);

#endif
