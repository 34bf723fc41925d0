/*
 * local.c - the previous holder's prog, when it ran on this host.
 *
 * A lease taken over without its release makes the new holder wait until
 * the old row's expiry plus grace (store.h): only then is the previous
 * prog sure to be gone, wherever it ran.  The commonest takeover, though,
 * is on the same host: the supervisor restarts a hk-lease that was
 * killed, whose prog got SIGTERM from PR_SET_PDEATHSIG and is draining or
 * gone.  Waiting out TTL + grace then only keeps the installation without
 * a gateway.  So each holder writes, beside the sockets, which process
 * its prog is:
 *
 *	runtime_dir/lease-NAME.pid:	EPOCH BOOT_ID PID STARTTIME
 *
 * and a new holder whose predecessor (epoch - 1) wrote it in this boot
 * watches that process instead of the clock: it starts as soon as the
 * process is gone, and when the wait is over it kills the process if it
 * is still there, as its own hk-lease would have done.  Anything else (no
 * file, another epoch or boot, a runtime_dir it cannot read) leaves the
 * plain wait.  The file is a hint that can only shorten a wait for a
 * process this host can see is dead.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lease.h"
#include "log.h"
#include "proc.h"

#define BOOT_ID_MAX	64

static int	local_path(const struct lease *, char *, size_t, const char *);

static int
local_path(const struct lease *l, char *buf, size_t size, const char *ext)
{
	int n;

	if (l->rundir[0] == '\0')
		return -1;
	n = snprintf(buf, size, "%s/lease-%s.%s", l->rundir, l->row.name, ext);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* After prog was spawned: which process it is, for the next holder. */
void
local_record(const struct lease *l)
{
	char path[512], tmp[512], boot[BOOT_ID_MAX];
	int64_t start;
	FILE *fp;
	int ok;

	if (local_path(l, path, sizeof(path), "pid") == -1 ||
	    local_path(l, tmp, sizeof(tmp), "pid.new") == -1 ||
	    proc_boot_id(boot, sizeof(boot)) == -1 ||
	    proc_starttime(l->child, &start) == -1)
		return;
	if ((fp = fopen(tmp, "we")) == NULL) {
		log_debug("unable to write %s: %s", tmp, strerror(errno));
		return;
	}
	ok = fprintf(fp, "%jd %s %ld %jd\n", (intmax_t)l->row.epoch, boot,
	    (long)l->child, (intmax_t)start) > 0;
	if (fclose(fp) != 0 || !ok || rename(tmp, path) == -1) {
		log_debug("unable to write %s: %s", path, strerror(errno));
		(void)unlink(tmp);
	}
}

/*
 * The record of this host's latest holder, if it was written in this
 * boot: 1 with *epoch, *pid and *start set, else 0.  A joiner whose
 * sandbox hides the boot id (systemd's ProcSubset=pid) takes the record
 * without that check when lenient: it matches the record's process by
 * its start time, and its epoch against the store's.
 */
int
local_current(const struct lease *l, int lenient, int64_t *epoch,
    pid_t *pid, int64_t *start)
{
	char path[512], line[256], boot[BOOT_ID_MAX], theirs[BOOT_ID_MAX];
	intmax_t e, st;
	long p;
	FILE *fp;
	int ok, known;

	if (local_path(l, path, sizeof(path), "pid") == -1)
		return 0;
	known = proc_boot_id(boot, sizeof(boot)) == 0;
	if ((!known && !lenient) || (fp = fopen(path, "re")) == NULL)
		return 0;
	ok = fgets(line, sizeof(line), fp) != NULL;
	(void)fclose(fp);
	if (!ok || sscanf(line, "%jd %63s %ld %jd", &e, theirs, &p,
	    &st) != 4 || (known && strcmp(boot, theirs) != 0) || p <= 1)
		return 0;
	*epoch = e;
	*pid = (pid_t)p;
	*start = st;
	return 1;
}

/*
 * Whether the previous holder's prog ran on this host in this boot: then
 * *pid and *start name it, and 1 is returned.
 */
int
local_previous(const struct lease *l, pid_t *pid, int64_t *start)
{
	int64_t epoch, st;
	pid_t p;

	if (l->row.epoch < 2 || !local_current(l, 0, &epoch, &p, &st) ||
	    epoch != l->row.epoch - 1)
		return 0;	/* *pid and *start untouched */
	*pid = p;
	*start = st;
	return 1;
}

/* That process, unless it is gone (or another took its pid): 1 alive. */
int
local_alive(pid_t pid, int64_t start)
{
	int64_t now;

	return proc_starttime(pid, &now) == 0 && now == start;
}
