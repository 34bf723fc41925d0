/*
 * cw.h - the walk of a config file: what the operator file (config*.c)
 * and the application file (app*.c) share to read a file whole, name a
 * key as TOML would write it, check a value's type and report each
 * problem as one diagnostic "file:line: key: reason".  Private to those
 * files: programs include config.h and app.h.
 */
#ifndef HK_CW_H
#define HK_CW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "srctree.h"
#include "toml.h"

#define CW_KEYPATH_LEN	384	/* a dotted key path in a message */
#define CW_KEYSHOW_MAX	64	/* bytes of one key (or value) shown */
#define CW_JSON_DEPTH_MAX	64	/* nesting kept in cw_json */
#define CW_REASON_LEN	(SRCTREE_ERR_LEN + 256)	/* config.h: CONFIG_DIAG_LEN */

/*
 * Diagnostics of one file, kept in line order: the
 * CONFIG_DIAG_MAX with the lowest lines are kept, all are counted.
 */
struct cw_dent {
	int		 line;
	unsigned	 seq;
	char		 msg[CONFIG_DIAG_LEN];
};

struct cw_dlist {
	size_t		 count;
	size_t		 n;
	unsigned	 seq;
	struct cw_dent	 d[CONFIG_DIAG_MAX];
};

/* The walk of one file. */
struct cw {
	const char	*file;	/* as given, for messages */
	int		 oom;
	struct cw_dlist	 dl;
};

/* The characters of names, keys and hosts: ASCII only. */
int	 cw_is_digit(int);
int	 cw_is_lower(int);
int	 cw_is_alpha(int);

int	 cw_key_is(const struct toml_kv *, const char *);
/* A key (or, with quote set, a value) as TOML would write it. */
void	 cw_show(char *, size_t, const char *, size_t, int);
/* dst (CW_KEYPATH_LEN) = prefix "." key, the key shown as TOML would. */
void	 cw_kpath(char *, const char *, const char *, size_t);
void	 cw_kpath_s(char *, const char *, const char *);

/* One diagnostic, in the order given; the first CONFIG_DIAG_MAX kept. */
void	 cw_diag_add(struct config_diag *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* A file whole, at most CONFIG_MAX_FILE bytes (cw.c says how). */
int	 cw_read(const char *, int, char **, size_t *, int *,
	    struct config_diag *);

/* One diagnostic "file:line: key: reason" (c->oom on no memory). */
void	 cw_diag(struct cw *, int, const char *, const char *, ...)
	    __attribute__((format(printf, 4, 5)));
/* The diagnostics of the walk into d, in line order. */
void	 cw_flush(struct cw_dlist *, struct config_diag *);
char	*cw_strndup(struct cw *, const char *, size_t);
/* The value of kv, checked, or NULL/-1 with a diagnostic. */
const char *cw_str(struct cw *, const struct toml_kv *, const char *,
	    size_t);
int	 cw_int(struct cw *, const struct toml_kv *, const char *,
	    int64_t, int64_t, int64_t *);
int	 cw_bool(struct cw *, const struct toml_kv *, const char *, int *);
/* Any TOML value as JSON; *deep set past CW_JSON_DEPTH_MAX levels. */
json_t	*cw_json(const struct toml_value *, int, int *);

#endif
