/*
 * backend_s6.c - the s6 backend: each revision of a service, and each of
 * its replicas (hk.toml(5) replicas, replica.c), is an s6 service
 * directory that hk-scale writes, supervised by the operator's s6-svscan
 * on server.s6_scandir (hakopod.toml(5)).
 *
 * The directory of revision R of APP/SVC is S6_HOME/hk.APP.SVC.R in the
 * scan directory (s6-svscan skips names that start with a dot), and that
 * of its replica N beside the first hk.APP.SVC.R.N (names hold no dot:
 * config_valid_name()), linked into it under its name by s6-svlink -D
 * (supervised, down, with a down file so that no restart of s6-svscan
 * starts it) and removed by s6-svunlink.  It holds:
 *
 *	run		rewritten at each start: standard input /dev/null,
 *			output to the fifo hk-output, its pid (its process
 *			group: s6-supervise makes a session of it) to
 *			hk-pgid, then setpriv(1) to the service's user
 *			(groups, gid, uid, no capabilities, no_new_privs)
 *			and env(1) -i -C to its directory and its clean
 *			environment (command.c's rules), which execs the
 *			command
 *	finish		kills what is left of the process group and exits
 *			125: s6 restarts nothing, hk-scale decides
 *	down, timeout-kill (the grace period), notification-fd (3, for
 *	readiness = "notify"; 4 where fd 3 is the shared socket),
 *	hk-output (a fifo), hk-pgid
 *
 * A wake is s6-svc -u -wu (once up, the probes begin), a stop s6-svc -d
 * and a kill s6-svc -dk; s6-supervise itself kills after timeout-kill.
 * s6's events say the rest, through a child that waits on the service's
 * event fifodir: s6-svwait -D for its end (then the wait status is that
 * of supervise/status), and for readiness = "notify" s6-svwait -U, s6's
 * own readiness (a newline on fd 3), beside READY=1 on NOTIFY_SOCKET.
 * Every s6 tool runs as a child of hk-scale reaped by inst_reap(): the
 * loop never waits on s6.
 *
 * hk-scale reads the fifo until the instance is ready (its last line is
 * the reason of a failed start), then an output relay takes it over, as
 * in the exec backend (command.c).
 *
 * idle_action = "suspend" stops the process group that hk-pgid names
 * (SIGSTOP; SIGCONT thaws it), as the exec backend does: s6-supervise
 * does not see it (it waits for deaths only).  A stop of a frozen
 * instance is s6-svc -d as any other, whose SIGTERM s6-supervise follows
 * with a SIGCONT to the process it runs; hk-scale continues the rest of
 * the group, so that a process that waits for its children on SIGTERM
 * ends too.
 *
 * The directory of a revision stays, down, while its service sleeps or is
 * stopped, so that a wake is one s6-svc; it goes once its service is
 * removed, another revision is ready, or (a replica's) once its service
 * wants fewer replicas.  Replicas of a fixed port share one listening
 * socket, as exec's do, but an s6-supervised process is not our child:
 * s6_listen.c serves the socket on a Unix socket of runtime_dir, and the
 * run script execs hk-listen (cmd/hk-listen) between env(1) and the
 * command, which receives it as fd 3 with LISTEN_FDS; s6's
 * notification-fd moves to 4.  A restarted hk-scale takes the socket back
 * from an adopted replica (adopt_listener()).  A change of replicas
 * alone is a new revision that restarts nothing (replica_rescale()):
 * what runs keeps its directory, named after its first revision, which
 * adoption finds by the row's pid (dir_revision()).  A restarted
 * hk-scale adopts what its rows describe from supervise/status, and
 * stops what no row claims (s6_sweep()): nothing is left serving unseen.
 * Whether a directory's revision is still its service's current one on
 * s6 is backend.c's to say (backend_current()): this file never reads the
 * state machine.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "libexec.h"
#include "scale.h"
#include "xlisten.h"

#define S6_HOME		".hk"	/* in the scan directory */
#define S6_PREFIX	"hk."
#define S6_NAME_MAX	(sizeof(S6_PREFIX) + 2 * STORE_NAME_MAX + 24 + 4)
#define S6_SCANDIR_MAX	80	/* s6_scandir's bound (hakopod.toml(5)) */
#define S6_PATH_MAX	(S6_SCANDIR_MAX + sizeof(S6_HOME) + S6_NAME_MAX + 2)
#define S6_FILE_MAX	(S6_PATH_MAX + 24)	/* a file in it */
#define S6_NOTIFY_FD	"3"
#define S6_NOTIFY_FD_SHARED "4"	/* fd 3 is the shared listening socket */
#define S6_LISTEN_HELPER "hk-listen"
#define S6_STATUS_OLD	35	/* supervise/status, s6 2.11 */
#define S6_STATUS_NEW	43	/* with the pgid, s6 2.12 */
#define S6_WANTUP	0x04	/* its flags */
#define S6_TOOL_MS	10000	/* s6-svlink and s6-svunlink's time limit */

/* The one helper of an instance that its start or removal waits for. */
enum s6_step {
	S6_NONE,
	S6_WAIT,	/* another instance has the directory: after it */
	S6_LINK,	/* s6-svlink -D */
	S6_UP,		/* s6-svc -u -wu */
	S6_UNLINK,	/* s6-svunlink */
};

/* A revision's s6 service, as one instance sees it (in->priv). */
struct s6_inst {
	char		 name[S6_NAME_MAX];	/* hk.APP.SVC.REV[.N] */
	char		 link[S6_PATH_MAX];	/* in the scan directory */
	char		 real[S6_PATH_MAX];	/* in S6_HOME */
	enum s6_step	 step;
	struct loop_timer kick;		/* S6_WAIT: look again */
	pid_t		 helper;	/* of step */
	pid_t		 waitdown;	/* s6-svwait -D */
	pid_t		 waitready;	/* s6-svwait -U */
	pid_t		 pid;		/* the service's, once up */
	pid_t		 pgid;		/* its group: frozen, thawed */
	int64_t		 pid_start;
	int		 outfd;		/* hk-output, until ready */
	struct cmd_output out;
	int		 up;		/* asked up: waitdown watches */
	int		 stop;		/* asked while step ran */
	int		 kill;
	int		 wstat;		/* of its end, -1 unknown */
	char		 failed[SCALE_REASON_MAX];	/* a start's reason */
	struct user_ids	 user;		/* its user, for run */
	int		 sw;		/* switch to it */
	int		 xport;		/* the shared socket's port, or 0 */
	char		 listen[PATH_MAX];	/* where s6_listen.c serves it */
};

/* What supervise/status says. */
struct s6_status {
	pid_t		 pid;		/* 0: down */
	int		 wstat;		/* of the last death */
	int		 wantup;
};

static void	s6_start(struct inst *);
static void	s6_adopt(struct inst *, const struct store_instance *);
static void	s6_stop(struct inst *);
static void	s6_kill(struct inst *);
static void	s6_handover(struct inst *);
static void	s6_row(const struct inst *, struct store_instance *);
static int	s6_release(struct inst *);
static int	s6_reap(struct inst *, pid_t, int);
static void	s6_sweep(struct scale *);
static void	s6_freeze(struct inst *);
static void	s6_thaw(struct inst *);
static int	group_signal(struct inst *, int, char *, size_t);
static struct s6_inst *snew(struct inst *, const char *, const char *,
		    int64_t, int);
static int	scan_ok(struct scale *, char *, size_t);
static int	supervised(const char *);
static int	status_read(const char *, struct s6_status *);
static int	write_file(const char *, const char *, const char *, size_t,
		    mode_t);
static void	quote(FILE *, const char *);
static int	write_run(struct inst *, const struct user_ids *, int,
		    char *, size_t);
static int	write_dir(struct inst *, const struct user_ids *, int, char *,
		    size_t);
static int	rm_entry(const char *, const struct stat *, int,
		    struct FTW *);
static void	rm_rf(const char *);
static pid_t	spawn(struct inst *, const char *const *);
static void	tool_why(char *, size_t, const char *, int);
static int	claimed(struct scale *, const char *, const struct inst *);
static void	kick_fire(struct loop *, void *);
static void	go(struct inst *);
static void	link_done(struct inst *, int);
static void	up_done(struct inst *, int);
static void	down_seen(struct inst *, int);
static void	ready_seen(struct inst *, int);
static void	send_down(struct inst *);
static int	must_remove(struct inst *);
static void	finish(struct inst *);
static void	out_read(struct loop *, int, int, void *);
static void	close_out(struct inst *);
static int	parse_name(const char *, char *, char *, int64_t *, int *);
static void	reclaim(struct scale *, const char *, const char *,
		    int64_t, int, const char *);
static void	reclaim_siblings(struct inst *);
static int64_t	dir_revision(struct scale *, const struct store_instance *);
static int	listen_helper(char *, size_t, char *, size_t);
static void	adopt_listener(struct inst *);

const struct backend backend_s6 = {
	.kind = BACKEND_S6,
	.start = s6_start,
	.adopt = s6_adopt,
	.stop = s6_stop,
	.kill = s6_kill,
	.handover = s6_handover,
	.row = s6_row,
	.release = s6_release,
	.reap = s6_reap,
	.sweep = s6_sweep,
	.freeze = s6_freeze,
	.thaw = s6_thaw,
};

static const char *const finish_script =
    "#!/bin/sh\n"
    "# Written by hk-scale (hk-backends(7), The s6 backend).  What is left of\n"
    "# the service's process group goes with it, and s6 restarts nothing:\n"
    "# hk-scale decides (125).\n"
    "if read g <hk-pgid; then\n"
    "\tkill -s KILL -- \"-$g\" 2>/dev/null\n"
    "\trm -f hk-pgid\n"
    "fi\n"
    "exit 125\n";

/* Replica 0's directory is hk.APP.SVC.REV, replica N's hk.APP.SVC.REV.N. */
static struct s6_inst *
snew(struct inst *in, const char *app, const char *svc, int64_t rev,
    int replica)
{
	const char *scan = in->sc->cfg.s6_scandir;
	struct s6_inst *x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	x->outfd = -1;
	x->wstat = -1;
	loop_timer_init(&x->kick, kick_fire, in);
	if (replica > 0)
		snprintf(x->name, sizeof(x->name), S6_PREFIX "%s.%s.%lld.%d",
		    app, svc, (long long)rev, replica);
	else
		snprintf(x->name, sizeof(x->name), S6_PREFIX "%s.%s.%lld",
		    app, svc, (long long)rev);
	if ((size_t)snprintf(x->link, sizeof(x->link), "%s/%s", scan,
	    x->name) >= sizeof(x->link) ||
	    (size_t)snprintf(x->real, sizeof(x->real), "%s/" S6_HOME "/%s",
	    scan, x->name) >= sizeof(x->real)) {
		free(x);
		errno = ENAMETOOLONG;
		return NULL;
	}
	strlcpy(in->what, "s6 service", sizeof(in->what));
	in->priv = x;
	return x;
}

/* An s6-svscan watches the scan directory: its control fifo has a reader. */
static int
scan_ok(struct scale *sc, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd;

	if (sc->cfg.s6_scandir[0] == '\0') {
		snprintf(err, errlen, "server.s6_scandir is not set "
		    "(s6 backend)");
		return -1;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/.s6-svscan/control",
	    sc->cfg.s6_scandir) >= sizeof(path)) {
		fd = -1;
		errno = ENAMETOOLONG;
	} else
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		snprintf(err, errlen, "no s6-svscan watches %.80s: %s",
		    sc->cfg.s6_scandir, errno == ENXIO ?
		    "no reader on .s6-svscan/control" : strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* An s6-supervise runs on the service: its control fifo has a reader. */
static int
supervised(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/supervise/control",
	    dir) >= sizeof(path) ||
	    (fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return 0;
	close(fd);
	return 1;
}

/*
 * supervise/status, as s6-svstat reads it: two TAI64N stamps, the pid
 * (64 bits), in s6 2.12 the pgid, the wait status (16 bits), the flags.
 */
static int
status_read(const char *dir, struct s6_status *st)
{
	unsigned char b[S6_STATUS_NEW + 1];
	char path[PATH_MAX];
	uint64_t pid = 0;
	ssize_t n;
	size_t w;
	int fd, i;

	if ((size_t)snprintf(path, sizeof(path), "%s/supervise/status",
	    dir) >= sizeof(path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, b, sizeof(b));
	close(fd);
	if (n != S6_STATUS_OLD && n != S6_STATUS_NEW)
		return -1;
	for (i = 0; i < 8; i++)
		pid = pid << 8 | b[24 + i];
	w = n == S6_STATUS_OLD ? 32 : 40;
	st->pid = pid > INT_MAX ? 0 : (pid_t)pid;
	st->wstat = b[w] << 8 | b[w + 1];
	st->wantup = (b[w + 2] & S6_WANTUP) != 0;
	return 0;
}

/* dir/name, written whole under a temporary name and renamed. */
static int
write_file(const char *dir, const char *name, const char *data, size_t len,
    mode_t mode)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, bad;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path) || (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.new",
	    dir, name) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    mode)) == -1)
		return -1;
	bad = write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) == -1;
	if (close(fd) == -1 || bad || rename(tmp, path) == -1) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* A word for sh(1): single quotes, each ' as '\''. */
static void
quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s != '\0'; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

/*
 * The run script: what the exec backend's child does between fork and
 * exec (backend_exec.c), in setpriv(1) and env(1).
 */
static int
write_run(struct inst *in, const struct user_ids *u, int sw, char *err,
    size_t errlen)
{
	struct s6_inst *x = in->priv;
	const struct service_spec *sp = &inst_def(in)->spec;
	char **env, *lp, *buf = NULL, helper[PATH_MAX];
	size_t len = 0, i;
	FILE *f;
	int r;

	if (x->xport != 0 && listen_helper(helper, sizeof(helper), err,
	    errlen) == -1)
		return -1;
	if ((env = command_env(sp, in, u, &lp)) == NULL ||
	    (f = open_memstream(&buf, &len)) == NULL) {
		command_env_free(env);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fprintf(f, "#!/bin/sh\n# %s revision %lld replica %d, written by "
	    "hk-scale at each start: edits\n# are lost (hk-backends(7), The s6 "
	    "backend).\nexec </dev/null >hk-output 2>&1\necho $$ >hk-pgid\n"
	    "exec setpriv", in->id, (long long)in->revision, in->replica);
	if (sw) {
		fprintf(f, " --reuid=%lu --regid=%lu", (unsigned long)u->uid,
		    (unsigned long)u->gid);
		if (u->ngroups == 0)
			fputs(" --clear-groups", f);
		for (i = 0; i < u->ngroups; i++)
			fprintf(f, "%s%lu", i == 0 ? " --groups=" : ",",
			    (unsigned long)u->groups[i]);
	}
	if (u->uid != 0)
		fputs(" \\\n    --inh-caps=-all --ambient-caps=-all", f);
	fputs(" --no-new-privs \\\n    env -i", f);
	if (sp->directory != NULL) {
		fputs(" -C ", f);
		quote(f, sp->directory);
	}
	for (i = 0; env[i] != NULL; i++) {
		/* hk-listen sets LISTEN_FDS and LISTEN_PID, its own pid */
		if (env[i] == lp || strncmp(env[i], "LISTEN_FDS=", 11) == 0)
			continue;
		fputs(" \\\n    ", f);
		quote(f, env[i]);
	}
	fputs(" \\\n   ", f);
	if (x->xport != 0) {
		fputc(' ', f);
		quote(f, helper);
		fputc(' ', f);
		quote(f, x->listen);
		fputs(" \\\n   ", f);
	}
	for (i = 0; i < sp->ncommand; i++) {
		fputc(' ', f);
		quote(f, sp->command[i]);
	}
	fputc('\n', f);
	command_env_free(env);
	if (fclose(f) != 0) {
		free(buf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r = write_file(x->real, "run", buf, len, 0755);
	free(buf);
	if (r == -1)
		snprintf(err, errlen, "%s/run: %s", x->real, strerror(errno));
	return r;
}

/*
 * The revision's service directory, made if it is not there: run is
 * rewritten (the port, the user and hk-scale's environment are those of
 * this start), and the pid of an earlier run forgotten.
 */
static int
write_dir(struct inst *in, const struct user_ids *u, int sw, char *err,
    size_t errlen)
{
	struct s6_inst *x = in->priv;
	const struct service_spec *sp = &inst_def(in)->spec;
	char path[S6_FILE_MAX], ms[24];
	const char *fail = x->real;
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/" S6_HOME,
	    in->sc->cfg.s6_scandir) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		goto bad;
	}
	snprintf(ms, sizeof(ms), "%lld\n", (long long)in->sc->grace * 1000);
	if ((mkdir(path, 0755) == -1 && errno != EEXIST && (fail = path)) ||
	    (mkdir(x->real, 0755) == -1 && errno != EEXIST))
		goto bad;
	fail = x->real;
	if (write_file(x->real, "finish", finish_script,
	    strlen(finish_script), 0755) == -1 ||
	    write_file(x->real, "down", "", 0, 0644) == -1 ||
	    write_file(x->real, "timeout-kill", ms, strlen(ms), 0644) == -1)
		goto bad;
	snprintf(path, sizeof(path), "%s/notification-fd", x->real);
	if (sp->readiness == READY_NOTIFY ? write_file(x->real,
	    "notification-fd", x->xport != 0 ? S6_NOTIFY_FD_SHARED "\n" :
	    S6_NOTIFY_FD "\n", 2, 0644) == -1 :
	    unlink(path) == -1 && errno != ENOENT)
		goto bad;
	snprintf(path, sizeof(path), "%s/hk-output", x->real);
	fail = path;
	if (mkfifo(path, 0600) == -1 && (errno != EEXIST ||
	    stat(path, &st) == -1 || !S_ISFIFO(st.st_mode)))
		goto bad;
	snprintf(path, sizeof(path), "%s/hk-pgid", x->real);
	if (unlink(path) == -1 && errno != ENOENT)
		goto bad;
	return write_run(in, u, sw, err, errlen);
bad:
	snprintf(err, errlen, "%s: %s", fail, strerror(errno));
	return -1;
}

static int
rm_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) == -1)
		log_warn("unable to remove %s", path);
	return 0;
}

/* A service directory that no s6-supervise uses any more. */
static void
rm_rf(const char *dir)
{
	if (nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS) == -1 &&
	    errno != ENOENT)
		log_warn("unable to remove %s", dir);
}

/*
 * An s6 tool as a child of ours: no stdin or stdout, our stderr (its own
 * messages say what failed), nothing else; it dies with us.
 */
static pid_t
spawn(struct inst *in, const char *const *argv)
{
	sigset_t none;
	pid_t pid;
	int null;

	if ((pid = fork()) == -1) {
		log_warn("service=%s: unable to run %s", in->id, argv[0]);
		return -1;
	}
	if (pid > 0) {
		log_debug("service=%s: %s %s: pid %ld", in->id, argv[0],
		    argv[1], (long)pid);
		return pid;
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, 0);
		dup2(null, 1);
	}
	syscall(SYS_close_range, 3, ~0U, 0);
	execvp(argv[0], (char *const *)argv);
	dprintf(2, "%s: error: service=%s: unable to run %s: %s\n", PROG,
	    in->id, argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* What an s6 tool's exit status means (s6-svc(8) and its siblings). */
static void
tool_why(char *buf, size_t len, const char *what, int status)
{
	const char *m = "failed";
	int code;

	if (!WIFEXITED(status)) {
		snprintf(buf, len, "%s: killed by signal %d", what,
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return;
	}
	switch ((code = WEXITSTATUS(status))) {
	case 99:
		m = "timed out";
		break;
	case 100:
		m = "usage";
		break;
	case 102:
		m = "no s6-supervise runs on the service";
		break;
	case 111:
		m = "a system call failed";
		break;
	case 126:
		m = "cannot be run";
		break;
	case 127:
		m = "not found: is s6 installed?";
		break;
	}
	snprintf(buf, len, "%s: exit %d, %s", what, code, m);
}

/* Another instance of ours has the directory name (not skip). */
static int
claimed(struct scale *sc, const char *name, const struct inst *skip)
{
	struct inst *in;
	struct s6_inst *x;

	TAILQ_FOREACH(in, &sc->insts, entry)
		if (in != skip && in->be == &backend_s6 &&
		    (x = in->priv) != NULL && strcmp(x->name, name) == 0)
			return 1;
	return 0;
}

/*
 * Starts the service's current revision: its directory written, linked
 * if it is not, then up.  Reported once s6 says it is up (started), or
 * with the reason nothing runs (failed).
 */
static void
s6_start(struct inst *in)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	struct scale *sc = in->sc;
	char err[SCALE_REASON_MAX];
	struct user_ids u;
	struct s6_inst *x;
	int sw;

	if (sp->command == NULL || sp->ncommand == 0) {
		backend_failed(in, "no command to run (s6 backend)");
		return;
	}
	if (sp->readiness == READY_SOCKET) {
		backend_failed(in, "readiness \"socket\" requires backend "
		    "\"exec\"");
		return;
	}
	if (strchr(sp->command[0], '=') != NULL) {
		backend_failed(in, "command: a program name with '=' cannot "
		    "run under env(1) (s6 backend)");
		return;
	}
	if (scan_ok(sc, err, sizeof(err)) == -1 ||
	    command_user(sc, sp, &u, &sw, err, sizeof(err)) == -1 ||
	    (!command_shares_port(sp) &&
	    command_port(in, sp->port, err, sizeof(err)) == -1)) {
		backend_failed(in, err);
		return;
	}
	if ((x = snew(in, in->svc->def.app, in->svc->def.name,
	    in->revision, in->replica)) == NULL) {
		snprintf(err, sizeof(err), "%.80s/%s: %s",
		    sc->cfg.s6_scandir, S6_HOME, strerror(errno));
		backend_failed(in, err);
		return;
	}
	if (command_shares_port(sp)) {
		if (s6listen_take(in, sp->port, &u, x->listen,
		    sizeof(x->listen), err, sizeof(err)) == -1) {
			backend_failed(in, err);
			return;
		}
		x->xport = in->port = sp->port;
	}
	in->uid = u.uid;
	x->user = u;
	x->sw = sw;
	snprintf(in->endpoint, sizeof(in->endpoint), "127.0.0.1:%d",
	    in->port);
	if (sp->readiness == READY_NOTIFY &&
	    probe_notify_open(in, err, sizeof(err)) == -1) {
		backend_failed(in, err);
		return;
	}
	if (claimed(sc, x->name, in)) {
		log_info("service=%s: %s is still stopping: starting after it",
		    in->id, x->name);
		x->step = S6_WAIT;
		return;
	}
	go(in);
}

/* An instance that waited: the directory may be free now. */
static void
kick_fire(struct loop *l, void *arg)
{
	struct inst *in = arg;
	struct s6_inst *x = in->priv;

	(void)l;
	if (x->step != S6_WAIT)
		return;
	if (x->stop || x->kill) {
		x->step = S6_NONE;
		finish(in);
	} else if (!claimed(in->sc, x->name, in))
		go(in);
}

/*
 * The directory is ours alone: written, the output fifo opened (the run
 * script's open of it would wait for a reader), then linked into the
 * scan directory or, if it is already, up.
 */
static void
go(struct inst *in)
{
	struct s6_inst *x = in->priv;
	char ms[24], path[S6_FILE_MAX];
	const char *argv[8];

	x->step = S6_NONE;
	if (write_dir(in, &x->user, x->sw, x->failed,
	    sizeof(x->failed)) == -1) {
		finish(in);
		return;
	}
	snprintf(path, sizeof(path), "%s/hk-output", x->real);
	if ((x->outfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) ==
	    -1 || loop_add_fd(in->sc->loop, x->outfd, LOOP_READ, out_read,
	    in) == -1) {
		snprintf(x->failed, sizeof(x->failed), "%s: %s", path,
		    strerror(errno));
		finish(in);
		return;
	}
	output_open(&x->out, in);
	if (supervised(x->link)) {
		link_done(in, 0);
		return;
	}
	unlink(x->link);	/* a link of a killed hk-scale, unsupervised */
	snprintf(ms, sizeof(ms), "%d", S6_TOOL_MS);
	argv[0] = "s6-svlink";
	argv[1] = "-D";
	argv[2] = "-t";
	argv[3] = ms;
	argv[4] = in->sc->cfg.s6_scandir;
	argv[5] = x->real;
	argv[6] = x->name;
	argv[7] = NULL;
	x->step = S6_LINK;
	if ((x->helper = spawn(in, argv)) == -1) {
		x->step = S6_NONE;
		snprintf(x->failed, sizeof(x->failed), "fork: %s",
		    strerror(errno));
		finish(in);
	}
}

/* Linked and supervised (status 0), or not: then up, or done. */
static void
link_done(struct inst *in, int status)
{
	struct s6_inst *x = in->priv;
	char ms[24];
	const char *argv[7];

	x->step = S6_NONE;
	if (status != 0) {
		tool_why(x->failed, sizeof(x->failed), "s6-svlink", status);
		finish(in);
		return;
	}
	if (x->stop || x->kill) {
		finish(in);
		return;
	}
	snprintf(ms, sizeof(ms), "%d", service_timeout(in->svc) * 1000);
	argv[0] = "s6-svc";
	argv[1] = "-u";
	argv[2] = "-wu";
	argv[3] = "-T";
	argv[4] = ms;
	argv[5] = x->link;
	argv[6] = NULL;
	x->step = S6_UP;
	x->up = 1;
	if ((x->helper = spawn(in, argv)) == -1) {
		x->step = S6_NONE;
		x->up = 0;
		snprintf(x->failed, sizeof(x->failed), "fork: %s",
		    strerror(errno));
		finish(in);
	}
}

/*
 * s6-svc -u -wu is over: up (status 0), or it says why not.  Either
 * way its end is watched from now (s6-svwait -D; at once if it is down
 * already), so that a service that came up after all is stopped and
 * seen gone.
 */
static void
up_done(struct inst *in, int status)
{
	struct s6_inst *x = in->priv;
	const char *argv[4];
	struct s6_status st;

	x->step = S6_NONE;
	if (status != 0)
		tool_why(x->failed, sizeof(x->failed), "s6-svc -u", status);
	argv[0] = "s6-svwait";
	argv[1] = "-D";
	argv[2] = x->link;
	argv[3] = NULL;
	if ((x->waitdown = spawn(in, argv)) == -1) {
		x->waitdown = 0;
		if (x->failed[0] == '\0')
			snprintf(x->failed, sizeof(x->failed), "fork: %s",
			    strerror(errno));
		send_down(in);
		finish(in);
		return;
	}
	if (x->failed[0] != '\0' || x->stop || x->kill) {
		x->kill |= x->failed[0] != '\0';
		send_down(in);
		return;
	}
	if (status_read(x->link, &st) == 0 && st.pid > 0) {
		x->pid = st.pid;
		if (proc_starttime(x->pid, &x->pid_start) == -1)
			x->pid_start = 0;
		snprintf(in->what, sizeof(in->what), "pid %ld",
		    (long)x->pid);
		output_inst(&x->out, in->what);
	}
	if (in->svc != NULL && inst_def(in)->spec.readiness == READY_NOTIFY) {
		argv[1] = "-U";
		if ((x->waitready = spawn(in, argv)) == -1)
			x->waitready = 0;
	}
	log_info("service=%s: started %s revision %lld at %s as %s "
	    "(s6 service %s)", in->id, in->what, (long long)in->revision,
	    in->endpoint, x->user.name, x->name);
	backend_started(in);
}

/* s6-svc -d, or -dk to kill at once: the end comes through waitdown. */
static void
send_down(struct inst *in)
{
	struct s6_inst *x = in->priv;
	const char *argv[4];

	argv[0] = "s6-svc";
	argv[1] = x->kill ? "-dk" : "-d";
	argv[2] = x->link;
	argv[3] = NULL;
	(void)spawn(in, argv);	/* reaped as no one's */
	/* s6-supervise continues its own process only (s6-svc(8)). */
	if ((in->frozen || in->freezing) && x->pgid > 0 &&
	    kill(-x->pgid, SIGCONT) == -1 && errno != ESRCH)
		log_warn("service=%s: kill -CONT -%ld", in->id,
		    (long)x->pgid);
}

/*
 * The service is down and its finish script done (or its supervisor is
 * gone): the wait status from supervise/status, what it printed last.
 */
static void
down_seen(struct inst *in, int status)
{
	struct s6_inst *x = in->priv;
	struct s6_status st;

	x->waitdown = 0;
	if (x->waitready > 0)
		kill(x->waitready, SIGTERM);
	if (status != 0)
		log_debug("service=%s: s6-svwait -D: status %d", in->id,
		    status);
	else if (status_read(x->link, &st) == 0 && st.pid == 0)
		x->wstat = st.wstat;
	if (x->outfd != -1)
		output_drain(&x->out, in->id, x->outfd);
	close_out(in);
	finish(in);
}

static void
ready_seen(struct inst *in, int status)
{
	struct s6_inst *x = in->priv;

	x->waitready = 0;
	if (status != 0 || in->ready || in->stopping || in->svc == NULL)
		return;
	log_debug("service=%s: ready by s6's notification-fd", in->id);
	probe_stop(in);
	backend_ready(in);
}

/*
 * The directory goes when the instance was not its service's current
 * revision on s6 (replaced, removed, or found unclaimed at start-up), or
 * is a replica beyond those its service wants.
 */
static int
must_remove(struct inst *in)
{
	return !backend_current(in->sc, in->id, &backend_s6, in->revision,
	    in->replica);
}

/*
 * Nothing of the instance runs: its directory removed first if it must
 * go and no other instance has it (s6-svunlink, then rm), then reported:
 * failed with the reason if it never was up, else exited.
 */
static void
finish(struct inst *in)
{
	struct s6_inst *x = in->priv;
	char ms[24];
	const char *argv[6];
	int rm = must_remove(in) && !claimed(in->sc, x->name, in);

	if (x->step == S6_NONE && rm && supervised(x->link)) {
		snprintf(ms, sizeof(ms), "%d", S6_TOOL_MS);
		argv[0] = "s6-svunlink";
		argv[1] = "-t";
		argv[2] = ms;
		argv[3] = in->sc->cfg.s6_scandir;
		argv[4] = x->name;
		argv[5] = NULL;
		if ((x->helper = spawn(in, argv)) != -1) {
			x->step = S6_UNLINK;
			return;
		}
	}
	if (x->step == S6_UNLINK || (rm && !supervised(x->link))) {
		log_info("service=%s: removed s6 service %s", in->id,
		    x->name);
		unlink(x->link);
		rm_rf(x->real);
	}
	x->step = S6_NONE;
	if (x->failed[0] != '\0' && !in->stopping)
		backend_failed(in, x->failed);
	else
		backend_exited(in, x->wstat, x->out.last);
}

static void
out_read(struct loop *l, int fd, int mask, void *arg)
{
	struct inst *in = arg;
	struct s6_inst *x = in->priv;

	(void)l;
	(void)mask;
	if (output_read(&x->out, in->id, fd))
		close_out(in);
}

static void
close_out(struct inst *in)
{
	struct s6_inst *x = in->priv;

	loop_close_fd(in->sc->loop, &x->outfd);
}

/*
 * The revision in the name of the directory that runs a row's instance:
 * the row's, unless a change of replicas alone made what ran count as a
 * new revision (replica_rescale()) without a new directory; then that of
 * the directory of the same replica whose process is the row's.
 */
static int64_t
dir_revision(struct scale *sc, const struct store_instance *r)
{
	char app[CONFIG_NAME_MAX + 1], svc[CONFIG_NAME_MAX + 1];
	char path[PATH_MAX];
	const char *scan = sc->cfg.s6_scandir;
	struct s6_status st;
	struct dirent *d;
	int64_t rev, found = r->revision;
	int replica;
	DIR *dp;

	snprintf(path, sizeof(path), "%s/" S6_PREFIX "%s.%s.%lld", scan,
	    r->app, r->service, (long long)r->revision);
	if (r->replica > 0)
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
		    ".%d", r->replica);
	if (r->pid <= 0 || (supervised(path) && status_read(path, &st) ==
	    0 && st.pid > 0) || (dp = opendir(scan)) == NULL)
		return r->revision;
	while ((d = readdir(dp)) != NULL) {
		if (parse_name(d->d_name, app, svc, &rev, &replica) == -1 ||
		    strcmp(app, r->app) != 0 || strcmp(svc, r->service) != 0 ||
		    replica != r->replica)
			continue;
		snprintf(path, sizeof(path), "%s/%s", scan, d->d_name);
		if (supervised(path) && status_read(path, &st) == 0 &&
		    st.pid == r->pid) {
			found = rev;
			break;
		}
	}
	closedir(dp);
	return found;
}

/*
 * A previous hk-scale's instance: alive if an s6-supervise runs on its
 * directory and says the service is up; then its end is watched.
 */
static void
s6_adopt(struct inst *in, const struct store_instance *r)
{
	char why[SCALE_REASON_MAX];
	struct s6_inst *x;
	struct s6_status st;
	const char *argv[4];

	if (in->sc->cfg.s6_scandir[0] == '\0') {
		log_warnx("service=%s: server.s6_scandir is not set: an s6 "
		    "service of an earlier run cannot be seen", in->id);
		backend_adopted(in, 0);
		return;
	}
	if ((x = snew(in, r->app, r->service, dir_revision(in->sc, r),
	    r->replica)) == NULL) {
		log_warn("service=%s: unable to adopt", in->id);
		backend_adopted(in, 0);
		return;
	}
	if (!supervised(x->link) || status_read(x->link, &st) == -1 ||
	    st.pid <= 0) {
		log_info("service=%s: s6 service %s of an earlier run is down",
		    in->id, x->name);
		backend_adopted(in, 0);
		return;
	}
	x->pid = st.pid;
	x->pid_start = r->pid == st.pid ? r->pid_start : 0;
	x->up = 1;
	adopt_listener(in);
	snprintf(in->what, sizeof(in->what), "pid %ld", (long)x->pid);
	/* Suspended: kept so (frozen still, unless thawed by hand). */
	if (strcmp(r->state, "suspended") == 0 &&
	    group_signal(in, SIGSTOP, why, sizeof(why)) == -1)
		log_warnx("service=%s: unable to freeze %s again: %s", in->id,
		    in->what, why);
	argv[0] = "s6-svwait";
	argv[1] = "-D";
	argv[2] = x->link;
	argv[3] = NULL;
	if ((x->waitdown = spawn(in, argv)) == -1) {
		x->waitdown = 0;
		x->kill = 1;
		send_down(in);
		backend_adopted(in, 0);
		return;
	}
	backend_adopted(in, 1);
}

/* Gracefully: s6-supervise sends SIGTERM (and SIGKILL after timeout-kill). */
static void
s6_stop(struct inst *in)
{
	struct s6_inst *x = in->priv;

	if (x == NULL)
		return;
	x->stop = 1;
	if (x->step == S6_WAIT)		/* reported from the loop */
		loop_timer_at(in->sc->loop, &x->kick,
		    loop_now_ms(in->sc->loop));
	else if (x->step == S6_NONE && x->up)
		send_down(in);
}

static void
s6_kill(struct inst *in)
{
	struct s6_inst *x = in->priv;

	if (x == NULL)
		return;
	x->kill = 1;
	if (x->step == S6_LINK || x->step == S6_UP)
		kill(x->helper, SIGTERM);	/* its end sends the kill */
	else
		s6_stop(in);
}

/* idle_action = "suspend": the process group stopped. */
static void
s6_freeze(struct inst *in)
{
	char why[SCALE_REASON_MAX];

	backend_frozen(in, group_signal(in, SIGSTOP, why, sizeof(why)) ==
	    -1 ? why : NULL);
}

/* As exec_thaw(): the ready goes out before the group runs again. */
static void
s6_thaw(struct inst *in)
{
	struct s6_inst *x = in->priv;
	char why[SCALE_REASON_MAX];
	pid_t pgid;

	if (group_signal(in, 0, why, sizeof(why)) == -1) {
		backend_thawed(in, why);
		return;
	}
	pgid = x->pgid;
	backend_thawed(in, NULL);
	if (kill(-pgid, SIGCONT) == -1 && errno != ESRCH)
		log_warn("service=%s: kill -CONT -%ld", in->id, (long)pgid);
}

/*
 * sig to the service's process group, which its run script wrote to
 * hk-pgid (s6-supervise made it a session leader).  The group must
 * still be led by the process s6 runs: a stale file signals no one.
 */
static int
group_signal(struct inst *in, int sig, char *why, size_t whylen)
{
	struct s6_inst *x = in->priv;
	char path[S6_FILE_MAX], buf[24];
	const char *errstr;
	ssize_t n;
	int fd;

	if (x == NULL || x->pid <= 0) {
		snprintf(why, whylen, "no process");
		return -1;
	}
	if (x->pgid <= 0) {
		snprintf(path, sizeof(path), "%s/hk-pgid", x->link);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
		    (n = read(fd, buf, sizeof(buf) - 1)) <= 0) {
			snprintf(why, whylen, "%s: %s", path, fd == -1 ?
			    strerror(errno) : "empty");
			if (fd != -1)
				close(fd);
			return -1;
		}
		close(fd);
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		x->pgid = (pid_t)strtonum(buf, 2, INT_MAX, &errstr);
		if (errstr != NULL || getpgid(x->pid) != x->pgid) {
			snprintf(why, whylen, "%s: not the group of pid %ld",
			    path, (long)x->pid);
			x->pgid = 0;
			return -1;
		}
	}
	if (kill(-x->pgid, sig) == -1) {
		snprintf(why, whylen, "kill -%s -%ld: %s", sig == SIGSTOP ?
		    "STOP" : sig == SIGCONT ? "CONT" : "0", (long)x->pgid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Ready: the output goes on through a relay, and the directories of the
 * service's other revisions go.
 */
static void
s6_handover(struct inst *in)
{
	struct s6_inst *x = in->priv;
	pid_t pid;

	reclaim_siblings(in);
	if (x->outfd == -1)
		return;
	if ((pid = output_relay(&x->out, in->id, x->outfd)) == -1) {
		log_warn("service=%s: unable to start an output relay: "
		    "hk-scale keeps reading", in->id);
		return;
	}
	log_debug("service=%s: output relay pid %ld", in->id, (long)pid);
	close_out(in);
	x->out.linelen = 0;
	x->out.last[0] = '\0';
}

static void
s6_row(const struct inst *in, struct store_instance *r)
{
	const struct s6_inst *x = in->priv;

	if (x == NULL)
		return;
	r->pid = x->pid;
	r->pid_start = x->pid_start;
}

/* Its helpers go; an instance that waited for its directory goes on. */
static int
s6_release(struct inst *in)
{
	struct s6_inst *x = in->priv, *y;
	struct inst *o;

	if (x == NULL)
		return 0;
	if (x->step != S6_NONE && x->step != S6_WAIT && x->helper > 0)
		kill(x->helper, SIGTERM);
	if (x->waitdown > 0)
		kill(x->waitdown, SIGTERM);
	if (x->waitready > 0)
		kill(x->waitready, SIGTERM);
	close_out(in);
	output_close(&x->out);
	loop_timer_cancel(in->sc->loop, &x->kick);
	if (x->xport != 0)
		s6listen_drop(in, x->xport);
	TAILQ_FOREACH(o, &in->sc->insts, entry)
		if (o != in && o->be == &backend_s6 && (y = o->priv) != NULL &&
		    y->step == S6_WAIT && strcmp(y->name, x->name) == 0)
			loop_timer_at(in->sc->loop, &y->kick,
			    loop_now_ms(in->sc->loop));
	in->priv = NULL;
	free(x);
	return 0;
}

static int
s6_reap(struct inst *in, pid_t pid, int status)
{
	struct s6_inst *x = in->priv;

	if (x == NULL || pid <= 0)
		return 0;
	if (pid == x->waitdown) {
		down_seen(in, status);
		return 1;
	}
	if (pid == x->waitready) {
		ready_seen(in, status);
		return 1;
	}
	if (pid != x->helper)
		return 0;
	x->helper = 0;
	switch (x->step) {
	case S6_LINK:
		link_done(in, status);
		break;
	case S6_UP:
		up_done(in, status);
		break;
	case S6_UNLINK:
		if (status != 0)
			log_warnx("service=%s: s6-svunlink %s: status %d",
			    in->id, x->name, status);
		finish(in);
		break;
	default:
		break;
	}
	return 1;
}

/*
 * "hk.APP.SVC.REV" (replica 0) or "hk.APP.SVC.REV.N" (replica N, 1 up to
 * SPEC_REPLICAS_MAX - 1): 0, or -1 if it is not one of our names.
 */
static int
parse_name(const char *name, char *app, char *svc, int64_t *rev,
    int *replica)
{
	char num[24];
	const char *a, *b, *c, *d;
	const char *errstr;
	size_t n;

	if (strncmp(name, S6_PREFIX, sizeof(S6_PREFIX) - 1) != 0)
		return -1;
	a = name + sizeof(S6_PREFIX) - 1;
	if ((b = strchr(a, '.')) == NULL || (c = strchr(b + 1, '.')) ==
	    NULL || b - a > CONFIG_NAME_MAX || c - b - 1 > CONFIG_NAME_MAX ||
	    !config_valid_name_n(a, (size_t)(b - a)) ||
	    !config_valid_name_n(b + 1, (size_t)(c - b - 1)))
		return -1;
	*replica = 0;
	if ((d = strchr(c + 1, '.')) != NULL) {
		*replica = (int)strtonum(d + 1, 1, SPEC_REPLICAS_MAX - 1,
		    &errstr);
		if (errstr != NULL || d[1] == '0' || d[1] == '+')
			return -1;
	} else
		d = c + 1 + strlen(c + 1);
	if ((n = (size_t)(d - c - 1)) == 0 || n >= sizeof(num) ||
	    c[1] == '0' || c[1] == '+')
		return -1;
	memcpy(num, c + 1, n);
	num[n] = '\0';
	*rev = strtonum(num, 1, INT64_MAX, &errstr);
	if (errstr != NULL)
		return -1;
	memcpy(app, a, (size_t)(b - a));
	app[b - a] = '\0';
	memcpy(svc, b + 1, (size_t)(c - b - 1));
	svc[c - b - 1] = '\0';
	return 0;
}

/*
 * A directory that no instance claims, taken by a retired instance of
 * its own: stopped if it runs, seen down, and removed unless it is its
 * service's current revision.
 */
static void
reclaim(struct scale *sc, const char *app, const char *svc, int64_t rev,
    int replica, const char *why)
{
	char id[SCALE_ID_MAX];
	const char *argv[4];
	struct s6_inst *x;
	struct inst *in;

	snprintf(id, sizeof(id), "%s/%s", app, svc);
	if ((in = inst_new(sc, id, &backend_s6)) == NULL ||
	    snew(in, app, svc, rev, replica) == NULL) {
		log_warn("service=%s: unable to reclaim revision %lld", id,
		    (long long)rev);
		if (in != NULL)
			inst_free(in);
		return;
	}
	x = in->priv;
	in->revision = rev;
	in->replica = replica;
	in->start_mono = loop_now_ms(sc->loop);
	log_info("service=%s: s6 service %s: %s", id, x->name, why);
	argv[0] = "s6-svwait";
	argv[1] = "-D";
	argv[2] = x->link;
	argv[3] = NULL;
	x->up = 1;
	if ((x->waitdown = spawn(in, argv)) == -1) {
		x->waitdown = 0;
		inst_free(in);
		return;
	}
	inst_stop(in);
}

/*
 * Once another revision is ready, the directories of the others go (those
 * of their replicas that still run are retired by replica.c, and theirs
 * go then).
 */
static void
reclaim_siblings(struct inst *in)
{
	struct s6_inst *x = in->priv;
	char app[CONFIG_NAME_MAX + 1], svc[CONFIG_NAME_MAX + 1];
	char mapp[CONFIG_NAME_MAX + 1], msvc[CONFIG_NAME_MAX + 1];
	struct dirent *d;
	int64_t rev, mrev;
	int replica, mreplica;
	DIR *dp;

	if (parse_name(x->name, mapp, msvc, &mrev, &mreplica) == -1)
		return;
	if ((dp = opendir(in->sc->cfg.s6_scandir)) == NULL) {
		log_warn("unable to read %s", in->sc->cfg.s6_scandir);
		return;
	}
	while ((d = readdir(dp)) != NULL)
		if (parse_name(d->d_name, app, svc, &rev, &replica) == 0 &&
		    strcmp(app, mapp) == 0 && strcmp(svc, msvc) == 0 &&
		    rev != mrev && !claimed(in->sc, d->d_name, NULL))
			reclaim(in->sc, app, svc, rev, replica, "replaced by "
			    "a ready revision");
	closedir(dp);
}

/*
 * At start-up, after adoption: every directory of ours in the scan
 * directory that no instance claims is stopped if s6 has it up (or
 * wanted up: a start that a killed hk-scale left), and removed if it is
 * not its service's current revision; a directory in S6_HOME that is
 * not linked and not supervised (a killed hk-scale's) is removed.
 */
static void
s6_sweep(struct scale *sc)
{
	char app[CONFIG_NAME_MAX + 1], svc[CONFIG_NAME_MAX + 1];
	char id[SCALE_ID_MAX], path[PATH_MAX], lpath[PATH_MAX];
	const char *scan = sc->cfg.s6_scandir;
	struct s6_status st;
	struct dirent *d;
	struct stat sb;
	int64_t rev;
	int up, replica;
	DIR *dp;

	if (scan[0] == '\0' || (dp = opendir(scan)) == NULL)
		return;
	while ((d = readdir(dp)) != NULL) {
		if (parse_name(d->d_name, app, svc, &rev, &replica) == -1 ||
		    claimed(sc, d->d_name, NULL))
			continue;
		snprintf(path, sizeof(path), "%s/%s", scan, d->d_name);
		snprintf(id, sizeof(id), "%s/%s", app, svc);
		up = supervised(path) && status_read(path, &st) == 0 &&
		    (st.pid > 0 || st.wantup);
		if (up)
			reclaim(sc, app, svc, rev, replica, "up, and no row "
			    "of the store says so: stopping it");
		else if (!backend_current(sc, id, &backend_s6, rev, replica))
			reclaim(sc, app, svc, rev, replica, "not a current "
			    "revision or replica: removing it");
	}
	closedir(dp);
	snprintf(path, sizeof(path), "%s/" S6_HOME, scan);
	if ((dp = opendir(path)) == NULL)
		return;
	while ((d = readdir(dp)) != NULL) {
		if (parse_name(d->d_name, app, svc, &rev, &replica) == -1)
			continue;
		snprintf(lpath, sizeof(lpath), "%s/%s", scan, d->d_name);
		snprintf(path, sizeof(path), "%s/" S6_HOME "/%s", scan,
		    d->d_name);
		if (lstat(lpath, &sb) == -1 && errno == ENOENT &&
		    !supervised(path)) {
			log_info("removing %s: not linked into %s", path,
			    scan);
			rm_rf(path);
		}
	}
	closedir(dp);
}

/*
 * hk-listen, which a replica's run script execs to receive the shared
 * socket (libexec.c).
 */
static int
listen_helper(char *buf, size_t len, char *err, size_t errlen)
{
	if (libexec_find(S6_LISTEN_HELPER, X_OK, buf, len) == 0)
		return 0;
	snprintf(err, errlen, "%s/%s: %s (replicas of a fixed port on s6 "
	    "need it)", libexec_dir(), S6_LISTEN_HELPER, strerror(errno));
	return -1;
}

/*
 * An adopted replica of a service whose replicas share a socket: a
 * reference to it, taken back from the replica if no other instance
 * holds it, and served again (s6_listen.c), so that a replica started
 * after this restart of hk-scale gets the same socket.
 */
static void
adopt_listener(struct inst *in)
{
	struct service *s = service_find(in->sc, in->id);
	struct s6_inst *x = in->priv;
	const struct service_spec *sp;
	char err[SCALE_REASON_MAX];
	struct user_ids u;
	int sw;

	/* in->svc is not set until the adoption is answered */
	if (s == NULL)
		return;
	sp = &s->def.spec;
	if (!command_shares_port(sp) || in->port != sp->port)
		return;
	if (command_user(in->sc, sp, &u, &sw, err, sizeof(err)) == -1) {
		log_warnx("service=%s: %s: its listening socket is not served "
		    "again", in->id, err);
		return;
	}
	if (s6listen_adopt(in, sp->port, x->pid, x->pid_start, &u,
	    x->listen, sizeof(x->listen)) == 0)
		x->xport = sp->port;
}
