/*
 * check.c - "-n -v": each operator key's effective value and where it
 * came from, in the order of the key table.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "idle.h"

static void	key_value(const struct server_config *, const char *, char *,
		    size_t);

static void
key_value(const struct server_config *cfg, const char *name, char *buf,
    size_t len)
{
	const struct {
		const char	*name;
		const char	*text;
		int64_t		 num;
	} keys[] = {
		{ "base_domain", cfg->base_domain, 0 },
		{ "events_max_age_days", NULL, cfg->events_max_age_days },
		{ "events_max_rows", NULL, cfg->events_max_rows },
		{ "max_body_bytes", NULL, cfg->max_body_bytes },
		{ "max_concurrent_requests", NULL,
		    cfg->max_concurrent_requests },
		{ "max_concurrent_starts", NULL, cfg->max_concurrent_starts },
		{ "max_serverless_services", NULL,
		    cfg->max_serverless_services },
		{ "requests_max_age_days", NULL, cfg->requests_max_age_days },
		{ "requests_max_rows", NULL, cfg->requests_max_rows },
		{ "runtime_dir", cfg->runtime_dir, 0 },
		{ "serverless_address", cfg->serverless_address, 0 },
		{ "serverless_listen", cfg->serverless_listen, 0 },
		{ "state", cfg->state, 0 },
		{ "time_unit_ms", NULL, cfg->time_unit_ms },
	};
	size_t i;

	snprintf(buf, len, "?");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(keys[i].name, name) != 0)
			continue;
		if (keys[i].text != NULL)
			snprintf(buf, len, "\"%s\"", keys[i].text);
		else
			snprintf(buf, len, "%lld", (long long)keys[i].num);
	}
}

void
check_print(const struct server_config *cfg)
{
	static const char *const from[] = {
		"default", "file", "environment", "flag",
	};
	const struct config_key *keys;
	char val[CONFIG_URL_MAX + 3];
	size_t n, i;

	keys = config_keys(&n);
	for (i = 0; i < n; i++) {
		key_value(cfg, keys[i].name, val, sizeof(val));
		fprintf(stderr, "%s = %s (%s)\n", keys[i].name, val,
		    from[cfg->source[i]]);
	}
}
