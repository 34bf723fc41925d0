/*
 * hget.c - lib/hget.c: the GET that hk-scale's probe and hk-idle's check
 * send, and how an answer's end, a close before it, a reset, bytes that
 * are not HTTP and an answer longer than the reader takes are told apart.
 * The server's side is the other end of a socket pair.
 */
#include <sys/socket.h>

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "hget.h"
#include "tap.h"

struct run {
	enum hget_step	 step;
	const char	*why;
	int		 heads;		/* on_head calls */
	struct hget	 get;
};

static void
on_head(void *arg)
{
	((struct run *)arg)->heads++;
}

/*
 * Answer text, then close the server's side if shut: reads until a step
 * other than HGET_MORE (or ten reads).  max bounds the answer.
 */
static void
answer(struct run *r, const char *text, int shut, size_t max)
{
	int sv[2], i;

	memset(r, 0, sizeof(*r));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1) {
		r->step = HGET_FAILED;
		r->why = "socketpair";
		return;
	}
	(void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
	hget_init(&r->get, max, on_head, r);
	(void)write(sv[1], text, strlen(text));
	if (shut)
		(void)close(sv[1]);
	for (i = 0, r->step = HGET_MORE; i < 10 && r->step == HGET_MORE; i++)
		r->step = hget_read(&r->get, sv[0], &r->why);
	(void)close(sv[0]);
	if (!shut)
		(void)close(sv[1]);
}

int
main(void)
{
	char got[HGET_REQ_MAX], path[1100];
	struct run r;
	int sv[2];
	ssize_t n;

	plan(17);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		return 1;
	ok(hget_send(sv[0], "/healthz", "127.0.0.1:8080", "hk-test") == 0,
	    "the request is sent");
	n = read(sv[1], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	is(got, "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:8080\r\n"
	    "User-Agent: hk-test\r\nConnection: close\r\n\r\n",
	    "HTTP/1.0, the host, the agent, Connection: close");
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[1024] = '\0';
	ok(hget_send(sv[0], path, "[::1]:65535", "hk-test") == 0,
	    "a path of 1024 bytes is sent (hk.toml(5)'s longest)");
	(void)close(sv[0]);
	(void)close(sv[1]);

	answer(&r, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokMORE", 0,
	    65536);
	ok(r.step == HGET_END && r.get.status == 200 && r.heads == 1,
	    "Content-Length: the end without a close, status 200, one head");
	answer(&r, "HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "4\r\nbusy\r\n0\r\n\r\n", 0, 65536);
	ok(r.step == HGET_END && r.get.status == 503,
	    "chunked: the end at the last chunk, status 503");
	answer(&r, "HTTP/1.0 200 OK\r\n\r\nbody until the close", 1, 65536);
	ok(r.step == HGET_END && r.get.status == 200,
	    "no length: the close ends it");
	answer(&r, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 1,
	    65536);
	ok(r.step == HGET_FAILED && r.get.status == 200,
	    "a close before the body's end: failed, the head kept");
	is(r.why, "stream ended at an unexpected time",
	    "... saying so (the parser's words)");
	answer(&r, "", 1, 65536);
	ok(r.step == HGET_FAILED && r.get.status == 0 && r.heads == 0,
	    "a close before anything: failed, no head");
	is(r.why, "closed before its end", "... saying so");
	answer(&r, "SSH-2.0-OpenSSH_9.2\r\n", 1, 65536);
	ok(r.step == HGET_FAILED && r.get.status == 0 && r.why != NULL,
	    "not HTTP: failed with the parser's reason");
	diag("not HTTP: %s", r.why != NULL ? r.why : "(none)");
	answer(&r, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
	    "0123456789012345678901234567890123456789", 0, 64);
	ok(r.step == HGET_CUT && r.get.status == 200 && r.get.len >= 64,
	    "longer than max: cut, the status kept");
	answer(&r, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe", 0,
	    65536);
	ok(r.step == HGET_MORE && r.get.status == 200 && r.heads == 1,
	    "the body under way: more to read, the head in");
	answer(&r, "HTTP/1.1 204 No Content\r\n\r\n", 0, 65536);
	ok(r.step == HGET_END && r.get.status == 204,
	    "204: no body, the end at the head");
	answer(&r, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	    "HTTP/1.1 500 X\r\n\r\n", 0, 65536);
	ok(r.step == HGET_END && r.get.status == 200,
	    "what follows the end is not the answer");

	/* A reset: the reader's error is the failure's reason. */
	memset(&r, 0, sizeof(r));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		return 1;
	hget_init(&r.get, 65536, on_head, &r);
	(void)close(sv[0]);
	r.step = hget_read(&r.get, sv[0], &r.why);
	ok(r.step == HGET_FAILED && r.why != NULL,
	    "a read that fails (a closed descriptor): failed, with errno's text");
	(void)close(sv[1]);
	ok(hget_send(-1, "/", "h", "a") == -1, "a send that fails: -1");
	return done();
}
