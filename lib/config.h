/*
 * config.h - the operator config (hakopod.toml); the application config
 * (hk.toml) is app.h's, and the two share struct config_diag.
 *
 * Operator config precedence: command-line flag > HAKOPOD_* environment >
 * hakopod.toml > built-in default.  One key table drives parsing, range
 * checks, "-n -v" and the man page.  Unknown keys are errors.
 *
 * Every rejection is a diagnostic "file:line: key: reason" (key is the
 * dotted path, e.g. "services.api.serverless.idle_seconds").
 */
#ifndef HK_CONFIG_H
#define HK_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_DEFAULT_PATH	"/etc/hakopod/hakopod.toml"
#define CONFIG_MAX_FILE		(1024 * 1024)	/* larger files are refused */
#define CONFIG_NAME_MAX		63		/* app and service names */
#define CONFIG_ADDR_MAX		255
#define CONFIG_URL_MAX		1023
#define CONFIG_NETS_MAX		1023	/* trusted_proxies, as "a,b/n" */
#define CONFIG_USER_MAX		255		/* "USER:GROUP" (user.h) */
#define CONFIG_DIAG_MAX		16		/* diagnostics kept per load */
#define CONFIG_NODES_MAX	64		/* [nodes.NAME] tables */
#define CONFIG_NODE_MAX		253		/* a node's name: a DNS name */
#define CONFIG_IP_MAX		45		/* an IPv6 address as text */
#define CONFIG_ENGINE_MAX	271	/* tcp://NAME:PORT, unix:///PATH */
#define CONFIG_FILE_MAX		255	/* a TLS file's path */
#define CONFIG_NET_MAX		15	/* bridge, slirp4netns, host */
#define CONFIG_FREEZER_MAX	7	/* auto, cgroup2, cgroup1, signal */
/*
 * A diagnostic whole: "FILE:LINE: KEY: REASON", FILE a path (4096), KEY
 * a dotted key (384), REASON up to REASON_LEN, which may hold a source's
 * "PATH: reason" (srctree.h).
 */
#define CONFIG_DIAG_LEN		11264
#define CONFIG_WAITING_PAGE	"/etc/hakopod/waiting.html"	/* a default */

/* Collected diagnostics; the first CONFIG_DIAG_MAX are kept, all counted. */
struct config_diag {
	size_t	count;
	char	msg[CONFIG_DIAG_MAX][CONFIG_DIAG_LEN];
};

/* Where an operator setting's effective value came from. */
enum config_source {
	CONFIG_SRC_DEFAULT,
	CONFIG_SRC_FILE,
	CONFIG_SRC_ENV,
	CONFIG_SRC_FLAG,
};

/*
 * [nodes.NAME] of hakopod.toml: a node services may be placed on, besides
 * the default node (this host).
 */
struct config_node {
	char		name[CONFIG_NODE_MAX + 1];
	char		address[CONFIG_IP_MAX + 1];	/* its services' */
	char		container_engine[CONFIG_ENGINE_MAX + 1]; /* "" none */
	char		container_network[CONFIG_NET_MAX + 1];	/* "" bridge */
	char		container_tls_ca[CONFIG_FILE_MAX + 1];	/* "" none */
	char		container_tls_cert[CONFIG_FILE_MAX + 1];
	char		container_tls_key[CONFIG_FILE_MAX + 1];
	int		line;		/* of its table */
};

/*
 * [vet] of hakopod.toml: the code vetting gate of hk apply (vet.h).
 * Paths are absolute; "" is unset.
 */
#define CONFIG_VET_PROMPT	"/etc/hakopod/vet-prompt.txt"
#define CONFIG_MODEL_MAX	127
#define CONFIG_EXT_MAX		15	/* bytes of one extension */
#define CONFIG_EXTS_MAX		32	/* extensions in the list */

struct config_vet {
	int64_t		enabled;	/* 0 or 1, 0 */
	char		endpoint[CONFIG_URL_MAX + 1];
	char		api_key_file[CONFIG_FILE_MAX + 1];
	char		model[CONFIG_MODEL_MAX + 1];
	char		ca_file[CONFIG_FILE_MAX + 1];
	char		prompt_file[CONFIG_FILE_MAX + 1];
	int64_t		timeout_seconds;	/* 1..300, 15 */
	int64_t		max_bytes;	/* 1 KiB..16 MiB, 100 KiB */
	char		extensions[CONFIG_EXTS_MAX][CONFIG_EXT_MAX + 1];
	size_t		nextensions;
	int		given;		/* the file has [vet] */
	int		line;		/* of [vet] */
};

/*
 * [metrics] of hakopod.toml: each daemon's private listener of GET
 * /metrics (metrics.h), host:port; "" = none (the default).
 */
enum config_metrics_daemon {
	METRICS_ACTIVATE,
	METRICS_EVENTS,
	METRICS_IDLE,
	METRICS_JOBS,
	METRICS_SCALE,
	METRICS_DAEMONS
};

struct config_metrics {
	char		listen[METRICS_DAEMONS][CONFIG_ADDR_MAX + 1];
	int		line[METRICS_DAEMONS];	/* of each key, or 0 */
	int		given;		/* the file has [metrics] */
};

/* [server] of hakopod.toml, and its [nodes]. */
struct server_config {
	char		path[CONFIG_URL_MAX + 1];	/* file read, "" if none */
	int64_t		allow_root_services;	/* 0 or 1: root services */
	int64_t		cold_start_header;	/* 0 or 1: Hk-Cold-Start */
	char		serverless_address[CONFIG_ADDR_MAX + 1]; /* "" = unset */
	char		serverless_listen[CONFIG_ADDR_MAX + 1];	/* "" = address */
	char		state[CONFIG_URL_MAX + 1];
	char		runtime_dir[CONFIG_URL_MAX + 1];
	char		base_domain[CONFIG_ADDR_MAX + 1];
	char		container_engine[CONFIG_ENGINE_MAX + 1]; /* "" none */
	char		container_network[CONFIG_NET_MAX + 1];	/* bridge ... */
	char		container_tls_ca[CONFIG_FILE_MAX + 1];	/* "" none */
	char		container_tls_cert[CONFIG_FILE_MAX + 1];
	char		container_tls_key[CONFIG_FILE_MAX + 1];
	char		freezer[CONFIG_FREEZER_MAX + 1];	/* exec suspend */
	char		kubernetes_config[CONFIG_URL_MAX + 1];	/* a kubeconfig;
							   "" in-cluster */
	char		kubernetes_namespace[CONFIG_NAME_MAX + 1]; /* "" its */
	int64_t		kubernetes_service_address;	/* 1: the Service's
						   clusterIP, not the pod's */
	char		spool_dir[CONFIG_URL_MAX + 1];	/* request bodies */
	char		service_user[CONFIG_USER_MAX + 1];	/* "" = unset */
	char		service_log_dir[CONFIG_URL_MAX + 1]; /* "" = runtime's
							   logs/ */
	char		s6_scandir[CONFIG_URL_MAX + 1];	/* "" = unset */
	char		secret_key_file[CONFIG_URL_MAX + 1];	/* secret.h */
	char		registry_auth_file[CONFIG_URL_MAX + 1];	/* regauth.h;
								   "" unset */
	int64_t		max_concurrent_requests;	/* 1..65536, 128 */
	int64_t		max_concurrent_starts;		/* 1..64, 2 */
	int64_t		scale_grace_seconds;	/* 1..600, 5: hk-activate parks
						   while hk-scale is away */
	int64_t		max_body_bytes;			/* 0..1 GiB, 4 MiB */
	int64_t		max_serverless_services;	/* 1..65536, 512 */
	int64_t		events_max_age_days;	/* 1..36500, 30 */
	int64_t		events_max_rows;	/* 1..1e9, 100000 */
	int64_t		keep_revisions;	/* 1..1000, 5: hk apply keeps them */
	int64_t		request_log;	/* 0 or 1, 1: send request records */
	int64_t		requests_max_age_days;	/* 1..36500, 7 */
	int64_t		requests_max_rows;	/* 1..1e9, 1000000 */
	int64_t		runs_body_bytes;	/* 0..65536, 4096: excerpt kept */
	int64_t		runs_max_age_days;	/* 1..36500, 30 */
	int64_t		runs_max_rows;		/* 1..1e9, 10000 */
	int64_t		service_log_files;	/* 2..1000, 4: per service */
	int64_t		service_log_size;	/* 4 KiB..1 GiB, 1 MiB: each */
	int64_t		time_unit_ms;	/* 1..1000, 1000: ms per "second" of
					   idle_seconds, for tests only */
	char		waiting_page[CONFIG_URL_MAX + 1]; /* "": built in */
	char		trusted_proxies[CONFIG_NETS_MAX + 1];	/* "a,b/n" */
	char		volume_dirs[CONFIG_NETS_MAX + 1];	/* "/a,/b": where
							   bind mounts may be */
	enum config_source source[48];	/* indexed like config_keys() */
	int		line[48];	/* of each key in the file, or 0 */
	struct config_node nodes[CONFIG_NODES_MAX];	/* in file order */
	size_t		nnodes;
	struct config_vet vet;
	struct config_metrics metrics;
};

/* One row of the operator key table (alphabetical, as "-n -v" prints). */
struct config_key {
	const char	*name;		/* key in [server] */
	const char	*env;		/* HAKOPOD_... or NULL */
	const char	*defval;	/* default as text, "" = unset */
	int		 reloadable;	/* SIGHUP applies it */
};

const struct config_key	*config_keys(size_t *);

/*
 * Loads the operator config: path, else $HAKOPOD_CONFIG, else the default
 * path.  A missing file is fine only when path and $HAKOPOD_CONFIG are both
 * unset (built-in defaults then apply).  Environment overrides are applied.
 * Returns 0, or -1 with diagnostics; *missing is set to 1 when an explicitly
 * named file does not exist or cannot be read (the caller exits 66 rather
 * than 78).
 */
int	config_load_server(struct server_config *, const char *,
	    struct config_diag *, int *);
/* Sets one key as a command-line flag would (source FLAG). -1 on bad value. */
int	config_set_flag(struct server_config *, const char *, const char *,
	    struct config_diag *);
/*
 * A daemon's start: loads the operator config and logs what is wrong.
 * -1 = go on; else exit with it (0 after a check, 66 missing, 78 invalid).
 */
int	config_load_daemon(struct server_config *, const char *, int, int);
/* SIGHUP: reloadable keys take their new values; 0, or -1 kept. */
int	config_reload(struct server_config *, const char *);
/* "-n -v": each key = value (source), one per line; passwords hidden. */
void	config_print(FILE *, const struct server_config *);
/* Effective listen address: serverless_listen, else serverless_address. */
const char *config_listen_address(const struct server_config *);
/*
 * The host of a "host:port" address as the gateway reads a Host header:
 * lower case, an IPv6 address in its brackets; "" when there is none.
 */
void	config_addr_host(const char *, char *, size_t);
/*
 * Whether host (lower case) is the gateway's own: the host of
 * serverless_address or of serverless_listen.  It routes by /fn/ path
 * only (runs are sent so), and no service may claim it.
 */
int	config_gateway_host(const struct server_config *, const char *);
/*
 * The schedules' clock (hk-jobs(8)), Unix ms: the wall clock, run
 * 1000 / time_unit_ms times as fast for tests (hakopod.toml(5)).
 */
int64_t	config_sched_now_ms(const struct server_config *);
/* [metrics]: the address of that daemon's listener, "" if none. */
const char *config_metrics_listen(const struct server_config *,
	    enum config_metrics_daemon);
/* The node of that name, or NULL. */
const struct config_node *config_node_find(const struct server_config *,
	    const char *);

/*
 * How a service's instances run ("backend" of hk.toml(5)).  Not every kind
 * is in every build: config_backend_available() says which hk-scale has.
 * What each kind needs and can do is one table in lib/config.c, which hk
 * validate (lib/app.c) and hk-scale (cmd/hk-scale/backend.c) both read:
 * config_backend_can() asks it for one or more of the BACKEND_* below.
 */
enum backend_kind {
	BACKEND_EXEC,
	BACKEND_CONTAINER,
	BACKEND_S6,
	BACKEND_SYSTEMD,
	BACKEND_KUBERNETES,
	BACKEND_COUNT
};

#define BACKEND_PLACED		0x001	/* runs on node_name's node, not
					   only on this host */
#define BACKEND_SUSPENDS	0x002	/* idle_action = "suspend" */
#define BACKEND_SECRETS_ENV	0x004	/* secrets_env: in the environment */
#define BACKEND_LISTENER	0x008	/* readiness = "socket": hands its
					   command a listener */
#define BACKEND_SETS_HOST	0x010	/* gives its command HOST=127.0.0.1 */
#define BACKEND_ENGINE		0x020	/* a container engine's: healthcheck,
					   container_engine */
#define BACKEND_NEEDS_COMMAND	0x040
#define BACKEND_NEEDS_IMAGE	0x080
#define BACKEND_NEEDS_SCANDIR	0x100	/* server.s6_scandir */
#define BACKEND_LIMITS		0x200	/* applies size: memory, CPU */
#define BACKEND_REPLICAS	0x400	/* replicas > 1, ordinary services */
#define BACKEND_SHARED_PORT	0x1000	/* replicas of a fixed port share
					   one listening socket, fd 3 */
#define BACKEND_IMAGE_ONLY	0x800	/* runs image as it is, with its port
					   and environment: no other key
					   of the service (kubernetes) */
#define BACKEND_OWN_ADDRESS	0x2000	/* each instance at an address of its
					   own (a pod's): a new revision
					   starts beside the old one on the
					   same port */

const char	*config_backend_name(enum backend_kind);
int		 config_backend_find(const char *);	/* -1: no such */
int		 config_backend_available(enum backend_kind);
/* 1 if the kind has every one of the BACKEND_* of caps, available or not. */
int		 config_backend_can(enum backend_kind, unsigned);
/* Why it cannot have secrets_env, for hk validate; NULL if it can. */
const char	*config_backend_env_note(enum backend_kind);

/* A "name": a-z, 0-9 and '-', 1..63 bytes, starting and ending alnum. */
int	config_valid_name(const char *);
/* A normalized absolute path is a volume_dirs entry or under one: 1. */
int	config_volume_dir_allows(const struct server_config *, const char *);
int	config_valid_name_n(const char *, size_t);	/* not terminated */

/*
 * A DNS name: 1..CONFIG_HOST_MAX bytes, labels of 1..63 letters, digits
 * and '-' that neither start nor end with '-', the last label not all
 * digits; upper-case letters only when the second argument is set.
 */
#define CONFIG_HOST_MAX		253
int	config_valid_host(const char *, int);

#endif
