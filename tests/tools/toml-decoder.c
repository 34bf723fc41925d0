/*
 * toml-decoder - the toml-test decoder interface over lib/toml.c.
 *
 *	toml-decoder < file.toml
 *
 * Reads a TOML document on stdin.  If it is valid, writes toml-test's
 * tagged JSON on stdout (tables as objects, arrays as arrays, scalars as
 * {"type": T, "value": S}) and exits 0; otherwise writes
 * "toml-decoder: line N: reason" on stderr and exits 1.  Anything else
 * (out of memory, I/O) exits 71 or 74.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <jansson.h>

#include "toml.h"

#define PROG	"toml-decoder"

static char	*read_all(FILE *, size_t *);
static json_t	*tag(const char *, const char *, size_t);
static json_t	*scalar(const struct toml_value *);
static json_t	*convert(const struct toml_value *);

static char *
read_all(FILE *fp, size_t *lenp)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0, n;

	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 65536;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, fp);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(fp)) {
		free(buf);
		return NULL;
	}
	*lenp = len;
	return buf;
}

static json_t *
tag(const char *type, const char *s, size_t len)
{
	json_t *o;

	if ((o = json_object()) == NULL)
		return NULL;
	if (json_object_set_new(o, "type", json_string(type)) == -1 ||
	    json_object_set_new(o, "value", json_stringn(s, len)) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
scalar(const struct toml_value *v)
{
	char buf[64];
	double d;

	switch (v->type) {
	case TOML_STRING:
		return tag("string", v->u.string.ptr, v->u.string.len);
	case TOML_INTEGER:
		snprintf(buf, sizeof(buf), "%" PRId64, v->u.integer);
		break;
	case TOML_FLOAT:
		d = v->u.floating;
		if (isnan(d))
			strlcpy(buf, "nan", sizeof(buf));
		else if (isinf(d))
			strlcpy(buf, d < 0 ? "-inf" : "inf", sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "%.17g", d);
		break;
	case TOML_BOOL:
		strlcpy(buf, v->u.boolean ? "true" : "false", sizeof(buf));
		break;
	default:
		return tag(toml_type_name(v->type), v->u.datetime,
		    strlen(v->u.datetime));
	}
	return tag(toml_type_name(v->type), buf, strlen(buf));
}

static json_t *
convert(const struct toml_value *v)
{
	const struct toml_kv *kv;
	json_t *j, *c;
	size_t i;

	if (v->type == TOML_TABLE) {
		if ((j = json_object()) == NULL)
			return NULL;
		for (i = 0; i < v->u.table.len; i++) {
			kv = &v->u.table.items[i];
			if ((c = convert(kv->value)) == NULL ||
			    json_object_setn_new(j, kv->key, kv->keylen,
			    c) == -1) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	}
	if (v->type == TOML_ARRAY) {
		if ((j = json_array()) == NULL)
			return NULL;
		for (i = 0; i < v->u.array.len; i++) {
			if ((c = convert(v->u.array.items[i])) == NULL ||
			    json_array_append_new(j, c) == -1) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	}
	return scalar(v);
}

int
main(void)
{
	struct toml_error err;
	struct toml_value *root;
	json_t *j;
	char *buf;
	size_t len;
	int rc;

	if ((buf = read_all(stdin, &len)) == NULL) {
		fprintf(stderr, "%s: fatal: unable to read stdin\n", PROG);
		return EX_OSERR;
	}
	root = toml_parse(buf, len, &err);
	free(buf);
	if (root == NULL) {
		if (err.line > 0)
			fprintf(stderr, "%s: line %d: %s\n", PROG, err.line,
			    err.msg);
		else
			fprintf(stderr, "%s: %s\n", PROG, err.msg);
		return 1;
	}
	j = convert(root);
	toml_free(root);
	if (j == NULL) {
		fprintf(stderr, "%s: fatal: unable to build JSON\n", PROG);
		return EX_OSERR;
	}
	rc = json_dumpf(j, stdout, JSON_INDENT(1));
	json_decref(j);
	if (rc == -1 || putchar('\n') == EOF || fflush(stdout) == EOF ||
	    ferror(stdout)) {
		fprintf(stderr, "%s: fatal: unable to write stdout\n", PROG);
		return EX_IOERR;
	}
	return 0;
}
