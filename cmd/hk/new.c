/*
 * new.c - "hk new": a starter function written into a directory.
 *
 * The files come from etc/starters/<kind>/, built into hk (starters.h),
 * with "@NAME@" replaced by the name.  Nothing is overwritten and nothing
 * is left half written: every file is first written under a temporary
 * name in the directory, then linked to its own name, which fails if the
 * name exists; on any failure the links made so far are removed again.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
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
#include "starters.h"

#define NEW_FILES_MAX	8	/* files of one starter */
#define NEW_MARK	"@NAME@"

/* A language and, optionally, its framework name a starter. */
static const struct kind {
	const char	*lang;
	const char	*framework;	/* NULL: the standard library */
	const char	*kind;		/* folder in etc/starters */
	const char	*next;		/* a step before hk apply, or NULL */
} kinds[] = {
	{ "python",	NULL,		"python",	NULL },
	{ "node",	NULL,		"node",		NULL },
	{ "python",	"fastapi",	"fastapi",	NULL },
	{ "node",	"express",	"express",	"npm install" },
};

struct out {
	const struct starter_file	*f;
	char				 path[PATH_MAX];
	char				 tmp[PATH_MAX];
	int				 linked;
};

static const char new_usage_text[] =
    "usage: hk [-v] new [--framework fastapi | express] python | node "
    "name [directory]\n";

static const struct kind *find_kind(const char *, const char *);
static int	plan_files(const struct kind *, const char *, struct out *,
		    size_t *);
static int	write_temp(struct out *, const char *, const char *);
static int	write_all(int, const void *, size_t);
static int	link_all(struct out *, size_t);
static void	undo(struct out *, size_t);

static const struct kind *
find_kind(const char *lang, const char *framework)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(kinds[i].lang, lang) != 0)
			continue;
		if (framework == NULL ? kinds[i].framework == NULL :
		    kinds[i].framework != NULL &&
		    strcmp(kinds[i].framework, framework) == 0)
			return &kinds[i];
	}
	return NULL;
}

/*
 * The starter's files and their paths in dir; EX_CANTCREAT, with the
 * reason said, if one exists already, so that nothing is written.
 */
static int
plan_files(const struct kind *k, const char *dir, struct out *o, size_t *n)
{
	struct stat st;
	size_t i;
	int code = EX_OK;

	*n = 0;
	for (i = 0; i < starter_nfiles; i++) {
		if (strcmp(starter_files[i].kind, k->kind) != 0)
			continue;
		if (*n == NEW_FILES_MAX)
			fatalx(EX_SOFTWARE, "starter %s: too many files",
			    k->kind);
		o[*n].f = &starter_files[i];
		o[*n].linked = 0;
		o[*n].tmp[0] = '\0';
		if (snprintf(o[*n].path, sizeof(o[*n].path), "%s/%s", dir,
		    starter_files[i].name) >= (int)sizeof(o[*n].path)) {
			log_errorx("%s: path too long", dir);
			return EX_CANTCREAT;
		}
		if (lstat(o[*n].path, &st) == 0) {
			log_errorx("%s: exists", o[*n].path);
			code = EX_CANTCREAT;
		} else if (errno != ENOENT && errno != ENOTDIR) {
			log_error("%s", o[*n].path);
			code = EX_CANTCREAT;
		}
		(*n)++;
	}
	if (*n == 0)
		fatalx(EX_SOFTWARE, "starter %s: no files", k->kind);
	return code;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * The file, with the name in place of each mark, under a temporary name
 * in dir.  Mode 0644 whatever the umask: instances may run as another
 * user (hk.toml(5), user), who must read the handler.
 */
static int
write_temp(struct out *o, const char *dir, const char *name)
{
	const char *p = (const char *)o->f->data, *end = p + o->f->len, *m;
	size_t ml = strlen(NEW_MARK);
	int fd;

	if (snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.XXXXXX", dir,
	    o->f->name) >= (int)sizeof(o->tmp)) {
		o->tmp[0] = '\0';
		log_errorx("%s: path too long", dir);
		return -1;
	}
	if ((fd = mkstemp(o->tmp)) == -1) {
		log_error("%s", o->path);
		o->tmp[0] = '\0';
		return -1;
	}
	while (p < end) {
		m = memmem(p, (size_t)(end - p), NEW_MARK, ml);
		if (write_all(fd, p, (m ? m : end) - p) == -1 ||
		    (m != NULL && write_all(fd, name, strlen(name)) == -1))
			goto fail;
		p = m ? m + ml : end;
	}
	if (fchmod(fd, 0644) == -1 || close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	log_error("%s", o->path);
	if (fd != -1)
		close(fd);
	return -1;
}

/* Each temporary file to its name; link(2) refuses a name that exists. */
static int
link_all(struct out *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (link(o[i].tmp, o[i].path) == -1) {
			if (errno == EEXIST)
				log_errorx("%s: exists", o[i].path);
			else
				log_error("%s", o[i].path);
			return -1;
		}
		o[i].linked = 1;
	}
	return 0;
}

/* Removes the temporary files, and on failure the links made. */
static void
undo(struct out *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (o[i].tmp[0] != '\0')
			(void)unlink(o[i].tmp);
		if (o[i].linked < 0)
			(void)unlink(o[i].path);
	}
}

int
cmd_new(struct hk *hk, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "framework", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct out o[NEW_FILES_MAX];
	const struct kind *k;
	const char *framework = NULL, *name, *dir;
	size_t n, i;
	int ch, made = 0, code;

	(void)hk;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'F':
			framework = optarg;
			break;
		case 'h':
			fputs(new_usage_text, stdout);
			return EX_OK;
		default:
			fputs(new_usage_text, stderr);
			return EX_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2 || argc > 3) {
		fputs(new_usage_text, stderr);
		return EX_USAGE;
	}
	if ((k = find_kind(argv[0], framework)) == NULL) {
		log_errorx("no starter for %s%s%s (python, node, "
		    "python --framework fastapi, node --framework express)",
		    argv[0], framework ? " --framework " : "",
		    framework ? framework : "");
		return EX_USAGE;
	}
	name = argv[1];
	if (!config_valid_name(name)) {
		log_errorx("%s: invalid name: 1 to %d of a-z, 0-9 and '-', "
		    "starting and ending with a letter or digit", name,
		    CONFIG_NAME_MAX);
		return EX_USAGE;
	}
	dir = argc == 3 ? argv[2] : name;
	if ((code = plan_files(k, dir, o, &n)) != EX_OK)
		return code;
	if (mkdir(dir, 0755) == 0)
		made = 1;
	else if (errno != EEXIST) {
		log_error("%s", dir);
		return EX_CANTCREAT;
	}
	code = EX_OK;
	for (i = 0; i < n && code == EX_OK; i++)
		if (write_temp(&o[i], dir, name) == -1)
			code = EX_CANTCREAT;
	if (code == EX_OK && link_all(o, n) == -1)
		code = EX_CANTCREAT;
	for (i = 0; i < n; i++)
		if (code != EX_OK && o[i].linked)
			o[i].linked = -1;
	undo(o, n);
	if (code != EX_OK) {
		if (made)
			(void)rmdir(dir);
		return code;
	}
	for (i = 0; i < n; i++)
		printf("%s\n", o[i].path);
	if (k->next != NULL)
		log_info("%s: run %s there, then hk apply %s/hk.toml", dir,
		    k->next, dir);
	return EX_OK;
}
