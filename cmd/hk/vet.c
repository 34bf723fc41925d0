/*
 * vet.c - the code vetting gate (hakopod.toml(5) [vet], hk(1)): "hk vet
 * FILE..." alone, and hk apply before it writes anything.
 *
 * Each service with a source whose code is new to the store, and not
 * judged safe before, goes to the model in one request (lib/vet.h).  An
 * unsafe verdict refuses the apply; a model that cannot answer lets it
 * through with a warning: the model's availability must not break a
 * deploy.  Every verdict and every skip is an event (CodeVetted,
 * VetSkipped); a safe verdict is kept (store_vetted_put()) so the same
 * code is not sent again.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "hk.h"
#include "log.h"
#include "spec.h"
#include "srctree.h"
#include "store.h"
#include "vet.h"

#define VET_FILE_MAX	(64 * 1024)	/* a key or a prompt file */

struct vet_gate {
	struct vet_config	 vc;
	char			*key;
	char			*prompt;
	char			*exts[CONFIG_EXTS_MAX + 1];
	int			 store;	/* the store may be asked and told */
};

/* One service's outcome. */
struct vet_outcome {
	enum vet_result	 result;
	int		 cached;	/* judged safe before: nothing sent */
	char		 why[VET_CAUSE_LEN];
	int64_t		 ms;
};

static int	 read_small(const char *, const char *, char **);
static int	 gate_open(struct hk *, struct vet_gate *, int);
static void	 gate_close(struct vet_gate *);
static const char *runtime_of(const struct service_spec *);
static int	 code_is_new(struct hk *, const char *,
		    const struct service_spec *);
static void	 vet_one(struct hk *, struct vet_gate *, const char *,
		    const struct service_spec *, struct vet_outcome *);
static void	 record(struct hk *, const char *, const struct service_spec *,
		    const struct vet_gate *, const struct vet_outcome *);

/* A key or prompt file, whole; a key loses its trailing newline. */
static int
read_small(const char *what, const char *path, char **out)
{
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		log_error("[vet] %s %s", what, path);
		return -1;
	}
	if ((buf = malloc(VET_FILE_MAX + 1)) == NULL)
		fatal(EX_OSERR, "malloc");
	while (len < VET_FILE_MAX && (n = read(fd, buf + len,
	    VET_FILE_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len == VET_FILE_MAX) {
		log_errorx("[vet] %s %s: larger than %d bytes", what, path,
		    VET_FILE_MAX);
		explicit_bzero(buf, VET_FILE_MAX + 1);
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	if (strcmp(what, "api_key_file") == 0)
		while (len > 0 && (buf[len - 1] == '\n' ||
		    buf[len - 1] == '\r'))
			buf[--len] = '\0';
	*out = buf;
	return 0;
}

/*
 * The gate from [vet]: its key and prompt read.  need_store: hk apply,
 * whose store exists by now; hk vet asks an existing store only.
 */
static int
gate_open(struct hk *hk, struct vet_gate *g, int need_store)
{
	const struct config_vet *cv = &hk->cfg.vet;
	const char *path = NULL;
	size_t i;

	memset(g, 0, sizeof(*g));
	if (read_small("prompt_file", cv->prompt_file, &g->prompt) == -1 ||
	    (cv->api_key_file[0] != '\0' && read_small("api_key_file",
	    cv->api_key_file, &g->key) == -1)) {
		gate_close(g);
		return EX_CONFIG;
	}
	for (i = 0; i < cv->nextensions; i++)
		g->exts[i] = (char *)cv->extensions[i];
	g->vc.endpoint = cv->endpoint;
	g->vc.api_key = g->key != NULL ? g->key : "";
	g->vc.model = cv->model;
	g->vc.ca_file = cv->ca_file[0] != '\0' ? cv->ca_file : NULL;
	g->vc.timeout_seconds = (int)cv->timeout_seconds;
	g->vc.max_bytes = (size_t)cv->max_bytes;
	g->vc.extensions = g->exts;
	if (strncmp(hk->cfg.state, "sqlite://", 9) == 0)
		path = hk->cfg.state + 9;
	if (need_store || path == NULL || access(path, F_OK) == 0)
		g->store = hk_store(hk) == EX_OK;
	return EX_OK;
}

static void
gate_close(struct vet_gate *g)
{
	if (g->key != NULL) {
		explicit_bzero(g->key, strlen(g->key));
		free(g->key);
	}
	free(g->prompt);
	memset(g, 0, sizeof(*g));
}

/* What the prompt names: the command's program, or the image. */
static const char *
runtime_of(const struct service_spec *s)
{
	const char *p;

	if (s->ncommand > 0) {
		p = strrchr(s->command[0], '/');
		return p != NULL ? p + 1 : s->command[0];
	}
	return s->image != NULL ? s->image : "an unknown runtime";
}

/* Whether the store runs other code for this service: 1 new, 0 same. */
static int
code_is_new(struct hk *hk, const char *app, const struct service_spec *s)
{
	struct store_service row;
	json_t *spec;
	const char *hash;
	int same;

	if (store_service_get(hk->store, app, s->name, &row) != 0)
		return 1;
	spec = json_loads(row.spec_json, 0, NULL);
	hash = json_string_value(json_object_get(spec, "code_hash"));
	same = hash != NULL && strcmp(hash, s->code_hash) == 0;
	json_decref(spec);
	store_service_clear(&row);
	return !same;
}

static void
vet_one(struct hk *hk, struct vet_gate *g, const char *app,
    const struct service_spec *s, struct vet_outcome *o)
{
	char *files, *body, *model = NULL;
	size_t nfiles = 0;
	int over = 0;

	(void)app;
	memset(o, 0, sizeof(*o));
	if (g->store && store_vetted_get(hk->store, s->code_hash,
	    &model) == 0) {
		free(model);
		o->result = VET_SAFE;
		o->cached = 1;
		return;
	}
	o->result = VET_SKIPPED;
	files = vet_collect(s->code, s->code_len, g->exts,
	    g->vc.max_bytes, &nfiles, &over, o->why, sizeof(o->why));
	if (files == NULL)
		return;
	if (nfiles == 0) {
		snprintf(o->why, sizeof(o->why), "no file to vet (none has "
		    "an allowed extension)");
		free(files);
		return;
	}
	body = vet_request(g->vc.model, g->prompt, runtime_of(s), files);
	free(files);
	if (body == NULL)
		fatal(EX_OSERR, "vet: request");
	o->result = vet_ask(&g->vc, body, o->why, sizeof(o->why), &o->ms);
	free(body);
	if (o->result == VET_SAFE && g->store &&
	    store_vetted_put(hk->store, s->code_hash, g->vc.model) == -1)
		log_warnx("vet: unable to keep the verdict: %s",
		    store_error(hk->store));
}

/* CodeVetted or VetSkipped, with the hash; never the key. */
static void
record(struct hk *hk, const char *app, const struct service_spec *s,
    const struct vet_gate *g, const struct vet_outcome *o)
{
	struct store_event ev;
	json_t *d;

	if (!g->store || o->cached)
		return;
	if (o->result == VET_SKIPPED)
		d = json_pack("{s:s, s:s}", "code", s->code_hash, "cause",
		    o->why);
	else
		d = json_pack("{s:s, s:s, s:s, s:s, s:I}", "code",
		    s->code_hash, "verdict", o->result == VET_SAFE ? "safe" :
		    "unsafe", "reason", o->result == VET_SAFE ? "" : o->why,
		    "model", g->vc.model, "ms", (json_int_t)o->ms);
	memset(&ev, 0, sizeof(ev));
	ev.at = store_now_ms();
	strlcpy(ev.app, app, sizeof(ev.app));
	strlcpy(ev.service, s->name, sizeof(ev.service));
	strlcpy(ev.kind, o->result == VET_SKIPPED ? "VetSkipped" :
	    "CodeVetted", sizeof(ev.kind));
	ev.detail_json = d != NULL ? json_dumps(d, JSON_COMPACT |
	    JSON_SORT_KEYS) : NULL;
	json_decref(d);
	if (ev.detail_json == NULL || store_event_add(hk->store, &ev) == -1)
		log_warnx("vet: %s/%s: unable to record the event", app,
		    s->name);
	free(ev.detail_json);
}

/*
 * hk apply: every service whose code is new, before anything is written.
 * EX_OK (safe, or skipped with a warning), 65 with every refusal said,
 * or 78 when [vet]'s files cannot be read.
 */
int
vet_apps(struct hk *hk, struct app_config *apps, int n)
{
	struct vet_gate g;
	struct vet_outcome o;
	const struct service_spec *s;
	size_t k;
	int i, code;

	if (!hk->cfg.vet.enabled)
		return EX_OK;
	if ((code = gate_open(hk, &g, 1)) != EX_OK)
		return code;
	for (i = 0; i < n; i++)
	for (k = 0; k < apps[i].nservices; k++) {
		s = &apps[i].services[k];
		if (s->code_hash == NULL || !code_is_new(hk, apps[i].name, s))
			continue;
		vet_one(hk, &g, apps[i].name, s, &o);
		record(hk, apps[i].name, s, &g, &o);
		if (o.result == VET_UNSAFE) {
			fprintf(stderr, "%s:%d: services.%s: code vetting "
			    "refused: %s\n", apps[i].path, s->line, s->name,
			    o.why);
			code = EX_DATAERR;
		} else if (o.result == VET_SKIPPED)
			log_warnx("services.%s: code vetting skipped: %s; "
			    "applying anyway", s->name, o.why);
		else if (!o.cached)
			log_info("services.%s: code %.*s vetted safe by %s "
			    "in %.1f s", s->name, SRCTREE_SHORT_LEN,
			    s->code_hash, g.vc.model, (double)o.ms / 1000);
	}
	gate_close(&g);
	return code;
}

/*
 * hk apply --dry-run: the gate's files readable, as vet_apps() needs them
 * (EX_OK or 78); nothing is sent.
 */
int
vet_gate_check(struct hk *hk)
{
	struct vet_gate g;
	int code;

	if (!hk->cfg.vet.enabled)
		return EX_OK;
	if ((code = gate_open(hk, &g, 1)) == EX_OK)
		gate_close(&g);
	return code;
}

/*
 * hk apply --dry-run: whether vet_apps() would send this service's code to
 * the model: the gate on, the code new to the service and not judged safe
 * before.  Reads the store only.
 */
int
vet_would_send(struct hk *hk, const char *app, const struct service_spec *s)
{
	char *model = NULL;

	if (!hk->cfg.vet.enabled || s->code_hash == NULL ||
	    !code_is_new(hk, app, s))
		return 0;
	if (store_vetted_get(hk->store, s->code_hash, &model) == 0) {
		free(model);
		return 0;
	}
	return 1;
}

/*
 * hk vet FILE...: the same check, nothing applied, every service with a
 * source vetted whether or not the store runs it.  One line each:
 * "app/service<TAB>code HASH<TAB>VERDICT".
 */
int
cmd_vet(struct hk *hk, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *usage = "usage: hk [-v] [-f config] vet file ...\n";
	struct app_config *apps;
	struct vet_gate g;
	struct vet_outcome o;
	const struct service_spec *s;
	size_t k;
	int ch, i, n, code;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		fputs(usage, ch == 'h' ? stdout : stderr);
		return ch == 'h' ? EX_OK : EX_USAGE;
	}
	if (optind >= argc) {
		fputs(usage, stderr);
		return EX_USAGE;
	}
	n = argc - optind;
	if ((code = apps_load(hk, n, argv + optind, &apps)) != EX_OK) {
		apps_free(apps, n);
		return code;
	}
	if (!hk->cfg.vet.enabled)
		log_warnx("vet: the gate is off ([vet] enabled = false in "
		    "%s): nothing is sent", hk->cfg.path[0] != '\0' ?
		    hk->cfg.path : "the operator configuration");
	else if ((code = gate_open(hk, &g, 0)) != EX_OK) {
		apps_free(apps, n);
		return code;
	}
	for (i = 0; i < n; i++)
	for (k = 0; k < apps[i].nservices; k++) {
		s = &apps[i].services[k];
		printf("%s/%s\t", apps[i].name, s->name);
		if (s->code_hash == NULL) {
			printf("no source\tnot vetted\n");
			continue;
		}
		printf("code %.*s\t", SRCTREE_SHORT_LEN, s->code_hash);
		if (!hk->cfg.vet.enabled) {
			printf("skipped: the gate is off\n");
			continue;
		}
		vet_one(hk, &g, apps[i].name, s, &o);
		record(hk, apps[i].name, s, &g, &o);
		if (o.result == VET_UNSAFE) {
			printf("unsafe: %s\n", o.why);
			code = EX_DATAERR;
		} else if (o.result == VET_SKIPPED)
			printf("skipped: %s\n", o.why);
		else
			printf("safe%s\n", o.cached ? " (judged before)" : "");
		fflush(stdout);
	}
	if (hk->cfg.vet.enabled)
		gate_close(&g);
	apps_free(apps, n);
	return code;
}
