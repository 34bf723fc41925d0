/*
 * app_rules.c - the rules between the keys of one [services.NAME] of
 * hk.toml (hk.toml(5)), once app.c has read each key: what the backend
 * can run and where, the keys it would not apply, a container's and its
 * volumes', the secrets' delivery, and what the gateway routes: a
 * serverless service's policy, its suspend and its idle check.  Each
 * problem is one diagnostic, as app.c's.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "app_impl.h"
#include "config.h"
#include "cw.h"
#include "spec.h"
#include "toml.h"
#include "volume.h"

static void	 svc_secret_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    const struct service_spec *);
static int	 svc_backend(struct actx *, const struct toml_kv *const *,
		    const char *, struct service_spec *);
static void	 svc_placement(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_unapplied(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_replica_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    const struct service_spec *);
static int	 sl_pair(const struct toml_kv *, const char *,
		    const struct toml_kv **, const char *,
		    const struct toml_kv **);
static void	 svc_unrouted(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_listen_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    struct service_spec *);
static void	 svc_env_host(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_volume_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    const struct service_spec *);
static void	 svc_container(struct actx *, const struct toml_kv *const *,
		    const char *, const struct service_spec *);
static void	 svc_serverless_rules(struct actx *,
		    const struct toml_kv *const *, const char *,
		    struct service_spec *);
static void	 svc_suspend_rules(struct actx *, const struct toml_kv *,
		    const char *, const struct service_spec *);
static void	 svc_idle_check_rules(struct actx *, const struct toml_kv *,
		    const char *, const struct service_spec *);
static void	 node_spare_rules(struct actx *, const struct toml_kv *,
		    const char *, const struct service_spec *);
static void	 svc_start_from_rules(struct actx *, const struct toml_kv *,
		    const char *, const struct service_spec *);

/*
 * Delivery: as files by every backend (hk-scale(8)); a container's
 * directory is bind-mounted from hk-scale's host, or on another node
 * put into a tmpfs through its engine (podman only: hk-scale refuses a
 * Docker node at the start, which validate cannot ask).  As variables only
 * by exec, and by kubernetes as references to the revision's Secret
 * (secretKeyRef: the Deployment holds no value): s6's run script is a
 * file, the engine keeps a container's environment (podman inspect),
 * systemd a unit's (systemctl show).  A
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
	if (s->secrets_env &&
	    !config_backend_can(s->backend, BACKEND_SECRETS_ENV)) {
		cw_kpath_s(key, prefix, "secrets_env");
		cw_diag(&c->w, slot[SK_SECRETS_ENV]->line, key, "not with "
		    "backend \"%s\" (%s): read the files of "
		    "$CREDENTIALS_DIRECTORY", config_backend_name(s->backend),
		    config_backend_env_note(s->backend));
		cw_kpath_s(key, prefix, "secrets");
	}
	for (i = 0; s->secrets_env && i < s->nsecrets; i++) {
		for (j = 0; j < s->nenv; j++)
			if (strcmp(s->secrets[i], s->env[j].name) == 0)
				cw_diag(&c->w, slot[SK_SECRETS]->line, key,
				    "\"%s\" is also in environment "
				    "(secrets_env)", s->secrets[i]);
		bad = strcmp(s->secrets[i], "HOST") == 0;
		for (j = 0; j < APP_ENV_RESERVED; j++)
			if (strcmp(s->secrets[i], app_env_reserved[j]) == 0)
				bad = 1;
		if (bad)
			cw_diag(&c->w, slot[SK_SECRETS]->line, key, "\"%s\" is "
			    "reserved (set by hk; secrets_env)",
			    s->secrets[i]);
	}
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
	if (b != NULL && s->command == NULL &&
	    config_backend_can(s->backend, BACKEND_NEEDS_COMMAND))
		cw_diag(&c->w, b->line, key, "%s requires command", name);
	else if (b != NULL && s->image == NULL && s->k8s_deployment == NULL &&
	    config_backend_can(s->backend, BACKEND_NEEDS_IMAGE))
		cw_diag(&c->w, b->line, key, "%s requires image", name);
	else if (b != NULL &&
	    config_backend_can(s->backend, BACKEND_NEEDS_SCANDIR) &&
	    (c->srv == NULL || c->srv->s6_scandir[0] == '\0'))
		cw_diag(&c->w, b->line, key, "%s requires "
		    "server.s6_scandir (unset)", name);
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
 * the default node, and on no other.  s6 has no listener to hand over
 * (readiness "socket": the exec and systemd backends bind it, hk-scale
 * itself).
 */
static void
svc_placement(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];

	if (s->readiness == READY_SOCKET &&
	    !config_backend_can(s->backend, BACKEND_IMAGE_ONLY) &&
	    !config_backend_can(s->backend, BACKEND_LISTENER) &&
	    !config_backend_can(s->backend, BACKEND_ENGINE)) {
		cw_kpath_s(key, prefix, "readiness");
		cw_diag(&c->w, slot[SK_READINESS]->line, key, "\"socket\" "
		    "needs backend \"exec\" or \"systemd\", which hand "
		    "their command a listener: use tcp, http:/PATH or "
		    "notify with \"%s\"",
		    config_backend_name(s->backend));
	}
	if (s->node_name == NULL ||
	    config_backend_can(s->backend, BACKEND_PLACED) ||
	    config_backend_can(s->backend, BACKEND_IMAGE_ONLY))
		return;
	cw_kpath_s(key, prefix, "node_name");
	cw_diag(&c->w, slot[SK_NODE_NAME]->line, key, "backend \"%s\" runs its "
	    "command on this host, not on node \"%s\"",
	    config_backend_name(s->backend), s->node_name);
}

/*
 * Keys the service's backend would not apply, refused rather than kept:
 * a size other than the default where the backend sets no limit (exec and
 * s6 run with hk-scale's, or s6-svscan's), a directory in a container,
 * which works in its image's, an image where no engine runs it.
 */
static void
svc_unapplied(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	const char *name = config_backend_name(s->backend);
	char key[CW_KEYPATH_LEN];

	if (slot[SK_SIZE] != NULL && s->size != NULL &&
	    strcmp(s->size, "small") != 0 &&
	    !config_backend_can(s->backend, BACKEND_LIMITS)) {
		cw_kpath_s(key, prefix, "size");
		cw_diag(&c->w, slot[SK_SIZE]->line, key, "\"%s\" is not "
		    "applied by backend \"%s\", which sets no memory or CPU "
		    "limit: use container or systemd, or leave size unset",
		    s->size, name);
	}
	if (slot[SK_IMAGE] != NULL &&
	    !config_backend_can(s->backend, BACKEND_ENGINE) &&
	    !config_backend_can(s->backend, BACKEND_IMAGE_ONLY)) {
		cw_kpath_s(key, prefix, "image");
		cw_diag(&c->w, slot[SK_IMAGE]->line, key, "not used by "
		    "backend \"%s\", which runs command on this host: use "
		    "backend = \"container\", or remove it", name);
	}
	if (slot[SK_IMAGE_PULL] != NULL &&
	    !config_backend_can(s->backend, BACKEND_ENGINE) &&
	    !config_backend_can(s->backend, BACKEND_IMAGE_ONLY)) {
		cw_kpath_s(key, prefix, "image_pull");
		cw_diag(&c->w, slot[SK_IMAGE_PULL]->line, key, "not used by "
		    "backend \"%s\", which pulls no image", name);
	}
	if (slot[SK_DIRECTORY] != NULL &&
	    config_backend_can(s->backend, BACKEND_ENGINE)) {
		cw_kpath_s(key, prefix, "directory");
		cw_diag(&c->w, slot[SK_DIRECTORY]->line, key, "not applied by "
		    "backend \"%s\": a container works in its image's "
		    "directory (or in source)", name);
	}
}

/*
 * replicas > 1 (an ordinary service: app.c refused it with [serverless])
 * where its backend runs that many.  A container has a network of its
 * own, its port published on a host port the engine picks: any port
 * works, but on the node's own network (container_network = "host"),
 * where a fixed port would be bound by each.  Elsewhere a fixed port must
 * be one listening socket shared, which only a backend that hands its
 * command a listener can (exec and systemd: hk-scale binds it and hands
 * it to each as fd 3, LISTEN_FDS); and a tcp or http probe of the shared port
 * cannot tell one replica from another, so their readiness is the
 * socket's or their own notify.  With port 0 each has a port of its own.
 */
static void
svc_replica_rules(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	const struct config_node *n;
	const char *net = NULL;
	char key[CW_KEYPATH_LEN];
	int line;

	if (slot[SK_REPLICAS] == NULL || s->replicas <= 1)
		return;
	cw_kpath_s(key, prefix, "replicas");
	line = slot[SK_REPLICAS]->line;
	if (config_backend_can(s->backend, BACKEND_ENGINE) && c->srv != NULL) {
		n = s->node_name != NULL ? config_node_find(c->srv,
		    s->node_name) : NULL;
		net = n != NULL ? n->container_network :
		    c->srv->container_network;
	}
	if (!config_backend_can(s->backend, BACKEND_REPLICAS))
		cw_diag(&c->w, line, key, "%d: not supported yet with backend "
		    "\"%s\", which runs one instance of a service (replicas = "
		    "1); backends \"exec\", \"s6\", \"systemd\" and "
		    "\"container\" run replicas", s->replicas,
		    config_backend_name(s->backend));
	else if (config_backend_can(s->backend, BACKEND_ENGINE)) {
		if (s->port != 0 && net != NULL && strcmp(net, "host") == 0)
			cw_diag(&c->w, line, key, "%d with port %d: the "
			    "containers share the node's network "
			    "(container_network = \"host\"), where each "
			    "would bind the port: set port = 0 (a port each)",
			    s->replicas, s->port);
	} else if (s->port != 0 &&
	    !config_backend_can(s->backend, BACKEND_SHARED_PORT))
		cw_diag(&c->w, line, key, "%d with port %d: backend \"%s\" "
		    "cannot hand the replicas one listening socket, and each "
		    "would bind the port: set port = 0 (a port each), or "
		    "backend = \"exec\", \"s6\" or \"systemd\"", s->replicas,
		    s->port,
		    config_backend_name(s->backend));
	else if (s->port != 0 && s->readiness != READY_NOTIFY &&
	    (s->readiness != READY_SOCKET ||
	    !config_backend_can(s->backend, BACKEND_LISTENER)))
		cw_diag(&c->w, line, key, "%d with port %d: the replicas share "
		    "one listening socket, handed to each as fd 3 "
		    "(LISTEN_FDS), and a probe of that port cannot tell one "
		    "from another: set readiness = %s\"notify\", or port = 0 "
		    "(a port each)", s->replicas, s->port,
		    config_backend_can(s->backend, BACKEND_LISTENER) ?
		    "\"socket\" or " : "");
}

/*
 * The gateway routes serverless services alone (hk-activate(8)): an
 * ordinary one is reached at its own port, so hosts and public = true
 * would route nothing.
 */
#define UNROUTED	"the gateway routes serverless services only: an " \
			"ordinary service is reached at its own port (add " \
			"[serverless], or remove it)"
static void
svc_unrouted(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	char key[CW_KEYPATH_LEN];

	if (slot[SK_PUBLIC] != NULL && s->public_) {
		cw_kpath_s(key, prefix, "public");
		cw_diag(&c->w, slot[SK_PUBLIC]->line, key, "%s", UNROUTED);
	}
	if (slot[SK_HOSTS] != NULL) {
		cw_kpath_s(key, prefix, "hosts");
		cw_diag(&c->w, slot[SK_HOSTS]->line, key, "%s", UNROUTED);
	}
}

/*
 * listen = "unix": hk-scale binds the socket and the exec or systemd
 * backend hands it over, for the gateway alone to reach, which routes
 * serverless services alone.  There is no port, and hk's socket takes a connect before the
 * command runs: readiness is "socket" unless the service names another
 * that says something (http:/PATH or notify), never "tcp".
 */
static void
svc_listen_rules(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, struct service_spec *s)
{
	const struct toml_kv *kv = slot[SK_LISTEN];
	char key[CW_KEYPATH_LEN];

	if (kv == NULL || !s->listen_unix)
		return;
	cw_kpath_s(key, prefix, "listen");
	if (s->backend != BACKEND_EXEC && s->backend != BACKEND_SYSTEMD) {
		cw_diag(&c->w, kv->line, key, "\"unix\" needs backend "
		    "\"exec\" or \"systemd\", which hand their command the "
		    "socket: use tcp with \"%s\"",
		    config_backend_name(s->backend));
		return;
	}
	if (slot[SK_SERVERLESS] == NULL) {
		cw_diag(&c->w, kv->line, key, "\"unix\" needs [serverless]: "
		    "only the gateway reaches a unix instance, and it routes "
		    "serverless services alone");
		return;
	}
	if (slot[SK_PORT] != NULL && s->port != 0) {
		cw_kpath_s(key, prefix, "port");
		cw_diag(&c->w, slot[SK_PORT]->line, key, "not with listen = "
		    "\"unix\", which gives the command a socket, not a port");
	}
	if (slot[SK_READINESS] == NULL)
		s->readiness = READY_SOCKET;
	else if (s->readiness == READY_TCP) {
		cw_kpath_s(key, prefix, "readiness");
		cw_diag(&c->w, slot[SK_READINESS]->line, key, "tcp says "
		    "nothing with listen = \"unix\" (hk's socket takes a "
		    "connect before the command runs): use socket, "
		    "http:/PATH or notify");
	}
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

	if (!config_backend_can(s->backend, BACKEND_SETS_HOST) ||
	    env == NULL || env->value->type != TOML_TABLE)
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
 * Volumes are a container's: the engine keeps a named one, and mounts a
 * host directory.  A command on this host reaches its directories itself
 * (directory, and the files it opens).  Bind mounts are of directories
 * under the operator's volume_dirs alone, and on this host alone: another
 * node's paths are not hk's to check.
 */
static void
svc_volume_rules(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	const struct toml_kv *kv = slot[SK_VOLUMES];
	char key[CW_KEYPATH_LEN];
	size_t i;

	if (kv == NULL || s->serverless)	/* refused: not with it */
		return;
	cw_kpath_s(key, prefix, "volumes");
	if (config_backend_can(s->backend, BACKEND_IMAGE_ONLY))
		return;			/* app_rules_k8s.c */
	if (!config_backend_can(s->backend, BACKEND_ENGINE)) {
		cw_diag(&c->w, kv->line, key, "not with backend \"%s\", "
		    "which runs command on this host: volumes are a "
		    "container's (use backend = \"container\", or the "
		    "directories themselves)", config_backend_name(s->backend));
		return;
	}
	for (i = 0; i < s->nvolumes; i++) {
		/* hk's own mounts (hk-backends(7)) */
		if (slot[SK_SOURCE] != NULL &&
		    volume_under(s->volumes[i].target, "/app"))
			cw_diag(&c->w, kv->line, key, "%s: hk mounts the source "
			    "at /app", s->volumes[i].target);
		if (slot[SK_SECRETS] != NULL &&
		    volume_under(s->volumes[i].target, "/run/secrets"))
			cw_diag(&c->w, kv->line, key, "%s: hk mounts the "
			    "secrets at /run/secrets", s->volumes[i].target);
		if (!s->volumes[i].bind)
			continue;
		if (s->node_name != NULL)
			cw_diag(&c->w, kv->line, key, "%s: a bind mount is not "
			    "allowed with node_name \"%s\" (volume_dirs are "
			    "this host's; use a named volume)",
			    s->volumes[i].source, s->node_name);
		else if (c->srv == NULL ||
		    !config_volume_dir_allows(c->srv, s->volumes[i].source))
			cw_diag(&c->w, kv->line, key, "%s: not under "
			    "server.volume_dirs (%s)", s->volumes[i].source,
			    c->srv != NULL && c->srv->volume_dirs[0] != '\0' ?
			    c->srv->volume_dirs : "none: bind mounts are "
			    "refused");
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
	if (!config_backend_can(s->backend, BACKEND_ENGINE)) {
		if (s->readiness == READY_HEALTH &&
		    !config_backend_can(s->backend, BACKEND_IMAGE_ONLY))
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
		if (!app_svc_keys[k].ordinary || slot[k] == NULL)
			continue;
		cw_kpath_s(key, prefix, app_svc_keys[k].name);
		if (k == SK_STARTUP_TIMEOUT)
			cw_diag(&c->w, slot[k]->line, key, "not allowed with "
			    "[serverless] (it has its own, in [serverless])");
		else if (k != SK_BACKEND_HTTP2)
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
 * Two keys of a [serverless] table, each NULL when absent; 0 when sl is
 * not a table (its own diagnostic said so).
 */
static int
sl_pair(const struct toml_kv *sl, const char *a, const struct toml_kv **pa,
    const char *b, const struct toml_kv **pb)
{
	const struct toml_kv *e;
	size_t i;

	*pa = *pb = NULL;
	if (sl == NULL || sl->value->type != TOML_TABLE)
		return 0;
	for (i = 0; i < sl->value->u.table.len; i++) {
		e = &sl->value->u.table.items[i];
		if (cw_key_is(e, a))
			*pa = e;
		else if (cw_key_is(e, b))
			*pb = e;
	}
	return 1;
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
	const struct toml_kv *action, *max;
	char sl_key[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];

	if (!sl_pair(sl, "idle_action", &action, "suspend_max_seconds", &max))
		return;
	if (s->policy.idle_action == IDLE_SUSPEND && action != NULL &&
	    s->backend < BACKEND_COUNT &&
	    !(config_backend_available(s->backend) &&
	    config_backend_can(s->backend, BACKEND_SUSPENDS))) {
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

/*
 * idle_check defers a sleep: refused where nothing sleeps (min_replicas =
 * 1), and its maximum means nothing without it.
 */
static void
svc_idle_check_rules(struct actx *c, const struct toml_kv *sl,
    const char *prefix, const struct service_spec *s)
{
	const struct toml_kv *check, *max;
	char sl_key[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];

	if (!sl_pair(sl, "idle_check", &check, "idle_check_max_seconds", &max))
		return;
	cw_kpath_s(sl_key, prefix, "serverless");
	if (check != NULL && s->policy.min_replicas > 0) {
		cw_kpath_s(key, sl_key, "idle_check");
		cw_diag(&c->w, check->line, key, "not allowed with "
		    "min_replicas = 1 (the service never sleeps)");
	}
	if (max != NULL && check == NULL) {
		cw_kpath_s(key, sl_key, "idle_check_max_seconds");
		cw_diag(&c->w, max->line, key, "only with idle_check");
	}
}


/* What the service's backend can run, where, and with which keys. */
void
app_rules_backend(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, struct service_spec *s)
{
	if (svc_backend(c, slot, prefix, s) != 0)
		return;
	svc_placement(c, slot, prefix, s);
	svc_unapplied(c, slot, prefix, s);
	svc_replica_rules(c, slot, prefix, s);
	svc_container(c, slot, prefix, s);
	svc_listen_rules(c, slot, prefix, s);
	svc_env_host(c, slot, prefix, s);
	svc_volume_rules(c, slot, prefix, s);
	app_rules_kubernetes(c, slot, prefix, s);
}

void
app_rules_secrets(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, const struct service_spec *s)
{
	svc_secret_rules(c, slot, prefix, s);
}

/* An ordinary service is not routed; a serverless one's policy. */
void
app_rules_routing(struct actx *c, const struct toml_kv *const *slot,
    const char *prefix, struct service_spec *s)
{
	if (!s->serverless) {
		svc_unrouted(c, slot, prefix, s);
		return;
	}
	svc_serverless_rules(c, slot, prefix, s);
	svc_suspend_rules(c, slot[SK_SERVERLESS], prefix, s);
	svc_idle_check_rules(c, slot[SK_SERVERLESS], prefix, s);
	svc_start_from_rules(c, slot[SK_SERVERLESS], prefix, s);
}

/*
 * start_from = "node-spare": only the exec backend keeps spares, and a
 * spare becomes only a command it can run with the node it started.
 */
static void
node_spare_rules(struct actx *c, const struct toml_kv *from, const char *key,
    const struct service_spec *s)
{
	if (s->backend != BACKEND_EXEC)
		cw_diag(&c->w, from->line, key, "\"node-spare\" needs "
		    "backend \"exec\", not \"%s\"",
		    config_backend_name(s->backend));
	else if (!spec_node_command(s->command, s->ncommand))
		cw_diag(&c->w, from->line, key, "\"node-spare\" needs a "
		    "command node SCRIPT ... (no option before the script)");
}

/*
 * start_from = "python-template": only the exec backend forks from a
 * template, and only a command of the shape the template runs.
 */
static void
svc_start_from_rules(struct actx *c, const struct toml_kv *sl,
    const char *prefix, const struct service_spec *s)
{
	const struct toml_kv *from, *none;
	char sl_key[CW_KEYPATH_LEN], key[CW_KEYPATH_LEN];

	if (!sl_pair(sl, "start_from", &from, "", &none) || from == NULL ||
	    s->policy.start_from == START_FROM_EXEC)
		return;
	cw_kpath_s(sl_key, prefix, "serverless");
	cw_kpath_s(key, sl_key, "start_from");
	if (s->policy.start_from == START_FROM_NODE) {
		node_spare_rules(c, from, key, s);
		return;
	}
	if (s->backend != BACKEND_EXEC)
		cw_diag(&c->w, from->line, key, "\"python-template\" needs "
		    "backend \"exec\", not \"%s\"",
		    config_backend_name(s->backend));
	else if (!spec_python_command(s->command, s->ncommand))
		cw_diag(&c->w, from->line, key, "\"python-template\" needs a "
		    "command python3 [-u] SCRIPT ... or python3 [-u] -m MODULE "
		    "...");
}
