/*
 * backend_container.c - the container backend: each instance is a
 * container of the service's image, run by the Docker Engine API (Docker,
 * or podman's API service) of the node the service is placed on
 * (container_node.c), through the engine client (engine.h) on hk-scale's
 * loop.
 *
 * A start creates a fresh container and starts it: the image (pulled when
 * the engine does not have it: create answers 404), the service's command
 * if it has one, its environment and PORT, labels naming the
 * installation, app, service, revision, replica (hk.replica: replicas,
 * hk.toml(5)) and this start (hk.instance), the
 * port published on the node's address (the engine picks the host port;
 * or the node's own network, container_network = host), size as memory
 * and CPU limits, the service's user as uid:gid, no-new-privileges, no
 * capability unless that user is root, an init as PID 1, its volumes
 * (ct_volumes.c: the named ones made first, kept).  Its endpoint is
 * the node's address and the published port.  Readiness is a probe of
 * that endpoint (probe.c), or the image's HEALTHCHECK run in the
 * container through the engine's exec (readiness = healthcheck).
 *
 * The container's output is followed from the engine, line by line, and
 * logged as the exec backend logs a process's; its last line is the
 * reason of a start that fails.  Its exit is the engine's "die" event
 * (container_node.c).  A stop is the engine's stop (the image's stop
 * signal, SIGKILL after the grace period), and the container is removed
 * once it is gone: the next wake creates a fresh one.  An adopted
 * container (an earlier run's) is found by its labels.
 *
 * idle_action = "suspend" freezes the container's own cgroup here where
 * the engine is local (ct_freezer.c: a thaw is one write), else it is the
 * engine's pause (the cgroup freezer: the processes cannot tell, nor
 * catch it) and unpause.  A paused container
 * is stopped with its stop signal (a kill), then unpaused: podman 4.3
 * refuses to stop a paused container, and the signal waits, pending, for
 * the unpause; SIGKILL needs no unpause.  An adopted container is brought
 * to what its row says: paused if "suspended", unpaused if "running" (a
 * pause or unpause whose answer the earlier run did not live to record).
 *
 * Everything here answers later than asked; a stop or kill that comes
 * while a call of the start is under way waits for that call's answer,
 * so that no start reaches the engine after the stop.
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "log.h"
#include "user.h"

#define CT_PORT_DEFAULT	8080	/* PORT in a container, for port = 0 */
#define CT_NOFILE	4096	/* RLIMIT_NOFILE, soft and hard */
#define CT_NPROC	1024	/* RLIMIT_NPROC */
#define CT_SOURCE	"/app"	/* where a source is, read-only: hk.toml(5) */
#define CT_LABELS	8	/* hk.installation app service revision
				   instance node port replica */
#define CT_LABEL_MAX	(STORE_NAME_MAX + 32)


/* What a create needs, kept until it is answered. */
struct ct_create {
	struct engine_spec	 spec;
	char			 user[32];
	char			 name[ENGINE_NAME_MAX + 1];
	char			 labels[CT_LABELS][CT_LABEL_MAX];
	const char		*labelv[CT_LABELS + 1];
	char			**env;
	char			 bind[PATH_MAX + sizeof(CT_SOURCE ":ro")];
	char			 cbind[PATH_MAX + sizeof(CT_SECRETS ":ro")];
	char			 tmpfs[128];	/* a held start's (ct_hold.c) */
	const char		*tmpfsv[2];
	const char		*bindv[3 + VOLUMES_MAX];
	char			**vbinds;	/* the volumes' (ct_volumes.c) */
};

static void	ct_start(struct inst *);
static void	ct_adopt(struct inst *, const struct store_instance *);
static void	ct_stop(struct inst *);
static void	ct_kill(struct inst *);
static void	ct_row(const struct inst *, struct store_instance *);
static int	ct_release(struct inst *);
static void	ct_init(struct scale *);
static void	ct_shutdown(struct scale *);
static struct ct *ct_new(struct inst *, char *, size_t);
static int	ct_user(struct scale *, const struct service_spec *,
		    struct user_ids *, char *, size_t);
static int	ct_cred_user(struct inst *, struct user_ids *, char *,
		    size_t);
static int	ct_port(struct ct *, const struct service_spec *, char *,
		    size_t);
static char	**ct_env(const struct service_spec *, int, int);
static int	ct_spec(struct ct *, struct ct_create *, char *, size_t);
static int	ct_source(struct ct *, struct ct_create *, char *, size_t);
static int	ct_secrets(struct ct *, struct ct_create *, char *, size_t);
static void	ct_prepare(struct ct *);
static void	ct_create(struct ct *);
static void	on_create(void *, int, json_t *, const char *);
static void	on_pull(void *, int, json_t *, const char *);
static void	on_archived(void *, int, json_t *, const char *);
static void	on_held(void *, int, json_t *, const char *);
static void	on_secrets(void *, int, json_t *, const char *);
static void	ct_started(struct ct *);
static void	ct_put_hold(struct ct *);
static void	ct_run(struct ct *);
static void	ct_pull(struct ct *);
static void	on_start(void *, int, json_t *, const char *);
static void	on_inspect(void *, int, json_t *, const char *);
static int	ct_health(struct ct *, json_t *);
static void	ct_fail(struct ct *, const char *, const char *);
static void	ct_halt(struct ct *);
static void	on_stopped(void *, int, json_t *, const char *);
static void	on_killed(void *, int, json_t *, const char *);
static void	on_removed(void *, int, json_t *, const char *);
static void	ct_follow(struct ct *, int64_t);
static int	on_line(int, const char *, size_t, void *);
static void	on_logs_end(void *, int, json_t *, const char *);
static void	ct_finish(struct ct *);
static void	ct_report(struct ct *);
static void	ct_timer(struct loop *, void *);
static void	hc_try(struct ct *);
static void	hc_retry(struct ct *);
static void	hc_created(void *, int, json_t *, const char *);
static void	hc_ran(void *, int, json_t *, const char *);
static void	hc_done(void *, int, json_t *, const char *);
static void	on_adopt_inspect(void *, int, json_t *, const char *);
static void	adopt_inspect(struct ct *);
static int	adopt_ask_again(struct ct *, const char *);
static int	ct_adopt_match(struct ct *);
static void	on_adopt_matched(void *, int, json_t *, const char *);
static void	ct_stopsig(struct ct *, const json_t *);
static void	ct_behind(struct ct *, int);
static void	ct_freeze(struct inst *);
static void	ct_thaw(struct inst *);
static void	on_paused(void *, int, json_t *, const char *);
static void	on_unpaused(void *, int, json_t *, const char *);
static int	ct_runs_already(const char *);
static void	ct_stop_paused(struct ct *);
static void	on_signalled(void *, int, json_t *, const char *);
static void	ct_unpause(struct ct *);
static int	ct_adopt_match_cg(struct ct *, int);
static void	ct_up_early(struct ct *);
static void	ct_cg_thaw(struct ct *);
static void	ct_inspected(struct ct *, json_t *, const char *);

const struct backend backend_container = {
	.kind = BACKEND_CONTAINER,
	.starts_later = 1,
	.start = ct_start,
	.adopt = ct_adopt,
	.stop = ct_stop,
	.kill = ct_kill,
	.row = ct_row,
	.release = ct_release,
	.init = ct_init,
	.shutdown = ct_shutdown,
	.cred_user = ct_cred_user,
	.freeze = ct_freeze,
	.thaw = ct_thaw,
};

static struct ct *
ct_new(struct inst *in, char *err, size_t errlen)
{
	unsigned char r[CT_NONCE_LEN / 2];
	struct ct_node *n;
	struct ct *x;
	size_t i;

	if ((n = ct_node_get(in->sc, in->node, err, errlen)) == NULL)
		return NULL;
	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		free(x);
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	for (i = 0; i < sizeof(r); i++)
		snprintf(x->nonce + 2 * i, 3, "%02x", r[i]);
	x->in = in;
	x->node = n;
	x->exit_code = -1;
	x->cg_fd = -1;
	strlcpy(x->stopsig, "SIGTERM", sizeof(x->stopsig));
	strlcpy(in->what, "container", sizeof(in->what));
	loop_timer_init(&x->timer, ct_timer, x);
	TAILQ_INSERT_TAIL(&n->cts, x, entry);
	in->priv = x;
	return x;
}

void
ct_free(struct ct *x)
{
	loop_timer_cancel(x->node->sc->loop, &x->timer);
	ct_cg_close(x);
	TAILQ_REMOVE(&x->node->cts, x, entry);
	ct_free_strv(x->health);
	ct_free_strv(x->hold_argv);
	ct_free_strv(x->hold_cmd);
	output_close(&x->out);
	free(x);
}

void
ct_free_strv(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/*
 * Whom the container runs as, uid:gid looked up on this host: the
 * service's user, else the operator's service_user, else nobody; never
 * the image's own USER, which is root in most images.  A service's user
 * of uid 0 needs allow_root_services, as with exec.
 */
static int
ct_user(struct scale *sc, const struct service_spec *sp,
    struct user_ids *u, char *err, size_t errlen)
{
	const char *name = sp->user;
	char why[USER_ERR_LEN];

	if (name == NULL && sc->cfg.service_user[0] != '\0')
		name = sc->cfg.service_user;
	if (name == NULL)
		name = "nobody";
	if (user_resolve(name, u, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "user: %s", why);
		return -1;
	}
	if (sp->user != NULL && u->uid == 0 && !sc->cfg.allow_root_services) {
		snprintf(err, errlen, "user: \"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", name);
		return -1;
	}
	return 0;
}

/*
 * The secrets' files are the container's user's: the engine's bind
 * mount keeps host uids (a rootful engine; a rootless one maps them to
 * others).  On another node they are read back from this host's
 * directory and sent through the engine (ct_hold.c).
 */
static int
ct_cred_user(struct inst *in, struct user_ids *u, char *err, size_t errlen)
{
	return ct_user(in->sc, &inst_def(in)->spec, u, err, errlen);
}

/*
 * The port the container listens on: the service's, or 8080 for port =
 * 0 (a container has its own network); on the node's own network, port
 * = 0 is one free now on the node's address, which must be this host's.
 */
static int
ct_port(struct ct *x, const struct service_spec *sp, char *err,
    size_t errlen)
{
	struct inst *in = x->in;
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd;

	if (sp->port != 0 || x->node->net != CT_NET_HOST) {
		in->port = sp->port != 0 ? sp->port : CT_PORT_DEFAULT;
		return 0;
	}
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, x->node->address, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		len = sizeof(*sin);
	} else {
		inet_pton(AF_INET6, x->node->address, &sin6->sin6_addr);
		sin6->sin6_family = AF_INET6;
		len = sizeof(*sin6);
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&ss, len) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) == -1) {
		snprintf(err, errlen, "port = 0 on node \"%s\" with "
		    "container_network = host: no free port on %s here: %s "
		    "(set port)", x->node->name, x->node->address,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	in->port = ntohs(ss.ss_family == AF_INET ? sin->sin_port :
	    sin6->sin6_port);
	return 0;
}

/*
 * The service's environment (hk's own names left out), then PORT, and
 * CREDENTIALS_DIRECTORY with secrets (their names: never a value).
 */
static char **
ct_env(const struct service_spec *sp, int port, int secrets)
{
	char **env;
	size_t i, k = 0;

	if ((env = calloc(sp->nenv + 3, sizeof(*env))) == NULL)
		return NULL;
	for (i = 0; i < sp->nenv; i++) {
		if (strcmp(sp->env[i].name, "PORT") == 0)
			continue;
		if (asprintf(&env[k++], "%s=%s", sp->env[i].name,
		    sp->env[i].value) == -1) {
			env[--k] = NULL;
			ct_free_strv(env);
			return NULL;
		}
	}
	if (asprintf(&env[k++], "PORT=%d", port) == -1 || (secrets &&
	    (env[k++] = strdup("CREDENTIALS_DIRECTORY=" CT_SECRETS)) ==
	    NULL)) {
		env[--k] = NULL;
		ct_free_strv(env);
		return NULL;
	}
	return env;
}

/* What the create asks for (struct engine_spec), into cc. */
static int
ct_spec(struct ct *x, struct ct_create *cc, char *err, size_t errlen)
{
	struct inst *in = x->in;
	const struct service *s = in->svc;
	const struct service_spec *sp = &inst_def(in)->spec;
	struct engine_spec *e = &cc->spec;
	struct user_ids u;
	size_t i;

	if (ct_user(in->sc, sp, &u, err, errlen) == -1 ||
	    ct_port(x, sp, err, errlen) == -1)
		return -1;
	snprintf(cc->user, sizeof(cc->user), "%lu:%lu", (unsigned long)u.uid,
	    (unsigned long)u.gid);
	if ((cc->env = ct_env(sp, in->port, in->cred_dir[0] != '\0')) ==
	    NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(cc->labels[0], CT_LABEL_MAX, "hk.installation=%s",
	    in->sc->installation);
	snprintf(cc->labels[1], CT_LABEL_MAX, "hk.app=%s", s->def.app);
	snprintf(cc->labels[2], CT_LABEL_MAX, "hk.service=%s", s->def.name);
	snprintf(cc->labels[3], CT_LABEL_MAX, "hk.revision=%lld",
	    (long long)in->revision);
	snprintf(cc->labels[4], CT_LABEL_MAX, "hk.instance=%s", x->nonce);
	snprintf(cc->labels[5], CT_LABEL_MAX, "hk.node=%s", x->node->name);
	snprintf(cc->labels[6], CT_LABEL_MAX, "hk.port=%d", in->port);
	snprintf(cc->labels[7], CT_LABEL_MAX, "hk.replica=%d", in->replica);
	for (i = 0; i < CT_LABELS; i++)
		cc->labelv[i] = cc->labels[i];
	if ((size_t)snprintf(cc->name, sizeof(cc->name), "hk-%s-%s-%lld-%.6s",
	    s->def.app, s->def.name, (long long)in->revision, x->nonce) <
	    sizeof(cc->name))
		e->name = cc->name;
	e->image = x->image;
	e->cmd = (const char *const *)sp->command;
	e->env = (const char *const *)cc->env;
	e->labels = cc->labelv;
	e->user = cc->user;
	e->port = in->port;
	if (x->node->net != CT_NET_HOST)
		e->host_ip = x->node->address;
	if (spec_size_limits(sp->size, &e->memory, &e->nano_cpus) == -1)
		e->memory = e->nano_cpus = 0;	/* a newer hk's: none */
	e->nofile = CT_NOFILE;
	e->nproc = CT_NPROC;
	e->network = x->node->net == CT_NET_HOST ? "host" :
	    x->node->net == CT_NET_SLIRP ?
	    "slirp4netns:port_handler=slirp4netns" : NULL;
	e->init = 1;
	e->no_new_privs = 1;
	e->cap_drop_all = u.uid != 0;
	if (ct_source(x, cc, err, errlen) == -1 ||
	    ct_secrets(x, cc, err, errlen) == -1)
		return -1;
	for (i = 0; cc->bindv[i] != NULL; i++)
		;
	if (ct_volume_binds(x, cc->bindv, i, &cc->vbinds, err, errlen) == -1)
		return -1;
	if (cc->bindv[0] != NULL)
		cc->spec.binds = cc->bindv;
	return 0;
}

/*
 * A source (inst_start() wrote it out under runtime_dir/src/HASH) is
 * CT_SOURCE, the command's working directory: on this host's node the
 * tree bind-mounted read-only; on another node, whose disk does not have
 * it, a copy sent through the engine once the container is created
 * (ct_archive.c).  The hash is the instance's, taken at its start: a
 * create retried after a pull is of the same code even if the service
 * changed meanwhile.
 */
static int
ct_source(struct ct *x, struct ct_create *cc, char *err, size_t errlen)
{
	struct inst *in = x->in;
	char dir[PATH_MAX];

	if (in->code_hash[0] == '\0')
		return 0;
	cc->spec.workdir = CT_SOURCE;
	if (ct_archive_wanted(x))
		return 0;
	if (source_dir(in->sc, in->code_hash, dir, sizeof(dir)) == -1 ||
	    (size_t)snprintf(cc->bind, sizeof(cc->bind), "%s:" CT_SOURCE
	    ":ro", dir) >= sizeof(cc->bind)) {
		snprintf(err, errlen, "source: %s", strerror(ENAMETOOLONG));
		return -1;
	}
	cc->bindv[0] = cc->bind;
	cc->spec.binds = cc->bindv;
	return 0;
}

/*
 * The instance's secrets (inst_start() wrote them out, the container's
 * user's) are bind-mounted read-only at CT_SECRETS, which
 * CREDENTIALS_DIRECTORY names: the engine sees the path, never a value.
 * On another node CT_SECRETS is a tmpfs they are put into once the
 * container runs, hk-hold holding the command until then (ct_hold.c).
 */
static int
ct_secrets(struct ct *x, struct ct_create *cc, char *err, size_t errlen)
{
	struct inst *in = x->in;
	size_t n = cc->spec.binds != NULL ? 1 : 0;

	if (in->cred_dir[0] == '\0')
		return 0;
	if (ct_held(x)) {
		ct_hold_spec(x, &cc->spec, cc->tmpfs, sizeof(cc->tmpfs),
		    cc->tmpfsv);
		return 0;
	}
	if ((size_t)snprintf(cc->cbind, sizeof(cc->cbind), "%s:" CT_SECRETS
	    ":ro", in->cred_dir) >= sizeof(cc->cbind)) {
		snprintf(err, errlen, "secrets: %s", strerror(ENAMETOOLONG));
		return -1;
	}
	cc->bindv[n] = cc->cbind;
	cc->spec.binds = cc->bindv;
	return 0;
}

/*
 * Starts a container of the service's current revision on its node: the
 * create now, the rest from the engine's answers.
 */
static void
ct_start(struct inst *in)
{
	char err[SCALE_REASON_MAX];
	struct ct *x;

	if ((x = ct_new(in, err, sizeof(err))) == NULL) {
		backend_failed(in, err);
		return;
	}
	x->phase = CT_CREATING;
	/* kept: a start stopped meanwhile is no longer its service's */
	if (ct_image_ref(&inst_def(in)->spec, x->image, sizeof(x->image)) ==
	    -1) {
		ct_fail(x, "image", strerror(errno));
		return;
	}
	x->pull = inst_def(in)->spec.image_pull;
	ct_prepare(x);
}

/*
 * The service's named volumes first, one at a time; then the image when
 * image_pull = "always"; then the container.
 */
static void
ct_prepare(struct ct *x)
{
	char err[SCALE_REASON_MAX];

	switch (ct_volumes_next(x, err, sizeof(err))) {
	case 1:
		return;		/* ct_volumes_done() follows */
	case 0:
		if (x->pull == IMAGE_PULL_ALWAYS)
			ct_pull(x);
		else
			ct_create(x);
		return;
	default:
		ct_fail(x, err, NULL);
	}
}

/* A volume's create was answered (ct_volumes.c). */
void
ct_volumes_done(struct ct *x, const char *err)
{
	if (err != NULL)
		ct_fail(x, err, NULL);
	else if (x->stop_wanted || x->kill_wanted)
		ct_finish(x);
	else
		ct_prepare(x);
}

/* Whose a new named volume's root directory is: the container's user. */
int
ct_volume_owner(struct ct *x, struct user_ids *u, char *err, size_t errlen)
{
	return ct_user(x->in->sc, &inst_def(x->in)->spec, u, err, errlen);
}

/* image_pull = "always", or the create found no image (on_create()). */
static void
ct_pull(struct ct *x)
{
	char what[ENGINE_IMAGE_MAX + 8], err[SCALE_REASON_MAX - sizeof(what) - 2];

	if ((x->op = ct_image_pull(x, on_pull, err, sizeof(err))) == NULL) {
		snprintf(what, sizeof(what), "pull %s", x->image);
		ct_fail(x, what, err);
	}
}

static void
ct_create(struct ct *x)
{
	char err[SCALE_REASON_MAX];
	struct ct_create cc;

	if (ct_held(x)) {
		switch (ct_hold_next(x, err, sizeof(err))) {
		case 1:
			return;		/* ct_hold_done() follows */
		case -1:
			ct_fail(x, err, NULL);
			return;
		}
	}
	memset(&cc, 0, sizeof(cc));
	if (ct_spec(x, &cc, err, sizeof(err)) == -1) {
		ct_free_strv(cc.env);
		ct_free_strv(cc.vbinds);
		ct_fail(x, err, NULL);
		return;
	}
	x->op = engine_create(x->node->e, &cc.spec, on_create, x);
	ct_free_strv(cc.env);
	ct_free_strv(cc.vbinds);
	if (x->op == NULL)
		ct_fail(x, "create", errno == EINVAL ? "a value the engine "
		    "cannot be given (image name, label or variable)" :
		    strerror(errno));
}

/*
 * What a held create asked first was answered (ct_hold.c): err, or the
 * image is missing (pulled, as a create's 404 would have it), or the
 * create goes on.
 */
void
ct_hold_done(struct ct *x, const char *err, int missing)
{
	char why[CONFIG_NODE_MAX + 64];

	if (x->stop_wanted || x->kill_wanted)
		ct_finish(x);
	else if (missing && !x->pulled && x->pull != IMAGE_PULL_NEVER)
		ct_pull(x);
	else if (missing) {
		snprintf(why, sizeof(why), "not on node %s's engine, and "
		    "image_pull = \"never\"", x->node->name);
		ct_fail(x, x->image, why);
	} else if (err != NULL)
		ct_fail(x, err, NULL);
	else
		ct_create(x);
}

static void
on_create(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	struct inst *in = x->in;
	char why[CONFIG_NODE_MAX + 64], why2[SCALE_REASON_MAX];
	const char *id;

	x->op = NULL;
	if (err != NULL && status == 404 && !x->pulled && !x->stop_wanted &&
	    !x->kill_wanted) {
		if (x->pull != IMAGE_PULL_NEVER)
			ct_pull(x);
		else {
			snprintf(why, sizeof(why), "not on node %s's engine, "
			    "and image_pull = \"never\"", x->node->name);
			ct_fail(x, x->image, why);
		}
		return;
	}
	if (err != NULL) {
		ct_fail(x, "create", err);
		return;
	}
	if ((id = engine_id(body)) == NULL) {
		ct_fail(x, "create", "no container ID in the engine's answer");
		return;
	}
	strlcpy(x->id, id, sizeof(x->id));
	snprintf(in->what, sizeof(in->what), "container %.12s", x->id);
	output_open(&x->out, in);
	if (x->stop_wanted || x->kill_wanted) {
		ct_finish(x);		/* never started: removed */
		return;
	}
	x->phase = CT_STARTING;
	if (ct_archive_wanted(x)) {
		if (ct_archive_put(x, on_archived, why2, sizeof(why2)) == -1)
			ct_fail(x, why2, NULL);
	} else
		ct_put_hold(x);
}

/* A held start's hk-hold goes into the created container, then it runs. */
static void
ct_put_hold(struct ct *x)
{
	char err[SCALE_REASON_MAX];

	if (!ct_held(x))
		ct_run(x);
	else if (ct_hold_put(x, on_held, err, sizeof(err)) == -1)
		ct_fail(x, err, NULL);
}

static void
on_held(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		ct_fail(x, "secrets: hk-hold", err);
		return;
	}
	if (x->stop_wanted || x->kill_wanted) {
		ct_finish(x);		/* never started: removed */
		return;
	}
	ct_run(x);
}

/* The source is in the created container (ct_archive.c): started. */
static void
on_archived(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		ct_fail(x, "source", err);
		return;
	}
	if (x->stop_wanted || x->kill_wanted) {
		ct_finish(x);		/* never started: removed */
		return;
	}
	ct_put_hold(x);
}

/* Created (and given its source): started. */
static void
ct_run(struct ct *x)
{
	if ((x->op = engine_start(x->node->e, x->id, on_start, x)) == NULL)
		ct_fail(x, "start", strerror(errno));
}

static void
on_pull(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	char what[SCALE_REASON_MAX];

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		snprintf(what, sizeof(what), "pull %s", x->image);
		ct_fail(x, what, err);
		return;
	}
	x->pulled = 1;
	if (x->stop_wanted || x->kill_wanted)
		ct_finish(x);
	else
		ct_create(x);
}

static void
on_start(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	char why[SCALE_REASON_MAX];

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		ct_fail(x, "start", err);
		return;
	}
	ct_follow(x, 0);
	if (x->stop_wanted || x->kill_wanted) {
		ct_halt(x);
		return;
	}
	if (x->died) {
		ct_finish(x);
		return;
	}
	if (ct_held(x)) {
		if (ct_secrets_put(x, on_secrets, why, sizeof(why)) == -1)
			ct_fail(x, why, NULL);
		return;
	}
	ct_started(x);
}

/* A held start's secrets are in its tmpfs: hk-hold lets it go on. */
static void
on_secrets(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		ct_fail(x, "secrets", err);
		return;
	}
	if (x->stop_wanted || x->kill_wanted) {
		ct_halt(x);
		return;
	}
	if (x->died) {
		ct_finish(x);
		return;
	}
	ct_started(x);
}

/* Running: inspected for its pid and endpoint, probed. */
static void
ct_started(struct ct *x)
{
	if ((x->op = engine_inspect(x->node->e, x->id, on_inspect, x)) ==
	    NULL) {
		ct_fail(x, "inspect", strerror(errno));
		return;
	}
	if (x->node->net == CT_NET_HOST &&
	    inst_def(x->in)->spec.readiness != READY_HEALTH)
		ct_up_early(x);
}

/*
 * On the node's own network the endpoint is known before the inspect
 * (the node's address and the port hk-scale gave): the probe starts as
 * soon as the engine says the container runs, while the inspect, for
 * its pid and stop signal, is under way (on_inspect() then only reads
 * them).  A stop meanwhile waits for that answer, as during any call
 * of the start.
 */
static void
ct_up_early(struct ct *x)
{
	struct inst *in = x->in;
	const struct service_spec *sp = &inst_def(in)->spec;

	x->early = 1;
	ct_endpoint(x->node, in->port, in->endpoint, sizeof(in->endpoint));
	log_info("service=%s: started %s revision %lld at %s on node %s as %s",
	    in->id, in->what, (long long)in->revision, in->endpoint,
	    x->node->name, sp->user != NULL ? sp->user :
	    in->sc->cfg.service_user[0] != '\0' ? in->sc->cfg.service_user :
	    "nobody");
	backend_started(in);
}

/* The inspect of a container whose probe started already: its pid. */
static void
ct_inspected(struct ct *x, json_t *body, const char *err)
{
	struct inst *in = x->in;
	struct engine_state st;
	char why[ENGINE_ERR_LEN];

	if (err == NULL && engine_state(body, in->port, &st, why,
	    sizeof(why)) == -1)
		err = why;
	if (err != NULL)
		log_warnx("service=%s: inspect of %s: %s (its pid unknown)",
		    in->id, in->what, err);
	else {
		x->pid = st.pid;
		ct_cg_find(x);
		ct_stopsig(x, body);
	}
	x->phase = CT_UP;
	if (x->died)
		ct_finish(x);
}

/* Started: where it is published, its pid, and its health check. */
static void
on_inspect(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	struct inst *in = x->in;
	const struct service_spec *sp;
	struct engine_state st;
	char why[ENGINE_ERR_LEN];

	(void)status;
	x->op = NULL;
	if (x->stop_wanted || x->kill_wanted) {
		ct_halt(x);
		return;
	}
	if (x->early) {
		ct_inspected(x, body, err);
		return;
	}
	sp = &inst_def(in)->spec;
	if (err == NULL && engine_state(body, in->port, &st, why,
	    sizeof(why)) == -1)
		err = why;
	if (err != NULL) {
		ct_fail(x, "inspect", err);
		return;
	}
	if (x->node->net != CT_NET_HOST && st.host_port == 0 && !x->died) {
		ct_fail(x, "inspect", "the engine published no port");
		return;
	}
	x->pid = st.pid;
	ct_cg_find(x);
	ct_stopsig(x, body);
	if (x->node->net != CT_NET_HOST) {
		ct_behind(x, in->port);
		in->port = st.host_port;
	}
	ct_endpoint(x->node, in->port, in->endpoint, sizeof(in->endpoint));
	if (sp->readiness == READY_HEALTH && ct_health(x, body) == -1)
		return;
	x->phase = CT_UP;
	log_info("service=%s: started %s revision %lld at %s on node %s as %s",
	    in->id, in->what, (long long)in->revision, in->endpoint,
	    x->node->name, sp->user != NULL ? sp->user :
	    in->sc->cfg.service_user[0] != '\0' ? in->sc->cfg.service_user :
	    "nobody");
	if (x->died) {
		ct_finish(x);
		return;
	}
	backend_started(in);
	if (x->in != NULL && sp->readiness == READY_HEALTH && !in->stopping)
		hc_try(x);
}

/*
 * The container's HEALTHCHECK (Config.Healthcheck.Test of its
 * inspection: podman 4.3 does not show it in the image's): ["CMD", argv]
 * or ["CMD-SHELL", command].  None fails the start.
 */
static int
ct_health(struct ct *x, json_t *body)
{
	json_t *t, *v;
	const char *kind;
	size_t i, n;

	t = json_object_get(json_object_get(json_object_get(body, "Config"),
	    "Healthcheck"), "Test");
	kind = json_string_value(json_array_get(t, 0));
	n = json_array_size(t);
	if (kind == NULL || n < 2 || (strcmp(kind, "CMD") != 0 &&
	    strcmp(kind, "CMD-SHELL") != 0)) {
		ct_fail(x, "readiness = healthcheck", "the image has no "
		    "HEALTHCHECK");
		return -1;
	}
	if ((x->health = calloc(n + 2, sizeof(char *))) == NULL)
		goto oom;
	if (strcmp(kind, "CMD-SHELL") == 0) {
		if ((x->health[0] = strdup("/bin/sh")) == NULL ||
		    (x->health[1] = strdup("-c")) == NULL ||
		    json_string_value(json_array_get(t, 1)) == NULL ||
		    (x->health[2] = strdup(json_string_value(
		    json_array_get(t, 1)))) == NULL)
			goto oom;
		return 0;
	}
	for (i = 1; i < n; i++) {
		v = json_array_get(t, i);
		if (!json_is_string(v) ||
		    (x->health[i - 1] = strdup(json_string_value(v))) == NULL)
			goto oom;
	}
	return 0;
oom:
	ct_fail(x, "readiness = healthcheck", "unable to read the image's "
	    "HEALTHCHECK");
	return -1;
}

/* The start failed: why, and the engine's reason; nothing is left. */
static void
ct_fail(struct ct *x, const char *what, const char *err)
{
	char why[SCALE_REASON_MAX];

	if (x->in == NULL)
		return;
	if (err != NULL)
		snprintf(why, sizeof(why), "%s: %s", what, err);
	else
		strlcpy(why, what, sizeof(why));
	x->reported = 1;
	backend_failed(x->in, why);	/* the release removes it */
}

/* A stop or kill waited for the start's call: now it goes. */
static void
ct_halt(struct ct *x)
{
	if (x->kill_wanted)
		ct_kill(x->in);
	else
		ct_stop(x->in);
}

/*
 * Gracefully: the engine sends the image's stop signal and SIGKILL after
 * the grace period (inst_stop() kills it then too).  A stop that comes
 * during the start's call waits for its answer.
 */
static void
ct_stop(struct inst *in)
{
	struct ct *x = in->priv;

	if (x == NULL)
		return;
	ct_cg_release(x);
	x->stop_wanted = 1;
	if (x->adopt_wait)
		return;		/* halted once inspected (on_adopt_inspect) */
	engine_cancel(x->hc);
	x->hc = NULL;
	loop_timer_cancel(in->sc->loop, &x->timer);
	if (x->op != NULL || x->died || x->stopc != NULL)
		return;
	if (x->phase == CT_CREATING || x->id[0] == '\0') {
		ct_finish(x);
		return;
	}
	if (x->paused || x->pausec != NULL) {
		ct_stop_paused(x);
		return;
	}
	if ((x->stopc = engine_stop(x->node->e, x->id, in->sc->grace,
	    on_stopped, x)) == NULL)
		log_warn("service=%s: unable to stop %s", in->id, in->what);
}

static void
ct_kill(struct inst *in)
{
	struct ct *x = in->priv;

	if (x == NULL)
		return;
	ct_cg_release(x);
	x->kill_wanted = 1;
	if (x->adopt_wait)
		return;
	engine_cancel(x->hc);
	x->hc = NULL;
	if (x->op != NULL || x->died || x->killc != NULL)
		return;
	if (x->phase == CT_CREATING || x->id[0] == '\0') {
		ct_finish(x);
		return;
	}
	if ((x->killc = engine_kill(x->node->e, x->id, "SIGKILL", on_killed,
	    x)) == NULL)
		log_warn("service=%s: unable to kill %s", in->id, in->what);
}

/*
 * The engine has stopped it: its "die" follows on the events stream, or
 * has come.  If the stream is down, the exit is taken as it is.
 */
static void
on_stopped(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)body;
	x->stopc = NULL;
	if (err != NULL && status != 404)
		log_warnx("service=%s: stop of %s: %s", x->in->id,
		    x->in->what, err);
	if (x->died)
		return;
	if (status == 404 || status == 304)
		ct_died(x, -1);
	else if (err == NULL)
		loop_timer_at(x->node->sc->loop, &x->timer,
		    loop_now_ms(x->node->sc->loop) + CT_STOPPED_MS);
}

static void
on_killed(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)body;
	x->killc = NULL;
	if (x->died)
		return;
	if (status == 404 || status == 409)	/* gone, or not running */
		ct_died(x, -1);
	else if (err != NULL)
		log_warnx("service=%s: kill of %s: %s", x->in->id,
		    x->in->what, err);
}

/* The output, from since (Unix seconds; 0: all of it). */
static void
ct_follow(struct ct *x, int64_t since)
{
	if (x->logs == NULL && (x->logs = engine_logs(x->node->e, x->id,
	    since, on_line, on_logs_end, x)) == NULL)
		log_warn("service=%s: unable to follow the output of %s",
		    x->in->id, x->in->what);
}

/* A line of output, into the service's log as the exec backend's. */
static int
on_line(int stream, const char *line, size_t len, void *arg)
{
	struct ct *x = arg;
	char buf[SCALE_LINE_MAX + 1];
	size_t i;

	(void)stream;
	if (len > SCALE_LINE_MAX)
		len = SCALE_LINE_MAX;
	for (i = 0; i < len; i++)
		buf[i] = ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) ?
		    '?' : line[i];
	buf[len] = '\0';
	if (x->in != NULL)
		output_write(&x->out.log, x->in->id, buf, len);
	if (len > 0)
		memcpy(x->last, buf, len + 1);
	return 0;
}

static void
on_logs_end(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->logs = NULL;
	if (err != NULL && x->in != NULL)
		log_debug("service=%s: output of %s: %s", x->in->id,
		    x->in->what, err);
	if (x->died && !x->reported)
		ct_report(x);
}

/* The engine says it exited: code, or -1 if unknown. */
void
ct_died(struct ct *x, int code)
{
	if (x->died || x->in == NULL)
		return;
	x->died = 1;
	x->exit_code = code;
	engine_cancel(x->hc);
	x->hc = NULL;
	if (x->op != NULL)
		return;		/* the start's answer goes on from here */
	ct_finish(x);
}

/* Gone (or never started): once its output has ended, or a second. */
static void
ct_finish(struct ct *x)
{
	struct loop *l = x->node->sc->loop;

	if (x->reported || x->in == NULL)
		return;
	x->died = 1;
	if (x->logs == NULL) {
		ct_report(x);
		return;
	}
	loop_timer_at(l, &x->timer, loop_now_ms(l) + CT_END_MS);
}

/*
 * The exit, as a wait status for service.c: the engine's 128 + n (a
 * signal n, as the init in the container reports it) as a signal.
 */
static void
ct_report(struct ct *x)
{
	int code = x->exit_code, status;

	if (x->reported || x->in == NULL)
		return;
	x->reported = 1;
	loop_timer_cancel(x->node->sc->loop, &x->timer);
	if (code > 128 && code < 128 + 65)
		status = code - 128;
	else if (code >= 0)
		status = (code & 0xff) << 8;
	else
		status = -1;
	backend_exited(x->in, status, x->last);
}

/*
 * The one timer: the next health check; the end of output after an
 * exit; the "die" after a stop, which the events stream did not bring.
 */
static void
ct_timer(struct loop *l, void *arg)
{
	struct ct *x = arg;

	(void)l;
	if (x->adopt_wait) {
		x->adopt_wait = 0;
		adopt_inspect(x);
	} else if (x->died)
		ct_report(x);
	else if (x->stop_wanted || x->kill_wanted)
		ct_died(x, -1);
	else
		hc_try(x);
}

static void
hc_try(struct ct *x)
{
	if (x->in == NULL || x->hc != NULL || x->died)
		return;
	if ((x->hc = engine_exec_create(x->node->e, x->id,
	    (const char *const *)x->health, hc_created, x)) == NULL) {
		log_warn("service=%s: health check", x->in->id);
		hc_retry(x);
	}
}

/*
 * Paced as probes are (probe.c), more sparsely: a check is a command run
 * in the container, 1/32 of the start's time so far.
 */
static void
hc_retry(struct ct *x)
{
	struct loop *l = x->node->sc->loop;
	int64_t d = (loop_now_ms(l) - x->in->start_mono) / SCALE_HC_DIV;

	if (d < SCALE_HC_MIN_MS)
		d = SCALE_HC_MIN_MS;
	if (d > SCALE_PROBE_MAX_MS)
		d = SCALE_PROBE_MAX_MS;
	loop_timer_at(l, &x->timer, loop_now_ms(l) + d);
}

static void
hc_created(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	const char *id;

	(void)status;
	x->hc = NULL;
	if (err != NULL || (id = engine_id(body)) == NULL) {
		log_debug("service=%s: health check: %s", x->in->id,
		    err != NULL ? err : "no exec ID");
		hc_retry(x);
		return;
	}
	strlcpy(x->exec_id, id, sizeof(x->exec_id));
	if ((x->hc = engine_exec_start(x->node->e, x->exec_id, hc_ran, x)) ==
	    NULL)
		hc_retry(x);
}

static void
hc_ran(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->hc = NULL;
	if (err != NULL) {
		log_debug("service=%s: health check: %s", x->in->id, err);
		hc_retry(x);
		return;
	}
	if ((x->hc = engine_exec_inspect(x->node->e, x->exec_id, hc_done,
	    x)) == NULL)
		hc_retry(x);
}

static void
hc_done(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	int code = -1, r;

	(void)status;
	x->hc = NULL;
	if (err != NULL || (r = engine_exec_state(body, &code)) != 0 ||
	    code != 0) {
		log_debug("service=%s: health check: %s%d", x->in->id,
		    err != NULL ? err : "exit status ", code);
		hc_retry(x);
		return;
	}
	log_debug("service=%s: health check passed", x->in->id);
	backend_ready(x->in);
}

/*
 * An earlier run's row: its node's list (once the events stream is up
 * there) finds the running container of that service and revision.
 */
static void
ct_adopt(struct inst *in, const struct store_instance *r)
{
	char err[SCALE_REASON_MAX];
	struct ct *x;

	(void)r;
	if ((x = ct_new(in, err, sizeof(err))) == NULL) {
		log_warnx("service=%s: unable to look for the container of an "
		    "earlier run: %s", in->id, err);
		backend_adopted(in, 0);
		return;
	}
	x->phase = CT_ADOPTING;
	ct_node_relist(x->node);
}

void
ct_adopt_found(struct ct *x)
{
	snprintf(x->in->what, sizeof(x->in->what), "container %.12s", x->id);
	output_open(&x->out, x->in);
	adopt_inspect(x);
}

static void
adopt_inspect(struct ct *x)
{
	if ((x->op = engine_inspect(x->node->e, x->id, on_adopt_inspect,
	    x)) == NULL)
		ct_adopt_missing(x);
}

void
ct_adopt_missing(struct ct *x)
{
	backend_adopted(x->in, 0);
}

/* Running: published where its hk.port label says it listens. */
static void
on_adopt_inspect(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	struct inst *in = x->in;
	struct engine_state st;
	char why[ENGINE_ERR_LEN];
	const char *p;
	int port;

	x->op = NULL;
	if (err != NULL && status != 404 && adopt_ask_again(x, err))
		return;
	p = json_string_value(json_object_get(json_object_get(json_object_get(
	    body, "Config"), "Labels"), "hk.port"));
	port = p != NULL ? (int)strtonum(p, 1, 65535, NULL) : 0;
	if (err != NULL || port == 0 || engine_state(body, port, &st, why,
	    sizeof(why)) == -1 || !st.running) {
		backend_adopted(in, 0);
		return;
	}
	x->pid = st.pid;
	ct_cg_find(x);
	if (x->node->net != CT_NET_HOST) {
		ct_behind(x, port);
		port = st.host_port;
	}
	x->phase = CT_UP;
	x->paused = strcmp(st.status, "paused") == 0;
	x->cg_frozen = ct_cg_frozen(x);
	ct_stopsig(x, body);
	in->port = port;
	ct_endpoint(x->node, port, in->endpoint, sizeof(in->endpoint));
	ct_follow(x, (int64_t)time(NULL));
	if (ct_adopt_match(x))
		return;
	backend_adopted(in, port > 0);
	if (x->in != NULL && (x->stop_wanted || x->kill_wanted))
		ct_halt(x);
}

/*
 * The list named the container, and its inspect failed with something
 * other than "no such container": an engine slow under load, a dropped
 * connection.  Taken as gone, the container would be replaced by a new
 * one (and the old swept) where it runs and answers; so it is asked
 * again, a few times, a second apart.  1 if it will be.
 */
static int
adopt_ask_again(struct ct *x, const char *err)
{
	struct loop *l = x->node->sc->loop;

	if (x->in == NULL || ++x->adopt_tries >= CT_ADOPT_TRIES) {
		log_warnx("service=%s: unable to inspect %s, which the list "
		    "of node %s names: %s: taken as gone", x->in != NULL ?
		    x->in->id : "-", x->in != NULL ? x->in->what : x->id,
		    x->node->name, err);
		return 0;
	}
	log_warnx("service=%s: unable to inspect %s: %s: asking again",
	    x->in->id, x->in->what, err);
	x->adopt_wait = 1;
	loop_timer_at(l, &x->timer, loop_now_ms(l) + CT_ADOPT_RETRY_MS);
	return 1;
}

/*
 * A row that says "suspended" and a container that runs, or "running"
 * and one paused: the earlier run's unpause or pause reached the engine,
 * and hk-scale was gone before its answer.  The container is brought to
 * what the row says, then adopted; 1 if that is under way.  Frozen here
 * or thawed here (ct_freezer.c) where it can be, at once.
 */
static int
ct_adopt_match(struct ct *x)
{
	struct inst *in = x->in;
	int pause;

	pause = strcmp(in->row_state, "suspended") == 0;
	if ((!pause && strcmp(in->row_state, "running") != 0) ||
	    (x->paused || x->cg_frozen) == pause)
		return 0;
	if (ct_adopt_match_cg(x, pause) == 0)
		return 0;
	log_info("service=%s: %s %s, as its row says %s", in->id,
	    pause ? "pausing" : "unpausing", in->what, in->row_state);
	x->op = pause ? engine_pause(x->node->e, x->id, on_adopt_matched,
	    x) : engine_unpause(x->node->e, x->id, on_adopt_matched, x);
	if (x->op == NULL) {
		log_warn("service=%s: unable to %s %s", in->id, pause ?
		    "pause" : "unpause", in->what);
		backend_adopted(in, 0);		/* removed */
	}
	return 1;
}

/*
 * The row's state, by the container's cgroup (ct_freezer.c): 0 once it
 * is so, -1 if that is the engine's to do.  A container the engine
 * paused is unpaused by it.
 */
static int
ct_adopt_match_cg(struct ct *x, int freeze)
{
	struct inst *in = x->in;
	const char *err;

	if (x->cg[0] == '\0' || (!freeze && !x->cg_frozen))
		return -1;
	log_info("service=%s: %s %s, as its row says %s", in->id,
	    freeze ? "freezing" : "thawing", in->what, in->row_state);
	if ((err = ct_cg_set(x, freeze)) != NULL) {
		log_warnx("service=%s: unable to %s the cgroup of %s: %s",
		    in->id, freeze ? "freeze" : "thaw", in->what, err);
		return -1;
	}
	return 0;
}

static void
on_adopt_matched(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	struct inst *in = x->in;

	(void)status;
	(void)body;
	x->op = NULL;
	if (err != NULL) {
		log_warnx("service=%s: unable to %s %s: %s; removing it",
		    in->id, x->paused ? "unpause" : "pause", in->what, err);
		backend_adopted(in, 0);
		return;
	}
	x->paused = !x->paused;
	backend_adopted(in, 1);
	if (x->in != NULL && (x->stop_wanted || x->kill_wanted))
		ct_halt(x);
}

/*
 * The container's PORT is published by a forwarder, which
 * accepts a connection before anything listens behind it: a tcp probe
 * holds its connection (probe_hold).  Where the engine is on this host
 * and the container's first process is ours to see (its cgroup names the
 * container), the probe reads instead whether PORT listens in that
 * process's network namespace, which no timing can get wrong: on a busy
 * machine the forwarder's close of a connection that found nothing came
 * later than any hold.
 */
static void
ct_behind(struct ct *x, int port)
{
	struct inst *in = x->in;
	char path[64], line[512];
	FILE *fp;
	int ours = 0;

	in->probe_hold = CT_HOLD_MS;
	in->probe_ns_pid = 0;
	if (!x->node->local || x->pid <= 0 || strlen(x->id) < 12)
		return;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)x->pid);
	if ((fp = fopen(path, "re")) == NULL)
		return;
	while (!ours && fgets(line, sizeof(line), fp) != NULL)
		ours = strstr(line, x->id) != NULL;
	fclose(fp);
	if (!ours)
		return;
	in->probe_ns_pid = x->pid;
	in->probe_ns_port = port;
}

/*
 * The signal the engine's stop sends (Config.StopSignal: "15" from
 * podman, "SIGTERM" from Docker, or none): a paused container's stop is
 * a kill of that signal.
 */
static void
ct_stopsig(struct ct *x, const json_t *body)
{
	const char *sig;
	size_t n = 0;

	sig = json_string_value(json_object_get(json_object_get(body,
	    "Config"), "StopSignal"));
	if (sig != NULL)
		n = strspn(sig, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
	if (n == 0 || sig[n] != '\0' || n >= sizeof(x->stopsig))
		sig = "SIGTERM";
	strlcpy(x->stopsig, sig, sizeof(x->stopsig));
}

/*
 * idle_action = "suspend": its cgroup frozen here where the engine is
 * local (ct_freezer.c), else the engine pauses the container; it keeps its
 * memory, its port and its output stream.  One that is not up (or has
 * died, its report on the way) is not frozen.
 */
static void
ct_freeze(struct inst *in)
{
	struct ct *x = in->priv;
	const char *err;

	if (x == NULL || x->phase != CT_UP || x->died || x->pausec != NULL) {
		backend_frozen(in, "the container is not running");
		return;
	}
	if (x->cg[0] != '\0') {
		if ((err = ct_cg_set(x, 1)) == NULL) {
			backend_frozen(in, NULL);
			return;
		}
		log_warnx("service=%s: unable to freeze the cgroup of %s: %s "
		    "(paused by the engine)", in->id, in->what, err);
		x->cg[0] = '\0';
	}
	if ((x->pausec = engine_pause(x->node->e, x->id, on_paused, x)) ==
	    NULL)
		backend_frozen(in, strerror(errno));
}

/*
 * Paused, or not (the engine's reason).  A stop that came meanwhile has
 * sent its signal (ct_stop_paused()), which waits for the unpause: it
 * comes now.  A kill needs none.
 */
static void
on_paused(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->pausec = NULL;
	if (err == NULL)
		x->paused = 1;
	if (x->stop_wanted && !x->kill_wanted && x->stopc == NULL)
		ct_unpause(x);
	backend_frozen(x->in, err);
}

static void
ct_thaw(struct inst *in)
{
	struct ct *x = in->priv;

	if (x == NULL || x->died)
		backend_thawed(in, "the container is gone");
	else if (x->cg_frozen)
		ct_cg_thaw(x);
	else if (x->pausec != NULL)
		backend_thawed(in, "a pause is under way");
	else if ((x->pausec = engine_unpause(x->node->e, x->id, on_unpaused,
	    x)) == NULL)
		backend_thawed(in, strerror(errno));
}

/*
 * Its cgroup thawed, as the exec backend thaws one: said ready first, so
 * that the gateway's connect overlaps the write, which cannot wait on
 * anything (a failure is logged; the stop that follows thaws it again).
 */
static void
ct_cg_thaw(struct ct *x)
{
	struct inst *in = x->in;
	const char *err;

	backend_thawed(in, NULL);
	if (in->priv == x && x->cg_frozen && (err = ct_cg_set(x, 0)) != NULL)
		log_warnx("service=%s: unable to thaw the cgroup of %s: %s",
		    in->id, in->what, err);
}

/*
 * Runs again, or not: the thaw's answer, or the stop's.  Docker unpauses
 * a paused container itself once it has sent it a signal (podman leaves
 * it paused): the stop's unpause that follows is then answered that it
 * runs, the signal delivered: "is not paused", or, while Docker's own
 * unpause is under way, runc's "cannot resume a running process".
 */
static void
on_unpaused(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)status;
	(void)body;
	x->pausec = NULL;
	if (err == NULL || (x->in->stopping && ct_runs_already(err))) {
		x->paused = 0;
		err = NULL;
	} else if (x->in->stopping && !x->died)
		log_warnx("service=%s: unable to unpause %s, to stop it: %s "
		    "(killed after the grace period)", x->in->id,
		    x->in->what, err);
	backend_thawed(x->in, err);
}

/* An unpause refused because the container runs (on_unpaused()). */
static int
ct_runs_already(const char *err)
{
	return strstr(err, "is not paused") != NULL ||
	    strstr(err, "cannot resume a running process") != NULL;
}

/*
 * A paused container (or one being paused): podman 4.3 refuses to stop
 * it, and an engine that did would wait, frozen, for the grace period
 * (Docker 20.10 stops it, unpausing it first; one way serves both).
 * Its stop signal first, pending until the unpause that follows: so it
 * sees the signal as soon as it runs again.  inst_stop() kills it after
 * the grace period, as any other.
 */
static void
ct_stop_paused(struct ct *x)
{
	struct inst *in = x->in;

	if ((x->stopc = engine_kill(x->node->e, x->id, x->stopsig,
	    on_signalled, x)) == NULL)
		log_warn("service=%s: unable to stop paused %s", in->id,
		    in->what);
}

static void
on_signalled(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;

	(void)body;
	x->stopc = NULL;
	if (x->died)
		return;
	if (status == 404 || status == 409) {	/* gone, or not running */
		ct_died(x, -1);
		return;
	}
	if (err != NULL) {
		log_warnx("service=%s: unable to send %s to paused %s: %s "
		    "(killed after the grace period)", x->in->id, x->stopsig,
		    x->in->what, err);
		return;
	}
	ct_unpause(x);
}

/* For a stop: unpaused, once no pause is under way (on_paused()). */
static void
ct_unpause(struct ct *x)
{
	if (x->pausec != NULL || !x->paused || x->died)
		return;
	if ((x->pausec = engine_unpause(x->node->e, x->id, on_unpaused,
	    x)) == NULL)
		log_warn("service=%s: unable to unpause %s", x->in->id,
		    x->in->what);
}

static void
ct_row(const struct inst *in, struct store_instance *r)
{
	const struct ct *x = in->priv;

	if (x != NULL)
		r->pid = x->pid;
}

/*
 * What is left of the container goes: removed (force: killed if it still
 * runs), then backend_released().  Without an ID, nothing was created.
 */
static int
ct_release(struct inst *in)
{
	struct ct *x = in->priv;

	if (x == NULL)
		return 0;
	in->priv = NULL;
	x->in = NULL;
	engine_cancel(x->op);
	engine_cancel(x->stopc);
	engine_cancel(x->killc);
	engine_cancel(x->logs);
	engine_cancel(x->hc);
	engine_cancel(x->pausec);
	x->op = x->stopc = x->killc = x->logs = x->hc = x->pausec = NULL;
	loop_timer_cancel(in->sc->loop, &x->timer);
	if (x->id[0] == '\0' || in->sc->stopping == 2) {
		ct_free(x);
		return 0;
	}
	ct_cg_release(x);
	x->owner = in;
	if ((x->rmc = engine_remove(x->node->e, x->id, on_removed, x)) ==
	    NULL) {
		log_warn("service=%s: unable to remove container %.12s",
		    in->id, x->id);
		ct_free(x);
		return 0;
	}
	return 1;
}

static void
on_removed(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	struct inst *in = x->owner;

	(void)body;
	if (err != NULL && status != 404)
		log_warnx("service=%s: unable to remove container %.12s: %s "
		    "(removed when hk-scale next lists node %s)", in->id,
		    x->id, err, x->node->name);
	else
		log_debug("service=%s: removed container %.12s", in->id,
		    x->id);
	x->rmc = NULL;
	ct_free(x);
	backend_released(in);
}

static void
ct_init(struct scale *sc)
{
	ct_nodes_init(sc);
}

static void
ct_shutdown(struct scale *sc)
{
	(void)sc;
	ct_nodes_shutdown();
}
