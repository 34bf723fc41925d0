/*
 * config_metrics.c - [metrics] of hakopod.toml (hakopod.toml(5)): one
 * private listen address per daemon for GET /metrics, each unset by
 * default.  The gateway's is never its public listener: what a scraper
 * reads (services, counts) is not for the public.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_impl.h"
#include "toml.h"

/* Alphabetical, as "-n -v" prints them; indexed by the enum. */
static const char *const daemons[METRICS_DAEMONS] = {
	[METRICS_ACTIVATE] = "activate",
	[METRICS_EVENTS] = "events",
	[METRICS_IDLE] = "idle",
	[METRICS_JOBS] = "jobs",
	[METRICS_SCALE] = "scale",
};

static int	metrics_key(struct config_metrics *, const struct toml_kv *,
		    const char *, struct config_diag *);
static int	same_listener(const char *, const char *);
static size_t	host_len(const char *);
static int	wildcard(const char *, size_t);

static int
metrics_key(struct config_metrics *m, const struct toml_kv *kv,
    const char *file, struct config_diag *d)
{
	const struct toml_value *v = kv->value;
	char key[CW_KEYPATH_LEN], why[256];
	size_t i;

	cw_kpath(key, "metrics", kv->key, kv->keylen);
	for (i = 0; i < METRICS_DAEMONS; i++)
		if (cw_key_is(kv, daemons[i]))
			break;
	if (i == METRICS_DAEMONS) {
		cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
		    v->type == TOML_TABLE ? "unknown table" : "unknown key");
		return -1;
	}
	if (v->type != TOML_STRING || strlen(v->u.string.ptr) !=
	    v->u.string.len) {
		cw_diag_add(d, "%s:%d: %s: must be a string", file,
		    kv->line, key);
		return -1;
	}
	if (v->u.string.len >= sizeof(m->listen[i]) ||
	    config_check_addr(v->u.string.ptr, why, sizeof(why)) == -1) {
		cw_diag_add(d, "%s:%d: %s: %s", file, kv->line, key,
		    v->u.string.len >= sizeof(m->listen[i]) ? "too long" :
		    why);
		return -1;
	}
	(void)strlcpy(m->listen[i], v->u.string.ptr, sizeof(m->listen[i]));
	m->line[i] = kv->line;
	return 0;
}

int
config_metrics_walk(struct config_metrics *m, const struct toml_kv *kv,
    const char *file, struct config_diag *d)
{
	const struct toml_value *t = kv->value;
	size_t i;
	int rc = 0;

	if (t->type != TOML_TABLE) {
		cw_diag_add(d, "%s:%d: metrics: must be a table", file,
		    kv->line);
		return -1;
	}
	m->given = 1;
	for (i = 0; i < t->u.table.len; i++)
		if (metrics_key(m, &t->u.table.items[i], file, d) == -1)
			rc = -1;
	return rc;
}

/* The host part of a checked host:port. */
static size_t
host_len(const char *a)
{
	return (size_t)(strrchr(a, ':') - a);
}

static int
wildcard(const char *h, size_t len)
{
	return (len == 7 && strncmp(h, "0.0.0.0", 7) == 0) ||
	    (len == 4 && strncmp(h, "[::]", 4) == 0);
}

/* Same port, and the same host or a wildcard on either side. */
static int
same_listener(const char *a, const char *b)
{
	size_t ha = host_len(a), hb = host_len(b);

	if (strcmp(a + ha, b + hb) != 0)
		return 0;
	return (ha == hb && strncmp(a, b, ha) == 0) || wildcard(a, ha) ||
	    wildcard(b, hb);
}

/* After [server] and the environment: the gateway's public addresses. */
int
config_metrics_cross(const struct server_config *cfg, const char *file,
    struct config_diag *d)
{
	const char *m = cfg->metrics.listen[METRICS_ACTIVATE];
	const char *pub[2] = { cfg->serverless_listen,
	    cfg->serverless_address };
	size_t i;

	if (*m == '\0')
		return 0;
	for (i = 0; i < 2; i++)
		if (*pub[i] != '\0' && strchr(pub[i], ':') != NULL &&
		    same_listener(m, pub[i])) {
			cw_diag_add(d, "%s:%d: metrics.activate: must not "
			    "be the gateway's public listener (server.%s = "
			    "\"%s\"): use a private address", file,
			    cfg->metrics.line[METRICS_ACTIVATE], i == 0 ?
			    "serverless_listen" : "serverless_address",
			    pub[i]);
			return -1;
		}
	return 0;
}

const char *
config_metrics_listen(const struct server_config *cfg,
    enum config_metrics_daemon which)
{
	return cfg->metrics.listen[which];
}

void
config_metrics_print(FILE *fp, const struct config_metrics *m)
{
	size_t i;

	for (i = 0; i < METRICS_DAEMONS; i++)
		fprintf(fp, "metrics.%s = \"%s\" (%s)\n", daemons[i],
		    m->listen[i], m->line[i] > 0 ? "file" : "default");
}
