/*
 * spec.h - a service's spec: what the walk of an application file
 * (app_parse()) builds from [services.NAME], and what the store keeps,
 * its canonical JSON (spec_json), written by spec_encode() when "hk
 * apply" stores it and read back by spec_decode() into the same struct
 * service_spec, as the daemons see the services of the installation.
 */
#ifndef HK_SPEC_H
#define HK_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "store.h"
#include "volume.h"

#define SPEC_ERR_LEN	256
#define SPEC_REPLICAS_MAX	64	/* "replicas", hk.toml(5) */

/*
 * An ordinary service's start deadline (startup_timeout_seconds beside
 * its command): longer than a serverless one's, since no request waits
 * on it and a database's first start (an image pull, initdb) is slow.
 */
#define ORDINARY_START_MIN	5
#define ORDINARY_START_MAX	3600
#define ORDINARY_START_DEFAULT	60

enum readiness_kind {
	READY_TCP,
	READY_HTTP,	/* readiness_path holds "/path" */
	READY_NOTIFY,
	READY_SOCKET,
	READY_HEALTH,	/* the image's HEALTHCHECK (container only) */
};

struct serverless_policy {
	int	min_replicas;			/* 0 or 1, default 0 */
	int	idle_seconds;			/* 30..86400, 300 */
	int	startup_timeout_seconds;	/* 5..300, 60 */
	int	request_timeout_seconds;	/* 1..300, 60 */
	int	max_concurrency;		/* 1..64, 16 */
	int	request_buffering;	/* 0 or 1, 1: bodies read whole first */
	int	waiting_page_after_ms;	/* 0..300000, 0 = no waiting page */
	int	idle_action;		/* IDLE_STOP (default), IDLE_SUSPEND */
	int	suspend_max_seconds;	/* 30..604800, 3600: then stopped */
	int	idle_check_max_seconds;	/* 10..86400, 600: then slept */
	int	start_from;		/* START_FROM_EXEC (default), or a
					   template: START_FROM_PYTHON */
};

/* image_pull: when hk-scale pulls a container's image (hk.toml(5)). */
enum image_pull {
	IMAGE_PULL_MISSING,	/* when the engine lacks it (the default) */
	IMAGE_PULL_ALWAYS,	/* before every start */
	IMAGE_PULL_NEVER,	/* never: the image must be on the engine */
};

enum idle_action {
	IDLE_STOP,
	IDLE_SUSPEND,
};

/* start_from: how the exec backend starts an instance (hk.toml(5)). */
enum start_from {
	START_FROM_EXEC,	/* its command, exec'd */
	START_FROM_PYTHON,	/* forked from hk-scale's Python template */
	START_FROM_NODE,	/* a spare Node process of hk-scale's */
};

struct service_env {
	char	*name;
	char	*value;
};

/* [services.X.schedules.NAME]: what a run sends, as a job_spec. */
struct schedule_spec {
	char		 name[CONFIG_NAME_MAX + 1];
	int		 line;		/* of [services.X.schedules.NAME] */
	char		*spec_json;
};

struct service_spec {
	char			 name[CONFIG_NAME_MAX + 1];
	int			 line;		/* of [services.NAME] */
	char			*image;		/* NULL if absent */
	enum image_pull		 image_pull;
	char			*image_digest;	/* pinned by hk apply; NULL */
	char			**command;	/* argv, NULL-terminated; NULL if absent */
	size_t			 ncommand;
	char			*directory;	/* absolute; default: the file's dir */
	/*
	 * "source": read by app_load/app_parse into its archive (srctree.h);
	 * only code_hash goes into spec_json.  hk-scale sets directory to
	 * where it wrote the archive out.
	 */
	char			*source;	/* absolute; NULL if absent */
	char			*code_hash;	/* hex SHA-256; NULL if absent */
	unsigned char		*code;		/* the archive */
	size_t			 code_len;
	struct service_env	*env;		/* [services.X.environment] */
	size_t			 nenv;
	/*
	 * "secrets": names, sorted; digests (secret.h) NULL from the file,
	 * filled by hk apply from the store (spec_set_secrets(), spec.h)
	 * and by spec_decode() from a stored spec.  Never a value.
	 */
	char			**secrets;
	char			**secret_digests;
	size_t			 nsecrets;
	int			 secrets_env;	/* also as variables */
	int			 secrets_line;	/* of "secrets" */
	int			 port;		/* 0..65535; 0 = hk assigns */
	int			 public_;	/* "public" */
	int			 disabled;	/* enabled = false: kept stopped */
	char			*size;		/* default "small" */
	int			 replicas;	/* default 1 */
	int			 ordinary_start_timeout; /* s: an ordinary
						   service's start, in its
						   [services.NAME]
						   startup_timeout_seconds */
	char			**hosts;	/* lower-cased; default one host */
	size_t			 nhosts;
	enum readiness_kind	 readiness;
	char			*readiness_path;
	/*
	 * listen = "unix": the exec backend hands the command a Unix
	 * socket in a directory only hk enters (LISTEN_FDS, no PORT), so
	 * that the gateway alone reaches it; 0: "tcp", 127.0.0.1:PORT.
	 */
	int			 listen_unix;
	/*
	 * [serverless] idle_check = "http:/PATH": "/PATH", asked by hk-idle
	 * before a sleep; NULL: none.  Not in struct serverless_policy,
	 * which its readers copy whole.
	 */
	char			*idle_check_path;
	char			*node_name;	/* NULL if absent */
	char			*k8s_deployment; /* kubernetes_deployment: the
						   operator's; NULL: hk's */
	enum backend_kind	 backend;	/* given, or by default */
	char			*user;	/* "USER[:GROUP]"; NULL: service_user */
	int			 serverless;	/* has [serverless] */
	struct serverless_policy policy;
	/* [services.X.schedules.NAME], in file order; not in spec_json */
	struct schedule_spec	*schedules;
	size_t			 nschedules;
	int			 schedules_line;
	/*
	 * "volumes" (volume.h), in file order; in spec_json as their
	 * canonical entries, and only when there are some.
	 */
	struct spec_volume	*volumes;
	size_t			 nvolumes;
	int			 volumes_line;
	/*
	 * Canonical JSON of everything above (keys sorted, defaults filled
	 * in): what the store keeps, and what "changed" is decided on.
	 */
	char			*spec_json;
};

/*
 * [services.NAME.serverless], alphabetical: name, range, default, and
 * flags: SPEC_PK_BOOL a boolean (range 0..1, TOML true/false),
 * SPEC_PK_SPARSE an integer added after specs were first stored,
 * SPEC_PK_ENUM a string naming one of names[] (range 0..n-1; stored as
 * that string).  All three go into spec_json only when not their
 * default, so that a stored spec keeps its bytes (and its service its
 * revision) when hk learns a key.
 */
#define SPEC_PK_BOOL	1
#define SPEC_PK_SPARSE	2
#define SPEC_PK_ENUM	4

struct spec_policy_key {
	const char	*name;
	int		 min;
	int		 max;
	int		 def;
	int		 flags;
	size_t		 off;	/* in struct serverless_policy */
	const char *const *names;	/* SPEC_PK_ENUM */
};

/* The keys of [serverless], *n of them: what is checked, and written. */
const struct spec_policy_key *spec_policy_keys(size_t *);

/* One service of the installation. */
struct svc {
	char			 app[STORE_NAME_MAX + 1];
	char			 name[STORE_NAME_MAX + 1];
	char			 id[2 * STORE_NAME_MAX + 2];	/* app/name */
	int64_t			 revision;
	enum store_desired	 desired;
	struct service_spec	 spec;
};

/*
 * The canonical JSON of a service, as an object: every field with its
 * default filled in, no line numbers; what is stored is that object,
 * with what spec_json keeps as written (the ordinary-only keys of
 * hk.toml(5)), dumped with JSON_SORT_KEYS | JSON_COMPACT.  NULL: no
 * memory.
 */
json_t	*spec_encode(const struct service_spec *);
/*
 * An HTTP check as readiness and idle_check name it, "http:/PATH": its
 * "/PATH" (visible ASCII, no space: it goes into a request line), or NULL
 * when r is not one.
 */
const char *spec_http_check(const char *r);
/*
 * Whether a command is one the Python template can start (start_from =
 * "python-template", hk.toml(5)): a python interpreter, then -u at
 * most, then a script or -m and a module, then the program's arguments.
 */
int	spec_python_command(char *const *, size_t);
/*
 * Whether a command is one a Node spare can become (start_from =
 * "node-spare", hk.toml(5)): node, then a script (no option: those are
 * the interpreter's, started before), then the program's arguments.
 */
int	spec_node_command(char *const *, size_t);
/* Decodes spec_json; 0, or -1 with a reason (spec left empty). */
int	spec_decode(const char *, struct service_spec *, char *, size_t);
void	spec_clear(struct service_spec *);
/*
 * The backend of a stored spec that names none: exec when it has a
 * command, else container.
 */
enum backend_kind spec_backend_default(const struct service_spec *);
/*
 * The limits of a size (hk.toml(5)): 0 and both set, or -1 for a size
 * that is not one (a spec stored by a newer hk).  NULL is the default.
 */
int	spec_size_limits(const char *, int64_t *, int64_t *);

/*
 * Secrets in a spec: "secrets" an object of name and digest (secret.h;
 * "" while hk apply has not looked them up), and "secrets_env" only when
 * true.  spec_secrets_put() adds them to a spec being built (-1 out of
 * memory); spec_set_secrets() gives s the digests (one per name, in its
 * order) and rewrites s->spec_json with them: a changed value is then a
 * changed spec, a new revision.
 */
int	spec_secrets_put(json_t *, const struct service_spec *);

/*
 * spec_image.c: image_pull and the digest hk apply pins (hk.toml(5)),
 * in spec_json only when not their defaults, so that a stored spec
 * keeps its bytes.  _put adds them to a spec's object, _get reads them
 * back (-1: mistyped).
 */
int	 spec_image_pull_find(const char *);
const char *spec_image_pull_name(enum image_pull);
int	 spec_image_put(json_t *, const struct service_spec *);
int	 spec_image_get(json_t *, struct service_spec *);
/* "sha256:" and 64 lower-case hex digits. */
#define SPEC_DIGEST_MAX	71
int	 spec_valid_digest(const char *);
/* Pins the image to that digest: in the struct and its spec_json. */
int	 spec_set_image_digest(struct service_spec *, const char *);
int	spec_set_secrets(struct service_spec *, char *const *);

/*
 * Every service in the store, ordered by app and name.  A service whose
 * spec cannot be decoded is reported in err and skipped (-1 is returned
 * only when the store fails).
 */
int	spec_load_all(struct store *, struct svc **, size_t *, char *, size_t);
void	spec_free_all(struct svc *, size_t);

#endif
