/*
 * engine_impl.h - what engine.c (the transport) shares with engine_ops.c
 * (the operations) and engine_stream.c (events and logs); not for callers.
 *
 * A call is one libcurl easy handle on the engine's multi handle.  Inside
 * libcurl's callbacks we only keep bytes (and note that the head came);
 * everything that may run a caller's code happens in engine_run(), after
 * curl_multi_socket_action() has returned, where a callback may start and
 * cancel calls freely.  A cancelled call is only marked dead there, and
 * freed once the turn is over.
 */
#ifndef HK_ENGINE_IMPL_H
#define HK_ENGINE_IMPL_H

#include <sys/queue.h>

#include <curl/curl.h>

#include "engine.h"
#include "loop.h"

struct engine_call;

/*
 * The three steps a kind of call may take, each in engine_run():
 * head	the head of a 2xx answer came (streams say "up");
 * feed	bytes of a 2xx answer are in buf: consume what can be (streams);
 *	returns -1 with call->err set to drop the connection;
 * end	the exchange is over: err is NULL or the reason it failed.
 */
typedef void	call_head_fn(struct engine_call *);
typedef int	call_feed_fn(struct engine_call *);
typedef void	call_end_fn(struct engine_call *, int, const char *);

struct engine_call {
	TAILQ_ENTRY(engine_call) entry;
	struct engine		*e;
	CURL			*easy;
	struct curl_slist	*hdrs;
	char			*post;		/* the request's body */
	char			*buf;		/* answer bytes not yet used */
	size_t			 len;
	size_t			 cap;
	size_t			 max;		/* bound of buf */
	int			 head;		/* the head has come */
	int			 headtold;	/* ... and head() ran */
	int			 paused;	/* buf was full */
	int			 ended;		/* the transfer is over */
	int			 dead;		/* no more callbacks; to free */
	CURLcode		 res;
	long			 status;
	int			 ok304;		/* 304 is a success */
	char			 err[ENGINE_ERR_LEN];	/* our own reason */
	char			 curlerr[CURL_ERROR_SIZE];
	call_head_fn		*headfn;
	call_feed_fn		*feedfn;
	call_end_fn		*endfn;
	engine_done_fn		*fn;
	void			*arg;
	void			*ctx;		/* the kind's own state */
	void			(*ctxfree)(void *);
};

TAILQ_HEAD(engine_calls, engine_call);
TAILQ_HEAD(engine_streams, engine_events);

struct engine {
	struct loop		*loop;
	CURLM			*multi;
	struct loop_timer	 timer;		/* libcurl's */
	char			 url[ENGINE_URL_MAX];	/* as given */
	char			 base[ENGINE_URL_MAX];	/* http://.../v1.41 */
	char			 sock[108];	/* a Unix socket, or "" */
	char			*cert;
	char			*key;
	char			*ca;
	char			*ca_pem;	/* api: PEM text, or NULL */
	char			*cert_pem;
	char			*key_pem;
	char			*auth;		/* "Authorization: Bearer ..." */
	long			 timeout_ms;
	int			 busy;		/* inside engine_run() */
	struct engine_calls	 calls;
	struct engine_streams	 streams;
};

/* engine.c */
struct engine_call *engine_call_new(struct engine *, const char *, const char *,
		    json_t *);
int		 engine_call_start(struct engine_call *);
void		 engine_call_free(struct engine_call *);
void		 engine_call_json_end(struct engine_call *, int, const char *);
void		 engine_reason(char *, size_t, const char *);

/* engine_ops.c */
char		*engine_events_path(const char *const *);
char		*engine_logs_path(const char *, int64_t, int);

/* engine_stream.c */
void		 engine_streams_close(struct engine *);

#endif
