/*
 * vet.c - the pre-deploy code vetting gate (vet.h): a service's files
 * gathered from its archive, the chat-completions request, the one HTTP
 * exchange, and the reading of the model's verdict.
 *
 * The gate fails soft: only a well-formed {"safe": false} refuses a
 * deploy, and every other trouble is VET_SKIPPED with a short cause for
 * the operator.  So the reader of the reply is strict (one exact shape,
 * duplicate keys refused): anything else is a cause, never a guess.
 *
 * The API key is put in one header and nowhere else; the header's text
 * is wiped once the request is over.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "srctree.h"
#include "vet.h"

/* "=== " PATH " ===\n", the text before each file's contents. */
#define HEAD_OPEN	"=== "
#define HEAD_CLOSE	" ===\n"
#define HEAD_LEN	(sizeof(HEAD_OPEN) - 1 + sizeof(HEAD_CLOSE) - 1)
#define BEARER		"Authorization: Bearer "

/* The reply's bytes as libcurl hands them over, at most VET_REPLY_MAX. */
struct reply {
	char	*buf;
	size_t	 len, cap;
	int	 over;		/* past VET_REPLY_MAX: given up */
	int	 nomem;
};

static size_t	 utf8_char(const unsigned char *, size_t, uint32_t *);
static int	 utf8_valid(const unsigned char *, size_t);
static int	 path_excluded(const char *);
static int	 has_ext(const char *, char *const *);
static int	 worth_sending(const struct srctree_rec *, char *const *);
static char	*copy_path(char *, const char *, size_t);
static int	 collect(const unsigned char *, size_t, char *const *, char *,
		    size_t *, size_t *);
static char	*replace_all(const char *, const char *, const char *);
static int	 json_space(char);
static void	 trim(const char **, size_t *);
static void	 unfence(const char **, size_t *);
static const char *reply_content(json_t *, const char **, size_t *);
static enum vet_result read_verdict(const char *, size_t, char *, size_t);
static void	 clean_reason(const char *, size_t, char *, size_t);
static size_t	 on_write(char *, size_t, size_t, void *);
static struct curl_slist *make_headers(const char *, char **);
static void	 wipe_headers(struct curl_slist *, char *);
static int	 setup(CURL *, const struct vet_config *, const char *,
		    struct curl_slist *, struct reply *, char *);
static long	 timeout_of(const struct vet_config *);
static enum vet_result exchange(CURL *, const struct vet_config *,
		    struct reply *, const char *, char *, size_t);
static int64_t	 now_ms(void);
static int	 key_ok(const char *);

/*
 * One UTF-8 character at p: its length (1 to 4) with the code point in
 * *cp, or 0 if the bytes are not one: overlong forms, surrogates
 * (U+D800..U+DFFF) and anything past U+10FFFF are refused, as RFC 3629
 * says.
 */
static size_t
utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
	uint32_t c, min;
	size_t len, i;

	if (n == 0)
		return 0;
	c = p[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, min = 0x80, c &= 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, min = 0x800, c &= 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, min = 0x10000, c &= 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Text worth a model's reading: UTF-8 throughout, no NUL (a binary). */
static int
utf8_valid(const unsigned char *p, size_t n)
{
	uint32_t c;
	size_t k;

	while (n > 0) {
		if ((k = utf8_char(p, n, &c)) == 0 || c == 0)
			return 0;
		p += k;
		n -= k;
	}
	return 1;
}

/* Installed or generated code, not the service's own: never sent. */
static int
path_excluded(const char *path)
{
	const char *s, *e;
	size_t len = strlen(path), n;

	for (s = path; *s != '\0'; s = *e == '/' ? e + 1 : e) {
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		if ((n == 12 && memcmp(s, "node_modules", 12) == 0) ||
		    (n == 11 && memcmp(s, "__pycache__", 11) == 0))
			return 1;
	}
	return (len >= 4 && strcmp(path + len - 4, ".pyc") == 0) ||
	    (len >= 3 && strcmp(path + len - 3, ".so") == 0);
}

/*
 * Whether path ends with one of exts.  An empty extension, which would
 * take every file, is ignored: hakopod.toml(5) validation refuses it.
 */
static int
has_ext(const char *path, char *const *exts)
{
	size_t len = strlen(path), n;

	for (; exts != NULL && *exts != NULL; exts++) {
		n = strlen(*exts);
		if (n > 0 && n <= len && strcmp(path + len - n, *exts) == 0)
			return 1;
	}
	return 0;
}

static int
worth_sending(const struct srctree_rec *r, char *const *exts)
{
	return !r->dir && has_ext(r->path, exts) && !path_excluded(r->path) &&
	    utf8_valid(r->data, r->size);
}

/*
 * A path into the text, each byte that is not part of a UTF-8 character
 * made a '?': the archive allows any bytes but NUL and '/' in names, and
 * the file is vetted all the same (JSON, hence the request, is UTF-8).
 * Returns the end of what was written, always len bytes.
 */
static char *
copy_path(char *o, const char *path, size_t len)
{
	const unsigned char *p = (const unsigned char *)path;
	uint32_t c;
	size_t k;

	while (len > 0) {
		if ((k = utf8_char(p, len, &c)) == 0) {
			*o++ = '?';
			k = 1;
		} else {
			memcpy(o, p, k);
			o += k;
		}
		p += k;
		len -= k;
	}
	return o;
}

/*
 * One pass over the archive: the length of the text (*total, without the
 * final NUL) and the files in it, and the text itself written to out
 * when out is not NULL (the second pass, into a buffer of *total + 1
 * bytes from the first).  -1 for a broken archive.  No sum can wrap: the
 * contents are bytes of the archive, the headers at most
 * SRCTREE_ENTRIES_MAX times SRCTREE_PATH_MAX + HEAD_LEN.
 */
static int
collect(const unsigned char *p, size_t len, char *const *exts, char *out,
    size_t *total, size_t *nfiles)
{
	struct srctree_iter it;
	struct srctree_rec r;
	size_t plen;
	char *o = out;
	int rc;

	*total = *nfiles = 0;
	if (srctree_iter_init(&it, p, len) == -1)
		return -1;
	while ((rc = srctree_next(&it, &r)) == 1) {
		if (!worth_sending(&r, exts))
			continue;
		plen = strlen(r.path);
		if (out != NULL) {
			memcpy(o, HEAD_OPEN, sizeof(HEAD_OPEN) - 1);
			o += sizeof(HEAD_OPEN) - 1;
			o = copy_path(o, r.path, plen);
			memcpy(o, HEAD_CLOSE, sizeof(HEAD_CLOSE) - 1);
			o += sizeof(HEAD_CLOSE) - 1;
			memcpy(o, r.data, r.size);
			o += r.size;
			*o++ = '\n';
		}
		*total += HEAD_LEN + plen + r.size + 1;
		(*nfiles)++;
	}
	return rc;
}

/*
 * max_bytes bounds the whole text sent, the "=== PATH ===\n" headers and
 * newlines included, not the contents alone: it is what the endpoint
 * is asked to read.
 */
char *
vet_collect(const unsigned char *archive, size_t len, char *const *exts,
    size_t max_bytes, size_t *nfiles, int *over, char *why, size_t whylen)
{
	size_t total;
	char *text;

	*over = 0;
	if (collect(archive, len, exts, NULL, &total, nfiles) == -1) {
		*nfiles = 0;
		snprintf(why, whylen, "broken archive");
		return NULL;
	}
	if (total > max_bytes) {
		*over = 1;
		snprintf(why, whylen, "sources over max_bytes: %zu bytes",
		    total);
		return NULL;
	}
	if ((text = malloc(total + 1)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	(void)collect(archive, len, exts, text, &total, nfiles);
	text[total] = '\0';
	return text;
}

/* s with every pat replaced by with, malloc'd; NULL on no memory. */
static char *
replace_all(const char *s, const char *pat, const char *with)
{
	size_t plen = strlen(pat), wlen = strlen(with), n = 0, len;
	const char *p, *q;
	char *out, *o;

	for (p = s; (p = strstr(p, pat)) != NULL; p += plen)
		n++;
	len = strlen(s);
	if (wlen > plen && n > (SIZE_MAX - len - 1) / (wlen - plen))
		return NULL;
	if ((out = malloc(len - n * plen + n * wlen + 1)) == NULL)
		return NULL;
	for (o = out, p = s; (q = strstr(p, pat)) != NULL; p = q + plen) {
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, with, wlen);
		o += wlen;
	}
	memcpy(o, p, strlen(p) + 1);
	return out;
}

/*
 * The parameters are in the order vet.h's comment names them: model,
 * prompt, runtime, then the files from vet_collect().  NULL also for
 * text that is not UTF-8 (jansson refuses it), which vet_collect()
 * never gives.
 */
char *
vet_request(const char *model, const char *prompt, const char *runtime,
    const char *files)
{
	char *system, *text;
	json_t *req;

	if ((system = replace_all(prompt, "{runtime}", runtime)) == NULL)
		return NULL;
	req = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}], s:i}",
	    "model", model, "messages",
	    "role", "system", "content", system,
	    "role", "user", "content", files,
	    "temperature", 0);
	free(system);
	if (req == NULL)
		return NULL;
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return text;
}

static int
json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* JSON's whitespace off both ends of s. */
static void
trim(const char **s, size_t *n)
{
	while (*n > 0 && json_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && json_space((*s)[*n - 1]))
		(*n)--;
}

/*
 * Models like to wrap JSON in one Markdown fence, ```json ... ``` or
 * ``` ... ``` (or ```JSON): it comes off, once, with the whitespace
 * inside.
 */
static void
unfence(const char **s, size_t *n)
{
	trim(s, n);
	if (*n < 6 || memcmp(*s, "```", 3) != 0 ||
	    memcmp(*s + *n - 3, "```", 3) != 0)
		return;
	*s += 3;
	*n -= 6;
	if (*n >= 4 && strncasecmp(*s, "json", 4) == 0) {
		*s += 4;
		*n -= 4;
	}
	trim(s, n);
}

/*
 * choices[0].message.content of a reply: NULL with the string in *s,
 * *n, or the cause.
 */
static const char *
reply_content(json_t *reply, const char **s, size_t *n)
{
	json_t *choices, *msg, *content;

	choices = json_object_get(reply, "choices");
	if (!json_is_array(choices) || json_array_size(choices) == 0)
		return "no choices in the reply";
	msg = json_object_get(json_array_get(choices, 0), "message");
	content = json_object_get(msg, "content");
	if (!json_is_string(content))
		return "the reply's content is not a string";
	*s = json_string_value(content);
	*n = json_string_length(content);
	return NULL;
}

/*
 * The verdict: exactly one JSON object, duplicate keys refused (which
 * "safe" would count?), with a boolean "safe"; with false, "reason" a
 * string if there.  Other keys are the model's and ignored.
 */
static enum vet_result
read_verdict(const char *s, size_t n, char *why, size_t whylen)
{
	enum vet_result res = VET_SKIPPED;
	json_t *v, *safe, *reason;

	v = json_loadb(s, n, JSON_REJECT_DUPLICATES, NULL);
	safe = json_object_get(v, "safe");
	reason = json_object_get(v, "reason");
	if (json_is_true(safe)) {
		res = VET_SAFE;
		snprintf(why, whylen, "%s", "");
	} else if (json_is_false(safe) &&
	    (reason == NULL || json_is_string(reason))) {
		res = VET_UNSAFE;
		clean_reason(json_string_value(reason),
		    json_string_length(reason), why, whylen);
	} else
		snprintf(why, whylen, "the verdict is not {\"safe\": "
		    "true|false}");
	json_decref(v);
	return res;
}

/*
 * A reason fit for one log line and a terminal: control characters (C0,
 * DEL, C1) become spaces, the ends are trimmed, and it is cut to
 * VET_REASON_MAX bytes (or what out holds) between two characters.
 */
static void
clean_reason(const char *s, size_t n, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s, *w;
	size_t cap, o = 0, k, i = 0, wn;
	uint32_t c;

	if (outlen == 0)
		return;
	cap = outlen - 1 < VET_REASON_MAX ? outlen - 1 : VET_REASON_MAX;
	while (i < n) {
		/* jansson gave UTF-8; a stray byte would still be a space. */
		if ((k = utf8_char(p + i, n - i, &c)) == 0)
			k = 1, c = 0;
		w = p + i;
		wn = k;
		if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
			w = (const unsigned char *)" ", wn = 1;
		i += k;
		if (o == 0 && *w == ' ')
			continue;	/* a leading space */
		if (o + wn > cap)
			break;
		memcpy(out + o, w, wn);
		o += wn;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	if (o == 0)
		snprintf(out, outlen, "no reason given");
	else
		out[o] = '\0';
}

/*
 * Causes (VET_SKIPPED), each exact:
 *	"the reply is over 1 MiB"		more than VET_REPLY_MAX bytes
 *	"the reply is not JSON"			the body does not parse
 *	"no choices in the reply"		no object, or choices not a
 *						non-empty array
 *	"the reply's content is not a string"	choices[0].message.content
 *						missing, null, or not a string
 *	"the verdict is not {\"safe\": true|false}"
 *						the content is not one JSON
 *						object with a boolean "safe"
 *						(and a string "reason" if any
 *						with false)
 */
enum vet_result
vet_verdict(const char *body, size_t len, char *why, size_t whylen)
{
	const char *cause, *s = NULL;
	enum vet_result res;
	json_t *reply;
	size_t n = 0;

	if (len > VET_REPLY_MAX) {
		snprintf(why, whylen, "the reply is over 1 MiB");
		return VET_SKIPPED;
	}
	if ((reply = json_loadb(body, len, 0, NULL)) == NULL) {
		snprintf(why, whylen, "the reply is not JSON");
		return VET_SKIPPED;
	}
	if ((cause = reply_content(reply, &s, &n)) != NULL) {
		snprintf(why, whylen, "%s", cause);
		json_decref(reply);
		return VET_SKIPPED;
	}
	unfence(&s, &n);
	res = read_verdict(s, n, why, whylen);
	json_decref(reply);
	return res;
}

/* libcurl: the reply's bytes, kept up to VET_REPLY_MAX, then given up. */
static size_t
on_write(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t cap;
	char *buf;

	n *= size;
	if (n > VET_REPLY_MAX - r->len) {
		r->over = 1;
		return 0;
	}
	if (r->len + n > r->cap) {
		cap = r->cap ? r->cap : 16384;
		while (cap < r->len + n)
			cap *= 2;
		if (cap > VET_REPLY_MAX)
			cap = VET_REPLY_MAX;
		if ((buf = realloc(r->buf, cap)) == NULL) {
			r->nomem = 1;
			return 0;
		}
		r->buf = buf;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	return n;
}

/*
 * The request's headers; with a key, *auth is the Authorization line,
 * which wipe_headers() clears.  "Expect:" keeps libcurl from waiting on
 * a 100 Continue that endpoints seldom send for a large body.
 */
static struct curl_slist *
make_headers(const char *key, char **auth)
{
	struct curl_slist *h, *t;
	size_t n;

	*auth = NULL;
	if ((h = curl_slist_append(NULL, "Content-Type: application/json")) ==
	    NULL)
		return NULL;
	if ((t = curl_slist_append(h, "Expect:")) == NULL)
		goto fail;
	h = t;
	if (key == NULL || *key == '\0')
		return h;
	n = sizeof(BEARER) + strlen(key);
	if ((*auth = malloc(n)) == NULL)
		goto fail;
	(void)snprintf(*auth, n, "%s%s", BEARER, key);
	if ((t = curl_slist_append(h, *auth)) == NULL)
		goto fail;
	return t;
fail:
	wipe_headers(h, *auth);
	*auth = NULL;
	return NULL;
}

/* libcurl's copies of the headers and ours: the key is in both. */
static void
wipe_headers(struct curl_slist *h, char *auth)
{
	struct curl_slist *t;

	for (t = h; t != NULL; t = t->next)
		explicit_bzero(t->data, strlen(t->data));
	curl_slist_free_all(h);
	if (auth != NULL)
		freezero(auth, strlen(auth));
}

/* The whole request, in seconds: 1..300 as hakopod.toml(5) allows. */
static long
timeout_of(const struct vet_config *cfg)
{
	if (cfg->timeout_seconds < 1)
		return 1;
	return cfg->timeout_seconds > 300 ? 300 : cfg->timeout_seconds;
}

/*
 * One POST, no redirects (the key would follow them), http and https
 * only, TLS verified (libcurl's default, said again), and a hard limit
 * on the connection and on the whole exchange.  Verbose stays off: it
 * would print the Authorization header.
 */
static int
setup(CURL *h, const struct vet_config *cfg, const char *body,
    struct curl_slist *hdrs, struct reply *r, char *errbuf)
{
	long ms = timeout_of(cfg) * 1000;
	int bad = 0;

	bad |= curl_easy_setopt(h, CURLOPT_URL, cfg->endpoint);
	bad |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	bad |= curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	/*
	 * http:// is for an endpoint on this host (hakopod.toml(5)): never
	 * through an http_proxy of the environment, which would see the key
	 * in clear.  https:// may go through one: it only tunnels.
	 */
	if (strncmp(cfg->endpoint, "http://", 7) == 0)
		bad |= curl_easy_setopt(h, CURLOPT_PROXY, "");
	bad |= curl_easy_setopt(h, CURLOPT_VERBOSE, 0L);
	bad |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	bad |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	bad |= curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	bad |= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
	bad |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	bad |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	bad |= curl_easy_setopt(h, CURLOPT_USERAGENT, "hk-vet");
	bad |= curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)strlen(body));
	bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	bad |= curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	if (cfg->ca_file != NULL)
		bad |= curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
	return bad ? -1 : 0;
}

/*
 * The exchange and what came of it.  Causes (VET_SKIPPED), besides
 * vet_verdict()'s:
 *	"no answer within N s"			the hard timeout
 *	"unable to reach the endpoint: E[: D]"	any other libcurl error
 *						(connection, TLS, protocol):
 *						curl_easy_strerror(), then
 *						libcurl's detail if any
 *	"HTTP status N"				a status outside 200..299
 *	"the reply is over 1 MiB"		more than VET_REPLY_MAX
 *	"unable to read the reply: out of memory"
 */
static enum vet_result
exchange(CURL *h, const struct vet_config *cfg, struct reply *r,
    const char *errbuf, char *why, size_t whylen)
{
	CURLcode rc;
	long status = 0;

	rc = curl_easy_perform(h);
	(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(why, whylen, "no answer within %ld s",
		    timeout_of(cfg));
	else if (rc != CURLE_OK && !r->over && !r->nomem)
		snprintf(why, whylen, "unable to reach the endpoint: %s%s%s",
		    curl_easy_strerror(rc), errbuf[0] ? ": " : "", errbuf);
	else if (status < 200 || status > 299)
		snprintf(why, whylen, "HTTP status %ld", status);
	else if (r->over)
		snprintf(why, whylen, "the reply is over 1 MiB");
	else if (r->nomem)
		snprintf(why, whylen, "unable to read the reply: "
		    "out of memory");
	else
		return vet_verdict(r->buf != NULL ? r->buf : "", r->len, why,
		    whylen);
	return VET_SKIPPED;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A key with a control character would break the header: refused. */
static int
key_ok(const char *key)
{
	for (; key != NULL && *key != '\0'; key++)
		if ((unsigned char)*key < 0x20 || *key == 0x7f)
			return 0;
	return 1;
}

/*
 * libcurl is started and stopped around each request (it counts the
 * calls, hk-scale's engine client's included), so this module keeps no
 * state.  Causes of its own: "the API key holds a control character",
 * "unable to start libcurl", "unable to set up the request".
 */
enum vet_result
vet_ask(const struct vet_config *cfg, const char *body, char *why,
    size_t whylen, int64_t *ms)
{
	char errbuf[CURL_ERROR_SIZE] = "", *auth = NULL;
	enum vet_result res = VET_SKIPPED;
	struct reply r = { 0 };
	struct curl_slist *hdrs = NULL;
	int64_t start = now_ms();
	CURL *h;

	if (!key_ok(cfg->api_key))
		snprintf(why, whylen, "the API key holds a control character");
	else if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		snprintf(why, whylen, "unable to start libcurl");
	else {
		if ((h = curl_easy_init()) == NULL ||
		    (hdrs = make_headers(cfg->api_key, &auth)) == NULL ||
		    setup(h, cfg, body, hdrs, &r, errbuf) == -1)
			snprintf(why, whylen, "unable to set up the request");
		else
			res = exchange(h, cfg, &r, errbuf, why, whylen);
		curl_easy_cleanup(h);
		wipe_headers(hdrs, auth);
		curl_global_cleanup();
	}
	free(r.buf);
	if (ms != NULL)
		*ms = now_ms() - start;
	return res;
}
