/*
 * toml.c - libFuzzer target for lib/toml.c.
 *
 * Any bytes: toml_parse() must not crash, leak or read out of bounds.  On
 * error the reason must be a non-empty UTF-8 string and the line within
 * the document.  On success every value is checked (lines in range, strings
 * terminated), the tree is written back as TOML (inline tables and arrays
 * only, which nest no deeper than the original) and that text must parse
 * to an equal tree.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

struct out {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	put(struct out *, const char *, size_t);
static void	puts_(struct out *, const char *);
static void	put_str(struct out *, const char *, size_t);
static void	put_float(struct out *, double);
static void	emit(struct out *, const struct toml_value *);
static void	walk(const struct toml_value *, int, int);
static int	equal(const struct toml_value *, const struct toml_value *);
static int	utf8_ok(const char *);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "toml fuzz: invariant broken: %s\n", what);
		abort();
	}
}

static void
put(struct out *o, const char *s, size_t len)
{
	if (o->cap - o->len <= len) {
		while (o->cap - o->len <= len)
			o->cap = o->cap ? o->cap * 2 : 256;
		o->s = realloc(o->s, o->cap);
		check(o->s != NULL, "memory for the copy");
	}
	memcpy(o->s + o->len, s, len);
	o->len += len;
	o->s[o->len] = '\0';
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void
put_str(struct out *o, const char *s, size_t len)
{
	char esc[8];
	size_t i;

	put(o, "\"", 1);
	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			esc[0] = '\\', esc[1] = c;
			put(o, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			puts_(o, esc);
		} else
			put(o, s + i, 1);
	}
	put(o, "\"", 1);
}

static void
put_float(struct out *o, double d)
{
	char buf[64];

	if (isnan(d))
		snprintf(buf, sizeof(buf), "%snan", signbit(d) ? "-" : "");
	else if (isinf(d))
		snprintf(buf, sizeof(buf), "%sinf", d < 0 ? "-" : "");
	else {
		snprintf(buf, sizeof(buf), "%.17g", d);
		if (strpbrk(buf, ".e") == NULL)
			strlcat(buf, ".0", sizeof(buf));
	}
	puts_(o, buf);
}

static void
emit(struct out *o, const struct toml_value *v)
{
	char buf[32];
	size_t i;

	switch (v->type) {
	case TOML_TABLE:
		puts_(o, "{");
		for (i = 0; i < v->u.table.len; i++) {
			puts_(o, i ? ", " : "");
			put_str(o, v->u.table.items[i].key,
			    v->u.table.items[i].keylen);
			puts_(o, " = ");
			emit(o, v->u.table.items[i].value);
		}
		puts_(o, "}");
		break;
	case TOML_ARRAY:
		puts_(o, "[");
		for (i = 0; i < v->u.array.len; i++) {
			puts_(o, i ? ",\n" : "");
			emit(o, v->u.array.items[i]);
		}
		puts_(o, "]");
		break;
	case TOML_STRING:
		put_str(o, v->u.string.ptr, v->u.string.len);
		break;
	case TOML_INTEGER:
		snprintf(buf, sizeof(buf), "%" PRId64, v->u.integer);
		puts_(o, buf);
		break;
	case TOML_FLOAT:
		put_float(o, v->u.floating);
		break;
	case TOML_BOOL:
		puts_(o, v->u.boolean ? "true" : "false");
		break;
	default:
		puts_(o, v->u.datetime);
		break;
	}
}

/* Invariants of a parsed tree; lines is the document's line count. */
static void
walk(const struct toml_value *v, int depth, int lines)
{
	size_t i;

	check(depth <= TOML_MAX_DEPTH + 1, "nesting bounded");
	check(v->line >= 1 && v->line <= lines, "value line in range");
	switch (v->type) {
	case TOML_TABLE:
		for (i = 0; i < v->u.table.len; i++) {
			const struct toml_kv *kv = &v->u.table.items[i];

			check(kv->key[kv->keylen] == '\0', "key terminated");
			check(kv->line >= 1 && kv->line <= lines,
			    "key line in range");
			walk(kv->value, depth + 1, lines);
		}
		break;
	case TOML_ARRAY:
		for (i = 0; i < v->u.array.len; i++)
			walk(v->u.array.items[i], depth + 1, lines);
		break;
	case TOML_STRING:
		check(v->u.string.ptr[v->u.string.len] == '\0',
		    "string terminated");
		break;
	case TOML_INTEGER:
	case TOML_FLOAT:
	case TOML_BOOL:
		break;
	default:
		check(v->u.datetime != NULL && utf8_ok(v->u.datetime),
		    "datetime text");
		break;
	}
}

static int
equal(const struct toml_value *a, const struct toml_value *b)
{
	size_t i;

	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TOML_TABLE:
		if (a->u.table.len != b->u.table.len)
			return 0;
		for (i = 0; i < a->u.table.len; i++) {
			const struct toml_kv *x = &a->u.table.items[i];
			const struct toml_kv *y = &b->u.table.items[i];

			if (x->keylen != y->keylen ||
			    memcmp(x->key, y->key, x->keylen) != 0 ||
			    !equal(x->value, y->value))
				return 0;
		}
		return 1;
	case TOML_ARRAY:
		if (a->u.array.len != b->u.array.len)
			return 0;
		for (i = 0; i < a->u.array.len; i++)
			if (!equal(a->u.array.items[i], b->u.array.items[i]))
				return 0;
		return 1;
	case TOML_STRING:
		return a->u.string.len == b->u.string.len &&
		    memcmp(a->u.string.ptr, b->u.string.ptr,
		    a->u.string.len) == 0;
	case TOML_INTEGER:
		return a->u.integer == b->u.integer;
	case TOML_FLOAT:
		if (isnan(a->u.floating))
			return isnan(b->u.floating);
		return memcmp(&a->u.floating, &b->u.floating,
		    sizeof(double)) == 0;
	case TOML_BOOL:
		return !a->u.boolean == !b->u.boolean;
	default:
		return strcmp(a->u.datetime, b->u.datetime) == 0;
	}
}

static int
utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n, i;

	while (*p) {
		if (*p < 0x80)
			n = 0;
		else if (*p >= 0xc2 && *p <= 0xdf)
			n = 1;
		else if (*p >= 0xe0 && *p <= 0xef)
			n = 2;
		else if (*p >= 0xf0 && *p <= 0xf4)
			n = 3;
		else
			return 0;
		for (i = 1; i <= n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return 0;
		p += n + 1;
	}
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct toml_value *root, *again;
	struct toml_error err, err2;
	struct out o = { NULL, 0, 0 };
	size_t i, root_len;
	int lines = 1;

	for (i = 0; i < len; i++)
		if (data[i] == '\n')
			lines++;
	root = toml_parse((const char *)data, len, &err);
	if (root == NULL) {
		check(memchr(err.msg, '\0', sizeof(err.msg)) != NULL &&
		    err.msg[0] != '\0', "error has a reason");
		check(utf8_ok(err.msg), "reason is UTF-8");
		check(err.line >= 0 && err.line <= lines, "error line");
		return 0;
	}
	check(root->type == TOML_TABLE, "root is a table");
	walk(root, 0, lines);
	root_len = root->u.table.len;
	for (i = 0; i < root_len; i++) {
		puts_(&o, i ? "\n" : "");
		put_str(&o, root->u.table.items[i].key,
		    root->u.table.items[i].keylen);
		puts_(&o, " = ");
		emit(&o, root->u.table.items[i].value);
	}
	again = toml_parse(o.s ? o.s : "", o.len, &err2);
	if (again == NULL)
		fprintf(stderr, "toml fuzz: copy refused: line %d: %s\n%s\n",
		    err2.line, err2.msg, o.s);
	check(again != NULL, "written back, parses");
	check(equal(root, again), "written back, parses the same");
	toml_free(again);
	toml_free(root);
	free(o.s);
	return 0;
}
