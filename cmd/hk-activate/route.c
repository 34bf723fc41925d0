/*
 * route.c - the routing table, in memory: services in a red-black tree by
 * id ("app/service"), and a sorted array of hosts searched by bsearch.
 * Loaded from the store at start and on reload; a reload never drops a
 * connection: services are kept (with their run-time state) and updated
 * in place, only the host array is rebuilt.  Only public serverless
 * services are routed.  What a reload or a stop means for the requests
 * that wait is the caller's (ctl.c): route.c returns the services, and
 * reaches into neither the park nor the connections.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "activate.h"
#include "leader.h"
#include "log.h"

static int	svc_cmp(struct service *, struct service *);
static int	route_cmp(const void *, const void *);
static struct service *svc_get(const char *);
static int	svc_update(struct service *, const struct svc *);
static int	routes_build(void);
static struct service *route_path(const char *, size_t, size_t *);
static int	route_store(char *, size_t);

RB_GENERATE(svc_tree, service, rb, svc_cmp)

static int
svc_cmp(struct service *a, struct service *b)
{
	return strcmp(a->id, b->id);
}

static int
route_cmp(const void *a, const void *b)
{
	return strcmp(((const struct route *)a)->host,
	    ((const struct route *)b)->host);
}

struct service *
route_service(const char *id)
{
	struct service key;

	if (strlcpy(key.id, id, sizeof(key.id)) >= sizeof(key.id))
		return NULL;
	return RB_FIND(svc_tree, &gw->services, &key);
}

static struct service *
svc_get(const char *id)
{
	struct service *s;

	if ((s = route_service(id)) != NULL)
		return s;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	strlcpy(s->id, id, sizeof(s->id));
	TAILQ_INIT(&s->parked);
	upstream_init(s);
	s->idle_since = gw->start_wall;
	RB_INSERT(svc_tree, &gw->services, s);
	return s;
}

static int
svc_update(struct service *s, const struct svc *v)
{
	char **hosts;
	size_t i;

	if ((hosts = calloc(v->spec.nhosts + 1, sizeof(*hosts))) == NULL)
		return -1;
	for (i = 0; i < v->spec.nhosts; i++)
		if ((hosts[i] = strdup(v->spec.hosts[i])) == NULL) {
			while (i > 0)
				free(hosts[--i]);
			free(hosts);
			return -1;
		}
	for (i = 0; i < s->nhosts; i++)
		free(s->hosts[i]);
	free(s->hosts);
	s->hosts = hosts;
	s->nhosts = v->spec.nhosts;
	s->revision = v->revision;
	s->policy = v->spec.policy;
	s->stopped = v->desired == STORE_DESIRED_STOPPED;
	s->disabled = v->spec.disabled;
	s->routed = 1;
	return 0;
}

static int
routes_build(void)
{
	struct service *s;
	struct route *r;
	size_t n = 0, i, k = 0;

	RB_FOREACH(s, svc_tree, &gw->services)
		if (s->routed)
			n += s->nhosts;
	if ((r = calloc(n + 1, sizeof(*r))) == NULL)
		return -1;
	RB_FOREACH(s, svc_tree, &gw->services)
		for (i = 0; s->routed && i < s->nhosts; i++) {
			r[k].host = s->hosts[i];
			r[k++].svc = s;
		}
	qsort(r, k, sizeof(*r), route_cmp);
	for (i = 0; i < k; i++)
		if (config_gateway_host(&gw->cfg, r[i].host))
			log_warnx("host=%s: claimed by %s, but the gateway's "
			    "own address routes by /fn/ path only", r[i].host,
			    r[i].svc->id);
	for (i = 1; i < k; i++)
		if (strcmp(r[i].host, r[i - 1].host) == 0)
			log_warnx("host=%s: claimed by %s and %s; %s wins",
			    r[i].host, r[i - 1].svc->id, r[i].svc->id,
			    r[i - 1].svc->id);
	free(gw->routes);
	gw->routes = r;
	gw->nroutes = k;
	return 0;
}

/* The store, opened again if a failure closed it. */
static int
route_store(char *err, size_t errlen)
{
	if (gw->store != NULL)
		return 0;
	if ((gw->store = store_open(gw->cfg.state, err, errlen)) == NULL)
		return -1;
	if (leader_fence(gw->store, err, errlen) == -1) {
		store_close(gw->store);
		gw->store = NULL;
		return -1;
	}
	return 0;
}

/*
 * Re-reads the services; on failure the table in use stays as it was.
 * *dropped (NULL at start, when nothing waits) gets the services no
 * longer served, removed or stopped, even when the host array could not
 * be rebuilt after them.
 */
int
route_reload(struct svc_list *dropped, char *err, size_t errlen)
{
	struct service *s;
	struct svc *all;
	size_t n, i;
	char why[SPEC_ERR_LEN] = "";

	if (dropped != NULL)
		STAILQ_INIT(dropped);
	if (route_store(err, errlen) == -1)
		return -1;
	if (spec_load_all(gw->store, &all, &n, why, sizeof(why)) == -1) {
		strlcpy(err, why[0] ? why : store_error(gw->store), errlen);
		store_close(gw->store);	/* opened again next time */
		gw->store = NULL;
		return -1;
	}
	if (why[0] != '\0')
		log_warnx("%s", why);
	RB_FOREACH(s, svc_tree, &gw->services)
		s->routed = 0;
	for (i = 0; i < n; i++) {
		if (!all[i].spec.serverless || !all[i].spec.public_)
			continue;
		if ((s = svc_get(all[i].id)) == NULL ||
		    svc_update(s, &all[i]) == -1) {
			spec_free_all(all, n);
			strlcpy(err, "out of memory", errlen);
			return -1;
		}
	}
	spec_free_all(all, n);
	RB_FOREACH(s, svc_tree, &gw->services)
		if (dropped != NULL && (!s->routed || s->stopped))
			STAILQ_INSERT_TAIL(dropped, s, drop);
	if (routes_build() == -1) {
		strlcpy(err, "out of memory", errlen);
		return -1;
	}
	log_info("routes: %zu hosts", gw->nroutes);
	return 0;
}

/* "/fn/<app>/<service>[/...]": the service and the prefix to strip. */
static struct service *
route_path(const char *url, size_t len, size_t *strip)
{
	char id[SVC_ID_MAX + 1];
	size_t i = 4, slash = 0;
	struct service *s;

	if (len < 4 || memcmp(url, "/fn/", 4) != 0)
		return NULL;
	for (; i < len && url[i] != '?' && url[i] != '#'; i++) {
		if (url[i] == '/') {
			if (slash != 0)
				break;
			slash = i;
		}
	}
	if (slash == 0 || slash == 4 || slash + 1 == i || i - 4 > SVC_ID_MAX)
		return NULL;
	memcpy(id, url + 4, i - 4);
	id[i - 4] = '\0';
	if ((s = route_service(id)) == NULL || !s->routed)
		return NULL;
	*strip = i;
	return s;
}

/*
 * Host first (port and case ignored by the caller), then the path; the
 * gateway's own address routes by path only, whatever a service of an
 * older spec claims (hk-jobs sends every run with that Host).
 */
struct service *
route_lookup(const char *host, const char *url, size_t len, size_t *strip)
{
	struct route key, *r;
	const char *auth;
	size_t alen, path;

	*strip = 0;
	key.host = host;
	if (host[0] != '\0' && !config_gateway_host(&gw->cfg, host) &&
	    (r = bsearch(&key, gw->routes, gw->nroutes,
	    sizeof(*r), route_cmp)) != NULL)
		return r->svc;
	/* an absolute target names its host: it has no /fn/ path */
	if (http_target_absolute(url, len, &auth, &alen, &path))
		return NULL;
	return route_path(url, len, strip);
}

/*
 * "stop"/"start" from hk: the desired state as the store has it now, of
 * the service given in *svc.  -1 with a reason; -2 with one when the
 * store failed: a reload made later takes the desired state.
 */
int
route_set_desired(const char *id, struct service **svc, char *err,
    size_t errlen)
{
	struct store_service row;
	struct service *s;
	char app[STORE_NAME_MAX + 1];
	const char *slash;
	int r;

	if ((slash = strchr(id, '/')) == NULL ||
	    (size_t)(slash - id) > STORE_NAME_MAX) {
		strlcpy(err, "service must be app/service", errlen);
		return -1;
	}
	memcpy(app, id, (size_t)(slash - id));
	app[slash - id] = '\0';
	if (route_store(err, errlen) == -1)
		return -1;
	if ((r = store_service_get(gw->store, app, slash + 1, &row)) == -1) {
		strlcpy(err, store_error(gw->store), errlen);
		store_close(gw->store);
		gw->store = NULL;
		return -2;
	}
	if (r == 1 || (s = route_service(id)) == NULL) {
		if (r == 0)
			store_service_clear(&row);
		strlcpy(err, "unknown service", errlen);
		return -1;
	}
	s->stopped = row.desired == STORE_DESIRED_STOPPED;
	store_service_clear(&row);
	*svc = s;
	return 0;
}

void
route_free(void)
{
	struct service *s, *next;
	size_t i;

	RB_FOREACH_SAFE(s, svc_tree, &gw->services, next) {
		RB_REMOVE(svc_tree, &gw->services, s);
		upstream_pool_drop(s);
		loop_timer_cancel(gw->loop, &s->timer);
		loop_timer_cancel(gw->loop, &s->kick);
		for (i = 0; i < s->nhosts; i++)
			free(s->hosts[i]);
		free(s->hosts);
		free(s);
	}
	free(gw->routes);
	gw->routes = NULL;
	gw->nroutes = 0;
}
