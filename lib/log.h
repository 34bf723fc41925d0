/*
 * log.h - strerr-shaped messages on stderr, for the supervisor.
 *
 *	PROG: fatal: unable to open store: No such file or directory
 *	PROG: warning: service=api app=fn: unable to start: ...
 *
 * log_init() sets PROG (a literal chosen by main) and the verbosity.  If
 * stderr is the journal's stream (JOURNAL_STREAM), lines carry <N> priority
 * prefixes.  fatal*() exit with the code given; only main-level code calls
 * them.
 */
#ifndef HK_LOG_H
#define HK_LOG_H

#include <stdarg.h>

void	log_init(const char *, int);
const char *log_prog(void);
/*
 * getopt(3) starts its own messages with argv[0]: "argv[0] =
 * log_getopt_name();" before the option loop makes them "PROG: error:
 * unrecognized option ...", in the shape of every other error, whatever
 * path the program was run by or the command being parsed.
 */
char	*log_getopt_name(void);
void	log_verbose(int);
void	log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_errorx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/* fatal() appends strerror(errno); fatalx() does not. */
void	fatal(int, const char *, ...)
	    __attribute__((format(printf, 2, 3), noreturn));
void	fatalx(int, const char *, ...)
	    __attribute__((format(printf, 2, 3), noreturn));

#endif
