/*
 * logs.c - "hk logs": a service's own output, from the log hk-scale keeps
 * of it (svclog.h): the rotated files oldest first, then "current".
 *
 * -f follows "current" with a short poll (LOGS_POLL_MS): a line hk-scale
 * writes shows within that time.  When another file has taken the name
 * (a rotation), what is left of the old one is read and the new one
 * opened, so no line is lost across a rotation, a sleep or a wake.
 * A systemd service's output is in the journal: journalctl shows it.
 * A container service on another node ([nodes.NAME] of hakopod.toml):
 * its containers' output is read from that node's engine (logs_node.c).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "hk.h"
#include "log.h"
#include "logs.h"
#include "spec.h"
#include "store.h"
#include "svclog.h"

#define LOGS_POLL_MS		100
#define LOGS_DEFAULT_LINES	100
#define LOGS_MAX_LINES		1000000
#define LOGS_USAGE \
	"usage: hk [-v] [-f config] logs [-f] [-n lines | all] " \
	"[--since time] service\n"

static int	parse_since(const char *, char *, size_t);
static int	parse_rfc3339(const char *, int64_t *);
static int	is_rotated(const struct dirent *);
static int	read_file(struct tail *, FILE *);
static int	follow(struct tail *, const char *, FILE *);
static int	journal(const char *, const char *, int, const char *,
		    const char *);
static int	placement(const struct hk *, const struct store_service *,
		    const struct config_node **);

/* --since: RFC 3339, or a duration back from now: 30s, 10m, 2h, 1d. */
static int
parse_since(const char *arg, char *buf, size_t len)
{
	int64_t ms, unit;
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (end != arg && errno == 0 && v >= 0 && end[0] != '\0' &&
	    end[1] == '\0' && strchr("smhd", end[0]) != NULL) {
		unit = end[0] == 's' ? 1000 : end[0] == 'm' ? 60000 :
		    end[0] == 'h' ? 3600000 : 86400000;
		if (v > INT64_MAX / unit / 2)
			return -1;
		ms = store_now_ms() - v * unit;
	} else if (parse_rfc3339(arg, &ms) == -1)
		return -1;
	svclog_time(buf, len, ms < 0 ? 0 : ms);
	return 0;
}

/* 2026-12-02T01:23:45[.678](Z|+01:00) into Unix ms. */
static int
parse_rfc3339(const char *s, int64_t *ms)
{
	struct tm tm;
	const char *p;
	int frac = 0, digits = 0, oh, om;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if ((p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL &&
	    (p = strptime(s, "%Y-%m-%d %H:%M:%S", &tm)) == NULL)
		return -1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (digits++ < 3)
				frac = frac * 10 + (*p - '0');
	for (; digits < 3; digits++)
		frac *= 10;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	if (*p == 'Z' || *p == 'z')
		p++;
	else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &oh,
	    &om) == 2 && strlen(p) == 6) {
		t -= (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
		p += 6;
	} else
		return -1;
	if (*p != '\0')
		return -1;
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

static int
is_rotated(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] == '@' && n > 3 &&
	    strcmp(d->d_name + n - 2, ".s") == 0;
}

/* A whole line: shown at once when following, else kept in the ring. */
void
logs_take(struct tail *t, const char *line)
{
	char *dup;

	if (t->since[0] != '\0' && strncmp(line, t->since,
	    SVCLOG_TIME_LEN) < 0)
		return;
	if (t->keep != NULL) {
		if (t->skip == NULL || !t->skip(line, t->skiparg))
			logs_keep(t->keep, line);
		return;
	}
	if (t->n < 0 || t->live) {
		fputs(line, stdout);
		return;
	}
	if (t->n == 0)
		return;
	if ((dup = strdup(line)) == NULL)
		fatal(EX_OSERR, "strdup");
	free(t->ring[t->count % t->n]);
	t->ring[t->count % t->n] = dup;
	t->count++;
}

/* Whole lines to EOF; a line still being written is left for later. */
static int
read_file(struct tail *t, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	clearerr(f);
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] != '\n') {
			fseeko(f, -len, SEEK_CUR);
			break;
		}
		logs_take(t, line);
	}
	free(line);
	return ferror(f) ? -1 : 0;
}

void
logs_keep(struct logs_lines *l, const char *line)
{
	char **v;

	if (l->n == l->cap) {
		if ((v = reallocarray(l->v, l->cap ? l->cap * 2 : 256,
		    sizeof(*v))) == NULL)
			fatal(EX_OSERR, "reallocarray");
		l->v = v;
		l->cap = l->cap ? l->cap * 2 : 256;
	}
	if ((l->v[l->n] = strdup(line)) == NULL)
		fatal(EX_OSERR, "strdup");
	l->n++;
}

void
logs_flush(struct tail *t)
{
	long long i, first;

	t->live = 1;
	if (t->ring == NULL)
		return;
	first = t->count > t->n ? t->count - t->n : 0;
	for (i = first; i < t->count; i++) {
		fputs(t->ring[i % t->n], stdout);
		free(t->ring[i % t->n]);
	}
	free(t->ring);
	t->ring = NULL;
	fflush(stdout);
}

/* Polls "current" for ever, onto the next file when it is rotated. */
static int
follow(struct tail *t, const char *dir, FILE *f)
{
	char path[SVCLOG_PATH_MAX + 16];
	struct stat ps, fs;
	const struct timespec nap = { 0, LOGS_POLL_MS * 1000000L };

	snprintf(path, sizeof(path), "%s/" SVCLOG_CURRENT, dir);
	for (;;) {
		if (f != NULL && read_file(t, f) == -1) {
			log_error("%s", path);
			return EX_IOERR;
		}
		if (fflush(stdout) == EOF)
			return EX_IOERR;
		if (stat(path, &ps) == 0 && (f == NULL ||
		    (fstat(fileno(f), &fs) == 0 && (fs.st_ino != ps.st_ino ||
		    fs.st_dev != ps.st_dev)))) {
			if (f != NULL) {	/* its rest, then the new one */
				read_file(t, f);
				fclose(f);
			}
			f = fopen(path, "r");
			continue;
		}
		nanosleep(&nap, NULL);
	}
}

/*
 * Where its output is: 1 in the journal (systemd), else 0 and *node the
 * [nodes.NAME] whose engine runs its containers, or NULL: this host's log.
 */
static int
placement(const struct hk *hk, const struct store_service *svc,
    const struct config_node **node)
{
	struct service_spec sp;
	const struct config_node *n;
	char err[SPEC_ERR_LEN];
	int r;

	*node = NULL;
	if (spec_decode(svc->spec_json, &sp, err, sizeof(err)) == -1)
		return 0;
	r = sp.backend == BACKEND_SYSTEMD;
	if (sp.backend == BACKEND_CONTAINER && sp.node_name != NULL &&
	    (n = config_node_find(&hk->cfg, sp.node_name)) != NULL &&
	    n->container_engine[0] != '\0')
		*node = n;
	spec_clear(&sp);
	return r;
}

/* The journal has a systemd service's lines, under its units' names. */
static int
journal(const char *app, const char *name, int fflag, const char *n,
    const char *since)
{
	char unit[2 * STORE_NAME_MAX + 32], sincearg[64];
	const char *argv[12];
	int64_t ms;
	int i = 0;

	snprintf(unit, sizeof(unit), "hk-svc-%s.%s-*", app, name);
	argv[i++] = "journalctl";
	argv[i++] = "-o";
	argv[i++] = "short-iso-precise";
	argv[i++] = "-u";
	argv[i++] = unit;
	argv[i++] = "-n";
	argv[i++] = n;
	if (since != NULL) {
		if (parse_rfc3339(since, &ms) == -1) {
			/* a duration: svclog_time() did the sums */
			char t[SVCLOG_TIME_LEN + 1];

			parse_since(since, t, sizeof(t));
			parse_rfc3339(t, &ms);
		}
		snprintf(sincearg, sizeof(sincearg), "--since=@%lld",
		    (long long)(ms / 1000));
		argv[i++] = sincearg;
	}
	if (fflag)
		argv[i++] = "-f";
	argv[i] = NULL;
	fflush(stdout);
	execvp(argv[0], (char **)argv);
	log_error("%s/%s runs under systemd, its output is in the journal: "
	    "unable to run journalctl", app, name);
	return EX_UNAVAILABLE;
}

/*
 * The rotated files oldest first, then "current": EX_OK, or EX_NOINPUT
 * when one could not be read.  With current set, "current" is left open
 * there (NULL if there is none yet), for -f.
 */
int
logs_read_dir(struct tail *t, const char *dir, FILE **current)
{
	struct dirent **names;
	char path[SVCLOG_PATH_MAX + 300];
	FILE *f;
	int i, nf, code = EX_OK;

	if (current != NULL)
		*current = NULL;
	if ((nf = scandir(dir, &names, is_rotated, alphasort)) == -1) {
		if (errno != ENOENT) {
			log_error("%s", dir);
			return EX_NOINPUT;
		}
		nf = 0;		/* nothing printed yet */
		names = NULL;
	}
	for (i = 0; i <= nf; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, i < nf ?
		    names[i]->d_name : SVCLOG_CURRENT);
		if (i < nf)
			free(names[i]);
		if ((f = fopen(path, "r")) == NULL) {
			if (errno == ENOENT)	/* rotated or pruned meanwhile */
				continue;
			log_error("%s", path);
			code = EX_NOINPUT;
			continue;
		}
		read_file(t, f);
		if (i == nf && current != NULL)
			*current = f;
		else
			fclose(f);
	}
	free(names);
	return code;
}

int
cmd_logs(struct hk *hk, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "since", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct store_service svc;
	struct tail t;
	const struct config_node *node;
	char dir[SVCLOG_PATH_MAX];
	const char *errstr, *narg = "100", *since = NULL;
	FILE *f = NULL;
	int ch, fflag = 0, code;

	memset(&t, 0, sizeof(t));
	t.n = LOGS_DEFAULT_LINES;
	while ((ch = getopt_long(argc, argv, "fhn:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			fflag = 1;
			break;
		case 'h':
			fputs(LOGS_USAGE, stdout);
			exit(EX_OK);
		case 'n':
			narg = optarg;
			t.n = strcmp(optarg, "all") == 0 ? -1 :
			    strtonum(optarg, 0, LOGS_MAX_LINES, &errstr);
			if (t.n >= 0 && errstr != NULL) {
				log_errorx("-n: %s is %s (0 to %d, or all)",
				    optarg, errstr, LOGS_MAX_LINES);
				return EX_USAGE;
			}
			break;
		case 'S':
			since = optarg;
			if (parse_since(optarg, t.since, sizeof(t.since)) ==
			    -1) {
				log_errorx("--since: %s: neither an RFC 3339 "
				    "time nor a duration (10m)", optarg);
				return EX_USAGE;
			}
			break;
		default:
			fputs(LOGS_USAGE, stderr);
			return EX_USAGE;
		}
	}
	if (optind != argc - 1) {
		fputs(LOGS_USAGE, stderr);
		return EX_USAGE;
	}
	if ((code = hk_store(hk)) != EX_OK ||
	    (code = resolve_service(hk, argv[optind], &svc)) != EX_OK)
		return code;
	if (placement(hk, &svc, &node)) {
		free(svc.spec_json);
		return journal(svc.app, svc.name, fflag, t.n < 0 ? "all" :
		    narg, since);
	}
	if (svclog_dir(&hk->cfg, svc.app, svc.name, dir, sizeof(dir)) == -1) {
		free(svc.spec_json);
		log_errorx("%s/%s: log directory name too long", svc.app,
		    svc.name);
		return EX_SOFTWARE;
	}
	if (t.n > 0 && (t.ring = calloc(t.n, sizeof(*t.ring))) == NULL)
		fatal(EX_OSERR, "calloc");
	if (node != NULL) {
		code = logs_node(hk, &svc, node, dir, &t, fflag);
		free(svc.spec_json);
		return code;
	}
	free(svc.spec_json);
	code = logs_read_dir(&t, dir, fflag ? &f : NULL);
	logs_flush(&t);
	if (fflag)
		return follow(&t, dir, f);
	return code;
}
