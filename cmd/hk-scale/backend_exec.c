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
 * lines to our stderr until EOF, so that the output outlives a killed
 * hk-scale, as s6's logger outlives its daemon.  An adopted instance (left
 * running by an earlier hk-scale) is not our child: its exit is seen
 * through a pidfd, and its output goes on through the earlier relay.
 *
 * The child runs as its user (inst_user()): groups, gid, uid, none of our
 * capabilities, and no_new_privs, before it changes directory and execs.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

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

#include "log.h"
#include "proc.h"
#include "scale.h"

#define EXEC_DRAIN_MAX	65536	/* bytes read from a pipe at exit */
#define EXEC_ENV_EXTRA	11	/* HOME USER LOGNAME PORT HOST LISTEN_*
				   NOTIFY_SOCKET NULL */

extern char **environ;

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
};

static struct inst *inst_new(struct scale *, const char *);
static int	bind_port(struct inst *, int, int *, char *, size_t);
static int	inst_user(struct scale *, const struct service_spec *,
		    struct spawn *, char *, size_t);
static char	**build_env(const struct service_spec *, const struct inst *,
		    const struct user_ids *, char **);
static int	env_spec_sets(const struct service_spec *, const char *,
		    size_t);
static int	env_kept(const char *, const struct service_spec *);
static int	env_reserved(const char *);
static void	free_env(char **);
static int	child_fds(struct spawn *);
static int	child_drop(const struct spawn *);
static void	child(struct spawn *) __attribute__((noreturn));
static int	fork_child(struct inst *, struct spawn *);
static void	out_read(struct loop *, int, int, void *);
static void	out_feed(struct inst *, const char *, size_t);
static void	out_line(struct inst *);
static void	out_drain(struct inst *);
static void	relay(struct inst *) __attribute__((noreturn));
static void	exec_read(struct loop *, int, int, void *);
static void	pidfd_read(struct loop *, int, int, void *);
static void	kill_fire(struct loop *, void *);
static void	inst_exited(struct inst *, int);
static void	close_fd(struct loop *, int *);

static struct inst *
inst_new(struct scale *sc, const char *id)
{
	struct inst *in;

	if ((in = calloc(1, sizeof(*in))) == NULL)
		return NULL;
	in->sc = sc;
	strlcpy(in->id, id, sizeof(in->id));
	in->pidfd = in->outfd = in->execfd = in->notifyfd = in->probefd = -1;
	loop_timer_init(&in->kill_timer, kill_fire, in);
	TAILQ_INSERT_TAIL(&sc->insts, in, entry);
	return in;
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
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, on = 1;

	if (lfd == NULL && port != 0) {
		in->port = port;
		return 0;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1 ||
	    (lfd != NULL && listen(fd, 128) == -1)) {
		snprintf(err, errlen, "bind 127.0.0.1:%d: %s", port,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	in->port = ntohs(sin.sin_port);
	if (lfd != NULL)
		*lfd = fd;
	else
		close(fd);
	return 0;
}

/*
 * Whom the instance runs as: its service's user, else the operator's
 * service_user, else nobody when we may switch users, else our own user
 * (an unprivileged hk-scale, a developer's).  The store may hold a spec
 * applied under another configuration: a user that is gone, or uid 0
 * named by a service without allow_root_services, fails the start.
 */
static int
inst_user(struct scale *sc, const struct service_spec *sp, struct spawn *sw,
    char *err, size_t errlen)
{
	const char *name = sp->user;
	char why[USER_ERR_LEN];

	if (name == NULL && sc->cfg.service_user[0] != '\0')
		name = sc->cfg.service_user;
	if (name == NULL && !sc->can_switch) {
		sw->switch_user = 0;
		if (user_self(&sw->user, why, sizeof(why)) == 0)
			return 0;
		snprintf(err, errlen, "user: %s", why);
		return -1;
	}
	if (name == NULL)
		name = "nobody";
	if (user_resolve(name, &sw->user, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "user: %s", why);
		return -1;
	}
	if (sp->user != NULL && sw->user.uid == 0 &&
	    !sc->cfg.allow_root_services) {
		snprintf(err, errlen, "user: \"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", name);
		return -1;
	}
	sw->switch_user = sc->can_switch;
	if (!sc->can_switch && (sw->user.uid != geteuid() ||
	    sw->user.gid != getegid())) {
		snprintf(err, errlen, "user: unable to run as \"%s\": "
		    "hk-scale has neither root nor CAP_SETUID and CAP_SETGID",
		    name);
		return -1;
	}
	return 0;
}

/* Whether the service's environment table sets the variable name. */
static int
env_spec_sets(const struct service_spec *sp, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sp->nenv; i++)
		if (strlen(sp->env[i].name) == len &&
		    strncmp(name, sp->env[i].name, len) == 0)
			return 1;
	return 0;
}

/*
 * Variables of our own environment the child gets: a clean one, as a
 * supervisor gives, so that a service runs the same whoever started
 * hk-scale (a shell's NODE_OPTIONS or NODE_EXTRA_CA_CERTS would otherwise
 * change what a Node function does, and its start time: the latter alone
 * added 70 ms to every cold start here).  Anything else a service needs
 * goes in its environment table, which also overrides these.  HOME, USER
 * and LOGNAME are the instance's user's, not ours.
 */
static int
env_kept(const char *e, const struct service_spec *sp)
{
	static const char *const keep[] = {
		"PATH=", "LANG=", "LANGUAGE=", "LC_", "TZ=", "TMPDIR=",
	};
	const char *eq = strchr(e, '=');
	size_t i;

	if (eq == NULL || env_spec_sets(sp, e, (size_t)(eq - e)))
		return 0;
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (strncmp(e, keep[i], strlen(keep[i])) == 0)
			return 1;
	return 0;
}

/* Names hk sets itself: the spec cannot override them. */
static int
env_reserved(const char *name)
{
	static const char *const mine[] = {
		"PORT", "HOST", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
		"NOTIFY_SOCKET",
	};
	size_t i;

	for (i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (strcmp(name, mine[i]) == 0)
			return 1;
	return 0;
}

/*
 * Ours as env_kept() says and the user's HOME, USER and LOGNAME (unless
 * the spec sets them), then the spec's, then hk's own variables.
 */
static char **
build_env(const struct service_spec *sp, const struct inst *in,
    const struct user_ids *u, char **listen_pid)
{
	static const char *const who[] = { "HOME", "USER", "LOGNAME" };
	char **env;
	size_t n = 0, i, k = 0;
	int bad = 0;

	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + sp->nenv + EXEC_ENV_EXTRA, sizeof(*env))) ==
	    NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (env_kept(environ[i], sp) &&
		    (env[k++] = strdup(environ[i])) == NULL)
			bad = 1;
	for (i = 0; i < 3; i++)
		if (!env_spec_sets(sp, who[i], strlen(who[i])) &&
		    asprintf(&env[k++], "%s=%s", who[i], i == 0 ? u->home :
		    u->name) == -1)
			bad = 1;
	for (i = 0; i < sp->nenv; i++)
		if (!env_reserved(sp->env[i].name) && asprintf(&env[k++],
		    "%s=%s", sp->env[i].name, sp->env[i].value) == -1)
			bad = 1;
	if (asprintf(&env[k++], "PORT=%d", in->port) == -1 ||
	    (env[k++] = strdup("HOST=127.0.0.1")) == NULL)
		bad = 1;
	*listen_pid = NULL;
	if (sp->readiness == READY_SOCKET) {
		if ((env[k++] = strdup("LISTEN_FDS=1")) == NULL ||
		    (*listen_pid = env[k++] = calloc(1, 32)) == NULL)
			bad = 1;
	} else if (sp->readiness == READY_NOTIFY) {
		if (asprintf(&env[k++], "NOTIFY_SOCKET=%s",
		    in->notify_path) == -1)
			bad = 1;
	}
	if (bad) {
		free_env(env);
		return NULL;
	}
	return env;
}

static void
free_env(char **env)
{
	size_t i;

	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
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
static int
child_drop(const struct spawn *sw)
{
	const struct user_ids *u = &sw->user;

	if (sw->switch_user) {
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
 * Between fork and exec.  A failure is printed for the log, and told to
 * the parent by one byte on execw: the exit that follows gives the reason.
 */
static void
child(struct spawn *sw)
{
	const struct service_spec *sp = sw->sp;
	ssize_t n;

	if (child_fds(sw) == -1)
		dprintf(2, "set up: %s\n", strerror(errno));
	else if (child_drop(sw) == -1)
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

static int
fork_child(struct inst *in, struct spawn *sw)
{
	int outp[2], execp[2];
	pid_t pid;

	if ((sw->env = build_env(sw->sp, in, &sw->user, &sw->listen_pid)) ==
	    NULL)
		return -1;
	if (pipe2(outp, O_CLOEXEC) == -1) {
		free_env(sw->env);
		return -1;
	}
	if (pipe2(execp, O_CLOEXEC) == -1) {
		close(outp[0]);
		close(outp[1]);
		free_env(sw->env);
		return -1;
	}
	sw->outw = outp[1];
	sw->execw = execp[1];
	if ((pid = fork()) == 0)
		child(sw);
	free_env(sw->env);
	close(outp[1]);
	close(execp[1]);
	in->outfd = outp[0];
	in->execfd = execp[0];
	if (pid == -1)
		return -1;
	in->pid = pid;
	fcntl(in->outfd, F_SETFL, O_NONBLOCK);
	fcntl(in->execfd, F_SETFL, O_NONBLOCK);
	if (loop_add_fd(in->sc->loop, in->outfd, LOOP_READ, out_read,
	    in) == -1 || loop_add_fd(in->sc->loop, in->execfd, LOOP_READ,
	    exec_read, in) == -1)
		log_warn("service=%s: unable to watch pid %ld", in->id,
		    (long)pid);
	if (proc_starttime(pid, &in->pid_start) == -1)	/* gone already */
		log_debug("service=%s: no start time for pid %ld", in->id,
		    (long)pid);
	return 0;
}

/* Starts the service's current revision; NULL with a reason. */
struct inst *
exec_start(struct service *s, char *err, size_t errlen)
{
	const struct service_spec *sp = &s->def.spec;
	struct spawn sw;
	struct inst *in;

	memset(&sw, 0, sizeof(sw));
	sw.sp = sp;
	sw.lfd = -1;
	if (sp->command == NULL || sp->ncommand == 0) {
		snprintf(err, errlen, "no command to run (exec backend)");
		return NULL;
	}
	if (inst_user(s->sc, sp, &sw, err, errlen) == -1)
		return NULL;
	if ((in = inst_new(s->sc, s->def.id)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	in->svc = s;
	in->revision = s->def.revision;
	in->uid = sw.user.uid;
	if (bind_port(in, sp->port, sp->readiness == READY_SOCKET ? &sw.lfd :
	    NULL, err, errlen) == -1)
		goto fail;
	if (sp->readiness == READY_NOTIFY &&
	    probe_notify_open(in, err, errlen) == -1)
		goto fail;
	snprintf(in->endpoint, sizeof(in->endpoint), "127.0.0.1:%d",
	    in->port);
	in->started_at = store_now_ms();
	in->start_mono = loop_now_ms(s->sc->loop);
	if (fork_child(in, &sw) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (sw.lfd != -1)
		close(sw.lfd);
	log_info("service=%s: started pid %ld revision %lld at %s as %s",
	    in->id, (long)in->pid, (long long)in->revision, in->endpoint,
	    sw.user.name);
	return in;
fail:
	if (sw.lfd != -1)
		close(sw.lfd);
	in->svc = NULL;
	exec_free(in);
	return NULL;
}

/* A previous hk-scale's instance, still alive: watched through its pidfd. */
struct inst *
exec_adopt(struct scale *sc, const struct store_instance *row, int pidfd)
{
	struct inst *in;
	char id[SCALE_ID_MAX];
	const char *colon;

	snprintf(id, sizeof(id), "%s/%s", row->app, row->service);
	if ((in = inst_new(sc, id)) == NULL)
		return NULL;
	in->adopted = 1;
	in->pidfd = pidfd;
	in->pid = (pid_t)row->pid;
	in->pid_start = row->pid_start;
	in->revision = row->revision;
	in->started_at = row->started_at;
	in->ready_at = row->ready_at;
	in->start_mono = loop_now_ms(sc->loop);
	strlcpy(in->endpoint, row->endpoint, sizeof(in->endpoint));
	if ((colon = strrchr(row->endpoint, ':')) != NULL)
		in->port = (int)strtonum(colon + 1, 1, 65535, NULL);
	if (loop_add_fd(sc->loop, pidfd, LOOP_READ, pidfd_read, in) == -1)
		log_warn("service=%s: unable to watch pid %ld", id,
		    (long)in->pid);
	return in;
}

static void
out_line(struct inst *in)
{
	size_t i;

	in->line[in->linelen] = '\0';
	if (in->linelen > 0 && in->line[in->linelen - 1] == '\r')
		in->line[--in->linelen] = '\0';
	for (i = 0; i < in->linelen; i++)
		if ((unsigned char)in->line[i] < 0x20 || in->line[i] == 0x7f)
			in->line[i] = '?';
	log_info("service=%s: %s", in->id, in->line);
	if (in->linelen > 0)
		memcpy(in->last, in->line, in->linelen + 1);
	in->linelen = 0;
}

/* Lines longer than SCALE_LINE_MAX are cut into pieces of that size. */
static void
out_feed(struct inst *in, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			out_line(in);
			continue;
		}
		in->line[in->linelen++] = buf[i];
		if (in->linelen == SCALE_LINE_MAX)
			out_line(in);
	}
}

static void
out_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	char buf[4096];
	ssize_t n;

	(void)mask;
	n = read(fd, buf, sizeof(buf));
	if (n > 0) {
		out_feed(in, buf, (size_t)n);
		return;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (in->linelen > 0)
		out_line(in);
	close_fd(l, &in->outfd);
}

/* What the process printed before it exited (bounded: others may write). */
static void
out_drain(struct inst *in)
{
	char buf[4096];
	size_t total = 0;
	ssize_t n;

	while (in->outfd != -1 && total < EXEC_DRAIN_MAX &&
	    (n = read(in->outfd, buf, sizeof(buf))) > 0) {
		out_feed(in, buf, (size_t)n);
		total += (size_t)n;
	}
	if (in->linelen > 0)
		out_line(in);
}

/*
 * The output relay, in a fork of ours: the instance's pipe as fd 0, our
 * stderr as 1 and 2, nothing else.  A session of its own keeps it out of
 * the instance's group and away from our terminal; SIGPIPE stays ignored,
 * so that a broken log loses lines but never breaks the instance's
 * output.  It copies the lines as we did, until EOF: every writer (the
 * instance and whatever it left holding its stdout) is gone.
 */
static void
relay(struct inst *in)
{
	sigset_t none;
	char buf[4096];
	ssize_t n;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	setsid();
	prctl(PR_SET_NAME, "hk-scale-relay");
	if (dup2(in->outfd, 0) == -1 || dup2(2, 1) == -1)
		_exit(EX_OSERR);
	syscall(SYS_close_range, 3, ~0U, 0);
	fcntl(0, F_SETFL, 0);
	for (;;) {
		if ((n = read(0, buf, sizeof(buf))) > 0)
			out_feed(in, buf, (size_t)n);
		else if (n == 0 || errno != EINTR)
			break;
	}
	if (in->linelen > 0)
		out_line(in);
	_exit(0);
}

/*
 * Ready: the instance's output goes on through a relay of its own, which
 * outlives us; the reason of a later exit is then its status alone.  If
 * the fork fails, we keep reading the pipe ourselves.  The relay is our
 * child (exec_reap() reaps it); after our death, whoever reaps orphans.
 */
void
exec_relay(struct inst *in)
{
	pid_t pid;

	if (in->outfd == -1)
		return;
	if ((pid = fork()) == -1) {
		log_warn("service=%s: unable to start an output relay: "
		    "hk-scale keeps reading", in->id);
		return;
	}
	if (pid == 0)
		relay(in);
	log_debug("service=%s: output relay pid %ld", in->id, (long)pid);
	close_fd(in->sc->loop, &in->outfd);
	in->linelen = 0;
	in->last[0] = '\0';
}

/* EOF: the exec happened.  A byte: it failed (the child said why). */
static void
exec_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	char c;
	ssize_t n;

	(void)mask;
	n = read(fd, &c, 1);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	close_fd(l, &in->execfd);
	if (n == 1)
		return;		/* the exit follows, with the reason printed */
	if (in->svc != NULL && !in->ready &&
	    in->svc->def.spec.readiness == READY_SOCKET)
		service_inst_ready(in);
}

static void
pidfd_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;

	(void)fd;
	(void)mask;
	close_fd(l, &in->pidfd);
	inst_exited(in, -1);
}

/*
 * SIGCHLD: every child that exited; output relays and strangers (we are a
 * subreaper) too.
 */
void
exec_reap(struct scale *sc)
{
	struct inst *in;
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		TAILQ_FOREACH(in, &sc->insts, entry)
			if (!in->adopted && in->pid == pid)
				break;
		if (in != NULL)
			inst_exited(in, status);
		else
			log_debug("reaped pid %ld", (long)pid);
	}
}

/* The leader is gone: what is left of its group goes too. */
static void
inst_exited(struct inst *in, int status)
{
	struct loop *l = in->sc->loop;

	out_drain(in);
	close_fd(l, &in->outfd);
	close_fd(l, &in->execfd);
	probe_stop(in);
	loop_timer_cancel(l, &in->kill_timer);
	if (in->pid > 0)
		kill(-in->pid, SIGKILL);
	if (in->svc != NULL)
		service_inst_exit(in, status);
	else
		exec_free(in);
}

/* SIGTERM to the process group; SIGKILL when the grace period is over. */
void
exec_stop(struct inst *in)
{
	if (in->stopping)
		return;
	in->stopping = 1;
	probe_stop(in);
	log_info("service=%s: stopping pid %ld", in->id, (long)in->pid);
	if (kill(-in->pid, SIGTERM) == -1 && errno != ESRCH)
		log_warn("service=%s: kill %ld", in->id, (long)in->pid);
	loop_timer_at(in->sc->loop, &in->kill_timer,
	    loop_now_ms(in->sc->loop) + (int64_t)in->sc->grace * 1000);
}

void
exec_kill(struct inst *in)
{
	in->stopping = 1;
	probe_stop(in);
	if (kill(-in->pid, SIGKILL) == -1 && errno != ESRCH)
		log_warn("service=%s: kill %ld", in->id, (long)in->pid);
}

static void
kill_fire(struct loop *l, void *arg)
{
	struct inst *in = arg;

	(void)l;
	log_warnx("service=%s: pid %ld still there after %d s: killing",
	    in->id, (long)in->pid, in->sc->grace);
	exec_kill(in);
}

/* The instance no longer belongs to its service; it is freed at exit. */
void
exec_retire(struct inst *in)
{
	queue_settle(in);
	in->svc = NULL;
	in->in_store = 0;
	exec_stop(in);
}

void
exec_free(struct inst *in)
{
	struct scale *sc = in->sc;

	close_fd(sc->loop, &in->outfd);
	close_fd(sc->loop, &in->execfd);
	close_fd(sc->loop, &in->pidfd);
	probe_stop(in);
	loop_timer_cancel(sc->loop, &in->kill_timer);
	queue_settle(in);
	TAILQ_REMOVE(&sc->insts, in, entry);
	free(in);
	if (sc->stopping && TAILQ_EMPTY(&sc->insts))
		loop_stop(sc->loop);
}
