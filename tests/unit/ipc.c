/*
 * ipc.c - the strict decoding of messages between hk programs, and one
 * request/reply over a real SOCK_SEQPACKET socket pair.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "tap.h"

static const struct {
	const char	*text;
	int		 valid;		/* decodes to an object */
	const char	*op;		/* expected ipc_op(), NULL = none */
} cases[] = {
	{ "{\"op\":\"reload\"}",			1, "reload" },
	{ "{\"op\":\"wake\",\"service\":\"a/b\"}",	1, "wake" },
	{ "{\"ok\":true}",				1, NULL },
	{ "{\"op\":3}",					1, NULL },
	{ "{\"op\":\"a\",\"op\":\"b\"}",		0, NULL },
	{ "[\"op\"]",					0, NULL },
	{ "\"op\"",					0, NULL },
	{ "{\"op\":\"reload\"",				0, NULL },
	{ "",						0, NULL },
	{ "{\"op\":\"x\"} trailing",			0, NULL },
};

int
main(void)
{
	char err[IPC_ERR_LEN], *big;
	size_t i, n = sizeof(cases) / sizeof(cases[0]);
	json_t *msg;
	int sv[2];

	plan((int)n * 2 + 4);
	for (i = 0; i < n; i++) {
		msg = ipc_decode(cases[i].text, strlen(cases[i].text), err,
		    sizeof(err));
		ok((msg != NULL) == cases[i].valid, "decode '%s' %s",
		    cases[i].text, cases[i].valid ? "accepted" : "refused");
		if (msg != NULL && cases[i].op != NULL)
			is(ipc_op(msg), cases[i].op, "op of '%s'",
			    cases[i].text);
		else
			ok(msg == NULL || ipc_op(msg) == NULL,
			    "no op in '%s'", cases[i].text);
		json_decref(msg);
	}

	big = malloc(IPC_MSG_MAX + 2);
	memset(big, ' ', IPC_MSG_MAX + 1);
	memcpy(big, "{\"op\":\"x\"}", 10);
	msg = ipc_decode(big, IPC_MSG_MAX + 1, err, sizeof(err));
	ok(msg == NULL && strstr(err, "exceeds") != NULL,
	    "a message over %d bytes is refused: %s", IPC_MSG_MAX, err);
	free(big);

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == -1)
		return 1;
	msg = json_pack("{s:s, s:s}", "op", "wake", "service", "fn/py");
	ok(ipc_send(sv[0], msg, err, sizeof(err)) == 0, "send");
	json_decref(msg);
	msg = ipc_recv(sv[1], 1000, err, sizeof(err));
	ok(msg != NULL && strcmp(ipc_op(msg), "wake") == 0,
	    "the message arrives whole on the other end");
	json_decref(msg);
	msg = ipc_recv(sv[1], 50, err, sizeof(err));
	ok(msg == NULL && errno == ETIMEDOUT, "recv honours its deadline: %s",
	    err);
	close(sv[0]);
	close(sv[1]);
	return done();
}
