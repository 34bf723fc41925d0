/*
 * svclog.h - the per-service output logs: what hk-scale writes and
 * "hk logs" reads.
 *
 * One directory per service, DIR/APP/SERVICE, DIR being service_log_dir
 * or else RUNTIME_DIR/logs (hakopod.toml(5)); in it "current" and the
 * rotated files "@YYYYMMDDTHHMMSS.uuuuuuZ.s", which sort by age, as
 * s6-log keeps them.  Each line is
 *
 *	2026-12-02T01:23:45.678Z rev=3 inst=pid:1234 the line
 *
 * (UTC, milliseconds; the instance as hk-scale names it, spaces made
 * ':').  A line goes whole into one file: "current" is rotated before a
 * line would take it past service_log_size, and only the newest
 * service_log_files - 1 rotated files are kept.  Several processes write
 * one service's log (hk-scale before an instance is ready, then the
 * instance's output relay, and an old revision's relay meanwhile): each
 * writes and rotates under flock(2) of the directory, and reopens
 * "current" when another has rotated it.
 */
#ifndef HK_SVCLOG_H
#define HK_SVCLOG_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define SVCLOG_TIME_LEN		24	/* "2026-12-02T01:23:45.678Z" */
#define SVCLOG_INST_MAX		64	/* "pid:1234", "container:abc..." */
#define SVCLOG_PATH_MAX		(CONFIG_URL_MAX + 2 * 64 + 64)
#define SVCLOG_CURRENT		"current"

/* A writer: one per instance (and per relay, after its fork). */
struct svclog {
	char	 dir[SVCLOG_PATH_MAX];	/* "": none, lines go elsewhere */
	int	 dirfd;			/* -1 until the first line */
	int	 fd;			/* "current", -1 until then */
	int64_t	 max_size;
	int	 max_files;
	int64_t	 revision;
	char	 inst[SVCLOG_INST_MAX];
	int	 warned;		/* a failure was logged once */
};

/* DIR/APP/SERVICE into buf; -1 when it does not fit. */
int	svclog_dir(const struct server_config *, const char *, const char *,
	    char *, size_t);
/*
 * Makes the directories (mode 0750: not for the services' users) and
 * prepares l; the files are opened on the first line.  -1 with errno.
 */
int	svclog_open(struct svclog *, const struct server_config *,
	    const char *, const char *, int64_t, const char *);
/* One line (no newline): 0, or -1 with errno and the line lost. */
int	svclog_write(struct svclog *, const char *, size_t);
void	svclog_close(struct svclog *);
/* In a child that closed every fd: l's are gone, not to be closed. */
void	svclog_forget_fds(struct svclog *);
/* "2026-12-02T01:23:45.678Z" of Unix ms into buf (>= 25 bytes). */
void	svclog_time(char *, size_t, int64_t);

#endif
