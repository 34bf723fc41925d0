/*
 * log.c - strerr-shaped lines on stderr (see log.h).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

enum {
	LOG_FATAL,
	LOG_ERROR,
	LOG_WARNING,
	LOG_INFO,
	LOG_DEBUG,
};

/* The one piece of logging state: set once by main through log_init(). */
static struct {
	const char	*prog;
	int		 verbose;	/* 0: info and above; 1: debug */
	int		 journal;	/* stderr is the journal: <N> prefixes */
} log_state = { "hk", 0, 0 };

static const char *const level_word[] = {
	"fatal", "error", "warning", "info", "debug",
};
/* sd-daemon(3) priorities for the same levels. */
static const char *const level_prio[] = { "<2>", "<3>", "<4>", "<6>", "<7>" };

static void vlog(int, int, const char *, va_list)
    __attribute__((format(printf, 3, 0)));

static int
stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(2, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *prog, int verbose)
{
	log_state.prog = prog;
	log_state.verbose = verbose;
	log_state.journal = stderr_is_journal();
}

const char *
log_prog(void)
{
	return log_state.prog;
}

char *
log_getopt_name(void)
{
	static char name[64];

	(void)snprintf(name, sizeof(name), "%s%s: %s",
	    log_state.journal ? level_prio[LOG_ERROR] : "", log_state.prog,
	    level_word[LOG_ERROR]);
	return name;
}

void
log_verbose(int v)
{
	log_state.verbose = v;
}

static void
vlog(int level, int errnum, const char *fmt, va_list ap)
{
	char line[2048];
	int n;

	if (level == LOG_DEBUG && !log_state.verbose)
		return;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0)
		line[0] = '\0';
	fprintf(stderr, "%s%s: %s: %s%s%s\n",
	    log_state.journal ? level_prio[level] : "", log_state.prog,
	    level_word[level], line, errnum ? ": " : "",
	    errnum ? strerror(errnum) : "");
}

#define LOGFN(name, level, with_errno)					\
void									\
name(const char *fmt, ...)						\
{									\
	int saved = errno;						\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	vlog(level, with_errno ? saved : 0, fmt, ap);			\
	va_end(ap);							\
	errno = saved;							\
}

LOGFN(log_error, LOG_ERROR, 1)
LOGFN(log_errorx, LOG_ERROR, 0)
LOGFN(log_warn, LOG_WARNING, 1)
LOGFN(log_warnx, LOG_WARNING, 0)
LOGFN(log_info, LOG_INFO, 0)
LOGFN(log_debug, LOG_DEBUG, 0)

void
fatal(int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_FATAL, saved, fmt, ap);
	va_end(ap);
	exit(code);
}

void
fatalx(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_FATAL, 0, fmt, ap);
	va_end(ap);
	exit(code);
}
