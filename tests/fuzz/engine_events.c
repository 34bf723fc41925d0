/*
 * engine_events.c - libFuzzer target for the events stream of hk-scale's
 * engine client (cmd/hk-scale/engine*.c): engine_objects() finding whole
 * JSON objects in bytes cut anyhow, and engine_event() reading each.
 *
 * The first byte chooses how the rest is cut: pieces of 1 to 16 bytes in
 * a pattern from its bits, as reads off a socket would.  Fed so, through
 * a bounded buffer as the engine client keeps one, the stream must give
 * exactly the events (and the same failure or none) that it gives when fed
 * at once.  Every event has a kind of ours, an ID of 12 to 64 hex digits,
 * terminated strings and an exit code of -1 or more; nothing is read out
 * of bounds, leaked or kept past a call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine.h"

#define BUF_MAX	(2 * ENGINE_OBJ_MAX)	/* as an events call's buffer */

struct seen {
	uint64_t	hash;		/* of every object and event, in order */
	size_t		n;
};

int		LLVMFuzzerTestOneInput(const uint8_t *, size_t);
static void	check(int, const char *);
static void	mix(struct seen *, const void *, size_t);
static int	on_obj(json_t *, void *);
static int	feed(const uint8_t *, size_t, unsigned, struct seen *);

static char	buf[BUF_MAX];

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "engine_events fuzz: invariant broken: %s\n",
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
on_obj(json_t *o, void *arg)
{
	struct seen *s = arg;
	struct engine_event ev;
	size_t n;
	int r;

	check(json_is_object(o), "an object");
	r = engine_event(o, &ev);
	check(r == 0 || r == 1, "0 or 1");
	s->n++;
	mix(s, &r, sizeof(r));
	if (r == 0)
		return 0;
	check(ev.kind == ENGINE_EV_START || ev.kind == ENGINE_EV_DIE ||
	    ev.kind == ENGINE_EV_HEALTH || ev.kind == ENGINE_EV_CREATE,
	    "a container event");
	n = strspn(ev.id, "0123456789abcdef");
	check(ev.id[n] == '\0' && n >= 12 && n <= 64, "an ID");
	check(ev.name != NULL && ev.health != NULL, "strings");
	check(ev.exit_code >= -1, "an exit code or -1");
	check(ev.kind == ENGINE_EV_DIE || ev.exit_code == -1,
	    "a code only for a death");
	check(ev.attrs == NULL || json_is_object(ev.attrs), "attributes");
	mix(s, &ev.kind, sizeof(ev.kind));
	mix(s, ev.id, n);
	mix(s, ev.name, strlen(ev.name) + 1);
	mix(s, ev.health, strlen(ev.health) + 1);
	mix(s, &ev.exit_code, sizeof(ev.exit_code));
	mix(s, &ev.time_ns, sizeof(ev.time_ns));
	return 0;
}

/* Feeds data in pieces chosen by pattern (0: at once); -1 on a failure. */
static int
feed(const uint8_t *data, size_t len, unsigned pattern, struct seen *s)
{
	struct engine_split sp;
	char err[ENGINE_ERR_LEN];
	size_t off = 0, have = 0, n, k = 0;
	ssize_t used;

	memset(&sp, 0, sizeof(sp));
	memset(s, 0, sizeof(*s));
	s->hash = 14695981039346656037ULL;
	while (off < len) {
		n = pattern == 0 ? len - off :
		    1 + ((pattern >> (k++ % 5)) & 15);
		if (n > len - off)
			n = len - off;
		if (n > BUF_MAX - have)
			return -1;	/* the engine client: too large */
		memcpy(buf + have, data + off, n);
		have += n;
		off += n;
		err[0] = '\0';
		used = engine_objects(&sp, buf, have, on_obj, s, err,
		    sizeof(err));
		if (used == -1) {
			check(err[0] != '\0' && memchr(err, '\0',
			    sizeof(err)) != NULL, "a reason");
			return -1;
		}
		check((size_t)used <= have, "used what it was given");
		memmove(buf, buf + used, have - (size_t)used);
		have -= (size_t)used;
		check(sp.pos <= have, "scanned what is kept");
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct seen whole, cut;
	int rw, rc;

	if (len < 1)
		return 0;
	rw = feed(data + 1, len - 1, 0, &whole);
	rc = feed(data + 1, len - 1, data[0] | 1u, &cut);
	check(rw == rc, "the same failure, or none, however it is cut");
	check(whole.n == cut.n && whole.hash == cut.hash,
	    "the same events however the bytes are cut");
	return 0;
}
