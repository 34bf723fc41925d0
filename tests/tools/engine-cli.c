/*
 * engine-cli - hk-scale's engine client on a loop, one operation per run,
 * for the tests (tests/integration/2100-engine.t) and for trying an
 * engine by hand.
 *
 *	engine-cli [-t ms] [-c cert -k key -a ca] URL version
 *	engine-cli ... URL image NAME | pull NAME
 *	engine-cli ... URL create [-e K=V] [-l k=v] [-p PORT] [-P IP:PORT]
 *	    [-N NETWORK] [-m BYTES] [-C NANOCPUS] [-n NAME] IMAGE [CMD...]
 *	engine-cli ... URL start ID | stop ID SECONDS | kill ID SIGNAL |
 *	    pause ID | unpause ID | rm ID | inspect ID [PORT] | ls [k=v...]
 *	engine-cli ... URL exec ID CMD...
 *	engine-cli ... URL events [k=v...]
 *	engine-cli ... URL logs ID [SINCE]
 *
 * What the engine said goes to stdout, one fact a line: "version 4.3.1",
 * a new container's ID, "status=running running=1 exit=0 health=healthy
 * pid=N published=127.0.0.1:8080", "ID STATE" per container listed,
 * "exit N" for a command run in a container (exec).  events prints "up",
 * "down REASON", "create ID", "start ID", "die ID CODE", "health ID
 * STATUS" as they come, until SIGTERM or SIGINT; logs prints "stdout:
 * LINE" or "stderr: LINE" until the stream ends, then "end".  A failure
 * is "engine-cli: error: STATUS: REASON" on stderr.  With -T, the loop
 * also ticks every 10 ms and "loop: ticks=N maxgap=MS" on stderr at the
 * end says whether anything held it up.
 *
 * Exit status: 0 done; 1 the engine refused (a non-2xx status, an error
 * in a stream); 64 usage; 69 no answer (status 0: refused, timed out); 71
 * a system call failed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "engine.h"
#include "loop.h"

#define PROG	"engine-cli"
#define MAXARGS	32

struct cli {
	struct loop		*loop;
	struct engine		*e;
	struct loop_timer	 tick;
	int64_t			 last;
	int64_t			 maxgap;
	long			 ticks;
	struct engine_events	*events;
	int			 port;		/* inspect: the port to show */
	char			 exec_id[ENGINE_ID_MAX];
	int			 rc;
};

static void	usage(void) __attribute__((noreturn));
static void	done(struct cli *, int, const char *);
static void	on_done(void *, int, json_t *, const char *);
static void	on_version(void *, int, json_t *, const char *);
static void	on_id(void *, int, json_t *, const char *);
static void	on_inspect(void *, int, json_t *, const char *);
static void	on_list(void *, int, json_t *, const char *);
static void	on_event(const struct engine_event *, void *);
static void	on_exec_created(void *, int, json_t *, const char *);
static void	on_exec_ran(void *, int, json_t *, const char *);
static void	on_exec_done(void *, int, json_t *, const char *);
static int	on_line(int, const char *, size_t, void *);
static void	on_signal(struct loop *, int, void *);
static void	on_tick(struct loop *, void *);
static struct engine_call *create(struct cli *, int, char **);
static struct engine_call *dispatch(struct cli *, int, char **);

static void
usage(void)
{
	fprintf(stderr, "usage: %s [-T] [-t ms] [-c cert -k key -a ca] URL "
	    "version | image NAME | pull NAME | create [-e K=V] [-l k=v] "
	    "[-p PORT] [-P IP:PORT] [-N NETWORK] [-m BYTES] [-C NANOCPUS] "
	    "[-n NAME] IMAGE [CMD...] | start ID | stop ID SECONDS | "
	    "kill ID SIGNAL | pause ID | unpause ID | rm ID | "
	    "inspect ID [PORT] | ls [k=v...] | "
	    "exec ID CMD... | events [k=v...] | logs ID [SINCE]\n", PROG);
	exit(EX_USAGE);
}

static void
done(struct cli *cli, int status, const char *err)
{
	if (err != NULL) {
		fprintf(stderr, "%s: error: %d: %s\n", PROG, status, err);
		cli->rc = status == 0 ? EX_UNAVAILABLE : 1;
	}
	loop_stop(cli->loop);
}

static void
on_done(void *arg, int status, json_t *body, const char *err)
{
	(void)body;
	if (err == NULL)
		printf("ok %d\n", status);
	done(arg, status, err);
}

static void
on_version(void *arg, int status, json_t *body, const char *err)
{
	const char *v, *api;

	if (err == NULL) {
		v = json_string_value(json_object_get(body, "Version"));
		api = json_string_value(json_object_get(body, "ApiVersion"));
		printf("version %s\napi %s\n", v ? v : "?", api ? api : "?");
	}
	done(arg, status, err);
}

/* A create's or an image's answer: its ID. */
static void
on_id(void *arg, int status, json_t *body, const char *err)
{
	const char *id;

	if (err == NULL) {
		id = json_string_value(json_object_get(body, "Id"));
		printf("%s\n", id != NULL ? id : "?");
	}
	done(arg, status, err);
}

static void
on_inspect(void *arg, int status, json_t *body, const char *err)
{
	struct cli *cli = arg;
	struct engine_state st;
	char why[ENGINE_ERR_LEN];

	if (err == NULL && engine_state(body, cli->port, &st, why,
	    sizeof(why)) == -1)
		err = why;
	if (err == NULL)
		printf("status=%s running=%d exit=%d health=%s pid=%d "
		    "published=%s:%d\n", st.status, st.running, st.exit_code,
		    st.health[0] ? st.health : "none", st.pid, st.host_ip,
		    st.host_port);
	done(cli, status, err);
}

static void
on_list(void *arg, int status, json_t *body, const char *err)
{
	const char *id, *state;
	json_t *c;
	size_t i;

	if (err == NULL && !json_is_array(body))
		err = "the list is not an array";
	if (err == NULL)
		json_array_foreach(body, i, c) {
			id = engine_id(c);
			state = json_string_value(json_object_get(c, "State"));
			printf("%s %s\n", id ? id : "?", state ? state : "?");
		}
	done(arg, status, err);
}

static void
on_event(const struct engine_event *ev, void *arg)
{
	(void)arg;
	switch (ev->kind) {
	case ENGINE_EV_UP:
		printf("up\n");
		break;
	case ENGINE_EV_DOWN:
		printf("down %s\n", ev->reason);
		break;
	case ENGINE_EV_CREATE:
		printf("create %s\n", ev->id);
		break;
	case ENGINE_EV_START:
		printf("start %s\n", ev->id);
		break;
	case ENGINE_EV_DIE:
		printf("die %s %d\n", ev->id, ev->exit_code);
		break;
	case ENGINE_EV_HEALTH:
		printf("health %s %s\n", ev->id, ev->health);
		break;
	}
	fflush(stdout);
}

static int
on_line(int stream, const char *line, size_t len, void *arg)
{
	(void)arg;
	printf("%s: %.*s\n", stream == 2 ? "stderr" : "stdout", (int)len,
	    line);
	fflush(stdout);
	return 0;
}

/* exec: created, then run to its end, then inspected for its status. */
static void
on_exec_created(void *arg, int status, json_t *body, const char *err)
{
	struct cli *cli = arg;
	const char *id = engine_id(body);

	if (err == NULL && id == NULL)
		err = "no exec ID";
	if (err != NULL) {
		done(cli, status, err);
		return;
	}
	strlcpy(cli->exec_id, id, sizeof(cli->exec_id));
	if (engine_exec_start(cli->e, cli->exec_id, on_exec_ran, cli) == NULL)
		done(cli, 0, strerror(errno));
}

static void
on_exec_ran(void *arg, int status, json_t *body, const char *err)
{
	struct cli *cli = arg;

	(void)body;
	if (err != NULL)
		done(cli, status, err);
	else if (engine_exec_inspect(cli->e, cli->exec_id, on_exec_done,
	    cli) == NULL)
		done(cli, 0, strerror(errno));
}

static void
on_exec_done(void *arg, int status, json_t *body, const char *err)
{
	int code = -1;

	if (err == NULL && engine_exec_state(body, &code) != 0)
		err = "not an exited exec";
	if (err == NULL)
		printf("exit %d\n", code);
	done(arg, status, err);
}

static void
on_signal(struct loop *l, int sig, void *arg)
{
	(void)sig;
	(void)arg;
	loop_stop(l);
}

static void
on_tick(struct loop *l, void *arg)
{
	struct cli *cli = arg;
	int64_t now = loop_clock_us() / 1000;

	if (cli->last > 0 && now - cli->last > cli->maxgap)
		cli->maxgap = now - cli->last;
	cli->last = now;
	cli->ticks++;
	loop_timer_at(l, &cli->tick, loop_now_ms(l) + 10);
}

static struct engine_call *
create(struct cli *cli, int argc, char **argv)
{
	const char *env[MAXARGS + 1], *labels[MAXARGS + 1];
	const char *tmpfs[] = { "/tmp:rw,notmpcopyup", NULL };
	struct engine_spec s;
	size_t ne = 0, nl = 0;
	char *colon;
	int ch;

	memset(&s, 0, sizeof(s));
	s.env = env;
	s.labels = labels;
	s.tmpfs = tmpfs;
	s.nofile = 1024;
	s.nproc = 1024;
	optind = 1;
	while ((ch = getopt(argc, argv, "+e:l:p:P:N:m:C:n:")) != -1) {
		if ((ch == 'e' && ne == MAXARGS) ||
		    (ch == 'l' && nl == MAXARGS))
			usage();
		if (ch == 'e')
			env[ne++] = optarg;
		else if (ch == 'l')
			labels[nl++] = optarg;
		else if (ch == 'p')
			s.port = atoi(optarg);
		else if (ch == 'P' && (colon = strrchr(optarg, ':')) != NULL) {
			*colon = '\0';
			s.host_ip = optarg;
			s.host_port = atoi(colon + 1);
		} else if (ch == 'N')
			s.network = optarg;
		else if (ch == 'm')
			s.memory = atoll(optarg);
		else if (ch == 'C')
			s.nano_cpus = atoll(optarg);
		else if (ch == 'n')
			s.name = optarg;
		else
			usage();
	}
	env[ne] = labels[nl] = NULL;
	if (optind >= argc)
		usage();
	s.image = argv[optind];
	if (optind + 1 < argc)
		s.cmd = (const char *const *)argv + optind + 1;
	return engine_create(cli->e, &s, on_id, cli);
}

/* Starts the operation argv names; NULL when it could not start. */
static struct engine_call *
dispatch(struct cli *cli, int argc, char **argv)
{
	const char *cmd = argv[0], *const *rest;
	struct engine *e = cli->e;

	rest = (const char *const *)argv + 1;
	if (strcmp(cmd, "version") == 0 && argc == 1)
		return engine_version(e, on_version, cli);
	if (strcmp(cmd, "image") == 0 && argc == 2)
		return engine_image_inspect(e, argv[1], on_id, cli);
	if (strcmp(cmd, "pull") == 0 && argc == 2)
		return engine_image_pull(e, argv[1], NULL, on_done, cli);
	if (strcmp(cmd, "create") == 0)
		return create(cli, argc, argv);
	if (strcmp(cmd, "start") == 0 && argc == 2)
		return engine_start(e, argv[1], on_done, cli);
	if (strcmp(cmd, "stop") == 0 && argc == 3)
		return engine_stop(e, argv[1], atoi(argv[2]), on_done, cli);
	if (strcmp(cmd, "kill") == 0 && argc == 3)
		return engine_kill(e, argv[1], argv[2], on_done, cli);
	if (strcmp(cmd, "pause") == 0 && argc == 2)
		return engine_pause(e, argv[1], on_done, cli);
	if (strcmp(cmd, "unpause") == 0 && argc == 2)
		return engine_unpause(e, argv[1], on_done, cli);
	if (strcmp(cmd, "rm") == 0 && argc == 2)
		return engine_remove(e, argv[1], on_done, cli);
	if (strcmp(cmd, "inspect") == 0 && (argc == 2 || argc == 3)) {
		cli->port = argc == 3 ? atoi(argv[2]) : 0;
		return engine_inspect(e, argv[1], on_inspect, cli);
	}
	if (strcmp(cmd, "ls") == 0)
		return engine_list(e, rest, on_list, cli);
	if (strcmp(cmd, "exec") == 0 && argc >= 3)
		return engine_exec_create(e, argv[1], rest + 1,
		    on_exec_created, cli);
	if (strcmp(cmd, "logs") == 0 && (argc == 2 || argc == 3))
		return engine_logs(e, argv[1], argc == 3 ? atoll(argv[2]) : 0,
		    on_line, on_done, cli);
	usage();
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGTERM, SIGINT };
	struct engine_conf conf;
	struct cli cli;
	char err[ENGINE_ERR_LEN];
	int ch, tick = 0;

	memset(&cli, 0, sizeof(cli));
	memset(&conf, 0, sizeof(conf));
	while ((ch = getopt(argc, argv, "+Tt:c:k:a:")) != -1) {
		if (ch == 'T')
			tick = 1;
		else if (ch == 't')
			conf.timeout_ms = atol(optarg);
		else if (ch == 'c')
			conf.tls_cert = optarg;
		else if (ch == 'k')
			conf.tls_key = optarg;
		else if (ch == 'a')
			conf.tls_ca = optarg;
		else
			usage();
	}
	argc -= optind;
	argv += optind;
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	conf.url = argv[0];
	if ((cli.loop = loop_new()) == NULL ||
	    loop_signals(cli.loop, sigs, 2, on_signal, &cli) == -1) {
		perror(PROG ": loop");
		return EX_OSERR;
	}
	if ((cli.e = engine_open(cli.loop, &conf, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s: error: %s\n", PROG, err);
		return EX_USAGE;
	}
	if (tick) {
		loop_timer_init(&cli.tick, on_tick, &cli);
		on_tick(cli.loop, &cli);
	}
	if (strcmp(argv[1], "events") == 0)
		cli.events = engine_events_open(cli.e,
		    (const char *const *)argv + 2, on_event, &cli);
	if (strcmp(argv[1], "events") == 0 ? cli.events == NULL :
	    dispatch(&cli, argc - 1, argv + 1) == NULL) {
		perror(PROG ": unable to start");
		return EX_USAGE;
	}
	loop_run(cli.loop);
	if (tick)
		fprintf(stderr, "loop: ticks=%ld maxgap=%lld\n", cli.ticks,
		    (long long)cli.maxgap);
	engine_events_close(cli.events);
	engine_close(cli.e);
	loop_free(cli.loop);
	return cli.rc;
}
