/*
 * k8s_ready.c - libFuzzer target for what hk-scale reads of the API
 * server's EndpointSlices and Pods (cmd/hk-scale/k8s_ready.c): the input
 * is two JSON documents, the slices and the pods (by name, as the
 * watches keep them), cut at the first newline.  Whatever their shape,
 * k8s_seen() gives a terminated endpoint that is "" or ADDRESS:PORT with
 * a port of 1 to 65535, no more of its own than in all, and
 * k8s_pod_trouble() a terminated reason when it says there is one;
 * nothing is read out of bounds or leaked.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "k8s.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "k8s_ready: %s\n", what);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	json_t *slices, *pods;
	struct k8s_seen seen;
	char why[256];
	const char *colon;
	long port;

	if (nl == NULL)
		return 0;
	slices = json_loadb((const char *)data, (size_t)(nl - data), 0, NULL);
	pods = json_loadb((const char *)nl + 1, size - (size_t)(nl - data) - 1,
	    0, NULL);
	if (json_is_object(slices) && json_is_object(pods)) {
		k8s_seen(slices, pods, &seen);
		check(memchr(seen.ep, '\0', sizeof(seen.ep)) != NULL,
		    "an endpoint not terminated");
		check(seen.mine <= seen.all, "more of its own than in all");
		if (seen.ep[0] != '\0') {
			colon = strrchr(seen.ep, ':');
			check(colon != NULL, "an endpoint without a port");
			port = strtol(colon + 1, NULL, 10);
			check(port >= 1 && port <= 65535, "a port out of range");
		}
		if (k8s_pod_trouble(pods, why, sizeof(why)))
			check(memchr(why, '\0', sizeof(why)) != NULL &&
			    strncmp(why, "pod ", 4) == 0, "a reason unlike one");
	}
	json_decref(slices);
	json_decref(pods);
	return 0;
}
