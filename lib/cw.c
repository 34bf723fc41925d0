/*
 * cw.c - the walk of a config file (see cw.h), what the operator file
 * (config*.c) and the application file (app*.c) share: the file read
 * whole, keys shown as TOML would write them, values checked by type, and
 * each problem one diagnostic "file:line: key: reason".
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "cw.h"
#include "toml.h"

_Static_assert(CONFIG_DIAG_LEN >= 4096 + CW_KEYPATH_LEN + CW_REASON_LEN + 64,
    "a diagnostic holds a file, a key and a reason whole");

static void	 dl_add(struct cw_dlist *, int, const char *);
static int	 dent_cmp(const void *, const void *);

int
cw_is_digit(int c)
{
	return c >= '0' && c <= '9';
}

int
cw_is_lower(int c)
{
	return c >= 'a' && c <= 'z';
}

int
cw_is_alpha(int c)
{
	return cw_is_lower(c) || (c >= 'A' && c <= 'Z');
}

/* Keys may hold NUL: compare with the length. */
int
cw_key_is(const struct toml_kv *kv, const char *name)
{
	size_t n = strlen(name);

	return kv->keylen == n && memcmp(kv->key, name, n) == 0;
}

/*
 * Writes a key (or, with quote set, a value) as TOML would: bare if it can
 * be, else quoted with escapes.  At most CW_KEYSHOW_MAX bytes of it are
 * shown.
 */
void
cw_show(char *dst, size_t dstsz, const char *s, size_t len, int quote)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o, n;
	unsigned char c;
	int bare = len > 0 && !quote;

	for (i = 0; bare && i < len; i++) {
		c = s[i];
		if (!cw_is_alpha(c) && !cw_is_digit(c) && c != '_' && c != '-')
			bare = 0;
	}
	n = len;
	if (n > CW_KEYSHOW_MAX) {
		n = CW_KEYSHOW_MAX;
		/* do not cut a UTF-8 sequence */
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	o = 0;
	dst[0] = '\0';
	if (dstsz < 16)
		return;
	if (!bare)
		dst[o++] = '"';
	for (i = 0; i < n && o + 10 < dstsz; i++) {
		c = s[i];
		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = c;
		} else if (c < 0x20 || c == 0x7f) {
			dst[o++] = '\\';
			dst[o++] = 'u';
			dst[o++] = '0';
			dst[o++] = '0';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 0xf];
		} else
			dst[o++] = c;
	}
	if (i < len && o + 4 < dstsz) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	if (!bare)
		dst[o++] = '"';
	dst[o] = '\0';
}

/* dst (CW_KEYPATH_LEN) = prefix "." key, the key shown as TOML would. */
void
cw_kpath(char *dst, const char *prefix, const char *key, size_t len)
{
	char k[CW_KEYSHOW_MAX * 6 + 8];

	cw_show(k, sizeof(k), key, len, 0);
	dst[0] = '\0';
	if (prefix != NULL && *prefix != '\0') {
		(void)strlcpy(dst, prefix, CW_KEYPATH_LEN);
		(void)strlcat(dst, ".", CW_KEYPATH_LEN);
	}
	if (strlcat(dst, k, CW_KEYPATH_LEN) >= CW_KEYPATH_LEN)
		memcpy(dst + CW_KEYPATH_LEN - 4, "...", 4);
}

void
cw_kpath_s(char *dst, const char *prefix, const char *key)
{
	cw_kpath(dst, prefix, key, strlen(key));
}

void
cw_diag_add(struct config_diag *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (d == NULL)
		return;
	if (d->count < CONFIG_DIAG_MAX) {
		va_start(ap, fmt);
		n = vsnprintf(d->msg[d->count], CONFIG_DIAG_LEN, fmt, ap);
		va_end(ap);
		if (n >= CONFIG_DIAG_LEN)
			memcpy(d->msg[d->count] + CONFIG_DIAG_LEN - 4, "...",
			    4);
	}
	d->count++;
}

/*
 * Reads a whole file of at most CONFIG_MAX_FILE bytes.  The size of a
 * regular file is checked with fstat() before reading, and the read itself
 * is bounded (a file may grow meanwhile, and a pipe has no size).  Returns
 * 0; 1 when absent_ok and the file does not exist (no diagnostic); or -1
 * with a diagnostic, and *unreadable set when the file could not be opened
 * or read (66 rather than 65 or 78: a file too large is invalid input).
 */
int
cw_read(const char *path, int absent_ok, char **bufp, size_t *lenp,
    int *unreadable, struct config_diag *d)
{
	struct stat st;
	char *buf = NULL, *nb;
	size_t len = 0, cap;
	ssize_t n;
	int fd;

	*unreadable = 0;
	*bufp = NULL;
	*lenp = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		if (absent_ok && errno == ENOENT)
			return 1;
		cw_diag_add(d, "%s: unable to open: %s", path,
		    strerror(errno));
		*unreadable = 1;
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		cw_diag_add(d, "%s: unable to stat: %s", path,
		    strerror(errno));
		*unreadable = 1;
		goto fail;
	}
	if (S_ISREG(st.st_mode) && st.st_size > CONFIG_MAX_FILE)
		goto big;
	/* room for one byte more than expected, to see the end */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096;
	for (;;) {
		if (len == cap || buf == NULL) {
			if (buf != NULL)
				cap = cap > CONFIG_MAX_FILE / 2 ?
				    CONFIG_MAX_FILE + 1 : cap * 2;
			if ((nb = realloc(buf, cap)) == NULL)
				goto rfail;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto rfail;
		if (n == 0)
			break;
		len += n;
		if (len > CONFIG_MAX_FILE)
			goto big;
	}
	(void)close(fd);
	*bufp = buf;
	*lenp = len;
	return 0;
rfail:
	cw_diag_add(d, "%s: unable to read: %s", path, strerror(errno));
	*unreadable = 1;
	goto fail;
big:
	cw_diag_add(d, "%s: too large: over %d bytes", path,
	    CONFIG_MAX_FILE);
fail:
	free(buf);
	(void)close(fd);
	return -1;
}

static int
dent_cmp(const void *a, const void *b)
{
	const struct cw_dent *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void
dl_add(struct cw_dlist *dl, int line, const char *msg)
{
	struct cw_dent *e;
	size_t i, worst;

	dl->count++;
	if (dl->n < CONFIG_DIAG_MAX)
		e = &dl->d[dl->n++];
	else {
		/* keep the lowest lines: replace the last one if later */
		worst = 0;
		for (i = 1; i < dl->n; i++)
			if (dent_cmp(&dl->d[i], &dl->d[worst]) > 0)
				worst = i;
		if (line >= dl->d[worst].line)
			return;
		e = &dl->d[worst];
	}
	e->line = line;
	e->seq = dl->seq++;
	(void)strlcpy(e->msg, msg, sizeof(e->msg));
}

void
cw_flush(struct cw_dlist *dl, struct config_diag *d)
{
	size_t i;

	if (d == NULL)
		return;
	qsort(dl->d, dl->n, sizeof(dl->d[0]), dent_cmp);
	for (i = 0; i < dl->n; i++)
		cw_diag_add(d, "%s", dl->d[i].msg);
	d->count += dl->count - dl->n;
}

void
cw_diag(struct cw *c, int line, const char *key, const char *fmt, ...)
{
	char reason[CW_REASON_LEN], msg[CONFIG_DIAG_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	(void)vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	n = snprintf(msg, sizeof(msg), "%s:%d: %s: %s", c->file, line, key,
	    reason);
	if (n >= (int)sizeof(msg))
		memcpy(msg + sizeof(msg) - 4, "...", 4);
	dl_add(&c->dl, line, msg);
}

char *
cw_strndup(struct cw *c, const char *s, size_t len)
{
	char *p;

	if ((p = strndup(s, len)) == NULL)
		c->oom = 1;
	return p;
}

/* A string value without NUL of at most max bytes, or NULL (diagnosed). */
const char *
cw_str(struct cw *c, const struct toml_kv *kv, const char *key,
    size_t max)
{
	const struct toml_value *v = kv->value;

	if (v->type != TOML_STRING) {
		cw_diag(c, kv->line, key, "must be a string");
		return NULL;
	}
	if (strlen(v->u.string.ptr) != v->u.string.len) {
		cw_diag(c, kv->line, key, "must not contain NUL");
		return NULL;
	}
	if (v->u.string.len == 0) {
		cw_diag(c, kv->line, key, "must not be empty");
		return NULL;
	}
	if (v->u.string.len > max) {
		cw_diag(c, kv->line, key, "too long (at most %zu bytes)", max);
		return NULL;
	}
	return v->u.string.ptr;
}

int
cw_int(struct cw *c, const struct toml_kv *kv, const char *key,
    int64_t min, int64_t max, int64_t *out)
{
	const struct toml_value *v = kv->value;

	if (v->type != TOML_INTEGER) {
		cw_diag(c, kv->line, key, "must be an integer");
		return -1;
	}
	if (v->u.integer < min || v->u.integer > max) {
		cw_diag(c, kv->line, key, "must be between %lld and %lld",
		    (long long)min, (long long)max);
		return -1;
	}
	*out = v->u.integer;
	return 0;
}

int
cw_bool(struct cw *c, const struct toml_kv *kv, const char *key, int *out)
{
	if (kv->value->type != TOML_BOOL) {
		cw_diag(c, kv->line, key, "must be a boolean");
		return -1;
	}
	*out = kv->value->u.boolean != 0;
	return 0;
}

/* Any TOML value as JSON; floats that JSON lacks become strings. */
json_t *
cw_json(const struct toml_value *v, int depth, int *deep)
{
	const struct toml_kv *kv;
	json_t *j, *e;
	size_t i;

	if (depth > CW_JSON_DEPTH_MAX) {
		*deep = 1;
		return NULL;
	}
	switch (v->type) {
	case TOML_TABLE:
		if ((j = json_object()) == NULL)
			return NULL;
		for (i = 0; i < v->u.table.len; i++) {
			kv = &v->u.table.items[i];
			if ((e = cw_json(kv->value, depth + 1, deep)) ==
			    NULL || json_object_setn_new(j, kv->key,
			    kv->keylen, e) == -1) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	case TOML_ARRAY:
		if ((j = json_array()) == NULL)
			return NULL;
		for (i = 0; i < v->u.array.len; i++) {
			e = cw_json(v->u.array.items[i], depth + 1, deep);
			if (e == NULL || json_array_append_new(j, e) == -1) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	case TOML_STRING:
		return json_stringn(v->u.string.ptr, v->u.string.len);
	case TOML_INTEGER:
		return json_integer(v->u.integer);
	case TOML_FLOAT:
		if (isnan(v->u.floating))
			return json_string("nan");
		if (isinf(v->u.floating))
			return json_string(v->u.floating > 0 ? "inf" : "-inf");
		return json_real(v->u.floating);
	case TOML_BOOL:
		return json_boolean(v->u.boolean);
	default:
		return json_string(v->u.datetime);
	}
}
