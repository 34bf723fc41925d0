/*
 * k8s_ready.c - which endpoint of a Service's EndpointSlices is a
 * revision's pod (cmd/hk-scale/k8s_ready.c): during a roll the slices list
 * the old revision's pod and the new one's, and only the instance's own
 * pods (its Pods watch) count; and why a pod will not start, from its
 * containers' waiting reasons.  The exchanges with the stand-in are
 * tests/integration/2207-k8s-roll.t and 2208-k8s-crashloop.t.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "k8s.h"
#include "tap.h"

/* Slices of a roll: OLD ready, NEW not yet (or ready, per new_ready). */
static json_t *
roll_slices(int new_ready, int with_ref)
{
	json_t *sl;

	sl = json_pack("{s:{s:[{s:s}], s:[{s:[s], s:{s:b}}, {s:[s], "
	    "s:{s:b}}]}}", "s1", "ports", "port", "x", "endpoints",
	    "addresses", "127.77.0.1", "conditions", "ready", 1,
	    "addresses", "127.77.0.2", "conditions", "ready", new_ready);
	json_object_set_new(json_array_get(json_object_get(json_object_get(
	    sl, "s1"), "ports"), 0), "port", json_integer(8080));
	if (with_ref) {
		json_t *eps = json_object_get(json_object_get(sl, "s1"),
		    "endpoints");
		json_object_set_new(json_array_get(eps, 0), "targetRef",
		    json_pack("{s:s, s:s}", "kind", "Pod", "name", "old"));
		json_object_set_new(json_array_get(eps, 1), "targetRef",
		    json_pack("{s:s, s:s}", "kind", "Pod", "name", "new"));
	}
	return sl;
}

static json_t *
pod(const char *name, const char *ip)
{
	return json_pack("{s:{s:{s:s}}}", name, "status", "podIP", ip);
}

static void
test_roll(void)
{
	struct k8s_seen s;
	json_t *sl, *mine;

	sl = roll_slices(0, 1);
	mine = pod("new", "127.77.0.2");
	k8s_seen(sl, mine, &s);
	is(s.ep, "", "the new revision does not take the old pod's endpoint");
	isint(s.mine, 1, "one endpoint is its own");
	isint(s.all, 2, "of two");
	json_decref(mine);
	mine = pod("old", "127.77.0.1");
	k8s_seen(sl, mine, &s);
	is(s.ep, "127.77.0.1:8080", "the old revision's is the old pod's");
	json_decref(sl);
	sl = roll_slices(1, 1);
	json_decref(mine);
	mine = pod("new", "127.77.0.2");
	k8s_seen(sl, mine, &s);
	is(s.ep, "127.77.0.2:8080", "ready, the new pod is the new revision's");
	json_decref(sl);
	/* without targetRef: by the pod's address */
	sl = roll_slices(1, 0);
	k8s_seen(sl, mine, &s);
	is(s.ep, "127.77.0.2:8080", "without targetRef: by status.podIP");
	json_decref(mine);
	mine = json_object();
	k8s_seen(sl, mine, &s);
	is(s.ep, "", "no pod of its own listed: no endpoint");
	isint(s.mine, 0, "none is its own");
	json_decref(mine);
	json_decref(sl);
	/* an address that is not one (too long to hold with its port) */
#define LONG_ADDR "127.7llllllllllllllllllllllllllllllllllllllllllllllll" \
		  "llllllllllllllllllllllllllllllllllllllllllllll7.0.2"
	sl = json_pack("{s:{s:[{s:i}], s:[{s:[s], s:{s:b}}]}}", "s1", "ports",
	    "port", 8080, "endpoints", "addresses", LONG_ADDR, "conditions",
	    "ready", 1);
	mine = pod("x", LONG_ADDR);
	k8s_seen(sl, mine, &s);
	is(s.ep, "", "an address that is not an IP is no endpoint");
	isint(s.mine, 1, "  though the pod's");
	json_decref(mine);
	json_decref(sl);
}

static void
test_trouble(void)
{
	char why[512];
	json_t *pods;

	pods = json_pack("{s:{s:{s:[{s:{s:{s:s, s:s}}}]}}}", "p1", "status",
	    "containerStatuses", "state", "waiting", "reason", "ErrImagePull",
	    "message", "failed to pull image \"x\"");
	ok(k8s_pod_trouble(pods, why, sizeof(why)) == 1, "ErrImagePull");
	is(why, "pod p1: ErrImagePull: failed to pull image \"x\"",
	    "  with the pod and the message");
	json_decref(pods);
	pods = json_pack("{s:{s:{s:[{s:{s:{s:s, s:s}}, s:{s:{s:i}}}]}}}",
	    "p2", "status", "containerStatuses", "state", "waiting", "reason",
	    "CrashLoopBackOff", "message", "back-off 10s", "lastState",
	    "terminated", "exitCode", 3);
	ok(k8s_pod_trouble(pods, why, sizeof(why)) == 1, "CrashLoopBackOff");
	is(why, "pod p2: CrashLoopBackOff: back-off 10s (last exit status 3)",
	    "  with the last exit status");
	json_decref(pods);
	pods = json_pack("{s:{s:{s:[{s:{s:{s:s}}}]}}}", "p3", "status",
	    "containerStatuses", "state", "waiting", "reason",
	    "ContainerCreating");
	ok(k8s_pod_trouble(pods, why, sizeof(why)) == 0,
	    "ContainerCreating is no trouble");
	json_decref(pods);
	pods = json_pack("{s:{s:{s:[{s:{s:{}}}]}}}", "p4", "status",
	    "containerStatuses", "state", "running");
	ok(k8s_pod_trouble(pods, why, sizeof(why)) == 0, "running is none");
	json_decref(pods);
}

static void
test_paths(void)
{
	struct k8s k;
	struct k8s_ref r;
	char path[K8S_PATH_MAX];

	memset(&k, 0, sizeof(k));
	memset(&r, 0, sizeof(r));
	strlcpy(k.ns, "default", sizeof(k.ns));
	strlcpy(r.app, "a", sizeof(r.app));
	strlcpy(r.service, "api", sizeof(r.service));
	r.installation = "0123";
	r.revision = 3;
	ok(k8s_pods_path(&k, &r, path, sizeof(path)) == 0, "pods' path");
	is(path, "/api/v1/namespaces/default/pods?labelSelector="
	    "hakopod.io%2Finstallation%3D0123%2Chakopod.io%2Fapp%3Da%2C"
	    "hakopod.io%2Fservice%3Dapi%2Chakopod.io%2Frevision%3D3",
	    "  the revision's labels");
	ok(k8s_slices_path(&k, "hk-a-api", path, sizeof(path)) == 0,
	    "slices' path");
	is(path, "/apis/discovery.k8s.io/v1/namespaces/default/"
	    "endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D"
	    "hk-a-api", "  the Service's");
	ok(k8s_slices_path(&k, "hk-a-api", path, 20) == -1,
	    "one that does not fit is refused");
}

int
main(void)
{
	test_roll();
	test_trouble();
	test_paths();
	return done();
}
