/*
 * container_node.c - the nodes of the container backend: the default node
 * (this host: [server] container_engine, its services at 127.0.0.1) and
 * each [nodes.NAME] a service is placed on (its container_engine, its
 * address), each with one engine (engine.h), opened at its first use.
 *
 * Each node keeps one events stream, filtered on the installation's
 * label (and the node's, hk.node, here): a container's exit is its "die"
 * event, never a poll.  Every time the stream comes up (at first, and
 * after the engine was away), the containers of the installation on that
 * node are listed once, with
 * the stream already up, so that nothing falls between the two:
 *
 *	- a container an instance of this run knows, which no longer runs
 *	  (paused is running, frozen), has exited while nobody listened;
 *	- one an adoption waits for (an earlier run's row: its app,
 *	  service and revision), running or paused, is adopted;
 *	- one being created (its hk.instance label is a start's of ours
 *	  whose create has not answered yet) is left to that start;
 *	- every other one is removed: an earlier run's that no row claims
 *	  (a start it made before it was killed), or one left stopped.
 *
 * A container of the installation created or started later, which no
 * instance claims, is removed then (a create or a start that a killed
 * hk-scale sent, and the engine carried out after the list).
 *
 * The list of nodes is this file's own, as the container backend's state:
 * emptied by its shutdown (ct_nodes_shutdown()).
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "log.h"

static struct ct_node *node_new(struct scale *, const char *, char *,
		    size_t);
static void	node_free(struct ct_node *);
static void	node_event(const struct engine_event *, void *);
static void	node_list(struct ct_node *);
static void	node_retry(struct loop *, void *);
static void	node_listed(void *, int, json_t *, const char *);
static int	node_claims(struct ct_node *, const char *, json_t *,
		    const char *);
static void	node_sweep(struct ct_node *, const char *, json_t *);
static void	swept(void *, int, json_t *, const char *);
static const char *label(json_t *, const char *);
static int	 replica_of(json_t *);
static int	alive_state(const char *);

static TAILQ_HEAD(, ct_node) nodes = TAILQ_HEAD_INITIALIZER(nodes);

/*
 * The node of that name: a [nodes.NAME], or this host; opened now if it
 * is not yet.  NULL with a reason.
 */
struct ct_node *
ct_node_get(struct scale *sc, const char *name, char *err, size_t errlen)
{
	struct ct_node *n;

	TAILQ_FOREACH(n, &nodes, entry)
		if (strcmp(n->name, name) == 0)
			return n;
	return node_new(sc, name, err, errlen);
}

static struct ct_node *
node_new(struct scale *sc, const char *name, char *err, size_t errlen)
{
	const struct config_node *cn = config_node_find(&sc->cfg, name);
	const char *url, *net, *ca, *cert, *key, *addr;
	struct engine_conf conf;
	struct ct_node *n;
	char label_inst[SCALE_INSTALL_MAX + 32], why[ENGINE_ERR_LEN];
	const char *labels[2] = { label_inst, NULL };

	if (cn == NULL && strcmp(name, sc->node) != 0) {
		snprintf(err, errlen, "node \"%s\" is not in the operator "
		    "configuration", name);
		return NULL;
	}
	url = cn != NULL ? cn->container_engine : sc->cfg.container_engine;
	net = cn != NULL ? cn->container_network : sc->cfg.container_network;
	ca = cn != NULL ? cn->container_tls_ca : sc->cfg.container_tls_ca;
	cert = cn != NULL ? cn->container_tls_cert :
	    sc->cfg.container_tls_cert;
	key = cn != NULL ? cn->container_tls_key : sc->cfg.container_tls_key;
	addr = cn != NULL ? cn->address : "127.0.0.1";
	if (*url == '\0') {
		snprintf(err, errlen, cn != NULL ? "node \"%s\" has no "
		    "container_engine" : "server.container_engine is unset "
		    "(node \"%s\", this host)", name);
		return NULL;
	}
	if (strncmp(url, "tcp://", 6) == 0 && *ca == '\0') {
		snprintf(err, errlen, "node \"%s\": %s without TLS files "
		    "(container_tls_ca, container_tls_cert, container_tls_key)",
		    name, url);
		return NULL;
	}
	if (installation_id(sc) == -1) {
		snprintf(err, errlen, "unable to read or record the "
		    "installation's ID: %s", store_error(sc->store));
		return NULL;
	}
	if ((n = calloc(1, sizeof(*n))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n->sc = sc;
	strlcpy(n->name, name, sizeof(n->name));
	strlcpy(n->address, addr, sizeof(n->address));
	n->local = strncmp(url, "unix://", 7) == 0;
	n->net = strcmp(net, "host") == 0 ? CT_NET_HOST :
	    strcmp(net, "slirp4netns") == 0 ? CT_NET_SLIRP : CT_NET_BRIDGE;
	TAILQ_INIT(&n->cts);
	loop_timer_init(&n->retry, node_retry, n);
	memset(&conf, 0, sizeof(conf));
	conf.url = url;
	conf.tls_ca = *ca != '\0' ? ca : NULL;
	conf.tls_cert = *cert != '\0' ? cert : NULL;
	conf.tls_key = *key != '\0' ? key : NULL;
	snprintf(label_inst, sizeof(label_inst), "hk.installation=%s",
	    sc->installation);
	if ((n->e = engine_open(sc->loop, &conf, why, sizeof(why))) ==
	    NULL || (n->ev = engine_events_open(n->e, labels, node_event,
	    n)) == NULL) {
		if (n->e != NULL)
			snprintf(why, sizeof(why), "events: %s",
			    strerror(errno));
		snprintf(err, errlen, "node \"%s\": %s", name, why);
		engine_close(n->e);
		free(n);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&nodes, n, entry);
	log_info("node=%s: engine %s, containers at %s (%s)", n->name, url,
	    n->address, *net != '\0' ? net : "bridge");
	return n;
}

/* Everything under way is dropped, without callbacks. */
static void
node_free(struct ct_node *n)
{
	struct ct *x;

	loop_timer_cancel(n->sc->loop, &n->retry);
	engine_close(n->e);
	while ((x = TAILQ_FIRST(&n->cts)) != NULL) {
		if (x->in != NULL)
			x->in->priv = NULL;
		ct_free(x);
	}
	TAILQ_REMOVE(&nodes, n, entry);
	free(n);
}

/*
 * Start-up, once the rows are handed out: the node of every container
 * service is opened, so that what an earlier run left there is found at
 * once, whether any row names it or not.
 */
void
ct_nodes_init(struct scale *sc)
{
	const struct backend *be = &backend_container;
	struct service *s;
	char err[SCALE_REASON_MAX];

	TAILQ_FOREACH(s, &sc->services, entry)
		if (backend_of(s) == be &&
		    ct_node_get(sc, service_node(s, be), err,
		    sizeof(err)) == NULL)
			log_warnx("service=%s: %s", s->def.id, err);
}

void
ct_nodes_shutdown(void)
{
	while (!TAILQ_EMPTY(&nodes))
		node_free(TAILQ_FIRST(&nodes));
}

/* The node's address and port, as the gateway reads an endpoint. */
void
ct_endpoint(const struct ct_node *n, int port, char *buf, size_t len)
{
	if (strchr(n->address, ':') != NULL)
		snprintf(buf, len, "[%s]:%d", n->address, port);
	else
		snprintf(buf, len, "%s:%d", n->address, port);
}

struct ct *
ct_find(const struct ct_node *n, const char *id)
{
	struct ct *x;

	TAILQ_FOREACH(x, &n->cts, entry)
		if (x->id[0] != '\0' && strcmp(x->id, id) == 0)
			return x;
	return NULL;
}

/* A list's State of a container that runs: paused too (suspended). */
static int
alive_state(const char *state)
{
	return state != NULL && (strcmp(state, "running") == 0 ||
	    strcmp(state, "paused") == 0);
}

static const char *
label(json_t *labels, const char *key)
{
	const char *v = json_string_value(json_object_get(labels, key));

	return v != NULL ? v : "";
}

/*
 * The stream is filtered on the installation's label only: podman 4.3
 * takes several label filters of an events stream as "any of them", and
 * an engine may serve several nodes (two names for one host, or podman
 * services sharing one storage): a container of another node is not ours
 * to judge here.
 */
static void
node_event(const struct engine_event *ev, void *arg)
{
	struct ct_node *n = arg;
	struct ct *x;

	if (ev->kind != ENGINE_EV_UP && ev->kind != ENGINE_EV_DOWN &&
	    strcmp(label((json_t *)ev->attrs, "hk.node"), n->name) != 0)
		return;
	switch (ev->kind) {
	case ENGINE_EV_UP:
		log_info("node=%s: engine events up", n->name);
		n->up = 1;
		n->down_told = 0;
		node_list(n);
		break;
	case ENGINE_EV_DOWN:
		if (!n->down_told)
			log_warnx("node=%s: engine events down: %s: exits "
			    "there are seen once they are back", n->name,
			    ev->reason);
		n->down_told = 1;
		n->up = n->listed = 0;
		engine_cancel(n->list);
		n->list = NULL;
		loop_timer_cancel(n->sc->loop, &n->retry);
		break;
	case ENGINE_EV_DIE:
		if ((x = ct_find(n, ev->id)) != NULL)
			ct_died(x, ev->exit_code);
		break;
	case ENGINE_EV_CREATE:
	case ENGINE_EV_START:
		/*
		 * Not ours, or no longer: an event comes late under load,
		 * after the container it tells of was stopped and removed
		 * here.  Only a list says what is there now, and sweeps it.
		 */
		if (ct_find(n, ev->id) == NULL && n->listed &&
		    !node_claims(n, ev->id, (json_t *)ev->attrs, "")) {
			if (n->list != NULL)
				n->relist = 1;
			else
				node_list(n);
		}
		break;
	case ENGINE_EV_HEALTH:
		break;
	}
}

/* Lists the node's containers again (an adoption came after the list). */
void
ct_node_relist(struct ct_node *n)
{
	if (n->listed)
		node_list(n);
}

static void
node_list(struct ct_node *n)
{
	char lab[SCALE_INSTALL_MAX + 32], node[STORE_NAME_MAX + 16];
	const char *labels[3] = { lab, node, NULL };

	if (n->list != NULL || !n->up)
		return;
	snprintf(lab, sizeof(lab), "hk.installation=%s", n->sc->installation);
	snprintf(node, sizeof(node), "hk.node=%s", n->name);
	if ((n->list = engine_list(n->e, labels, node_listed, n)) == NULL) {
		log_warn("node=%s: unable to list containers", n->name);
		loop_timer_at(n->sc->loop, &n->retry,
		    loop_now_ms(n->sc->loop) + CT_LIST_RETRY_MS);
	}
}

static void
node_retry(struct loop *l, void *arg)
{
	(void)l;
	node_list(arg);
}

/* Its hk.replica label; 0 without one (made before there were replicas). */
static int
replica_of(json_t *labels)
{
	const char *v = label(labels, "hk.replica");

	return v[0] == '\0' ? 0 : (int)strtonum(v, 0, SPEC_REPLICAS_MAX - 1,
	    NULL);
}

/*
 * A container of the list that no instance knows: 1 if it is a create of
 * ours under way, or an adoption's (which it then claims).
 */
static int
node_claims(struct ct_node *n, const char *id, json_t *labels,
    const char *state)
{
	const char *nonce = label(labels, "hk.instance");
	char svc[SCALE_ID_MAX + 8], rev[24];
	struct ct *x;

	snprintf(svc, sizeof(svc), "%s/%s", label(labels, "hk.app"),
	    label(labels, "hk.service"));
	TAILQ_FOREACH(x, &n->cts, entry) {
		if (x->id[0] == '\0' && x->phase == CT_CREATING &&
		    strcmp(x->nonce, nonce) == 0)
			return 1;
		if (x->phase != CT_ADOPTING || x->matched || x->in == NULL ||
		    !alive_state(state))
			continue;
		snprintf(rev, sizeof(rev), "%lld", (long long)x->in->revision);
		if (strcmp(x->in->id, svc) != 0 ||
		    strcmp(rev, label(labels, "hk.revision")) != 0 ||
		    replica_of(labels) != x->in->replica)
			continue;
		strlcpy(x->id, id, sizeof(x->id));
		x->matched = 1;
		return 1;
	}
	return 0;
}

/* A container of the installation that nothing here claims: removed. */
static void
node_sweep(struct ct_node *n, const char *id, json_t *labels)
{
	log_info("node=%s: removing container %.12s (%s/%s revision %s), "
	    "which no instance claims", n->name, id, label(labels, "hk.app"),
	    label(labels, "hk.service"), label(labels, "hk.revision"));
	if (engine_remove(n->e, id, swept, n) == NULL)
		log_warn("node=%s: unable to remove container %.12s", n->name,
		    id);
}

static void
swept(void *arg, int status, json_t *body, const char *err)
{
	struct ct_node *n = arg;

	(void)body;
	if (err != NULL && status != 404)
		log_warnx("node=%s: unable to remove a container: %s",
		    n->name, err);
}

static void
node_listed(void *arg, int status, json_t *body, const char *err)
{
	struct ct_node *n = arg;
	struct ct *x, *next;
	const char *id, *state;
	json_t *c, *labels;
	size_t i;

	(void)status;
	n->list = NULL;
	if (err != NULL || !json_is_array(body)) {
		log_warnx("node=%s: unable to list containers: %s", n->name,
		    err != NULL ? err : "not an array");
		loop_timer_at(n->sc->loop, &n->retry,
		    loop_now_ms(n->sc->loop) + CT_LIST_RETRY_MS);
		return;
	}
	json_array_foreach(body, i, c) {
		if ((id = engine_id(c)) == NULL || strcmp(label(
		    json_object_get(c, "Labels"), "hk.node"), n->name) != 0)
			continue;
		state = json_string_value(json_object_get(c, "State"));
		labels = json_object_get(c, "Labels");
		if ((x = ct_find(n, id)) != NULL) {
			if (x->in != NULL && x->phase == CT_UP &&
			    !alive_state(state))
				ct_died(x, -1);
			continue;
		}
		if (!node_claims(n, id, labels, state != NULL ? state : ""))
			node_sweep(n, id, labels);
	}
	n->listed = 1;
	if (n->relist) {
		n->relist = 0;
		node_list(n);	/* an unknown container was told of meanwhile */
	}
	/* What we knew running and the list has not: gone meanwhile. */
	for (x = TAILQ_FIRST(&n->cts); x != NULL; x = next) {
		next = TAILQ_NEXT(x, entry);
		if (x->in == NULL || x->phase != CT_UP || x->id[0] == '\0')
			continue;
		for (i = 0; i < json_array_size(body); i++)
			if ((id = engine_id(json_array_get(body, i))) !=
			    NULL && strcmp(id, x->id) == 0)
				break;
		if (i == json_array_size(body))
			ct_died(x, -1);
	}
	for (x = TAILQ_FIRST(&n->cts); x != NULL; x = next) {
		next = TAILQ_NEXT(x, entry);
		if (x->in == NULL || x->phase != CT_ADOPTING || x->op != NULL)
			continue;
		if (x->matched)
			ct_adopt_found(x);
		else
			ct_adopt_missing(x);
	}
}
