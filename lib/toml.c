/*
 * toml.c - TOML 1.0 parser for hk (see toml.h): the document, its keys,
 * tables and arrays; its values' own grammar (strings, numbers, booleans,
 * dates) is toml_scalar.c's.
 *
 * Two passes over the bytes: the first checks the encoding (UTF-8 without
 * overlongs or surrogates, no NUL, no bare CR), the second is a recursive
 * descent over the grammar.  Every array and table, whether written inline,
 * by a dotted key or by a [header], counts towards TOML_MAX_DEPTH, so the
 * recursion here and in toml_free() is bounded whatever the input.
 *
 * Tables remember how they came to be (parser-private flags) to enforce the
 * redefinition rules: a [header] defines a table once; a table made by
 * dotted keys can only grow by dotted keys from where it was made (or gain
 * sub-tables by [header]); inline tables and static arrays never grow.
 *
 * Lookups during the parse go through a hash index kept by the parser, so
 * that a table with many keys costs O(1) per key, not O(n).
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"
#include "toml_impl.h"

/* u.table.flags */
#define TBL_IMPLICIT	0x01	/* made by a [header] path only */
#define TBL_DEFINED	0x02	/* its [header] was seen */
#define TBL_DOTTED	0x04	/* made by a dotted key */
#define TBL_INLINE	0x08	/* inline table: closed for good */
/* u.array.flags */
#define ARR_TABLES	0x01	/* array of tables: [[header]] appends */

#define INDEX_MIN	8	/* tables this long are hashed */
#define KEY_SHOW_LEN	96	/* bound of a key shown in a message */

struct slot {
	const struct toml_value	*tbl;	/* NULL: free slot */
	size_t			 idx;	/* into tbl->u.table.items */
	uint64_t		 hash;
};

struct keypart {
	char	*s;
	size_t	 len;
	int	 owned;		/* s not yet moved to a table */
};

struct keypath {
	struct keypart	*v;
	size_t		 n;
	size_t		 cap;
	int		 line;
};

static int	is_bare(int);
static int	skip_comment(struct parser *);
static int	skip_space(struct parser *);
static int	expect_eol(struct parser *, const char *);
static size_t	utf8_decode(const unsigned char *, size_t, uint32_t *);
static int	check_bytes(struct parser *);
static int	unexpected(struct parser *, const char *);
static void	key_show(char *, size_t, const struct keypart *, size_t,
		    int);
static uint64_t	key_hash(const struct toml_value *, const char *,
		    size_t);
static int	index_grow(struct parser *);
static int	index_add(struct parser *, const struct toml_value *, size_t);
static struct toml_kv *tbl_get(struct parser *, const struct toml_value *,
		    const char *, size_t);
static int	tbl_put(struct parser *, struct toml_value *,
		    struct keypart *, int, struct toml_value *);
static int	arr_push(struct parser *, struct toml_value *,
		    struct toml_value *);
static void	keypath_free(struct keypath *);
static int	keypath_push(struct parser *, struct keypath *,
		    struct sbuf *);
static int	scan_bare(struct parser *, struct sbuf *);
static int	parse_key(struct parser *, struct keypath *);
static struct toml_value *parse_array(struct parser *, int);
static void	mark_inline(struct toml_value *);
static struct toml_value *parse_inline(struct parser *, int);
static struct toml_value *parse_value(struct parser *, int);
static struct toml_value *dotted_step(struct parser *, struct toml_value *,
		    struct keypath *, size_t, int);
static int	parse_keyval(struct parser *, struct toml_value *, int);
static struct toml_value *header_step(struct parser *, struct toml_value *,
		    struct keypath *, size_t, int *);
static int	header_last(struct parser *, struct toml_value *,
		    struct keypath *, int, int);
static int	parse_header(struct parser *);
static int	parse_document(struct parser *);

/* Errors: the first one wins; every caller returns at once. */

int
toml_err_at(struct parser *ps, int line, const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return -1;
	ps->failed = 1;
	ps->err->line = line;
	va_start(ap, fmt);
	vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int
toml_err(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return -1;
	ps->failed = 1;
	ps->err->line = ps->line;
	va_start(ap, fmt);
	vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int
toml_enomem(struct parser *ps)
{
	if (ps->failed)
		return -1;
	ps->failed = 1;
	ps->err->line = 0;
	strlcpy(ps->err->msg, "out of memory", sizeof(ps->err->msg));
	return -1;
}

/* Bytes and characters. */

static int
is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-';
}

void
toml_eat_newline(struct parser *ps)
{
	if (*ps->p == '\r')
		ps->p++;
	ps->p++;
	ps->line++;
}

void
toml_skip_ws(struct parser *ps)
{
	while (is_ws(peek(ps, 0)))
		ps->p++;
}

/* At '#': up to, not including, the end of the line. */
static int
skip_comment(struct parser *ps)
{
	int c;

	ps->p++;
	while ((c = peek(ps, 0)) != -1 && c != '\n' && c != '\r') {
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return toml_err(ps, "control character in comment");
		ps->p++;
	}
	return 0;
}

/* Whitespace, comments and newlines, as allowed inside arrays. */
static int
skip_space(struct parser *ps)
{
	for (;;) {
		toml_skip_ws(ps);
		if (peek(ps, 0) == '#') {
			if (skip_comment(ps) == -1)
				return -1;
		} else if (at_newline(ps))
			toml_eat_newline(ps);
		else
			return 0;
	}
}

/* After a key/value pair or a header: a comment, then a newline or EOF. */
static int
expect_eol(struct parser *ps, const char *what)
{
	toml_skip_ws(ps);
	if (peek(ps, 0) == '#' && skip_comment(ps) == -1)
		return -1;
	if (peek(ps, 0) == -1)
		return 0;
	if (at_newline(ps)) {
		toml_eat_newline(ps);
		return 0;
	}
	return toml_err(ps, "unexpected text after %s", what);
}

/*
 * One UTF-8 character: its length, or 0 if invalid (truncated, overlong,
 * surrogate, above U+10FFFF).
 */
static size_t
utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	size_t n, i;
	uint32_t c, min;

	if (len == 0)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	c &= 0x7f >> n;
	min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* The encoding pass over the whole document. */
static int
check_bytes(struct parser *ps)
{
	const unsigned char *s = (const unsigned char *)ps->p;
	size_t len = ps->end - ps->p, i = 0, n;
	uint32_t cp;
	int line = 1;

	while (i < len) {
		if (s[i] == '\n') {
			line++;
			i++;
		} else if (s[i] == '\0') {
			return toml_err_at(ps, line, "NUL byte");
		} else if (s[i] == '\r' && (i + 1 == len || s[i + 1] != '\n')) {
			return toml_err_at(ps, line, "carriage return not "
			    "followed by newline");
		} else if (s[i] < 0x80) {
			i++;
		} else if ((n = utf8_decode(s + i, len - i, &cp)) == 0) {
			return toml_err_at(ps, line, "invalid UTF-8");
		} else
			i += n;
	}
	return 0;
}

/* The character at s for a message: 'x' or U+XXXX. */
void
toml_show_char(char *buf, size_t sz, const char *s, const char *end)
{
	uint32_t cp;

	if (s >= end)
		snprintf(buf, sz, "end of file");
	else if ((unsigned char)*s > 0x20 && (unsigned char)*s < 0x7f)
		snprintf(buf, sz, "'%c'", *s);
	else if (utf8_decode((const unsigned char *)s, end - s, &cp) != 0)
		snprintf(buf, sz, "U+%04X", (unsigned int)cp);
	else
		snprintf(buf, sz, "byte 0x%02X", (unsigned char)*s);
}

static int
unexpected(struct parser *ps, const char *where)
{
	char c[32];

	if (peek(ps, 0) == -1)
		return toml_err(ps, "unexpected end of file %s", where);
	if (at_newline(ps))
		return toml_err(ps, "unexpected newline %s", where);
	toml_show_char(c, sizeof(c), ps->p, ps->end);
	return toml_err(ps, "unexpected character %s %s", c, where);
}

/*
 * A dotted key as TOML would write it, bounded: bare parts as they are,
 * others as basic strings.  With quote, a key of bare parts only is put
 * in double quotes, so that messages read: duplicate key "a.b".
 */
static void
key_show(char *buf, size_t sz, const struct keypart *kp, size_t n, int quote)
{
	size_t i, j, o = 0, k, w;
	int bare = 1;
	const unsigned char *s;
	uint32_t cp;
	char tmp[16];

	for (i = 0; i < n; i++) {
		if (kp[i].len == 0)
			bare = 0;
		for (j = 0; j < kp[i].len; j++)
			if (!is_bare((unsigned char)kp[i].s[j]))
				bare = 0;
	}
	sz = sz < KEY_SHOW_LEN ? sz : KEY_SHOW_LEN;
	if (quote && bare)
		buf[o++] = '"';
	for (i = 0; i < n; i++) {
		if (o + 12 >= sz) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (i > 0)
			buf[o++] = '.';
		s = (const unsigned char *)kp[i].s;
		if (!bare)
			buf[o++] = '"';
		for (j = 0; j < kp[i].len; j += w) {
			w = 1;
			if (s[j] < 0x20 || s[j] == 0x7f)
				snprintf(tmp, sizeof(tmp), "\\u%04X", s[j]);
			else if (s[j] == '"' || s[j] == '\\')
				snprintf(tmp, sizeof(tmp), "\\%c", s[j]);
			else {
				if ((w = utf8_decode(s + j, kp[i].len - j,
				    &cp)) == 0)
					w = 1;
				memcpy(tmp, s + j, w);
				tmp[w] = '\0';
			}
			k = strlen(tmp);
			if (o + k + 8 >= sz)
				break;
			memcpy(buf + o, tmp, k);
			o += k;
		}
		if (j < kp[i].len) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (!bare)
			buf[o++] = '"';
	}
	if (quote && bare)
		buf[o++] = '"';
	buf[o] = '\0';
}

/* Growing strings; s is NUL-terminated once anything was added. */

int
toml_sb_grow(struct parser *ps, struct sbuf *sb, size_t more)
{
	size_t cap;
	char *s;

	if (sb->cap - sb->len > more)
		return 0;
	if (more >= SIZE_MAX / 2 - sb->len)
		return toml_enomem(ps);
	cap = sb->cap ? sb->cap : 32;
	while (cap - sb->len <= more)
		cap *= 2;
	if ((s = realloc(sb->s, cap)) == NULL)
		return toml_enomem(ps);
	sb->s = s;
	sb->cap = cap;
	return 0;
}

int
toml_sb_add(struct parser *ps, struct sbuf *sb, const char *s, size_t len)
{
	if (toml_sb_grow(ps, sb, len) == -1)
		return -1;
	memcpy(sb->s + sb->len, s, len);
	sb->len += len;
	sb->s[sb->len] = '\0';
	return 0;
}

int
toml_sb_addc(struct parser *ps, struct sbuf *sb, int c)
{
	char ch = (char)c;

	return toml_sb_add(ps, sb, &ch, 1);
}

int
toml_sb_addcp(struct parser *ps, struct sbuf *sb, uint32_t cp)
{
	static const unsigned char lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };
	char u[4];
	size_t n, i;

	if (cp < 0x80)
		return toml_sb_addc(ps, sb, (int)cp);
	n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	for (i = n - 1; i > 0; i--) {
		u[i] = (char)(0x80 | (cp & 0x3f));
		cp >>= 6;
	}
	u[0] = (char)(lead[n] | cp);
	return toml_sb_add(ps, sb, u, n);
}

/* Values, tables and the index. */

struct toml_value *
toml_val_new(struct parser *ps, enum toml_type type, int line)
{
	struct toml_value *v;

	if ((v = calloc(1, sizeof(*v))) == NULL) {
		toml_enomem(ps);
		return NULL;
	}
	v->type = type;
	v->line = line;
	return v;
}

static uint64_t
key_hash(const struct toml_value *t, const char *k, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)k[i];
		h *= 0x100000001b3ULL;
	}
	h ^= (uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return h;
}

static int
index_grow(struct parser *ps)
{
	struct slot *ns, *os = ps->slots;
	size_t ncap, i, j, ocap = ps->nslots;

	if ((ps->nused + 1) * 2 <= ps->nslots)
		return 0;
	ncap = ocap ? ocap * 2 : 64;
	if (ncap < ocap || (ns = calloc(ncap, sizeof(*ns))) == NULL)
		return toml_enomem(ps);
	for (i = 0; i < ocap; i++) {
		if (os[i].tbl == NULL)
			continue;
		for (j = os[i].hash & (ncap - 1); ns[j].tbl != NULL;
		    j = (j + 1) & (ncap - 1))
			;
		ns[j] = os[i];
	}
	free(os);
	ps->slots = ns;
	ps->nslots = ncap;
	return 0;
}

static int
index_add(struct parser *ps, const struct toml_value *t, size_t idx)
{
	const struct toml_kv *kv = &t->u.table.items[idx];
	uint64_t h;
	size_t j;

	if (index_grow(ps) == -1)
		return -1;
	h = key_hash(t, kv->key, kv->keylen);
	for (j = h & (ps->nslots - 1); ps->slots[j].tbl != NULL;
	    j = (j + 1) & (ps->nslots - 1))
		;
	ps->slots[j].tbl = t;
	ps->slots[j].idx = idx;
	ps->slots[j].hash = h;
	ps->nused++;
	return 0;
}

static struct toml_kv *
tbl_get(struct parser *ps, const struct toml_value *t, const char *k,
    size_t len)
{
	struct toml_kv *kv;
	uint64_t h;
	size_t i, j;

	if (t->u.table.len < INDEX_MIN) {
		for (i = 0; i < t->u.table.len; i++) {
			kv = &t->u.table.items[i];
			if (kv->keylen == len && memcmp(kv->key, k, len) == 0)
				return kv;
		}
		return NULL;
	}
	h = key_hash(t, k, len);
	for (j = h & (ps->nslots - 1); ps->slots[j].tbl != NULL;
	    j = (j + 1) & (ps->nslots - 1)) {
		if (ps->slots[j].tbl != t || ps->slots[j].hash != h)
			continue;
		kv = &t->u.table.items[ps->slots[j].idx];
		if (kv->keylen == len && memcmp(kv->key, k, len) == 0)
			return kv;
	}
	return NULL;
}

/*
 * Adds key kp = v to t.  The key string moves into the table (kp->owned
 * drops, kp->s stays readable for messages); v is the table's, or freed.
 */
static int
tbl_put(struct parser *ps, struct toml_value *t, struct keypart *kp,
    int line, struct toml_value *v)
{
	struct toml_kv *items, *kv;
	size_t cap, i;

	if (t->u.table.len == t->u.table.cap) {
		cap = t->u.table.cap ? t->u.table.cap * 2 : 4;
		if ((items = reallocarray(t->u.table.items, cap,
		    sizeof(*items))) == NULL) {
			toml_free(v);
			return toml_enomem(ps);
		}
		t->u.table.items = items;
		t->u.table.cap = cap;
	}
	kv = &t->u.table.items[t->u.table.len++];
	kv->key = kp->s;
	kv->keylen = kp->len;
	kv->line = line;
	kv->value = v;
	kp->owned = 0;
	if (t->u.table.len == INDEX_MIN) {
		for (i = 0; i < INDEX_MIN; i++)
			if (index_add(ps, t, i) == -1)
				return -1;
	} else if (t->u.table.len > INDEX_MIN)
		return index_add(ps, t, t->u.table.len - 1);
	return 0;
}

/* Appends v to array a, or frees v. */
static int
arr_push(struct parser *ps, struct toml_value *a, struct toml_value *v)
{
	struct toml_value **items;
	size_t cap;

	if (a->u.array.len == a->u.array.cap) {
		cap = a->u.array.cap ? a->u.array.cap * 2 : 4;
		if ((items = reallocarray(a->u.array.items, cap,
		    sizeof(*items))) == NULL) {
			toml_free(v);
			return toml_enomem(ps);
		}
		a->u.array.items = items;
		a->u.array.cap = cap;
	}
	a->u.array.items[a->u.array.len++] = v;
	return 0;
}

/* Keys. */

static void
keypath_free(struct keypath *kp)
{
	size_t i;

	for (i = 0; i < kp->n; i++)
		if (kp->v[i].owned)
			free(kp->v[i].s);
	free(kp->v);
	kp->v = NULL;
	kp->n = kp->cap = 0;
}

/* Moves the string in sb to a new last part of kp. */
static int
keypath_push(struct parser *ps, struct keypath *kp, struct sbuf *sb)
{
	struct keypart *v;
	size_t cap;

	if (kp->n >= TOML_MAX_DEPTH)
		return toml_err(ps, "key has more than %d parts", TOML_MAX_DEPTH);
	if (sb->s == NULL && toml_sb_grow(ps, sb, 1) == -1)
		return -1;
	sb->s[sb->len] = '\0';
	if (kp->n == kp->cap) {
		cap = kp->cap ? kp->cap * 2 : 4;
		if ((v = reallocarray(kp->v, cap, sizeof(*v))) == NULL)
			return toml_enomem(ps);
		kp->v = v;
		kp->cap = cap;
	}
	kp->v[kp->n].s = sb->s;
	kp->v[kp->n].len = sb->len;
	kp->v[kp->n].owned = 1;
	kp->n++;
	sb->s = NULL;
	sb->len = sb->cap = 0;
	return 0;
}

static int
scan_bare(struct parser *ps, struct sbuf *sb)
{
	const char *s = ps->p;

	while (is_bare(peek(ps, 0)))
		ps->p++;
	return toml_sb_add(ps, sb, s, ps->p - s);
}

/* key = part ( ws '.' ws part )*, with the whitespace around it. */
static int
parse_key(struct parser *ps, struct keypath *kp)
{
	struct sbuf sb = { NULL, 0, 0 };
	int c, rc;

	kp->line = ps->line;
	for (;;) {
		toml_skip_ws(ps);
		c = peek(ps, 0);
		if (is_bare(c))
			rc = scan_bare(ps, &sb);
		else if ((c == '"' || c == '\'') && peek(ps, 1) == c &&
		    peek(ps, 2) == c)
			rc = toml_err(ps, "multi-line string used as a key");
		else if (c == '"' || c == '\'')
			rc = toml_read_string(ps, &sb, 0);
		else
			rc = unexpected(ps, "where a key was expected");
		if (rc == -1 || keypath_push(ps, kp, &sb) == -1) {
			free(sb.s);
			return -1;
		}
		toml_skip_ws(ps);
		if (peek(ps, 0) != '.')
			return 0;
		ps->p++;
	}
}

/* Containers. */

static struct toml_value *
parse_array(struct parser *ps, int depth)
{
	struct toml_value *a, *v;
	int c, start = ps->line;

	if (depth > TOML_MAX_DEPTH) {
		toml_err(ps, "nesting deeper than %d", TOML_MAX_DEPTH);
		return NULL;
	}
	if ((a = toml_val_new(ps, TOML_ARRAY, ps->line)) == NULL)
		return NULL;
	ps->p++;
	for (;;) {
		if (skip_space(ps) == -1)
			goto fail;
		if ((c = peek(ps, 0)) == ']')
			break;
		if (c == -1) {
			toml_err_at(ps, start, "unterminated array");
			goto fail;
		}
		if ((v = parse_value(ps, depth + 1)) == NULL ||
		    arr_push(ps, a, v) == -1 || skip_space(ps) == -1)
			goto fail;
		if ((c = peek(ps, 0)) == ']')
			break;
		if (c == -1) {
			toml_err_at(ps, start, "unterminated array");
			goto fail;
		}
		if (c != ',') {
			unexpected(ps, "in array, expected ',' or ']'");
			goto fail;
		}
		ps->p++;
	}
	ps->p++;
	return a;
fail:
	toml_free(a);
	return NULL;
}

static void
mark_inline(struct toml_value *t)
{
	size_t i;
	struct toml_value *v;

	t->u.table.flags |= TBL_INLINE;
	for (i = 0; i < t->u.table.len; i++) {
		v = t->u.table.items[i].value;
		if (v->type == TOML_TABLE && !(v->u.table.flags & TBL_INLINE))
			mark_inline(v);
	}
}

static struct toml_value *
parse_inline(struct parser *ps, int depth)
{
	struct toml_value *t;
	int c;

	if (depth > TOML_MAX_DEPTH) {
		toml_err(ps, "nesting deeper than %d", TOML_MAX_DEPTH);
		return NULL;
	}
	if ((t = toml_val_new(ps, TOML_TABLE, ps->line)) == NULL)
		return NULL;
	ps->p++;
	toml_skip_ws(ps);
	if (peek(ps, 0) != '}') {
		for (;;) {
			toml_skip_ws(ps);
			if (at_newline(ps) || peek(ps, 0) == -1) {
				unexpected(ps, "in inline table");
				goto fail;
			}
			if (parse_keyval(ps, t, depth) == -1)
				goto fail;
			toml_skip_ws(ps);
			if ((c = peek(ps, 0)) == '}')
				break;
			if (c != ',') {
				unexpected(ps, "in inline table, expected "
				    "',' or '}'");
				goto fail;
			}
			ps->p++;
			toml_skip_ws(ps);
			if (peek(ps, 0) == '}') {
				toml_err(ps, "trailing comma in inline table");
				goto fail;
			}
		}
	}
	ps->p++;
	mark_inline(t);
	return t;
fail:
	toml_free(t);
	return NULL;
}

/* A value of depth depth (containers above it). */
static struct toml_value *
parse_value(struct parser *ps, int depth)
{
	int c = peek(ps, 0);

	switch (c) {
	case '"':
	case '\'':
		return toml_read_string_value(ps);
	case '[':
		return parse_array(ps, depth);
	case '{':
		return parse_inline(ps, depth);
	case 't':
	case 'f':
		return toml_read_bool(ps);
	case '+':
	case '-':
	case 'i':
	case 'n':
		return toml_read_number(ps);
	}
	if (is_dec(c)) {
		if (is_dec(peek(ps, 1)) && is_dec(peek(ps, 2)) &&
		    is_dec(peek(ps, 3)) && peek(ps, 4) == '-')
			return toml_read_datetime(ps, 1);
		if (is_dec(peek(ps, 1)) && peek(ps, 2) == ':')
			return toml_read_datetime(ps, 0);
		return toml_read_number(ps);
	}
	if (c == -1 || at_newline(ps) || c == '#')
		toml_err(ps, "missing value");
	else
		unexpected(ps, "where a value was expected");
	return NULL;
}

/* Tables and keys. */

/* Part i of a dotted key in t: t's sub-table, made if need be. */
static struct toml_value *
dotted_step(struct parser *ps, struct toml_value *t, struct keypath *kp,
    size_t i, int depth)
{
	struct toml_kv *kv;
	struct toml_value *v;
	char k[KEY_SHOW_LEN];

	kv = tbl_get(ps, t, kp->v[i].s, kp->v[i].len);
	if (kv == NULL) {
		if (depth > TOML_MAX_DEPTH) {
			toml_err(ps, "nesting deeper than %d", TOML_MAX_DEPTH);
			return NULL;
		}
		if ((v = toml_val_new(ps, TOML_TABLE, kp->line)) == NULL)
			return NULL;
		v->u.table.flags = TBL_DOTTED;
		if (tbl_put(ps, t, &kp->v[i], kp->line, v) == -1)
			return NULL;
		return v;
	}
	v = kv->value;
	if (v->type == TOML_TABLE && (v->u.table.flags &
	    (TBL_DOTTED | TBL_INLINE)) == TBL_DOTTED)
		return v;
	key_show(k, sizeof(k), kp->v, i + 1, 1);
	if (v->type == TOML_TABLE && (v->u.table.flags & TBL_INLINE))
		toml_err(ps, "cannot extend inline table %s", k);
	else if (v->type == TOML_TABLE)
		toml_err(ps, "cannot extend table %s with dotted keys", k);
	else
		toml_err(ps, "key %s already defined as %s", k,
		    toml_type_name(v->type));
	return NULL;
}

/* key = value, into table tbl of depth depth. */
static int
parse_keyval(struct parser *ps, struct toml_value *tbl, int depth)
{
	struct keypath kp = { NULL, 0, 0, 0 };
	struct keypart *last;
	struct toml_value *t = tbl, *v;
	char k[KEY_SHOW_LEN];
	size_t i;

	if (parse_key(ps, &kp) == -1)
		goto fail;
	toml_skip_ws(ps);
	if (peek(ps, 0) != '=') {
		if (peek(ps, 0) == -1 || at_newline(ps))
			toml_err(ps, "expected '=' after key");
		else
			unexpected(ps, "after key, expected '='");
		goto fail;
	}
	ps->p++;
	toml_skip_ws(ps);
	for (i = 0; i + 1 < kp.n; i++)
		if ((t = dotted_step(ps, t, &kp, i, depth + 1 + i)) == NULL)
			goto fail;
	last = &kp.v[kp.n - 1];
	if (tbl_get(ps, t, last->s, last->len) != NULL) {
		key_show(k, sizeof(k), kp.v, kp.n, 1);
		toml_err_at(ps, kp.line, "duplicate key %s", k);
		goto fail;
	}
	if ((v = parse_value(ps, depth + (int)kp.n)) == NULL ||
	    tbl_put(ps, t, last, kp.line, v) == -1)
		goto fail;
	keypath_free(&kp);
	return 0;
fail:
	keypath_free(&kp);
	return -1;
}

/* Part i of a [header] path from t: into sub-tables and last elements. */
static struct toml_value *
header_step(struct parser *ps, struct toml_value *t, struct keypath *kp,
    size_t i, int *depth)
{
	struct toml_kv *kv;
	struct toml_value *v;
	char k[KEY_SHOW_LEN];

	kv = tbl_get(ps, t, kp->v[i].s, kp->v[i].len);
	if (kv == NULL) {
		if (++*depth > TOML_MAX_DEPTH) {
			toml_err(ps, "nesting deeper than %d", TOML_MAX_DEPTH);
			return NULL;
		}
		if ((v = toml_val_new(ps, TOML_TABLE, kp->line)) == NULL)
			return NULL;
		v->u.table.flags = TBL_IMPLICIT;
		if (tbl_put(ps, t, &kp->v[i], kp->line, v) == -1)
			return NULL;
		return v;
	}
	v = kv->value;
	key_show(k, sizeof(k), kp->v, i + 1, 1);
	if (v->type == TOML_TABLE && !(v->u.table.flags & TBL_INLINE)) {
		++*depth;
		return v;
	}
	if (v->type == TOML_ARRAY && (v->u.array.flags & ARR_TABLES)) {
		*depth += 2;
		return v->u.array.items[v->u.array.len - 1];
	}
	if (v->type == TOML_TABLE)
		toml_err(ps, "cannot extend inline table %s", k);
	else if (v->type == TOML_ARRAY)
		toml_err(ps, "cannot extend static array %s", k);
	else
		toml_err(ps, "key %s already defined as %s", k,
		    toml_type_name(v->type));
	return NULL;
}

/* The last part of a [header] or [[header]] path, in t. */
static int
header_last(struct parser *ps, struct toml_value *t, struct keypath *kp,
    int aot, int depth)
{
	struct keypart *last = &kp->v[kp->n - 1];
	struct toml_value *v, *a = NULL;
	struct toml_kv *kv;
	char k[KEY_SHOW_LEN];

	kv = tbl_get(ps, t, last->s, last->len);
	v = kv != NULL ? kv->value : NULL;
	if (v != NULL && !aot && v->type == TOML_TABLE &&
	    !(v->u.table.flags & ~TBL_IMPLICIT)) {
		v->u.table.flags = TBL_DEFINED;
		v->line = kp->line;
		ps->cur = v;
		ps->curdepth = depth + 1;
		return 0;
	}
	if (v != NULL && aot && v->type == TOML_ARRAY &&
	    (v->u.array.flags & ARR_TABLES))
		a = v;
	else if (v != NULL && !aot && v->type == TOML_TABLE) {
		key_show(k, sizeof(k), kp->v, kp->n, 0);
		return toml_err(ps, "table [%s] defined twice", k);
	} else if (v != NULL) {
		key_show(k, sizeof(k), kp->v, kp->n, 1);
		if (aot && v->type == TOML_ARRAY)
			return toml_err(ps, "cannot append to static array %s", k);
		return toml_err(ps, "key %s already defined as %s", k,
		    v->type == TOML_ARRAY && (v->u.array.flags & ARR_TABLES) ?
		    "array of tables" :
		    toml_type_name(v->type));
	}
	if (depth + 1 + aot > TOML_MAX_DEPTH)
		return toml_err(ps, "nesting deeper than %d", TOML_MAX_DEPTH);
	if (aot && a == NULL) {
		if ((a = toml_val_new(ps, TOML_ARRAY, kp->line)) == NULL)
			return -1;
		a->u.array.flags = ARR_TABLES;
		if (tbl_put(ps, t, last, kp->line, a) == -1)
			return -1;
	}
	if ((v = toml_val_new(ps, TOML_TABLE, kp->line)) == NULL)
		return -1;
	v->u.table.flags = TBL_DEFINED;
	if (aot && arr_push(ps, a, v) == -1)
		return -1;
	if (!aot && tbl_put(ps, t, last, kp->line, v) == -1)
		return -1;
	ps->cur = v;
	ps->curdepth = depth + 1 + aot;
	return 0;
}

/* [a.b] or [[a.b]] */
static int
parse_header(struct parser *ps)
{
	struct keypath kp = { NULL, 0, 0, 0 };
	struct toml_value *t = ps->root;
	int aot = 0, depth = 0;
	size_t i;

	ps->p++;
	if (peek(ps, 0) == '[') {
		aot = 1;
		ps->p++;
	}
	if (parse_key(ps, &kp) == -1)
		goto fail;
	if (peek(ps, 0) != ']' || (aot && peek(ps, 1) != ']')) {
		unexpected(ps, aot ? "in table header, expected ']]'" :
		    "in table header, expected ']'");
		goto fail;
	}
	ps->p += 1 + aot;
	for (i = 0; i + 1 < kp.n; i++)
		if ((t = header_step(ps, t, &kp, i, &depth)) == NULL)
			goto fail;
	if (header_last(ps, t, &kp, aot, depth) == -1)
		goto fail;
	keypath_free(&kp);
	return expect_eol(ps, "table header");
fail:
	keypath_free(&kp);
	return -1;
}

static int
parse_document(struct parser *ps)
{
	int c;

	if ((size_t)(ps->end - ps->p) >= 3 &&
	    memcmp(ps->p, "\xef\xbb\xbf", 3) == 0)
		ps->p += 3;
	for (;;) {
		toml_skip_ws(ps);
		c = peek(ps, 0);
		if (c == -1)
			return 0;
		if (c == '#') {
			if (skip_comment(ps) == -1)
				return -1;
		} else if (at_newline(ps))
			toml_eat_newline(ps);
		else if (c == '[') {
			if (parse_header(ps) == -1)
				return -1;
		} else if (parse_keyval(ps, ps->cur, ps->curdepth) == -1 ||
		    expect_eol(ps, "value") == -1)
			return -1;
	}
}

struct toml_value *
toml_parse(const char *buf, size_t len, struct toml_error *err)
{
	struct parser ps;
	struct toml_value *root;

	memset(&ps, 0, sizeof(ps));
	memset(err, 0, sizeof(*err));
	ps.line = 1;
	ps.err = err;
	if (buf == NULL && len != 0) {
		toml_err_at(&ps, 0, "no input");
		return NULL;
	}
	if (buf == NULL)
		buf = "";
	ps.p = buf;
	ps.end = buf + len;
	if ((ps.root = toml_val_new(&ps, TOML_TABLE, 1)) == NULL)
		return NULL;
	ps.root->u.table.flags = TBL_DEFINED;
	ps.cur = ps.root;
	root = ps.root;
	if (check_bytes(&ps) == -1 || parse_document(&ps) == -1) {
		toml_free(root);
		root = NULL;
	}
	free(ps.slots);
	if (ps.cloc != (locale_t)0)
		freelocale(ps.cloc);
	return root;
}

void
toml_free(struct toml_value *v)
{
	size_t i;

	if (v == NULL)
		return;
	switch (v->type) {
	case TOML_TABLE:
		for (i = 0; i < v->u.table.len; i++) {
			free(v->u.table.items[i].key);
			toml_free(v->u.table.items[i].value);
		}
		free(v->u.table.items);
		break;
	case TOML_ARRAY:
		for (i = 0; i < v->u.array.len; i++)
			toml_free(v->u.array.items[i]);
		free(v->u.array.items);
		break;
	case TOML_STRING:
		free(v->u.string.ptr);
		break;
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		free(v->u.datetime);
		break;
	default:
		break;
	}
	free(v);
}

const struct toml_kv *
toml_table_find(const struct toml_value *t, const char *key)
{
	size_t i, len;

	if (t == NULL || key == NULL || t->type != TOML_TABLE)
		return NULL;
	len = strlen(key);
	for (i = 0; i < t->u.table.len; i++)
		if (t->u.table.items[i].keylen == len &&
		    memcmp(t->u.table.items[i].key, key, len) == 0)
			return &t->u.table.items[i];
	return NULL;
}

const char *
toml_type_name(enum toml_type type)
{
	switch (type) {
	case TOML_TABLE:
		return "table";
	case TOML_ARRAY:
		return "array";
	case TOML_STRING:
		return "string";
	case TOML_INTEGER:
		return "integer";
	case TOML_FLOAT:
		return "float";
	case TOML_BOOL:
		return "bool";
	case TOML_DATETIME:
		return "datetime";
	case TOML_DATETIME_LOCAL:
		return "datetime-local";
	case TOML_DATE_LOCAL:
		return "date-local";
	case TOML_TIME_LOCAL:
		return "time-local";
	}
	return "unknown";
}
