/*
 * command.c - what every backend that runs a service's command on this
 * host gives it, so that a command runs the same whichever backend
 * starts it (backend_exec.c, backend_s6.c, backend_systemd.c): its port,
 * the user it runs as, its environment, and how the lines of its output
 * reach the service's log (svclog.h), which "hk logs" reads.  Our own
 * stderr is for our messages: a service's line goes there only when its
 * log cannot be written, so that no line is lost without a word.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "log.h"
#include "scale.h"

#define COMMAND_ENV_EXTRA	12	/* HOME USER LOGNAME PORT HOST LISTEN_*
					   NOTIFY_SOCKET CREDENTIALS_DIRECTORY
					   NULL */
#define COMMAND_DRAIN_MAX	65536	/* bytes read from a pipe at exit */

extern char **environ;

static int	env_spec_sets(const struct service_spec *, const char *,
		    size_t);
static int	env_kept(const char *, const struct service_spec *);
static void	relay(struct cmd_output *, const char *, int)
		    __attribute__((noreturn));

/* The spec's port, or one the kernel picks on 127.0.0.1, free just now. */
int
command_port(struct inst *in, int port, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	if (port != 0) {
		in->port = port;
		return 0;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		snprintf(err, errlen, "bind 127.0.0.1:0: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	in->port = ntohs(sin.sin_port);
	return 0;
}

/*
 * Whom the instance runs as: its service's user, else the operator's
 * service_user, else nobody when we may switch users, else our own user
 * (an unprivileged hk-scale, a developer's).  The store may hold a spec
 * applied under another configuration: a user that is gone, or uid 0
 * named by a service without allow_root_services, fails the start.
 * *sw says whether the backend must switch to it.
 */
int
command_user(struct scale *sc, const struct service_spec *sp,
    struct user_ids *u, int *sw, char *err, size_t errlen)
{
	const char *name = sp->user;
	char why[USER_ERR_LEN];

	if (name == NULL && sc->cfg.service_user[0] != '\0')
		name = sc->cfg.service_user;
	if (name == NULL && !sc->can_switch) {
		*sw = 0;
		if (user_self(u, why, sizeof(why)) == 0)
			return 0;
		snprintf(err, errlen, "user: %s", why);
		return -1;
	}
	if (name == NULL)
		name = "nobody";
	if (user_resolve(name, u, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "user: %s", why);
		return -1;
	}
	if (sp->user != NULL && u->uid == 0 &&
	    !sc->cfg.allow_root_services) {
		snprintf(err, errlen, "user: \"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", name);
		return -1;
	}
	*sw = sc->can_switch;
	if (!sc->can_switch && (u->uid != geteuid() ||
	    u->gid != getegid())) {
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
int
command_env_reserved(const char *name)
{
	static const char *const mine[] = {
		"PORT", "HOST", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
		"NOTIFY_SOCKET", "CREDENTIALS_DIRECTORY",
	};
	size_t i;

	for (i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
		if (strcmp(name, mine[i]) == 0)
			return 1;
	return 0;
}

/*
 * Replicas of a fixed port share one listening socket, which hk-scale
 * binds and hands each of them (exec_listen.c): a second bind of the port
 * would fail.  Any number of replicas with port 0 get a port each.
 */
int
command_shares_port(const struct service_spec *sp)
{
	return !sp->serverless && sp->replicas > 1 && sp->port != 0;
}

/* The command is handed a listening socket as fd 3 (LISTEN_FDS). */
int
command_listens(const struct service_spec *sp)
{
	return sp->readiness == READY_SOCKET || command_shares_port(sp) ||
	    sp->listen_unix;
}

/*
 * Ours as env_kept() says and the user's HOME, USER and LOGNAME (unless
 * the spec sets them), then the spec's, then hk's own variables: PORT,
 * HOST (neither with listen = "unix"), and LISTEN_FDS with a LISTEN_PID for the child to fill in
 * (*listen_pid, 32 bytes) or NOTIFY_SOCKET, as readiness asks.  NULL
 * when out of memory.
 */
char **
command_env(const struct service_spec *sp, const struct inst *in,
    const struct user_ids *u, char **listen_pid)
{
	static const char *const who[] = { "HOME", "USER", "LOGNAME" };
	char **env;
	size_t n = 0, i, k = 0;
	int bad = 0;

	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + sp->nenv + sp->nsecrets + COMMAND_ENV_EXTRA,
	    sizeof(*env))) == NULL)
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
		if (!command_env_reserved(sp->env[i].name) && asprintf(&env[k++],
		    "%s=%s", sp->env[i].name, sp->env[i].value) == -1)
			bad = 1;
	if (in->cred_dir[0] != '\0' && asprintf(&env[k++],
	    "CREDENTIALS_DIRECTORY=%s", in->cred_dir) == -1)
		bad = 1;
	/* listen = "unix": a socket and no port, nothing to bind */
	if (!sp->listen_unix && (asprintf(&env[k++], "PORT=%d",
	    in->port) == -1 || (env[k++] = strdup("HOST=127.0.0.1")) == NULL))
		bad = 1;
	*listen_pid = NULL;
	if (command_listens(sp)) {
		if ((env[k++] = strdup("LISTEN_FDS=1")) == NULL ||
		    (*listen_pid = env[k++] = calloc(1, 32)) == NULL)
			bad = 1;
	}
	if (sp->readiness == READY_NOTIFY) {
		if (asprintf(&env[k++], "NOTIFY_SOCKET=%s",
		    in->notify_path) == -1)
			bad = 1;
	}
	if (bad) {
		command_env_free(env);
		return NULL;
	}
	return env;
}

void
command_env_free(char **env)
{
	size_t i;

	/* Wiped: secrets_env() puts values here. */
	for (i = 0; env != NULL && env[i] != NULL; i++) {
		explicit_bzero(env[i], strlen(env[i]));
		free(env[i]);
	}
	free(env);
}

/*
 * The log of in's service, its lines marked with in's revision and name
 * (in->what).  A log that cannot be made is said once; its lines then go
 * to our stderr.
 */
void
output_open(struct cmd_output *o, const struct inst *in)
{
	char app[STORE_NAME_MAX + 1];
	const char *slash = strchr(in->id, '/');

	if (slash == NULL || (size_t)(slash - in->id) >= sizeof(app))
		return;
	memcpy(app, in->id, slash - in->id);
	app[slash - in->id] = '\0';
	if (svclog_open(&o->log, &in->sc->cfg, app, slash + 1, in->revision,
	    in->what) == -1) {
		log_warn("service=%s: unable to open its log: its lines go to "
		    "hk-scale's stderr", in->id);
		o->log.warned = 1;
	}
}

/* The instance has a better name now (its pid, once known). */
void
output_inst(struct cmd_output *o, const char *what)
{
	size_t i;

	strlcpy(o->log.inst, what, sizeof(o->log.inst));
	for (i = 0; o->log.inst[i] != '\0'; i++)
		if (o->log.inst[i] == ' ')
			o->log.inst[i] = ':';
}

void
output_close(struct cmd_output *o)
{
	svclog_close(&o->log);
}

/* A sanitized line into l, else (said once) onto our stderr. */
void
output_write(struct svclog *l, const char *id, const char *line,
    size_t len)
{
	if (svclog_write(l, line, len) == 0)
		return;
	if (l->dir[0] != '\0' && !l->warned) {
		log_warn("service=%s: unable to write its log %s: its lines "
		    "go to hk-scale's stderr", id, l->dir);
		l->warned = 1;
	}
	log_info("service=%s: %.*s", id, (int)len, line);
}

/*
 * One line of output, into the service's log: control characters shown
 * as '?', a CR before the LF dropped.  The last line that was not empty
 * is kept: the reason of a failed start.
 */
void
output_line(struct cmd_output *o, const char *id)
{
	size_t i;

	o->line[o->linelen] = '\0';
	if (o->linelen > 0 && o->line[o->linelen - 1] == '\r')
		o->line[--o->linelen] = '\0';
	for (i = 0; i < o->linelen; i++)
		if ((unsigned char)o->line[i] < 0x20 || o->line[i] == 0x7f)
			o->line[i] = '?';
	output_write(&o->log, id, o->line, o->linelen);
	if (o->linelen > 0)
		memcpy(o->last, o->line, o->linelen + 1);
	o->linelen = 0;
}

/* Lines longer than SCALE_LINE_MAX are cut into pieces of that size. */
void
output_feed(struct cmd_output *o, const char *id, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			output_line(o, id);
			continue;
		}
		o->line[o->linelen++] = buf[i];
		if (o->linelen == SCALE_LINE_MAX)
			output_line(o, id);
	}
}

/*
 * Reads what the non-blocking fd has and logs its lines: 1 once it is at
 * its end (or broken), the line it did not end logged; else 0.
 */
int
output_read(struct cmd_output *o, const char *id, int fd)
{
	char buf[4096];
	ssize_t n;

	n = read(fd, buf, sizeof(buf));
	if (n > 0) {
		output_feed(o, id, buf, (size_t)n);
		return 0;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (o->linelen > 0)
		output_line(o, id);
	return 1;
}

/*
 * What is left to read of a non-blocking fd once the process exited
 * (bounded: others may write), and the line it did not end.
 */
void
output_drain(struct cmd_output *o, const char *id, int fd)
{
	char buf[4096];
	size_t total = 0;
	ssize_t n;

	while (fd != -1 && total < COMMAND_DRAIN_MAX &&
	    (n = read(fd, buf, sizeof(buf))) > 0) {
		output_feed(o, id, buf, (size_t)n);
		total += (size_t)n;
	}
	if (o->linelen > 0)
		output_line(o, id);
}

/*
 * The output relay, in a fork of ours: the instance's pipe as fd 0, our
 * stderr as 1 and 2, and the service's log, opened again.  A session of its own keeps it out of
 * the instance's group and away from our terminal; SIGPIPE stays ignored,
 * so that a broken log loses lines but never breaks the instance's
 * output.  It writes the lines as we did, until EOF: every writer (the
 * instance and whatever it left holding its stdout) is gone.
 */
static void
relay(struct cmd_output *o, const char *id, int fd)
{
	sigset_t none;
	char buf[4096];
	ssize_t n;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	setsid();
	prctl(PR_SET_NAME, "hk-scale-relay");
	if (dup2(fd, 0) == -1 || dup2(2, 1) == -1)
		_exit(EX_OSERR);
	syscall(SYS_close_range, 3, ~0U, 0);
	svclog_forget_fds(&o->log);	/* reopened on the next line */
	fcntl(0, F_SETFL, 0);
	for (;;) {
		if ((n = read(0, buf, sizeof(buf))) > 0)
			output_feed(o, id, buf, (size_t)n);
		else if (n == 0 || errno != EINTR)
			break;
	}
	if (o->linelen > 0)
		output_line(o, id);
	_exit(0);
}

/*
 * Starts a relay of fd, which outlives us; -1 if the fork failed.  The
 * relay is our child (inst_reap() reaps it); after our death, whoever
 * reaps orphans.  The caller closes fd and forgets the last line.
 */
pid_t
output_relay(struct cmd_output *o, const char *id, int fd)
{
	pid_t pid;

	if ((pid = fork()) == 0)
		relay(o, id, fd);
	return pid;
}
