/*
 * gwmove.c - the gateway's address, guarded (gwaddr.h; hk-activate(8),
 * MOVING THE GATEWAY): a reload, -n and a start that would move it while
 * serverless services are deployed behind it are refused, naming them;
 * -m moves it on purpose.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>

#include "activate.h"
#include "gwaddr.h"
#include "log.h"

#define HOW	"hk-activate(8), MOVING THE GATEWAY"

/*
 * SIGHUP: the file's addresses against those the gateway serves on.  A
 * move is refused, logged, and nothing else: the listener is kept (it
 * changes only with a restart, which would refuse it too), the rest of
 * the reload goes on.
 */
void
gwmove_reload(void)
{
	struct server_config *nc;
	struct config_diag *d;
	struct gwaddr from, to;
	struct gwaddr_move m;
	int missing, r = 0;

	if ((nc = calloc(1, sizeof(*nc))) == NULL ||
	    (d = calloc(1, sizeof(*d))) == NULL) {
		free(nc);
		log_warn("reload: the gateway's address not checked");
		return;
	}
	/* A file that does not load is config_reload's to report. */
	if (config_load_server(nc, gw->cfg_path, d, &missing) == 0 &&
	    (gw->listen_flag == NULL || config_set_flag(nc,
	    "serverless_listen", gw->listen_flag, d) == 0)) {
		gwaddr_of(&gw->cfg, &from);
		gwaddr_of(nc, &to);
		if ((r = gwaddr_check(gw->store, &from, &to, &m)) == -1)
			log_warnx("reload: the gateway's address not checked: "
			    "%s", store_error(gw->store));
	}
	free(nc);
	free(d);
	if (r == 1)
		log_errorx("reload: server.%s: refused: serverless services "
		    "are deployed behind the gateway, which stays on %s (%s): "
		    "services: %s", m.what, from.listen, HOW, m.services);
}

/*
 * -n: the file's addresses against those the store records, read only (a
 * check writes nothing); a move under serverless services exits 78.  A
 * store that is not there has none; one that does not open leaves the
 * address unchecked, said.
 */
void
gwmove_check(void)
{
	char err[STORE_ERR_LEN];
	struct gwaddr rec, here;
	struct gwaddr_move m;
	struct store *st;
	int r;

	if ((st = store_open_readonly(gw->cfg.state, err,
	    sizeof(err))) == NULL) {
		if (errno != ENOENT)
			log_warnx("unable to read store %s: %s: the gateway's "
			    "address is not checked", gw->cfg.state, err);
		return;
	}
	gwaddr_of(&gw->cfg, &here);
	if ((r = gwaddr_recorded(st, &here, &rec)) == 0)
		r = gwaddr_check(st, &rec, &here, &m);
	else if (r == 1)
		r = 0;		/* none recorded: the first start records it */
	if (r == -1)
		log_warnx("store %s: %s: the gateway's address is not checked",
		    gw->cfg.state, store_error(st));
	store_close(st);
	if (r != 1)
		return;
	log_errorx("server.%s: refused: serverless services are deployed "
	    "behind the gateway at %s; review them, then move it with "
	    "hk-activate -m (%s): services: %s", m.what, rec.address, HOW,
	    m.services);
	exit(EX_CONFIG);
}

/*
 * The start (move 0): the store's record against this configuration; a
 * move under serverless services exits 78, else the address is recorded.
 * -m (move 1): records it whatever is deployed, and says what moved.
 */
void
gwmove_start(int move)
{
	struct gwaddr here;
	struct gwaddr_move m;
	int r;

	gwaddr_of(&gw->cfg, &here);
	if (getenv("LISTEN_FDS") != NULL)
		here.listen[0] = '\0';	/* systemd's socket, not ours */
	r = gwaddr_claim(gw->store, &here, move, &m);
	if (r == -1)
		fatalx(EX_UNAVAILABLE, "unable to record the gateway's address "
		    "in the store: %s", store_error(gw->store));
	if (r == 1)
		fatalx(EX_CONFIG, "server.%s: refused: serverless services are "
		    "deployed behind the gateway's recorded address; review "
		    "them, then move it with hk-activate -m (%s): services: "
		    "%s", m.what, HOW,
		    m.services);
	if (!move)
		return;
	if (r == 2)
		fprintf(stderr, "%s: server.%s: moved: the serverless services "
		    "are served there from the gateway's next start: %s\n",
		    PROG, m.what, m.services);
	else
		fprintf(stderr, "%s: the gateway's address is recorded: no "
		    "serverless service moves\n", PROG);
}
