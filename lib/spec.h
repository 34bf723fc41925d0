/*
 * spec.h - the services of the installation as the daemons see them: read
 * back from the store, where "hk apply" wrote each service's canonical
 * spec_json (config.h), into the same struct service_spec that config
 * builds.
 */
#ifndef HK_SPEC_H
#define HK_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "store.h"

#define SPEC_ERR_LEN	256

/* One service of the installation. */
struct svc {
	char			 app[STORE_NAME_MAX + 1];
	char			 name[STORE_NAME_MAX + 1];
	char			 id[2 * STORE_NAME_MAX + 2];	/* app/name */
	int64_t			 revision;
	enum store_desired	 desired;
	struct service_spec	 spec;
};

/* Decodes spec_json; 0, or -1 with a reason (spec left empty). */
int	spec_decode(const char *, struct service_spec *, char *, size_t);
void	spec_clear(struct service_spec *);
/*
 * The backend of a stored spec that names none: exec when it has a
 * command, else container.
 */
enum backend_kind spec_backend_default(const struct service_spec *);

/*
 * Secrets in a spec: "secrets" an object of name and digest (secret.h;
 * "" while hk apply has not looked them up), and "secrets_env" only when
 * true.  spec_secrets_put() adds them to a spec being built (-1 out of
 * memory); spec_set_secrets() gives s the digests (one per name, in its
 * order) and rewrites s->spec_json with them: a changed value is then a
 * changed spec, a new revision.
 */
int	spec_secrets_put(json_t *, const struct service_spec *);
int	spec_set_secrets(struct service_spec *, char *const *);

/*
 * Every service in the store, ordered by app and name.  A service whose
 * spec cannot be decoded is reported in err and skipped (-1 is returned
 * only when the store fails).
 */
int	svc_load_all(struct store *, struct svc **, size_t *, char *, size_t);
void	svc_free_all(struct svc *, size_t);

#endif
