/*
 * toml_impl.h - private to lib/toml*.c: the parser's state, and what the
 * grammar of a document (toml.c) and the grammar of its values (strings,
 * numbers, booleans, dates: toml_scalar.c) share.  Nothing else includes
 * it.
 */
#ifndef HK_TOML_IMPL_H
#define HK_TOML_IMPL_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#include "toml.h"

struct slot;

struct parser {
	const char		*p;	/* next byte */
	const char		*end;
	int			 line;
	struct toml_error	*err;
	int			 failed;
	struct toml_value	*root;
	struct toml_value	*cur;	/* table of the last [header] */
	int			 curdepth;
	struct slot		*slots;
	size_t			 nslots;	/* 0 or a power of 2 */
	size_t			 nused;
	locale_t		 cloc;	/* "C" for strtod, made when needed */
};

struct sbuf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

/* The bytes at the cursor, and the classes of a byte. */

static inline int
peek(const struct parser *ps, size_t off)
{
	if ((size_t)(ps->end - ps->p) <= off)
		return -1;
	return (unsigned char)ps->p[off];
}

static inline int
is_ws(int c)
{
	return c == ' ' || c == '\t';
}

/* What may follow a scalar value. */
static inline int
is_term(int c)
{
	return c == -1 || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == ',' || c == ']' || c == '}' || c == '#';
}

static inline int
is_dec(int c)
{
	return c >= '0' && c <= '9';
}

static inline int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static inline int
is_hex(int c)
{
	return hexval(c) >= 0;
}

static inline int
is_oct(int c)
{
	return c >= '0' && c <= '7';
}

static inline int
is_bin(int c)
{
	return c == '0' || c == '1';
}

static inline int
at_newline(const struct parser *ps)
{
	int c = peek(ps, 0);

	return c == '\n' || (c == '\r' && peek(ps, 1) == '\n');
}

int	toml_err(struct parser *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	toml_err_at(struct parser *, int, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	toml_enomem(struct parser *);
void	toml_eat_newline(struct parser *);
void	toml_skip_ws(struct parser *);
void	toml_show_char(char *, size_t, const char *, const char *);
int	toml_sb_grow(struct parser *, struct sbuf *, size_t);
int	toml_sb_add(struct parser *, struct sbuf *, const char *, size_t);
int	toml_sb_addc(struct parser *, struct sbuf *, int);
int	toml_sb_addcp(struct parser *, struct sbuf *, uint32_t);
struct toml_value *toml_val_new(struct parser *, enum toml_type, int);

/* toml_scalar.c: the value at the cursor; -1 or NULL with the error set */
int	toml_read_string(struct parser *, struct sbuf *, int);
struct toml_value *toml_read_string_value(struct parser *);
struct toml_value *toml_read_bool(struct parser *);
struct toml_value *toml_read_number(struct parser *);
struct toml_value *toml_read_datetime(struct parser *, int);

#endif
