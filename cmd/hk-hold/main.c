/*
 * hk-hold - the container backend's held start (hk-hold(8)): what a
 * container with secrets on another node runs first, as its user.  The
 * secrets reach such a container through its engine's API, into a
 * tmpfs at the credentials directory, and only once it runs (podman
 * writes an archive put into a created container to its layer on the
 * node's disk): so the service's own program must not start before
 * they are there.  hk-hold waits until the marker file hk-scale writes
 * last in the secrets' archive appears in the directory (the files
 * before it are then whole: the engine unpacks in order), makes the
 * directory 0500 (its own, a tmpfs of mode 0700 for the put) and execs
 * the command, which keeps its pid.  It gives up
 * after its deadline, with a message, when no marker comes.
 *
 * hk-scale puts it into the created container (a file of its layer:
 * it is no secret), so it is built static: an image may have no libc,
 * or another one.  It uses nothing but the C library.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#define PROG		"hk-hold"
#define HOLD_MARKER	".hk-ready"	/* written last by hk-scale */
#define HOLD_MAX_S	86400

/* Exactly its SYNOPSIS in hk-hold(8). */
static const char usage_text[] =
    "usage: hk-hold -t seconds directory command [argument ...]\n";

static int	usage_error(const char *, const char *);
static int	marker_there(const char *, char *, size_t);
static int	wait_marker(const char *, int);
static long	ms_left(const struct timespec *);

/* "hk-hold: error: WHY" then the usage, as every hk program says it. */
static int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: error: ", PROG);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	fputs(usage_text, stderr);
	return EX_USAGE;
}

/* 1 when dir/HOLD_MARKER exists, 0 when not; path gets its name. */
static int
marker_there(const char *dir, char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s/%s", dir, HOLD_MARKER) >= len)
		return 0;
	return access(path, F_OK) == 0;
}

/* Milliseconds until the absolute deadline d (0 when past). */
static long
ms_left(const struct timespec *d)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (d->tv_sec - now.tv_sec) * 1000 +
	    (d->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? ms : 0;
}

/*
 * Until the marker is in dir, or the deadline: 0, or an exit code with
 * the message said.  The watch is made before the first look, so a
 * marker written between the two is not missed.
 */
static int
wait_marker(const char *dir, int seconds)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct
	    inotify_event))));
	char path[PATH_MAX];
	struct timespec deadline;
	struct pollfd p;
	long left;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	if ((fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) == -1 ||
	    inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO |
	    IN_CLOSE_WRITE) == -1) {
		fprintf(stderr, "%s: error: unable to watch %s: %s\n", PROG, dir,
		    strerror(errno));
		return EX_OSERR;
	}
	p.fd = fd;
	p.events = POLLIN;
	while (!marker_there(dir, path, sizeof(path))) {
		if ((left = ms_left(&deadline)) == 0) {
			fprintf(stderr, "%s: error: %s: no secrets within %d s "
			    "(hk-scale writes them once the container "
			    "runs): not started\n", PROG, dir, seconds);
			return EX_TEMPFAIL;
		}
		if (poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) == -1 &&
		    errno != EINTR) {
			fprintf(stderr, "%s: error: poll: %s\n", PROG,
			    strerror(errno));
			return EX_OSERR;
		}
		while (read(fd, buf, sizeof(buf)) > 0)
			;	/* the events only wake us: we look again */
	}
	close(fd);
	/*
	 * Then read-only to its owner, as hk-scale makes it on its host.
	 * The marker stays: the engine may still be setting its owner and
	 * times (podman's copier fails a put whose file went meanwhile).
	 */
	if (chmod(dir, 0500) == -1) {
		fprintf(stderr, "%s: error: %s: %s\n", PROG, dir,
		    strerror(errno));
		return EX_OSERR;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	long seconds;
	char *end;
	int rc;

	if (argc == 2 && (strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0)) {
		fputs(usage_text, stdout);
		return fflush(stdout) == 0 ? EX_OK : EX_IOERR;
	}
	if (argc > 1 && strncmp(argv[1], "--", 2) == 0)
		return usage_error("unrecognized option '%s'", argv[1]);
	if (argc > 1 && argv[1][0] == '-' && strcmp(argv[1], "-t") != 0)
		return usage_error("invalid option -- '%.1s'", argv[1] + 1);
	if (argc < 2 || strcmp(argv[1], "-t") != 0)
		return usage_error("%s", "no -t seconds");
	if (argc < 3)
		return usage_error("%s", "option requires an argument -- 't'");
	errno = 0;
	seconds = strtol(argv[2], &end, 10);
	if (errno != 0 || *end != '\0' || end == argv[2] || seconds < 1 ||
	    seconds > HOLD_MAX_S)
		return usage_error("-t %s: not 1 to 86400 seconds", argv[2]);
	if (argc < 5)
		return usage_error("%s", argc < 4 ? "no directory and no "
		    "command" : "no command");
	if ((rc = wait_marker(argv[3], (int)seconds)) != 0)
		return rc;
	execvp(argv[4], argv + 4);
	rc = errno == ENOENT ? 127 : 126;
	fprintf(stderr, "%s: error: %s: %s\n", PROG, argv[4],
	    strerror(errno));
	return rc;
}
