/*
 * kubeconfig.c - libFuzzer target: kubeconfig_parse() on any text, in a
 * directory with no files; what it takes has an https server and a
 * namespace that is a DNS label, and what it refuses leaves nothing.
 *
 *	make build/fuzz/kubeconfig && build/fuzz/kubeconfig -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubeconfig.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct kube_creds c;
	char err[KUBE_ERR_LEN];

	if (kubeconfig_parse((const char *)data, len, "/nonexistent", NULL,
	    &c, err, sizeof(err)) == 0) {
		if (strncmp(c.server, "https://", 8) != 0 ||
		    c.namespace_[0] == '\0' ||
		    (c.cert_pem == NULL) != (c.key_pem == NULL))
			abort();
		kube_creds_clear(&c);
	} else if (c.token != NULL || c.ca_pem != NULL || err[0] == '\0')
		abort();
	return 0;
}
