/*
 * backend_systemd.c - the systemd backend: an instance is a transient
 * service unit that hk-scale asks systemd to make and start
 * (StartTransientUnit), and to stop (StopUnit: systemd's SIGTERM to the
 * unit's processes, TimeoutStopSec, then SIGKILL), over systemd's D-Bus
 * API with sd-bus.  The connection is systemd_bus.c's, its state too: it
 * is driven from hk-scale's loop, never blocking it, every call is
 * asynchronous, and this file hears of its life through the
 * systemd_*() functions (systemd.h).
 *
 * The unit is hk-svc-APP.SERVICE-REVISION-STARTED.service (STARTED, in
 * hex, the Unix ms of the start), so that a row of the store names it;
 * a replica beside the first (replicas, hk.toml(5)) adds .N before
 * .service, since replicas start within the same millisecond;
 * its description, "hk APP/SERVICE revision N (RUNTIME_DIR)", tells this
 * installation's units from another's.  Exits are seen from systemd's
 * own signals: PropertiesChanged of the unit, watched from before the
 * unit exists; the unit is gone once it is inactive or failed with no job
 * pending.  Readiness is hk's probes (Type=exec), or systemd's own
 * READY=1 (readiness "notify": Type=notify, the start job done), or for
 * readiness "socket" the unit active (Type=exec: the command runs, with
 * its socket listening since before).  Its output goes to the journal,
 * under the unit: hk-scale relays nothing.
 *
 * A listening socket (readiness "socket", and the one socket that the
 * replicas of a fixed port share) is handed to the unit as its standard
 * input, and a shell at the head of ExecStart makes it fd 3
 * (systemd_listen.c).
 *
 * idle_action = "suspend" is systemd's own freezer (FreezeUnit, ThawUnit:
 * the cgroup v2 freezer, systemd 246 and later): the whole unit stops
 * being scheduled, its child processes too, and keeps its memory.
 * systemd answers once the cgroup is frozen (or thawed).  StopUnit thaws
 * a frozen unit before its SIGTERM (systemd 252's unit_stop()), and the
 * kernel delivers SIGKILL to frozen processes, so a stop or a kill needs
 * nothing more.  Without the v2 freezer (a host on cgroup v1 or hybrid)
 * systemd refuses the freeze, and the instance is stopped instead.
 *
 * A restarted hk-scale finds each row's unit by its name (adopt), and,
 * once per connection to systemd, stops every unit of this installation
 * that no instance describes (a start whose row was never written, a new
 * revision left behind a running one).  A lost connection is made again,
 * a second later, and every instance is looked at again.
 *
 * The operations of struct backend (scale.h) are the sd_*() functions;
 * what only this backend needs of an instance is its struct sd_inst,
 * in->priv, and of the installation its struct sdk.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "log.h"
#include "proc.h"
#include "scale.h"
#include "systemd.h"
#include "xlisten.h"

#define SD_UNIT_PATH	"/org/freedesktop/systemd1/unit"
#define SD_UNIT		"org.freedesktop.systemd1.Unit"
#define SD_SERVICE	"org.freedesktop.systemd1.Service"
#define SD_PROPS	"org.freedesktop.DBus.Properties"
#define SD_NO_UNIT	"org.freedesktop.systemd1.NoSuchUnit"
#define SD_PREFIX	"hk-svc-"
#define SD_SUFFIX	".service"
#define SD_UNIT_MAX	192	/* ours: 7 + 63 + 1 + 63 + 1 + 19 + 1 + 16 + 8 */
#define SD_DESC_MAX	(SCALE_ID_MAX + CONFIG_URL_MAX + 48)
#define SD_STATE_MAX	16	/* "deactivating" */
#define SD_RESULT_MAX	32	/* "start-limit-hit" */
#define SD_UMASK	0077

/* Where an instance stands with systemd. */
enum sd_phase {
	SDI_WAIT,	/* an adoption waits for a connection */
	SDI_QUERY,	/* its unit looked at (adoption, reconnection) */
	SDI_START,	/* StartTransientUnit sent */
	SDI_UP,		/* the unit is there, watched */
	SDI_GONE,	/* its end reported */
};

/* An instance's unit, as this backend sees it (in->priv). */
struct sd_inst {
	struct inst	*in;
	enum sd_phase	 phase;
	char		 unit[SD_UNIT_MAX];
	char		*path;		/* its object path */
	sd_bus_slot	*match;		/* its PropertiesChanged */
	sd_bus_slot	*call;		/* the start, or a look */
	sd_bus_slot	*stop;		/* StopUnit */
	sd_bus_slot	*kill;		/* KillUnit */
	sd_bus_slot	*freeze;	/* FreezeUnit, ThawUnit */
	int		 active_ready;	/* active = ready: Type=notify, or
					   readiness "socket" */
	int		 xport;		/* the port of the shared socket it
					   holds a reference to, 0 = none */
	int		 adopting;	/* the look answers an adoption */
	int		 left;		/* has left inactive */
	int		 seen;		/* its Unit properties came */
	char		 active[SD_STATE_MAX];	/* ActiveState */
	char		 freezer[SD_STATE_MAX];	/* FreezerState */
	uint32_t	 job;		/* its job, 0 = none */
	uint32_t	 main_pid;
	int64_t		 pid_start;
	int32_t		 code;		/* ExecMainCode: CLD_* */
	int32_t		 status;	/* ExecMainStatus */
	char		 result[SD_RESULT_MAX];	/* Result */
};

/* This backend's own; its connection to systemd is systemd_bus.c's. */
static struct {
	struct scale		*sc;
	sd_bus_slot		*list;		/* the sweep */
} sdk;

/*
 * What systemd's own exit statuses mean: a step of its set-up failed in
 * the unit's process, before the command ran (systemd.exec(5)).
 */
static const char *const sd_steps[] = {
	"CHDIR", "NICE", "FDS", "EXEC", "MEMORY", "LIMITS", "OOM_ADJUST",
	"SIGNAL_MASK", "STDIN", "STDOUT", "CHROOT", "IOPRIO", "TIMERSLACK",
	"SECUREBITS", "SETSCHEDULER", "CPUAFFINITY", "GROUP", "USER",
	"CAPABILITIES", "CGROUP", "SETSID", "CONFIRM", "STDERR", NULL, "PAM",
	"NETWORK", "NAMESPACE", "NO_NEW_PRIVILEGES", "SECCOMP",
	"SELINUX_CONTEXT", "PERSONALITY", "APPARMOR_PROFILE",
	"ADDRESS_FAMILIES", "RUNTIME_DIRECTORY", NULL, "CHOWN",
	"SMACK_PROCESS_LABEL", "KEYRING", "STATE_DIRECTORY",
	"CACHE_DIRECTORY", "LOGS_DIRECTORY", "CONFIGURATION_DIRECTORY",
	"NUMA_POLICY", "CREDENTIALS", NULL, "BPF",
};
#define SD_STEP_FIRST	200

static int	sd_setup(struct scale *, char *, size_t);
static void	sd_start(struct inst *);
static void	sd_adopt(struct inst *, const struct store_instance *);
static void	sd_stop(struct inst *);
static void	sd_kill(struct inst *);
static void	sd_row(const struct inst *, struct store_instance *);
static int	sd_release(struct inst *);
static struct sd_inst *xnew(struct inst *);
static void	unit_name(char *, size_t, const char *, const char *, int64_t,
		    int64_t, int);
static void	unit_desc(char *, size_t, const char *, const char *,
		    int64_t);
static int	unit_parse(const char *, char *, char *, int64_t *);
static int	check_user(struct scale *, const struct service_spec *,
		    char *, size_t, uid_t *, char *, size_t);
static int	resolve_exec(const struct service_spec *, char *, size_t);
static int	start_message(struct inst *, const char *, uid_t, int,
		    sd_bus_message **);
static int	start_props(sd_bus_message *, struct inst *, const char *,
		    uid_t, int);
static int	prop_exec(sd_bus_message *, const char *, char **, int);
static int	prop_argv(sd_bus_message *, char **);
static int	prop_env(sd_bus_message *, const struct service_spec *, int);
static int	prop_creds(sd_bus_message *, const struct inst *);
static int	sd_cred_user(struct inst *, struct user_ids *, char *, size_t);
static int	start_done(sd_bus_message *, void *, sd_bus_error *);
static void	start_fail(struct inst *, const char *);
static int	watch(struct sd_inst *);
static void	look(struct sd_inst *);
static int	got_unit(sd_bus_message *, void *, sd_bus_error *);
static int	got_unit_props(sd_bus_message *, void *, sd_bus_error *);
static int	got_service_props(sd_bus_message *, void *, sd_bus_error *);
static void	look_end(struct sd_inst *, int);
static int	props_read(struct sd_inst *, sd_bus_message *);
static int	props_changed(sd_bus_message *, void *, sd_bus_error *);
static int	state_up(const char *);
static void	unit_state(struct sd_inst *);
static void	gone(struct sd_inst *, const char *);
static int	stop_done(sd_bus_message *, void *, sd_bus_error *);
static int	kill_done(sd_bus_message *, void *, sd_bus_error *);
static void	sd_freeze(struct inst *);
static void	sd_thaw(struct inst *);
static void	freezer_call(struct inst *, const char *);
static int	freezer_done(sd_bus_message *, void *, sd_bus_error *);
static void	freezer_report(struct inst *, const char *);
static void	adopt_freezer(struct sd_inst *);
static int	adopt_fixed(sd_bus_message *, void *, sd_bus_error *);
static void	sweep(void);
static int	swept(sd_bus_message *, void *, sd_bus_error *);
static int	sweep_one(const char *, const char *, const char *, uint32_t);
static int	orphan_stopped(sd_bus_message *, void *, sd_bus_error *);
static struct sd_inst *find_unit(const char *);

const struct backend backend_systemd = {
	.kind = BACKEND_SYSTEMD,
	.setup = sd_setup,
	.start = sd_start,
	.adopt = sd_adopt,
	.stop = sd_stop,
	.kill = sd_kill,
	.row = sd_row,
	.release = sd_release,
	.cred_user = sd_cred_user,
	.freeze = sd_freeze,
	.thaw = sd_thaw,
};

static struct sd_inst *
xnew(struct inst *in)
{
	struct sd_inst *x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	x->in = in;
	strlcpy(x->active, "inactive", sizeof(x->active));
	strlcpy(x->freezer, "running", sizeof(x->freezer));
	in->priv = x;
	return x;
}

/* hk-svc-APP.SERVICE-REVISION-STARTED[.REPLICA].service */
static void
unit_name(char *buf, size_t len, const char *app, const char *service,
    int64_t revision, int64_t started_at, int replica)
{
	if (replica == 0)
		snprintf(buf, len, SD_PREFIX "%s.%s-%lld-%llx" SD_SUFFIX, app,
		    service, (long long)revision,
		    (unsigned long long)started_at);
	else
		snprintf(buf, len, SD_PREFIX "%s.%s-%lld-%llx.%d" SD_SUFFIX,
		    app, service, (long long)revision,
		    (unsigned long long)started_at, replica);
}

static void
unit_desc(char *buf, size_t len, const char *app, const char *service,
    int64_t revision)
{
	snprintf(buf, len, "hk %s/%s revision %lld (%s)", app, service,
	    (long long)revision, sdk.sc->cfg.runtime_dir);
}

/*
 * The app, service and revision a name of ours holds: 0, or -1 when it is
 * not one.  app and service have room for STORE_NAME_MAX.
 */
static int
unit_parse(const char *name, char *app, char *service, int64_t *revision)
{
	char buf[SD_UNIT_MAX], *dot, *dash, *end;
	size_t n = strlen(name), p = strlen(SD_PREFIX), s = strlen(SD_SUFFIX);
	const char *errstr;

	if (n >= sizeof(buf) || n <= p + s ||
	    strncmp(name, SD_PREFIX, p) != 0 ||
	    strcmp(name + n - s, SD_SUFFIX) != 0)
		return -1;
	memcpy(buf, name + p, n - p - s);
	buf[n - p - s] = '\0';
	/* a replica's .N: names hold no dot, APP.SERVICE one */
	if ((dot = strrchr(buf, '.')) != NULL && dot != strchr(buf, '.')) {
		if (dot[1] == '\0' || strspn(dot + 1, "0123456789") !=
		    strlen(dot + 1))
			return -1;
		*dot = '\0';
	}
	if ((dash = strrchr(buf, '-')) == NULL ||
	    strspn(dash + 1, "0123456789abcdef") != strlen(dash + 1) ||
	    dash[1] == '\0')
		return -1;
	*dash = '\0';
	if ((dash = strrchr(buf, '-')) == NULL)
		return -1;
	*dash = '\0';
	*revision = strtonum(dash + 1, 1, INT64_MAX, &errstr);
	if (errstr != NULL || (dot = strchr(buf, '.')) == NULL)
		return -1;
	*dot = '\0';
	end = dot + 1;
	if (!config_valid_name(buf) || !config_valid_name(end))
		return -1;
	strlcpy(app, buf, STORE_NAME_MAX + 1);
	strlcpy(service, end, STORE_NAME_MAX + 1);
	return 0;
}

/*
 * Whom the unit runs as, in who: the service's user, else the operator's
 * service_user, else "" (DynamicUser=: a user systemd makes for the unit
 * alone).  Resolved here as the exec backend does, so that a user that is
 * gone, or uid 0 without allow_root_services, fails the start with the
 * same reason.
 */
static int
check_user(struct scale *sc, const struct service_spec *sp, char *who,
    size_t wholen, uid_t *uid, char *err, size_t errlen)
{
	const char *name = sp->user;
	char why[USER_ERR_LEN];
	struct user_ids u;

	if (name == NULL && sc->cfg.service_user[0] != '\0')
		name = sc->cfg.service_user;
	who[0] = '\0';
	*uid = (uid_t)-1;
	if (name == NULL)
		return 0;
	if (user_resolve(name, &u, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "user: %s", why);
		return -1;
	}
	if (sp->user != NULL && u.uid == 0 && !sc->cfg.allow_root_services) {
		snprintf(err, errlen, "user: \"%s\" is uid 0: allowed only "
		    "with server.allow_root_services = true", name);
		return -1;
	}
	if (strlcpy(who, name, wholen) >= wholen) {
		snprintf(err, errlen, "user: too long");
		return -1;
	}
	*uid = u.uid;
	return 0;
}

/*
 * The program, as systemd-run finds it: a name without a slash in our
 * PATH (as the exec backend's execvpe(3)), a relative path from the
 * service's directory; else as given, for systemd to search its own.
 */
static int
resolve_exec(const struct service_spec *sp, char *buf, size_t len)
{
	const char *cmd = sp->command[0], *path, *p, *colon;
	size_t n;

	if (cmd[0] == '/')
		return strlcpy(buf, cmd, len) < len ? 0 : -1;
	if (strchr(cmd, '/') != NULL) {
		if (sp->directory == NULL)
			return -1;
		return (size_t)snprintf(buf, len, "%s/%s", sp->directory,
		    cmd) < len ? 0 : -1;
	}
	if ((path = getenv("PATH")) == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p != '\0'; p = colon + 1) {
		colon = strchr(p, ':');
		n = colon != NULL ? (size_t)(colon - p) : strlen(p);
		if (n > 0 && p[0] == '/' && (size_t)snprintf(buf, len,
		    "%.*s/%s", (int)n, p, cmd) < len &&
		    access(buf, X_OK) == 0)
			return 0;
		if (colon == NULL)
			break;
	}
	return strlcpy(buf, cmd, len) < len ? 0 : -1;
}

/*
 * Starts the service's current revision.  Its row is written first
 * (backend_started()), so that an hk-scale killed at any moment after
 * finds the unit; then StartTransientUnit goes out, and its answer or the
 * unit's own signals say how it went.
 */
static void
sd_start(struct inst *in)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	const struct svc *def = inst_def(in);
	char err[SCALE_REASON_MAX], who[USER_SPEC_MAX + 1];
	sd_bus_message *m = NULL;
	struct sd_inst *x;
	uid_t uid;
	int r, lfd = -1;

	if (sp->command == NULL || sp->ncommand == 0) {
		backend_failed(in, "no command to run (systemd backend)");
		return;
	}
	if (check_user(in->sc, sp, who, sizeof(who), &uid, err,
	    sizeof(err)) == -1) {
		backend_failed(in, err);
		return;
	}
	if ((x = xnew(in)) == NULL) {
		backend_failed(in, "out of memory");
		return;
	}
	if (sdlisten_take(in, sp, &lfd, &x->xport, err, sizeof(err)) == -1) {
		backend_failed(in, err);
		return;
	}
	x->active_ready = sp->readiness == READY_NOTIFY ||
	    sp->readiness == READY_SOCKET;
	unit_name(x->unit, sizeof(x->unit), def->app, def->name,
	    in->revision, in->started_at, in->replica);
	snprintf(in->what, sizeof(in->what), "unit %s", x->unit);
	if (!sp->listen_unix)
		snprintf(in->endpoint, sizeof(in->endpoint), "127.0.0.1:%d",
		    in->port);
	if (sdbus_ensure(in->sc, err, sizeof(err)) == -1) {
		sdlisten_done(lfd, x->xport);
		unixlisten_remove(in);
		backend_failed(in, err);
		return;
	}
	if ((r = watch(x)) < 0 ||
	    (r = start_message(in, who, uid, lfd, &m)) < 0) {
		snprintf(err, sizeof(err), "systemd: unable to ask for unit "
		    "%s: %s", x->unit, strerror(-r));
		sdlisten_done(lfd, x->xport);
		unixlisten_remove(in);
		backend_failed(in, err);
		return;
	}
	sdlisten_done(lfd, x->xport);	/* the message holds a copy */
	backend_started(in);
	r = sd_bus_call_async(sdbus_bus(), &x->call, m, start_done, x, 0);
	sd_bus_message_unref(m);
	if (r < 0) {
		snprintf(err, sizeof(err), "systemd: StartTransientUnit %s: %s",
		    x->unit, strerror(-r));
		start_fail(in, err);
		return;
	}
	x->phase = SDI_START;
	sdbus_arm();
	log_info("service=%s: started %s revision %lld at %s as %s", in->id,
	    in->what, (long long)in->revision, in->endpoint,
	    who[0] != '\0' ? who : "a dynamic user");
}

/* After backend_started(): a stop under way hears of the end instead. */
static void
start_fail(struct inst *in, const char *why)
{
	struct sd_inst *x = in->priv;

	x->phase = SDI_GONE;
	unixlisten_remove(in);
	if (in->stopping)
		backend_exited(in, -1, why);
	else
		backend_failed(in, why);
}

static int
start_message(struct inst *in, const char *who, uid_t uid, int lfd,
    sd_bus_message **mp)
{
	struct sd_inst *x = in->priv;
	sd_bus_message *m = NULL;
	int r;

	if ((r = sd_bus_message_new_method_call(sdbus_bus(), &m, SD_DEST,
	    SD_PATH, SD_MANAGER, "StartTransientUnit")) < 0 ||
	    (r = sd_bus_message_append(m, "ss", x->unit, "fail")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "(sv)")) < 0 ||
	    (r = start_props(m, in, who, uid, lfd)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_append(m, "a(sa(sv))", 0)) < 0) {
		sd_bus_message_unref(m);
		return r;
	}
	*mp = m;
	return 0;
}

#define PROP(m, name, type, ...) \
	sd_bus_message_append((m), "(sv)", (name), (type), __VA_ARGS__)

/*
 * The unit: the command in its directory, with its environment, PORT and
 * HOST; its user, or a dynamic one; confined as a function should be (a
 * read-only system, private /tmp and devices, no capabilities, no new
 * privileges, the system calls of a service, IP and Unix sockets only;
 * no MemoryDenyWriteExecute: Node's JIT needs it); stopped by SIGTERM to
 * all of it, SIGKILL after hk-scale's grace period; output to the
 * journal; collected once it has ended, failed or not; the memory and
 * CPU of its size, as a container's.  hk-scale restarts what it wants
 * restarted.
 */
static int
start_props(sd_bus_message *m, struct inst *in, const char *who, uid_t uid,
    int lfd)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	const struct svc *def = inst_def(in);
	char desc[SD_DESC_MAX], user[USER_SPEC_MAX + 1], *group;
	char exe[PATH_MAX];
	int64_t memory, nano_cpus;
	int r;

	unit_desc(desc, sizeof(desc), def->app, def->name, in->revision);
	if (resolve_exec(sp, exe, sizeof(exe)) == -1)
		return -ENAMETOOLONG;
	if ((r = PROP(m, "Description", "s", desc)) < 0 ||
	    (r = PROP(m, "Type", "s", sp->readiness == READY_NOTIFY ?
	    "notify" : "exec")) < 0 ||
	    (sp->readiness == READY_NOTIFY &&
	    (r = PROP(m, "NotifyAccess", "s", "all")) < 0) ||
	    (r = prop_exec(m, exe, sp->command, lfd)) < 0 ||
	    (r = sdlisten_prop(m, lfd)) < 0 ||
	    (sp->directory != NULL &&
	    (r = PROP(m, "WorkingDirectory", "s", sp->directory)) < 0) ||
	    (r = prop_env(m, sp, in->port)) < 0 ||
	    (r = prop_creds(m, in)) < 0 ||
	    (r = PROP(m, "SyslogIdentifier", "s", def->id)) < 0 ||
	    (r = PROP(m, "StandardOutput", "s", "journal")) < 0 ||
	    (r = PROP(m, "StandardError", "s", "inherit")) < 0)
		return r;
	if (who[0] == '\0')
		r = PROP(m, "DynamicUser", "b", 1);
	else {
		strlcpy(user, who, sizeof(user));
		if ((group = strchr(user, ':')) != NULL)
			*group++ = '\0';
		if ((r = PROP(m, "User", "s", user)) >= 0 && group != NULL)
			r = PROP(m, "Group", "s", group);
	}
	/* root, where allowed, keeps its powers, as with exec */
	if (r >= 0 && uid != 0)
		r = PROP(m, "CapabilityBoundingSet", "t", (uint64_t)0);
	if (r < 0 ||
	    (r = PROP(m, "NoNewPrivileges", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectSystem", "s", "strict")) < 0 ||
	    (r = PROP(m, "ProtectHome", "s", "read-only")) < 0 ||
	    (r = PROP(m, "PrivateTmp", "b", 1)) < 0 ||
	    (r = PROP(m, "PrivateDevices", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectKernelTunables", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectKernelModules", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectKernelLogs", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectControlGroups", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectClock", "b", 1)) < 0 ||
	    (r = PROP(m, "ProtectHostname", "b", 1)) < 0 ||
	    (r = PROP(m, "RestrictSUIDSGID", "b", 1)) < 0 ||
	    (r = PROP(m, "RestrictRealtime", "b", 1)) < 0 ||
	    (r = PROP(m, "RestrictNamespaces", "t", (uint64_t)0)) < 0 ||
	    (r = PROP(m, "LockPersonality", "b", 1)) < 0 ||
	    (r = PROP(m, "RestrictAddressFamilies", "(bas)", 1, 3, "AF_UNIX",
	    "AF_INET", "AF_INET6")) < 0 ||
	    (r = PROP(m, "SystemCallArchitectures", "as", 1, "native")) < 0 ||
	    (r = PROP(m, "SystemCallFilter", "(bas)", 1, 1,
	    "@system-service")) < 0 ||
	    (r = PROP(m, "SystemCallErrorNumber", "i", (int32_t)EPERM)) < 0 ||
	    (r = PROP(m, "UMask", "u", (uint32_t)SD_UMASK)) < 0 ||
	    (r = PROP(m, "KillMode", "s", "control-group")) < 0 ||
	    (r = PROP(m, "TimeoutStopUSec", "t",
	    (uint64_t)in->sc->grace * 1000000)) < 0 ||
	    (r = PROP(m, "CollectMode", "s", "inactive-or-failed")) < 0)
		return r;
	if (spec_size_limits(sp->size, &memory, &nano_cpus) == 0 &&
	    ((r = PROP(m, "MemoryMax", "t", (uint64_t)memory)) < 0 ||
	    (r = PROP(m, "CPUQuotaPerSecUSec", "t",
	    (uint64_t)nano_cpus / 1000)) < 0))
		return r;
	return 0;
}

/*
 * ExecStart: one command, its argv as given (after a shell that makes
 * lfd its fd 3, systemd_listen.c, when lfd is a socket to hand it), a
 * failure not ignored.
 */
static int
prop_exec(sd_bus_message *m, const char *exe, char **argv, int lfd)
{
	int r;

	if (lfd != -1)
		return sdlisten_exec(m, exe, argv);
	if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
	    (r = sd_bus_message_append(m, "s", "ExecStart")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'v', "a(sasb)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "(sasb)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'r', "sasb")) < 0 ||
	    (r = sd_bus_message_append(m, "s", exe)) < 0 ||
	    (r = prop_argv(m, argv)) < 0 ||
	    (r = sd_bus_message_append(m, "b", 0)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0)
		return r;
	return sd_bus_message_close_container(m);
}

/* The command's argv, each argument as given (sdbus_append_literal()). */
static int
prop_argv(sd_bus_message *m, char **argv)
{
	size_t i;
	int r;

	if ((r = sd_bus_message_open_container(m, 'a', "s")) < 0)
		return r;
	for (i = 0; argv[i] != NULL; i++)
		if ((r = sdbus_append_literal(m, argv[i])) < 0)
			return r;
	return sd_bus_message_close_container(m);
}

/*
 * Environment: the service's table (but for the names hk sets), PORT and
 * HOST (neither with listen = "unix").  systemd adds its own (PATH, LANG, the user's HOME, USER and
 * LOGNAME; NOTIFY_SOCKET for notify).
 */
static int
prop_env(sd_bus_message *m, const struct service_spec *sp, int port)
{
	char *e;
	size_t i;
	int r;

	if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
	    (r = sd_bus_message_append(m, "s", "Environment")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'v', "as")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "s")) < 0)
		return r;
	for (i = 0; i < sp->nenv; i++) {
		if (command_env_reserved(sp->env[i].name))
			continue;
		if (asprintf(&e, "%s=%s", sp->env[i].name,
		    sp->env[i].value) == -1)
			return -ENOMEM;
		r = sd_bus_message_append(m, "s", e);
		free(e);
		if (r < 0)
			return r;
	}
	/* listen = "unix": a socket and no port, nothing to bind */
	if (!sp->listen_unix) {
		if (asprintf(&e, "PORT=%d", port) == -1)
			return -ENOMEM;
		r = sd_bus_message_append(m, "s", e);
		free(e);
		if (r < 0 || (r = sd_bus_message_append(m, "s",
		    "HOST=127.0.0.1")) < 0)
			return r;
	}
	if ((r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0)
		return r;
	return sd_bus_message_close_container(m);
}

/*
 * The secrets, as systemd's own credentials: LoadCredential=NAME:PATH of
 * each file hk-scale wrote (inst_start()); systemd reads them as root at
 * the unit's start into its own directory, readable by the unit's user
 * (a dynamic one too), and names it $CREDENTIALS_DIRECTORY.  The unit
 * (systemctl show, its file under /run/systemd/transient) names paths,
 * never a value, as SetCredential= would.
 */
static int
prop_creds(sd_bus_message *m, const struct inst *in)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	char path[PATH_MAX];
	size_t i;
	int r;

	if (in->cred_dir[0] == '\0')
		return 0;
	if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
	    (r = sd_bus_message_append(m, "s", "LoadCredential")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'v', "a(ss)")) < 0 ||
	    (r = sd_bus_message_open_container(m, 'a', "(ss)")) < 0)
		return r;
	for (i = 0; i < sp->nsecrets; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", in->cred_dir,
		    sp->secrets[i]) >= sizeof(path))
			return -ENAMETOOLONG;
		if ((r = sd_bus_message_append(m, "(ss)", sp->secrets[i],
		    path)) < 0)
			return r;
	}
	if ((r = sd_bus_message_close_container(m)) < 0 ||
	    (r = sd_bus_message_close_container(m)) < 0)
		return r;
	return sd_bus_message_close_container(m);
}

/*
 * The files systemd reads are hk-scale's own (0500, 0400): root reads
 * them, the unit's user gets systemd's copies.
 */
static int
sd_cred_user(struct inst *in, struct user_ids *u, char *err, size_t errlen)
{
	char why[USER_ERR_LEN];

	(void)in;
	if (user_self(u, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "secrets: %s", why);
		return -1;
	}
	return 0;
}

/* StartTransientUnit answered: the job is queued, or nothing was made. */
static int
start_done(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	struct inst *in = x->in;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	char why[SCALE_REASON_MAX];

	(void)ret;
	x->call = sd_bus_slot_unref(x->call);
	if (e == NULL) {
		/* its start job, until the unit's signals say more */
		if (x->phase == SDI_START && !x->seen)
			x->job = 1;
		if (x->phase == SDI_START)
			x->phase = SDI_UP;
		return 0;
	}
	if (!sd_bus_is_open(sdbus_bus()))
		return 0;	/* the new connection looks again */
	snprintf(why, sizeof(why), "systemd: unable to start unit %s: %s",
	    x->unit, sdbus_why(e, sd_bus_message_get_errno(m)));
	start_fail(in, why);
	return 0;
}

/*
 * An earlier hk-scale's instance: its unit named by the row.  Alive if it
 * is active, starting or stopping; then watched.  Without a connection
 * to systemd the answer waits for one.
 */
static void
sd_adopt(struct inst *in, const struct store_instance *r)
{
	char err[SCALE_REASON_MAX];
	struct sd_inst *x;

	if (r->started_at <= 0 || (x = xnew(in)) == NULL) {
		backend_adopted(in, 0);
		return;
	}
	unit_name(x->unit, sizeof(x->unit), r->app, r->service, r->revision,
	    r->started_at, r->replica);
	snprintf(in->what, sizeof(in->what), "unit %s", x->unit);
	x->adopting = 1;
	x->main_pid = (uint32_t)r->pid;
	x->pid_start = r->pid_start;
	x->xport = sdlisten_adopt(in, r);
	if (sdbus_ensure(in->sc, err, sizeof(err)) == -1) {
		log_warnx("service=%s: %s: %s is looked at once connected",
		    in->id, err, in->what);
		x->phase = SDI_WAIT;
		return;
	}
	look(x);
}

/* Stop: the unit's stop job (SIGTERM, TimeoutStopSec, SIGKILL). */
static void
sd_stop(struct inst *in)
{
	struct sd_inst *x = in->priv;
	int r;

	if (x == NULL || x->stop != NULL || sdbus_bus() == NULL ||
	    x->phase == SDI_WAIT || x->phase == SDI_GONE)
		return;		/* a new connection looks again */
	if ((r = sdbus_call(&x->stop, stop_done, x, SD_PATH, SD_MANAGER,
	    "StopUnit", "ss", x->unit, "replace")) < 0)
		log_warnx("service=%s: unable to stop %s: %s", in->id,
		    in->what, strerror(-r));
}

static int
stop_done(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)ret;
	x->stop = sd_bus_slot_unref(x->stop);
	if (e == NULL || !sd_bus_is_open(sdbus_bus()))
		return 0;
	if (sd_bus_error_has_name(e, SD_NO_UNIT)) {
		gone(x, NULL);	/* ended and collected before */
		return 0;
	}
	log_warnx("service=%s: unable to stop %s: %s", x->in->id,
	    x->in->what, sdbus_why(e, sd_bus_message_get_errno(m)));
	return 0;
}

/* The grace period is over: SIGKILL to every process of the unit. */
static void
sd_kill(struct inst *in)
{
	struct sd_inst *x = in->priv;
	int r;

	if (x == NULL || x->kill != NULL || sdbus_bus() == NULL ||
	    x->phase == SDI_WAIT || x->phase == SDI_GONE)
		return;
	if ((r = sdbus_call(&x->kill, kill_done, x, SD_PATH, SD_MANAGER,
	    "KillUnit", "ssi", x->unit, "all", (int32_t)SIGKILL)) < 0)
		log_warnx("service=%s: unable to kill %s: %s", in->id,
		    in->what, strerror(-r));
}

static int
kill_done(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)ret;
	x->kill = sd_bus_slot_unref(x->kill);
	if (e != NULL && sd_bus_is_open(sdbus_bus()) &&
	    !sd_bus_error_has_name(e, SD_NO_UNIT))
		log_warnx("service=%s: unable to kill %s: %s", x->in->id,
		    x->in->what, sdbus_why(e, sd_bus_message_get_errno(m)));
	return 0;
}

/* idle_action = "suspend": the unit's cgroup frozen; freezer_done(). */
static void
sd_freeze(struct inst *in)
{
	freezer_call(in, "FreezeUnit");
}

static void
sd_thaw(struct inst *in)
{
	freezer_call(in, "ThawUnit");
}

/*
 * FreezeUnit or ThawUnit of the instance's unit: answered once done.
 * Without a connection, or a unit, it is refused at once.
 */
static void
freezer_call(struct inst *in, const char *method)
{
	struct sd_inst *x = in->priv;
	char why[SCALE_REASON_MAX];
	int r;

	if (x == NULL || sdbus_bus() == NULL || x->phase != SDI_UP ||
	    x->freeze != NULL) {
		freezer_report(in, x == NULL || x->phase == SDI_GONE ?
		    "its unit has ended" : x->freeze != NULL ?
		    "a freeze or thaw is under way" :
		    "not connected to systemd");
		return;
	}
	if ((r = sdbus_call(&x->freeze, freezer_done, x, SD_PATH, SD_MANAGER,
	    method, "s", x->unit)) < 0) {
		snprintf(why, sizeof(why), "systemd: %s: %s", method,
		    strerror(-r));
		freezer_report(in, why);
	}
}

static int
freezer_done(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	char why[SCALE_REASON_MAX];

	(void)ret;
	x->freeze = sd_bus_slot_unref(x->freeze);
	if (e != NULL && !sd_bus_is_open(sdbus_bus()))
		return 0;	/* bus_lost() reports */
	if (e != NULL)
		snprintf(why, sizeof(why), "systemd: %s",
		    sdbus_why(e, sd_bus_message_get_errno(m)));
	freezer_report(x->in, e != NULL ? why : NULL);
	return 0;
}

/* The freeze or the thaw under way is over (why: it failed). */
static void
freezer_report(struct inst *in, const char *why)
{
	if (in->freezing)
		backend_frozen(in, why);
	else if (in->thawing)
		backend_thawed(in, why);
}

/*
 * An adopted unit as its row says: frozen if the row says suspended
 * (thawed meanwhile by hand, it is frozen again), running otherwise
 * (an hk-scale killed while a freeze was under way left it frozen, or
 * frozen and its row not yet written).  systemd's answer only logs.
 */
static void
adopt_freezer(struct sd_inst *x)
{
	int suspended = strcmp(x->in->row_state, "suspended") == 0;
	int frozen = strcmp(x->freezer, "frozen") == 0 ||
	    strcmp(x->freezer, "freezing") == 0;
	const char *method = suspended ? "FreezeUnit" : "ThawUnit";
	sd_bus_slot *slot = NULL;
	char *copy;

	if (suspended == frozen)
		return;
	log_info("service=%s: %s is %s, its row %s: %s", x->in->id,
	    x->in->what, x->freezer, x->in->row_state, method);
	if ((copy = strdup(x->unit)) == NULL ||
	    sdbus_call(&slot, adopt_fixed, copy, SD_PATH, SD_MANAGER, method,
	    "s", x->unit) < 0) {
		log_warnx("systemd: unable to ask %s of %s", method, x->unit);
		free(copy);
		return;
	}
	sd_bus_slot_set_destroy_callback(slot, free);
	sd_bus_slot_set_floating(slot, 1);
	sd_bus_slot_unref(slot);
}

static int
adopt_fixed(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)ret;
	if (e != NULL && sd_bus_is_open(sdbus_bus()))
		log_warnx("systemd: %s: %s", (char *)arg,
		    sdbus_why(e, sd_bus_message_get_errno(m)));
	return 0;
}

static void
sd_row(const struct inst *in, struct store_instance *r)
{
	const struct sd_inst *x = in->priv;

	if (x == NULL)
		return;
	r->pid = x->main_pid;
	r->pid_start = x->pid_start;
}

/* Nothing is left behind a unit once it is stopped: 0, freed now. */
static int
sd_release(struct inst *in)
{
	struct sd_inst *x = in->priv;

	if (x == NULL)
		return 0;
	sd_bus_slot_unref(x->match);
	sd_bus_slot_unref(x->call);
	sd_bus_slot_unref(x->stop);
	sd_bus_slot_unref(x->kill);
	sd_bus_slot_unref(x->freeze);
	sdlisten_drop(in, x->xport);
	free(x->path);
	free(x);
	in->priv = NULL;
	return 0;
}

/* Start-up: the installation this backend serves. */
static int
sd_setup(struct scale *sc, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	sdk.sc = sc;
	return 0;
}

/*
 * The connection is going (systemd_bus.c): what was asked of it goes
 * with it, and every instance waits for the next one.
 */
void
systemd_dropped(void)
{
	struct sd_inst *x;
	struct inst *in;

	sdk.list = sd_bus_slot_unref(sdk.list);
	TAILQ_FOREACH(in, &sdk.sc->insts, entry) {
		if (in->be != &backend_systemd || (x = in->priv) == NULL)
			continue;
		x->match = sd_bus_slot_unref(x->match);
		x->call = sd_bus_slot_unref(x->call);
		x->stop = sd_bus_slot_unref(x->stop);
		x->kill = sd_bus_slot_unref(x->kill);
		x->freeze = sd_bus_slot_unref(x->freeze);
		if (x->phase != SDI_GONE)
			x->phase = SDI_WAIT;
	}
}

/*
 * The connection is gone.  A freeze or thaw unanswered: as if refused
 * (the state machine stops the instance, which the new connection does).
 */
void
systemd_lost(void)
{
	struct inst *in, *next;

	for (in = TAILQ_FIRST(&sdk.sc->insts); in != NULL; in = next) {
		next = TAILQ_NEXT(in, entry);
		if (in->be == &backend_systemd && in->priv != NULL)
			freezer_report(in, "connection to systemd lost");
	}
}

/* Connected again: every instance is looked at (stops are asked again). */
void
systemd_again(void)
{
	struct inst *in, *next;
	struct sd_inst *x;

	for (in = TAILQ_FIRST(&sdk.sc->insts); in != NULL; in = next) {
		next = TAILQ_NEXT(in, entry);
		if (in->be == &backend_systemd && (x = in->priv) != NULL &&
		    x->phase == SDI_WAIT)
			look(x);
	}
}

/* Connected: what an earlier run left is swept. */
void
systemd_connected(void)
{
	sweep();
}

/*
 * The unit's PropertiesChanged, watched before anything is asked about
 * it, so that no change falls between an answer and the watch.  On the
 * system bus only systemd's own signals match.
 */
static int
watch(struct sd_inst *x)
{
	int r;

	x->match = sd_bus_slot_unref(x->match);
	if (x->path == NULL && (r = sd_bus_path_encode(SD_UNIT_PATH, x->unit,
	    &x->path)) < 0)
		return r;
	return sd_bus_match_signal_async(sdbus_bus(), &x->match,
	    sd_bus_is_bus_client(sdbus_bus()) ? SD_DEST : NULL, x->path,
	    SD_PROPS, "PropertiesChanged", props_changed, NULL, x);
}

/*
 * Looks at the unit: GetUnit (which, unlike a look at its path, does not
 * load a unit that is not there), then its Unit and Service properties.
 */
static void
look(struct sd_inst *x)
{
	int r;

	x->phase = SDI_QUERY;
	if ((r = watch(x)) < 0 || (r = sdbus_call(&x->call, got_unit, x,
	    SD_PATH, SD_MANAGER, "GetUnit", "s", x->unit)) < 0) {
		log_warnx("service=%s: unable to look at %s: %s", x->in->id,
		    x->in->what, strerror(-r));
		look_end(x, 1);	/* a stop, if any, will say */
	}
}

static int
got_unit(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	int r;

	(void)ret;
	x->call = sd_bus_slot_unref(x->call);
	if (e != NULL && !sd_bus_is_open(sdbus_bus()))
		return 0;
	if (e != NULL && sd_bus_error_has_name(e, SD_NO_UNIT)) {
		look_end(x, 0);
		return 0;
	}
	if (e != NULL || (r = sdbus_call(&x->call, got_unit_props, x, x->path,
	    SD_PROPS, "GetAll", "s", SD_UNIT)) < 0) {
		log_warnx("service=%s: unable to look at %s: %s", x->in->id,
		    x->in->what, e != NULL ? sdbus_why(e,
		    sd_bus_message_get_errno(m)) : strerror(-r));
		look_end(x, 1);
	}
	return 0;
}

static int
got_unit_props(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	int r = 0;

	(void)ret;
	x->call = sd_bus_slot_unref(x->call);
	if (e != NULL && !sd_bus_is_open(sdbus_bus()))
		return 0;
	if (e != NULL || (r = props_read(x, m)) < 0 ||
	    (r = sdbus_call(&x->call, got_service_props, x, x->path, SD_PROPS,
	    "GetAll", "s", SD_SERVICE)) < 0) {
		log_warnx("service=%s: unable to look at %s: %s", x->in->id,
		    x->in->what, e != NULL ? sdbus_why(e,
		    sd_bus_message_get_errno(m)) : strerror(-r));
		look_end(x, 1);
	}
	return 0;
}

static int
got_service_props(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)ret;
	x->call = sd_bus_slot_unref(x->call);
	if (e != NULL && !sd_bus_is_open(sdbus_bus()))
		return 0;
	if (e != NULL || props_read(x, m) < 0)
		log_debug("service=%s: %s: no service properties", x->in->id,
		    x->in->what);
	x->seen = 1;
	look_end(x, state_up(x->active) || x->job != 0);
	return 0;
}

/*
 * The look is over: an adoption is answered; an instance looked at again
 * after a new connection goes on, or has ended meanwhile.  A stop asked
 * before is asked again.
 */
static void
look_end(struct sd_inst *x, int alive)
{
	struct inst *in = x->in;

	if (alive && state_up(x->active))
		x->left = 1;
	if (x->adopting) {
		x->adopting = 0;
		x->phase = alive ? SDI_UP : SDI_GONE;
		if (alive)
			adopt_freezer(x);
		backend_adopted(in, alive);
		return;
	}
	if (!alive) {
		gone(x, "its unit ended while hk-scale was not connected to "
		    "systemd");
		return;
	}
	x->phase = SDI_UP;
	if (in->stopping)
		sd_stop(in);
	unit_state(x);
}

/*
 * The properties of an a{sv} this backend follows: ActiveState,
 * FreezerState and Job (Unit), MainPID, ExecMainCode, ExecMainStatus and
 * Result (Service).
 */
static int
props_read(struct sd_inst *x, sd_bus_message *m)
{
	const char *name, *s;
	uint32_t u;
	int32_t i;
	int r;

	if ((r = sd_bus_message_enter_container(m, 'a', "{sv}")) < 0)
		return r;
	while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		if ((r = sd_bus_message_read(m, "s", &name)) < 0)
			return r;
		if (strcmp(name, "ActiveState") == 0) {
			if ((r = sd_bus_message_read(m, "v", "s", &s)) < 0)
				return r;
			strlcpy(x->active, s, sizeof(x->active));
		} else if (strcmp(name, "FreezerState") == 0) {
			if ((r = sd_bus_message_read(m, "v", "s", &s)) < 0)
				return r;
			strlcpy(x->freezer, s, sizeof(x->freezer));
		} else if (strcmp(name, "Job") == 0) {
			if ((r = sd_bus_message_read(m, "v", "(uo)", &u,
			    &s)) < 0)
				return r;
			x->job = u;
		} else if (strcmp(name, "MainPID") == 0) {
			if ((r = sd_bus_message_read(m, "v", "u", &u)) < 0)
				return r;
			if (u != 0 && u != x->main_pid) {
				x->main_pid = u;
				if (proc_starttime((pid_t)u,
				    &x->pid_start) == -1)
					x->pid_start = 0;
			}
		} else if (strcmp(name, "ExecMainCode") == 0) {
			if ((r = sd_bus_message_read(m, "v", "i", &i)) < 0)
				return r;
			x->code = i;
		} else if (strcmp(name, "ExecMainStatus") == 0) {
			if ((r = sd_bus_message_read(m, "v", "i", &i)) < 0)
				return r;
			x->status = i;
		} else if (strcmp(name, "Result") == 0) {
			if ((r = sd_bus_message_read(m, "v", "s", &s)) < 0)
				return r;
			strlcpy(x->result, s, sizeof(x->result));
		} else if ((r = sd_bus_message_skip(m, "v")) < 0)
			return r;
		if ((r = sd_bus_message_exit_container(m)) < 0)
			return r;
	}
	if (r < 0)
		return r;
	return sd_bus_message_exit_container(m);
}

/* systemd says what changed, the Service's first, then the Unit's. */
static int
props_changed(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	struct sd_inst *x = arg;
	const char *iface;
	int r;

	(void)ret;
	if (sd_bus_message_read(m, "s", &iface) < 0 ||
	    (strcmp(iface, SD_UNIT) != 0 && strcmp(iface, SD_SERVICE) != 0))
		return 0;
	if ((r = props_read(x, m)) < 0) {
		log_warnx("service=%s: %s: unreadable PropertiesChanged: %s",
		    x->in->id, x->in->what, strerror(-r));
		return 0;
	}
	log_debug("service=%s: %s: %s, job %u, pid %u", x->in->id,
	    x->in->what, x->active, x->job, x->main_pid);
	if (strcmp(iface, SD_UNIT) == 0) {
		x->seen = 1;
		unit_state(x);
	}
	return 0;
}

static int
state_up(const char *active)
{
	return strcmp(active, "active") == 0 ||
	    strcmp(active, "activating") == 0 ||
	    strcmp(active, "deactivating") == 0 ||
	    strcmp(active, "reloading") == 0;
}

/*
 * What the unit's state means: active is ready for a notify service and
 * for readiness "socket" (its socket listened before it started); the
 * unit has ended once inactive or failed with no job left (a start job
 * keeps a new unit inactive for a moment).
 */
static void
unit_state(struct sd_inst *x)
{
	if ((x->phase != SDI_UP && x->phase != SDI_START) || !x->seen)
		return;		/* the look under way decides */
	if (state_up(x->active)) {
		x->left = 1;
		if (x->active_ready && strcmp(x->active, "active") == 0)
			backend_ready(x->in);
		return;
	}
	if (x->left || x->job == 0)
		gone(x, NULL);
}

/*
 * The unit has ended: its exit as a wait status, and for the log what
 * systemd knows more, and where the output is.
 */
static void
gone(struct sd_inst *x, const char *why)
{
	struct inst *in = x->in;
	char last[SCALE_LINE_MAX + 1];
	const char *step = NULL;
	int status = -1;

	if (x->phase == SDI_GONE)
		return;
	x->phase = SDI_GONE;
	if (x->code == CLD_EXITED) {
		status = (x->status & 0xff) << 8;
		if (x->status >= SD_STEP_FIRST && x->status < SD_STEP_FIRST +
		    (int)(sizeof(sd_steps) / sizeof(sd_steps[0])))
			step = sd_steps[x->status - SD_STEP_FIRST];
	} else if (x->code == CLD_KILLED || x->code == CLD_DUMPED)
		status = (x->status & 0x7f) | (x->code == CLD_DUMPED ? 0x80 :
		    0);
	if (why != NULL)
		snprintf(last, sizeof(last), "%s", why);
	else if (step != NULL)
		snprintf(last, sizeof(last), "systemd could not set up %s for "
		    "it (journalctl -u %s)", step, x->unit);
	else if (x->result[0] != '\0' && strcmp(x->result, "success") != 0 &&
	    strcmp(x->result, "exit-code") != 0 &&
	    strcmp(x->result, "signal") != 0 &&
	    strcmp(x->result, "core-dump") != 0)
		snprintf(last, sizeof(last), "systemd: %s (journalctl -u %s)",
		    x->result, x->unit);
	else
		snprintf(last, sizeof(last), "journalctl -u %s", x->unit);
	log_debug("service=%s: %s ended: %s, code %d, status %d", in->id,
	    in->what, x->result, x->code, x->status);
	unixlisten_remove(in);
	backend_exited(in, status, last);
}

/*
 * Once per connection: the units of this installation (their names
 * parse, and their description is ours) that no instance describes are
 * stopped.  Instances adopted or started before the answer are known by
 * then: systemd answers in order.
 */
static void
sweep(void)
{
	sd_bus_message *m = NULL;
	int r;

	if ((r = sd_bus_message_new_method_call(sdbus_bus(), &m, SD_DEST,
	    SD_PATH, SD_MANAGER, "ListUnitsByPatterns")) < 0 ||
	    (r = sd_bus_message_append(m, "as", 0)) < 0 ||
	    (r = sd_bus_message_append(m, "as", 1, SD_PREFIX "*" SD_SUFFIX)) <
	    0 || (r = sd_bus_call_async(sdbus_bus(), &sdk.list, m, swept, NULL,
	    0)) < 0)
		log_warnx("systemd: unable to list units: %s", strerror(-r));
	sd_bus_message_unref(m);
}

static int
swept(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	const sd_bus_error *e = sd_bus_message_get_error(m);
	const char *name, *desc, *load, *active, *sub, *follow, *jtype;
	const char *path, *jpath;
	uint32_t job;
	int r, n = 0;

	(void)arg;
	(void)ret;
	sdk.list = sd_bus_slot_unref(sdk.list);
	if (e != NULL) {
		if (sd_bus_is_open(sdbus_bus()))
			log_warnx("systemd: unable to list units: %s",
			    sdbus_why(e, sd_bus_message_get_errno(m)));
		return 0;
	}
	if ((r = sd_bus_message_enter_container(m, 'a', "(ssssssouso)")) < 0)
		goto bad;
	while ((r = sd_bus_message_read(m, "(ssssssouso)", &name, &desc,
	    &load, &active, &sub, &follow, &path, &job, &jtype,
	    &jpath)) > 0)
		n += sweep_one(name, desc, active, job);
	if (r < 0)
		goto bad;
	log_debug("systemd: %d unit%s of an earlier run stopped", n,
	    n == 1 ? "" : "s");
	sdbus_arm();
	return 0;
bad:
	log_warnx("systemd: unreadable list of units: %s", strerror(-r));
	return 0;
}

static int
sweep_one(const char *name, const char *desc, const char *active,
    uint32_t job)
{
	char app[STORE_NAME_MAX + 1], service[STORE_NAME_MAX + 1];
	char want[SD_DESC_MAX];
	sd_bus_slot *slot = NULL;
	int64_t rev;
	char *copy;
	int r;

	if ((!state_up(active) && job == 0) ||
	    unit_parse(name, app, service, &rev) == -1)
		return 0;
	unit_desc(want, sizeof(want), app, service, rev);
	if (strcmp(desc, want) != 0 || find_unit(name) != NULL)
		return 0;
	log_warnx("service=%s/%s: stopping unit %s, which no instance of "
	    "this hk-scale describes", app, service, name);
	if ((copy = strdup(name)) == NULL ||
	    (r = sdbus_call(&slot, orphan_stopped, copy, SD_PATH, SD_MANAGER,
	    "StopUnit", "ss", name, "replace")) < 0) {
		log_warnx("systemd: unable to stop %s", name);
		free(copy);
		return 0;
	}
	sd_bus_slot_set_destroy_callback(slot, free);
	sd_bus_slot_set_floating(slot, 1);
	sd_bus_slot_unref(slot);
	return 1;
}

static int
orphan_stopped(sd_bus_message *m, void *arg, sd_bus_error *ret)
{
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)ret;
	if (e != NULL && sd_bus_is_open(sdbus_bus()) &&
	    !sd_bus_error_has_name(e, SD_NO_UNIT))
		log_warnx("systemd: unable to stop %s: %s", (char *)arg,
		    sdbus_why(e, sd_bus_message_get_errno(m)));
	return 0;
}

static struct sd_inst *
find_unit(const char *name)
{
	struct sd_inst *x;
	struct inst *in;

	TAILQ_FOREACH(in, &sdk.sc->insts, entry)
		if (in->be == &backend_systemd && (x = in->priv) != NULL &&
		    strcmp(x->unit, name) == 0)
			return x;
	return NULL;
}
