/*
 * pq.c - libpq, loaded only when a store is PostgreSQL.
 *
 * libpq brings OpenSSL, GnuTLS, Kerberos, LDAP and SASL with it: about
 * 5 MiB of resident library pages in every process that links it, most of
 * hk-activate's memory on an installation whose store is SQLite, the
 * default.  So no program links libpq; these wrappers, with libpq's own
 * names and prototypes, call into it once pq_load() has opened it
 * (store_pg.c does so first, and says why when it cannot).  A wrapper
 * called before that loads it too, and stops the program if it cannot:
 * that is a bug of the caller, not a condition to carry on from.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "pq.h"

#define PQ_LIBRARY	"libpq.so.5"

/* return type, name, parameters, arguments */
#define PQ_FUNCS(X)							\
	X(ConnStatusType, PQstatus, (const PGconn *c), (c))		\
	X(ExecStatusType, PQresultStatus, (const PGresult *r), (r))	\
	X(char *, PQgetvalue, (const PGresult *r, int t, int f), (r, t, f)) \
	X(int, PQgetisnull, (const PGresult *r, int t, int f), (r, t, f)) \
	X(int, PQntuples, (const PGresult *r), (r))			\
	X(char *, PQresultErrorField, (const PGresult *r, int f), (r, f)) \
	X(char *, PQcmdTuples, (PGresult *r), (r))			\
	X(char *, PQcmdStatus, (PGresult *r), (r))			\
	X(int, PQserverVersion, (const PGconn *c), (c))			\
	X(int, PQbackendPID, (const PGconn *c), (c))			\
	X(int, PQsocket, (const PGconn *c), (c))			\
	X(char *, PQerrorMessage, (const PGconn *c), (c))		\
	X(PGTransactionStatusType, PQtransactionStatus, (const PGconn *c), \
	    (c))							\
	X(PGconn *, PQconnectdbParams, (const char *const *k,		\
	    const char *const *v, int e), (k, v, e))			\
	X(PGconn *, PQconnectdb, (const char *i), (i))			\
	X(PGconn *, PQconnectStartParams, (const char *const *k,	\
	    const char *const *v, int e), (k, v, e))			\
	X(PostgresPollingStatusType, PQconnectPoll, (PGconn *c), (c))	\
	X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *c,		\
	    PQnoticeProcessor p, void *a), (c, p, a))			\
	X(int, PQsetnonblocking, (PGconn *c, int a), (c, a))		\
	X(PGresult *, PQexec, (PGconn *c, const char *q), (c, q))	\
	X(PGresult *, PQprepare, (PGconn *c, const char *n, const char *q, \
	    int np, const Oid *t), (c, n, q, np, t))			\
	X(PGresult *, PQexecPrepared, (PGconn *c, const char *n, int np, \
	    const char *const *v, const int *l, const int *f, int rf),	\
	    (c, n, np, v, l, f, rf))					\
	X(PGresult *, PQexecParams, (PGconn *c, const char *q, int np,	\
	    const Oid *t, const char *const *v, const int *l, const int *f, \
	    int rf), (c, q, np, t, v, l, f, rf))			\
	X(int, PQsendQuery, (PGconn *c, const char *q), (c, q))		\
	X(int, PQsendPrepare, (PGconn *c, const char *n, const char *q,	\
	    int np, const Oid *t), (c, n, q, np, t))			\
	X(int, PQsendQueryPrepared, (PGconn *c, const char *n, int np,	\
	    const char *const *v, const int *l, const int *f, int rf),	\
	    (c, n, np, v, l, f, rf))					\
	X(int, PQsendQueryParams, (PGconn *c, const char *q, int np,	\
	    const Oid *t, const char *const *v, const int *l, const int *f, \
	    int rf), (c, q, np, t, v, l, f, rf))			\
	X(int, PQconsumeInput, (PGconn *c), (c))			\
	X(int, PQisBusy, (PGconn *c), (c))				\
	X(PGresult *, PQgetResult, (PGconn *c), (c))			\
	X(int, PQflush, (PGconn *c), (c))				\
	X(unsigned char *, PQescapeByteaConn, (PGconn *c,		\
	    const unsigned char *b, size_t n, size_t *o), (c, b, n, o))	\
	X(unsigned char *, PQunescapeBytea, (const unsigned char *t,	\
	    size_t *o), (t, o))

/* The same for the functions that return nothing. */
#define PQ_VOID_FUNCS(X)						\
	X(void, PQclear, (PGresult *r), (r))				\
	X(void, PQfinish, (PGconn *c), (c))				\
	X(void, PQreset, (PGconn *c), (c))				\
	X(void, PQfreemem, (void *p), (p))

#define PQ_POINTER(ret, name, params, args)	ret (*name) params;

/* The one library handle and its functions, set once by pq_load(). */
static struct {
	void	*handle;
	PQ_FUNCS(PQ_POINTER)
	PQ_VOID_FUNCS(PQ_POINTER)
} pq;

#define PQ_RESOLVE(ret, name, params, args)				\
	if ((*(void **)&pq.name = dlsym(h, #name)) == NULL)		\
		goto fail;

int
pq_load(char *err, size_t errlen)
{
	void *h = NULL;

	if (pq.handle != NULL)
		return 0;
	if ((h = dlopen(PQ_LIBRARY, RTLD_NOW | RTLD_LOCAL)) == NULL)
		goto fail;
	PQ_FUNCS(PQ_RESOLVE)
	PQ_VOID_FUNCS(PQ_RESOLVE)
	pq.handle = h;
	return 0;
fail:
	snprintf(err, errlen, "unable to load %s: %s", PQ_LIBRARY, dlerror());
	if (h != NULL)
		dlclose(h);
	return -1;
}

static void
pq_need(void)
{
	char err[256];

	if (pq.handle == NULL && pq_load(err, sizeof(err)) == -1) {
		fprintf(stderr, "libpq: %s\n", err);
		abort();
	}
}

#define PQ_WRAPPER(ret, name, params, args)				\
	ret name params { pq_need(); return pq.name args; }

#define PQ_VOID_WRAPPER(ret, name, params, args)			\
	ret name params { pq_need(); pq.name args; }

PQ_FUNCS(PQ_WRAPPER)
PQ_VOID_FUNCS(PQ_VOID_WRAPPER)
