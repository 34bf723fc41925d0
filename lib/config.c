/*
 * config.c - the operator config, hakopod.toml (see config.h and
 * hakopod.toml(5)): its key table, [server] and [nodes]; [vet] and
 * [metrics] are config_vet.c's and config_metrics.c's.  The application
 * config, hk.toml, is app.c's.
 *
 * The file is read whole (at most CONFIG_MAX_FILE bytes, checked before
 * reading), parsed by lib/toml.c and walked here.  Every problem becomes one
 * diagnostic "file:line: key: reason"; the walk goes on after a problem so
 * that one run reports all of them.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "config.h"
#include "config_impl.h"
#include "cw.h"
#include "log.h"
#include "proxyproto.h"
#include "toml.h"
#include "user.h"

#define RUNTIME_DIR_MAX	80	/* leaves room for "/<name>.sock" in sun_path */

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
	KT_DIRS,	/* absolute directories, "a,b"; TOML an array */
	KT_INT,		/* int64_t within [min, max] */
	KT_PATH,	/* absolute, at most RUNTIME_DIR_MAX bytes */
	KT_FILE,	/* absolute, an existing file; "" = unset */
	KT_NET,		/* bridge, slirp4netns or host */
	KT_FREEZER,	/* auto, cgroup2, cgroup1 or signal */
	KT_OPTFILE,	/* absolute, read when used; "" = unset */
	KT_OPTPATH,	/* the same, or "" = unset */
	KT_URL,		/* sqlite://PATH, postgres://..., postgresql://... */
	KT_USER,	/* USER or USER:GROUP of this host; "" = unset */
	KT_LABEL,	/* a DNS label (a Kubernetes namespace); "" = unset */
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
	K("keep_revisions", NULL, "5", 1,				\
	    KT_INT, 1, 1000, keep_revisions)				\
	K("kubernetes_config", NULL, "", 0,				\
	    KT_OPTFILE, 0, 0, kubernetes_config)			\
	K("kubernetes_namespace", NULL, "", 0,				\
	    KT_LABEL, 0, 0, kubernetes_namespace)			\
	K("kubernetes_service_address", NULL, "false", 0,		\
	    KT_BOOL, 0, 1, kubernetes_service_address)			\
	K("max_body_bytes", NULL, "4194304", 1,				\
	    KT_INT, 0, 1073741824, max_body_bytes)			\
	K("max_concurrent_requests", NULL, "128", 1,			\
	    KT_INT, 1, 65536, max_concurrent_requests)			\
	K("max_concurrent_starts", NULL, "2", 1,			\
	    KT_INT, 1, 64, max_concurrent_starts)			\
	K("max_serverless_services", NULL, "512", 1,			\
	    KT_INT, 1, 65536, max_serverless_services)			\
	K("registry_auth_file", NULL, "", 1,				\
	    KT_OPTFILE, 0, 0, registry_auth_file)			\
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
	K("scale_grace_seconds", NULL, "5", 1,				\
	    KT_INT, 1, 600, scale_grace_seconds)			\
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
	K("volume_dirs", NULL, "", 1,					\
	    KT_DIRS, 0, 0, volume_dirs)					\
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
 * The backends hk.toml(5) names, whether this build's hk-scale has them,
 * and what each needs and can do (BACKEND_* of config.h): hk validate
 * refuses what this table says a backend cannot do, and hk-scale does what
 * it says one can (cmd/hk-scale/backend.c indexes its backends[] by kind).
 */
static const struct {
	const char	*name;
	int		 available;
	unsigned	 caps;
	const char	*env_note;	/* why not secrets_env */
} backend_kinds[BACKEND_COUNT] = {
	[BACKEND_EXEC] = { "exec", 1,
	    BACKEND_SUSPENDS | BACKEND_SECRETS_ENV | BACKEND_LISTENER |
	    BACKEND_SETS_HOST | BACKEND_NEEDS_COMMAND | BACKEND_REPLICAS |
	    BACKEND_SHARED_PORT, NULL },
	[BACKEND_CONTAINER] = { "container", 1,
	    BACKEND_PLACED | BACKEND_SUSPENDS | BACKEND_ENGINE |
	    BACKEND_NEEDS_IMAGE | BACKEND_LIMITS | BACKEND_REPLICAS,
	    "the engine keeps a container's environment, shown by podman "
	    "inspect" },
	[BACKEND_S6] = { "s6", 1,
	    BACKEND_SUSPENDS | BACKEND_SETS_HOST | BACKEND_NEEDS_COMMAND |
	    BACKEND_NEEDS_SCANDIR | BACKEND_REPLICAS | BACKEND_SHARED_PORT,
	    "its run script is a file" },
	[BACKEND_SYSTEMD] = { "systemd", 1,
	    BACKEND_SUSPENDS | BACKEND_SETS_HOST | BACKEND_NEEDS_COMMAND |
	    BACKEND_LIMITS | BACKEND_REPLICAS | BACKEND_LISTENER |
	    BACKEND_SHARED_PORT,
	    "systemd keeps a unit's environment, shown by systemctl show" },
	[BACKEND_KUBERNETES] = { "kubernetes", 1,
	    BACKEND_NEEDS_IMAGE | BACKEND_IMAGE_ONLY | BACKEND_LIMITS |
	    BACKEND_OWN_ADDRESS | BACKEND_SECRETS_ENV, NULL },
};



static int	 check_addr(const char *, char *, size_t);
static int	 check_user(const char *, char *, size_t);
static int	 check_engine(const char *, char *, size_t);
static int	 check_file(const char *, char *, size_t);
static int	 check_engine_tls(const char *, const char *, const char *,
		    const char *, char *, size_t);
static int	 check_text(enum key_type, size_t, const char *, char *,
		    size_t);
static int	 check_dirs(const char *, char *, size_t);
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

/*
 * A DNS name: 1..253 bytes, labels of 1..63 letters, digits and '-' that
 * neither start nor end with '-', the last label not all digits.  Upper-case
 * letters only when anycase is set.
 */
int
config_valid_host(const char *s, int anycase)
{
	size_t len = strlen(s), lab = 0, i;
	int alldig = 1;
	unsigned char c;

	if (len == 0 || len > CONFIG_HOST_MAX)
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
	    !config_valid_host(host, 1))
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
		/* A flag holds for the process's life (-l of hk-activate). */
		if (same || cfg->source[i] == CONFIG_SRC_FLAG)
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
		} else if (server_rules[i].type == KT_NETS ||
		    server_rules[i].type == KT_DIRS) {
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
	config_vet_print(fp, &cfg->vet);
	config_metrics_print(fp, &cfg->metrics);
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

/*
 * volume_dirs: absolute, normalized paths (so that "under" is a prefix
 * test), without ':' (a bind mount's separator); not "/" itself, which
 * would allow every directory of the host.
 */
static int
check_dirs(const char *s, char *why, size_t whysz)
{
	const char *p, *comma;
	size_t n;

	for (p = s; *p != '\0'; p = comma != NULL ? comma + 1 : p + n) {
		comma = strchr(p, ',');
		n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (n < 2 || p[0] != '/' || p[n - 1] == '/' ||
		    memchr(p, ':', n) != NULL) {
			(void)snprintf(why, whysz, "\"%.*s\": must be an "
			    "absolute directory other than /, without ':' or "
			    "a final '/'", (int)n, p);
			return -1;
		}
		if (memmem(p, n, "//", 2) != NULL ||
		    memmem(p, n, "/./", 3) != NULL ||
		    memmem(p, n, "/../", 4) != NULL ||
		    (n >= 2 && memcmp(p + n - 2, "/.", 2) == 0) ||
		    (n >= 3 && memcmp(p + n - 3, "/..", 3) == 0)) {
			(void)snprintf(why, whysz, "\"%.*s\": must be "
			    "normalized (no //, . or ..)", (int)n, p);
			return -1;
		}
	}
	return 0;
}

int
config_volume_dir_allows(const struct server_config *cfg, const char *path)
{
	const char *p, *comma;
	size_t n;

	for (p = cfg->volume_dirs; *p != '\0';
	    p = comma != NULL ? comma + 1 : p + n) {
		comma = strchr(p, ',');
		n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (strncmp(path, p, n) == 0 && (path[n] == '\0' ||
		    path[n] == '/'))
			return 1;
	}
	return 0;
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
	case KT_DIRS:
		return check_dirs(s, why, whysz);
	case KT_LABEL:
		if (len == 0 || config_valid_name(s))
			return 0;
		(void)snprintf(why, whysz, "must be a DNS label: at most 63 "
		    "of a-z, 0-9 and '-', not at either end");
		return -1;
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
		if (config_valid_host(s, 1))
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
			(void)snprintf(why, whysz, "item %zu: must be %s",
			    k + 1, server_rules[i].type == KT_DIRS ?
			    "an absolute path without ',' or ':'" :
			    "an address or CIDR block");
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
	config_vet_defaults(&cfg->vet);
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
	} else if (server_rules[i].type == KT_NETS ||
	    server_rules[i].type == KT_DIRS)
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
			if (config_vet_walk(&cfg->vet, kv, file, d) == -1)
				rc = -1;
			continue;
		}
		if (cw_key_is(kv, "metrics")) {
			if (config_metrics_walk(&cfg->metrics, kv, file,
			    d) == -1)
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
	if (strlen(kv->key) != kv->keylen || !config_valid_host(kv->key, 0)) {
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
	if (rc == 0 && config_metrics_cross(cfg, path, d) == -1)
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
config_backend_can(enum backend_kind k, unsigned caps)
{
	return (unsigned)k < BACKEND_COUNT &&
	    (backend_kinds[k].caps & caps) == caps;
}

/*
 * An unknown kind (a service with neither image nor command has none) gets
 * systemd's note, as hk validate has always said.
 */
const char *
config_backend_env_note(enum backend_kind k)
{
	return backend_kinds[(unsigned)k < BACKEND_COUNT ? k :
	    BACKEND_SYSTEMD].env_note;
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
