/*
 * exec_unix.c - the socket of an instance that only the gateway reaches
 * (hk.toml(5) listen = "unix"): a Unix stream socket that hk-scale binds
 * in runtime_dir/listen and hands the command as fd 3 (LISTEN_FDS), its
 * endpoint "unix:PATH": the exec backend to its child, the systemd
 * backend to the unit (systemd_listen.c).
 *
 * Who may connect is the directory's to say.  runtime_dir/listen is ours,
 * mode 0710: our user enters it, and our group, which the gateway runs
 * with (or as root) as it does to reach scale.sock; nobody else, not the
 * instance's user either, which needs no path: it accepts on the fd it
 * was handed.  The socket itself is 0660.  So a local user can neither
 * connect to an instance past the gateway's limits, request log and idle
 * tracking, nor find one on a port of 127.0.0.1: it has none.
 *
 * Each instance has a socket of its own, named at random: an instance of
 * a new revision starts while the old one still serves.  The file goes
 * when the instance ends; one an earlier run left behind (an instance
 * that died while no hk-scale watched) goes once the rows are adopted
 * (unixlisten_sweep()).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "endpoint.h"
#include "log.h"
#include "scale.h"
#include "xlisten.h"

#define UNIXLISTEN_DIR		"listen"
#define UNIXLISTEN_BACKLOG	128	/* above max_concurrency's 64 */

static int	listen_dir(const struct scale *, char *, size_t, char *,
		    size_t);

/*
 * runtime_dir/listen, ours and mode 0710 whatever an earlier run or
 * someone else left: a directory of another owner is refused.
 */
static int
listen_dir(const struct scale *sc, char *dir, size_t len, char *err,
    size_t errlen)
{
	struct stat st;
	int fd;

	if ((size_t)snprintf(dir, len, "%s/%s", sc->cfg.runtime_dir,
	    UNIXLISTEN_DIR) >= len) {
		snprintf(err, errlen, "%s: path too long for a Unix socket",
		    sc->cfg.runtime_dir);
		return -1;
	}
	if (mkdir(dir, 0710) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: owned by uid %lu, not by hk-scale's "
		    "%lu", dir, (unsigned long)st.st_uid,
		    (unsigned long)geteuid());
		close(fd);
		return -1;
	}
	if (((st.st_mode & 07777) != 0710 && fchmod(fd, 0710) == -1) ||
	    (st.st_gid != getegid() && fchown(fd, (uid_t)-1,
	    getegid()) == -1)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * A listening socket of in's own (*lfd), in->endpoint set to it.  The
 * instance has no port (in->port 0).
 */
int
unixlisten_bind(struct inst *in, int *lfd, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	char dir[sizeof(sun.sun_path)];
	int fd;

	if (listen_dir(in->sc, dir, sizeof(dir), err, errlen) == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path),
	    "%s/%08x%08x", dir, arc4random(), arc4random()) >=
	    sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: path too long for a Unix socket",
		    dir);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(sun.sun_path, 0660) == -1 ||
	    listen(fd, UNIXLISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "%s: %s", sun.sun_path, strerror(errno));
		unlink(sun.sun_path);
		close(fd);
		return -1;
	}
	in->port = 0;
	snprintf(in->endpoint, sizeof(in->endpoint), "%s%s", ENDPOINT_UNIX,
	    sun.sun_path);
	*lfd = fd;
	return 0;
}

/* The path of in's socket, if it has one of ours; else NULL. */
static const char *
unix_path(const struct inst *in)
{
	size_t n = strlen(ENDPOINT_UNIX);

	if (strncmp(in->endpoint, ENDPOINT_UNIX, n) != 0)
		return NULL;
	return in->endpoint + n;
}

/* in has ended: nobody accepts on its socket any more. */
void
unixlisten_remove(const struct inst *in)
{
	const char *path;

	if ((path = unix_path(in)) != NULL && unlink(path) == -1 &&
	    errno != ENOENT)
		log_warn("service=%s: unlink %s", in->id, path);
}

/* The sockets of runtime_dir/listen no instance of ours has. */
void
unixlisten_sweep(struct scale *sc)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char path[sizeof(dir) + NAME_MAX + 2];
	const struct inst *in;
	const char *p;
	struct dirent *de;
	DIR *dp;
	int used;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", sc->cfg.runtime_dir,
	    UNIXLISTEN_DIR) >= sizeof(dir) || (dp = opendir(dir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		used = 0;
		TAILQ_FOREACH(in, &sc->insts, entry)
			if ((p = unix_path(in)) != NULL &&
			    strcmp(p, path) == 0)
				used = 1;
		if (!used && unlink(path) == 0)
			log_debug("removed %s, an instance's socket of an "
			    "earlier run", path);
	}
	closedir(dp);
}
