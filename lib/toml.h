/*
 * toml.h - TOML 1.0 parser for hk.
 *
 * toml_parse() reads a whole document held in memory and returns a tree of
 * values.  Every value and every key remembers the line it was defined on, so
 * that configuration errors can name "file:line".  The parser is a pure
 * function over bytes: no I/O, no global state, bounded nesting.
 */
#ifndef HK_TOML_H
#define HK_TOML_H

#include <stddef.h>
#include <stdint.h>

#define TOML_MAX_DEPTH	128	/* nesting of arrays and tables; parts of a key */
#define TOML_ERR_LEN	256

enum toml_type {
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_DATETIME,		/* offset date-time */
	TOML_DATETIME_LOCAL,
	TOML_DATE_LOCAL,
	TOML_TIME_LOCAL,
};

struct toml_value;

struct toml_kv {
	char			*key;	/* UTF-8, NUL-terminated */
	size_t			 keylen; /* keys may hold "\u0000" */
	int			 line;	/* where the key was written */
	struct toml_value	*value;
};

struct toml_value {
	enum toml_type		 type;
	int			 line;	/* where the value (or table header) starts */
	union {
		struct {
			struct toml_kv	*items;	/* in document order */
			size_t		 len;
			size_t		 cap;
			int		 flags;	/* parser-private */
		} table;
		struct {
			struct toml_value **items;
			size_t		 len;
			size_t		 cap;
			int		 flags;	/* parser-private */
		} array;
		struct {
			char		*ptr;	/* UTF-8, NUL-terminated */
			size_t		 len;	/* may hold "\u0000" */
		} string;
		int64_t		 integer;
		double		 floating;
		int		 boolean;
		/*
		 * Date-times keep their RFC 3339 text, normalized: 'T' between
		 * date and time, upper-case 'Z', as in toml-test's JSON.
		 */
		char		*datetime;
	} u;
};

struct toml_error {
	int	line;			/* 1-based; 0 if not tied to a line */
	char	msg[TOML_ERR_LEN];	/* reason, without "line N:" */
};

/* Returns the root table, or NULL with err filled (also on ENOMEM). */
struct toml_value	*toml_parse(const char *, size_t, struct toml_error *);
void			 toml_free(struct toml_value *);

/* Lookup of a key in a table; NULL if absent or not a table. */
const struct toml_kv	*toml_table_find(const struct toml_value *,
			    const char *);
const char		*toml_type_name(enum toml_type);

#endif
