/*
 * logs_node.c - "hk logs" of a container service placed on another node
 * (node_name, a [nodes.NAME] of hakopod.toml with a container_engine):
 * its containers' output is read from that node's engine, wherever hk
 * runs, whether hk-scale runs on this host or another control host.
 *
 * The service's containers are found by their labels (hk.installation,
 * hk.app, hk.service), stopped ones too; each one's output is
 * GET /containers/ID/logs?timestamps=1 (engine.h, LOGS), every line
 * written as hk-scale writes the service log (svclog.h): the engine's
 * time, the container's revision and instance, the line with its control
 * characters made '?'.  The engine keeps a container's output only as
 * long as the container: the lines of earlier instances (removed when
 * they stopped) come from this host's service log, if hk-scale followed
 * them here, all but those of the containers the engine still has, which
 * it gives itself.  Then every line is sorted by time, and -n and
 * --since pick among them as for this host's log.
 *
 * -f follows each container through the engine (its lines already shown
 * skipped: a container's output only grows), and lists the containers
 * again every LOGS_NODE_LIST_MS to follow the new ones from their start,
 * so a wake after a sleep shows too, and again those whose stream broke
 * (the engine was away) and that are still there.  An engine that does not answer is
 * an error (EX_UNAVAILABLE) naming the node and its engine; while
 * following, a failed listing is said once and tried again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "engine.h"
#include "hk.h"
#include "log.h"
#include "logs.h"
#include "loop.h"

#define INSTALL_KEY		"hk-scale.installation"	/* hk-scale's */
#define LOGS_NODE_LIST_MS	1000
#define LOGS_NODE_MAX		256	/* containers of one service */
#define LABEL_MAX		(CONFIG_NAME_MAX + 32)
#define INST_PREFIX		"container:"
#define INST_LEN		(sizeof(INST_PREFIX) - 1 + 12)

/* One container of the service on the node. */
struct nct {
	char		 id[ENGINE_ID_MAX];
	char		 inst[INST_LEN + 1];	/* "container:" and 12 digits */
	long long	 rev;
	size_t		 seen;		/* its lines shown or passed over */
	size_t		 pos;		/* following: lines of this stream */
	int		 broken;	/* its stream failed: follow it again */
	int64_t		 last_ms;	/* time of its last line */
	struct engine_call *c;
	struct nlogs	*nl;
};

struct nlogs {
	struct loop	*loop;
	struct engine	*e;
	const struct config_node *node;
	const char	*svc;		/* "app/service" */
	char		 labels[3][LABEL_MAX];
	const char	*labelv[4];
	struct nct	 ct[LOGS_NODE_MAX];
	size_t		 nct;
	struct tail	*t;
	int		 following;
	int		 pending;	/* calls under way */
	int		 failed;
	char		 err[ENGINE_ERR_LEN];
	json_t		*list;		/* the last listing's answer */
	struct engine_call *lc;
	struct loop_timer timer;
	int		 warned;
};

static int	installation(struct hk *, char *, size_t, int *);
static int	list_wait(struct nlogs *);
static void	on_list(void *, int, json_t *, const char *);
static int	add_containers(struct nlogs *, const json_t *);
static int	read_all(struct nlogs *);
static int	on_line(int, const char *, size_t, void *);
static void	on_read(void *, int, json_t *, const char *);
static int	skip_current(const char *, void *);
static int	by_time(const void *, const void *);
static void	follow_ct(struct nlogs *, struct nct *);
static void	on_follow_end(void *, int, json_t *, const char *);
static void	on_tick(struct loop *, void *);
static void	on_relist(void *, int, json_t *, const char *);

/* hk-scale's installation ID: 1, 0 if none yet, -1 with *code. */
static int
installation(struct hk *hk, char *buf, size_t len, int *code)
{
	char *val = NULL;
	int r;

	if ((r = store_setting_get(hk->store, INSTALL_KEY, &val)) == -1) {
		*code = hk_store_failed(hk, "read the installation's ID");
		return -1;
	}
	if (r == 1 || val == NULL)
		return 0;
	r = strlcpy(buf, val, len) < len;
	free(val);
	return r;
}

/* Lists the containers and waits: 0, or -1 (nl->err says why). */
static int
list_wait(struct nlogs *nl)
{
	nl->failed = 0;
	if ((nl->lc = engine_list(nl->e, nl->labelv, on_list, nl)) == NULL) {
		strlcpy(nl->err, strerror(errno), sizeof(nl->err));
		return -1;
	}
	if (loop_run(nl->loop) == -1) {
		strlcpy(nl->err, strerror(errno), sizeof(nl->err));
		return -1;
	}
	return nl->failed ? -1 : 0;
}

static void
on_list(void *arg, int status, json_t *body, const char *err)
{
	struct nlogs *nl = arg;

	(void)status;
	nl->lc = NULL;
	json_decref(nl->list);
	nl->list = NULL;
	if (err != NULL) {
		nl->failed = 1;
		strlcpy(nl->err, err, sizeof(nl->err));
	} else if (!json_is_array(body)) {
		nl->failed = 1;
		strlcpy(nl->err, "its list of containers is not an array",
		    sizeof(nl->err));
	} else
		nl->list = json_incref(body);
	loop_stop(nl->loop);
}

/* The listed containers not known yet: how many were added. */
static int
add_containers(struct nlogs *nl, const json_t *list)
{
	const json_t *o, *labels;
	const char *id, *rev;
	struct nct *x;
	size_t i, k;
	int added = 0;

	json_array_foreach(list, i, o) {
		if ((id = engine_id(o)) == NULL)
			continue;
		for (k = 0; k < nl->nct; k++)
			if (strcmp(nl->ct[k].id, id) == 0)
				break;
		if (k < nl->nct)
			continue;
		if (nl->nct == LOGS_NODE_MAX) {
			log_warnx("%s: more than %d containers on node %s: "
			    "the others are left out", nl->svc,
			    LOGS_NODE_MAX, nl->node->name);
			break;
		}
		x = &nl->ct[nl->nct++];
		memset(x, 0, sizeof(*x));
		x->nl = nl;
		strlcpy(x->id, id, sizeof(x->id));
		snprintf(x->inst, sizeof(x->inst), INST_PREFIX "%.12s", id);
		labels = json_object_get(o, "Labels");
		rev = json_string_value(json_object_get(labels, "hk.revision"));
		x->rev = rev != NULL ? strtonum(rev, 1, INT64_MAX, NULL) : 0;
		added++;
	}
	return added;
}

/* The first reading: every container's output so far, into t's keep. */
static int
read_all(struct nlogs *nl)
{
	size_t i;

	nl->failed = 0;
	for (i = 0; i < nl->nct; i++) {
		if ((nl->ct[i].c = engine_logs_read(nl->e, nl->ct[i].id, 0,
		    ENGINE_LOGS_TIMES, on_line, on_read, &nl->ct[i])) == NULL) {
			strlcpy(nl->err, strerror(errno), sizeof(nl->err));
			nl->failed = 1;
			break;
		}
		nl->pending++;
	}
	if (nl->pending > 0 && loop_run(nl->loop) == -1) {
		strlcpy(nl->err, strerror(errno), sizeof(nl->err));
		return -1;
	}
	return nl->failed ? -1 : 0;
}

static void
on_read(void *arg, int status, json_t *body, const char *err)
{
	struct nct *x = arg;
	struct nlogs *nl = x->nl;

	(void)body;
	x->c = NULL;
	/* 404: removed since the listing, its lines are in this host's log */
	if (err != NULL && status != 404) {
		nl->failed = 1;
		snprintf(nl->err, sizeof(nl->err), "the output of %s: %s",
		    x->inst, err);
	}
	if (--nl->pending == 0)
		loop_stop(nl->loop);
}

/*
 * A line of a container: written as a line of the service log, then kept
 * (the first reading) or shown (following, once its lines already shown
 * are skipped).  A piece of a long line has no time of its own: the
 * line's.
 */
static int
on_line(int stream, const char *line, size_t len, void *arg)
{
	struct nct *x = arg;
	char out[SVCLOG_TIME_LEN + INST_LEN + ENGINE_LINE_MAX + 64];
	char when[SVCLOG_TIME_LEN + 1];
	size_t i, n, skip;
	int64_t ms;

	(void)stream;
	if (x->nl->following && x->pos++ < x->seen)
		return 0;	/* shown before */
	if ((skip = engine_log_time(line, len, &ms)) > 0)
		x->last_ms = ms;
	line += skip;
	len -= skip;
	svclog_time(when, sizeof(when), x->last_ms);
	n = (size_t)snprintf(out, sizeof(out), "%s rev=%lld inst=%s ", when,
	    x->rev, x->inst);
	for (i = 0; i < len && n < sizeof(out) - 2; i++)
		out[n++] = ((unsigned char)line[i] < 0x20 ||
		    line[i] == 0x7f) ? '?' : line[i];
	out[n++] = '\n';
	out[n] = '\0';
	x->seen++;
	logs_take(x->nl->t, out);
	return 0;
}

/* This host's lines of a container the engine still has: it gives them. */
static int
skip_current(const char *line, void *arg)
{
	const struct nlogs *nl = arg;
	const char *p;
	size_t i;

	if ((p = strstr(line, " inst=" INST_PREFIX)) == NULL)
		return 0;
	p += sizeof(" inst=") - 1;
	for (i = 0; i < nl->nct; i++)
		if (strncmp(p, nl->ct[i].inst, INST_LEN) == 0 &&
		    p[INST_LEN] == ' ')
			return 1;
	return 0;
}

/* By time, then as they came (the time and a tie-break index). */
struct sorted {
	const char	*line;
	size_t		 i;
};

static int
by_time(const void *a, const void *b)
{
	const struct sorted *x = a, *y = b;
	int r = strncmp(x->line, y->line, SVCLOG_TIME_LEN);

	return r != 0 ? r : x->i < y->i ? -1 : x->i > y->i;
}

static void
follow_ct(struct nlogs *nl, struct nct *x)
{
	x->pos = 0;
	x->broken = 0;
	if ((x->c = engine_logs_read(nl->e, x->id, 0, ENGINE_LOGS_FOLLOW |
	    ENGINE_LOGS_TIMES, on_line, on_follow_end, x)) == NULL)
		log_warn("%s: unable to follow %s", nl->svc, x->inst);
}

static void
on_follow_end(void *arg, int status, json_t *body, const char *err)
{
	struct nct *x = arg;

	(void)status;
	(void)body;
	x->c = NULL;
	if (err != NULL && status != 404) {
		log_warnx("%s: %s on node %s: %s", x->nl->svc, x->inst,
		    x->nl->node->name, err);
		x->broken = 1;
	}
	fflush(stdout);
}

/* Following: the containers listed again, the new ones followed. */
static void
on_tick(struct loop *l, void *arg)
{
	struct nlogs *nl = arg;

	(void)l;
	fflush(stdout);
	if (nl->lc == NULL && (nl->lc = engine_list(nl->e, nl->labelv,
	    on_relist, nl)) == NULL)
		log_warn("%s: node %s: unable to list its containers",
		    nl->svc, nl->node->name);
	loop_timer_at(nl->loop, &nl->timer, loop_now_ms(nl->loop) +
	    LOGS_NODE_LIST_MS);
}

static void
on_relist(void *arg, int status, json_t *body, const char *err)
{
	struct nlogs *nl = arg;
	const json_t *o;
	const char *id;
	size_t first = nl->nct, i, k;

	(void)status;
	nl->lc = NULL;
	if (err != NULL || !json_is_array(body)) {
		if (!nl->warned)
			log_warnx("%s: node %s (%s): unable to list its "
			    "containers: %s; trying again", nl->svc,
			    nl->node->name, nl->node->container_engine,
			    err != NULL ? err : "not an array");
		nl->warned = 1;
		return;
	}
	nl->warned = 0;
	json_array_foreach(body, i, o)	/* still there: follow on */
		if ((id = engine_id(o)) != NULL)
			for (k = 0; k < first; k++)
				if (nl->ct[k].broken && nl->ct[k].c == NULL &&
				    strcmp(nl->ct[k].id, id) == 0)
					follow_ct(nl, &nl->ct[k]);
	if (add_containers(nl, body) > 0)
		for (i = first; i < nl->nct; i++)
			follow_ct(nl, &nl->ct[i]);
}

int
logs_node(struct hk *hk, const struct store_service *svc,
    const struct config_node *node, const char *dir, struct tail *t,
    int fflag)
{
	static struct nlogs nl;	/* big: not on the stack */
	struct engine_conf ec;
	struct logs_lines keep;
	struct sorted *v;
	char inst[CONFIG_NAME_MAX + 1], name[2 * STORE_NAME_MAX + 2];
	char err[ENGINE_ERR_LEN];
	size_t i;
	int code = EX_OK, r;

	memset(&nl, 0, sizeof(nl));
	memset(&keep, 0, sizeof(keep));
	snprintf(name, sizeof(name), "%s/%s", svc->app, svc->name);
	nl.svc = name;
	nl.node = node;
	nl.t = t;
	if ((r = installation(hk, inst, sizeof(inst), &code)) == -1)
		return code;
	if ((nl.loop = loop_new()) == NULL)
		fatal(EX_OSERR, "loop_new");
	memset(&ec, 0, sizeof(ec));
	ec.url = node->container_engine;
	if (node->container_tls_ca[0] != '\0') {
		ec.tls_ca = node->container_tls_ca;
		ec.tls_cert = node->container_tls_cert;
		ec.tls_key = node->container_tls_key;
	}
	if ((nl.e = engine_open(nl.loop, &ec, err, sizeof(err))) == NULL) {
		log_errorx("%s: node %s: %s", name, node->name, err);
		loop_free(nl.loop);
		return EX_CONFIG;
	}
	snprintf(nl.labels[0], LABEL_MAX, "hk.installation=%s", inst);
	snprintf(nl.labels[1], LABEL_MAX, "hk.app=%s", svc->app);
	snprintf(nl.labels[2], LABEL_MAX, "hk.service=%s", svc->name);
	for (i = 0; i < 3; i++)
		nl.labelv[i] = nl.labels[i];
	t->keep = &keep;	/* every line, sorted by time below */
	/* no installation yet: no container was ever made */
	if (r == 1 && (list_wait(&nl) == -1 ||
	    (add_containers(&nl, nl.list) >= 0 && read_all(&nl) == -1))) {
		log_errorx("%s: node %s (%s): unable to read its containers' "
		    "output: %s", name, node->name, node->container_engine,
		    nl.err);
		free(t->ring);	/* empty: every line went to keep */
		t->ring = NULL;
		code = EX_UNAVAILABLE;
		goto done;
	}
	t->skip = skip_current;
	t->skiparg = &nl;
	code = logs_read_dir(t, dir, NULL);
	t->keep = NULL;
	if (keep.n > 0) {
		if ((v = reallocarray(NULL, keep.n, sizeof(*v))) == NULL)
			fatal(EX_OSERR, "reallocarray");
		for (i = 0; i < keep.n; i++) {
			v[i].line = keep.v[i];
			v[i].i = i;
		}
		qsort(v, keep.n, sizeof(*v), by_time);
		for (i = 0; i < keep.n; i++)
			logs_take(t, v[i].line);
		free(v);
	}
	for (i = 0; i < keep.n; i++)
		free(keep.v[i]);
	free(keep.v);
	memset(&keep, 0, sizeof(keep));
	logs_flush(t);
	if (!fflag)
		goto done;

	nl.following = 1;
	for (i = 0; i < nl.nct; i++)
		follow_ct(&nl, &nl.ct[i]);
	loop_timer_init(&nl.timer, on_tick, &nl);
	loop_timer_at(nl.loop, &nl.timer, loop_now_ms(nl.loop) +
	    LOGS_NODE_LIST_MS);
	if (loop_run(nl.loop) == -1)	/* runs until it is killed */
		log_error("%s: following", name);
	code = EX_OSERR;
done:
	t->keep = NULL;
	for (i = 0; i < keep.n; i++)
		free(keep.v[i]);
	free(keep.v);
	for (i = 0; i < nl.nct; i++)
		engine_cancel(nl.ct[i].c);
	engine_cancel(nl.lc);
	json_decref(nl.list);
	engine_close(nl.e);
	loop_free(nl.loop);
	return code;
}
