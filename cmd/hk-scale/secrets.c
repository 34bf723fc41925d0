/*
 * secrets.c - the secrets a service names (hk.toml(5) "secrets"),
 * delivered to an instance as systemd delivers credentials: one file per
 * secret in a directory of its own, RUNTIME/cred/APP.SERVICE.STARTED,
 * named by $CREDENTIALS_DIRECTORY (a container's bind mount at
 * /run/secrets; systemd's LoadCredential=).  The directory is 0500 and
 * its files 0400, owned by the user that reads them (the backend's
 * cred_user); it is made whole under a temporary name and renamed into
 * place, and removed once the instance is gone, or, left by an earlier
 * run, at start-up (secrets_sweep()).
 *
 * Values come from the store, sealed (lib/secret.h), opened with the key
 * file here, and are wiped from our memory once written.  runtime_dir
 * should be a tmpfs (/run is): we say so once when it is not, since the
 * values then reach a disk.
 */
#include <sys/stat.h>
#include <sys/vfs.h>

#include <linux/magic.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "scale.h"
#include "secret.h"

#define CRED_SUBDIR	"cred"

static int	cred_path(struct inst *, char *, size_t);
static int	cred_path_of(struct scale *, const char *, const char *,
		    int64_t, int, char *, size_t);
static int	write_one(struct scale *, struct secret_key *, const char *,
		    const char *, int, const struct user_ids *, char *,
		    size_t);
static int	remove_dir(const char *);
static void	check_tmpfs(struct scale *, const char *);

static int
cred_path(struct inst *in, char *buf, size_t len)
{
	const struct svc *d = inst_def(in);

	return cred_path_of(in->sc, d->app, d->name, in->started_at,
	    in->replica, buf, len);
}

/*
 * APP.SERVICE.STARTED, and .REPLICA beside the first: replicas start
 * within the same millisecond.
 */
static int
cred_path_of(struct scale *sc, const char *app, const char *svc,
    int64_t started, int replica, char *buf, size_t len)
{
	int n;

	if (replica == 0)
		n = snprintf(buf, len, "%s/" CRED_SUBDIR "/%s.%s.%lld",
		    sc->cfg.runtime_dir, app, svc, (long long)started);
	else
		n = snprintf(buf, len, "%s/" CRED_SUBDIR "/%s.%s.%lld.%d",
		    sc->cfg.runtime_dir, app, svc, (long long)started, replica);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static void
check_tmpfs(struct scale *sc, const char *dir)
{
	static int said;
	struct statfs fs;

	if (said || statfs(dir, &fs) == -1)
		return;
	if (fs.f_type != TMPFS_MAGIC && fs.f_type != RAMFS_MAGIC)
		log_warnx("%s is not a tmpfs: secrets delivered there reach "
		    "a disk (hk-scale(8))", sc->cfg.runtime_dir);
	said = 1;
}

/*
 * One secret of app, read from the store and opened with k: *v (of
 * *vlen bytes) for secret_free(); -1 with a reason.
 */
int
secrets_fetch(struct scale *sc, const struct secret_key *k, const char *app,
    const char *name, unsigned char **v, size_t *vlen, char *err,
    size_t errlen)
{
	unsigned char *sealed = NULL;
	size_t slen = 0;
	int r;

	if ((r = store_secret_get(sc->store, app, name, &sealed,
	    &slen)) != 0) {
		snprintf(err, errlen, "secret %s: %s", name, r == 1 ?
		    "not in the store (hk secret set)" :
		    store_error(sc->store));
		return -1;
	}
	r = secret_open(k, app, name, sealed, slen, v, vlen);
	free(sealed);
	if (r == -1) {
		snprintf(err, errlen, "secret %s: does not open with the key "
		    "file %s (another key, or a changed row)", name,
		    sc->cfg.secret_key_file);
		return -1;
	}
	return 0;
}

/* One secret, opened, as the file dfd/name, 0400, the user's. */
static int
write_one(struct scale *sc, struct secret_key *k, const char *app,
    const char *name, int dfd, const struct user_ids *u, char *err,
    size_t errlen)
{
	unsigned char *v = NULL;
	size_t vlen = 0;
	ssize_t n;
	int fd, r;

	if (secrets_fetch(sc, k, app, name, &v, &vlen, err, errlen) == -1)
		return -1;
	r = -1;
	if ((fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0400)) == -1)
		snprintf(err, errlen, "secret %s: %s", name, strerror(errno));
	else if ((n = write(fd, v, vlen)) != (ssize_t)vlen ||
	    fchown(fd, u->uid, u->gid) == -1)
		snprintf(err, errlen, "secret %s: %s", name, n == -1 ||
		    n == (ssize_t)vlen ? strerror(errno) : "short write");
	else
		r = 0;
	if (fd != -1)
		close(fd);
	secret_free(v, vlen);
	return r;
}

/*
 * The instance's directory, whole: its secrets opened into a temporary
 * one, which is then made 0500, given to the user and renamed.  Sets
 * in->cred_dir; -1 with a reason (nothing left behind).
 */
int
secrets_prepare(struct inst *in, const struct user_ids *u, char *err,
    size_t errlen)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	struct scale *sc = in->sc;
	struct secret_key k;
	char dir[PATH_MAX], tmp[PATH_MAX + 8], top[PATH_MAX];
	size_t i;
	int dfd, r = 0;

	in->cred_dir[0] = '\0';
	if (sp->nsecrets == 0)
		return 0;
	snprintf(top, sizeof(top), "%s/" CRED_SUBDIR, sc->cfg.runtime_dir);
	if (cred_path(in, dir, sizeof(dir)) == -1 ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", dir) < 0 ||
	    strlen(dir) >= sizeof(in->cred_dir)) {
		snprintf(err, errlen, "secrets: %s: path too long", top);
		return -1;
	}
	/* 0711: an instance finds its own directory, lists no other. */
	if (mkdir(top, 0711) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "secrets: %s: %s", top, strerror(errno));
		return -1;
	}
	check_tmpfs(sc, top);
	if (secret_key_load(sc->cfg.secret_key_file, 0, &k, err,
	    errlen) == -1)
		return -1;
	(void)remove_dir(tmp);	/* an interrupted earlier attempt */
	if (mkdir(tmp, 0700) == -1 ||
	    (dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "secrets: %s: %s", tmp, strerror(errno));
		secret_key_clear(&k);
		return -1;
	}
	for (i = 0; r == 0 && i < sp->nsecrets; i++)
		r = write_one(sc, &k, in->svc->def.app, sp->secrets[i], dfd,
		    u, err, errlen);
	secret_key_clear(&k);
	/* Made 0500 while still ours: only its owner (or CAP_FOWNER) may. */
	if (r == 0 && (fchmod(dfd, 0500) == -1 ||
	    fchown(dfd, u->uid, u->gid) == -1 || rename(tmp, dir) == -1)) {
		snprintf(err, errlen, "secrets: %s: %s", dir, strerror(errno));
		r = -1;
	}
	close(dfd);
	if (r == -1) {
		(void)remove_dir(tmp);
		return -1;
	}
	strlcpy(in->cred_dir, dir, sizeof(in->cred_dir));
	return 0;
}

/*
 * A directory of files, as we made it: one level.  It is the instance's
 * user's, 0500: taken back first (CAP_CHOWN when that user is another),
 * so that we may empty it.
 */
static int
remove_dir(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int dfd, r = 0;

	if (fchownat(AT_FDCWD, dir, geteuid(), getegid(),
	    AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT)
		return 0;
	(void)fchmodat(AT_FDCWD, dir, 0700, 0);
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    unlinkat(dfd, de->d_name, 0) == -1)
			r = -1;
	closedir(d);
	if (rmdir(dir) == -1)
		r = -1;
	return r;
}

/* The instance is gone: so are its secrets. */
void
secrets_remove(struct inst *in)
{
	if (in->cred_dir[0] == '\0')
		return;
	if (remove_dir(in->cred_dir) == -1)
		log_warn("service=%s: unable to remove %s", in->id,
		    in->cred_dir);
	in->cred_dir[0] = '\0';
}

/*
 * An earlier run's instance, adopted: its directory, if there is one,
 * is its own again, removed when it goes.
 */
void
secrets_adopt(struct inst *in, const struct store_instance *r)
{
	struct stat st;
	char dir[PATH_MAX];

	in->cred_dir[0] = '\0';
	if (cred_path_of(in->sc, r->app, r->service, r->started_at,
	    r->replica, dir, sizeof(dir)) == -1 ||
	    strlen(dir) >= sizeof(in->cred_dir) ||
	    lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode))
		return;
	strlcpy(in->cred_dir, dir, sizeof(in->cred_dir));
}

/*
 * At start-up, once the rows are handed out: a directory no row
 * describes (but a failed start's) is an instance's that is gone while
 * no hk-scale watched it, or what an interrupted write left, and goes.
 * Those of the rows' instances go with them (secrets_adopt()).
 */
void
secrets_sweep(struct scale *sc, const struct store_instance *rows,
    size_t n)
{
	char top[PATH_MAX], path[PATH_MAX], want[PATH_MAX];
	struct dirent *de;
	size_t i;
	DIR *d;

	if ((size_t)snprintf(top, sizeof(top), "%s/" CRED_SUBDIR,
	    sc->cfg.runtime_dir) >= sizeof(top) || (d = opendir(top)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", top,
		    de->d_name) >= sizeof(path))
			continue;
		for (i = 0; i < n; i++)
			if (strcmp(rows[i].state, "failed") != 0 &&
			    cred_path_of(sc, rows[i].app, rows[i].service,
			    rows[i].started_at, rows[i].replica, want,
			    sizeof(want)) == 0 &&
			    strcmp(want, path) == 0)
				break;
		if (i < n)
			continue;
		if (remove_dir(path) == -1)
			log_warn("unable to remove %s", path);
		else
			log_info("%s: removed, its instance is gone", path);
	}
	closedir(d);
}

/*
 * With secrets_env, each secret also as a variable (exec backend; the
 * kubernetes one refers to its Secret's keys, k8s_pod.c; s6's run
 * script is a file).  The values are read back from the
 * instance's directory; one with a NUL cannot be a variable.  env has
 * room for nsecrets more; -1 with a reason.
 */
int
secrets_env(const struct inst *in, char **env, char *err, size_t errlen)
{
	const struct service_spec *sp = &inst_def(in)->spec;
	char path[PATH_MAX], *e;
	size_t i, k = 0, len, nl;
	ssize_t n;
	int fd;

	if (!sp->secrets_env || in->cred_dir[0] == '\0')
		return 0;
	while (env[k] != NULL)
		k++;
	for (i = 0; i < sp->nsecrets; i++) {
		nl = strlen(sp->secrets[i]);
		snprintf(path, sizeof(path), "%s/%s", in->cred_dir,
		    sp->secrets[i]);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
		    (e = malloc(nl + 2 + SECRET_VALUE_MAX)) == NULL) {
			snprintf(err, errlen, "secret %s: %s", sp->secrets[i],
			    strerror(errno));
			if (fd != -1)
				close(fd);
			return -1;
		}
		memcpy(e, sp->secrets[i], nl);
		e[nl] = '=';
		n = read(fd, e + nl + 1, SECRET_VALUE_MAX);
		close(fd);
		len = n > 0 ? (size_t)n : 0;
		e[nl + 1 + len] = '\0';
		env[k++] = e;	/* freed (not wiped) with env */
		if (n == -1 || memchr(e + nl + 1, '\0', len) != NULL) {
			snprintf(err, errlen, "secret %s: %s", sp->secrets[i],
			    n == -1 ? strerror(errno) : "holds a NUL byte: "
			    "not a variable (secrets_env)");
			return -1;
		}
	}
	return 0;
}
