/*
 * backend_exec.c - the exec backend: a service's command runs as a child of
 * hk-scale, in its own session and process group, with PORT and HOST (and
 * LISTEN_FDS or NOTIFY_SOCKET for those readiness kinds).  Its stdout and
 * stderr come back through a pipe and are logged one line at a time.  A
 * stop is SIGTERM to the group, SIGKILL after the grace period.
 *
 * Until the instance is ready we read the pipe ourselves: its last line is
 * the reason of a failed start.  Once it is ready, an output relay (a fork
 * of ours that keeps nothing else) takes the read end over and copies the
 * lines to the service's log until EOF, so that the output outlives a killed
 * hk-scale, as s6's logger outlives its daemon.  An adopted instance (left
 * running by an earlier hk-scale) is not our child: its exit is seen
 * through a pidfd, and its output goes on through the earlier relay.
 *
 * The child runs as its user (command_user(), command.c): groups, gid,
 * uid, none of our capabilities, and no_new_privs, before it changes
 * directory and execs.  Its environment (command_env()) and the lines of
 * its output (output_*()) follow command.c's rules too.
 *
 * The operations of struct backend (scale.h) are the exec_*() functions;
 * a start reports at once (one forked from a Python template when the
 * template answers: forked()), an exit from SIGCHLD (exec_reap()) or the
 * pidfd, through backend.c.  What only this backend needs of an instance
 * is its struct exec_inst, in->priv; the freezer's state is
 * exec_freezer.c's (this backend's setup and teardown).
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/sched.h>	/* struct clone_args, CLONE_INTO_CGROUP */

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "exec.h"
#include "log.h"
#include "proc.h"
#include "scale.h"
#include "spare.h"

/* An instance's process, as this backend sees it (in->priv). */
struct exec_inst {
	pid_t		 pid;		/* also its process group */
	int64_t		 pid_start;	/* /proc/PID/stat starttime */
	int		 adopted;	/* not our child: pidfd */
	int		 pidfd;
	int		 outfd;		/* its stdout and stderr, until ready */
	int		 execfd;	/* EOF once exec succeeded */
	struct cmd_output out;		/* its lines, until ready */
	char		 cg[FZ_PATH_MAX];	/* its cgroup; "": none */
	int		 xport;		/* shares its service's socket on
					   this port (exec_listen.c); 0 */
	int		 template;	/* forked from a Python template */
	struct tmpl_wait *wait;		/* its answer, awaited */
	char		 user[USER_NAME_MAX + 1];	/* for the log */
};

/* What the child needs between fork and exec, prepared by the parent. */
struct spawn {
	const struct service_spec	*sp;
	struct user_ids			 user;
	int				 switch_user;
	char				**env;
	char				*listen_pid;	/* in env, filled in */
	int				 outw;		/* stdout, stderr */
	int				 execw;		/* a byte: failed */
	int				 lfd;		/* readiness socket */
	int				 cg[2];		/* freezer_make(), or -1 */
	int				 cg_born;	/* in it by clone3 */
};

static void	exec_teardown(struct scale *);
static void	exec_start(struct inst *);
static void	exec_adopt(struct inst *, const struct store_instance *);
static void	exec_stop(struct inst *);
static void	exec_kill(struct inst *);
static void	exec_freeze(struct inst *);
static void	exec_thaw(struct inst *);
static void	exec_sweep(struct scale *);
static void	adopt_frozen_as_row(struct inst *, const char *);
static void	cg_end(struct inst *);
static const char *signal_group(struct inst *, int);
static void	exec_handover(struct inst *);
static void	exec_row(const struct inst *, struct store_instance *);
static int	exec_release(struct inst *);
static int	exec_reap(struct inst *, pid_t, int);
static struct exec_inst *xnew(struct inst *);
static int	bind_port(struct inst *, int, int *, char *, size_t);
static int	listener(struct inst *, const struct service_spec *, int *,
		    char *, size_t);
static void	adopt_listener(struct inst *, int);
static int	child_fds(struct spawn *);
static void	child(struct spawn *) __attribute__((noreturn));
static pid_t	spawn_into(struct spawn *);
static void	cg_close(struct spawn *);
static int	from_template(struct inst *, struct spawn *, char *, size_t);
static pid_t	from_spare(struct inst *, struct spawn *, int);
static void	watch_child(struct inst *, pid_t);
static void	forked(void *, pid_t, const char *);
static int	fork_child(struct inst *, struct spawn *, char *, size_t);
static void	out_read(struct loop *, int, int, void *);
static void	exec_read(struct loop *, int, int, void *);
static void	pidfd_read(struct loop *, int, int, void *);
static void	exited(struct inst *, int);
static void	close_fd(struct loop *, int *);

const struct backend backend_exec = {
	.kind = BACKEND_EXEC,
	.setup = freezer_setup,
	.teardown = exec_teardown,
	.start = exec_start,
	.adopt = exec_adopt,
	.stop = exec_stop,
	.kill = exec_kill,
	.handover = exec_handover,
	.row = exec_row,
	.release = exec_release,
	.reap = exec_reap,
	.freeze = exec_freeze,
	.thaw = exec_thaw,
	.sweep = exec_sweep,
};

static struct exec_inst *
xnew(struct inst *in)
{
	struct exec_inst *x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	x->pidfd = x->outfd = x->execfd = -1;
	in->priv = x;
	return x;
}

static void
close_fd(struct loop *l, int *fd)
{
	if (*fd == -1)
		return;
	loop_del_fd(l, *fd);
	close(*fd);
	*fd = -1;
}

/*
 * The port: the spec's, or one the kernel picks on 127.0.0.1.  For readiness
 * "socket" the bound listener itself is handed to the child (*lfd).
 */
static int
bind_port(struct inst *in, int port, int *lfd, char *err, size_t errlen)
{
	int fd;

	if (lfd == NULL && port != 0) {
		in->port = port;
		return 0;
	}
	if ((fd = xlisten_bind(port, lfd != NULL ? 128 : 0, &in->port, err,
	    errlen)) == -1)
		return -1;
	if (lfd != NULL)
		*lfd = fd;
	else
		close(fd);
	return 0;
}

/*
 * The listening socket of the instance, if it is handed one (*lfd; -1
 * if not), and its port: the socket its replicas share, or for readiness
 * "socket" its own; for listen = "unix", a Unix socket and no port.
 */
static int
listener(struct inst *in, const struct service_spec *sp, int *lfd,
    char *err, size_t errlen)
{
	struct exec_inst *x = in->priv;

	if (sp->listen_unix)
		return unixlisten_bind(in, lfd, err, errlen);
	if (!command_shares_port(sp))
		return bind_port(in, sp->port, sp->readiness == READY_SOCKET ?
		    lfd : NULL, err, errlen);
	if (xlisten_take(in, sp->port, lfd, err, errlen) == -1)
		return -1;
	x->xport = in->port = sp->port;
	return 0;
}

/*
 * In the child: default signals, a session of its own, the output pipe as
 * stdout and stderr, the listener as fd 3, every other fd closed at exec.
 */
static int
child_fds(struct spawn *sw)
{
	sigset_t none;
	int null, first = 3;

	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) == -1 ||
	    signal(SIGPIPE, SIG_DFL) == SIG_ERR || setsid() == -1)
		return -1;
	if ((null = open("/dev/null", O_RDONLY)) == -1 ||
	    (null != 0 && (dup2(null, 0) == -1 || close(null) == -1)))
		return -1;
	if (dup2(sw->outw, 1) == -1 || dup2(sw->outw, 2) == -1 ||
	    (sw->execw = fcntl(sw->execw, F_DUPFD_CLOEXEC, 4)) == -1)
		return -1;
	if (sw->lfd != -1) {
		if (sw->lfd == 3 ? fcntl(3, F_SETFD, 0) == -1 :
		    dup2(sw->lfd, 3) == -1)
			return -1;
		snprintf(sw->listen_pid, 32, "LISTEN_PID=%ld",
		    (long)getpid());
		first = 4;
	}
	return (int)syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC);
}

/*
 * The instance's user: its groups, gid and uid; then none of our
 * capabilities (a non-root hk-scale keeps its own across setuid(2), and
 * ambient ones would pass exec), and no_new_privs, which no exec undoes.
 * A failure is printed for the log, as the exec's is.
 */
int
exec_drop(const struct user_ids *u, int switch_user)
{
	if (switch_user) {
		if (setgroups(u->ngroups, u->groups) == -1) {
			dprintf(2, "setgroups: %s\n", strerror(errno));
			return -1;
		}
		if (setgid(u->gid) == -1) {
			dprintf(2, "setgid %lu: %s\n", (unsigned long)u->gid,
			    strerror(errno));
			return -1;
		}
		if (setuid(u->uid) == -1) {
			dprintf(2, "setuid %lu: %s\n", (unsigned long)u->uid,
			    strerror(errno));
			return -1;
		}
	}
	if (u->uid != 0 && user_caps_clear() == -1) {
		dprintf(2, "capset: %s\n", strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		dprintf(2, "prctl PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Between vfork (or clone3: spawn_into()) and exec.  A failure is printed
 * for the log, and told to the parent by one byte on execw: the exit that
 * follows gives the reason.
 *
 * The child shares hk-scale's memory until it execs (by vfork, or by
 * clone3 on a stack of its own: exec_spawn.c), and hk-scale waits for that:
 * everything here is a system call on what the parent prepared
 * (the user's groups were resolved before, the environment built), with
 * writes only to sw, which the parent no longer reads.  A fork copied
 * hk-scale's page tables first, 0.8 ms of every cold start, and the child
 * then waited for the CPU behind its parent: the exec came 1.4 to 2.2 ms
 * after the wake reached hk-scale, 0.3 to 0.65 ms with vfork (10 starts
 * of a Python function each).
 */
static void
child(struct spawn *sw)
{
	const struct service_spec *sp = sw->sp;
	ssize_t n;

	if (sw->cg[0] != -1 && !sw->cg_born && write(sw->cg[0], "0", 1) != 1)
		dprintf(2, "join its cgroup: %s\n", strerror(errno));
	else if (child_fds(sw) == -1)
		dprintf(2, "set up: %s\n", strerror(errno));
	else if (exec_drop(&sw->user, sw->switch_user) == -1)
		;
	else if (sp->directory != NULL && chdir(sp->directory) == -1)
		dprintf(2, "chdir %s: %s\n", sp->directory, strerror(errno));
	else {
		execvpe(sp->command[0], sp->command, sw->env);
		dprintf(2, "exec %s: %s\n", sp->command[0], strerror(errno));
	}
	n = write(sw->execw, "x", 1);
	(void)n;
	_exit(127);
}

/*
 * Under cgroup2, the child is made in its cgroup (clone3's
 * CLONE_INTO_CGROUP, Linux 5.7): a migration after the fork would wait
 * for an RCU grace period of the kernel (exec_freezer.c).  It shares our
 * memory as by vfork (exec_spawn.c); where that cannot be, it gets a copy,
 * and the parent waits for the exec all the same (CLONE_VFORK).  -1
 * where neither can be: vfork then, and the child joins by cgroup.procs.
 */
static void
child_vm(void *sw)
{
	child(sw);
}

static pid_t
spawn_into(struct spawn *sw)
{
	struct clone_args ca;
	pid_t pid;

	if (sw->cg[1] == -1)		/* no cgroup2, or clone3 refused */
		return -1;
	sw->cg_born = 1;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_INTO_CGROUP;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (uint64_t)sw->cg[1];
	if ((pid = spawn_vm(&ca, child_vm, sw)) == -1 && errno == ENOSYS) {
		ca.flags |= CLONE_VFORK;
		if ((pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca))) == 0)
			child(sw);
	}
	if (pid == -1)
		sw->cg_born = 0;
	return pid;
}

static void
cg_close(struct spawn *sw)
{
	if (sw->cg[0] != -1)
		close(sw->cg[0]);
	if (sw->cg[1] != -1)
		close(sw->cg[1]);
	sw->cg[0] = sw->cg[1] = -1;
}

/*
 * start_from = "python-template": forked from the template of its
 * interpreter and user (exec_template.c), in its cgroup before it runs.
 * 1: asked, the answer comes to forked(); 0: a bare start; -1 with err.
 */
static int
from_template(struct inst *in, struct spawn *sw, char *err, size_t errlen)
{
	struct exec_inst *x = in->priv;
	const struct service_spec *sp = sw->sp;

	if (!sp->serverless || sp->policy.start_from != START_FROM_PYTHON ||
	    !spec_python_command(sp->command, sp->ncommand))
		return 0;
	/* the instance puts its own pid there */
	if (sw->listen_pid != NULL)
		strlcpy(sw->listen_pid, "LISTEN_PID=0", 32);
	return template_spawn(in->sc, sp, &sw->user, sw->switch_user,
	    sw->env, sw->outw, sw->execw, sw->lfd, sw->cg[0], forked, in,
	    &x->wait, err, errlen);
}

/*
 * start_from = "node-spare": a spare Node process (exec_node_spare.c)
 * becomes the instance, in its cgroup before it runs, its output on outr.
 * Its pid, or 0: a bare start.
 */
static pid_t
from_spare(struct inst *in, struct spawn *sw, int outr)
{
	pid_t pid;

	if (sw->sp->policy.start_from != START_FROM_NODE)
		return 0;
	if (sw->listen_pid != NULL)	/* the spare puts its own pid there */
		strlcpy(sw->listen_pid, "LISTEN_PID=0", 32);
	if ((pid = spare_spawn(in->sc, sw->sp, &sw->user, sw->switch_user,
	    sw->env, outr, sw->lfd, sw->cg[0])) > 0)
		log_info("service=%s: pid %ld from the node spare", in->id,
		    (long)pid);
	return pid;
}

/* Its pid and pipes watched, as a child of ours. */
static void
watch_child(struct inst *in, pid_t pid)
{
	struct exec_inst *x = in->priv;

	x->pid = pid;
	snprintf(in->what, sizeof(in->what), "pid %ld", (long)pid);
	output_open(&x->out, in);
	fcntl(x->outfd, F_SETFL, O_NONBLOCK);
	fcntl(x->execfd, F_SETFL, O_NONBLOCK);
	if (loop_add_fd(in->sc->loop, x->outfd, LOOP_READ, out_read,
	    in) == -1 || loop_add_fd(in->sc->loop, x->execfd, LOOP_READ,
	    exec_read, in) == -1)
		log_warn("service=%s: unable to watch pid %ld", in->id,
		    (long)pid);
	if (proc_starttime(pid, &x->pid_start) == -1)	/* gone already */
		log_debug("service=%s: no start time for pid %ld", in->id,
		    (long)pid);
}

/*
 * The template's answer (exec_template.c): the instance's pid, in its
 * cgroup and running; or why it failed (stopped meanwhile: killed
 * before it ran).
 */
static void
forked(void *arg, pid_t pid, const char *err)
{
	struct inst *in = arg;
	struct exec_inst *x = in->priv;

	if (err != NULL) {
		close_fd(in->sc->loop, &x->outfd);
		close_fd(in->sc->loop, &x->execfd);
		if (in->stopping)	/* else its failure says why */
			log_info("service=%s: revision %lld from the python "
			    "template: %s", in->id, (long long)in->revision,
			    err);
		backend_failed(in, err);
		return;
	}
	watch_child(in, pid);
	log_info("service=%s: started %s revision %lld at %s as %s from the "
	    "python template", in->id, in->what, (long long)in->revision,
	    in->endpoint, x->user);
	backend_started(in);
}

static int
fork_child(struct inst *in, struct spawn *sw, char *err, size_t errlen)
{
	struct exec_inst *x = in->priv;
	int outp[2], execp[2], asked;
	pid_t pid = -1;

	if ((sw->env = command_env(sw->sp, in, &sw->user,
	    &sw->listen_pid)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (secrets_env(in, sw->env, err, errlen) == -1) {
		command_env_free(sw->env);
		return -1;
	}
	if (pipe2(outp, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		command_env_free(sw->env);
		return -1;
	}
	if (pipe2(execp, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(outp[0]);
		close(outp[1]);
		command_env_free(sw->env);
		return -1;
	}
	sw->outw = outp[1];
	sw->execw = execp[1];
	if ((asked = from_template(in, sw, err, errlen)) == 0 &&
	    (pid = from_spare(in, sw, outp[0])) == 0 &&
	    (pid = spawn_into(sw)) == -1 && (pid = vfork()) == 0)
		child(sw);
	command_env_free(sw->env);
	close(outp[1]);
	close(execp[1]);
	x->outfd = outp[0];
	x->execfd = execp[0];
	if (asked == -1)
		return -1;
	if (asked == 1) {	/* its pipes are watched once it has a pid */
		x->template = 1;
		return 1;
	}
	if (pid == -1) {
		snprintf(err, errlen, "vfork: %s", strerror(errno));
		return -1;
	}
	watch_child(in, pid);
	return 0;
}

/* The end: the templates, then the cgroups. */
static void
exec_teardown(struct scale *sc)
{
	pool_shutdown(sc);
	freezer_shutdown(sc);
}

/*
 * Starts the service's current revision: reported at once, started with
 * the child forked, or failed with the reason.
 */
static void
exec_start(struct inst *in)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	char err[SCALE_REASON_MAX];
	struct exec_inst *x;
	struct spawn sw;
	int asked;

	memset(&sw, 0, sizeof(sw));
	sw.sp = sp;
	sw.lfd = sw.cg[0] = sw.cg[1] = -1;
	if (sp->command == NULL || sp->ncommand == 0) {
		backend_failed(in, "no command to run (exec backend)");
		return;
	}
	if (command_user(in->sc, sp, &sw.user, &sw.switch_user, err,
	    sizeof(err)) == -1) {
		backend_failed(in, err);
		return;
	}
	if (xnew(in) == NULL) {
		backend_failed(in, "out of memory");
		return;
	}
	in->uid = sw.user.uid;
	x = in->priv;
	if (listener(in, sp, &sw.lfd, err, sizeof(err)) == -1)
		goto fail;
	if (sp->readiness == READY_NOTIFY &&
	    probe_notify_open(in, err, sizeof(err)) == -1)
		goto fail;
	if (!sp->listen_unix)
		snprintf(in->endpoint, sizeof(in->endpoint), "127.0.0.1:%d",
		    in->port);
	if (freezer_make(in->sc, x->cg, sizeof(x->cg), sw.cg, err,
	    sizeof(err)) == -1 || (asked = fork_child(in, &sw, err,
	    sizeof(err))) == -1)
		goto fail;
	if (sw.lfd != -1 && x->xport == 0)
		close(sw.lfd);
	cg_close(&sw);
	if (asked == 1) {	/* forked() follows */
		strlcpy(x->user, sw.user.name, sizeof(x->user));
		log_debug("service=%s: revision %lld asked of the python "
		    "template as %s", in->id, (long long)in->revision,
		    sw.user.name);
		return;
	}
	log_info("service=%s: started %s revision %lld at %s as %s",
	    in->id, in->what, (long long)in->revision, in->endpoint,
	    sw.user.name);
	backend_started(in);
	return;
fail:
	if (sw.lfd != -1 && x->xport == 0)
		close(sw.lfd);
	cg_close(&sw);
	unixlisten_remove(in);
	backend_failed(in, err);
}

/*
 * A previous hk-scale's instance: alive if its pid still runs with the
 * start time of the row, and leads its group; then watched through its
 * pidfd.  One that cannot be watched is killed.
 */
static void
exec_adopt(struct inst *in, const struct store_instance *r)
{
	struct exec_inst *x;
	pid_t pid = (pid_t)r->pid;
	int64_t start;
	int pidfd = -1;

	if (r->pid <= 0) {	/* a failed start: nothing runs */
		backend_adopted(in, 0);
		return;
	}
	if (proc_starttime(pid, &start) == -1 || start != r->pid_start) {
		log_info("service=%s: pid %lld of an earlier run is gone",
		    in->id, (long long)r->pid);
		backend_adopted(in, 0);
		return;
	}
	if (getpgid(pid) != pid ||
	    (pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1 ||
	    (x = xnew(in)) == NULL) {
		log_warn("service=%s: unable to adopt pid %lld: killing it",
		    in->id, (long long)r->pid);
		if (pidfd != -1)
			close(pidfd);
		kill(pid, SIGKILL);
		backend_adopted(in, 0);
		return;
	}
	x->adopted = 1;
	x->pidfd = pidfd;
	x->pid = pid;
	x->pid_start = r->pid_start;
	freezer_find(in->sc, pid, x->cg, sizeof(x->cg));
	snprintf(in->what, sizeof(in->what), "pid %ld", (long)pid);
	adopt_listener(in, pidfd);
	adopt_frozen_as_row(in, r->state);
	if (loop_add_fd(in->sc->loop, pidfd, LOOP_READ, pidfd_read, in) == -1)
		log_warn("service=%s: unable to watch pid %ld", in->id,
		    (long)pid);
	backend_adopted(in, 1);
}

/*
 * A replica of a service whose replicas share a socket holds it as fd 3:
 * the socket is known again (exec_listen.c) for those started later.
 */
static void
adopt_listener(struct inst *in, int pidfd)
{
	struct exec_inst *x = in->priv;
	struct service *s = service_find(in->sc, in->id);

	if (s == NULL || !command_shares_port(&s->def.spec) ||
	    in->port != s->def.spec.port)
		return;
	if (xlisten_adopt(in, in->port, pidfd) == 0)
		x->xport = in->port;
}

/*
 * The row says what the instance is: an earlier run records a freeze
 * once it is done and a thaw SCALE_RECORD_MS after it, and may have died
 * between.  Frozen again, or thawed, to match.
 */
static void
adopt_frozen_as_row(struct inst *in, const char *state)
{
	struct exec_inst *x = in->priv;
	int freeze = strcmp(state, "suspended") == 0;

	if (!freeze && strcmp(state, "running") != 0)
		return;
	in->frozen = freeze;	/* a stop thaws it after its SIGTERM */
	if (x->cg[0] != '\0')
		freezer_set(x->cg, freeze);
	else
		signal_group(in, freeze ? SIGSTOP : SIGCONT);
}

static void
out_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	struct exec_inst *x = in->priv;

	(void)mask;
	if (output_read(&x->out, in->id, fd))
		close_fd(l, &x->outfd);
}

/*
 * Ready: the instance's output goes on through a relay of its own, which
 * outlives us; the reason of a later exit is then its status alone.  If
 * the fork fails, we keep reading the pipe ourselves.  The relay is our
 * child (inst_reap() reaps it); after our death, whoever reaps orphans.
 */
static void
exec_handover(struct inst *in)
{
	struct exec_inst *x = in->priv;
	pid_t pid;

	if (x->outfd == -1)
		return;
	if ((pid = output_relay(&x->out, in->id, x->outfd)) == -1) {
		log_warn("service=%s: unable to start an output relay: "
		    "hk-scale keeps reading", in->id);
		return;
	}
	log_debug("service=%s: output relay pid %ld", in->id, (long)pid);
	close_fd(in->sc->loop, &x->outfd);
	x->out.linelen = 0;
	x->out.last[0] = '\0';
}

/* EOF: the exec happened.  A byte: it failed (the child said why). */
static void
exec_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	struct exec_inst *x = in->priv;
	char c;
	ssize_t n;

	(void)mask;
	n = read(fd, &c, 1);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	close_fd(l, &x->execfd);
	if (n == 1)
		return;		/* the exit follows, with the reason printed */
	if (in->svc != NULL && inst_def(in)->spec.readiness == READY_SOCKET)
		backend_ready(in);
}

static void
pidfd_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	struct exec_inst *x = in->priv;

	(void)fd;
	(void)mask;
	close_fd(l, &x->pidfd);
	exited(in, -1);
}

/* A child exited: ours if it is the instance's leader (not adopted). */
static int
exec_reap(struct inst *in, pid_t pid, int status)
{
	struct exec_inst *x = in->priv;

	if (x == NULL || x->adopted || x->pid != pid)
		return 0;
	exited(in, status);
	return 1;
}

/* The leader is gone: what is left of its group goes too. */
static void
exited(struct inst *in, int status)
{
	struct exec_inst *x = in->priv;
	struct loop *l = in->sc->loop;

	output_drain(&x->out, in->id, x->outfd);
	close_fd(l, &x->outfd);
	close_fd(l, &x->execfd);
	if (x->pid > 0)
		kill(-x->pid, SIGKILL);
	cg_end(in);
	unixlisten_remove(in);
	backend_exited(in, status, x->out.last);
}

/* SIGTERM to the process group (inst_stop() keeps the grace period). */
static void
exec_stop(struct inst *in)
{
	struct exec_inst *x = in->priv;

	if (x != NULL && x->wait != NULL)	/* asked of a template */
		template_refuse(x->wait);
	if (x == NULL || x->pid <= 0)	/* never kill(0, ...) */
		return;
	if (kill(-x->pid, SIGTERM) == -1 && errno != ESRCH)
		log_warn("service=%s: kill %ld", in->id, (long)x->pid);
	/* Frozen, it would keep the SIGTERM pending until killed. */
	if (!(in->frozen || in->freezing))
		return;
	if (x->cg[0] != '\0')
		freezer_set(x->cg, 0);
	else if (kill(-x->pid, SIGCONT) == -1 && errno != ESRCH)
		log_warn("service=%s: kill %ld", in->id, (long)x->pid);
}

/*
 * idle_action = "suspend": the instance's cgroup frozen whole
 * (exec_freezer.c); without one, SIGSTOP to the process group, which the
 * command leads (setsid() before its exec), and a process that left the
 * group (a daemon that made its own session) is not frozen: hk-scale(8)
 * says so.  Neither can be caught or ignored.
 */
static void
exec_freeze(struct inst *in)
{
	struct exec_inst *x = in->priv;

	if (x != NULL && x->cg[0] != '\0')
		backend_frozen(in, freezer_set(x->cg, 1));
	else
		backend_frozen(in, signal_group(in, SIGSTOP));
}

/*
 * Thawed is reported first, SIGCONT sent after: the "ready" is out before
 * the thawed process takes the CPU (it would run before hk-scale could
 * say it), and its listening socket queues the gateway's connection
 * meanwhile.  Signal 0 first: a group that is gone is a failed thaw.
 */
static void
exec_thaw(struct inst *in)
{
	struct exec_inst *x = in->priv;
	const char *why;
	pid_t pgid;

	if ((why = signal_group(in, 0)) != NULL) {
		backend_thawed(in, why);
		return;
	}
	/* cgroup v1 holds a kill until the thaw: the leader would end then */
	if (x->cg[0] != '\0' && freezer_cgroup1() &&
	    proc_kill_pending(x->pid) == 1) {
		backend_thawed(in, "killed while frozen");
		freezer_set(x->cg, 0);
		return;
	}
	pgid = x->pid;
	backend_thawed(in, NULL);
	if (x->cg[0] != '\0') {
		if ((why = freezer_set(x->cg, 0)) != NULL)
			log_warnx("service=%s: unable to thaw %s: %s", in->id,
			    x->cg, why);
	} else if (kill(-pgid, SIGCONT) == -1 && errno != ESRCH)
		log_warn("service=%s: kill -CONT -%ld", in->id, (long)pgid);
}

/* sig to in's process group: NULL, or why it could not be sent. */
static const char *
signal_group(struct inst *in, int sig)
{
	struct exec_inst *x = in->priv;

	if (x == NULL || x->pid <= 0)	/* never kill(0, ...) */
		return "no process";
	if (kill(-x->pid, sig) == -1)
		return strerror(errno);
	return NULL;
}

static void
exec_kill(struct inst *in)
{
	struct exec_inst *x = in->priv;

	if (x != NULL && x->wait != NULL)	/* asked of a template */
		template_refuse(x->wait);
	if (x == NULL || x->pid <= 0)	/* never kill(0, ...) */
		return;
	if (kill(-x->pid, SIGKILL) == -1 && errno != ESRCH)
		log_warn("service=%s: kill %ld", in->id, (long)x->pid);
	cg_end(in);
}

/* Whatever is left in the instance's cgroup is killed (freezer_end()). */
static void
cg_end(struct inst *in)
{
	struct exec_inst *x = in->priv;

	if (x != NULL && x->cg[0] != '\0')
		freezer_end(x->cg);
}

/* Cgroups that earlier runs left empty, and their instances' sockets. */
static void
exec_sweep(struct scale *sc)
{
	freezer_sweep(sc);
	unixlisten_sweep(sc);
}

static void
exec_row(const struct inst *in, struct store_instance *r)
{
	const struct exec_inst *x = in->priv;

	if (x == NULL)
		return;
	r->pid = x->pid;
	r->pid_start = x->pid_start;
}

static int
exec_release(struct inst *in)
{
	struct exec_inst *x = in->priv;
	struct loop *l = in->sc->loop;

	if (x == NULL)
		return 0;
	template_cancel(x->wait);
	close_fd(l, &x->outfd);
	close_fd(l, &x->execfd);
	close_fd(l, &x->pidfd);
	output_close(&x->out);
	if (x->cg[0] != '\0')
		freezer_remove(in->sc, x->cg);
	if (x->xport != 0)
		xlisten_drop(in, x->xport);
	free(x);
	in->priv = NULL;
	return 0;
}
