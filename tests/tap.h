/*
 * tap.h - the Test Anything Protocol for hk's C unit tests, read by prove.
 *
 *	plan(n);  ok(cond, "name %d", i);  is(got, want, "name");
 *	isint(got, want, "name");  unreached(n, "reason");  return done();
 *
 * Header-only on purpose: each test is one .c file linked with libhk.
 */
#ifndef HK_TAP_H
#define HK_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int tap_run, tap_failed, tap_planned;

static inline void
plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline int __attribute__((format(printf, 2, 3)))
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

static inline void __attribute__((format(printf, 1, 2)))
diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#define is(got, want, ...) do {						\
	const char *is_g_ = (got), *is_w_ = (want);			\
	if (!ok(is_g_ != NULL && is_w_ != NULL &&			\
	    strcmp(is_g_, is_w_) == 0, __VA_ARGS__)) {			\
		diag("     got: '%s'", is_g_ ? is_g_ : "(null)");	\
		diag("expected: '%s'", is_w_ ? is_w_ : "(null)");	\
	}								\
} while (0)

#define isint(got, want, ...) do {					\
	intmax_t isi_g_ = (got), isi_w_ = (want);			\
	if (!ok(isi_g_ == isi_w_, __VA_ARGS__)) {			\
		diag("     got: %jd", isi_g_);				\
		diag("expected: %jd", isi_w_);				\
	}								\
} while (0)

static inline void
skip(int n, const char *why)
{
	while (n-- > 0) {
		tap_run++;
		printf("ok %d # skip %s\n", tap_run, why);
	}
	fflush(stdout);
}

/*
 * The n checks that follow one that failed, and cannot run without what
 * it made: each is a failure of its own, never a skip, so that the count
 * and the verdict say what did not run.
 */
static inline void
unreached(int n, const char *why)
{
	while (n-- > 0) {
		tap_run++;
		tap_failed++;
		printf("not ok %d - not run: %s\n", tap_run, why);
	}
	fflush(stdout);
}

static inline int
done(void)
{
	if (tap_planned == 0)
		printf("1..%d\n", tap_run);
	return tap_failed != 0 || (tap_planned && tap_run != tap_planned);
}

#endif
