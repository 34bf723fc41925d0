/*
 * runjson.h - a run of hk-jobs (struct store_run) as JSON: what
 * jobs.sock sends (hk-jobs(8)) and "hk runs --json" prints, one shape.
 */
#ifndef HK_RUNJSON_H
#define HK_RUNJSON_H

#include <jansson.h>

#include "store.h"

/* A new object; "body" is the excerpt as a string, null if not UTF-8. */
json_t	*runjson(const struct store_run *);

#endif
