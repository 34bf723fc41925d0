/*
 * volumes.c - "hk volumes": the named volumes of the installation's
 * container services (hk.toml(5) "volumes"), listed from each node's
 * engine, and "hk volumes rm", which removes one.
 *
 * hk asks the engines itself, through hk-scale's engine client on a loop
 * of its own, one call at a time: a volume outlives its service, its
 * revisions and hk-scale's runs, so the operator lists and removes them
 * whether hk-scale runs or not, and whether the service is still in the
 * store or not.  A volume is found by its labels (hk.installation, the ID
 * hk-scale keeps in the store's settings, hk.app, hk.service,
 * hk.volume); "in use" is the engine's list of the containers that mount
 * it, stopped ones too.  The engine itself refuses to remove a volume in
 * use (409): its reason is passed on.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "hk.h"
#include "log.h"
#include "loop.h"
#include "volume.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#define INSTALL_KEY	"hk-scale.installation"	/* hk-scale's setting */
#define VOL_LABELS	5	/* installation app service volume, NULL */
#define LABEL_MAX	(CONFIG_NAME_MAX + 32)

/* One call, waited for. */
struct vcall {
	struct loop	*loop;
	int		 status;
	json_t		*body;
	char		 err[ENGINE_ERR_LEN];
	int		 failed;
};

/* The scope asked for: app and service, each "" for any. */
struct vscope {
	char		 inst[CONFIG_NAME_MAX + 1];
	char		 app[CONFIG_NAME_MAX + 1];
	char		 svc[CONFIG_NAME_MAX + 1];
	const char	*name;		/* rm: the volume's NAME */
	char		 labels[VOL_LABELS][LABEL_MAX];
	const char	*labelv[VOL_LABELS];
};

static int	 parse_scope(const char *, struct vscope *);
static int	 installation(struct hk *, struct vscope *, int *);
static void	 scope_labels(struct vscope *);
static void	 on_done(void *, int, json_t *, const char *);
static int	 wait_call(struct vcall *, struct engine_call *);
static struct engine *node_engine(struct loop *, const struct hk *, size_t,
		    const char **);
static int	 list_node(struct loop *, struct engine *, const char *,
		    const struct vscope *, struct table *, json_t *);
static int	 volume_users(struct loop *, struct engine *, const char *,
		    char *, size_t);
static int	 in_scope(const json_t *, const struct vscope *);
static int	 volumes_list(struct hk *, int, char **);
static int	 volumes_rm(struct hk *, int, char **);

static const char list_usage[] = "volumes [--json] [app[/service]]";
static const char rm_usage[] = "volumes rm app/service name";

/* "APP", "APP/SERVICE" or NULL (everything): 0, or -1 if not names. */
static int
parse_scope(const char *arg, struct vscope *sc)
{
	const char *slash;

	if (arg == NULL)
		return 0;
	if ((slash = strchr(arg, '/')) == NULL) {
		if (strlcpy(sc->app, arg, sizeof(sc->app)) >= sizeof(sc->app))
			return -1;
		return config_valid_name(sc->app) ? 0 : -1;
	}
	if ((size_t)(slash - arg) >= sizeof(sc->app) ||
	    strlcpy(sc->svc, slash + 1, sizeof(sc->svc)) >= sizeof(sc->svc))
		return -1;
	memcpy(sc->app, arg, slash - arg);
	sc->app[slash - arg] = '\0';
	return config_valid_name(sc->app) && config_valid_name(sc->svc) ?
	    0 : -1;
}

/*
 * The installation's ID: 1, 0 when hk-scale has made none yet, or -1
 * with *code the command's exit.
 */
static int
installation(struct hk *hk, struct vscope *sc, int *code)
{
	char *val = NULL;
	int r;

	if ((*code = hk_store(hk)) != EX_OK)
		return -1;
	if ((r = store_setting_get(hk->store, INSTALL_KEY, &val)) == -1) {
		*code = hk_store_failed(hk, "read the installation's ID");
		return -1;
	}
	if (r == 1 || val == NULL)
		return 0;
	r = strlcpy(sc->inst, val, sizeof(sc->inst)) < sizeof(sc->inst);
	free(val);
	return r;
}

static void
scope_labels(struct vscope *sc)
{
	size_t n = 0;

	snprintf(sc->labels[n], LABEL_MAX, "hk.installation=%s", sc->inst);
	sc->labelv[n] = sc->labels[n];
	n++;
	if (sc->app[0] != '\0') {
		snprintf(sc->labels[n], LABEL_MAX, "hk.app=%s", sc->app);
		sc->labelv[n] = sc->labels[n];
		n++;
	}
	if (sc->svc[0] != '\0') {
		snprintf(sc->labels[n], LABEL_MAX, "hk.service=%s", sc->svc);
		sc->labelv[n] = sc->labels[n];
		n++;
	}
	if (sc->name != NULL) {
		snprintf(sc->labels[n], LABEL_MAX, "hk.volume=%s", sc->name);
		sc->labelv[n] = sc->labels[n];
		n++;
	}
	sc->labelv[n] = NULL;
}

static void
on_done(void *arg, int status, json_t *body, const char *err)
{
	struct vcall *v = arg;

	v->status = status;
	v->body = body != NULL ? json_incref(body) : NULL;
	if (err != NULL) {
		v->failed = 1;
		strlcpy(v->err, err, sizeof(v->err));
	}
	loop_stop(v->loop);
}

/* Runs the loop until c is answered: 0, or -1 (v->err says why). */
static int
wait_call(struct vcall *v, struct engine_call *c)
{
	if (c == NULL) {
		v->failed = 1;
		strlcpy(v->err, strerror(errno), sizeof(v->err));
		return -1;
	}
	if (loop_run(v->loop) == -1) {
		v->failed = 1;
		strlcpy(v->err, strerror(errno), sizeof(v->err));
		return -1;
	}
	return v->failed ? -1 : 0;
}

/*
 * Node i's engine (0 the default node, this host; then [nodes.NAME] with
 * a container_engine), and its name; NULL when there is no such node, or
 * when it has no engine (*name is then set).
 */
static struct engine *
node_engine(struct loop *l, const struct hk *hk, size_t i, const char **name)
{
	static char host[CONFIG_NAME_MAX + 1];
	const struct config_node *n = NULL;
	struct engine_conf ec;
	struct engine *e;
	char err[ENGINE_ERR_LEN];

	memset(&ec, 0, sizeof(ec));
	if (i == 0) {
		if (gethostname(host, sizeof(host)) == -1)
			strlcpy(host, "localhost", sizeof(host));
		host[sizeof(host) - 1] = '\0';
		*name = host;
		ec.url = hk->cfg.container_engine;
		ec.tls_ca = hk->cfg.container_tls_ca;
		ec.tls_cert = hk->cfg.container_tls_cert;
		ec.tls_key = hk->cfg.container_tls_key;
	} else if (i - 1 < hk->cfg.nnodes) {
		n = &hk->cfg.nodes[i - 1];
		*name = n->name;
		ec.url = n->container_engine;
		ec.tls_ca = n->container_tls_ca;
		ec.tls_cert = n->container_tls_cert;
		ec.tls_key = n->container_tls_key;
	} else {
		*name = NULL;
		return NULL;
	}
	if (ec.url[0] == '\0')
		return NULL;
	if (ec.tls_ca[0] == '\0')
		ec.tls_ca = ec.tls_cert = ec.tls_key = NULL;
	if ((e = engine_open(l, &ec, err, sizeof(err))) == NULL)
		log_warnx("volumes: node %s: %s", *name, err);
	return e;
}

/*
 * The IDs (12 digits) of the containers that mount the volume, in buf
 * ("" for none): 0, or -1 with a warning.
 */
static int
volume_users(struct loop *l, struct engine *e, const char *vol, char *buf,
    size_t len)
{
	struct vcall v = { .loop = l };
	const char *id;
	json_t *c;
	size_t i;

	buf[0] = '\0';
	if (wait_call(&v, engine_volume_users(e, vol, on_done, &v)) == -1) {
		log_warnx("volumes: %s: the containers that use it: %s", vol,
		    v.err);
		json_decref(v.body);
		return -1;
	}
	json_array_foreach(v.body, i, c) {
		if ((id = engine_id(c)) == NULL)
			continue;
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%.12s",
		    buf[0] != '\0' ? "," : "", id);
	}
	json_decref(v.body);
	return 0;
}

/*
 * The volume's labels match the scope.  The engine's filter is not enough:
 * podman 4.3 takes a volume that has any of the labels asked for, where
 * Docker wants all of them.
 */
static int
in_scope(const json_t *vol, const struct vscope *sc)
{
	const json_t *l = json_object_get(vol, "Labels");
	const char *v, *eq;
	char key[LABEL_MAX];
	size_t i;

	for (i = 0; sc->labelv[i] != NULL; i++) {
		eq = strchr(sc->labelv[i], '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - sc->labelv[i]),
		    sc->labelv[i]);
		if ((v = json_string_value(json_object_get(l, key))) == NULL ||
		    strcmp(v, eq + 1) != 0)
			return 0;
	}
	return 1;
}

/* The node's volumes in the scope, into t and all; -1 when it fails. */
static int
list_node(struct loop *l, struct engine *e, const char *node,
    const struct vscope *sc, struct table *t, json_t *all)
{
	struct vcall v = { .loop = l };
	const char *name, *app, *svc, *vol, *created, *row[7];
	char users[512];
	json_t *vols, *o, *labels;
	size_t i;
	int rc = 0;

	if (wait_call(&v, engine_volume_list(e, sc->labelv, on_done,
	    &v)) == -1) {
		log_warnx("volumes: node %s: %s", node, v.err);
		json_decref(v.body);
		return -1;
	}
	vols = json_object_get(v.body, "Volumes");
	json_array_foreach(vols, i, o) {
		labels = json_object_get(o, "Labels");
		name = json_string_value(json_object_get(o, "Name"));
		app = json_string_value(json_object_get(labels, "hk.app"));
		svc = json_string_value(json_object_get(labels, "hk.service"));
		vol = json_string_value(json_object_get(labels, "hk.volume"));
		created = json_string_value(json_object_get(o, "CreatedAt"));
		if (name == NULL || app == NULL || svc == NULL || vol == NULL ||
		    !in_scope(o, sc))
			continue;
		if (volume_users(l, e, name, users, sizeof(users)) == -1)
			rc = -1;
		row[0] = app;
		row[1] = svc;
		row[2] = vol;
		row[3] = node;
		row[4] = name;
		row[5] = created;
		row[6] = users[0] != '\0' ? users : "no";
		table_add(t, row);
		json_array_append_new(all, json_pack("{s:s, s:s, s:s, s:s, "
		    "s:s, s:s?, s:s?}", "app", app, "service", svc, "name", vol,
		    "node", node, "volume", name, "created", created,
		    "in_use", users[0] != '\0' ? users : NULL));
	}
	json_decref(v.body);
	return rc;
}

static int
volumes_list(struct hk *hk, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const header[] = { "APP", "SERVICE", "NAME",
	    "NODE", "VOLUME", "CREATED", "IN USE BY" };
	struct vscope sc;
	struct engine *e;
	struct table *t;
	struct loop *l;
	const char *node;
	json_t *all;
	size_t i;
	int ch, as_json = 0, rc = EX_OK, r;

	while ((ch = getopt_long(argc, argv, "hj", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			as_json = 1;
			break;
		case 'h':
			printf("usage: hk [-v] [-f config] %s\n", list_usage);
			return EX_OK;
		default:
			fprintf(stderr, "usage: hk [-v] [-f config] %s\n",
			    list_usage);
			return EX_USAGE;
		}
	}
	memset(&sc, 0, sizeof(sc));
	if (argc - optind > 1 || parse_scope(argc > optind ? argv[optind] :
	    NULL, &sc) == -1) {
		fprintf(stderr, "usage: hk [-v] [-f config] %s\n", list_usage);
		return EX_USAGE;
	}
	if ((r = installation(hk, &sc, &rc)) == -1)
		return rc;
	t = table_new(nitems(header), header);
	all = json_array();
	if (r == 1 && (l = loop_new()) != NULL) {
		scope_labels(&sc);
		for (i = 0; i == 0 || node != NULL; i++) {
			if ((e = node_engine(l, hk, i, &node)) == NULL)
				continue;	/* no engine there, or the end */
			if (list_node(l, e, node, &sc, t, all) == -1)
				rc = EX_UNAVAILABLE;
			engine_close(e);
		}
		loop_free(l);
	} else if (r == 1)
		fatal(EX_OSERR, "loop_new");
	if (as_json) {
		json_dumpf(all, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
	} else if (table_print(t, isatty(STDOUT_FILENO)) == -1)
		rc = EX_OSERR;
	json_decref(all);
	table_free(t);
	return rc;
}

/*
 * The volume is looked for on every node (a service's node_name may
 * have changed since it was made); the first found is removed.
 */
static int
volumes_rm(struct hk *hk, int argc, char **argv)
{
	struct vcall v;
	struct vscope sc;
	struct engine *e;
	struct loop *l;
	const char *node, *name = NULL, *found_node = NULL;
	char vol[VOLUME_ENGINE_MAX + 1];
	json_t *vols, *o;
	size_t i, k;
	int r, rc = EX_OK, seen = 0;

	memset(&sc, 0, sizeof(sc));
	if (argc != 3 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0 || parse_scope(argv[1], &sc) == -1 ||
	    sc.svc[0] == '\0' || !volume_valid_name(argv[2])) {
		fprintf(argc == 2 && (strcmp(argv[1], "-h") == 0 ||
		    strcmp(argv[1], "--help") == 0) ? stdout : stderr,
		    "usage: hk [-v] [-f config] %s\n", rm_usage);
		return argc == 2 && (strcmp(argv[1], "-h") == 0 ||
		    strcmp(argv[1], "--help") == 0) ? EX_OK : EX_USAGE;
	}
	sc.name = argv[2];
	if ((r = installation(hk, &sc, &rc)) == -1)
		return rc;
	if (r == 0 || volume_engine_name(sc.inst, sc.app, sc.svc, sc.name,
	    vol, sizeof(vol)) == -1) {
		log_errorx("volumes rm: %s/%s: no volume %s", sc.app, sc.svc,
		    sc.name);
		return EX_NOINPUT;
	}
	scope_labels(&sc);
	if ((l = loop_new()) == NULL)
		fatal(EX_OSERR, "loop_new");
	for (i = 0; (i == 0 || node != NULL) && found_node == NULL; i++) {
		if ((e = node_engine(l, hk, i, &node)) == NULL)
			continue;
		memset(&v, 0, sizeof(v));
		v.loop = l;
		if (wait_call(&v, engine_volume_list(e, sc.labelv, on_done,
		    &v)) == -1) {
			log_warnx("volumes rm: node %s: %s", node, v.err);
			rc = EX_UNAVAILABLE;
		} else {
			vols = json_object_get(v.body, "Volumes");
			json_array_foreach(vols, k, o) {
				name = json_string_value(json_object_get(o,
				    "Name"));
				if (name != NULL && strcmp(name, vol) == 0 &&
				    in_scope(o, &sc))
					found_node = node;
			}
		}
		json_decref(v.body);
		if (found_node != NULL) {
			memset(&v, 0, sizeof(v));
			v.loop = l;
			seen = 1;
			if (wait_call(&v, engine_volume_remove(e, vol, on_done,
			    &v)) == -1) {
				log_errorx("volumes rm: %s/%s: %s (%s on node "
				    "%s): %s", sc.app, sc.svc, sc.name, vol,
				    found_node, v.err);
				rc = v.status == 409 ? EX_TEMPFAIL :
				    EX_UNAVAILABLE;
			} else
				printf("%s/%s\t%s\tremoved\n", sc.app, sc.svc,
				    sc.name);
			json_decref(v.body);
		}
		engine_close(e);
	}
	loop_free(l);
	if (!seen && rc == EX_OK) {
		log_errorx("volumes rm: %s/%s: no volume %s", sc.app, sc.svc,
		    sc.name);
		rc = EX_NOINPUT;
	}
	return rc;
}

int
cmd_volumes(struct hk *hk, int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "rm") == 0)
		return volumes_rm(hk, argc - 1, argv + 1);
	return volumes_list(hk, argc, argv);
}
