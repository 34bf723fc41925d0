/*
 * exec_pool.c - the life cycle of the exec backend's helper processes,
 * which every kind of them shares (exec_pool.h): the Python templates
 * (exec_template.c) and the Node spares (exec_node_spare.c).
 *
 * One entry per kind, runtime (the command's first word) and user (uid,
 * gid and groups).  Its process runs the kind's script from libexec, as
 * that user (never root), in a session and cgroup of its own, with
 * no_new_privs, with a socketpair to us; the kind sets up the child's
 * fds and reads what it says.  An entry is made when a service that
 * wants it is loaded (pool_load(), at hk-scale's start and at each
 * reload), or at a wake that wants it (pool_wake()); its process is
 * started then, so that the first wake already finds it.  It is
 * restarted POOL_RESTART_MS after it dies (twice as long each time while
 * it dies before it is ready, up to POOL_RESTART_MAX); ended when no
 * loaded service wants it any more (unless its kind says it is busy),
 * and with hk-scale.  Its memory is reported by the metrics
 * (hk_template_memory_bytes) and by hk ps (pool_status()).
 *
 * The entries are this file's list, pools, alone; kinds[] names the
 * kinds, in the order of their rows.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_pool.h"
#include "libexec.h"
#include "log.h"
#include "proc.h"
#include "scale.h"

static const struct pool_ops *const kinds[] = {
	&template_pool,
	&spare_pool,
};
#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

static TAILQ_HEAD(, pool) pools = TAILQ_HEAD_INITIALIZER(pools);

static struct pool *pool_get(const struct pool_ops *, struct scale *,
		    const char *, const struct user_ids *, int);
static char	**pool_env(const struct pool *);
static void	pool_child(const struct pool *, int, int, const char *,
		    char **) __attribute__((noreturn));
static void	pool_start(struct pool *);
static void	pool_run(struct pool *);
static void	pool_read(struct loop *, int, int, void *);
static void	pool_restart(struct loop *, void *);
static void	pool_gone(struct pool *, const char *);
static void	pool_free(struct pool *, const char *);
static int	wants(const struct pool_ops *, struct scale *,
		    const struct service_spec *, struct user_ids *, int *);

/* The entry of ops, key and u, made if there is none (NULL: no memory). */
static struct pool *
pool_get(const struct pool_ops *ops, struct scale *sc, const char *key,
    const struct user_ids *u, int switch_user)
{
	struct pool *p;

	TAILQ_FOREACH(p, &pools, entry)
		if (p->ops == ops && strcmp(p->key, key) == 0 &&
		    user_ids_same(&p->user, u))
			return p;
	if ((p = calloc(1, ops->size)) == NULL)
		return NULL;
	p->ops = ops;
	p->sc = sc;
	strlcpy(p->key, key, sizeof(p->key));
	p->user = *u;
	p->switch_user = switch_user;
	p->sock = -1;
	p->backoff = POOL_RESTART_MS;
	loop_timer_init(&p->restart, pool_restart, p);
	if (ops->init != NULL)
		ops->init(p);
	TAILQ_INSERT_TAIL(&pools, p, entry);
	return p;
}

/* Its process's own environment until an instance's replaces it. */
static char **
pool_env(const struct pool *p)
{
	const char *path = getenv("PATH"), *lang = getenv("LANG");
	char **env;

	if ((env = calloc(7, sizeof(*env))) == NULL)
		return NULL;
	if (asprintf(&env[0], "PATH=%s", path != NULL ? path :
	    "/usr/local/bin:/usr/bin:/bin") == -1 ||
	    asprintf(&env[1], "HOME=%s", p->user.home) == -1 ||
	    asprintf(&env[2], "USER=%s", p->user.name) == -1 ||
	    asprintf(&env[3], "LOGNAME=%s", p->user.name) == -1 ||
	    asprintf(&env[4], "LANG=%s", lang != NULL ? lang : "C.UTF-8") ==
	    -1 || (p->ops->env_extra != NULL &&
	    (env[5] = strdup(p->ops->env_extra)) == NULL)) {
		command_env_free(env);
		return NULL;
	}
	return env;
}

/*
 * After fork: its cgroup, a session, the kind's fds (the socket among
 * them), the user's ids without privileges, then the runtime running
 * the kind's script.  Its own failures are hk-scale's to log.
 */
static void
pool_child(const struct pool *p, int sock, int procs, const char *prog,
    char **env)
{
	const char *name = p->ops->child_name;
	sigset_t none;
	char *argv[3];

	sigemptyset(&none);
	if (procs != -1 && write(procs, "0", 1) != 1) {
		dprintf(2, "hk-scale: %s: join its cgroup: %s\n", name,
		    strerror(errno));
		_exit(127);
	}
	if (sigprocmask(SIG_SETMASK, &none, NULL) == -1 ||
	    signal(SIGPIPE, SIG_DFL) == SIG_ERR || setsid() == -1 ||
	    p->ops->child(p, sock) == -1) {
		dprintf(2, "hk-scale: %s: set up: %s\n", name,
		    strerror(errno));
		_exit(127);
	}
	if (exec_drop(&p->user, p->switch_user) == -1)
		_exit(127);
	argv[0] = (char *)(uintptr_t)p->key;
	argv[1] = (char *)(uintptr_t)prog;
	argv[2] = NULL;
	execvpe(p->key, argv, env);
	dprintf(2, "hk-scale: %s: exec %s: %s\n", name, p->key,
	    strerror(errno));
	_exit(127);
}

/* Starts p's process; a failure is logged and retried as a death is. */
static void
pool_start(struct pool *p)
{
	const struct pool_ops *ops = p->ops;
	char prog[PATH_MAX], err[SCALE_REASON_MAX];
	int sv[2], cg[2] = { -1, -1 };
	char **env;
	pid_t pid;

	if (libexec_find(ops->program, R_OK, prog, sizeof(prog)) == -1) {
		log_warnx("%s: %s not found beside hk-scale nor in %s",
		    ops->name, ops->program, libexec_dir());
		return;
	}
	if ((env = pool_env(p)) == NULL) {
		log_warnx("%s: out of memory", ops->name);
		return;
	}
	if (socketpair(AF_UNIX, ops->socktype | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("%s: socketpair", ops->name);
		command_env_free(env);
		return;
	}
	if (ops->prepare != NULL && ops->prepare(p) == -1)
		goto fail;
	if (freezer_make(p->sc, p->cg, sizeof(p->cg), cg, err,
	    sizeof(err)) == -1) {
		log_warnx("%s: %s", ops->name, err);
		goto fail;
	}
	if ((pid = fork()) == -1) {
		log_warn("%s: fork", ops->name);
		goto fail;
	}
	if (pid == 0)
		pool_child(p, sv[1], cg[0], prog, env);
	close(sv[1]);
	if (ops->spawned != NULL)
		ops->spawned(p, 0);
	if (cg[0] != -1)
		close(cg[0]);
	if (cg[1] != -1)
		close(cg[1]);
	command_env_free(env);
	p->pid = pid;
	p->sock = sv[0];
	p->ready = 0;
	if (loop_add_fd(p->sc->loop, p->sock, LOOP_READ, pool_read, p) == -1)
		log_warn("%s: unable to watch pid %ld", ops->name, (long)pid);
	log_info("%s %s for %s: started pid %ld", ops->name, p->key,
	    p->user.name, (long)pid);
	return;
fail:
	close(sv[0]);
	close(sv[1]);
	if (ops->spawned != NULL)
		ops->spawned(p, -1);
	if (cg[0] != -1)
		close(cg[0]);
	if (cg[1] != -1)
		close(cg[1]);
	if (p->cg[0] != '\0')
		freezer_remove(p->sc, p->cg);
	p->cg[0] = '\0';
	command_env_free(env);
}

/* Started unless it runs or waits for its (re)start. */
static void
pool_run(struct pool *p)
{
	if (p->sock != -1 || loop_timer_armed(&p->restart) ||
	    p->sc->stopping)
		return;
	pool_start(p);
	if (p->sock == -1) {	/* logged; not at every start */
		loop_timer_at(p->sc->loop, &p->restart,
		    loop_now_ms(p->sc->loop) + p->backoff);
		p->backoff = p->backoff * 2 > POOL_RESTART_MAX ?
		    POOL_RESTART_MAX : p->backoff * 2;
	}
}

/* What it says is its kind's to read; a why from it ends it. */
static void
pool_read(struct loop *l, int fd, int mask, void *arg)
{
	struct pool *p = arg;
	const char *why;

	(void)l;
	(void)mask;
	if ((why = p->ops->read(p, fd)) != NULL)
		pool_died(p, why);
}

static void
pool_restart(struct loop *l, void *arg)
{
	struct pool *p = arg;

	(void)l;
	if (p->sock == -1 && !p->sc->stopping && p->wanted)
		pool_start(p);
}

/* It said it is ready: its back-off starts anew. */
void
pool_ready(struct pool *p)
{
	p->ready = 1;
	p->backoff = POOL_RESTART_MS;
	log_info("%s %s for %s: pid %ld ready, %lld kB", p->ops->name, p->key,
	    p->user.name, (long)p->pid,
	    (long long)(proc_rss_bytes(p->pid) / 1024));
}

/*
 * Its process ended (why) or must be: restarted after its back-off.  One
 * that never got ready (no runtime, an import that fails) is tried less
 * and less often.
 */
void
pool_died(struct pool *p, const char *why)
{
	if (!p->ready)
		p->backoff = p->backoff * 2 > POOL_RESTART_MAX ?
		    POOL_RESTART_MAX : p->backoff * 2;
	pool_down(p, why);
	pool_restart_in(p, p->backoff);
}

/* Started again in ms, while hk-scale runs and a service wants it. */
void
pool_restart_in(struct pool *p, int64_t ms)
{
	if (!p->sc->stopping && p->wanted)
		loop_timer_at(p->sc->loop, &p->restart,
		    loop_now_ms(p->sc->loop) + ms);
}

/* Ends p's process (inst_reap() reaps it) and what is left of it. */
void
pool_down(struct pool *p, const char *why)
{
	if (p->sock == -1)
		return;
	log_info("%s %s for %s: pid %ld %s", p->ops->name, p->key,
	    p->user.name, (long)p->pid, why);
	if (p->pid > 0)
		kill(p->pid, SIGKILL);
	if (p->cg[0] != '\0')
		freezer_end(p->cg);
	pool_gone(p, why);
}

/* p no longer has a process of its own: handed over. */
void
pool_forget(struct pool *p)
{
	pool_gone(p, NULL);
}

/* Its socket and cgroup go, and its kind's parts (why: ended). */
static void
pool_gone(struct pool *p, const char *why)
{
	loop_close_fd(p->sc->loop, &p->sock);
	p->pid = 0;
	p->ready = 0;
	if (p->cg[0] != '\0')
		freezer_remove(p->sc, p->cg);
	p->cg[0] = '\0';
	if (p->ops->gone != NULL)
		p->ops->gone(p, why);
}

/* Ended (why) and out of the list. */
static void
pool_free(struct pool *p, const char *why)
{
	loop_timer_cancel(p->sc->loop, &p->restart);
	pool_down(p, why);
	if (p->ops->drop != NULL)
		p->ops->drop(p);
	TAILQ_REMOVE(&pools, p, entry);
	free(p);
}

/* Whether sp starts from a process of kind ops, and as whom; 0: not. */
static int
wants(const struct pool_ops *ops, struct scale *sc,
    const struct service_spec *sp, struct user_ids *u, int *switch_user)
{
	char err[SCALE_REASON_MAX];

	if (sp->backend != BACKEND_EXEC || !sp->serverless ||
	    backend_find(BACKEND_EXEC) == NULL ||
	    sp->policy.start_from != ops->start_from ||
	    !ops->command(sp->command, sp->ncommand) ||
	    strlen(sp->command[0]) >= POOL_KEY_MAX)
		return 0;
	if (command_user(sc, sp, u, switch_user, err, sizeof(err)) == -1)
		return 0;	/* its start says why */
	return u->uid != 0;	/* never root: a bare start */
}

/*
 * At a wake of sp as u: the ready entry of kind ops, or NULL (never for
 * root: a bare start), when one is started (the caller execs meanwhile).
 */
struct pool *
pool_wake(const struct pool_ops *ops, struct scale *sc,
    const struct service_spec *sp, const struct user_ids *u,
    int switch_user)
{
	struct pool *p;

	if (u->uid == 0 || strlen(sp->command[0]) >= POOL_KEY_MAX)
		return NULL;
	if ((p = pool_get(ops, sc, sp->command[0], u, switch_user)) == NULL)
		return NULL;
	p->wanted = 1;
	pool_run(p);
	return p->ready ? p : NULL;
}

/*
 * At a load of the services (hk-scale's start, a reload): first NULL
 * and 0, then each service, then NULL and 1 (a load that read every
 * service), which ends the entries no service wants.  The process of a
 * service that wants one is started now, so that its first wake finds
 * it.
 */
void
pool_load(struct scale *sc, const struct service_spec *sp, int end)
{
	struct user_ids u;
	struct pool *p, *tmp;
	size_t k;
	int sw;

	for (k = 0; k < NKINDS; k++) {
		if (sp != NULL) {
			if (wants(kinds[k], sc, sp, &u, &sw) && (p =
			    pool_get(kinds[k], sc, sp->command[0], &u,
			    sw)) != NULL) {
				p->wanted = p->seen = 1;
				pool_run(p);
			}
			continue;
		}
		TAILQ_FOREACH_SAFE(p, &pools, entry, tmp) {
			if (p->ops != kinds[k])
				continue;
			if (!end)
				p->seen = 0;
			else if (!(p->wanted = p->seen) &&
			    (p->ops->busy == NULL || !p->ops->busy(p)))
				pool_free(p, "no longer wanted: ended");
		}
	}
}

/* hk_template_memory_bytes: each running process's resident memory. */
void
pool_metrics(struct metrics_out *o)
{
	const char *l[] = { "runtime", NULL, "user", NULL, "pid", NULL, NULL };
	char pid[16];
	struct pool *p;
	size_t k;

	metrics_family(o, "hk_template_memory_bytes", "gauge",
	    "Resident memory of each Python template (start_from = "
	    "\"python-template\"), shared by the instances it forks.");
	for (k = 0; k < NKINDS; k++)
		TAILQ_FOREACH(p, &pools, entry) {
			if (p->ops != kinds[k] || p->pid <= 0)
				continue;
			snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
			l[1] = p->key;
			l[3] = p->user.name;
			l[5] = pid;
			metrics_u64(o, "hk_template_memory_bytes", l,
			    (uint64_t)proc_rss_bytes(p->pid));
		}
}

/*
 * For the status of scale.sock (hk ps): each entry, running or waiting
 * for its restart, with its resident memory.
 */
json_t *
pool_status(void)
{
	json_t *all = json_array();
	struct pool *p;
	size_t k;

	if (all == NULL)
		return NULL;
	for (k = 0; k < NKINDS; k++)
		TAILQ_FOREACH(p, &pools, entry)
			if (p->ops == kinds[k])
				json_array_append_new(all, json_pack("{s:s, "
				    "s:s, s:I, s:b, s:I}", "runtime", p->key,
				    "user", p->user.name, "pid",
				    (json_int_t)p->pid, "ready", p->ready,
				    "memory_bytes", (json_int_t)(p->pid > 0 ?
				    proc_rss_bytes(p->pid) : 0)));
	return all;
}

/* The end: every process goes with hk-scale. */
void
pool_shutdown(struct scale *sc)
{
	struct pool *p, *tmp;
	size_t k;

	(void)sc;
	for (k = 0; k < NKINDS; k++)
		TAILQ_FOREACH_SAFE(p, &pools, entry, tmp)
			if (p->ops == kinds[k])
				pool_free(p, "ended");
}
