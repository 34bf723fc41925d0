/*
 * hk - the operator front end: validate and apply application configs,
 * show services and their output, stop, start and wake them.  Other words
 * run hk-<word>, git-style;
 * "hk events" alone lists the events.
 */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "config.h"
#include "hk.h"
#include "log.h"
#include "store.h"

static const struct command {
	const char	*name;
	int		(*run)(struct hk *, int, char **);
	int		  server;	/* needs the operator config */
} commands[] = {
	{ "apply",	cmd_apply,	1 },
	{ "history",	cmd_history,	1 },
	{ "invoke",	cmd_invoke,	1 },
	{ "logs",	cmd_logs,	1 },
	{ "new",	cmd_new,	0 },
	{ "ps",		cmd_ps,		1 },
	{ "rollback",	cmd_rollback,	1 },
	{ "routes",	cmd_routes,	1 },
	{ "runs",	cmd_runs,	1 },
	{ "secret",	cmd_secret,	1 },
	{ "start",	cmd_start,	1 },
	{ "status",	cmd_status,	1 },
	{ "stop",	cmd_stop,	1 },
	{ "validate",	cmd_validate,	1 },
	{ "vet",	cmd_vet,	1 },
	{ "volumes",	cmd_volumes,	1 },
	{ "wake",	cmd_wake,	1 },
};

/*
 * Words that run hk-<word>, and the command they run with when given no
 * argument: a bare hk-events is the daemon, not the listing "hk events"
 * asks for.
 */
static const struct external {
	const char	*name;
	const char	*bare;
} externals[] = {
	{ "events",	"list" },
};

static const char usage_text[] =
    "usage: hk [-v] [-f config] validate file ...\n"
    "       hk [-v] [-f config] vet file ...\n"
    "       hk [-v] [-f config] apply [--wait [--timeout seconds]] file ...\n"
    "       hk [-v] [-f config] apply --dry-run [--json] file ...\n"
    "       hk [-v] [-f config] ps [--json]\n"
    "       hk [-v] [-f config] routes [--json]\n"
    "       hk [-v] [-f config] status [--json] service\n"
    "       hk [-v] [-f config] history [--json] service\n"
    "       hk [-v] [-f config] rollback service [revision]\n"
    "       hk [-v] [-f config] secret set [--file path] app name\n"
    "       hk [-v] [-f config] secret list app\n"
    "       hk [-v] [-f config] secret rm app name\n"
    "       hk [-v] [-f config] logs [-f] [-n lines | all] [--since time] "
    "service\n"
    "       hk [-v] [-f config] invoke [--event json | --event @file] "
    "[--path path] [--method method] [--wait [--timeout seconds]] "
    "service\n"
    "       hk [-v] [-f config] runs [--json] [service]\n"
    "       hk [-v] [-f config] runs show [--json] id\n"
    "       hk [-v] [-f config] stop service\n"
    "       hk [-v] [-f config] start service\n"
    "       hk [-v] [-f config] wake [--wait [--timeout seconds]] service\n"
    "       hk [-v] [-f config] volumes [--json] [app[/service]]\n"
    "       hk [-v] [-f config] volumes rm app/service name\n"
    "       hk [-v] new [--framework fastapi | express] python | node "
    "name [directory]\n"
    "       hk [-v] [-f config] events [list | tail | requests] "
    "[argument ...]\n"
    "       hk [-v] [-f config] command [argument ...]\n";

static void	usage(int) __attribute__((noreturn));
static int	run_external(const char *, int, char **);
static int	run_bare(const char *);
static int	finish_stdout(int);

static void
usage(int code)
{
	fputs(usage_text, code == 0 ? stdout : stderr);
	exit(code);
}

/* Opens the store named by the operator config, once. */
int
hk_store(struct hk *hk)
{
	char err[STORE_ERR_LEN];

	if (hk->store != NULL)
		return EX_OK;
	hk->store = store_open(hk->cfg.state, err, sizeof(err));
	if (hk->store == NULL) {
		log_errorx("unable to open store %s: %s", hk->cfg.state, err);
		return EX_UNAVAILABLE;
	}
	return EX_OK;
}

/* Reports a failed store call; busy means "try again later". */
int
hk_store_failed(struct hk *hk, const char *what)
{
	log_errorx("unable to %s: %s", what, store_error(hk->store));
	return store_busy(hk->store) ? EX_TEMPFAIL : EX_IOERR;
}

/* hk-<word> beside this binary first, then on PATH, as git does. */
static int
run_external(const char *word, int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 128], name[128];
	ssize_t n;
	char *slash;

	(void)argc;
	if (snprintf(name, sizeof(name), "hk-%s", word) >= (int)sizeof(name) ||
	    strchr(word, '/') != NULL) {
		log_errorx("unknown command: %s", word);
		return EX_USAGE;
	}
	argv[0] = name;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			if (snprintf(path, sizeof(path), "%s/%s", self,
			    name) < (int)sizeof(path))
				execv(path, argv);
		}
	}
	execvp(name, argv);
	if (errno == ENOENT) {
		log_errorx("unknown command: %s (see hk -h)", word);
		return EX_USAGE;
	}
	log_error("unable to run %s", name);
	return 126;
}

/* hk-<word> with its command for no argument, if it has one; else -1. */
static int
run_bare(const char *word)
{
	char *argv[3];
	size_t i;

	for (i = 0; i < sizeof(externals) / sizeof(externals[0]); i++) {
		if (strcmp(word, externals[i].name) != 0)
			continue;
		argv[0] = (char *)word;
		argv[1] = (char *)externals[i].bare;
		argv[2] = NULL;
		return run_external(word, 2, argv);
	}
	return -1;
}

/* git's rule: output that could not be written is an error. */
static int
finish_stdout(int code)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		if (errno == EPIPE)
			return code;
		log_error("unable to write standard output");
		return EX_IOERR;
	}
	return code;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct hk hk;
	struct config_diag diag;
	const char *config_path = NULL;
	size_t i;
	int ch, verbose = 0, missing = 0, code;

	log_init(PROG, 0);
	argv[0] = log_getopt_name();
	while ((ch = getopt_long(argc, argv, "+f:hv", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'f':
			config_path = optarg;
			break;
		case 'h':
			usage(EX_OK);
		case 'v':
			verbose = 1;
			break;
		default:
			usage(EX_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(EX_USAGE);
	log_verbose(verbose);

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[0], commands[i].name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		/* hk -f config events ...: hk-events reads the same file. */
		if (config_path != NULL &&
		    setenv("HAKOPOD_CONFIG", config_path, 1) == -1)
			fatal(EX_OSERR, "setenv");
		if (argc == 1 && (code = run_bare(argv[0])) != -1)
			return code;
		return run_external(argv[0], argc, argv);
	}

	memset(&hk, 0, sizeof(hk));
	memset(&diag, 0, sizeof(diag));
	/* hk new writes files here: no installation needed. */
	if (commands[i].server &&
	    config_load_server(&hk.cfg, config_path, &diag, &missing) == -1) {
		for (i = 0; i < diag.count && i < CONFIG_DIAG_MAX; i++)
			fprintf(stderr, "%s\n", diag.msg[i]);
		return missing ? EX_NOINPUT : EX_CONFIG;
	}
	optind = 0;	/* each command parses its own options (glibc: reset) */
	argv[0] = log_getopt_name();
	code = commands[i].run(&hk, argc, argv);
	if (hk.store != NULL)
		store_close(hk.store);
	return finish_stdout(code);
}
