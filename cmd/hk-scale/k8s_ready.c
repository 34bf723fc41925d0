/*
 * k8s_ready.c - which endpoint of a Service's EndpointSlices is a
 * revision's pod (k8s.h).  During a roll the slices list the old
 * revision's pod and the new one's, both ready for a while (maxSurge 1,
 * maxUnavailable 0): an EndpointSlice names no revision, only its pods
 * (targetRef), so the instance of a revision watches its own Pods (label
 * hakopod.io/revision) and takes an endpoint as its own when it names
 * one of them, by targetRef or, without one, by the pod's address.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include "k8s.h"

/*
 * 1 if addr is an IPv4 or IPv6 address: an endpoint's is the API
 * server's word, and one that is not (or too long to hold with its port)
 * is no endpoint.
 */
static int
is_ip(const char *addr)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return addr != NULL && (inet_pton(AF_INET, addr, buf) == 1 ||
	    inet_pton(AF_INET6, addr, buf) == 1);
}

/* 1 if endpoint e is one of pods (by name). */
static int
is_mine(const json_t *e, const json_t *pods)
{
	const json_t *ref = json_object_get(e, "targetRef");
	const char *name, *addr, *key, *ip;
	json_t *pod;

	name = json_string_value(json_object_get(ref, "name"));
	if (name != NULL)
		return json_string_value(json_object_get(ref, "kind")) !=
		    NULL && strcmp(json_string_value(json_object_get(ref,
		    "kind")), "Pod") == 0 && json_object_get(pods, name) !=
		    NULL;
	addr = json_string_value(json_array_get(json_object_get(e,
	    "addresses"), 0));
	json_object_foreach((json_t *)pods, key, pod) {
		ip = json_string_value(json_object_get(json_object_get(pod,
		    "status"), "podIP"));
		if (addr != NULL && ip != NULL && strcmp(addr, ip) == 0)
			return 1;
	}
	return 0;
}

void
k8s_seen(const json_t *slices, const json_t *pods, struct k8s_seen *out)
{
	const char *key, *addr;
	json_t *sl, *e, *ready;
	json_int_t port;
	size_t i;

	memset(out, 0, sizeof(*out));
	json_object_foreach((json_t *)slices, key, sl) {
		port = json_integer_value(json_object_get(json_array_get(
		    json_object_get(sl, "ports"), 0), "port"));
		json_array_foreach(json_object_get(sl, "endpoints"), i, e) {
			out->all++;
			if (!is_mine(e, pods))
				continue;
			out->mine++;
			ready = json_object_get(json_object_get(e,
			    "conditions"), "ready");
			addr = json_string_value(json_array_get(
			    json_object_get(e, "addresses"), 0));
			/* an absent ready is true (discovery.k8s.io/v1) */
			if (out->ep[0] != '\0' || !is_ip(addr) || port <= 0 ||
			    port > 65535 || (ready != NULL &&
			    !json_is_true(ready)))
				continue;
			snprintf(out->ep, sizeof(out->ep), strchr(addr, ':') !=
			    NULL ? "[%s]:%lld" : "%s:%lld", addr,
			    (long long)port);
		}
	}
}

/* The EndpointSlices of Service svc: their list's path. */
int
k8s_slices_path(const struct k8s *k, const char *svc, char *dst,
    size_t size)
{
	int n;

	n = snprintf(dst, size, "/apis/discovery.k8s.io/v1/namespaces/%s/"
	    "endpointslices?labelSelector=kubernetes.io%%2Fservice-name%%3D%s",
	    k->ns, svc);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The Pods of r's revision: their list's path. */
int
k8s_pods_path(const struct k8s *k, const struct k8s_ref *r, char *dst,
    size_t size)
{
	int n;

	n = snprintf(dst, size, "/api/v1/namespaces/%s/pods?labelSelector="
	    "hakopod.io%%2Finstallation%%3D%s%%2Chakopod.io%%2Fapp%%3D%s%%2C"
	    "hakopod.io%%2Fservice%%3D%s%%2Chakopod.io%%2Frevision%%3D%lld",
	    k->ns, r->installation, r->app, r->service,
	    (long long)r->revision);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/*
 * The waiting reasons of a container that will not start by itself soon
 * (the kubelet backs off): a start waiting on them has failed.
 */
static const char *const fatal_reasons[] = {
	"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
	"ErrImageNeverPull", "CreateContainerConfigError",
	"CreateContainerError", "RunContainerError", "CrashLoopBackOff",
};

/*
 * 1, and why ("pod NAME: REASON: MESSAGE", with the last exit code when
 * there was one), if a container of one of pods waits on such a reason.
 */
int
k8s_pod_trouble(const json_t *pods, char *why, size_t size)
{
	const char *key, *reason, *msg;
	json_t *pod, *cs, *waiting, *last;
	size_t i, j;

	json_object_foreach((json_t *)pods, key, pod) {
		json_array_foreach(json_object_get(json_object_get(pod,
		    "status"), "containerStatuses"), i, cs) {
			waiting = json_object_get(json_object_get(cs, "state"),
			    "waiting");
			reason = json_string_value(json_object_get(waiting,
			    "reason"));
			if (reason == NULL)
				continue;
			for (j = 0; j < sizeof(fatal_reasons) /
			    sizeof(fatal_reasons[0]); j++)
				if (strcmp(reason, fatal_reasons[j]) == 0)
					break;
			if (j == sizeof(fatal_reasons) /
			    sizeof(fatal_reasons[0]))
				continue;
			msg = json_string_value(json_object_get(waiting,
			    "message"));
			last = json_object_get(json_object_get(json_object_get(
			    cs, "lastState"), "terminated"), "exitCode");
			if (json_is_integer(last))
				snprintf(why, size, "pod %s: %s: %.200s (last "
				    "exit status %lld)", key, reason, msg != NULL ?
				    msg : "", (long long)json_integer_value(last));
			else
				snprintf(why, size, "pod %s: %s: %.200s", key,
				    reason, msg != NULL ? msg : "");
			return 1;
		}
	}
	return 0;
}

/* s percent-encoded but for what a label's key or value holds. */
static int
url_part(char *dst, size_t size, size_t *len, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		if (*len + 4 > size)
			return -1;
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' ||
		    *s == '_')
			dst[(*len)++] = *s;
		else {
			dst[(*len)++] = '%';
			dst[(*len)++] = hex[(unsigned char)*s >> 4];
			dst[(*len)++] = hex[(unsigned char)*s & 15];
		}
	}
	dst[*len] = '\0';
	return 0;
}

/*
 * The Pods an operator's Deployment selects (its matchLabels, an object
 * of strings): their list's path.  -1 if none or too long.
 */
int
k8s_selector_pods_path(const struct k8s *k, const json_t *match, char *dst,
    size_t size)
{
	const char *key;
	json_t *v;
	size_t len;
	int n;

	n = snprintf(dst, size, "/api/v1/namespaces/%s/pods?labelSelector=",
	    k->ns);
	if (n < 0 || (size_t)n >= size || json_object_size(match) == 0)
		return -1;
	len = (size_t)n;
	json_object_foreach((json_t *)match, key, v) {
		if (!json_is_string(v) ||
		    (len > (size_t)n && url_part(dst, size, &len, ",") == -1) ||
		    url_part(dst, size, &len, key) == -1 ||
		    url_part(dst, size, &len, "=") == -1 ||
		    url_part(dst, size, &len, json_string_value(v)) == -1)
			return -1;
	}
	return 0;
}
