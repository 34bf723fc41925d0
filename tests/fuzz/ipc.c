/*
 * ipc.c - libFuzzer target for ipc_decode() (lib/ipc.c).
 *
 * Any bytes: ipc_decode() must not crash, leak or read out of bounds.  It
 * returns an object or NULL with a non-empty, terminated reason.  An
 * object's "op" is a string or NULL, every string is free of NUL bytes
 * (JSON_ALLOW_NUL is not given), and the object written back as JSON must
 * decode again to an equal object (duplicate keys were refused, so nothing
 * is lost on the way).  jansson itself is not instrumented: walk() branches
 * on the shape of what was decoded, so that the fuzzer keeps inputs of new
 * shapes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ipc.h"

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	walk(json_t *, int);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "ipc fuzz: invariant broken: %s\n", what);
		abort();
	}
}

static void
walk(json_t *v, int depth)
{
	const char *key;
	json_t *x;
	size_t i;

	check(depth <= 2048, "nesting bounded");
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach(v, key, x) {
			check(json_object_get(v, key) == x,
			    "a key finds its value");
			walk(x, depth + 1);
		}
		break;
	case JSON_ARRAY:
		json_array_foreach(v, i, x)
			walk(x, depth + 1);
		break;
	case JSON_STRING:
		check(strlen(json_string_value(v)) == json_string_length(v),
		    "no NUL in a string");
		break;
	case JSON_INTEGER:
	case JSON_REAL:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char err[IPC_ERR_LEN], err2[IPC_ERR_LEN];
	json_t *msg, *again;
	const char *op;
	char *text;

	memset(err, 'x', sizeof(err));
	msg = ipc_decode((const char *)data, len, err, sizeof(err));
	if (msg == NULL) {
		check(memchr(err, '\0', sizeof(err)) != NULL, "reason ends");
		check(err[0] != '\0', "reason given");
		return 0;
	}
	check(json_is_object(msg), "an object");
	walk(msg, 0);
	op = ipc_op(msg);
	check(op == NULL || json_is_string(json_object_get(msg, "op")),
	    "op is a string or absent");
	text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
	check(text != NULL, "written back");
	if (strlen(text) <= IPC_MSG_MAX) {
		again = ipc_decode(text, strlen(text), err2, sizeof(err2));
		if (again == NULL)
			fprintf(stderr, "ipc fuzz: %s: %s\n", err2, text);
		check(again != NULL, "written back, decodes");
		check(json_equal(msg, again), "written back, decodes the same");
		json_decref(again);
	}
	free(text);
	json_decref(msg);
	return 0;
}
