/*
 * k8s_watch.c - a collection the backend follows (k8s.h): the
 * EndpointSlices of a Service, the Pods of a revision.  A list, then a
 * watch from the list's resourceVersion, as a client-go informer does.  A watch that ends is
 * resumed from the last resourceVersion seen (an object's or a
 * BOOKMARK's); one the server no longer has history for (410 Gone, as an
 * ERROR event or as the answer) is listed again; one that failed is
 * tried again after K8S_RETRY_MS.  Never a poll: between those, nothing
 * is asked.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "k8s.h"
#include "log.h"

#define RV_MAX		64

struct k8s_watch {
	struct scale		*sc;
	struct k8s		*k;
	char			 what[K8S_NAME_MAX + 32];	/* logs */
	char			 path[K8S_PATH_MAX];	/* ?labelSelector= */
	char			 rv[RV_MAX];	/* resume from; "" relist */
	struct engine_call	*call;		/* a list or the watch */
	struct engine_split	 split;
	struct loop_timer	 retry;
	json_t			*objs;		/* by name: the objects */
	int			 listed;	/* objs say something */
	k8s_watch_fn		*fn;
	void			*arg;
	int			 busy;		/* inside fn */
	int			 dead;		/* closed while busy */
	int			 relist;	/* a 410 came */
};

static void	w_list(struct k8s_watch *);
static void	w_watch(struct k8s_watch *);
static void	w_fail(struct k8s_watch *, const char *);
static void	w_retry(struct loop *, void *);
static void	on_list(void *, int, json_t *, const char *);
static int	w_feed(struct engine_call *);
static int	w_obj(json_t *, void *);
static void	w_end(struct engine_call *, int, const char *);
static void	w_report(struct k8s_watch *);
static void	w_free(struct k8s_watch *);

struct k8s_watch *
k8s_watch_open(struct scale *sc, struct k8s *k, const char *what,
    const char *path, k8s_watch_fn *fn, void *arg)
{
	struct k8s_watch *w;

	if (strlen(path) + 64 >= sizeof(w->path)) {	/* + the watch's */
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (w->objs = json_object()) == NULL) {
		free(w);
		return NULL;
	}
	w->sc = sc;
	w->k = k;
	strlcpy(w->what, what, sizeof(w->what));
	strlcpy(w->path, path, sizeof(w->path));
	w->fn = fn;
	w->arg = arg;
	loop_timer_init(&w->retry, w_retry, w);
	w_list(w);
	return w;
}

/* Ends it: fn is not called again.  fn itself may close it. */
void
k8s_watch_close(struct k8s_watch *w)
{
	if (w == NULL)
		return;
	engine_cancel(w->call);
	w->call = NULL;
	loop_timer_cancel(w->sc->loop, &w->retry);
	if (w->busy)
		w->dead = 1;
	else
		w_free(w);
}

/* Its objects by name, or NULL before its first list was answered. */
json_t *
k8s_watch_objects(const struct k8s_watch *w)
{
	return w != NULL && w->listed ? w->objs : NULL;
}

static void
w_free(struct k8s_watch *w)
{
	json_decref(w->objs);
	free(w);
}

static void
w_list(struct k8s_watch *w)
{
	if (w->relist)	/* what it knew may be stale: every object again */
		log_info("kubernetes: %s: resourceVersion %s is gone (410): "
		    "listed again", w->what, w->rv);
	w->relist = 0;
	if ((w->call = k8s_call(w->k, "GET", w->path, NULL, on_list, w)) ==
	    NULL)
		w_fail(w, strerror(errno));
}

static void
w_watch(struct k8s_watch *w)
{
	char path[K8S_PATH_MAX];
	struct engine_call *c;
	int n;

	n = snprintf(path, sizeof(path), "%s&watch=1&"
	    "allowWatchBookmarks=true&resourceVersion=%s", w->path, w->rv);
	if (n < 0 || (size_t)n >= sizeof(path) ||
	    (c = engine_call_new(w->k->api, "GET", path, NULL)) == NULL) {
		w_fail(w, "unable to make the watch's request");
		return;
	}
	memset(&w->split, 0, sizeof(w->split));
	c->ctx = w;
	c->max = 2 * ENGINE_OBJ_MAX;
	c->feedfn = w_feed;
	c->endfn = w_end;
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, 0L);
	if (engine_call_start(c) == -1) {
		w_fail(w, strerror(errno));
		return;
	}
	w->call = c;
}

/* Logged; the same again (a list or a watch) after K8S_RETRY_MS. */
static void
w_fail(struct k8s_watch *w, const char *why)
{
	w->call = NULL;
	log_warnx("kubernetes: %s: %s", w->what, why);
	loop_timer_at(w->sc->loop, &w->retry,
	    loop_now_ms(w->sc->loop) + K8S_RETRY_MS);
}

static void
w_retry(struct loop *l, void *arg)
{
	struct k8s_watch *w = arg;

	(void)l;
	if (w->rv[0] == '\0' || w->relist)
		w_list(w);
	else
		w_watch(w);
}

static void
on_list(void *arg, int status, json_t *body, const char *err)
{
	struct k8s_watch *w = arg;
	const char *rv, *name;
	json_t *item;
	size_t i;

	(void)status;
	w->call = NULL;
	rv = json_string_value(json_object_get(json_object_get(body,
	    "metadata"), "resourceVersion"));
	if (err == NULL && (rv == NULL || strlen(rv) >= sizeof(w->rv)))
		err = "a list without a resourceVersion";
	if (err != NULL) {
		w->rv[0] = '\0';
		w_fail(w, err);
		return;
	}
	strlcpy(w->rv, rv, sizeof(w->rv));
	json_object_clear(w->objs);
	json_array_foreach(json_object_get(body, "items"), i, item)
		if ((name = json_string_value(json_object_get(json_object_get(
		    item, "metadata"), "name"))) != NULL)
			json_object_set(w->objs, name, item);
	w->listed = 1;
	w_report(w);
	if (w->dead)
		w_free(w);
	else
		w_watch(w);
}

static int
w_feed(struct engine_call *c)
{
	struct k8s_watch *w = c->ctx;
	ssize_t n;

	n = engine_objects(&w->split, c->buf, c->len, w_obj, w, c->err,
	    sizeof(c->err));
	if (w->dead) {
		w_free(w);
		c->len = 0;
		return 0;
	}
	if (n == -1)
		return -1;
	memmove(c->buf, c->buf + n, c->len - (size_t)n);
	c->len -= (size_t)n;
	return 0;
}

/* One watch event: {"type": ..., "object": ...}. */
static int
w_obj(json_t *ev, void *arg)
{
	struct k8s_watch *w = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	json_t *meta = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *rv = json_string_value(json_object_get(meta,
	    "resourceVersion"));

	if (type == NULL)
		return 0;
	if (strcmp(type, "ERROR") == 0) {
		if (json_integer_value(json_object_get(obj, "code")) == 410)
			w->relist = 1;	/* the stream ends: relisted then */
		else
			log_warnx("kubernetes: %s: %.200s",
			    w->what, json_string_value(json_object_get(obj,
			    "message")) ? json_string_value(json_object_get(
			    obj, "message")) : "an ERROR event");
		return 0;
	}
	if (rv != NULL && strlen(rv) < sizeof(w->rv))
		strlcpy(w->rv, rv, sizeof(w->rv));
	if (strcmp(type, "BOOKMARK") == 0 || name == NULL)
		return 0;
	if (strcmp(type, "DELETED") == 0)
		json_object_del(w->objs, name);
	else
		json_object_set(w->objs, name, obj);
	w_report(w);
	return w->dead ? -1 : 0;
}

static void
w_end(struct engine_call *c, int status, const char *err)
{
	struct k8s_watch *w = c->ctx;

	w->call = NULL;
	if (status == 410)
		w->relist = 1;
	if (w->relist)
		w_list(w);
	else if (err != NULL)
		w_fail(w, err);
	else
		w_watch(w);	/* the server ended it: resumed */
}

/* fn: the objects changed. */
static void
w_report(struct k8s_watch *w)
{
	w->busy = 1;
	w->fn(w->arg);
	w->busy = 0;
}
