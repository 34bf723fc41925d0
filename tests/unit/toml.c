/*
 * toml.c - lib/toml.c beyond toml-test (tests/integration/0001): the lines
 * remembered on keys, values and errors, the reasons given, big and deep
 * documents, and the small API around the tree.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "toml.h"

/* Where a key and its value are, by path: "a.b", "a.1" (array index). */
struct line_case {
	const char	*doc;
	const char	*path;
	int		 keyline;	/* -1: an array element, no key */
	int		 valline;
};

static const struct line_case line_cases[] = {
	{ "a = 1\nb = 2\n", "a", 1, 1 },
	{ "a = 1\nb = 2\n", "b", 2, 2 },
	{ "# c\n\n[t]\nx = 'y'\n", "t", 3, 3 },
	{ "# c\n\n[t]\nx = 'y'\n", "t.x", 4, 4 },
	{ "s = \"\"\"\na\nb\"\"\"\nn = 5\n", "s", 1, 1 },
	{ "s = \"\"\"\na\nb\"\"\"\nn = 5\n", "n", 4, 4 },
	{ "s = '''\r\na\r\n'''\r\nn = 5\r\n", "n", 4, 4 },
	{ "s = \"\"\"a\\\n\n\n   b\"\"\"\nz = 1\n", "z", 5, 5 },
	{ "a = [\n1,\n# c\n2,\n]\nb = 1\n", "a", 1, 1 },
	{ "a = [\n1,\n# c\n2,\n]\nb = 1\n", "a.0", -1, 2 },
	{ "a = [\n1,\n# c\n2,\n]\nb = 1\n", "a.1", -1, 4 },
	{ "a = [\n1,\n# c\n2,\n]\nb = 1\n", "b", 6, 6 },
	{ "a = 1\r\nb = 2\r\n", "b", 2, 2 },
	{ "[[p]]\nx = 1\n[[p]]\nx = 2\n", "p.1", -1, 3 },
	{ "[[p]]\nx = 1\n[[p]]\nx = 2\n", "p.1.x", 4, 4 },
	{ "[a.b]\nx = 1\n\n[a]\ny = 2\n", "a", 1, 4 },
	{ "[a.b]\nx = 1\n\n[a]\ny = 2\n", "a.y", 5, 5 },
	{ "\n  x.y.z = 1\n", "x", 2, 2 },
	{ "\n  x.y.z = 1\n", "x.y.z", 2, 2 },
	{ "t = {a = 1, b = [\n2]}\nu = 3\n", "t.b.0", -1, 2 },
	{ "t = {a = 1, b = [\n2]}\nu = 3\n", "u", 3, 3 },
	{ "\xef\xbb\xbf" "a = 1\n\nb = 2", "b", 3, 3 },
};

/* A document refused, with the line and reason expected. */
struct err_case {
	const char	*doc;
	size_t		 len;	/* 0: strlen(doc) */
	int		 line;
	const char	*msg;
};

static const struct err_case err_cases[] = {
	{ "a = \"abc", 0, 1, "unterminated string" },
	{ "a = 'abc\nb = 1", 0, 1, "unterminated string" },
	{ "x = 1\na = \"\"\"\nabc\n", 0, 2, "unterminated string" },
	{ "a = [1,", 0, 1, "unterminated array" },
	{ "a = [1,\n2,\n", 0, 1, "unterminated array" },
	{ "a = {b = 1", 0, 1, "unexpected end of file in inline table, "
	    "expected ',' or '}'" },
	{ "a =", 0, 1, "missing value" },
	{ "a", 0, 1, "expected '=' after key" },
	{ "[a", 0, 1, "unexpected end of file in table header, "
	    "expected ']'" },
	{ "a=1\na=2", 0, 2, "duplicate key \"a\"" },
	{ "a.b=1\n\n a . b = 2", 0, 3, "duplicate key \"a.b\"" },
	{ "\"x y\"=1\n'x y'=2", 0, 2, "duplicate key \"x y\"" },
	{ "[a]\n[a]", 0, 2, "table [a] defined twice" },
	{ "[a]\nb.c = 1\n[a.b]", 0, 3, "table [a.b] defined twice" },
	{ "[a.b]\n[a]\nb.c = 1", 0, 3,
	    "cannot extend table \"b\" with dotted keys" },
	{ "a = {b = 1}\na.c = 2", 0, 2, "cannot extend inline table \"a\"" },
	{ "a = {b = 1}\n[a.c]", 0, 2, "cannot extend inline table \"a\"" },
	{ "a = [{}]\n[[a]]", 0, 2, "cannot append to static array \"a\"" },
	{ "a = 1\n[a.b]", 0, 2, "key \"a\" already defined as integer" },
	{ "[[a]]\n[a]", 0, 2, "key \"a\" already defined as array of tables" },
	{ "a = {b = 1,}", 0, 1, "trailing comma in inline table" },
	{ "a = {b = 1,\nc = 2}", 0, 1, "unexpected newline in inline table" },
	{ "a = \"\xff\"", 0, 1, "invalid UTF-8" },
	{ "x = 1\n# \xc0\xaf\n", 0, 2, "invalid UTF-8" },
	{ "x = 1\n\nc = '\xed\xa0\x80'", 0, 3, "invalid UTF-8" },
	{ "x = '\xf4\x90\x80\x80'", 0, 1, "invalid UTF-8" },
	{ "x = '\xe2\x82'", 0, 1, "invalid UTF-8" },
	{ "a = 1\0", 6, 1, "NUL byte" },
	{ "a = 1\rb = 2", 0, 1, "carriage return not followed by newline" },
	{ "a = \"\x01\"", 0, 1, "control character in string" },
	{ "# \x7f", 0, 1, "control character in comment" },
	{ "a = 1 b = 2", 0, 1, "unexpected text after value" },
	{ "[a] b = 2", 0, 1, "unexpected text after table header" },
	{ "\"a\\qb\" = 1", 0, 1, "invalid escape \\q" },
	{ "a = \"\\uD800\"", 0, 1,
	    "escape \\uD800 is not a unicode scalar value" },
	{ "a = \"\\u12\"", 0, 1, "invalid \\u escape: 4 hex digits expected" },
	{ "a = 0x", 0, 1, "invalid integer" },
	{ "a = 01", 0, 1, "leading zero in number" },
	{ "a = 1__0", 0, 1, "underscore not between digits" },
	{ "a = 1.", 0, 1, "invalid float" },
	{ "a = 1e400", 0, 1, "float out of range" },
	{ "a = 9223372036854775808", 0, 1, "integer out of range" },
	{ "a = -9223372036854775809", 0, 1, "integer out of range" },
	{ "a = 0x8000000000000000", 0, 1, "integer out of range" },
	{ "a = 2021-02-29", 0, 1, "day out of range in date" },
	{ "a = 2021-13-01", 0, 1, "month out of range in date" },
	{ "a = 24:00:00", 0, 1, "hour out of range in time" },
	{ "a = 2021-01-01T00:00:00+24:00", 0, 1, "time offset out of range" },
	{ "a = 07:32:00Z", 0, 1, "invalid time" },
	{ "a = tru", 0, 1, "invalid value" },
	{ "a = \"\"\"x\"\"\"\"\"\"", 0, 1,
	    "too many quotes in multi-line string" },
	{ "\"\"\"k\"\"\" = 1", 0, 1, "multi-line string used as a key" },
	{ "a = @", 0, 1,
	    "unexpected character '@' where a value was expected" },
	{ "a = \xe3\x80\x80", 0, 1,
	    "unexpected character U+3000 where a value was expected" },
};

/* Values read back. */
struct val_case {
	const char	*doc;
	const char	*path;
	enum toml_type	 type;
	const char	*text;	/* string or datetime text, else NULL */
	int64_t		 integer;
};

static const struct val_case val_cases[] = {
	{ "a = 1979-05-27 07:32:00Z", "a", TOML_DATETIME,
	    "1979-05-27T07:32:00Z", 0 },
	{ "a = 1979-05-27t07:32:00.123456z", "a", TOML_DATETIME,
	    "1979-05-27T07:32:00.123456Z", 0 },
	{ "a = 1979-05-27T00:32:00-07:00", "a", TOML_DATETIME,
	    "1979-05-27T00:32:00-07:00", 0 },
	{ "a = 2000-02-29 23:59:60.5", "a", TOML_DATETIME_LOCAL,
	    "2000-02-29T23:59:60.5", 0 },
	{ "a = 1979-05-27 # no time", "a", TOML_DATE_LOCAL,
	    "1979-05-27", 0 },
	{ "a = 00:32:00.999", "a", TOML_TIME_LOCAL, "00:32:00.999", 0 },
	{ "a = \"\"\"\r\nx\r\ny\"\"\"", "a", TOML_STRING, "x\ny", 0 },
	{ "a = '''''x'''''", "a", TOML_STRING, "''x''", 0 },
	{ "a = \"\\u00e9\\U0001F600\"", "a", TOML_STRING,
	    "\xc3\xa9\xf0\x9f\x98\x80", 0 },
	{ "a = 0xDEAD_beef", "a", TOML_INTEGER, NULL, 0xdeadbeef },
	{ "a = 0o17", "a", TOML_INTEGER, NULL, 15 },
	{ "a = 0b1010", "a", TOML_INTEGER, NULL, 10 },
	{ "a = -9223372036854775808", "a", TOML_INTEGER, NULL, INT64_MIN },
	{ "a = +1_000", "a", TOML_INTEGER, NULL, 1000 },
	{ "a = true", "a", TOML_BOOL, NULL, 1 },
	{ "a = [1, 'x', [], {}]", "a.3", TOML_TABLE, NULL, 0 },
	{ "\"\" = 2", "", TOML_INTEGER, NULL, 2 },
};

static const struct toml_value *lookup(const struct toml_value *,
		    const char *, const struct toml_kv **);
static int	parses(const char *, size_t, struct toml_error *);
static void	test_lines(void);
static void	test_errors(void);
static void	test_values(void);
static void	test_api(void);
static char	*big_doc(const char *, size_t, size_t *);
static double	now(void);
static void	test_big(void);
static char	*repeat(const char *, const char *, const char *, int,
		    const char *);
static void	test_deep(void);

/* The value at path ("." between parts, numbers index arrays). */
static const struct toml_value *
lookup(const struct toml_value *v, const char *path, const struct toml_kv **kvp)
{
	char part[128];
	const struct toml_kv *kv = NULL;
	const char *dot;
	size_t n;
	char *end;
	unsigned long i;

	for (;;) {
		dot = strchr(path, '.');
		n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		if (v->type == TOML_ARRAY) {
			i = strtoul(part, &end, 10);
			if (*end != '\0' || i >= v->u.array.len)
				return NULL;
			v = v->u.array.items[i];
			kv = NULL;
		} else {
			if ((kv = toml_table_find(v, part)) == NULL)
				return NULL;
			v = kv->value;
		}
		if (dot == NULL)
			break;
		path = dot + 1;
	}
	if (kvp != NULL)
		*kvp = kv;
	return v;
}

/* 1 if doc parses; the tree is freed at once. */
static int
parses(const char *doc, size_t len, struct toml_error *err)
{
	struct toml_value *root;

	if ((root = toml_parse(doc, len, err)) == NULL)
		return 0;
	toml_free(root);
	return 1;
}

static void
test_lines(void)
{
	const struct line_case *c;
	const struct toml_value *root, *v;
	const struct toml_kv *kv;
	struct toml_error err;
	size_t i;

	for (i = 0; i < sizeof(line_cases) / sizeof(line_cases[0]); i++) {
		c = &line_cases[i];
		root = toml_parse(c->doc, strlen(c->doc), &err);
		v = root ? lookup(root, c->path, &kv) : NULL;
		if (!ok(v != NULL, "lines %zu: %s found", i, c->path)) {
			diag("line %d: %s", err.line, err.msg);
			unreached(2, "not found");
			toml_free((struct toml_value *)root);
			continue;
		}
		isint(kv ? kv->line : -1, c->keyline, "lines %zu: key %s",
		    i, c->path);
		isint(v->line, c->valline, "lines %zu: value %s", i, c->path);
		toml_free((struct toml_value *)root);
	}
}

static void
test_errors(void)
{
	const struct err_case *c;
	struct toml_error err;
	size_t i, len;
	int r;

	for (i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		c = &err_cases[i];
		len = c->len ? c->len : strlen(c->doc);
		r = parses(c->doc, len, &err);
		ok(!r, "errors %zu: refused", i);
		isint(err.line, c->line, "errors %zu: line", i);
		is(err.msg, c->msg, "errors %zu: reason", i);
	}
}

static void
test_values(void)
{
	const struct val_case *c;
	const struct toml_value *root, *v;
	struct toml_error err;
	size_t i;

	for (i = 0; i < sizeof(val_cases) / sizeof(val_cases[0]); i++) {
		c = &val_cases[i];
		root = toml_parse(c->doc, strlen(c->doc), &err);
		v = root ? lookup(root, c->path, NULL) : NULL;
		if (!ok(v != NULL && v->type == c->type, "values %zu: %s is %s",
		    i, c->path, toml_type_name(c->type))) {
			diag("line %d: %s", err.line, err.msg);
			unreached(1, "no value");
		} else if (c->type == TOML_STRING)
			is(v->u.string.ptr, c->text, "values %zu: text", i);
		else if (c->text != NULL)
			is(v->u.datetime, c->text, "values %zu: text", i);
		else if (c->type == TOML_INTEGER)
			isint(v->u.integer, c->integer, "values %zu: value", i);
		else if (c->type == TOML_BOOL)
			isint(v->u.boolean, c->integer, "values %zu: value", i);
		else
			ok(1, "values %zu: container", i);
		toml_free((struct toml_value *)root);
	}
}

static void
test_api(void)
{
	static const char doc[] = "\"a\\u0000b\" = \"x\\u0000y\"\n"
	    "f = -0.0\ni = inf\nn = -nan\n";
	struct toml_value *root;
	struct toml_error err;
	const struct toml_kv *kv;

	root = toml_parse(doc, sizeof(doc) - 1, &err);
	if (!ok(root != NULL, "api: parses")) {
		diag("line %d: %s", err.line, err.msg);
		unreached(7, "no tree");
		return;
	}
	kv = &root->u.table.items[0];
	ok(kv->keylen == 3 && memcmp(kv->key, "a\0b", 4) == 0,
	    "api: key holding NUL keeps its length");
	ok(kv->value->u.string.len == 3 &&
	    memcmp(kv->value->u.string.ptr, "x\0y", 4) == 0,
	    "api: string holding NUL keeps its length");
	ok(toml_table_find(root, "a") == NULL,
	    "api: find does not stop at NUL");
	kv = toml_table_find(root, "f");
	ok(kv != NULL && kv->value->type == TOML_FLOAT &&
	    kv->value->u.floating == 0 && signbit(kv->value->u.floating),
	    "api: -0.0 keeps its sign");
	kv = toml_table_find(root, "n");
	ok(kv != NULL && isnan(kv->value->u.floating), "api: nan");
	ok(toml_table_find(kv->value, "x") == NULL &&
	    toml_table_find(NULL, "x") == NULL, "api: find on a non-table");
	is(toml_type_name(TOML_DATETIME_LOCAL), "datetime-local",
	    "api: type names");
	toml_free(root);
	root = toml_parse(NULL, 0, &err);
	ok(root != NULL && root->type == TOML_TABLE &&
	    root->u.table.len == 0, "api: empty input is an empty table");
	toml_free(root);
	toml_free(NULL);
}

/* A document of about size bytes: line, formatted with its number, again. */
static char *
big_doc(const char *line, size_t size, size_t *lenp)
{
	char *buf;
	size_t len = 0;
	int n, i = 0;

	if ((buf = malloc(size + 256)) == NULL)
		return NULL;
	while (len < size) {
		n = snprintf(buf + len, 256, line, i, i);
		len += n;
		i++;
	}
	*lenp = len;
	return buf;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
test_big(void)
{
	static const struct {
		const char	*line;
		const char	*name;
	} big[] = {
		{ "k%07d = \"value %d\"\n", "400k keys in one table" },
		{ "[[t]]\nx = %d\ny = [%d, 'two', {z = 3}]\n",
		    "array of many tables" },
		{ "[t%d]\nv%d = 1979-05-27T07:32:00Z\n", "many tables" },
	};
	struct toml_value *root;
	struct toml_error err;
	size_t i, len;
	double t0, dt;
	char *doc;

	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		if ((doc = big_doc(big[i].line, 10 << 20, &len)) == NULL) {
			unreached(2, "out of memory");
			continue;
		}
		t0 = now();
		root = toml_parse(doc, len, &err);
		dt = now() - t0;
		if (!ok(root != NULL, "big: 10 MB, %s, parses", big[i].name))
			diag("line %d: %s", err.line, err.msg);
		ok(dt < 10, "big: in %.3f s", dt);
		toml_free(root);
		if (i == 0) {
			/* the same with an error on the very last line */
			doc[len - 2] = '\'';
			root = toml_parse(doc, len, &err);
			ok(root == NULL && err.line > 400000 &&
			    strcmp(err.msg, "unterminated string") == 0,
			    "big: error on the last line (%d): %s", err.line,
			    err.msg);
			toml_free(root);
		}
		free(doc);
	}
}

/* pre, n times open, "1", n times close (if any), post. */
static char *
repeat(const char *pre, const char *open, const char *close, int n,
    const char *post)
{
	size_t lo = strlen(open), lc = close ? strlen(close) : 0;
	size_t lp = strlen(pre), lq = strlen(post);
	char *s, *p;
	int i;

	if ((s = malloc(lp + n * (lo + lc) + lq + 2)) == NULL)
		return NULL;
	memcpy(s, pre, lp);
	p = s + lp;
	for (i = 0; i < n; i++, p += lo)
		memcpy(p, open, lo);
	*p++ = '1';
	for (i = 0; close && i < n; i++, p += lc)
		memcpy(p, close, lc);
	memcpy(p, post, lq + 1);
	return s;
}

static void
test_deep(void)
{
	static const struct {
		const char	*pre, *open, *close, *post;
		int		 n, good;
	} deep[] = {
		{ "a = ", "[", "]", "", TOML_MAX_DEPTH, 1 },
		{ "a = ", "[", "]", "", TOML_MAX_DEPTH + 1, 0 },
		{ "a = ", "{b = ", "}", "", TOML_MAX_DEPTH, 1 },
		{ "a = ", "{b = ", "}", "", TOML_MAX_DEPTH + 1, 0 },
		{ "a = ", "[{b = ", "}]", "", TOML_MAX_DEPTH / 2, 1 },
		{ "a = ", "[{b = ", "}]", "", TOML_MAX_DEPTH / 2 + 1, 0 },
		{ "a = ", "{b.c = ", "}", "", TOML_MAX_DEPTH / 2, 1 },
		{ "a = ", "{b.c = ", "}", "", TOML_MAX_DEPTH / 2 + 1, 0 },
		{ "a = ", "[", "]", "", 100000, 0 },
		{ "a = ", "{b = ", "}", "", 100000, 0 },
		{ "a = ", "[", NULL, "", 1000000, 0 },
		/* dotted keys: n tables, then the value */
		{ "", "b.", NULL, " = 1", TOML_MAX_DEPTH - 1, 1 },
		{ "", "b.", NULL, " = 1", TOML_MAX_DEPTH, 0 },
		{ "", "b.", NULL, " = 1", 100000, 0 },
		{ "[x]\n", "b.", NULL, " = 1", TOML_MAX_DEPTH - 2, 1 },
		{ "[x.y]\n", "b.", NULL, " = 1", TOML_MAX_DEPTH - 1, 0 },
		/* headers: n + 1 tables */
		{ "[", "b.", NULL, "]\nk = 1", TOML_MAX_DEPTH - 1, 1 },
		{ "[", "b.", NULL, "]\nk = 1", TOML_MAX_DEPTH, 0 },
		{ "[[", "b.", NULL, "]]\n", TOML_MAX_DEPTH / 2 - 1, 1 },
		{ "[[", "b.", NULL, "]]\n", 100000, 0 },
	};
	struct toml_error err;
	size_t i;
	char *doc;
	int r;

	for (i = 0; i < sizeof(deep) / sizeof(deep[0]); i++) {
		doc = repeat(deep[i].pre, deep[i].open, deep[i].close,
		    deep[i].n, deep[i].post);
		if (doc == NULL) {
			unreached(1, "out of memory");
			continue;
		}
		r = parses(doc, strlen(doc), &err);
		if (!ok(r == deep[i].good, "deep %zu: %d x %s %s", i,
		    deep[i].n, deep[i].open, deep[i].good ? "parses" :
		    "refused"))
			diag("line %d: %s", err.line, err.msg);
		else if (!r)
			diag("%s", err.msg);
		free(doc);
	}
}

int
main(void)
{
	test_lines();
	test_errors();
	test_values();
	test_api();
	test_big();
	test_deep();
	return done();
}
