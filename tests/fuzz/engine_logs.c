/*
 * engine_logs.c - libFuzzer target for engine_mux_feed()
 * (cmd/hk-scale/engine_stream.c): the multiplexed stream of a
 * container's logs (8-byte headers: stream, 0, 0, 0, a big-endian
 * length) turned into lines.
 *
 * The first byte chooses how the rest is cut: pieces of 1 to 16 bytes in
 * a pattern from its bits, as reads off a socket would.  Fed so, the
 * stream must give exactly the lines, and the same failure or none, that
 * it gives when fed at once.  Every line comes from stream 1 or 2, is at
 * most ENGINE_LINE_MAX bytes, ends with a NUL at its length and holds no
 * newline; a failure has a terminated reason, except when the callback
 * stopped it.  Each line is also read as a timed line (engine_log_time():
 * hk logs of a service on a node), whose time must end within it, at a
 * space.  Every tenth line stops it, to try that path too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct seen {
	uint64_t	hash;		/* of every line, in order */
	size_t		n;
	int		stopped;
};

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	mix(struct seen *, const void *, size_t);
static int	on_line(int, const char *, size_t, void *);
static int	feed(const uint8_t *, size_t, unsigned, struct seen *,
		    char *, size_t);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "engine_logs fuzz: invariant broken: %s\n",
		    what);
		abort();
	}
}

/* FNV-1a. */
static void
mix(struct seen *s, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n-- > 0)
		s->hash = (s->hash ^ *b++) * 1099511628211ULL;
}

static int
on_line(int stream, const char *line, size_t len, void *arg)
{
	struct seen *s = arg;
	int64_t ms;
	size_t t;

	check(stream == 1 || stream == 2, "stdout or stderr");
	check(len <= ENGINE_LINE_MAX, "a line within its bound");
	check(line[len] == '\0', "terminated at its length");
	check(memchr(line, '\n', len) == NULL, "no newline in a line");
	t = engine_log_time(line, len, &ms);
	check(t <= len && (t == 0 || (line[t - 1] == ' ' && ms >= 0)),
	    "a line's time, within it, before a space");
	mix(s, &stream, sizeof(stream));
	mix(s, &len, sizeof(len));
	mix(s, line, len);
	if (++s->n % 10 == 0) {
		s->stopped = 1;
		return -1;
	}
	return 0;
}

/* Feeds data in pieces chosen by pattern (0: at once); as mux_feed. */
static int
feed(const uint8_t *data, size_t len, unsigned pattern, struct seen *s,
    char *err, size_t errlen)
{
	struct engine_mux m;
	size_t off = 0, n, k = 0;

	memset(&m, 0, sizeof(m));
	memset(s, 0, sizeof(*s));
	s->hash = 14695981039346656037ULL;
	while (off < len) {
		n = pattern == 0 ? len - off :
		    1 + ((pattern >> (k++ % 5)) & 15);
		if (n > len - off)
			n = len - off;
		if (engine_mux_feed(&m, (const char *)data + off, n, on_line, s,
		    err, errlen) == -1) {
			check(memchr(err, '\0', errlen) != NULL, "terminated");
			check(s->stopped == (err[0] == '\0'),
			    "a reason unless the callback stopped it");
			return -1;
		}
		check(m.hlen < sizeof(m.hdr), "a header in progress");
		off += n;
	}
	return engine_mux_end(&m, on_line, s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char ew[ENGINE_ERR_LEN], ec[ENGINE_ERR_LEN];
	struct seen whole, cut;
	int rw, rc;

	if (len < 1)
		return 0;
	ew[0] = ec[0] = '\0';
	rw = feed(data + 1, len - 1, 0, &whole, ew, sizeof(ew));
	rc = feed(data + 1, len - 1, data[0] | 1u, &cut, ec, sizeof(ec));
	check(rw == rc && strcmp(ew, ec) == 0,
	    "the same failure, or none, however it is cut");
	check(whole.n == cut.n && whole.hash == cut.hash,
	    "the same lines however the bytes are cut");
	return 0;
}
