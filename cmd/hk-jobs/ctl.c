/*
 * ctl.c - jobs.sock: one JSON request per message, one reply each; an
 * invoke that asks to wait also gets the run's end on its connection.
 *
 *	invoke {service: "APP/SERVICE", event, path, method, wait}
 *				-> {ok, id}; with wait, later {op: "end", run}
 *	wait_job {app, job, run_id}
 *				-> {ok, id} then {op: "end", run}, or
 *				   {ok, id, run} if it ended already
 *	get {id}		-> {ok, run}
 *	status			-> {ok, runs: [ids in flight]}
 *	reload, stop, start	-> {ok} (hk tells every daemon)
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "app.h"
#include "ipc.h"
#include "jobs.h"
#include "log.h"
#include "runjson.h"

static void	ctl_accept(struct loop *, int, int, void *);
static void	ctl_read(struct loop *, int, int, void *);
static void	conn_free(struct conn *);
static void	conn_make_room(struct jobs *);
static json_t	*ctl_handle(struct conn *, const json_t *);
static json_t	*op_invoke(struct conn *, const json_t *);
static json_t	*op_get(struct jobs *, const json_t *);
static json_t	*op_status(struct jobs *);
static json_t	*op_wait_job(struct conn *, const json_t *);
static int	 job_final(const struct store_job *, struct jobs *,
		    json_t **);
static int	 split_service(const char *, char *, char *);
static json_t	*error_reply(const char *, int);

int
ctl_listen(struct jobs *jx, char *err, size_t errlen)
{
	jx->listenfd = ipc_listen(jx->jobs_path, SOCK_SEQPACKET, err, errlen);
	if (jx->listenfd == -1)
		return -1;
	if (loop_add_fd(jx->loop, jx->listenfd, LOOP_READ, ctl_accept,
	    jx) == -1) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
ctl_close(struct jobs *jx)
{
	if (jx->listenfd == -1)
		return;
	loop_del_fd(jx->loop, jx->listenfd);
	close(jx->listenfd);
	unlink(jx->jobs_path);
	jx->listenfd = -1;
}

static void
ctl_accept(struct loop *l, int fd, int mask, void *arg)
{
	struct jobs *jx = arg;
	struct conn *c;
	int cfd;

	(void)mask;
	if ((cfd = ipc_accept(fd, "jobs.sock")) == -1)
		return;
	conn_make_room(jx);
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    loop_add_fd(l, cfd, LOOP_READ, ctl_read, c) == -1) {
		log_warn("jobs.sock: connection");
		free(c);
		close(cfd);
		return;
	}
	c->jx = jx;
	c->fd = cfd;
	TAILQ_INSERT_TAIL(&jx->conns, c, entry);
}

/*
 * At IPC_CONNS_MAX connections, the one idle the longest is closed: not
 * one waiting for a run.  The list is in order of use (a request moves
 * its connection to the end), so it is the first such.
 */
static void
conn_make_room(struct jobs *jx)
{
	struct conn *c;
	size_t n = 0;

	TAILQ_FOREACH(c, &jx->conns, entry)
		n++;
	if (n < IPC_CONNS_MAX)
		return;
	TAILQ_FOREACH(c, &jx->conns, entry)
		if (c->waiting == NULL && c->pending == NULL) {
			log_debug("jobs.sock: %zu connections: the one idle "
			    "the longest is closed", n);
			conn_free(c);
			return;
		}
}

/* The run goes on without its waiter: it belongs to hk-jobs. */
static void
conn_free(struct conn *c)
{
	if (c->waiting != NULL)
		c->waiting->waiter = NULL;
	loop_close_fd(c->jx->loop, &c->fd);
	TAILQ_REMOVE(&c->jx->conns, c, entry);
	free(c);
}

static void
ctl_read(struct loop *l, int fd, int mask, void *arg)
{
	struct conn *c = arg;
	struct jobs *jx = c->jx;
	char err[IPC_ERR_LEN];
	json_t *msg, *reply;
	struct run *start;
	ssize_t n;

	(void)l;
	(void)mask;
	n = recv(fd, jx->rbuf, IPC_MSG_MAX + 1, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_free(c);
		return;
	}
	TAILQ_REMOVE(&jx->conns, c, entry);	/* used last, closed last */
	TAILQ_INSERT_TAIL(&jx->conns, c, entry);
	if ((msg = ipc_decode(jx->rbuf, (size_t)n, err, sizeof(err))) ==
	    NULL)
		reply = error_reply(err, 1);
	else {
		reply = ctl_handle(c, msg);
		json_decref(msg);
	}
	/* A new run starts once its id is told: its end comes after. */
	start = c->pending;
	c->pending = NULL;
	if (reply == NULL || ipc_send(fd, reply, err, sizeof(err)) == -1) {
		log_debug("jobs.sock: dropping a connection");
		conn_free(c);
	}
	json_decref(reply);
	if (start != NULL)
		run_start(start);
}

static json_t *
error_reply(const char *why, int input)
{
	return json_pack("{s:b, s:s, s:b}", "ok", 0, "error", why,
	    "input", input);
}

static json_t *
ctl_handle(struct conn *c, const json_t *msg)
{
	const char *op = ipc_op(msg);

	if (op == NULL)
		return error_reply("op: missing or not a string", 1);
	if (strcmp(op, "invoke") == 0)
		return op_invoke(c, msg);
	if (strcmp(op, "get") == 0)
		return op_get(c->jx, msg);
	if (strcmp(op, "status") == 0)
		return op_status(c->jx);
	if (strcmp(op, "wait_job") == 0)
		return op_wait_job(c, msg);
	/* hk apply, stop and start: jobs and schedules may have changed. */
	if (strcmp(op, "reload") == 0 || strcmp(op, "stop") == 0 ||
	    strcmp(op, "start") == 0) {
		if (jobs_reload(c->jx) == -1)
			return error_reply("unable to read jobs and schedules "
			    "from the store: asked again until it answers", 0);
		return json_pack("{s:b}", "ok", 1);
	}
	return error_reply("unknown op", 1);
}

/* "APP/SERVICE", each a name (config_valid_name). */
static int
split_service(const char *id, char *app, char *svc)
{
	const char *slash = strchr(id, '/');
	size_t n;

	if (slash == NULL || (n = (size_t)(slash - id)) > STORE_NAME_MAX)
		return -1;
	memcpy(app, id, n);
	app[n] = '\0';
	if (strlcpy(svc, slash + 1, STORE_NAME_MAX + 1) > STORE_NAME_MAX)
		return -1;
	return config_valid_name(app) && config_valid_name(svc) ? 0 : -1;
}

static json_t *
op_invoke(struct conn *c, const json_t *msg)
{
	char app[STORE_NAME_MAX + 1], svc[STORE_NAME_MAX + 1], err[512];
	const char *op, *id, *path = "/", *method = "POST";
	json_t *event = NULL, *empty = NULL, *reply;
	struct run_req rq;
	json_error_t je;
	struct run *r;
	char *text;
	int wait = 0, input;

	if (c->waiting != NULL)
		return error_reply("a run is already awaited here", 1);
	if (json_unpack_ex((json_t *)msg, &je, JSON_STRICT,
	    "{s:s, s:s, s?o, s?s, s?s, s?b}", "op", &op, "service", &id,
	    "event", &event, "path", &path, "method", &method,
	    "wait", &wait) == -1)
		return error_reply(je.text, 1);
	if (split_service(id, app, svc) == -1)
		return error_reply("service: not APP/SERVICE", 1);
	if (!app_valid_path(path))
		return error_reply("path: not /... of visible ASCII", 1);
	if (!app_valid_method(method))
		return error_reply("method: not an upper-case token", 1);
	if (event == NULL)
		event = empty = json_object();
	text = json_dumps(event, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(empty);
	if (text == NULL)
		return error_reply("event: unable to encode", 1);
	rq.method = method;
	rq.path = path;
	rq.event = text;
	rq.event_len = strlen(text);
	rq.timeout_s = 0;
	r = run_new(c->jx, app, svc, &rq, err, sizeof(err), &input);
	free(text);
	if (r == NULL)
		return error_reply(err, input);
	reply = json_pack("{s:b, s:s}", "ok", 1, "id", r->row.id);
	/* Started after this reply (ctl_read); its end told if asked. */
	c->pending = r;
	if (wait) {
		c->waiting = r;
		r->waiter = c;
	}
	return reply;
}

/*
 * hk apply --wait: the end of the run of a job's run_id.  A run_id not
 * yet seen (the reload still on its way) is dispatched first.
 */
static json_t *
op_wait_job(struct conn *c, const json_t *msg)
{
	struct store_job job;
	const char *op, *app, *name;
	json_int_t run_id;
	json_error_t je;
	json_t *reply = NULL;
	struct run *r;
	int found;

	if (c->waiting != NULL)
		return error_reply("a run is already awaited here", 1);
	if (json_unpack_ex((json_t *)msg, &je, JSON_STRICT,
	    "{s:s, s:s, s:s, s:I}", "op", &op, "app", &app, "job", &name,
	    "run_id", &run_id) == -1)
		return error_reply(je.text, 1);
	if ((found = store_job_get(c->jx->store, app, name, &job)) == 0 &&
	    job.done_run_id < run_id) {
		store_job_clear(&job);
		declared_dispatch(c->jx);
		found = store_job_get(c->jx->store, app, name, &job);
	}
	if (found == -1)
		return error_reply(store_error(c->jx->store), 0);
	if (found == 1)
		return error_reply("no such job", 1);
	if (job.done_run_id != run_id)
		reply = error_reply(job.done_run_id < run_id ? "that run_id "
		    "has not started" : "a later run_id has started since", 1);
	else if ((r = declared_find(c->jx, job.run)) != NULL) {
		reply = json_pack("{s:b, s:s}", "ok", 1, "id", job.run);
		c->waiting = r;
		r->waiter = c;
	} else if (job_final(&job, c->jx, &reply) == -1)
		reply = error_reply(store_error(c->jx->store), 0);
	store_job_clear(&job);
	return reply;
}

/* A job's run that is not ours in flight: ended, or another host's. */
static int
job_final(const struct store_job *job, struct jobs *jx, json_t **reply)
{
	struct store_run row;
	int r;

	if ((r = store_run_get(jx->store, job->run, &row)) == -1)
		return -1;
	if (r == 1)
		*reply = error_reply("its run is gone (runs retention)", 1);
	else if (strcmp(row.phase, "Pending") == 0 ||
	    strcmp(row.phase, "Running") == 0)
		*reply = error_reply("its run is another host's hk-jobs's "
		    "(hk runs show ID)", 0);
	else
		*reply = json_pack("{s:b, s:s, s:o}", "ok", 1, "id", job->run,
		    "run", runjson(&row));
	if (r == 0)
		store_run_clear(&row);
	return 0;
}

static json_t *
op_get(struct jobs *jx, const json_t *msg)
{
	struct store_run row;
	const char *op, *id;
	json_error_t je;
	json_t *reply;
	int r;

	if (json_unpack_ex((json_t *)msg, &je, JSON_STRICT, "{s:s, s:s}",
	    "op", &op, "id", &id) == -1)
		return error_reply(je.text, 1);
	if (strlen(id) != STORE_RUN_ID_MAX)
		return error_reply("id: not a run id", 1);
	if ((r = store_run_get(jx->store, id, &row)) == -1)
		return error_reply(store_error(jx->store), 0);
	if (r == 1)
		return error_reply("no such run", 1);
	reply = json_pack("{s:b, s:o}", "ok", 1, "run", runjson(&row));
	store_run_clear(&row);
	return reply;
}

static json_t *
op_status(struct jobs *jx)
{
	struct run *r;
	json_t *list;

	if ((list = json_array()) == NULL)
		return NULL;
	TAILQ_FOREACH(r, &jx->runs, entry)
		if (json_array_append_new(list, json_string(r->row.id)) == -1) {
			json_decref(list);
			return NULL;
		}
	return json_pack("{s:b, s:o, s:I, s:I}", "ok", 1, "runs", list,
	    "owed", (json_int_t)owed_count(jx->owed), "owed_lost",
	    (json_int_t)owed_lost(jx->owed));
}

/* The end of a run, to the connection that waits for it. */
void
ctl_notify(struct conn *c, const struct run *r)
{
	char err[IPC_ERR_LEN];
	json_t *msg;

	c->waiting = NULL;
	msg = json_pack("{s:s, s:o}", "op", "end", "run", runjson(&r->row));
	if (msg == NULL || ipc_send(c->fd, msg, err, sizeof(err)) == -1)
		log_debug("jobs.sock: end of run=%s not told", r->row.id);
	json_decref(msg);
}
