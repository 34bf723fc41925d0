/*
 * gwaddr.c - the gateway's address and the serverless services deployed
 * behind it (gwaddr.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gwaddr.h"

#define KEY_ADDRESS	"hk-activate.serverless_address"
#define KEY_LISTEN	"hk-activate.serverless_listen@"	/* + host */
#define KEY_MAX		(sizeof(KEY_LISTEN) + 256)

static void	listen_key(char *, size_t);
static int	read_part(struct store *, const char *, char *, size_t);
static long	list_services(struct store *, struct gwaddr_move *);
static int	record(struct store *, const struct gwaddr *);

/* This host's listen record: one per host of a shared store. */
static void
listen_key(char *buf, size_t len)
{
	char host[256];

	if (gethostname(host, sizeof(host)) == -1)
		strlcpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	snprintf(buf, len, "%s%s", KEY_LISTEN, host);
}

/* One setting into buf: 0 read, 1 none, -1 store error. */
static int
read_part(struct store *s, const char *key, char *buf, size_t len)
{
	char *v = NULL;
	int r;

	if ((r = store_setting_get(s, key, &v)) == 0)
		strlcpy(buf, v, len);
	free(v);
	return r;
}

void
gwaddr_of(const struct server_config *cfg, struct gwaddr *g)
{
	strlcpy(g->address, cfg->serverless_address, sizeof(g->address));
	strlcpy(g->listen, config_listen_address(cfg), sizeof(g->listen));
}

int
gwaddr_recorded(struct store *s, const struct gwaddr *here,
    struct gwaddr *rec)
{
	char key[KEY_MAX];
	int a, l;

	*rec = *here;
	listen_key(key, sizeof(key));
	if ((a = read_part(s, KEY_ADDRESS, rec->address,
	    sizeof(rec->address))) == -1 ||
	    (l = read_part(s, key, rec->listen, sizeof(rec->listen))) == -1)
		return -1;
	return a == 1 && l == 1;
}

int
gwaddr_moves(const struct gwaddr *from, const struct gwaddr *to,
    struct gwaddr_move *m)
{
	size_t len = sizeof(m->what);
	int n = 0;

	m->what[0] = '\0';
	if (strcmp(from->address, to->address) != 0)
		n = snprintf(m->what, len, "serverless_address: \"%s\" becomes "
		    "\"%s\"", from->address, to->address);
	/* a listen address that follows serverless_address moves with it */
	if (n > 0 && strcmp(from->listen, from->address) == 0 &&
	    strcmp(to->listen, to->address) == 0)
		return 1;
	if (strcmp(from->listen, to->listen) != 0 && n >= 0 &&
	    (size_t)n < len)
		snprintf(m->what + n, len - (size_t)n, "%sserverless_listen: "
		    "\"%s\" becomes \"%s\"", n > 0 ? "; " : "", from->listen,
		    to->listen);
	return m->what[0] != '\0';
}

/* The store's serverless services into m; their number, or -1. */
static long
list_services(struct store *s, struct gwaddr_move *m)
{
	struct store_service *all;
	size_t n, i, used = 0, len = sizeof(m->services);
	int w;

	m->services[0] = '\0';
	m->nservices = 0;
	if (store_service_list(s, &all, &n) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (!all[i].serverless)
			continue;
		if (m->nservices++ >= GWADDR_NAMES_MAX || used >= len)
			continue;
		w = snprintf(m->services + used, len - used, "%s%s/%s",
		    used > 0 ? ", " : "", all[i].app, all[i].name);
		used += w > 0 ? (size_t)w : 0;
	}
	store_service_free(all, n);
	if (m->nservices > GWADDR_NAMES_MAX && used < len)
		snprintf(m->services + used, len - used, " and %ld more",
		    m->nservices - GWADDR_NAMES_MAX);
	return m->nservices;
}

int
gwaddr_check(struct store *s, const struct gwaddr *from,
    const struct gwaddr *to, struct gwaddr_move *m)
{
	if (!gwaddr_moves(from, to, m))
		return 0;
	if (list_services(s, m) == -1)
		return -1;
	return m->nservices > 0;
}

static int
record(struct store *s, const struct gwaddr *g)
{
	char key[KEY_MAX];

	listen_key(key, sizeof(key));
	if (store_setting_put(s, KEY_ADDRESS, g->address) == -1 ||
	    (g->listen[0] != '\0' && store_setting_put(s, key,
	    g->listen) == -1))
		return -1;
	return 0;
}

int
gwaddr_claim(struct store *s, const struct gwaddr *here, int move,
    struct gwaddr_move *m)
{
	struct gwaddr rec;
	int r = 0;

	m->what[0] = m->services[0] = '\0';
	m->nservices = 0;
	if (store_begin(s) == -1)
		return -1;
	if (gwaddr_recorded(s, here, &rec) == -1)
		goto fail;
	if (here->listen[0] == '\0')
		rec.listen[0] = '\0';	/* not this configuration's */
	if ((r = gwaddr_check(s, &rec, here, m)) == -1)
		goto fail;
	if (r == 1 && !move) {
		(void)store_rollback(s);
		return 1;
	}
	if (record(s, here) == -1 || store_commit(s) == -1)
		goto fail;
	return r == 1 ? 2 : 0;
fail:
	(void)store_rollback(s);
	return -1;
}

int
gwaddr_deploy(struct store *s, const char *address, int record_it,
    struct gwaddr_move *m)
{
	struct gwaddr from, to;
	int r;

	m->what[0] = m->services[0] = '\0';
	m->nservices = 0;
	if ((r = read_part(s, KEY_ADDRESS, from.address,
	    sizeof(from.address))) == -1)
		return -1;
	if (r == 0 && strcmp(from.address, address) != 0) {
		/* the listen addresses are each host's: not compared here */
		strlcpy(from.listen, "", sizeof(from.listen));
		strlcpy(to.address, address, sizeof(to.address));
		strlcpy(to.listen, "", sizeof(to.listen));
		if ((r = gwaddr_check(s, &from, &to, m)) != 0)
			return r;
	} else if (r == 0)
		return 0;
	return record_it ? store_setting_put(s, KEY_ADDRESS, address) : 0;
}
