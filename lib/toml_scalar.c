/*
 * toml_scalar.c - the values of a TOML 1.0 document (toml.c has the
 * document: keys, tables, arrays): basic, literal and multi-line strings
 * with their escapes, booleans, integers in four radixes, floats with
 * their special values, and offset and local dates and times, each
 * checked as the specification says (a date's day against its month).
 * Each reader starts at the parser's cursor (toml_impl.h) and leaves it
 * after the value, or sets the error and returns -1 or NULL.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"
#include "toml_impl.h"

static int	parse_escape(struct parser *, struct sbuf *);
static int	parse_basic(struct parser *, struct sbuf *);
static int	parse_literal(struct parser *, struct sbuf *);
static int	ml_quotes(struct parser *, struct sbuf *, int, int *);
static int	parse_ml_basic(struct parser *, struct sbuf *);
static int	parse_ml_literal(struct parser *, struct sbuf *);
static int	scan_digits(struct parser *, int (*)(int));
static struct toml_value *parse_special(struct parser *, const char *, int);
static struct toml_value *parse_radix(struct parser *, const char *);
static struct toml_value *parse_float(struct parser *, const char *);
static struct toml_value *parse_decimal(struct parser *, const char *, int);
static int	read2(struct parser *, int *);
static int	days_in_month(int, int);
static int	parse_date(struct parser *, struct sbuf *);
static int	parse_time(struct parser *, struct sbuf *);
static int	parse_offset(struct parser *, struct sbuf *);

/* Strings. */

/* At '\\' in a basic string. */
static int
parse_escape(struct parser *ps, struct sbuf *sb)
{
	static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
	const char *e;
	uint32_t cp = 0;
	int c, i, n;
	char ch[32];

	c = peek(ps, 1);
	if (c > 0 && (e = strchr(from, c)) != NULL) {
		ps->p += 2;
		return toml_sb_addc(ps, sb, to[e - from]);
	}
	if (c != 'u' && c != 'U') {
		if (c > 0x20 && c < 0x7f)
			return toml_err(ps, "invalid escape \\%c", c);
		toml_show_char(ch, sizeof(ch), ps->p + 1, ps->end);
		return toml_err(ps, "invalid escape: backslash, %s", ch);
	}
	n = c == 'u' ? 4 : 8;
	for (i = 0; i < n; i++) {
		if (!is_hex(peek(ps, 2 + i)))
			return toml_err(ps, "invalid \\%c escape: %d hex digits "
			    "expected", c, n);
		cp = (cp << 4) | hexval(peek(ps, 2 + i));
	}
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return toml_err(ps, "escape \\%c%0*X is not a unicode scalar value",
		    c, n, (unsigned int)cp);
	ps->p += 2 + n;
	return toml_sb_addcp(ps, sb, cp);
}

static int
parse_basic(struct parser *ps, struct sbuf *sb)
{
	const char *s;
	int c;

	ps->p++;
	for (;;) {
		s = ps->p;
		while ((c = peek(ps, 0)) > 0 && c != '"' && c != '\\' &&
		    (c >= 0x20 || c == '\t') && c != 0x7f)
			ps->p++;
		if (toml_sb_add(ps, sb, s, ps->p - s) == -1)
			return -1;
		if (c == '"') {
			ps->p++;
			return 0;
		}
		if (c == -1 || c == '\n' || c == '\r')
			return toml_err(ps, "unterminated string");
		if (c != '\\')
			return toml_err(ps, "control character in string");
		if (parse_escape(ps, sb) == -1)
			return -1;
	}
}

static int
parse_literal(struct parser *ps, struct sbuf *sb)
{
	const char *s;
	int c;

	s = ++ps->p;
	while ((c = peek(ps, 0)) > 0 && c != '\'' &&
	    (c >= 0x20 || c == '\t') && c != 0x7f)
		ps->p++;
	if (c == '\'') {
		if (toml_sb_add(ps, sb, s, ps->p - s) == -1)
			return -1;
		ps->p++;
		return 0;
	}
	if (c == -1 || c == '\n' || c == '\r')
		return toml_err(ps, "unterminated string");
	return toml_err(ps, "control character in string");
}

/*
 * At a quote q inside a multi-line string: one or two are content, three
 * end it, and four or five are one or two quotes of content, then the end.
 */
static int
ml_quotes(struct parser *ps, struct sbuf *sb, int q, int *closed)
{
	size_t n = 0;

	while (peek(ps, n) == q)
		n++;
	if (n > 5)
		return toml_err(ps, "too many quotes in multi-line string");
	*closed = n >= 3;
	if (n >= 3 && toml_sb_add(ps, sb, ps->p, n - 3) == -1)
		return -1;
	if (n < 3 && toml_sb_add(ps, sb, ps->p, n) == -1)
		return -1;
	ps->p += n;
	return 0;
}

static int
parse_ml_basic(struct parser *ps, struct sbuf *sb)
{
	const char *s;
	int c, closed = 0, start = ps->line;

	ps->p += 3;
	if (at_newline(ps))
		toml_eat_newline(ps);
	while (!closed) {
		s = ps->p;
		while ((c = peek(ps, 0)) > 0 && c != '"' && c != '\\' &&
		    (c >= 0x20 || c == '\t') && c != 0x7f)
			ps->p++;
		if (toml_sb_add(ps, sb, s, ps->p - s) == -1)
			return -1;
		if (c == -1)
			return toml_err_at(ps, start, "unterminated string");
		if (c == '"') {
			if (ml_quotes(ps, sb, '"', &closed) == -1)
				return -1;
		} else if (at_newline(ps)) {
			toml_eat_newline(ps);
			if (toml_sb_addc(ps, sb, '\n') == -1)
				return -1;
		} else if (c != '\\') {
			return toml_err(ps, "control character in string");
		} else if (is_ws(peek(ps, 1)) || peek(ps, 1) == '\n' ||
		    peek(ps, 1) == '\r') {
			/* Line-ending backslash: trim up to the next text. */
			ps->p++;
			toml_skip_ws(ps);
			if (!at_newline(ps))
				return toml_err(ps, "invalid escape: backslash, "
				    "whitespace");
			while (is_ws(peek(ps, 0)) || at_newline(ps))
				if (is_ws(peek(ps, 0)))
					ps->p++;
				else
					toml_eat_newline(ps);
		} else if (parse_escape(ps, sb) == -1)
			return -1;
	}
	return 0;
}

static int
parse_ml_literal(struct parser *ps, struct sbuf *sb)
{
	const char *s;
	int c, closed = 0, start = ps->line;

	ps->p += 3;
	if (at_newline(ps))
		toml_eat_newline(ps);
	while (!closed) {
		s = ps->p;
		while ((c = peek(ps, 0)) > 0 && c != '\'' &&
		    (c >= 0x20 || c == '\t') && c != 0x7f)
			ps->p++;
		if (toml_sb_add(ps, sb, s, ps->p - s) == -1)
			return -1;
		if (c == -1)
			return toml_err_at(ps, start, "unterminated string");
		if (c == '\'') {
			if (ml_quotes(ps, sb, '\'', &closed) == -1)
				return -1;
		} else if (at_newline(ps)) {
			toml_eat_newline(ps);
			if (toml_sb_addc(ps, sb, '\n') == -1)
				return -1;
		} else
			return toml_err(ps, "control character in string");
	}
	return 0;
}

/* At a quote; multi-line forms only if ml. CRLF in them becomes LF. */
int
toml_read_string(struct parser *ps, struct sbuf *sb, int ml)
{
	int q = peek(ps, 0);

	if (ml && peek(ps, 1) == q && peek(ps, 2) == q)
		return q == '"' ? parse_ml_basic(ps, sb) :
		    parse_ml_literal(ps, sb);
	return q == '"' ? parse_basic(ps, sb) : parse_literal(ps, sb);
}

struct toml_value *
toml_read_string_value(struct parser *ps)
{
	struct sbuf sb = { NULL, 0, 0 };
	struct toml_value *v;
	int line = ps->line;

	if (toml_read_string(ps, &sb, 1) == -1 ||
	    (sb.s == NULL && toml_sb_grow(ps, &sb, 1) == -1) ||
	    (v = toml_val_new(ps, TOML_STRING, line)) == NULL) {
		free(sb.s);
		return NULL;
	}
	sb.s[sb.len] = '\0';
	v->u.string.ptr = sb.s;
	v->u.string.len = sb.len;
	return v;
}

/* Scalars. */

struct toml_value *
toml_read_bool(struct parser *ps)
{
	struct toml_value *v;
	size_t n;
	int b;

	if ((size_t)(ps->end - ps->p) >= 4 && memcmp(ps->p, "true", 4) == 0)
		n = 4;
	else if ((size_t)(ps->end - ps->p) >= 5 &&
	    memcmp(ps->p, "false", 5) == 0)
		n = 5;
	else
		n = 0;
	b = n == 4;
	if (n == 0 || !is_term(peek(ps, n))) {
		toml_err(ps, "invalid value");
		return NULL;
	}
	if ((v = toml_val_new(ps, TOML_BOOL, ps->line)) == NULL)
		return NULL;
	v->u.boolean = b;
	ps->p += n;
	return v;
}

/*
 * Digits, with single underscores between them: 1 if any, 0 if none,
 * -1 for an underscore not between two digits.
 */
static int
scan_digits(struct parser *ps, int (*digit)(int))
{
	if (!digit(peek(ps, 0)))
		return 0;
	ps->p++;
	for (;;) {
		if (peek(ps, 0) == '_') {
			if (!digit(peek(ps, 1)))
				return -1;
			ps->p += 2;
		} else if (digit(peek(ps, 0)))
			ps->p++;
		else
			return 1;
	}
}

/* inf or nan, after an optional sign at start. */
static struct toml_value *
parse_special(struct parser *ps, const char *start, int sign)
{
	struct toml_value *v;
	double d;

	if ((size_t)(ps->end - ps->p) >= 3 && memcmp(ps->p, "inf", 3) == 0)
		d = INFINITY;
	else if ((size_t)(ps->end - ps->p) >= 3 &&
	    memcmp(ps->p, "nan", 3) == 0)
		d = NAN;
	else {
		ps->p = start;
		toml_err(ps, "invalid value");
		return NULL;
	}
	ps->p += 3;
	if (!is_term(peek(ps, 0))) {
		toml_err(ps, "invalid float");
		return NULL;
	}
	if ((v = toml_val_new(ps, TOML_FLOAT, ps->line)) == NULL)
		return NULL;
	v->u.floating = sign == '-' ? -d : d;
	return v;
}

/* 0x, 0o, 0b integers; at the prefix. */
static struct toml_value *
parse_radix(struct parser *ps, const char *start)
{
	struct toml_value *v;
	int (*digit)(int);
	uint64_t n = 0;
	int base, rc;
	const char *s;

	switch (peek(ps, 1)) {
	case 'x':
		base = 16;
		digit = is_hex;
		break;
	case 'o':
		base = 8;
		digit = is_oct;
		break;
	default:
		base = 2;
		digit = is_bin;
		break;
	}
	ps->p += 2;
	if ((rc = scan_digits(ps, digit)) <= 0 || !is_term(peek(ps, 0))) {
		toml_err(ps, rc == -1 ? "underscore not between digits" :
		    "invalid integer");
		return NULL;
	}
	for (s = start + 2; s < ps->p; s++) {
		if (*s == '_')
			continue;
		if (n > ((uint64_t)INT64_MAX - hexval(*s)) / base) {
			toml_err(ps, "integer out of range");
			return NULL;
		}
		n = n * base + hexval(*s);
	}
	if ((v = toml_val_new(ps, TOML_INTEGER, ps->line)) == NULL)
		return NULL;
	v->u.integer = (int64_t)n;
	return v;
}

/* A float spelled from start to ps->p; strtod in the C locale. */
static struct toml_value *
parse_float(struct parser *ps, const char *start)
{
	struct toml_value *v;
	char *buf, *e;
	size_t i, n = 0, len = ps->p - start;
	double d;
	int whole;

	if (ps->cloc == (locale_t)0 &&
	    (ps->cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)) ==
	    (locale_t)0) {
		toml_enomem(ps);
		return NULL;
	}
	if ((buf = malloc(len + 1)) == NULL) {
		toml_enomem(ps);
		return NULL;
	}
	for (i = 0; i < len; i++)
		if (start[i] != '_')
			buf[n++] = start[i];
	buf[n] = '\0';
	errno = 0;
	d = strtod_l(buf, &e, ps->cloc);
	whole = e == buf + n;
	free(buf);
	if (!whole || (errno == ERANGE && isinf(d))) {
		toml_err(ps, whole ? "float out of range" : "invalid float");
		return NULL;
	}
	if ((v = toml_val_new(ps, TOML_FLOAT, ps->line)) == NULL)
		return NULL;
	v->u.floating = d;
	return v;
}

/* A decimal integer spelled from digits to ps->p. */
static struct toml_value *
parse_decimal(struct parser *ps, const char *digits, int sign)
{
	struct toml_value *v;
	uint64_t n = 0, max;
	const char *s;

	max = sign == '-' ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (s = digits; s < ps->p; s++) {
		if (*s == '_')
			continue;
		if (n > (max - (*s - '0')) / 10) {
			toml_err(ps, "integer out of range");
			return NULL;
		}
		n = n * 10 + (*s - '0');
	}
	if ((v = toml_val_new(ps, TOML_INTEGER, ps->line)) == NULL)
		return NULL;
	if (sign == '-')
		v->u.integer = n == (uint64_t)INT64_MAX + 1 ? INT64_MIN :
		    -(int64_t)n;
	else
		v->u.integer = (int64_t)n;
	return v;
}

struct toml_value *
toml_read_number(struct parser *ps)
{
	const char *start = ps->p, *digits;
	int sign = 0, isfloat = 0, rc;

	if (peek(ps, 0) == '+' || peek(ps, 0) == '-')
		sign = *ps->p++;
	if (peek(ps, 0) == 'i' || peek(ps, 0) == 'n')
		return parse_special(ps, start, sign);
	if (!sign && peek(ps, 0) == '0' && (peek(ps, 1) == 'x' ||
	    peek(ps, 1) == 'o' || peek(ps, 1) == 'b'))
		return parse_radix(ps, start);
	digits = ps->p;
	if ((rc = scan_digits(ps, is_dec)) <= 0)
		goto bad;
	if (*digits == '0' && ps->p - digits > 1) {
		toml_err(ps, "leading zero in number");
		return NULL;
	}
	if (peek(ps, 0) == '.') {
		ps->p++;
		isfloat = 1;
		if ((rc = scan_digits(ps, is_dec)) <= 0)
			goto bad;
	}
	if (peek(ps, 0) == 'e' || peek(ps, 0) == 'E') {
		ps->p++;
		isfloat = 1;
		if (peek(ps, 0) == '+' || peek(ps, 0) == '-')
			ps->p++;
		if ((rc = scan_digits(ps, is_dec)) <= 0)
			goto bad;
	}
	if (!is_term(peek(ps, 0)))
		goto bad;
	return isfloat ? parse_float(ps, start) :
	    parse_decimal(ps, digits, sign);
bad:
	toml_err(ps, rc == -1 ? "underscore not between digits" :
	    isfloat ? "invalid float" : "invalid number");
	return NULL;
}

/* Date-times. */

static int
read2(struct parser *ps, int *n)
{
	if (!is_dec(peek(ps, 0)) || !is_dec(peek(ps, 1)))
		return -1;
	*n = (ps->p[0] - '0') * 10 + (ps->p[1] - '0');
	ps->p += 2;
	return 0;
}

static int
days_in_month(int y, int m)
{
	static const int mdays[] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};

	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return 29;
	return mdays[m - 1];
}

/* YYYY-MM-DD */
static int
parse_date(struct parser *ps, struct sbuf *out)
{
	const char *s = ps->p;
	int y, c, m, d;

	if (read2(ps, &c) == -1 || read2(ps, &y) == -1 ||
	    peek(ps, 0) != '-' || (ps->p++, read2(ps, &m)) == -1 ||
	    peek(ps, 0) != '-' || (ps->p++, read2(ps, &d)) == -1)
		return toml_err(ps, "invalid date");
	y += c * 100;
	if (m < 1 || m > 12)
		return toml_err(ps, "month out of range in date");
	if (d < 1 || d > days_in_month(y, m))
		return toml_err(ps, "day out of range in date");
	return toml_sb_add(ps, out, s, ps->p - s);
}

/* HH:MM:SS[.frac] */
static int
parse_time(struct parser *ps, struct sbuf *out)
{
	const char *s = ps->p;
	int h, m, sec;

	if (read2(ps, &h) == -1 || peek(ps, 0) != ':' ||
	    (ps->p++, read2(ps, &m)) == -1 || peek(ps, 0) != ':' ||
	    (ps->p++, read2(ps, &sec)) == -1)
		return toml_err(ps, "invalid time");
	if (h > 23 || m > 59 || sec > 60)
		return toml_err(ps, "%s out of range in time",
		    h > 23 ? "hour" : m > 59 ? "minute" : "second");
	if (peek(ps, 0) == '.') {
		ps->p++;
		if (!is_dec(peek(ps, 0)))
			return toml_err(ps, "invalid fraction of second");
		while (is_dec(peek(ps, 0)))
			ps->p++;
	}
	return toml_sb_add(ps, out, s, ps->p - s);
}

/* Z or +HH:MM, if any. */
static int
parse_offset(struct parser *ps, struct sbuf *out)
{
	const char *s = ps->p;
	int h, m, c = peek(ps, 0);

	if (c == 'Z' || c == 'z') {
		ps->p++;
		return toml_sb_addc(ps, out, 'Z');
	}
	if (c != '+' && c != '-')
		return 0;
	ps->p++;
	if (read2(ps, &h) == -1 || peek(ps, 0) != ':' ||
	    (ps->p++, read2(ps, &m)) == -1)
		return toml_err(ps, "invalid time offset");
	if (h > 23 || m > 59)
		return toml_err(ps, "time offset out of range");
	return toml_sb_add(ps, out, s, ps->p - s);
}

/* At a date (date set) or a time; normalized to RFC 3339 text. */
struct toml_value *
toml_read_datetime(struct parser *ps, int date)
{
	struct sbuf out = { NULL, 0, 0 };
	struct toml_value *v;
	enum toml_type type = TOML_TIME_LOCAL;
	int c, line = ps->line, time = !date;

	if (date) {
		type = TOML_DATE_LOCAL;
		if (parse_date(ps, &out) == -1)
			goto fail;
		c = peek(ps, 0);
		if (c == 'T' || c == 't' || (c == ' ' && is_dec(peek(ps, 1)) &&
		    is_dec(peek(ps, 2)) && peek(ps, 3) == ':')) {
			ps->p++;
			time = 1;
			type = TOML_DATETIME_LOCAL;
			if (toml_sb_addc(ps, &out, 'T') == -1)
				goto fail;
		}
	}
	if (time && parse_time(ps, &out) == -1)
		goto fail;
	if (date && time) {
		c = peek(ps, 0);
		if (c == 'Z' || c == 'z' || c == '+' || c == '-')
			type = TOML_DATETIME;
		if (parse_offset(ps, &out) == -1)
			goto fail;
	}
	if (!is_term(peek(ps, 0))) {
		toml_err(ps, "invalid %s", date && time ? "date-time" :
		    date ? "date" : "time");
		goto fail;
	}
	if ((v = toml_val_new(ps, type, line)) == NULL)
		goto fail;
	v->u.datetime = out.s;
	return v;
fail:
	free(out.s);
	return NULL;
}
