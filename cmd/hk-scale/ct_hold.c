/*
 * ct_hold.c - a container's secrets on another node: the held start
 * (hk.toml(5) secrets, hk-hold(8)).  This host's secrets directory
 * cannot be bind-mounted there; the files go through the node's
 * engine instead, into a tmpfs at CT_SECRETS, and only once the
 * container runs: podman writes an archive put into a created
 * container to its layer on the node's disk, and into a running one's
 * tmpfs to that tmpfs.  So the container runs hk-hold first (put into
 * its layer before the start: it is no secret), which waits for the
 * marker file written last with the secrets, then execs the service's
 * command:
 *
 *	ask the engine's kind (GET /version): Docker is refused, since it
 *	writes an archive put under a running container's tmpfs into the
 *	layer on disk, where the container does not even see it;
 *	ask the image's Entrypoint and Cmd (GET /images/NAME/json): the
 *	create's Entrypoint becomes hk-hold's, and they follow it;
 *	create, put hk-hold, start, put the secrets (0400, the container's
 *	user's, the marker last), and the archive's buffers are wiped.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "libexec.h"
#include "srctar.h"
#include "user.h"

#define HOLD_HELPER	"hk-hold"
#define HOLD_IN_CT	"/.hk/hold"	/* its path in the container */
#define HOLD_MARKER	".hk-ready"	/* hk-hold(8) waits for it */

static void	on_hold_version(void *, int, json_t *, const char *);
static void	on_hold_image(void *, int, json_t *, const char *);
static char	**strv_of(const json_t *, size_t);
static int	hold_path(char *, size_t, char *, size_t);
static int	read_whole(int, unsigned char **, size_t *);
static void	free_n(char **, size_t);
static void	wipe_files(struct srctar_file *, size_t);

/* Secrets on a node other than this host's: held (CT_SECRETS a tmpfs). */
int
ct_held(const struct ct *x)
{
	return x->in != NULL && x->in->cred_dir[0] != '\0' &&
	    strcmp(x->node->name, x->in->sc->node) != 0;
}

/*
 * What a held create needs first: 1 with a call under way (ct_hold_done()
 * follows), 0 when all is known, -1 with a reason.
 */
int
ct_hold_next(struct ct *x, char *err, size_t errlen)
{
	if (x->node->flavour == CT_FLAVOUR_UNKNOWN) {
		if ((x->op = engine_version(x->node->e, on_hold_version, x)) ==
		    NULL) {
			snprintf(err, errlen, "secrets: the engine's version: "
			    "%s", strerror(errno));
			return -1;
		}
		return 1;
	}
	if (x->node->flavour != CT_FLAVOUR_PODMAN) {
		snprintf(err, errlen, "secrets: node %s runs Docker, which "
		    "writes an archive put under a container's tmpfs to its "
		    "layer on the node's disk: the secrets would be there in "
		    "clear (hk.toml(5), secrets: place the service on a "
		    "podman node, or on this host's)", x->node->name);
		return -1;
	}
	if (x->hold_argv != NULL)
		return 0;
	if ((x->op = engine_image_inspect(x->node->e, x->image, on_hold_image,
	    x)) == NULL) {
		snprintf(err, errlen, "secrets: inspect %s: %s", x->image,
		    strerror(errno));
		return -1;
	}
	return 1;
}

static void
on_hold_version(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	char why[SCALE_REASON_MAX];

	(void)status;
	x->op = NULL;
	if (err != NULL) {
		snprintf(why, sizeof(why), "secrets: the engine's version: %s",
		    err);
		ct_hold_done(x, why, 0);
		return;
	}
	x->node->flavour = ct_flavour_of(body);
	ct_hold_done(x, NULL, 0);
}

/* hk-hold's argv: HOLD_IN_CT -t S CT_SECRETS, then the Entrypoint. */
static void
on_hold_image(void *arg, int status, json_t *body, const char *err)
{
	struct ct *x = arg;
	char why[SCALE_REASON_MAX];
	const json_t *cfg;
	char **ep, secs[16];
	size_t n;

	x->op = NULL;
	if (err != NULL) {
		snprintf(why, sizeof(why), "secrets: inspect %s: %s", x->image,
		    err);
		ct_hold_done(x, why, status == 404);
		return;
	}
	snprintf(secs, sizeof(secs), "%d", service_timeout(x->in->svc));
	cfg = json_object_get(body, "Config");
	n = json_array_size(json_object_get(cfg, "Entrypoint"));
	if ((ep = strv_of(json_object_get(cfg, "Entrypoint"), 4)) == NULL ||
	    (x->hold_cmd = strv_of(json_object_get(cfg, "Cmd"), 0)) == NULL ||
	    (ep[0] = strdup(HOLD_IN_CT)) == NULL ||
	    (ep[1] = strdup("-t")) == NULL ||
	    (ep[2] = strdup(secs)) == NULL ||
	    (ep[3] = strdup(CT_SECRETS)) == NULL) {
		if (ep != NULL)
			free_n(ep, 4 + n);
		ct_hold_done(x, "secrets: out of memory", 0);
		return;
	}
	x->hold_argv = ep;
	ct_hold_done(x, NULL, 0);
}

/* Slots 0..n-1 of v, some NULL, and v. */
static void
free_n(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * A JSON array of strings (or null) as a NULL-terminated vector with
 * skip NULL slots first, for the caller to fill.
 */
static char **
strv_of(const json_t *a, size_t skip)
{
	size_t n = json_is_array(a) ? json_array_size(a) : 0, i;
	const char *s;
	char **v;

	if ((v = calloc(skip + n + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		s = json_string_value(json_array_get(a, i));
		if ((v[skip + i] = strdup(s != NULL ? s : "")) == NULL) {
			while (i-- > 0)
				free(v[skip + i]);
			free(v);
			return NULL;
		}
	}
	return v;
}

/*
 * The create's part: Entrypoint hk-hold and the image's, Cmd the
 * service's command or the image's, and the tmpfs.
 */
void
ct_hold_spec(struct ct *x, struct engine_spec *e, char *tmpfs, size_t len,
    const char **tmpfsv)
{
	e->entrypoint = (const char *const *)x->hold_argv;
	if (e->cmd == NULL)
		e->cmd = (const char *const *)x->hold_cmd;
	/* U: the container's user's (podman); 0700 as this host's 0500 */
	snprintf(tmpfs, len, "%s:rw,noexec,nosuid,nodev,size=16m,mode=0700,U",
	    CT_SECRETS);
	tmpfsv[0] = tmpfs;
	tmpfsv[1] = NULL;
	e->tmpfs = tmpfsv;
}

/* hk-hold beside hk-scale's own program (a build tree), else installed. */
static int
hold_path(char *buf, size_t len, char *err, size_t errlen)
{
	if (libexec_find(HOLD_HELPER, R_OK, buf, len) == 0)
		return 0;
	snprintf(err, errlen, "secrets: %s/%s: %s (a container with secrets "
	    "on another node runs it)", libexec_dir(), HOLD_HELPER,
	    strerror(errno));
	return -1;
}

/* The whole of file fd (at most SRCTAR_FILE_MAX), one allocation. */
static int
read_whole(int fd, unsigned char **out, size_t *len)
{
	struct stat st;
	size_t got = 0;
	ssize_t r;

	if (fstat(fd, &st) == -1)
		return -1;
	if (st.st_size < 0 || st.st_size > SRCTAR_FILE_MAX) {
		errno = EFBIG;
		return -1;
	}
	if ((*out = malloc((size_t)st.st_size + 1)) == NULL)
		return -1;
	while (got < (size_t)st.st_size) {
		if ((r = read(fd, *out + got, (size_t)st.st_size - got)) ==
		    -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;	/* cut short meanwhile */
			explicit_bzero(*out, got);
			free(*out);
			*out = NULL;
			return -1;
		}
		got += (size_t)r;
	}
	*len = got;
	return 0;
}

/* hk-hold into the created container, at HOLD_IN_CT: 0, or -1. */
int
ct_hold_put(struct ct *x, engine_done_fn *fn, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct srctar_file f[2];
	unsigned char *bin = NULL, *tar;
	size_t blen = 0, tlen;
	int fd;

	if (hold_path(path, sizeof(path), err, errlen) == -1)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    read_whole(fd, &bin, &blen) == -1) {
		snprintf(err, errlen, "secrets: %s: %s", path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	memset(f, 0, sizeof(f));
	f[0].path = ".hk/";
	f[0].mode = 0555;
	f[1].path = ".hk/hold";
	f[1].mode = 0555;
	f[1].data = bin;
	f[1].len = blen;
	if (srctar_files(f, 2, &tar, &tlen) == -1) {
		snprintf(err, errlen, "secrets: hk-hold's tar: %s",
		    strerror(errno));
		free(bin);
		return -1;
	}
	free(bin);
	x->op = engine_archive_put(x->node->e, x->id, "/", tar, tlen, fn, x);
	free(tar);
	if (x->op == NULL) {
		snprintf(err, errlen, "secrets: hk-hold: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void
wipe_files(struct srctar_file *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (f[i].data != NULL) {
			explicit_bzero((void *)f[i].data, f[i].len);
			free((void *)f[i].data);
			f[i].data = NULL;
		}
}

/*
 * The instance's secrets (this host's files of them, secrets.c) into
 * the running container's CT_SECRETS, the marker last: 0, or -1.
 * Every copy of a value is wiped once the archive is built or sent.
 */
int
ct_secrets_put(struct ct *x, engine_done_fn *fn, char *err, size_t errlen)
{
	const struct service_spec *sp = &inst_def(x->in)->spec;
	struct srctar_file *f;
	char path[PATH_MAX];
	struct user_ids u;
	unsigned char *tar;
	size_t i, n = 0, tlen;
	int fd;

	if (ct_volume_owner(x, &u, err, errlen) == -1)
		return -1;
	if ((f = calloc(sp->nsecrets + 1, sizeof(*f))) == NULL) {
		snprintf(err, errlen, "secrets: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < sp->nsecrets; i++, n++) {
		f[n].path = sp->secrets[i];
		f[n].mode = 0400;
		f[n].uid = u.uid;
		f[n].gid = u.gid;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s",
		    x->in->cred_dir, sp->secrets[i]) >= sizeof(path) ||
		    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) ==
		    -1) {
			snprintf(err, errlen, "secrets: %s: %s", sp->secrets[i],
			    strerror(errno));
			wipe_files(f, n);
			free(f);
			return -1;
		}
		if (read_whole(fd, (unsigned char **)&f[n].data,
		    &f[n].len) == -1) {
			snprintf(err, errlen, "secrets: %s: %s", sp->secrets[i],
			    strerror(errno));
			close(fd);
			wipe_files(f, n);
			free(f);
			return -1;
		}
		close(fd);
	}
	f[n].path = HOLD_MARKER;
	f[n].mode = 0400;
	f[n].uid = u.uid;
	f[n].gid = u.gid;
	n++;
	if (srctar_files(f, n, &tar, &tlen) == -1) {
		snprintf(err, errlen, "secrets: tar: %s", strerror(errno));
		wipe_files(f, n);
		free(f);
		return -1;
	}
	wipe_files(f, n);
	free(f);
	x->op = engine_archive_put(x->node->e, x->id, CT_SECRETS, tar, tlen,
	    fn, x);
	explicit_bzero(tar, tlen);
	free(tar);
	if (x->op == NULL) {
		snprintf(err, errlen, "secrets: %s", strerror(errno));
		return -1;
	}
	return 0;
}
