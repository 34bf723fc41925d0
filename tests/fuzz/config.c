/*
 * config.c - libFuzzer target: app_parse() and app_free() on any bytes,
 * against an operator config with serverless_address set (so that the
 * serverless rules run too), a node (so that node_name's do) and
 * volume_dirs (so that bind mounts' do).  A valid service's spec_json
 * decodes back, with the same volumes.
 *
 *	make build/fuzz/config && build/fuzz/config -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "app.h"
#include "config.h"
#include "spec.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct server_config srv;
	static int ready;
	struct config_diag d;
	struct app_config app;
	struct service_spec back;
	char err[SPEC_ERR_LEN];
	size_t i;

	if (!ready) {
		memset(&d, 0, sizeof(d));
		(void)config_load_server(&srv, "/dev/null", &d, NULL);
		(void)config_set_flag(&srv, "serverless_address",
		    "127.0.0.1:8082", &d);
		(void)config_set_flag(&srv, "max_serverless_services", "4",
		    &d);
		(void)config_set_flag(&srv, "volume_dirs", "/srv/hk,/d", &d);
		(void)strlcpy(srv.nodes[0].name, "n1",
		    sizeof(srv.nodes[0].name));
		(void)strlcpy(srv.nodes[0].address, "10.0.0.2",
		    sizeof(srv.nodes[0].address));
		srv.nnodes = 1;
		ready = 1;
	}
	if (len > CONFIG_MAX_FILE)
		return 0;
	memset(&d, 0, sizeof(d));
	if (app_parse(&app, "fuzz.toml", (const char *)data, len, &srv,
	    &d) == 0) {
		/* a valid app has every service's spec_json */
		for (i = 0; i < app.nservices; i++)
			if (app.services[i].spec_json == NULL ||
			    app.services[i].directory == NULL)
				__builtin_trap();
		for (i = 0; i < app.nservices; i++) {
			if (spec_decode(app.services[i].spec_json, &back, err,
			    sizeof(err)) == -1 ||
			    back.nvolumes != app.services[i].nvolumes)
				__builtin_trap();
			spec_clear(&back);
		}
	} else if (d.count == 0)
		__builtin_trap();	/* a failure always says why */
	app_free(&app);
	return 0;
}
