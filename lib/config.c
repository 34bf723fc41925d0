/*
 * config.c - the operator config (hakopod.toml) and the application config
 * (see config.h, hakopod.toml(5) and hk.toml(5)).
 *
 * Both files are read whole (at most CONFIG_MAX_FILE bytes, checked before
 * reading), parsed by lib/toml.c and walked here.  Every problem becomes one
 * diagnostic "file:line: key: reason"; the walk goes on after a problem so
 * that one run reports all of them.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "config_impl.h"
#include "cw.h"
#include "log.h"
#include "proxyproto.h"
#include "spec.h"
#include "secret.h"
#include "srctree.h"
#include "toml.h"
#include "user.h"

#define IMAGE_MAX	255	/* an image reference (lib/engine's bound) */
#define HOST_MAX	253	/* a DNS name */
#define RUNTIME_DIR_MAX	80	/* leaves room for "/<name>.sock" in sun_path */
#define ENV_NAME_MAX	255
#define READY_PATH_MAX	1024
#define REPLICAS_MAX	64
#define SECRETS_MAX	64	/* names in a service's secrets */

/*
 * The operator key table.
 */
enum key_type {
	KT_ADDR,	/* host:port; "" = unset */
	KT_BOOL,	/* int64_t 0 or 1; TOML true/false */
	KT_DOMAIN,	/* a DNS name, lower-cased */
	KT_ENGINE,	/* unix:///PATH or tcp://HOST:PORT; "" = none */
	KT_IP,		/* an IPv4 or IPv6 address, no port */
	KT_NETS,	/* addresses and CIDR blocks, "a,b/n"; TOML an array */
	KT_INT,		/* int64_t within [min, max] */
	KT_PATH,	/* absolute, at most RUNTIME_DIR_MAX bytes */
	KT_FILE,	/* absolute, an existing file; "" = unset */
	KT_NET,		/* bridge, slirp4netns or host */
	KT_FREEZER,	/* auto, cgroup2, cgroup1 or signal */
	KT_OPTFILE,	/* absolute, read when used; "" = unset */
	KT_OPTPATH,	/* the same, or "" = unset */
	KT_URL,		/* sqlite://PATH, postgres://..., postgresql://... */
	KT_USER,	/* USER or USER:GROUP of this host; "" = unset */
};

struct server_rule {
	enum key_type	 type;
	int64_t		 min;
	int64_t		 max;
	size_t		 off;	/* of the field in struct server_config */
	size_t		 size;	/* of that field */
};

/*
 * [server], alphabetical, as "-n -v" prints it and hakopod.toml(5) lists it:
 * name, environment variable, default, reloadable by SIGHUP, type, range,
 * field.  The one table; it expands into config_keys() and the rules below.
 */
#define SERVER_KEYS(K)							\
	K("allow_root_services", NULL, "false", 1,			\
	    KT_BOOL, 0, 1, allow_root_services)				\
	K("base_domain", "HAKOPOD_BASE_DOMAIN", "localhost", 1,		\
	    KT_DOMAIN, 0, 0, base_domain)				\
	K("cold_start_header", NULL, "false", 1,			\
	    KT_BOOL, 0, 1, cold_start_header)				\
	K("container_engine", NULL, "unix:///var/run/docker.sock", 0,	\
	    KT_ENGINE, 0, 0, container_engine)				\
	K("container_network", NULL, "bridge", 0,			\
	    KT_NET, 0, 0, container_network)				\
	K("container_tls_ca", NULL, "", 0,				\
	    KT_FILE, 0, 0, container_tls_ca)				\
	K("container_tls_cert", NULL, "", 0,				\
	    KT_FILE, 0, 0, container_tls_cert)				\
	K("container_tls_key", NULL, "", 0,				\
	    KT_FILE, 0, 0, container_tls_key)				\
	K("events_max_age_days", NULL, "30", 1,				\
	    KT_INT, 1, 36500, events_max_age_days)			\
	K("events_max_rows", NULL, "100000", 1,				\
	    KT_INT, 1, 1000000000, events_max_rows)			\
	K("freezer", NULL, "signal", 0,				\
	    KT_FREEZER, 0, 0, freezer)					\
	K("max_body_bytes", NULL, "4194304", 1,				\
	    KT_INT, 0, 1073741824, max_body_bytes)			\
	K("max_concurrent_requests", NULL, "128", 1,			\
	    KT_INT, 1, 65536, max_concurrent_requests)			\
	K("max_concurrent_starts", NULL, "2", 1,			\
	    KT_INT, 1, 64, max_concurrent_starts)			\
	K("max_serverless_services", NULL, "512", 1,			\
	    KT_INT, 1, 65536, max_serverless_services)			\
	K("request_log", NULL, "true", 1,				\
	    KT_BOOL, 0, 1, request_log)					\
	K("requests_max_age_days", NULL, "7", 1,			\
	    KT_INT, 1, 36500, requests_max_age_days)			\
	K("requests_max_rows", NULL, "1000000", 1,			\
	    KT_INT, 1, 1000000000, requests_max_rows)			\
	K("runs_body_bytes", NULL, "4096", 1,				\
	    KT_INT, 0, 65536, runs_body_bytes)				\
	K("runs_max_age_days", NULL, "30", 1,				\
	    KT_INT, 1, 36500, runs_max_age_days)			\
	K("runs_max_rows", NULL, "10000", 1,				\
	    KT_INT, 1, 1000000000, runs_max_rows)			\
	K("runtime_dir", "HAKOPOD_RUNTIME_DIR", "/run/hakopod", 0,	\
	    KT_PATH, 0, 0, runtime_dir)					\
	K("s6_scandir", NULL, "", 0,					\
	    KT_OPTPATH, 0, 0, s6_scandir)				\
	K("secret_key_file", "HAKOPOD_SECRET_KEY_FILE",			\
	    "/var/lib/hakopod/secret.key", 0,				\
	    KT_PATH, 0, 0, secret_key_file)				\
	K("serverless_address", "HAKOPOD_SERVERLESS_ADDRESS", "", 0,	\
	    KT_ADDR, 0, 0, serverless_address)				\
	K("serverless_listen", "HAKOPOD_SERVERLESS_LISTEN", "", 0,	\
	    KT_ADDR, 0, 0, serverless_listen)				\
	K("service_log_dir", NULL, "", 0,				\
	    KT_OPTPATH, 0, 0, service_log_dir)				\
	K("service_log_files", NULL, "4", 0,				\
	    KT_INT, 2, 1000, service_log_files)				\
	K("service_log_size", NULL, "1048576", 0,			\
	    KT_INT, 4096, 1073741824, service_log_size)			\
	K("service_user", "HAKOPOD_SERVICE_USER", "", 1,		\
	    KT_USER, 0, 0, service_user)				\
	K("spool_dir", NULL, "/var/tmp", 1,				\
	    KT_PATH, 0, 0, spool_dir)					\
	K("state", "HAKOPOD_STATE", "sqlite:///var/lib/hakopod/state.db", 0, \
	    KT_URL, 0, 0, state)					\
	K("time_unit_ms", NULL, "1000", 0,				\
	    KT_INT, 1, 1000, time_unit_ms)				\
	K("trusted_proxies", "HAKOPOD_TRUSTED_PROXIES", "", 1,		\
	    KT_NETS, 0, 0, trusted_proxies)				\
	K("waiting_page", NULL, CONFIG_WAITING_PAGE, 1,			\
	    KT_OPTFILE, 0, 0, waiting_page)

#define KEY_PUBLIC(n, e, d, r, t, lo, hi, f)	{ n, e, d, r },
#define KEY_RULE(n, e, d, r, t, lo, hi, f)				\
	{ t, lo, hi, offsetof(struct server_config, f),			\
	    sizeof(((struct server_config *)NULL)->f) },

static const struct config_key server_keys[] = { SERVER_KEYS(KEY_PUBLIC) };
static const struct server_rule server_rules[] = { SERVER_KEYS(KEY_RULE) };

/*
 * [nodes.NAME], alphabetical: name, required, type, field.  The one table
 * of that section, as SERVER_KEYS is of [server]; no environment
 * variable, and SIGHUP applies them all.
 */
#define NODE_KEYS(K)							\
	K("address", 1, KT_IP, address)					\
	K("container_engine", 0, KT_ENGINE, container_engine)		\
	K("container_network", 0, KT_NET, container_network)		\
	K("container_tls_ca", 0, KT_FILE, container_tls_ca)		\
	K("container_tls_cert", 0, KT_FILE, container_tls_cert)		\
	K("container_tls_key", 0, KT_FILE, container_tls_key)

struct node_rule {
	const char	*name;
	int		 required;
	enum key_type	 type;
	size_t		 off;	/* of the field in struct config_node */
	size_t		 size;
};

#define NODE_RULE(n, req, t, f)						\
	{ n, req, t, offsetof(struct config_node, f),			\
	    sizeof(((struct config_node *)NULL)->f) },

static const struct node_rule node_rules[] = { NODE_KEYS(NODE_RULE) };

_Static_assert(CONFIG_USER_MAX == USER_SPEC_MAX,
    "struct server_config: service_user does not fit user.h");
_Static_assert(nitems(server_keys) <= nitems(((struct server_config *)NULL)->
    source), "struct server_config: source[] too small");
_Static_assert(nitems(server_keys) <= nitems(((struct server_config *)NULL)->
    line), "struct server_config: line[] too small");

/*
 * The application config: keys of [services.NAME], alphabetical.
 */
enum svc_key {
	SK_AUTOSCALE,
	SK_BACKEND,
	SK_BACKEND_CERTIFICATE,
	SK_BACKEND_HTTP2,
	SK_COMMAND,
	SK_DIRECTORY,
	SK_ENVIRONMENT,
	SK_GPU,
	SK_HOSTS,
	SK_IMAGE,
	SK_JOBS,
	SK_NODE_NAME,
	SK_PORT,
	SK_PORTS,
	SK_PUBLIC,
	SK_READINESS,
	SK_REPLICAS,
	SK_SCHEDULES,
	SK_SECRETS,
	SK_SECRETS_ENV,
	SK_SERVERLESS,
	SK_SIZE,
	SK_SOURCE,
	SK_TCP_PORTS,
	SK_USER,
	SK_VOLUMES,
	SK_COUNT
};

static const struct {
	const char	*name;
	int		 ordinary;	/* only ordinary services may use it */
} svc_keys[SK_COUNT] = {
	[SK_AUTOSCALE] =		{ "autoscale", 1 },
	[SK_BACKEND] =			{ "backend", 0 },
	[SK_BACKEND_CERTIFICATE] =	{ "backend_certificate", 1 },
	[SK_BACKEND_HTTP2] =		{ "backend_http2", 1 },
	[SK_COMMAND] =			{ "command", 0 },
	[SK_DIRECTORY] =		{ "directory", 0 },
	[SK_ENVIRONMENT] =		{ "environment", 0 },
	[SK_GPU] =			{ "gpu", 1 },
	[SK_HOSTS] =			{ "hosts", 0 },
	[SK_IMAGE] =			{ "image", 0 },
	[SK_JOBS] =			{ "jobs", 1 },
	[SK_NODE_NAME] =		{ "node_name", 0 },
	[SK_PORT] =			{ "port", 0 },
	[SK_PORTS] =			{ "ports", 1 },
	[SK_PUBLIC] =			{ "public", 0 },
	[SK_READINESS] =		{ "readiness", 0 },
	[SK_REPLICAS] =			{ "replicas", 0 },
	[SK_SCHEDULES] =		{ "schedules", 0 },
	[SK_SECRETS] =			{ "secrets", 0 },
	[SK_SECRETS_ENV] =		{ "secrets_env", 0 },
	[SK_SERVERLESS] =		{ "serverless", 0 },
	[SK_SIZE] =			{ "size", 0 },
	[SK_SOURCE] =			{ "source", 0 },
	[SK_TCP_PORTS] =		{ "tcp_ports", 1 },
	[SK_USER] =			{ "user", 0 },
	[SK_VOLUMES] =			{ "volumes", 1 },
};

/* Variables hk itself gives the process. */
static const char *const env_reserved[] = {
	"CREDENTIALS_DIRECTORY", "LISTEN_FDNAMES", "LISTEN_FDS", "LISTEN_PID", "NOTIFY_SOCKET", "PORT",
};


/*
 * The backends hk.toml(5) names, and whether this build's hk-scale has
 * them (cmd/hk-scale/backend.c refuses to start if its backends[] says
 * otherwise).
 */
static const struct {
	const char	*name;
	int		 available;
	int		 suspends;	/* idle_action = "suspend" */
} backend_kinds[BACKEND_COUNT] = {
	[BACKEND_EXEC] =	{ "exec", 1, 1 },
	[BACKEND_CONTAINER] =	{ "container", 1, 1 },
	[BACKEND_S6] =		{ "s6", 1, 1 },
	[BACKEND_SYSTEMD] =	{ "systemd", 1, 1 },
};



static int	 valid_host(const char *, int);
static int	 check_addr(const char *, char *, size_t);
static int	 valid_image(const char *);
static int	 check_user(const char *, char *, size_t);
static int	 check_engine(const char *, char *, size_t);
static int	 check_file(const char *, char *, size_t);
static int	 check_engine_tls(const char *, const char *, const char *,
		    const char *, char *, size_t);
static int	 check_text(enum key_type, size_t, const char *, char *,
		    size_t);
static int	 check_server_str(size_t, const char *, char *, size_t);
static int	 check_server_int(size_t, int64_t, char *, size_t);
static void	 print_list(FILE *, const char *);
static int	 server_set_list(struct server_config *, size_t,
		    const struct toml_value *, char *, size_t);
static int	 server_set_text(struct server_config *, size_t, const char *,
		    char *, size_t);
static void	 server_defaults(struct server_config *);
static int	 server_walk(struct server_config *, const struct toml_value *,
		    const char *, struct config_diag *);
static int	 server_file_key(struct server_config *,
		    const struct toml_kv *, const char *,
		    struct config_diag *);
static int	 server_env(struct server_config *, struct config_diag *);
static int	 node_key(struct config_node *, const struct toml_kv *,
		    const char *, int *, const char *, struct config_diag *);
static int	 node_parse(struct server_config *, const struct toml_kv *,
		    const char *, struct config_diag *);
static int	 nodes_walk(struct server_config *, const struct toml_kv *,
		    const char *, struct config_diag *);
static ssize_t	 server_key_find(const char *, size_t);
static void	 node_print(FILE *, const char *, const char *, const char *,
		    const char *);
static int	 server_cross(struct server_config *, const char *,
		    struct config_diag *);
static int	 path_norm(const char *, char *, size_t);
static int	 file_dir(const char *, char *, size_t);
static void	 app_root(struct actx *, const struct toml_value *);
static void	 svc_parse(struct actx *, const struct toml_kv *,
		    struct service_spec *);
static void	 svc_value(struct actx *, int, const struct toml_kv *,
		    const struct toml_kv *, int, struct service_spec *);
static void	 svc_command(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_source(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static char	*svc_path(struct actx *, const struct toml_kv *, const char *);
static void	 svc_directory(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_secrets(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_secret_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    const struct service_spec *);
static void	 svc_environment(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_hosts(struct actx *, const struct toml_kv *,
		    const struct toml_kv *, const char *,
		    struct service_spec *);
static void	 svc_default_host(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_readiness(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 svc_policy(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static void	 policy_enum(struct actx *, const struct toml_kv *,
		    const char *, const char *const *, int *);
static void	 svc_suspend_rules(struct actx *, const struct toml_kv *,
		    const char *, const struct service_spec *);
static void	 svc_user(struct actx *, const struct toml_kv *,
		    const char *, struct service_spec *);
static int	 svc_backend(struct actx *, const struct toml_kv *const *,
		    const char *, struct service_spec *);
static void	 svc_placement(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_env_host(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_container(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_serverless_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    struct service_spec *);
static void	 host_note(struct actx *, const char *,
		    const struct toml_kv *, int);
static int	 hostref_cmp(const void *, const void *);
static void	 hosts_check(struct actx *);
static int	 svc_extras(struct actx *, json_t *,
		    const struct toml_kv *const *, const char *);
static char	*svc_json(struct actx *, const struct service_spec *,
		    const struct toml_kv *const *, const char *);

/*
 * A DNS name: 1..253 bytes, labels of 1..63 letters, digits and '-' that
 * neither start nor end with '-', the last label not all digits.  Upper-case
 * letters only when anycase is set.
 */
static int
valid_host(const char *s, int anycase)
{
	size_t len = strlen(s), lab = 0, i;
	int alldig = 1;
	unsigned char c;

	if (len == 0 || len > HOST_MAX)
		return 0;
	for (i = 0; i <= len; i++) {
		c = s[i];
		if (c == '.' || c == '\0') {
			if (lab == 0 || s[i - 1] == '-')
				return 0;
			if (c == '\0')
				break;
			lab = 0;
			alldig = 1;
			continue;
		}
		if (lab == 0 && c == '-')
			return 0;
		if (!cw_is_lower(c) && !cw_is_digit(c) && c != '-' &&
		    !(anycase && cw_is_alpha(c)))
			return 0;
		if (!cw_is_digit(c))
			alldig = 0;
		if (++lab > 63)
			return 0;
	}
	return !alldig;
}

/*
 * An image reference as an engine takes it: [registry[:port]/]name[:tag]
 * [@digest], in the characters those may hold; the engine judges the rest.
 */
static int
valid_image(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:/@");

	return s[n] == '\0' && (cw_is_alpha((unsigned char)s[0]) ||
	    cw_is_digit((unsigned char)s[0]));
}

void
config_addr_host(const char *addr, char *host, size_t size)
{
	const char *end;
	size_t n, i;

	if (size == 0)
		return;
	if (addr[0] == '[')
		end = strchr(addr, ']') != NULL ? strchr(addr, ']') + 1 : addr;
	else if ((end = strrchr(addr, ':')) == NULL)
		end = addr;
	n = (size_t)(end - addr);
	if (n >= size)
		n = 0;
	for (i = 0; i < n; i++)
		host[i] = addr[i] >= 'A' && addr[i] <= 'Z' ?
		    addr[i] - 'A' + 'a' : addr[i];
	host[n] = '\0';
}

int
config_gateway_host(const struct server_config *cfg, const char *host)
{
	char own[CONFIG_ADDR_MAX + 1];

	config_addr_host(cfg->serverless_address, own, sizeof(own));
	if (own[0] != '\0' && strcmp(host, own) == 0)
		return 1;
	config_addr_host(cfg->serverless_listen, own, sizeof(own));
	return own[0] != '\0' && strcmp(host, own) == 0;
}

/* host:port: IPv4, [IPv6] or a DNS name, and a port 1..65535. */
static int
check_addr(const char *s, char *why, size_t whysz)
{
	char host[CONFIG_ADDR_MAX + 1];
	struct in6_addr a6;
	struct in_addr a4;
	const char *colon, *port, *p;
	size_t hl;
	int v6 = 0;

	if (s[0] == '[') {
		if ((p = strchr(s, ']')) == NULL || p[1] != ':')
			goto hostport;
		hl = p - s - 1;
		port = p + 2;
		s++;
		v6 = 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL)
			goto hostport;
		hl = colon - s;
		port = colon + 1;
	}
	if (hl == 0 || hl >= sizeof(host) || *port == '\0')
		goto hostport;
	memcpy(host, s, hl);
	host[hl] = '\0';
	for (p = port; *p != '\0'; p++)
		if (!cw_is_digit((unsigned char)*p))
			goto badport;
	if (strtonum(port, 1, 65535, NULL) == 0)
		goto badport;
	if (v6) {
		if (inet_pton(AF_INET6, host, &a6) != 1)
			goto badhost;
	} else if (inet_pton(AF_INET, host, &a4) != 1 &&
	    !valid_host(host, 1))
		goto badhost;
	return 0;
hostport:
	(void)snprintf(why, whysz, "must be host:port");
	return -1;
badport:
	(void)snprintf(why, whysz, "port must be between 1 and 65535");
	return -1;
badhost:
	(void)snprintf(why, whysz, "invalid host (IPv4, [IPv6] or a name)");
	return -1;
}

int
config_check_addr(const char *s, char *why, size_t whysz)
{
	return check_addr(s, why, whysz);
}

/*
 * Operator config.
 */

const struct config_key *
config_keys(size_t *n)
{
	if (n != NULL)
		*n = nitems(server_keys);
	return server_keys;
}

/*
 * The start of every daemon: load the operator config, logging each
 * diagnostic.  Returns -1 to go on, else the status to exit with: 66 when
 * the named file is missing, 78 when the configuration is invalid, and 0
 * after "-n" (check) has said "configuration OK" (with "-v", every key
 * first).
 */
int
config_load_daemon(struct server_config *cfg, const char *path, int check,
    int verbose)
{
	struct config_diag diag;
	size_t i;
	int missing = 0;

	memset(&diag, 0, sizeof(diag));
	if (config_load_server(cfg, path, &diag, &missing) == -1) {
		for (i = 0; i < diag.count && i < CONFIG_DIAG_MAX; i++)
			log_errorx("%s", diag.msg[i]);
		if (diag.count == 0)
			log_errorx("unable to load the configuration");
		return missing ? EX_NOINPUT : EX_CONFIG;
	}
	if (!check)
		return -1;
	if (verbose)
		config_print(stderr, cfg);
	fprintf(stderr, "configuration OK\n");
	return EX_OK;
}

/*
 * SIGHUP, for every daemon: the file is read again and the keys the table
 * marks reloadable take their new values in *cfg, and so do the nodes; a
 * change to any other key is reported and waits for a restart.  0 reloaded, -1 the file did
 * not load and *cfg is as it was (the reasons are logged).
 */
int
config_reload(struct server_config *cfg, const char *path)
{
	struct server_config nc;
	struct config_diag diag;
	const struct server_rule *r;
	char *cur, *new;
	size_t i;
	int missing = 0, same;

	memset(&diag, 0, sizeof(diag));
	if (config_load_server(&nc, path, &diag, &missing) == -1) {
		for (i = 0; i < diag.count && i < CONFIG_DIAG_MAX; i++)
			log_warnx("%s", diag.msg[i]);
		log_warnx("reload: the configuration is kept as it was");
		return -1;
	}
	for (i = 0; i < nitems(server_keys); i++) {
		r = &server_rules[i];
		cur = (char *)cfg + r->off;
		new = (char *)&nc + r->off;
		same = r->type == KT_INT || r->type == KT_BOOL ?
		    memcmp(cur, new, sizeof(int64_t)) == 0 :
		    strcmp(cur, new) == 0;
		if (same)
			continue;
		if (!server_keys[i].reloadable) {
			log_warnx("reload: %s changes only with a restart",
			    server_keys[i].name);
			continue;
		}
		memcpy(cur, new, r->size);
		cfg->source[i] = nc.source[i];
	}
	memcpy(cfg->nodes, nc.nodes, sizeof(cfg->nodes));
	cfg->nnodes = nc.nnodes;
	if (memcmp(cfg->metrics.listen, nc.metrics.listen,
	    sizeof(nc.metrics.listen)) != 0)
		log_warnx("reload: [metrics] changes only with a restart");
	return 0;
}

/*
 * "-n -v": every key's effective value and where it came from, in the
 * order of the key table, then each node's.  A password in the state URL
 * is not shown.
 */
void
config_print(FILE *fp, const struct server_config *cfg)
{
	static const char *const from[] = {
		[CONFIG_SRC_DEFAULT] = "default", [CONFIG_SRC_FILE] = "file",
		[CONFIG_SRC_ENV] = "environment", [CONFIG_SRC_FLAG] = "flag",
	};
	const char *base = (const char *)cfg, *text, *at, *colon;
	const struct config_node *n;
	size_t i;

	for (i = 0; i < nitems(server_keys); i++) {
		fprintf(fp, "%s = ", server_keys[i].name);
		if (server_rules[i].type == KT_BOOL) {
			fprintf(fp, "%s", *(const int64_t *)(base +
			    server_rules[i].off) ? "true" : "false");
		} else if (server_rules[i].type == KT_INT) {
			fprintf(fp, "%lld", (long long)*(const int64_t *)
			    (base + server_rules[i].off));
		} else if (server_rules[i].type == KT_NETS) {
			print_list(fp, base + server_rules[i].off);
		} else {
			text = base + server_rules[i].off;
			at = strchr(text, '@');
			colon = strstr(text, "://");
			colon = colon != NULL ? strchr(colon + 3, ':') : NULL;
			if (at != NULL && colon != NULL && colon < at)
				fprintf(fp, "\"%.*s:***%s\"",
				    (int)(colon - text), text, at);
			else
				fprintf(fp, "\"%s\"", text);
		}
		fprintf(fp, " (%s)\n", from[cfg->source[i]]);
	}
	for (i = 0; i < cfg->nnodes; i++) {
		n = &cfg->nodes[i];
		fprintf(fp, "nodes.%s.address = \"%s\" (file)\n", n->name,
		    n->address);
		node_print(fp, n->name, "container_engine",
		    n->container_engine, "");
		node_print(fp, n->name, "container_network",
		    n->container_network, "bridge");
		node_print(fp, n->name, "container_tls_ca",
		    n->container_tls_ca, "");
		node_print(fp, n->name, "container_tls_cert",
		    n->container_tls_cert, "");
		node_print(fp, n->name, "container_tls_key",
		    n->container_tls_key, "");
	}
	vet_print(fp, &cfg->vet);
	metrics_print(fp, &cfg->metrics);
}

/* "a,b" as a TOML array of strings, as the file gives it. */
static void
print_list(FILE *fp, const char *text)
{
	const char *comma;

	fputc('[', fp);
	while (*text != '\0') {
		comma = strchr(text, ',');
		fprintf(fp, "\"%.*s\"%s", comma != NULL ?
		    (int)(comma - text) : (int)strlen(text), text,
		    comma != NULL ? ", " : "");
		text = comma != NULL ? comma + 1 : text + strlen(text);
	}
	fputc(']', fp);
}

/* A key of a node as "-n -v" prints it: "" is the default. */
static void
node_print(FILE *fp, const char *node, const char *key, const char *v,
    const char *def)
{
	fprintf(fp, "nodes.%s.%s = \"%s\" (%s)\n", node, key,
	    *v != '\0' ? v : def, *v != '\0' ? "file" : "default");
}

int64_t
config_sched_now_ms(const struct server_config *cfg)
{
	struct timespec ts;
	int64_t ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return ms * 1000 / cfg->time_unit_ms;
}

const char *
config_listen_address(const struct server_config *cfg)
{
	if (cfg->serverless_listen[0] != '\0')
		return cfg->serverless_listen;
	return cfg->serverless_address;
}

static ssize_t
server_key_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < nitems(server_keys); i++)
		if (strlen(server_keys[i].name) == len &&
		    memcmp(server_keys[i].name, name, len) == 0)
			return i;
	return -1;
}

/* service_user: a user (and group) of this host; any uid, root too. */
static int
check_user(const char *s, char *why, size_t whysz)
{
	struct user_ids u;

	return user_resolve(s, &u, why, whysz);
}

/*
 * unix:///PATH (absolute, fitting a Unix socket address) or tcp://HOST:PORT
 * as check_addr() has it; "" = none.
 */
static int
check_engine(const char *s, char *why, size_t whysz)
{
	if (*s == '\0')
		return 0;
	if (strncmp(s, "tcp://", 6) == 0)
		return check_addr(s + 6, why, whysz);
	if (strncmp(s, "unix:///", 8) != 0) {
		(void)snprintf(why, whysz,
		    "must be unix:///PATH or tcp://HOST:PORT");
		return -1;
	}
	if (strlen(s + 7) >= sizeof(((struct sockaddr_un *)NULL)->sun_path)) {
		(void)snprintf(why, whysz, "socket path too long (at most %zu "
		    "bytes)", sizeof(((struct sockaddr_un *)NULL)->sun_path) -
		    1);
		return -1;
	}
	return 0;
}

/*
 * A TLS file of an engine: an absolute path that exists ("" = unset).
 * Only a missing file is refused here: hk may run as a user that cannot
 * read hk-scale's key, and hk-scale says so at its first connection.
 */
static int
check_file(const char *s, char *why, size_t whysz)
{
	struct stat st;

	if (*s == '\0')
		return 0;
	if (s[0] != '/') {
		(void)snprintf(why, whysz, "must be an absolute path");
		return -1;
	}
	if (stat(s, &st) == -1 && errno == ENOENT) {
		(void)snprintf(why, whysz, "no such file");
		return -1;
	}
	return 0;
}

/*
 * An engine's TLS files go together, and only with tcp://: the client
 * certificate and key, and the CA that signed the engine's certificate.
 */
static int
check_engine_tls(const char *url, const char *ca, const char *cert,
    const char *key, char *why, size_t whysz)
{
	int n = (*ca != '\0') + (*cert != '\0') + (*key != '\0');

	if (n != 0 && n != 3) {
		(void)snprintf(why, whysz, "container_tls_ca, "
		    "container_tls_cert and container_tls_key go together");
		return -1;
	}
	if (n == 3 && strncmp(url, "tcp://", 6) != 0) {
		(void)snprintf(why, whysz,
		    "TLS files are for a tcp:// container_engine");
		return -1;
	}
	return 0;
}

/* trusted_proxies: what the gateway will parse (lib/proxyproto.h). */
static int
check_nets(const char *s, char *why, size_t whysz)
{
	struct proxyproto_nets nets;

	return proxyproto_nets_parse(s, &nets, why, whysz);
}

/* Validates a string value of a type, in a field of size bytes. */
static int
check_text(enum key_type type, size_t size, const char *s, char *why,
    size_t whysz)
{
	struct in6_addr a6;
	struct in_addr a4;
	size_t len = strlen(s);

	if (len >= size) {
		(void)snprintf(why, whysz, "too long (at most %zu bytes)",
		    size - 1);
		return -1;
	}
	switch (type) {
	case KT_ADDR:
		if (len == 0)
			return 0;
		return check_addr(s, why, whysz);
	case KT_ENGINE:
		return check_engine(s, why, whysz);
	case KT_FILE:
		return check_file(s, why, whysz);
	case KT_NET:
		if (strcmp(s, "bridge") == 0 || strcmp(s, "slirp4netns") == 0 ||
		    strcmp(s, "host") == 0)
			return 0;
		(void)snprintf(why, whysz,
		    "must be bridge, slirp4netns or host");
		return -1;
	case KT_NETS:
		return check_nets(s, why, whysz);
	case KT_FREEZER:
		if (strcmp(s, "auto") == 0 || strcmp(s, "cgroup2") == 0 ||
		    strcmp(s, "cgroup1") == 0 || strcmp(s, "signal") == 0)
			return 0;
		(void)snprintf(why, whysz,
		    "must be auto, cgroup2, cgroup1 or signal");
		return -1;
	case KT_IP:
		if (inet_pton(AF_INET, s, &a4) == 1 ||
		    inet_pton(AF_INET6, s, &a6) == 1)
			return 0;
		(void)snprintf(why, whysz, "must be an IPv4 or IPv6 address");
		return -1;
	case KT_DOMAIN:
		if (valid_host(s, 1))
			return 0;
		(void)snprintf(why, whysz, "invalid domain name");
		return -1;
	case KT_OPTFILE:
		if (len == 0 || s[0] == '/')
			return 0;
		(void)snprintf(why, whysz, "must be an absolute path");
		return -1;
	case KT_OPTPATH:
		if (len == 0)
			return 0;
		/* FALLTHROUGH */
	case KT_PATH:
		if (s[0] != '/') {
			(void)snprintf(why, whysz, "must be an absolute path");
			return -1;
		}
		if (len > RUNTIME_DIR_MAX) {
			(void)snprintf(why, whysz,
			    "too long (at most %d bytes)", RUNTIME_DIR_MAX);
			return -1;
		}
		return 0;
	case KT_URL:
		if ((strncmp(s, "sqlite://", 9) == 0 && s[9] != '\0') ||
		    strncmp(s, "postgres://", 11) == 0 ||
		    strncmp(s, "postgresql://", 13) == 0)
			return 0;
		(void)snprintf(why, whysz,
		    "must be sqlite://PATH or postgres://...");
		return -1;
	case KT_USER:
		if (len == 0)
			return 0;
		return check_user(s, why, whysz);
	case KT_BOOL:
		(void)snprintf(why, whysz, "must be true or false");
		return -1;
	case KT_INT:
		break;
	}
	(void)snprintf(why, whysz, "must be an integer");
	return -1;
}

/* Validates a string value for key i; 0, or -1 with a reason. */
static int
check_server_str(size_t i, const char *s, char *why, size_t whysz)
{
	return check_text(server_rules[i].type, server_rules[i].size, s, why,
	    whysz);
}

static int
check_server_int(size_t i, int64_t v, char *why, size_t whysz)
{
	const struct server_rule *r = &server_rules[i];

	if (r->type != KT_INT) {
		(void)snprintf(why, whysz, "must be a string");
		return -1;
	}
	if (v < r->min || v > r->max) {
		(void)snprintf(why, whysz, "must be between %lld and %lld",
		    (long long)r->min, (long long)r->max);
		return -1;
	}
	return 0;
}

/* Sets key i from text (environment, flag); 0, or -1 with a reason. */
static int
server_set_text(struct server_config *cfg, size_t i, const char *s,
    char *why, size_t whysz)
{
	const struct server_rule *r = &server_rules[i];
	const char *p, *errstr;
	char *dst;
	int64_t v;

	if (r->type == KT_BOOL) {
		if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0) {
			(void)snprintf(why, whysz, "must be true or false");
			return -1;
		}
		v = s[0] == 't';
		memcpy((char *)cfg + r->off, &v, sizeof(v));
		return 0;
	}
	if (r->type == KT_INT) {
		for (p = s; *p != '\0'; p++)
			if (!cw_is_digit((unsigned char)*p))
				break;
		if (*s == '\0' || *p != '\0') {
			(void)snprintf(why, whysz, "must be an integer");
			return -1;
		}
		v = strtonum(s, r->min, r->max, &errstr);
		if (errstr != NULL) {
			(void)snprintf(why, whysz,
			    "must be between %lld and %lld",
			    (long long)r->min, (long long)r->max);
			return -1;
		}
		memcpy((char *)cfg + r->off, &v, sizeof(v));
		return 0;
	}
	if (check_server_str(i, s, why, whysz) == -1)
		return -1;
	dst = (char *)cfg + r->off;
	if (strlcpy(dst, s, r->size) >= r->size)
		return -1;	/* checked above */
	if (r->type == KT_DOMAIN)
		for (; *dst != '\0'; dst++)
			if (*dst >= 'A' && *dst <= 'Z')
				*dst += 'a' - 'A';
	return 0;
}

/*
 * A list key from the file: an array of strings, kept as the text the
 * environment gives ("a,b"), so that one check serves both.
 */
static int
server_set_list(struct server_config *cfg, size_t i,
    const struct toml_value *v, char *why, size_t whysz)
{
	char text[CONFIG_NETS_MAX + 1];
	const struct toml_value *e;
	size_t k;

	if (v->type != TOML_ARRAY) {
		(void)snprintf(why, whysz, "must be an array of strings");
		return -1;
	}
	text[0] = '\0';
	for (k = 0; k < v->u.array.len; k++) {
		e = v->u.array.items[k];
		if (e->type != TOML_STRING || strlen(e->u.string.ptr) !=
		    e->u.string.len || strchr(e->u.string.ptr, ',') != NULL) {
			(void)snprintf(why, whysz, "item %zu: must be an "
			    "address or CIDR block", k + 1);
			return -1;
		}
		if ((k > 0 && strlcat(text, ",", sizeof(text)) >=
		    sizeof(text)) || strlcat(text, e->u.string.ptr,
		    sizeof(text)) >= sizeof(text)) {
			(void)snprintf(why, whysz, "too long (at most %d "
			    "bytes)", CONFIG_NETS_MAX);
			return -1;
		}
	}
	return server_set_text(cfg, i, text, why, whysz);
}

static void
server_defaults(struct server_config *cfg)
{
	char why[CW_REASON_LEN];
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < nitems(server_keys); i++) {
		if (server_set_text(cfg, i, server_keys[i].defval, why,
		    sizeof(why)) == -1 && server_keys[i].defval[0] != '\0')
			abort();	/* the table itself is wrong */
		cfg->source[i] = CONFIG_SRC_DEFAULT;
	}
	vet_defaults(&cfg->vet);
}

/* One key of [server] as written in the file. */
static int
server_file_key(struct server_config *cfg, const struct toml_kv *kv,
    const char *file, struct config_diag *d)
{
	const struct toml_value *v = kv->value;
	char key[CW_KEYPATH_LEN], why[CW_REASON_LEN];
	ssize_t i;
	int rc;

	cw_kpath(key, "server", kv->key, kv->keylen);
	if ((i = server_key_find(kv->key, kv->keylen)) == -1) {
		cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
		    v->type == TOML_TABLE ? "unknown table" : "unknown key");
		return -1;
	}
	if (server_rules[i].type == KT_BOOL) {
		if (v->type != TOML_BOOL) {
			(void)snprintf(why, sizeof(why),
			    "must be true or false");
			rc = -1;
		} else {
			int64_t b = v->u.boolean != 0;

			memcpy((char *)cfg + server_rules[i].off, &b,
			    sizeof(b));
			rc = 0;
		}
	} else if (server_rules[i].type == KT_INT) {
		if (v->type != TOML_INTEGER) {
			(void)snprintf(why, sizeof(why), "must be an integer");
			rc = -1;
		} else if ((rc = check_server_int(i, v->u.integer, why,
		    sizeof(why))) == 0)
			memcpy((char *)cfg + server_rules[i].off,
			    &v->u.integer, sizeof(int64_t));
	} else if (server_rules[i].type == KT_NETS)
		rc = server_set_list(cfg, i, v, why, sizeof(why));
	else if (v->type != TOML_STRING) {
		(void)snprintf(why, sizeof(why), "must be a string");
		rc = -1;
	} else if (strlen(v->u.string.ptr) != v->u.string.len) {
		(void)snprintf(why, sizeof(why), "must not contain NUL");
		rc = -1;
	} else
		rc = server_set_text(cfg, i, v->u.string.ptr, why,
		    sizeof(why));
	if (rc == -1) {
		cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key, why);
		return -1;
	}
	cfg->source[i] = CONFIG_SRC_FILE;
	cfg->line[i] = kv->line;
	return 0;
}

static int
server_walk(struct server_config *cfg, const struct toml_value *root,
    const char *file, struct config_diag *d)
{
	const struct toml_kv *kv;
	const struct toml_value *srv;
	char key[CW_KEYPATH_LEN];
	size_t i, j;
	int rc = 0;

	for (i = 0; i < root->u.table.len; i++) {
		kv = &root->u.table.items[i];
		if (cw_key_is(kv, "nodes")) {
			if (nodes_walk(cfg, kv, file, d) == -1)
				rc = -1;
			continue;
		}
		if (cw_key_is(kv, "vet")) {
			if (vet_walk(&cfg->vet, kv, file, d) == -1)
				rc = -1;
			continue;
		}
		if (cw_key_is(kv, "metrics")) {
			if (metrics_walk(&cfg->metrics, kv, file, d) == -1)
				rc = -1;
			continue;
		}
		if (!cw_key_is(kv, "server")) {
			cw_kpath(key, NULL, kv->key, kv->keylen);
			cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
			    kv->value->type == TOML_TABLE ? "unknown table" :
			    "unknown key");
			rc = -1;
			continue;
		}
		srv = kv->value;
		if (srv->type != TOML_TABLE) {
			cw_diag_add(d, "%s:%d: server: must be a table",
			    file, kv->line);
			rc = -1;
			continue;
		}
		for (j = 0; j < srv->u.table.len; j++)
			if (server_file_key(cfg, &srv->u.table.items[j], file,
			    d) == -1)
				rc = -1;
	}
	return rc;
}

/* HAKOPOD_* overrides; an empty variable counts as unset. */
static int
server_env(struct server_config *cfg, struct config_diag *d)
{
	char why[CW_REASON_LEN];
	const char *v;
	size_t i;
	int rc = 0;

	for (i = 0; i < nitems(server_keys); i++) {
		if (server_keys[i].env == NULL ||
		    (v = getenv(server_keys[i].env)) == NULL || *v == '\0')
			continue;
		if (server_set_text(cfg, i, v, why, sizeof(why)) == -1) {
			cw_diag_add(d, "%s: server.%s: %s",
			    server_keys[i].env, server_keys[i].name, why);
			rc = -1;
			continue;
		}
		cfg->source[i] = CONFIG_SRC_ENV;
	}
	return rc;
}

/* One key of a node; *seen is set for a known one, valid or not. */
static int
node_key(struct config_node *n, const struct toml_kv *kv, const char *prefix,
    int *seen, const char *file, struct config_diag *d)
{
	const struct node_rule *r;
	const struct toml_value *v = kv->value;
	char key[CW_KEYPATH_LEN], why[CW_REASON_LEN];
	size_t j;

	cw_kpath(key, prefix, kv->key, kv->keylen);
	for (j = 0; j < nitems(node_rules); j++)
		if (cw_key_is(kv, node_rules[j].name))
			break;
	if (j == nitems(node_rules)) {
		cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
		    v->type == TOML_TABLE ? "unknown table" : "unknown key");
		return -1;
	}
	r = &node_rules[j];
	seen[j] = 1;
	if (v->type != TOML_STRING)
		(void)snprintf(why, sizeof(why), "must be a string");
	else if (strlen(v->u.string.ptr) != v->u.string.len)
		(void)snprintf(why, sizeof(why), "must not contain NUL");
	else if (check_text(r->type, r->size, v->u.string.ptr, why,
	    sizeof(why)) == 0) {
		(void)strlcpy((char *)n + r->off, v->u.string.ptr, r->size);
		return 0;
	}
	cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key, why);
	return -1;
}

/* One [nodes.NAME]: kept only when valid. */
static int
node_parse(struct server_config *cfg, const struct toml_kv *kv,
    const char *file, struct config_diag *d)
{
	const struct toml_value *v = kv->value;
	struct config_node *n = &cfg->nodes[cfg->nnodes];
	char key[CW_KEYPATH_LEN], why[CW_REASON_LEN];
	int seen[nitems(node_rules)], line, rc = 0;
	size_t i;

	cw_kpath(key, "nodes", kv->key, kv->keylen);
	line = v->line > 0 ? v->line : kv->line;
	if (strlen(kv->key) != kv->keylen || !valid_host(kv->key, 0)) {
		cw_diag_add(d, "%s:%d: %s: invalid node name", file,
		    kv->line, key);
		return -1;
	}
	if (v->type != TOML_TABLE) {
		cw_diag_add(d, "%s:%d: %s: must be a table", file,
		    kv->line, key);
		return -1;
	}
	if (cfg->nnodes == CONFIG_NODES_MAX) {
		cw_diag_add(d, "%s:%d: %s: too many nodes (at most %d)",
		    file, line, key, CONFIG_NODES_MAX);
		return -1;
	}
	memset(n, 0, sizeof(*n));
	memset(seen, 0, sizeof(seen));
	(void)strlcpy(n->name, kv->key, sizeof(n->name));
	n->line = line;
	for (i = 0; i < v->u.table.len; i++)
		if (node_key(n, &v->u.table.items[i], key, seen, file,
		    d) == -1)
			rc = -1;
	for (i = 0; i < nitems(node_rules); i++)
		if (node_rules[i].required && !seen[i]) {
			cw_diag_add(d, "%s:%d: %s: requires %s", file,
			    line, key, node_rules[i].name);
			rc = -1;
		}
	if (rc == 0 && check_engine_tls(n->container_engine,
	    n->container_tls_ca, n->container_tls_cert, n->container_tls_key,
	    why, sizeof(why)) == -1) {
		cw_diag_add(d, "%s:%d: %s: %s", file, line, key, why);
		rc = -1;
	}
	if (rc == 0)
		cfg->nnodes++;
	return rc;
}

static int
nodes_walk(struct server_config *cfg, const struct toml_kv *kv,
    const char *file, struct config_diag *d)
{
	const struct toml_value *v = kv->value;
	size_t i;
	int rc = 0;

	if (v->type != TOML_TABLE) {
		cw_diag_add(d, "%s:%d: nodes: must be a table", file,
		    kv->line);
		return -1;
	}
	for (i = 0; i < v->u.table.len; i++)
		if (node_parse(cfg, &v->u.table.items[i], file, d) == -1)
			rc = -1;
	return rc;
}

const struct config_node *
config_node_find(const struct server_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nnodes; i++)
		if (strcmp(cfg->nodes[i].name, name) == 0)
			return &cfg->nodes[i];
	return NULL;
}

int
config_load_server(struct server_config *cfg, const char *path,
    struct config_diag *d, int *missing)
{
	struct toml_value *root;
	struct toml_error terr;
	char *buf;
	size_t len;
	int implicit = 0, rc = 0, dummy;

	if (missing == NULL)
		missing = &dummy;
	*missing = 0;
	server_defaults(cfg);
	if (path == NULL || *path == '\0')
		path = getenv("HAKOPOD_CONFIG");
	if (path == NULL || *path == '\0') {
		path = CONFIG_DEFAULT_PATH;
		implicit = 1;
	}
	switch (cw_read(path, implicit, &buf, &len, missing, d)) {
	case -1:
		return -1;
	case 1:
		/* no operator file: built-in defaults */
		return server_env(cfg, d);
	}
	if (strlcpy(cfg->path, path, sizeof(cfg->path)) >= sizeof(cfg->path)) {
		free(buf);
		cw_diag_add(d, "%s: unable to open: %s", path,
		    strerror(ENAMETOOLONG));
		*missing = 1;
		return -1;
	}
	root = toml_parse(buf, len, &terr);
	free(buf);
	if (root == NULL) {
		if (terr.line > 0)
			cw_diag_add(d, "%s:%d: syntax: %s", path,
			    terr.line, terr.msg);
		else
			cw_diag_add(d, "%s: syntax: %s", path, terr.msg);
		rc = -1;
	} else {
		rc = server_walk(cfg, root, path, d);
		toml_free(root);
	}
	if (server_env(cfg, d) == -1)
		rc = -1;
	/* a key refused has no value: the rules between keys would lie */
	if (rc == 0 && server_cross(cfg, path, d) == -1)
		rc = -1;
	if (rc == 0 && metrics_cross(cfg, path, d) == -1)
		rc = -1;
	return rc;
}

/* Rules between keys of [server], once each key is read. */
static int
server_cross(struct server_config *cfg, const char *file,
    struct config_diag *d)
{
	static const char *const tls[] = {
		"container_tls_ca", "container_tls_cert", "container_tls_key",
	};
	char why[CW_REASON_LEN];
	ssize_t k;
	size_t i;
	int line = 0;

	if (check_engine_tls(cfg->container_engine, cfg->container_tls_ca,
	    cfg->container_tls_cert, cfg->container_tls_key, why,
	    sizeof(why)) == 0)
		return 0;
	for (i = 0; i < nitems(tls) && line == 0; i++)
		if ((k = server_key_find(tls[i], strlen(tls[i]))) != -1)
			line = cfg->line[k];
	cw_diag_add(d, "%s:%d: server: %s", file, line, why);
	return -1;
}

int
config_set_flag(struct server_config *cfg, const char *key, const char *val,
    struct config_diag *d)
{
	char why[CW_REASON_LEN], k[CW_KEYPATH_LEN];
	ssize_t i;

	if (strncmp(key, "server.", 7) == 0)
		key += 7;
	if ((i = server_key_find(key, strlen(key))) == -1) {
		cw_kpath_s(k, "server", key);
		cw_diag_add(d, "command line: %s: unknown key", k);
		return -1;
	}
	if (server_set_text(cfg, i, val, why, sizeof(why)) == -1) {
		cw_diag_add(d, "command line: server.%s: %s",
		    server_keys[i].name, why);
		return -1;
	}
	cfg->source[i] = CONFIG_SRC_FLAG;
	return 0;
}

/*
 * Application config.
 */


const char *
config_backend_name(enum backend_kind k)
{
	return (unsigned)k < BACKEND_COUNT ? backend_kinds[k].name : "?";
}

int
config_backend_find(const char *name)
{
	size_t i;

	for (i = 0; i < BACKEND_COUNT; i++)
		if (strcmp(name, backend_kinds[i].name) == 0)
			return (int)i;
	return -1;
}

int
config_backend_available(enum backend_kind k)
{
	return (unsigned)k < BACKEND_COUNT && backend_kinds[k].available;
}

int
config_backend_suspends(enum backend_kind k)
{
	return config_backend_available(k) && backend_kinds[k].suspends;
}

int
config_valid_name(const char *s)
{
	return config_valid_name_n(s, strnlen(s, CONFIG_NAME_MAX + 1));
}

int
config_valid_name_n(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > CONFIG_NAME_MAX || s[0] == '-' ||
	    s[len - 1] == '-')
		return 0;
	for (i = 0; i < len; i++)
		if (!cw_is_lower((unsigned char)s[i]) &&
		    !cw_is_digit((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return 1;
}

/* Normalizes an absolute path lexically: no ".", "..", "//" or final '/'. */
static int
path_norm(const char *in, char *out, size_t outsz)
{
	const char *p = in, *e;
	size_t o = 0, n;

	if (*in != '/' || outsz < 2)
		return -1;
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e != '\0' && *e != '/'; e++)
			;
		n = e - p;
		if (n == 1 && p[0] == '.')
			;
		else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			if (o + 1 + n + 1 > outsz)
				return -1;
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* The absolute directory holding the file path names. */
static int
file_dir(const char *path, char *out, size_t outsz)
{
	char cwd[PATH_MAX], *tmp;
	const char *slash;
	size_t dl;
	int rc;

	slash = strrchr(path, '/');
	dl = slash == NULL ? 0 : (size_t)(slash - path);
	if (path[0] == '/') {
		if ((tmp = strndup(path, dl == 0 ? 1 : dl)) == NULL)
			return -1;
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return -1;
		if (asprintf(&tmp, "%s/%.*s", cwd, (int)dl, path) == -1)
			return -1;
	}
	rc = path_norm(tmp, out, outsz);
	free(tmp);
	return rc;
}

static void
svc_command(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	size_t i;

	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of strings");
		return;
	}
	if (v->u.array.len == 0) {
		cw_diag(&c->w, kv->line, key, "must not be empty");
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING) {
			cw_diag(&c->w, e->line, key, "must be an array "
			    "of strings");
			return;
		}
		if (strlen(e->u.string.ptr) != e->u.string.len) {
			cw_diag(&c->w, e->line, key, "must not contain NUL");
			return;
		}
	}
	if (v->u.array.items[0]->u.string.len == 0) {
		cw_diag(&c->w, kv->line, key, "program name must not be empty");
		return;
	}
	s->command = calloc(v->u.array.len + 1, sizeof(*s->command));
	if (s->command == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if ((s->command[i] = cw_strndup(&c->w, e->u.string.ptr,
		    e->u.string.len)) == NULL)
			return;
		s->ncommand++;
	}
}

/* A path, relative ones resolved against the file's directory; or NULL. */
static char *
svc_path(struct actx *c, const struct toml_kv *kv, const char *key)
{
	char out[PATH_MAX], *tmp = NULL;
	const char *d;
	int rc;

	if ((d = cw_str(&c->w, kv, key, PATH_MAX - 1)) == NULL)
		return NULL;
	if (*d == '/')
		rc = path_norm(d, out, sizeof(out));
	else if (asprintf(&tmp, "%s/%s", c->dir, d) == -1) {
		c->w.oom = 1;
		return NULL;
	} else
		rc = path_norm(tmp, out, sizeof(out));
	free(tmp);
	if (rc == -1) {
		cw_diag(&c->w, kv->line, key, "too long (at most %d bytes)",
		    PATH_MAX - 1);
		return NULL;
	}
	return cw_strndup(&c->w, out, strlen(out));
}

static void
svc_directory(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	s->directory = svc_path(c, kv, key);
}

/*
 * The source is read here, once: what is hashed is what apply stores,
 * and validate reports what apply would refuse.
 */
static void
svc_source(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	struct srctree t;
	char err[SRCTREE_ERR_LEN];

	if ((s->source = svc_path(c, kv, key)) == NULL)
		return;
	if (srctree_read(s->source, &t, err, sizeof(err)) == -1) {
		cw_diag(&c->w, kv->line, key, "%s", err);
		return;
	}
	if ((s->code_hash = cw_strndup(&c->w, t.hash,
	    strlen(t.hash))) == NULL) {
		srctree_free(&t);
		return;
	}
	s->code = t.data;
	s->code_len = t.len;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names of the secrets the service gets, each once, sorted: the
 * spec's bytes do not depend on their order.  Whether each exists is the
 * store's to say (hk apply, and hk validate when it reaches the store).
 */
static void
svc_secrets(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	size_t i, n;

	s->secrets_line = kv->line;
	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of names");
		return;
	}
	if (v->u.array.len > SECRETS_MAX) {
		cw_diag(&c->w, kv->line, key, "at most %d secrets",
		    SECRETS_MAX);
		return;
	}
	if ((s->secrets = calloc(v->u.array.len + 1,
	    sizeof(*s->secrets))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING || strlen(e->u.string.ptr) !=
		    e->u.string.len || !secret_valid_name(e->u.string.ptr)) {
			cw_diag(&c->w, e->line, key, "not a secret name "
			    "(letters, digits and _, not starting with a "
			    "digit, at most %d bytes)", SECRET_NAME_MAX);
			continue;
		}
		for (n = 0; n < s->nsecrets; n++)
			if (strcmp(s->secrets[n], e->u.string.ptr) == 0)
				break;
		if (n < s->nsecrets) {
			cw_diag(&c->w, e->line, key, "\"%s\" named twice",
			    e->u.string.ptr);
			continue;
		}
		if ((s->secrets[s->nsecrets] = cw_strndup(&c->w,
		    e->u.string.ptr, e->u.string.len)) == NULL)
			return;
		s->nsecrets++;
	}
	qsort(s->secrets, s->nsecrets, sizeof(*s->secrets), name_cmp);
}

/*
 * Delivery: as files by every backend (hk-scale(8)); a container's
 * directory is on hk-scale's host, the default node.  As variables only
 * by exec: s6's run script is a file, the engine keeps a container's
 * environment (podman inspect), systemd a unit's (systemctl show).  A
 * variable's name must not be one the environment or hk sets.
 */
static void
svc_secret_rules(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];
	size_t i, j;
	int bad;

	if (slot[SK_SECRETS_ENV] != NULL && slot[SK_SECRETS] == NULL) {
		cw_kpath_s(key, prefix, "secrets_env");
		cw_diag(&c->w, slot[SK_SECRETS_ENV]->line, key,
		    "requires secrets");
	}
	if (slot[SK_SECRETS] == NULL)
		return;
	cw_kpath_s(key, prefix, "secrets");
	if (s->backend == BACKEND_CONTAINER && s->node_name != NULL)
		cw_diag(&c->w, slot[SK_SECRETS]->line, key, "not allowed with "
		    "node_name \"%s\" (the files are on the default node "
		    "only)", s->node_name);
	if (s->secrets_env && s->backend != BACKEND_EXEC) {
		cw_kpath_s(key, prefix, "secrets_env");
		cw_diag(&c->w, slot[SK_SECRETS_ENV]->line, key, "not with "
		    "backend \"%s\" (%s): read the files of "
		    "$CREDENTIALS_DIRECTORY", config_backend_name(s->backend),
		    s->backend == BACKEND_S6 ? "its run script is a file" :
		    s->backend == BACKEND_CONTAINER ? "the engine keeps a "
		    "container's environment, shown by podman inspect" :
		    "systemd keeps a unit's environment, shown by "
		    "systemctl show");
		cw_kpath_s(key, prefix, "secrets");
	}
	for (i = 0; s->secrets_env && i < s->nsecrets; i++) {
		for (j = 0; j < s->nenv; j++)
			if (strcmp(s->secrets[i], s->env[j].name) == 0)
				cw_diag(&c->w, slot[SK_SECRETS]->line, key,
				    "\"%s\" is also in environment "
				    "(secrets_env)", s->secrets[i]);
		bad = strcmp(s->secrets[i], "HOST") == 0;
		for (j = 0; j < nitems(env_reserved); j++)
			if (strcmp(s->secrets[i], env_reserved[j]) == 0)
				bad = 1;
		if (bad)
			cw_diag(&c->w, slot[SK_SECRETS]->line, key, "\"%s\" is "
			    "reserved (set by hk; secrets_env)",
			    s->secrets[i]);
	}
}

static void
svc_environment(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value;
	const struct toml_kv *e;
	char ek[CW_KEYPATH_LEN];
	size_t i, j;
	int bad;

	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, key, "must be a table");
		return;
	}
	if (v->u.table.len == 0)
		return;
	if ((s->env = calloc(v->u.table.len, sizeof(*s->env))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.table.len; i++) {
		e = &v->u.table.items[i];
		cw_kpath(ek, key, e->key, e->keylen);
		bad = e->keylen == 0 || e->keylen > ENV_NAME_MAX ||
		    cw_is_digit((unsigned char)e->key[0]);
		for (j = 0; !bad && j < e->keylen; j++)
			if (!cw_is_alpha((unsigned char)e->key[j]) &&
			    !cw_is_digit((unsigned char)e->key[j]) &&
			    e->key[j] != '_')
				bad = 1;
		if (bad) {
			cw_diag(&c->w, e->line, ek, "invalid variable name");
			continue;
		}
		for (j = 0; j < nitems(env_reserved); j++)
			if (cw_key_is(e, env_reserved[j]))
				bad = 1;
		if (bad) {
			cw_diag(&c->w, e->line, ek, "reserved (set by hk)");
			continue;
		}
		if (e->value->type != TOML_STRING) {
			cw_diag(&c->w, e->line, ek, "must be a string");
			continue;
		}
		if (strlen(e->value->u.string.ptr) != e->value->u.string.len) {
			cw_diag(&c->w, e->line, ek, "must not contain NUL");
			continue;
		}
		s->env[s->nenv].name = cw_strndup(&c->w, e->key, e->keylen);
		s->env[s->nenv].value = cw_strndup(&c->w,
		    e->value->u.string.ptr, e->value->u.string.len);
		s->nenv++;
		if (c->w.oom)
			return;
	}
}

/* Remembers a host of the file for the duplicate check. */
static void
host_note(struct actx *c, const char *host, const struct toml_kv *svc,
    int line)
{
	struct hostref *h;
	size_t cap;

	if (c->nhosts == c->caphosts) {
		cap = c->caphosts == 0 ? 16 : c->caphosts * 2;
		if ((h = reallocarray(c->hosts, cap, sizeof(*h))) == NULL) {
			c->w.oom = 1;
			return;
		}
		c->hosts = h;
		c->caphosts = cap;
	}
	h = &c->hosts[c->nhosts];
	h->host = host;
	h->svc = svc;
	h->seq = c->nhosts;
	h->line = line;
	c->nhosts++;
}

static void
svc_hosts(struct actx *c, const struct toml_kv *skv, const struct toml_kv *kv,
    const char *key, struct service_spec *s)
{
	const struct toml_value *v = kv->value, *e;
	char shown[CW_KEYSHOW_MAX * 6 + 8], *h;
	struct in_addr a4;
	size_t i, j;

	if (v->type != TOML_ARRAY) {
		cw_diag(&c->w, kv->line, key, "must be an array of strings");
		return;
	}
	if (v->u.array.len == 0) {
		cw_diag(&c->w, kv->line, key, "must not be empty");
		return;
	}
	if ((s->hosts = calloc(v->u.array.len, sizeof(*s->hosts))) == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < v->u.array.len; i++) {
		e = v->u.array.items[i];
		if (e->type != TOML_STRING) {
			cw_diag(&c->w, e->line, key, "must be an array "
			    "of strings");
			continue;
		}
		if ((h = cw_strndup(&c->w, e->u.string.ptr,
		    e->u.string.len)) == NULL)
			return;
		for (j = 0; h[j] != '\0'; j++)
			if (h[j] >= 'A' && h[j] <= 'Z')
				h[j] += 'a' - 'A';
		/* An IPv4 literal is a Host a client may send too. */
		if (j != e->u.string.len || (!valid_host(h, 0) &&
		    inet_pton(AF_INET, h, &a4) != 1)) {
			cw_show(shown, sizeof(shown), e->u.string.ptr,
			    e->u.string.len, 1);
			cw_diag(&c->w, e->line, key, "invalid host %s", shown);
			free(h);
			continue;
		}
		if (c->srv != NULL && config_gateway_host(c->srv, h)) {
			cw_diag(&c->w, e->line, key, "%s: the gateway's own "
			    "address (serverless_address): it routes by /fn/ "
			    "path only, for runs and for clients alike", h);
			free(h);
			continue;
		}
		s->hosts[s->nhosts++] = h;
		host_note(c, h, skv, e->line);
	}
}

/* <service>.<app>.<base_domain> */
static void
svc_default_host(struct actx *c, const struct toml_kv *skv, const char *key,
    struct service_spec *s)
{
	const char *base = c->srv != NULL ? c->srv->base_domain : "localhost";
	char *h;

	if (s->name[0] == '\0' || c->app->name[0] == '\0')
		return;		/* already diagnosed */
	if ((s->hosts = calloc(1, sizeof(*s->hosts))) == NULL ||
	    asprintf(&h, "%s.%s.%s", s->name, c->app->name, base) == -1) {
		c->w.oom = 1;
		return;
	}
	if (!valid_host(h, 0)) {
		cw_diag(&c->w, s->line, key,
		    "default host is longer than %d bytes: set hosts",
		    HOST_MAX);
		free(h);
		return;
	}
	s->hosts[s->nhosts++] = h;
	host_note(c, h, skv, s->line);
}

static void
svc_readiness(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const char *r, *p;

	if ((r = cw_str(&c->w, kv, key, 5 + READY_PATH_MAX)) == NULL)
		return;
	if (strcmp(r, "tcp") == 0)
		s->readiness = READY_TCP;
	else if (strcmp(r, "notify") == 0)
		s->readiness = READY_NOTIFY;
	else if (strcmp(r, "socket") == 0)
		s->readiness = READY_SOCKET;
	else if (strcmp(r, "healthcheck") == 0)
		s->readiness = READY_HEALTH;
	else if (strncmp(r, "http:/", 6) == 0) {
		for (p = r + 5; *p != '\0'; p++)
			if (*p <= ' ' || *p >= 0x7f)
				goto bad;
		s->readiness = READY_HTTP;
		s->readiness_path = cw_strndup(&c->w, r + 5, strlen(r + 5));
	} else
		goto bad;
	return;
bad:
	cw_diag(&c->w, kv->line, key,
	    "must be tcp, http:/PATH, notify, socket or healthcheck");
}

static void
svc_policy(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	const struct toml_value *v = kv->value;
	const struct spec_policy_key *keys;
	const struct toml_kv *e;
	char pk[CW_KEYPATH_LEN];
	size_t i, j, nkeys;
	int64_t n;
	int *f;

	keys = spec_policy_keys(&nkeys);
	for (j = 0; j < nkeys; j++)
		*(int *)((char *)&s->policy + keys[j].off) = keys[j].def;
	if (v->type != TOML_TABLE) {
		cw_diag(&c->w, kv->line, key, "must be a table");
		return;
	}
	s->serverless = 1;
	for (i = 0; i < v->u.table.len; i++) {
		e = &v->u.table.items[i];
		cw_kpath(pk, key, e->key, e->keylen);
		for (j = 0; j < nkeys; j++)
			if (cw_key_is(e, keys[j].name))
				break;
		if (j == nkeys) {
			cw_diag(&c->w, e->line, pk, "%s",
			    e->value->type == TOML_TABLE ? "unknown table" :
			    "unknown key");
			continue;
		}
		f = (int *)((char *)&s->policy + keys[j].off);
		if (keys[j].flags & SPEC_PK_BOOL)
			(void)cw_bool(&c->w, e, pk, f);
		else if (keys[j].flags & SPEC_PK_ENUM)
			policy_enum(c, e, pk, keys[j].names, f);
		else if (cw_int(&c->w, e, pk, keys[j].min, keys[j].max,
		    &n) == 0)
			*f = (int)n;
	}
}

/* A SPEC_PK_ENUM key: its index in names, or a diagnostic naming them. */
static void
policy_enum(struct actx *c, const struct toml_kv *e, const char *key,
    const char *const *names, int *f)
{
	const char *str;
	char list[128];
	size_t i;

	if ((str = cw_str(&c->w, e, key, 32)) == NULL)
		return;
	list[0] = '\0';
	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(str, names[i]) == 0) {
			*f = (int)i;
			return;
		}
		if (i > 0)
			strlcat(list, names[i + 1] == NULL ? " or " : ", ",
			    sizeof(list));
		strlcat(list, "\"", sizeof(list));
		strlcat(list, names[i], sizeof(list));
		strlcat(list, "\"", sizeof(list));
	}
	cw_diag(&c->w, e->line, key, "\"%s\": must be %s", str, list);
}

/*
 * A user of this host, checked now rather than at the first wake; uid 0
 * only where the operator allows root services.
 */
static void
svc_user(struct actx *c, const struct toml_kv *kv, const char *key,
    struct service_spec *s)
{
	struct user_ids u;
	char why[USER_ERR_LEN];
	const char *str;

	if ((str = cw_str(&c->w, kv, key, USER_SPEC_MAX)) == NULL)
		return;
	if (user_resolve(str, &u, why, sizeof(why)) == -1) {
		cw_diag(&c->w, kv->line, key, "%s", why);
		return;
	}
	if (u.uid == 0 && (c->srv == NULL || !c->srv->allow_root_services)) {
		cw_diag(&c->w, kv->line, key, "\"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", str);
		return;
	}
	s->user = cw_strndup(&c->w, str, strlen(str));
}

/*
 * The backend: as given, else container for an image (with a command, run
 * in it, as compose and Kubernetes read the two), else exec.  A backend
 * that cannot run the service, or that this build lacks, is refused here
 * rather than at the first wake.  Nothing is said when image, command or
 * backend was itself refused.  0 when the backend can run the service.
 */
static int
svc_backend(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, struct service_spec *s)
{
	const struct toml_kv *b = slot[SK_BACKEND];
	const char *name;
	char key[CW_KEYPATH_LEN];

	if ((slot[SK_IMAGE] != NULL && s->image == NULL) ||
	    (slot[SK_COMMAND] != NULL && s->command == NULL) ||
	    (b != NULL && s->backend == BACKEND_COUNT)) {
		s->backend = BACKEND_EXEC;	/* diagnosed already */
		return -1;
	}
	if (b == NULL)
		s->backend = s->image != NULL ? BACKEND_CONTAINER :
		    BACKEND_EXEC;
	name = config_backend_name(s->backend);
	cw_kpath_s(key, prefix, b != NULL ? "backend" : "image");
	if (b != NULL && (s->backend == BACKEND_EXEC ||
	    s->backend == BACKEND_SYSTEMD) && s->command == NULL)
		cw_diag(&c->w, b->line, key, "%s requires command", name);
	else if (b != NULL && s->backend == BACKEND_CONTAINER &&
	    s->image == NULL)
		cw_diag(&c->w, b->line, key, "container requires image");
	else if (b != NULL && s->backend == BACKEND_S6 && s->command == NULL)
		cw_diag(&c->w, b->line, key, "s6 requires command");
	else if (b != NULL && s->backend == BACKEND_S6 &&
	    (c->srv == NULL || c->srv->s6_scandir[0] == '\0'))
		cw_diag(&c->w, b->line, key, "s6 requires "
		    "server.s6_scandir (unset)");
	else if (config_backend_available(s->backend))
		return 0;
	else if (b != NULL)
		cw_diag(&c->w, b->line, key, "\"%s\" is not available in "
		    "this build", name);
	else if (s->command == NULL)
		cw_diag(&c->w, slot[SK_IMAGE]->line, key, "an image alone "
		    "means backend \"%s\", which is not available in "
		    "this build", name);
	else
		cw_diag(&c->w, slot[SK_IMAGE]->line, key, "image and command "
		    "mean backend \"%s\" (command run in the image), which is "
		    "not available in this build: set backend = \"exec\" to "
		    "run command on this host", name);
	return -1;
}

/*
 * node_name names a node of the operator configuration (svc_value() saw
 * to that); the exec, s6 and systemd backends run commands on this host,
 * the default node, and on no other.  Neither s6 nor systemd has a
 * listener to hand over (readiness "socket": the exec backend binds it
 * itself).
 */
static void
svc_placement(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];

	if ((s->backend == BACKEND_SYSTEMD || s->backend == BACKEND_S6) &&
	    s->readiness == READY_SOCKET) {
		cw_kpath_s(key, prefix, "readiness");
		cw_diag(&c->w, slot[SK_READINESS]->line, key, "\"socket\" "
		    "needs backend \"exec\", which hands its command a "
		    "listener: use tcp, http:/PATH or notify with \"%s\"",
		    config_backend_name(s->backend));
	}
	if (s->node_name == NULL || s->backend == BACKEND_CONTAINER)
		return;
	cw_kpath_s(key, prefix, "node_name");
	cw_diag(&c->w, slot[SK_NODE_NAME]->line, key, "backend \"%s\" runs its "
	    "command on this host, not on node \"%s\"",
	    config_backend_name(s->backend), s->node_name);
}

/*
 * HOST is hk's on this host: exec, s6 and systemd give the command
 * HOST=127.0.0.1, so that it listens on loopback alone.  A container
 * listens where its image says, and may be given HOST like any variable.
 */
static void
svc_env_host(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	const struct toml_kv *env = slot[SK_ENVIRONMENT], *e;
	char key[CW_KEYPATH_LEN], ek[CW_KEYPATH_LEN];
	size_t i;

	if (s->backend == BACKEND_CONTAINER || env == NULL ||
	    env->value->type != TOML_TABLE)
		return;
	cw_kpath_s(key, prefix, "environment");
	for (i = 0; i < env->value->u.table.len; i++) {
		e = &env->value->u.table.items[i];
		if (!cw_key_is(e, "HOST"))
			continue;
		cw_kpath(ek, key, e->key, e->keylen);
		cw_diag(&c->w, e->line, ek, "reserved with backend \"%s\" (set "
		    "by hk: 127.0.0.1)", config_backend_name(s->backend));
	}
}

/*
 * A container needs an engine on the node it runs on, reached with TLS
 * over TCP, and a readiness it can have (no NOTIFY_SOCKET nor inherited
 * listener crosses into a container); healthcheck, the image's
 * HEALTHCHECK, is a container's alone.
 */
static void
svc_container(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	const struct config_node *n = NULL;
	const char *engine, *ca, *what;
	char key[CW_KEYPATH_LEN];
	int line;

	cw_kpath_s(key, prefix, "readiness");
	if (s->backend != BACKEND_CONTAINER) {
		if (s->readiness == READY_HEALTH)
			cw_diag(&c->w, slot[SK_READINESS]->line, key,
			    "healthcheck (the image's HEALTHCHECK) requires "
			    "backend \"container\"");
		return;
	}
	if (s->readiness == READY_NOTIFY || s->readiness == READY_SOCKET)
		cw_diag(&c->w, slot[SK_READINESS]->line, key, "%s is not "
		    "available with backend \"container\" (tcp, http:/PATH or "
		    "healthcheck)",
		    s->readiness == READY_NOTIFY ? "notify" : "socket");
	if (c->srv == NULL)
		return;
	if (s->node_name != NULL &&
	    (n = config_node_find(c->srv, s->node_name)) != NULL) {
		engine = n->container_engine;
		ca = n->container_tls_ca;
		line = slot[SK_NODE_NAME]->line;
		cw_kpath_s(key, prefix, "node_name");
	} else {
		engine = c->srv->container_engine;
		ca = c->srv->container_tls_ca;
		what = slot[SK_BACKEND] != NULL ? "backend" : "image";
		line = slot[SK_BACKEND] != NULL ? slot[SK_BACKEND]->line :
		    slot[SK_IMAGE]->line;
		cw_kpath_s(key, prefix, what);
	}
	if (*engine == '\0' && n != NULL)
		cw_diag(&c->w, line, key, "node \"%s\" has no container_engine",
		    n->name);
	else if (*engine == '\0')
		cw_diag(&c->w, line, key, "backend \"container\" needs "
		    "server.container_engine (unset)");
	else if (strncmp(engine, "tcp://", 6) == 0 && *ca == '\0')
		cw_diag(&c->w, line, key, "%s%s%s container_engine %s has no "
		    "TLS files (container_tls_ca, container_tls_cert, "
		    "container_tls_key)", n != NULL ? "node \"" : "server",
		    n != NULL ? n->name : "", n != NULL ? "\":" : ":", engine);
}

/* What a serverless service may not be or have. */
static void
svc_serverless_rules(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, struct service_spec *s)
{
	const struct toml_kv *sl = slot[SK_SERVERLESS];
	char key[CW_KEYPATH_LEN];
	int64_t max;
	size_t k;
	int line;

	for (k = 0; k < SK_COUNT; k++) {
		if (!svc_keys[k].ordinary || slot[k] == NULL)
			continue;
		cw_kpath_s(key, prefix, svc_keys[k].name);
		if (k != SK_BACKEND_HTTP2)
			cw_diag(&c->w, slot[k]->line, key,
			    "not allowed with [serverless]");
		else if (slot[k]->value->type == TOML_BOOL &&
		    slot[k]->value->u.boolean)
			cw_diag(&c->w, slot[k]->line, key, "not allowed with "
			    "[serverless] (the gateway speaks HTTP/1.1)");
	}
	if (!s->public_) {
		line = slot[SK_PUBLIC] != NULL ? slot[SK_PUBLIC]->line :
		    sl->line;
		cw_kpath_s(key, prefix, "public");
		cw_diag(&c->w, line, key, "serverless requires public = true");
	}
	cw_kpath_s(key, prefix, "serverless");
	if (c->srv == NULL || c->srv->serverless_address[0] == '\0')
		cw_diag(&c->w, sl->line, key,
		    "requires server.serverless_address (unset)");
	max = c->srv != NULL ? c->srv->max_serverless_services : 512;
	if (++c->nserverless == (size_t)max + 1)
		cw_diag(&c->w, sl->line, key,
		    "exceeds server.max_serverless_services (%lld)",
		    (long long)max);
}

/*
 * idle_action = "suspend" needs a backend that can freeze an instance;
 * suspend_max_seconds means nothing without it, and is refused rather
 * than ignored.
 */
static void
svc_suspend_rules(struct actx *c, const struct toml_kv *sl,
    const char *prefix, const struct service_spec *s)
{
	const struct toml_kv *e, *action = NULL, *max = NULL;
	char sl_key[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];
	size_t i;

	if (sl == NULL || sl->value->type != TOML_TABLE)
		return;
	for (i = 0; i < sl->value->u.table.len; i++) {
		e = &sl->value->u.table.items[i];
		if (cw_key_is(e, "idle_action"))
			action = e;
		else if (cw_key_is(e, "suspend_max_seconds"))
			max = e;
	}
	if (s->policy.idle_action == IDLE_SUSPEND && action != NULL &&
	    s->backend < BACKEND_COUNT &&
	    !config_backend_suspends(s->backend)) {
		cw_kpath_s(sl_key, prefix, "serverless");
		cw_kpath_s(key, sl_key, "idle_action");
		cw_diag(&c->w, action->line, key, "\"suspend\" is not "
		    "supported with backend \"%s\"",
		    config_backend_name(s->backend));
	}
	if (max != NULL && s->policy.idle_action != IDLE_SUSPEND) {
		cw_kpath_s(sl_key, prefix, "serverless");
		cw_kpath_s(key, sl_key, "suspend_max_seconds");
		cw_diag(&c->w, max->line, key, "only with idle_action = "
		    "\"suspend\"");
	}
}

/* One key of a service, in slot k; sless: the service has [serverless]. */
static void
svc_value(struct actx *c, int k, const struct toml_kv *skv,
    const struct toml_kv *kv, int sless, struct service_spec *s)
{
	char prefix[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];
	const char *str;
	int64_t n, mem, cpus;

	cw_kpath(prefix, "services", skv->key, skv->keylen);
	cw_kpath_s(key, prefix, svc_keys[k].name);
	switch (k) {
	case SK_IMAGE:
		if ((str = cw_str(&c->w, kv, key, IMAGE_MAX)) == NULL)
			break;
		if (!valid_image(str))
			cw_diag(&c->w, kv->line, key, "not an image reference "
			    "(letters, digits and _.-:/@, starting with a "
			    "letter or digit)");
		else
			s->image = cw_strndup(&c->w, str, strlen(str));
		break;
	case SK_COMMAND:
		svc_command(c, kv, key, s);
		break;
	case SK_DIRECTORY:
		svc_directory(c, kv, key, s);
		break;
	case SK_SOURCE:
		svc_source(c, kv, key, s);
		break;
	case SK_ENVIRONMENT:
		svc_environment(c, kv, key, s);
		break;
	case SK_SECRETS:
		svc_secrets(c, kv, key, s);
		break;
	case SK_SCHEDULES:
		svc_schedules(c, skv, kv, key, s);
		break;
	case SK_SECRETS_ENV:
		(void)cw_bool(&c->w, kv, key, &s->secrets_env);
		break;
	case SK_PORT:
		if (cw_int(&c->w, kv, key, 0, 65535, &n) == 0)
			s->port = (int)n;
		break;
	case SK_PUBLIC:
		(void)cw_bool(&c->w, kv, key, &s->public_);
		break;
	case SK_SIZE:
		if ((str = cw_str(&c->w, kv, key, SIZE_MAX)) == NULL)
			break;
		if (spec_size_limits(str, &mem, &cpus) == -1)
			cw_diag(&c->w, kv->line, key,
			    "must be small, medium or large");
		else
			s->size = cw_strndup(&c->w, str, strlen(str));
		break;
	case SK_REPLICAS:
		if (sless && (kv->value->type != TOML_INTEGER ||
		    kv->value->u.integer != 1))
			cw_diag(&c->w, kv->line, key, "must be 1 with "
			    "[serverless]");
		else if (cw_int(&c->w, kv, key, 1, REPLICAS_MAX, &n) == 0)
			s->replicas = (int)n;
		break;
	case SK_HOSTS:
		svc_hosts(c, skv, kv, key, s);
		break;
	case SK_READINESS:
		svc_readiness(c, kv, key, s);
		break;
	case SK_NODE_NAME:
		if ((str = cw_str(&c->w, kv, key, HOST_MAX)) == NULL)
			break;
		if (!valid_host(str, 0))
			cw_diag(&c->w, kv->line, key, "invalid node name");
		else if (c->srv == NULL || config_node_find(c->srv, str) ==
		    NULL)
			cw_diag(&c->w, kv->line, key, "no node \"%s\" in the "
			    "operator configuration", str);
		else
			s->node_name = cw_strndup(&c->w, str, strlen(str));
		break;
	case SK_BACKEND:
		if ((str = cw_str(&c->w, kv, key, SIZE_MAX)) == NULL)
			break;
		if ((n = config_backend_find(str)) == -1)
			cw_diag(&c->w, kv->line, key,
			    "must be exec, container, s6 or systemd");
		else
			s->backend = (enum backend_kind)n;
		break;
	case SK_SERVERLESS:
		svc_policy(c, kv, key, s);
		break;
	case SK_USER:
		svc_user(c, kv, key, s);
		break;
	case SK_BACKEND_HTTP2:
		if (kv->value->type != TOML_BOOL)
			cw_diag(&c->w, kv->line, key, "must be a boolean");
		break;
	default:
		break;	/* ordinary-only: any type, kept as is */
	}
}

/* One [services.NAME]; s->name is "" when NAME is not a valid name. */
static void
svc_parse(struct actx *c, const struct toml_kv *skv, struct service_spec *s)
{
	const struct toml_kv *slot[SK_COUNT] = { NULL }, *kv;
	const struct toml_value *sv = skv->value;
	char prefix[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];
	size_t i, k;
	int sless;

	cw_kpath(prefix, "services", skv->key, skv->keylen);
	s->line = sv->line > 0 ? sv->line : skv->line;
	s->replicas = 1;
	s->backend = BACKEND_COUNT;	/* none given (yet) */
	s->readiness = READY_TCP;
	if (strlen(skv->key) != skv->keylen || !config_valid_name(skv->key))
		cw_diag(&c->w, skv->line, prefix, NAME_REASON);
	else
		(void)strlcpy(s->name, skv->key, sizeof(s->name));
	if (sv->type != TOML_TABLE) {
		cw_diag(&c->w, skv->line, prefix, "must be a table");
		return;
	}
	for (i = 0; i < sv->u.table.len; i++) {
		kv = &sv->u.table.items[i];
		for (k = 0; k < SK_COUNT; k++)
			if (cw_key_is(kv, svc_keys[k].name))
				break;
		if (k < SK_COUNT) {
			slot[k] = kv;
			continue;
		}
		cw_kpath(key, prefix, kv->key, kv->keylen);
		cw_diag(&c->w, kv->line, key, "%s",
		    kv->value->type == TOML_TABLE ? "unknown table" :
		    "unknown key");
	}
	sless = slot[SK_SERVERLESS] != NULL &&
	    slot[SK_SERVERLESS]->value->type == TOML_TABLE;
	for (k = 0; k < SK_COUNT; k++)
		if (slot[k] != NULL)
			svc_value(c, k, skv, slot[k], sless, s);
	if (slot[SK_IMAGE] == NULL && slot[SK_COMMAND] == NULL)
		cw_diag(&c->w, s->line, prefix, "requires image or command");
	else if (svc_backend(c, slot, prefix, s) == 0) {
		svc_placement(c, slot, prefix, s);
		svc_container(c, slot, prefix, s);
		svc_env_host(c, slot, prefix, s);
	}
	svc_secret_rules(c, slot, prefix, s);
	/*
	 * The copy a container bind-mounts is written by hk-scale on its
	 * own host, the default node: another node's engine has none.
	 */
	if (slot[SK_SOURCE] != NULL && s->backend == BACKEND_CONTAINER &&
	    s->node_name != NULL) {
		cw_kpath_s(key, prefix, "source");
		cw_diag(&c->w, slot[SK_SOURCE]->line, key, "not allowed with "
		    "node_name \"%s\" (the copy is on the default node "
		    "only)", s->node_name);
	}
	if (slot[SK_SOURCE] != NULL && slot[SK_DIRECTORY] != NULL) {
		cw_kpath_s(key, prefix, "directory");
		cw_diag(&c->w, slot[SK_DIRECTORY]->line, key, "not allowed "
		    "with source (the source is the working directory)");
	}
	/* With a source, hk-scale says where it runs (spec.h). */
	if (s->directory == NULL && slot[SK_DIRECTORY] == NULL &&
	    slot[SK_SOURCE] == NULL)
		s->directory = cw_strndup(&c->w, c->dir, strlen(c->dir));
	if (s->size == NULL && slot[SK_SIZE] == NULL)
		s->size = cw_strndup(&c->w, "small", 5);
	if (slot[SK_HOSTS] == NULL) {
		cw_kpath_s(key, prefix, "hosts");
		svc_default_host(c, skv, key, s);
	}
	if (s->serverless) {
		svc_serverless_rules(c, slot, prefix, s);
		svc_suspend_rules(c, slot[SK_SERVERLESS], prefix, s);
	}
	svc_schedules_check(c, prefix, slot[SK_SCHEDULES], s);
	if (!c->w.oom)
		s->spec_json = svc_json(c, s, slot, prefix);
}

static int
hostref_cmp(const void *a, const void *b)
{
	const struct hostref *x = a, *y = b;
	int r;

	if ((r = strcmp(x->host, y->host)) != 0)
		return r;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A host may appear once in the file; the later use is the error. */
static void
hosts_check(struct actx *c)
{
	const struct toml_kv *s, *first;
	char key[CW_KEYPATH_LEN], other[CW_KEYPATH_LEN];
	char shown[CW_KEYSHOW_MAX * 6 + 8];
	size_t i, f;

	if (c->nhosts < 2)
		return;
	qsort(c->hosts, c->nhosts, sizeof(c->hosts[0]), hostref_cmp);
	for (i = 1, f = 0; i < c->nhosts; i++) {
		if (strcmp(c->hosts[i].host, c->hosts[f].host) != 0) {
			f = i;
			continue;
		}
		s = c->hosts[i].svc;
		first = c->hosts[f].svc;
		cw_kpath(other, "services", s->key, s->keylen);
		cw_kpath_s(key, other, "hosts");
		cw_kpath(other, "services", first->key, first->keylen);
		cw_show(shown, sizeof(shown), c->hosts[i].host,
		    strlen(c->hosts[i].host), 1);
		cw_diag(&c->w, c->hosts[i].line, key, "duplicate host %s "
		    "(also %s)", shown, other);
	}
}

static void
app_root(struct actx *c, const struct toml_value *root)
{
	const struct toml_kv *kv, *ver = NULL, *name = NULL, *svcs = NULL;
	const struct toml_kv *jobs = NULL;
	const struct toml_value *sv;
	char key[CW_KEYPATH_LEN];
	size_t i;

	for (i = 0; i < root->u.table.len; i++) {
		kv = &root->u.table.items[i];
		if (cw_key_is(kv, "schema_version"))
			ver = kv;
		else if (cw_key_is(kv, "name"))
			name = kv;
		else if (cw_key_is(kv, "services"))
			svcs = kv;
		else if (cw_key_is(kv, "jobs"))
			jobs = kv;
		else {
			cw_kpath(key, NULL, kv->key, kv->keylen);
			cw_diag(&c->w, kv->line, key, "%s",
			    kv->value->type == TOML_TABLE ? "unknown table" :
			    "unknown key");
		}
	}
	if (ver == NULL)
		cw_diag(&c->w, 1, "schema_version", "missing");
	else if (ver->value->type != TOML_INTEGER)
		cw_diag(&c->w, ver->line, "schema_version",
		    "must be an integer");
	else if (ver->value->u.integer != 1)
		cw_diag(&c->w, ver->line, "schema_version", "must be 1");
	if (name == NULL)
		cw_diag(&c->w, 1, "name", "missing");
	else if (name->value->type != TOML_STRING)
		cw_diag(&c->w, name->line, "name", "must be a string");
	else if (strlen(name->value->u.string.ptr) !=
	    name->value->u.string.len ||
	    !config_valid_name(name->value->u.string.ptr))
		cw_diag(&c->w, name->line, "name", NAME_REASON);
	else
		(void)strlcpy(c->app->name, name->value->u.string.ptr,
		    sizeof(c->app->name));
	if (jobs != NULL)
		app_jobs(c, jobs);
	if (svcs == NULL)
		return;
	sv = svcs->value;
	if (sv->type != TOML_TABLE) {
		cw_diag(&c->w, svcs->line, "services", "must be a table");
		return;
	}
	if (sv->u.table.len == 0)
		return;
	c->app->services = calloc(sv->u.table.len, sizeof(*c->app->services));
	if (c->app->services == NULL) {
		c->w.oom = 1;
		return;
	}
	for (i = 0; i < sv->u.table.len && !c->w.oom; i++) {
		svc_parse(c, &sv->u.table.items[i],
		    &c->app->services[c->app->nservices]);
		c->app->nservices++;
	}
	if (!c->w.oom)
		hosts_check(c);
}

/*
 * spec_json.
 */

/* The ordinary-only keys, as written; -1 on failure (diagnosed or oom). */
static int
svc_extras(struct actx *c, json_t *o, const struct toml_kv *const *slot,
    const char *prefix)
{
	char key[CW_KEYPATH_LEN];
	json_t *e;
	size_t k;
	int deep = 0;

	for (k = 0; k < SK_COUNT; k++) {
		if (!svc_keys[k].ordinary || slot[k] == NULL)
			continue;
		if ((e = cw_json(slot[k]->value, 0, &deep)) == NULL) {
			if (!deep) {
				c->w.oom = 1;
				return -1;
			}
			cw_kpath_s(key, prefix, svc_keys[k].name);
			cw_diag(&c->w, slot[k]->line, key,
			    "nested too deeply (at most %d levels)",
			    CW_JSON_DEPTH_MAX);
			return -1;
		}
		if (json_object_set_new(o, svc_keys[k].name, e) == -1) {
			c->w.oom = 1;
			return -1;
		}
	}
	return 0;
}

/*
 * The canonical JSON of a service (spec_encode()) with its ordinary-only
 * keys, keys sorted, compact; no line numbers.  Unchanged input gives the
 * same bytes.  NULL on failure (diagnosed, or c->w.oom).
 */
static char *
svc_json(struct actx *c, const struct service_spec *s,
    const struct toml_kv *const *slot, const char *prefix)
{
	char *out = NULL;
	json_t *o;

	if ((o = spec_encode(s)) == NULL) {
		c->w.oom = 1;
		return NULL;
	}
	if (svc_extras(c, o, slot, prefix) == 0 &&
	    (out = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT)) == NULL)
		c->w.oom = 1;
	json_decref(o);
	return out;
}

int
app_parse(struct app_config *app, const char *path, const char *buf,
    size_t len, const struct server_config *srv, struct config_diag *d)
{
	struct toml_value *root;
	struct toml_error terr;
	struct actx *c;
	int rc = 0;

	memset(app, 0, sizeof(*app));
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		cw_diag_add(d, "%s: %s", path, strerror(errno));
		return -1;
	}
	c->w.file = path;
	c->srv = srv;
	c->app = app;
	if ((app->path = strdup(path)) == NULL) {
		cw_diag_add(d, "%s: %s", path, strerror(errno));
		free(c);
		return -1;
	}
	if (file_dir(path, c->dir, sizeof(c->dir)) == -1) {
		cw_diag_add(d, "%s: unable to resolve its directory: %s",
		    path, strerror(errno != 0 ? errno : ENAMETOOLONG));
		rc = -1;
		goto out;
	}
	if ((root = toml_parse(buf, len, &terr)) == NULL) {
		if (terr.line > 0)
			cw_diag_add(d, "%s:%d: syntax: %s", path,
			    terr.line, terr.msg);
		else
			cw_diag_add(d, "%s: syntax: %s", path, terr.msg);
		rc = -1;
		goto out;
	}
	app_root(c, root);
	if (!c->w.oom)
		app_jobs_check(c);
	toml_free(root);
	if (c->w.oom)
		cw_diag_add(d, "%s: %s", path, strerror(ENOMEM));
	cw_flush(&c->w.dl, d);
	if (c->w.oom || c->w.dl.count > 0)
		rc = -1;
out:
	free(c->hosts);
	free(c);
	if (rc == -1)
		app_free(app);
	return rc;
}

int
app_load(struct app_config *app, const char *path,
    const struct server_config *srv, struct config_diag *d, int *missing)
{
	char *buf;
	size_t len;
	int rc, dummy;

	if (missing == NULL)
		missing = &dummy;
	*missing = 0;
	memset(app, 0, sizeof(*app));
	if (cw_read(path, 0, &buf, &len, missing, d) != 0)
		return -1;
	rc = app_parse(app, path, buf, len, srv, d);
	free(buf);
	return rc;
}

void
app_free(struct app_config *app)
{
	size_t i;

	if (app == NULL)
		return;
	for (i = 0; i < app->nservices; i++)
		spec_clear(&app->services[i]);
	free(app->services);
	for (i = 0; i < app->njobs; i++)
		job_clear(&app->jobs[i]);
	free(app->jobs);
	free(app->path);
	memset(app, 0, sizeof(*app));
}

size_t
app_count_serverless(const struct app_config *app)
{
	size_t i, n = 0;

	for (i = 0; i < app->nservices; i++)
		if (app->services[i].serverless)
			n++;
	return n;
}
