/*
 * record.c - a run's record, written to the store or owed to it while it
 * is away (lib/owed.h): "hk runs" shows how every run ended, late rather
 * than never.  At most JOBS_OWED_MAX records are owed at once.
 */
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "log.h"

static int	 record_write(struct store *, const void *);
static void	*record_copy(const void *);
static void	 record_free(void *);

static const struct owed_ops record_ops = {
	record_write, record_copy, record_free,
};

int
record_init(struct jobs *jx)
{
	jx->owed = owed_new(jx->loop, jx->store, &record_ops, JOBS_OWED_MAX,
	    "run records");
	return jx->owed == NULL ? -1 : 0;
}

/* 0 written, -1 owed (or, past the bound, lost and logged). */
int
record_put(struct jobs *jx, const struct store_run *row)
{
	return owed_put(jx->owed, row->id, row);
}

static int
record_write(struct store *s, const void *row)
{
	return store_run_put(s, row);
}

static void *
record_copy(const void *arg)
{
	const struct store_run *src = arg;
	struct store_run *dst;

	if ((dst = malloc(sizeof(*dst))) == NULL)
		return NULL;
	*dst = *src;
	dst->body = NULL;
	if (src->body != NULL && src->body_len > 0) {
		if ((dst->body = malloc(src->body_len)) == NULL) {
			free(dst);
			return NULL;
		}
		memcpy(dst->body, src->body, src->body_len);
	}
	return dst;
}

static void
record_free(void *arg)
{
	store_run_clear(arg);
	free(arg);
}
