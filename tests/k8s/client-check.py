#!/usr/bin/python3
# client-check.py - the Kubernetes stand-in (tests/k8s/standin.py) as
# Debian's python3-kubernetes sees it, doing what hk's backend will do:
#
#	client-check.py KUBECONFIG DEPLOYMENT	the calls below, one line
#						each, for the test to diff
#	client-check.py KUBECONFIG unauthorized	one list; prints the
#						ApiException's status
#	client-check.py DIR URL incluster	one list, with the
#						in-cluster credentials of
#						DIR (token, ca.crt) and
#						the server of URL
#
# The deployment has a Service of its name and is at replicas 0.  Names,
# resourceVersions and addresses change from run to run: they are not
# printed, what they mean is.  Every wait has a deadline (a watchdog
# exits 1); the watches run in threads that report on a queue.
import os
import queue
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"
DEADLINE = float(os.environ.get("CLIENT_CHECK_DEADLINE", "180"))


def out(*words):
    print(*words, flush=True)


def watchdog():
    time.sleep(DEADLINE)
    out("client-check: gave up after %d s" % DEADLINE)
    os._exit(1)


def control(api, path):
    """A POST to the stand-in's own /standin/ controls."""
    return api.call_api("/standin/" + path, "POST",
                        auth_settings=["BearerToken"],
                        response_type="object", _return_http_data_only=True)


def watch_started(api):
    return api.call_api("/standin/watches", "GET",
                        auth_settings=["BearerToken"], response_type="object",
                        _return_http_data_only=True)["started"]


def ready(s):
    return [bool(e.conditions.ready) for e in s.endpoints or []]


class SliceWatch(threading.Thread):
    """watch.Watch over the service's EndpointSlices from rv: each event
    on self.events as (type, ready list)."""

    def __init__(self, disc, service, rv):
        super().__init__(daemon=True)
        self.disc = disc
        self.service = service
        self.rv = rv
        self.events = queue.Queue()
        self.w = watch.Watch()

    def run(self):
        try:
            for ev in self.w.stream(
                    self.disc.list_namespaced_endpoint_slice, NS,
                    label_selector="kubernetes.io/service-name=" +
                    self.service, resource_version=self.rv):
                self.events.put((ev["type"], ready(ev["object"])))
        except ApiException as e:
            self.events.put(("ApiException", e.status))
        except Exception as e:
            self.events.put(("error", "%s: %s" % (type(e).__name__, e)))

    def until(self, pred):
        """The events up to the first that pred accepts."""
        seen = []
        while True:
            etype, r = self.events.get()
            if etype in ("ApiException", "error"):
                seen.append("%s %s" % (etype, r))
            else:
                seen.append("%s ready=%s" % (etype, r))
            if etype in ("ApiException", "error") or pred(etype, r):
                return seen


def scale(apps, name, n):
    s = apps.patch_namespaced_deployment_scale(name, NS,
                                               {"spec": {"replicas": n}})
    out("scale %s: spec.replicas=%d" % (name, s.spec.replicas))


def check(kubeconfig, name):
    config.load_kube_config(config_file=kubeconfig)
    api = client.ApiClient()
    apps = client.AppsV1Api(api)
    disc = client.DiscoveryV1Api(api)
    events = client.EventsV1Api(api)

    out("version:", client.VersionApi(api).get_code().git_version)
    deps = apps.list_namespaced_deployment(NS, label_selector="hk.app=demo")
    out("deployments hk.app=demo:",
        " ".join(d.metadata.name for d in deps.items))
    out("deployments hk.app=other:", len(apps.list_namespaced_deployment(
        NS, label_selector="hk.app=other").items))

    # Readiness by a watch from the list's resourceVersion.
    sl = disc.list_namespaced_endpoint_slice(
        NS, label_selector="kubernetes.io/service-name=" + name)
    out("slices of %s: %d, ready=%s" % (name, len(sl.items),
                                         [ready(s) for s in sl.items]))
    w = SliceWatch(disc, name, sl.metadata.resource_version)
    w.start()
    scale(apps, name, 1)
    for line in w.until(lambda t, r: r == [True]):
        out("watch:", line)
    dep = apps.read_namespaced_deployment(name, NS)
    out("deployment %s: readyReplicas=%s availableReplicas=%s" % (
        name, dep.status.ready_replicas, dep.status.available_replicas))
    ep = disc.list_namespaced_endpoint_slice(
        NS, label_selector="kubernetes.io/service-name=" + name).items[0]
    addr = ep.endpoints[0].addresses[0]
    out("endpoint: %s port %d" % ("loopback" if addr.startswith("127.")
                                  else addr, ep.ports[0].port))
    with open(os.environ.get("CLIENT_CHECK_ENDPOINT", "/dev/null"),
              "w") as f:
        f.write("%s:%d\n" % (addr, ep.ports[0].port))

    # The watch dropped by the server: resumed from its resourceVersion.
    started = watch_started(api)
    control(api, "drop-watches")
    scale(apps, name, 0)
    for line in w.until(lambda t, r: r == []):
        out("watch:", line)
    out("watch resumed: %s" % (watch_started(api) > started))
    w.w.stop()

    # An event on the Deployment, read back.
    ev = events.create_namespaced_event(NS, client.EventsV1Event(
        metadata=client.V1ObjectMeta(generate_name=name + "-"),
        event_time=time.strftime("%Y-%m-%dT%H:%M:%S.000000Z",
                                 time.gmtime()),
        reason="HTTPIdleWake", action="Wake", type="Normal",
        note="a request woke it", reporting_controller="hakopod.dev/hk-scale",
        reporting_instance="hk-scale-test",
        regarding=client.V1ObjectReference(
            api_version="apps/v1", kind="Deployment", name=name,
            namespace=NS, uid=dep.metadata.uid)))
    back = events.read_namespaced_event(ev.metadata.name, NS)
    out("event read back: %s %s %s/%s: %s" % (
        back.type, back.reason, back.regarding.kind, back.regarding.name,
        back.note))
    listed = events.list_namespaced_event(
        NS, field_selector="regarding.name=%s,reason=HTTPIdleWake" % name)
    out("events of %s with reason HTTPIdleWake: %d" % (name,
                                                        len(listed.items)))

    # A watch from a resourceVersion the server no longer keeps: 410.
    old = disc.list_namespaced_endpoint_slice(NS).metadata.resource_version
    apps.patch_namespaced_deployment(name, NS, {"metadata": {
        "annotations": {"hk.test/touched": "yes"}}})
    control(api, "compact")
    w = SliceWatch(disc, name, old)
    w.start()
    for line in w.until(lambda t, r: False):
        out("watch from a compacted resourceVersion:", line)
    w.join()

    # Conflict: a replace with a stale resourceVersion.
    try:
        apps.replace_namespaced_deployment(name, NS, dep)
        out("replace with a stale resourceVersion: accepted")
    except ApiException as e:
        out("replace with a stale resourceVersion: %d %s" % (e.status,
                                                             e.reason))
    try:
        apps.read_namespaced_deployment("nonesuch", NS)
    except ApiException as e:
        out("read a missing deployment: %d %s" % (e.status, e.reason))


def unauthorized(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    try:
        client.AppsV1Api().list_namespaced_deployment(NS)
        out("list: accepted")
    except ApiException as e:
        out("list: %d %s" % (e.status, e.reason))


def incluster(sadir, url):
    """As a pod's client: the service account's token and CA, the server
    from KUBERNETES_SERVICE_HOST and _PORT."""
    host, port = url.split("://")[1].rsplit(":", 1)
    config.incluster_config.InClusterConfigLoader(
        token_filename=os.path.join(sadir, "token"),
        cert_filename=os.path.join(sadir, "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": host,
                 "KUBERNETES_SERVICE_PORT": port}).load_and_set()
    deps = client.AppsV1Api().list_namespaced_deployment(NS)
    out("in-cluster: deployments:",
        " ".join(d.metadata.name for d in deps.items))


def main():
    if len(sys.argv) == 4 and sys.argv[3] == "incluster":
        threading.Thread(target=watchdog, daemon=True).start()
        incluster(sys.argv[1], sys.argv[2])
        return 0
    if len(sys.argv) != 3:
        print("usage: client-check.py KUBECONFIG DEPLOYMENT|unauthorized\n"
              "       client-check.py DIR URL incluster", file=sys.stderr)
        return 64
    threading.Thread(target=watchdog, daemon=True).start()
    if sys.argv[2] == "unauthorized":
        unauthorized(sys.argv[1])
    else:
        check(sys.argv[1], sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
