/*
 * vet.h - the pre-deploy code vetting gate (hakopod.toml(5) [vet],
 * hk(1) "vet"): a service's source, the files of allowed extensions, sent
 * in one request to an OpenAI-compatible chat-completions endpoint with
 * the operator's prompt; the model's reply is a verdict.
 *
 * Everything here is a pure function of its input except vet_ask(),
 * which makes the one HTTP request (libcurl, a hard total timeout, TLS
 * verified).  The API key is only ever put in the Authorization header.
 */
#ifndef HK_VET_H
#define HK_VET_H

#include <stddef.h>
#include <stdint.h>

#define VET_REASON_MAX	511		/* bytes of a reason kept */
#define VET_CAUSE_LEN	512		/* a soft failure's cause */
#define VET_REPLY_MAX	(1024 * 1024)	/* bytes of a reply read */
#define VET_EXT_MAX	32		/* extensions in the list */

/* What vet_ask() needs: [vet] of hakopod.toml(5), and the key read. */
struct vet_config {
	const char	*endpoint;	/* http:// or https:// URL */
	const char	*api_key;	/* may be "": no Authorization header */
	const char	*model;
	const char	*ca_file;	/* NULL: the system's CAs */
	int		 timeout_seconds;	/* the whole request, 1..300 */
	size_t		 max_bytes;	/* of file text sent */
	char *const	*extensions;	/* ".py" ...; NULL-terminated */
};

/*
 * The files of an archive (srctree.h) worth sending, concatenated as
 *
 *	"=== PATH ===\n" CONTENTS "\n"
 *
 * in the archive's order: files whose name ends with one of extensions
 * (case-sensitive), never under a directory node_modules/ or
 * __pycache__/ at any depth, never *.pyc or *.so, never a file holding a
 * NUL byte or bytes that are not UTF-8 (a binary).  *nfiles counts them.
 * Returns a malloc'd NUL-terminated text, or NULL with why: a broken
 * archive, no memory, or more than max_bytes of text ("sources over
 * max_bytes: N bytes").  *over is set in that last case only.
 */
char	*vet_collect(const unsigned char *, size_t, char *const *, size_t,
	    size_t *, int *, char *, size_t);

/*
 * vet_request(model, prompt, runtime, files): the request body,
 * {"model", "messages": [system: the prompt with each "{runtime}"
 * replaced by runtime, user: the files], "temperature": 0}.  malloc'd
 * JSON text, or NULL on no memory or text that is not UTF-8.
 */
char	*vet_request(const char *, const char *, const char *,
	    const char *);

enum vet_result {
	VET_SAFE,
	VET_UNSAFE,
	VET_SKIPPED,	/* soft failure: the cause says why */
};

/*
 * Reads a chat-completions response body: choices[0].message.content
 * must be exactly the verdict JSON {"safe": true} or {"safe": false,
 * "reason": "..."} (whitespace around it, or one ```json fence, is
 * allowed).  VET_SAFE, VET_UNSAFE with the reason (control characters
 * replaced by spaces, at most VET_REASON_MAX bytes, "no reason given" if
 * empty), or VET_SKIPPED with the cause ("the reply is not JSON", "no
 * choices in the reply", "the verdict is not {\"safe\": ...}").
 */
enum vet_result	 vet_verdict(const char *, size_t, char *, size_t);

/*
 * POSTs body to the endpoint and reads the verdict: VET_SAFE,
 * VET_UNSAFE (reason in why), or VET_SKIPPED with the cause in why: a
 * timeout ("no answer within N s"), a connection error, a TLS error, a
 * non-2xx status ("HTTP status 500"), a reply over VET_REPLY_MAX, or
 * what vet_verdict() found.  *ms is the time taken.
 */
enum vet_result	 vet_ask(const struct vet_config *, const char *, char *,
		    size_t, int64_t *);

#endif
