/*
 * svclog.c - writes the per-service output logs (svclog.h says where and
 * in what shape; hk(1) and hakopod.toml(5) say the same to operators).
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "svclog.h"

#define SVCLOG_LINE_MAX	8192	/* a line with its prefix, bounded */

static int	mkdir_one(const char *);
static int	reopen(struct svclog *);
static int	rotate(struct svclog *);
static void	prune(struct svclog *);
static int	is_rotated(const struct dirent *);

int
svclog_dir(const struct server_config *cfg, const char *app,
    const char *service, char *buf, size_t len)
{
	int n;

	if (cfg->service_log_dir[0] != '\0')
		n = snprintf(buf, len, "%s/%s/%s", cfg->service_log_dir, app,
		    service);
	else
		n = snprintf(buf, len, "%s/logs/%s/%s", cfg->runtime_dir, app,
		    service);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int
mkdir_one(const char *path)
{
	if (mkdir(path, 0750) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

int
svclog_open(struct svclog *l, const struct server_config *cfg,
    const char *app, const char *service, int64_t revision, const char *what)
{
	char path[SVCLOG_PATH_MAX];
	size_t i;

	memset(l, 0, sizeof(*l));
	l->dirfd = l->fd = -1;
	if (svclog_dir(cfg, app, service, path, sizeof(path)) == -1)
		return -1;
	/* Each level: the log root, the app's, the service's. */
	*strrchr(path, '/') = '\0';
	*strrchr(path, '/') = '\0';
	if (mkdir_one(path) == -1)
		return -1;
	svclog_dir(cfg, app, service, path, sizeof(path));
	*strrchr(path, '/') = '\0';
	if (mkdir_one(path) == -1)
		return -1;
	svclog_dir(cfg, app, service, path, sizeof(path));
	if (mkdir_one(path) == -1)
		return -1;
	strlcpy(l->dir, path, sizeof(l->dir));
	l->max_size = cfg->service_log_size;
	l->max_files = (int)cfg->service_log_files;
	l->revision = revision;
	strlcpy(l->inst, what, sizeof(l->inst));
	for (i = 0; l->inst[i] != '\0'; i++)
		if (l->inst[i] == ' ')
			l->inst[i] = ':';
	return 0;
}

void
svclog_time(char *buf, size_t len, int64_t ms)
{
	struct tm tm;
	time_t t = (time_t)(ms / 1000);

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Opens "current" afresh: the first line, or another writer rotated it. */
static int
reopen(struct svclog *l)
{
	if (l->fd != -1)
		close(l->fd);
	l->fd = openat(l->dirfd, SVCLOG_CURRENT, O_WRONLY | O_APPEND |
	    O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	return l->fd == -1 ? -1 : 0;
}

/* "current" becomes @TIME.s (a name no other rotation took), and anew. */
static int
rotate(struct svclog *l)
{
	char name[64];
	struct timespec ts;
	struct tm tm;
	long us;
	int tries;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	us = ts.tv_nsec / 1000;
	for (tries = 0; tries < 1000; tries++, us++) {
		snprintf(name, sizeof(name), "@%04d%02d%02dT%02d%02d%02d."
		    "%06ldZ.s", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		    tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
		if (faccessat(l->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) ==
		    -1 && errno == ENOENT)
			break;
	}
	if (renameat(l->dirfd, SVCLOG_CURRENT, l->dirfd, name) == -1)
		return -1;
	prune(l);
	return reopen(l);
}

static int
is_rotated(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] == '@' && n > 3 &&
	    strcmp(d->d_name + n - 2, ".s") == 0;
}

/* Only the newest max_files - 1 rotated files stay. */
static void
prune(struct svclog *l)
{
	struct dirent **names;
	int n, i;

	if ((n = scandir(l->dir, &names, is_rotated, alphasort)) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (i < n - (l->max_files - 1))
			unlinkat(l->dirfd, names[i]->d_name, 0);
		free(names[i]);
	}
	free(names);
}

int
svclog_write(struct svclog *l, const char *line, size_t len)
{
	char buf[SVCLOG_LINE_MAX], when[SVCLOG_TIME_LEN + 1];
	struct stat fs, ps;
	int n, r = -1, saved;

	if (l->dir[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	svclog_time(when, sizeof(when), store_now_ms());
	n = snprintf(buf, sizeof(buf), "%s rev=%lld inst=%s %.*s\n", when,
	    (long long)l->revision, l->inst, (int)len, line);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(buf)) {		/* cut, the newline kept */
		n = sizeof(buf) - 1;
		buf[n - 1] = '\n';
	}
	if (l->dirfd == -1 && (l->dirfd = open(l->dir, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if (flock(l->dirfd, LOCK_EX) == -1)
		return -1;
	if (l->fd == -1 || fstatat(l->dirfd, SVCLOG_CURRENT, &ps,
	    AT_SYMLINK_NOFOLLOW) == -1 || fstat(l->fd, &fs) == -1 ||
	    fs.st_ino != ps.st_ino || fs.st_dev != ps.st_dev) {
		if (reopen(l) == -1 || fstat(l->fd, &fs) == -1)
			goto out;
	}
	if (fs.st_size > 0 && fs.st_size + n > l->max_size &&
	    rotate(l) == -1)
		goto out;
	if (write(l->fd, buf, (size_t)n) == n)
		r = 0;
out:
	saved = errno;
	flock(l->dirfd, LOCK_UN);
	errno = saved;
	return r;
}

/* A writer never opened (all zero, as calloc left it) has nothing. */
void
svclog_close(struct svclog *l)
{
	if (l->dir[0] == '\0')
		return;
	if (l->fd != -1)
		close(l->fd);
	if (l->dirfd != -1)
		close(l->dirfd);
	l->fd = l->dirfd = -1;
}

void
svclog_forget_fds(struct svclog *l)
{
	l->fd = l->dirfd = -1;
}
