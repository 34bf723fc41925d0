/*
 * request_same.h - for tests and fuzz harnesses: whether two request
 * records hold the same fields, the id too if with_id (the store assigns
 * ids, so a record before the store has none to compare).
 */
#ifndef HK_TESTS_REQUEST_SAME_H
#define HK_TESTS_REQUEST_SAME_H

#include <string.h>

#include "store.h"

static inline int
request_same(const struct store_request *a, const struct store_request *b,
    int with_id)
{
	return (!with_id || a->id == b->id) && a->at == b->at &&
	    strcmp(a->app, b->app) == 0 &&
	    strcmp(a->service, b->service) == 0 &&
	    strcmp(a->method, b->method) == 0 &&
	    strcmp(a->host, b->host) == 0 && strcmp(a->path, b->path) == 0 &&
	    a->status == b->status && a->duration_us == b->duration_us &&
	    a->wait_us == b->wait_us && a->wake_id == b->wake_id &&
	    a->bytes_in == b->bytes_in && a->bytes_out == b->bytes_out &&
	    strcmp(a->outcome, b->outcome) == 0 &&
	    strcmp(a->client, b->client) == 0;
}

#endif
