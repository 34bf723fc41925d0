/*
 * vet.c - unit tests of lib/vet: the files chosen from a source archive
 * and the bound on them, the request's JSON, the reading of verdicts
 * (table-driven), and vet_ask() against stand-ins on 127.0.0.1 only: a
 * closed port, and a child process answering one request.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "srctree.h"
#include "tap.h"
#include "vet.h"

static void	put(const char *, const char *, const char *, size_t);
static void	test_collect(const char *);
static void	test_request(void);
static void	test_verdicts(void);
static void	test_reasons(void);
static int	listen_local(int *);
static void	serve(int, const char *, const char *);
static void	ask_one(const char *, int, const char *, const char *,
	    const char *, enum vet_result, const char *);
static void	test_ask(void);

static void
put(const char *dir, const char *name, const char *text, size_t len)
{
	char p[4096], *slash;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	for (slash = p + strlen(dir) + 1; (slash = strchr(slash, '/')) != NULL;
	    slash++) {
		*slash = '\0';
		(void)mkdir(p, 0755);
		*slash = '/';
	}
	if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, text, len) != (ssize_t)len || close(fd) == -1)
		perror(p);
}

#define PUT(d, n, s)	put(d, n, s, sizeof(s) - 1)

static void
test_collect(const char *top)
{
	static char *const exts[] = { ".py", ".js", NULL };
	static char *const all[] = { ".py", ".js", ".pyc", ".so", ".bin",
	    ".md", NULL };
	static const char want[] = "=== a.py ===\nprint('a')\n\n"
	    "=== b.js ===\nb()\n\n"
	    "=== sub/c.py ===\n# \xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbf\n\n";
	char why[VET_CAUSE_LEN], dir[512], wantwhy[128], *text, *req;
	struct srctree t;
	size_t n = 99;
	int over = 9;

	snprintf(dir, sizeof(dir), "%s/src", top);
	mkdir(dir, 0755);
	PUT(dir, "a.py", "print('a')\n");
	PUT(dir, "b.js", "b()\n");
	PUT(dir, "node_modules/x.js", "x()\n");
	PUT(dir, "deep/node_modules/y/y.js", "y()\n");
	PUT(dir, "pkg/__pycache__/m.pyc", "m");
	PUT(dir, "pkg/__pycache__/n.py", "n");
	PUT(dir, "lib.so", "so");
	PUT(dir, "data.bin", "a\0b");
	PUT(dir, "nul.py", "a\0b");
	PUT(dir, "bad-utf8.py", "\xc0\xaf");		/* overlong '/' */
	PUT(dir, "surrogate.py", "\xed\xa0\x80");
	PUT(dir, "past-max.py", "\xf4\x90\x80\x80");	/* U+110000 */
	PUT(dir, "cut.py", "x\xe2\x82");
	PUT(dir, "README.md", "# readme\n");
	PUT(dir, "sub/c.py", "# \xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbf\n");
	if (!ok(srctree_read(dir, &t, why, sizeof(why)) == 0, "read the tree"))
		return;

	text = vet_collect(t.data, t.len, exts, 4096, &n, &over, why,
	    sizeof(why));
	is(text, want, "collect: a.py, b.js, sub/c.py, in the archive's order");
	ok(n == 3 && over == 0, "collect: 3 files, not over (%zu, %d)", n,
	    over);
	free(text);

	text = vet_collect(t.data, t.len, all, 4096, &n, &over, why,
	    sizeof(why));
	ok(text != NULL && strstr(text, "=== README.md ===\n# readme\n\n") ==
	    text && n == 4 && strstr(text, "pyc") == NULL &&
	    strstr(text, ".so") == NULL && strstr(text, ".bin") == NULL,
	    "collect: *.pyc, *.so and binaries never, whatever the list");
	free(text);

	text = vet_collect(t.data, t.len, exts, sizeof(want) - 1, &n, &over,
	    why, sizeof(why));
	is(text, want, "collect: max_bytes exactly the text's length");
	free(text);

	text = vet_collect(t.data, t.len, exts, sizeof(want) - 2, &n, &over,
	    why, sizeof(why));
	snprintf(wantwhy, sizeof(wantwhy), "sources over max_bytes: %zu bytes",
	    sizeof(want) - 1);
	ok(text == NULL && over == 1, "collect: one byte less is over");
	is(why, wantwhy, "collect: over's reason counts headers too");

	text = vet_collect(t.data, t.len, NULL, 10, &n, &over, why,
	    sizeof(why));
	ok(text != NULL && *text == '\0' && n == 0 && over == 0,
	    "collect: no extensions, no files, empty text");
	free(text);
	srctree_free(&t);

	static const unsigned char broken[] = "hk-source 1\nf 0444 9 a.py\0x";
	over = 9;
	text = vet_collect(broken, sizeof(broken) - 1, exts, 4096, &n, &over,
	    why, sizeof(why));
	ok(text == NULL && over == 0 && n == 0, "collect: a broken archive");
	is(why, "broken archive", "collect: its reason");
	static const unsigned char badname[] =
	    "hk-source 1\nf 0444 2 b\xd1\xff.py\0x\n";
	text = vet_collect(badname, sizeof(badname) - 1, exts, 4096, &n,
	    &over, why, sizeof(why));
	is(text, "=== b??.py ===\nx\n\n", "collect: a name not UTF-8 is "
	    "sent with '?' for its bad bytes");
	req = text != NULL ? vet_request("m", "p", "r", text) : NULL;
	ok(req != NULL, "collect: and the request can hold it");
	free(req);
	free(text);
	text = vet_collect((const unsigned char *)"junk", 4, exts, 4096, &n,
	    &over, why, sizeof(why));
	ok(text == NULL && over == 0 && strcmp(why, "broken archive") == 0,
	    "collect: not an archive at all");
}

static void
test_request(void)
{
	json_t *j, *m;
	char *s;
	double t;

	s = vet_request("gpt-x", "Check {runtime} code; {runtime}!{runt",
	    "python3.12", "=== a.py ===\n\"x\"\n");
	j = s != NULL ? json_loads(s, JSON_REJECT_DUPLICATES, NULL) : NULL;
	ok(j != NULL && strchr(s, '\n') == NULL, "request: compact JSON");
	m = json_object_get(j, "messages");
	is(json_string_value(json_object_get(j, "model")), "gpt-x",
	    "request: model");
	t = json_number_value(json_object_get(j, "temperature"));
	ok(json_is_number(json_object_get(j, "temperature")) && t == 0,
	    "request: temperature 0");
	ok(json_array_size(m) == 2 && json_object_size(j) == 3,
	    "request: two messages, three keys");
	is(json_string_value(json_object_get(json_array_get(m, 0), "role")),
	    "system", "request: the system message first");
	is(json_string_value(json_object_get(json_array_get(m, 0),
	    "content")), "Check python3.12 code; python3.12!{runt",
	    "request: each {runtime} replaced");
	is(json_string_value(json_object_get(json_array_get(m, 1), "role")),
	    "user", "request: then the user's");
	is(json_string_value(json_object_get(json_array_get(m, 1),
	    "content")), "=== a.py ===\n\"x\"\n", "request: the files");
	json_decref(j);
	free(s);
}

/* A chat-completions reply whose content is the JSON string C. */
#define REPLY(c)	"{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":" \
			"{\"role\":\"assistant\",\"content\":" c "}}]}"
#define NOT_VERDICT	"the verdict is not {\"safe\": true|false}"

static const struct {
	const char	*body;
	enum vet_result	 res;
	const char	*why;
} verdicts[] = {
	{ REPLY("\"{\\\"safe\\\": true}\""), VET_SAFE, "" },
	{ REPLY("\" \\n{\\\"safe\\\":true}\\n \""), VET_SAFE, "" },
	{ REPLY("\"{\\\"safe\\\": true, \\\"reason\\\": 3, \\\"x\\\": []}\""),
	    VET_SAFE, "" },
	{ REPLY("\"{\\\"safe\\\": false, \\\"reason\\\": \\\"rm -rf /\\\"}\""),
	    VET_UNSAFE, "rm -rf /" },
	{ REPLY("\"{\\\"safe\\\": false}\""), VET_UNSAFE, "no reason given" },
	{ REPLY("\"{\\\"safe\\\": false, \\\"reason\\\": \\\"\\\"}\""),
	    VET_UNSAFE, "no reason given" },
	{ REPLY("\"{\\\"safe\\\": false, \\\"reason\\\": \\\" \\\\n\\\"}\""),
	    VET_UNSAFE, "no reason given" },
	{ REPLY("\"```\\n{\\\"safe\\\": true}\\n```\""), VET_SAFE, "" },
	{ REPLY("\"```json\\n{\\\"safe\\\": false, \\\"reason\\\": "
	    "\\\"exfil\\\"}\\n```\\n\""), VET_UNSAFE, "exfil" },
	{ REPLY("\"```json{\\\"safe\\\":true}```\""), VET_SAFE, "" },
	{ REPLY("\"\\n```JSON\\r\\n{\\\"safe\\\":true}\\r\\n```\""), VET_SAFE,
	    "" },
	{ REPLY("\"```json\\n{\\\"safe\\\": true}\""), VET_SKIPPED,
	    NOT_VERDICT },
	{ REPLY("\"```\\n```\\n{\\\"safe\\\": true}\\n```\\n```\""),
	    VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"Sure! {\\\"safe\\\": true}\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": true} Hope this helps\""), VET_SKIPPED,
	    NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": true}{\\\"safe\\\": false}\""), VET_SKIPPED,
	    NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": true, \\\"safe\\\": false}\""), VET_SKIPPED,
	    NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": \\\"true\\\"}\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": 1}\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": null}\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"{\\\"Safe\\\": true}\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"{\\\"safe\\\": false, \\\"reason\\\": 7}\""), VET_SKIPPED,
	    NOT_VERDICT },
	{ REPLY("\"[{\\\"safe\\\": true}]\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"true\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("\"yes, it is safe\""), VET_SKIPPED, NOT_VERDICT },
	{ REPLY("null"), VET_SKIPPED, "the reply's content is not a string" },
	{ REPLY("42"), VET_SKIPPED, "the reply's content is not a string" },
	{ REPLY("{\"safe\": true}"), VET_SKIPPED,
	    "the reply's content is not a string" },
	{ "{\"choices\":[{\"message\":{}}]}", VET_SKIPPED,
	    "the reply's content is not a string" },
	{ "{\"choices\":[7]}", VET_SKIPPED,
	    "the reply's content is not a string" },
	{ "{\"choices\":[]}", VET_SKIPPED, "no choices in the reply" },
	{ "{\"choices\":{\"0\":{}}}", VET_SKIPPED, "no choices in the reply" },
	{ "{\"error\":{\"message\":\"quota\"}}", VET_SKIPPED,
	    "no choices in the reply" },
	{ "[{\"choices\":[]}]", VET_SKIPPED, "no choices in the reply" },
	{ "{\"choices\":[", VET_SKIPPED, "the reply is not JSON" },
	{ "<html>502</html>", VET_SKIPPED, "the reply is not JSON" },
	{ "", VET_SKIPPED, "the reply is not JSON" },
	{ REPLY("\"{\\\"safe\\\": true}\"") "x", VET_SKIPPED,
	    "the reply is not JSON" },
};
#define NVERDICTS	(sizeof(verdicts) / sizeof(verdicts[0]))

static void
test_verdicts(void)
{
	char why[VET_CAUSE_LEN];
	enum vet_result res;
	size_t i;

	for (i = 0; i < NVERDICTS; i++) {
		memset(why, 'Z', sizeof(why));
		res = vet_verdict(verdicts[i].body, strlen(verdicts[i].body),
		    why, sizeof(why));
		ok(res == verdicts[i].res && memchr(why, '\0', sizeof(why)) &&
		    strcmp(why, verdicts[i].why) == 0,
		    "verdict %zu: %d '%s'", i, res, verdicts[i].why);
		if (res != verdicts[i].res || strcmp(why, verdicts[i].why))
			diag("got %d '%.*s'", res, (int)sizeof(why) - 1, why);
	}
}

/* Reasons cleaned: control characters, and the cut between characters. */
static void
test_reasons(void)
{
	char why[VET_CAUSE_LEN], body[8192], reason[4096], *o, *vs;
	size_t i, len;
	json_t *j, *v;

	snprintf(body, sizeof(body), "%s", REPLY("\"{\\\"safe\\\": false, "
	    "\\\"reason\\\": \\\"\\\\tbad\\\\nthing\\\\u0007\\\\u007f"
	    "\\\\u0085\\\\u009f\\u00a0ok \\\\r\\\"}\""));
	ok(vet_verdict(body, strlen(body), why, sizeof(why)) == VET_UNSAFE,
	    "control characters: unsafe");
	is(why, "bad thing    \xc2\xa0ok", "control characters: spaces "
	    "(C0, DEL, C1), ends trimmed, U+00A0 kept");

	/* 2000 bytes: 'x' then 3-byte characters across byte 511. */
	for (o = reason, i = 0; i < 2; i++)
		*o++ = 'x';
	while (o - reason < 2000) {
		memcpy(o, "\xe2\x82\xac", 3);	/* U+20AC */
		o += 3;
	}
	*o = '\0';
	v = json_pack("{s:b, s:s}", "safe", 0, "reason", reason);
	vs = json_dumps(v, JSON_COMPACT);
	j = json_pack("{s:[{s:{s:s}}]}", "choices", "message", "content", vs);
	o = json_dumps(j, JSON_COMPACT);
	free(vs);
	json_decref(v);
	json_decref(j);
	if (!ok(o != NULL, "a 2000-byte reason: its reply"))
		return;
	ok(vet_verdict(o, strlen(o), why, sizeof(why)) == VET_UNSAFE,
	    "a 2000-byte reason: unsafe");
	len = strlen(why);
	/* 2 + 3k <= 511: k = 169, 509 bytes. */
	ok(len == 509 && len <= VET_REASON_MAX && memcmp(why, reason, len) ==
	    0, "cut to %zu bytes between characters", len);
	ok(vet_verdict(o, strlen(o), why, 12) == VET_UNSAFE &&
	    strcmp(why, "xx\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac") == 0,
	    "cut to a small buffer too, between characters");
	free(o);
}

/* A listening socket on 127.0.0.1, port chosen by the kernel. */
static int
listen_local(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

/*
 * The child: one request read to the end of its head and body, then
 * answer sent (NULL: nothing sent, wait for the client to give up).
 * Exits 0 if the request held want ("!TEXT": did not hold TEXT), else 1.
 */
static void
serve(int lfd, const char *want, const char *answer)
{
	char req[65536];
	size_t n = 0;
	ssize_t r;
	int c, held;

	signal(SIGPIPE, SIG_IGN);
	if ((c = accept(lfd, NULL, NULL)) == -1)
		_exit(2);
	while (n < sizeof(req) - 1 && (r = read(c, req + n,
	    sizeof(req) - 1 - n)) > 0) {
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL && strstr(req, "[]}") !=
		    NULL)
			break;
	}
	req[n] = '\0';
	if (want[0] == '!')
		held = strstr(req, want + 1) == NULL;
	else
		held = strstr(req, want) != NULL;
	if (answer != NULL)
		(void)write(c, answer, strlen(answer));
	else
		while (read(c, req, sizeof(req)) > 0)
			;
	close(c);
	_exit(held ? 0 : 1);
}

#define ANSWER(status, body) "HTTP/1.1 " status "\r\nContent-Type: " \
	"application/json\r\nConnection: close\r\nContent-Length: %zu" \
	"\r\n\r\n" body

static void
ask_one(const char *name, int timeout, const char *key, const char *want,
    const char *answer, enum vet_result res, const char *why_want)
{
	char url[128], why[VET_CAUSE_LEN];
	struct vet_config c;
	int lfd, port, st = -1;
	enum vet_result got;
	int64_t ms = -1;
	pid_t pid;

	if ((lfd = listen_local(&port)) == -1 || (pid = fork()) == -1) {
		ok(0, "%s: a stand-in", name);
		return;
	}
	if (pid == 0)
		serve(lfd, want, answer);
	close(lfd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/chat/completions",
	    port);
	memset(&c, 0, sizeof(c));
	c.endpoint = url;
	c.api_key = key;
	c.model = "m";
	c.timeout_seconds = timeout;
	got = vet_ask(&c, "{\"messages\":[]}", why, sizeof(why), &ms);
	(void)waitpid(pid, &st, 0);
	ok(got == res && strcmp(why, why_want) == 0 && ms >= 0,
	    "ask: %s: %d '%s' in %lld ms", name, got, why, (long long)ms);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ask: %s: the request as "
	    "expected", name);
}

static void
test_ask(void)
{
	static const char safe[] = REPLY("\"{\\\"safe\\\": true}\"");
	static const char unsafe[] = REPLY("\"{\\\"safe\\\": false, "
	    "\\\"reason\\\": \\\"bad\\\"}\"");
	char a[512], b[512], why[VET_CAUSE_LEN], url[128], *big;
	struct vet_config c;
	int lfd, port;
	size_t n, head;

	/* A port just closed: nothing listens there. */
	if ((lfd = listen_local(&port)) == -1)
		port = 1;
	close(lfd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	memset(&c, 0, sizeof(c));
	c.endpoint = url;
	c.api_key = "sk-secret";
	c.timeout_seconds = 5;
	ok(vet_ask(&c, "{}", why, sizeof(why), NULL) == VET_SKIPPED &&
	    strncmp(why, "unable to reach the endpoint: ", 30) == 0 &&
	    strstr(why, "sk-secret") == NULL, "ask: refused: %s", why);
	c.endpoint = "file:///etc/passwd";
	ok(vet_ask(&c, "{}", why, sizeof(why), NULL) == VET_SKIPPED &&
	    strncmp(why, "unable to reach the endpoint: ", 30) == 0,
	    "ask: only http and https: %s", why);
	c.api_key = "sk\r\nX-Evil: 1";
	ok(vet_ask(&c, "{}", why, sizeof(why), NULL) == VET_SKIPPED &&
	    strcmp(why, "the API key holds a control character") == 0,
	    "ask: a key of two lines is refused");

	snprintf(a, sizeof(a), ANSWER("200 OK", "%s"), strlen(safe), safe);
	ask_one("safe", 5, "sk-1", "\r\nAuthorization: Bearer sk-1\r\n", a,
	    VET_SAFE, "");
	ask_one("no key, no header", 5, "", "!Authorization", a, VET_SAFE, "");
	snprintf(b, sizeof(b), ANSWER("200 OK", "%s"), strlen(unsafe), unsafe);
	ask_one("unsafe", 5, "k", "POST /v1/chat/completions ", b, VET_UNSAFE,
	    "bad");
	snprintf(b, sizeof(b), ANSWER("500 Oops", "%s"), strlen(safe), safe);
	ask_one("500", 5, "k", "\r\n\r\n{\"messages\":[]}", b, VET_SKIPPED,
	    "HTTP status 500");
	snprintf(b, sizeof(b), "HTTP/1.1 302 Found\r\nLocation: http://"
	    "127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n");
	ask_one("no redirects", 5, "k", "POST", b, VET_SKIPPED,
	    "HTTP status 302");
	ask_one("silence", 1, "k", "POST", NULL, VET_SKIPPED,
	    "no answer within 1 s");

	n = VET_REPLY_MAX + 100;
	if ((big = malloc(n + 256)) == NULL)
		return;
	snprintf(big, 256, ANSWER("200 OK", ""), n);
	head = strlen(big);
	memset(big + head, ' ', n);
	big[head + n] = '\0';
	ask_one("over 1 MiB", 5, "k", "POST", big, VET_SKIPPED,
	    "the reply is over 1 MiB");
	free(big);
}

int
main(void)
{
	char top[] = "/tmp/hk-vet.XXXXXX", cmd[128];

	if (mkdtemp(top) == NULL)
		return 1;
	test_collect(top);
	test_request();
	test_verdicts();
	test_reasons();
	test_ask();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	if (system(cmd) != 0)
		return 1;
	return done();
}
