#!/usr/bin/env python3
# standin.py - a STAND-IN for a Kubernetes API server, for hk's tests
# only.  No Kubernetes API server can run on these machines (Debian 12
# packages none, and none can be fetched), so hk's Kubernetes backend is
# tested against this: the calls hk makes, written from the Kubernetes API
# reference, checked by real clients (kubectl, python3-kubernetes) in
# tests/integration/2200-k8s-standin-clients.t.  It is not a cluster.
#
# Serves, over HTTPS (HTTP/1.1), to a bearer token (or a client
# certificate of the given CA), in JSON:
#   discovery   /version /api /apis /api/v1 /apis/GROUP/VERSION
#   v1          namespaces (create get list watch), services and secrets
#               (create get list watch update patch delete), events (a
#               read-only view of the events.k8s.io ones), pods (get list
#               watch: the stand-in's controller writes them, with
#               status.podIP, the Ready condition and containerStatuses)
#   apps/v1     deployments (all verbs), deployments/scale (autoscaling/v1
#               Scale: get update patch), deployments/status (get)
#   discovery.k8s.io/v1  endpointslices (all verbs; the stand-in's
#               controller writes those of Services with a selector)
#   events.k8s.io/v1     events (all verbs)
# with labelSelector (equality-based) and fieldSelector (dotted paths) on
# list and watch; watch as chunked JSON lines from a resourceVersion, a
# bounded history (standin_store.HISTORY changes) after which a watch start
# is an ERROR event with a 410 Expired Status; BOOKMARKs when asked;
# merge, strategic-merge (lists merged by name) and JSON patches; 409
# Conflict on a stale resourceVersion; the API's Status objects; Tables
# for kubectl's human-readable output.  Deployments run one pod with
# podman on loopback (standin_pods.py): each pod has an address of its
# own, 127.77.X.Y, as pods have IPs of their own, and the endpoint's port
# is the containerPort (not 127.0.0.1: two revisions' pods on port 8080
# must both listen during a roll).  A Service (not headless) gets a
# cluster IP 127.78.X.Y whose ports forward to a ready endpoint, as
# kube-proxy does (standin_proxy.py).
#
# It does not do: protobuf (but for the Secret and Namespace bodies that
# kubectl 1.32's "create" sends: standin_proto.py), HTTP/2, server-side
# apply, dry runs, set-based selectors, limit/continue paging (every list
# is whole), finalizers, garbage collection beyond a Service's slice and a
# Deployment's pods, writes of pods, ReplicaSets as resources, more than
# one replica (but a roll's two pods), admission, RBAC,
# OpenAPI schemas (its /openapi/v2 is empty, /openapi/v3 is 404), a
# DELETED event to a watch whose selector an object leaves.
#
# For tests, under /standin/ (same authentication):
#   POST /standin/drop-watches   end every open watch (?abrupt=1: close
#                                the connection mid-stream, no last chunk)
#   POST /standin/compact        forget the history: a watch from before
#                                then gets 410 Gone, as an ERROR event of
#                                a 200 stream (kube-apiserver's watch
#                                cache); ?answer=status: from then on as
#                                the answer itself, HTTP 410 and a Status
#   POST /standin/readiness?hold=1  a pod not ready yet stays so (its
#                                readiness probe fails) until ?hold=0
#   GET  /standin/containers     the podman container IDs it runs
#   GET  /standin/watches        {"started": N, "open": N}: watch requests
# Its log (stderr) has a line for each write of a Deployment's scale
# ("deployment NS/NAME: scale FROM to TO"), for each pod started, ready,
# exited or removed, and for each 410 Gone it answers a watch.
#
# usage: standin.py -d DIR -c CERT -k KEY -t TOKENFILE [-C CLIENT_CA]
#        [-p PORT]
# Listens on 127.0.0.1:PORT (0: any free one); once listening writes
# DIR/url, DIR/pid and DIR/instance (its containers' label
# hk.k8s-standin=INSTANCE).  SIGTERM removes every container it started (by ID)
# and exits 0.
import argparse
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standin_kinds import (CORE_EVENTS, DEPLOYMENTS, EVENTS, KIND_BY_PATH,
                           NAMESPACES, SERVICES, SLICES, apply_patch,
                           core_event, fields_match, group_list,
                           labels_match, prepare, resource_list,
                           selector_string, table)
import standin_proto
from standin_pods import Pods
from standin_proxy import Proxies
from standin_store import ApiError, Store, not_found, status_object

PROG = "standin"
KEEPALIVE = 5.0         # seconds between bookmarks a watch asked for
MAX_BODY = 4 << 20


def log(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


def truthy(value):
    """A boolean query parameter, as Go's strconv.ParseBool reads it (the
    python client sends "True")."""
    return (value or "").lower() in ("1", "t", "true")


class Api:
    """The resources: what each verb does to the store."""

    def __init__(self, store, pods, proxies):
        self.store = store
        self.pods = pods
        self.proxies = proxies
        for ns in ("default", "kube-system", "kube-public"):
            self.store.create(NAMESPACES, "", prepare(
                NAMESPACES, {"metadata": {"name": ns}}))

    def _ns_exists(self, kind, ns):
        if kind.namespaced and self.store.find(NAMESPACES, "", ns) is None:
            raise not_found(NAMESPACES, ns)

    def _items(self, kind, ns, q):
        if kind is CORE_EVENTS:
            items, rv = self.store.list(EVENTS, ns)
            items = [core_event(e) for e in items]
        else:
            items, rv = self.store.list(kind, ns)
        items = [o for o in items if labels_match(o, q.get("labelSelector"))
                 and fields_match(o, q.get("fieldSelector"))]
        return items, rv

    def list(self, kind, ns, q):
        items, rv = self._items(kind, ns, q)
        return {"kind": kind.kind + "List", "apiVersion": kind.api_version,
                "metadata": {"resourceVersion": rv}, "items": items}

    def get(self, kind, ns, name):
        if kind is CORE_EVENTS:
            return core_event(self.store.get(EVENTS, ns, name))
        return self.store.get(kind, ns, name)

    def create(self, kind, ns, body):
        if kind is NAMESPACES:
            ns = ""
        self._ns_exists(kind, ns)
        obj = prepare(kind, body)
        if kind is SERVICES:
            self.proxies.allocate(obj)
        if kind is DEPLOYMENTS:
            obj["metadata"]["generation"] = 1
            obj["metadata"].setdefault("annotations", {})[
                "deployment.kubernetes.io/revision"] = "1"
        out = self.store.create(kind, ns, obj)
        if kind is SERVICES and (obj["spec"].get("selector")):
            with self.store.lock:
                if not any(s["metadata"].get("labels", {}).get(
                        "kubernetes.io/service-name") == obj["metadata"][
                        "name"] for s in self.store.list(SLICES, ns)[0]):
                    self.pods.sync_slice(self.store.find(
                        SERVICES, ns, obj["metadata"]["name"]), None, [])
        return out

    def update(self, kind, ns, name, body):
        """PUT, and the end of every patch: defaults, generation."""
        with self.store.lock:
            old = self.store.get(kind, ns, name)
            obj = prepare(kind, body, name)
            if kind is SERVICES:        # spec.clusterIP cannot change
                for k in ("clusterIP", "clusterIPs"):
                    if k in (old.get("spec") or {}):
                        obj["spec"][k] = old["spec"][k]
            if kind is DEPLOYMENTS:
                obj["status"] = old.get("status", {})
                self._next_generation(old, obj)
            return self.store.replace(kind, ns, obj,
                                      obj["metadata"].get("resourceVersion"))

    def _next_generation(self, old, obj):
        meta = obj["metadata"]
        meta["generation"] = old["metadata"].get("generation", 1)
        if json.dumps(old["spec"], sort_keys=True) != json.dumps(
                obj["spec"], sort_keys=True):
            meta["generation"] += 1
        rev = old["metadata"].get("annotations", {}).get(
            "deployment.kubernetes.io/revision", "1")
        if old["spec"]["template"] != obj["spec"]["template"]:
            rev = str(int(rev) + 1)
        meta.setdefault("annotations", {})[
            "deployment.kubernetes.io/revision"] = rev

    def patch(self, kind, ns, name, ctype, body):
        with self.store.lock:
            return self.update(kind, ns, name, apply_patch(
                self.store.get(kind, ns, name), ctype, body))

    def delete(self, kind, ns, name):
        with self.store.lock:
            obj = self.store.delete(kind, ns, name)
            if kind is SERVICES:
                for s in self.store.list(SLICES, ns)[0]:
                    if s["metadata"].get("labels", {}).get(
                            "kubernetes.io/service-name") == name:
                        self.store.delete(SLICES, ns, s["metadata"]["name"])
        return status_object(200, "", "", {
            "name": name, "group": kind.group, "kind": kind.plural,
            "uid": obj["metadata"]["uid"]})

    # --- deployments/scale: autoscaling/v1 Scale ---

    def scale(self, ns, name):
        dep = self.store.get(DEPLOYMENTS, ns, name)
        meta = {k: dep["metadata"][k] for k in (
            "name", "namespace", "uid", "resourceVersion",
            "creationTimestamp")}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": meta,
                "spec": {"replicas": dep["spec"]["replicas"]},
                "status": {"replicas": dep["status"].get("replicas", 0),
                           "selector": selector_string(
                               dep["spec"]["selector"]["matchLabels"])}}

    def put_scale(self, ns, name, body):
        with self.store.lock:
            dep = self.store.get(DEPLOYMENTS, ns, name)
            want = body.get("metadata", {}).get("resourceVersion")
            if want and want != dep["metadata"]["resourceVersion"]:
                self.store.replace(DEPLOYMENTS, ns, dep, want)  # Conflict
            replicas = (body.get("spec") or {}).get("replicas", 0)
            log("deployment %s/%s: scale %d to %d" % (
                ns, name, dep["spec"].get("replicas", 0), replicas))
            dep["spec"]["replicas"] = replicas
            self.update(DEPLOYMENTS, ns, name, dep)
            return self.scale(ns, name)

    def patch_scale(self, ns, name, ctype, body):
        with self.store.lock:
            return self.put_scale(ns, name, apply_patch(
                self.scale(ns, name), ctype, body))


class Watch:
    """One watch: the changes of a kind after a resourceVersion, as
    JSON lines, until the client goes, a timeout or a drop."""

    def __init__(self, store, kind, ns, q, as_table):
        self.store = store
        self.kind = kind
        self.ns = ns
        self.q = q
        self.as_table = as_table
        self.bookmarks = truthy(q.get("allowWatchBookmarks"))
        timeout = q.get("timeoutSeconds")
        self.deadline = time.monotonic() + float(timeout) if timeout \
            else None

    def _wanted(self, change):
        stored = EVENTS if self.kind is CORE_EVENTS else self.kind
        if change.kind is not stored:
            return False
        obj = change.obj
        if self.kind.namespaced and self.ns is not None and \
                obj["metadata"].get("namespace") != self.ns:
            return False
        if self.kind is CORE_EVENTS:
            obj = core_event(obj)
        return labels_match(obj, self.q.get("labelSelector")) and \
            fields_match(obj, self.q.get("fieldSelector"))

    def _event(self, etype, obj):
        if self.kind is CORE_EVENTS:
            obj = core_event(obj)
        if self.as_table:
            obj = table(self.kind, [obj], obj["metadata"]["resourceVersion"])
        return {"type": etype, "object": obj}

    def events(self):
        """Yields watch events, None for "nothing yet"; returns at the end.
        A start from a compacted resourceVersion yields the 410 ERROR."""
        rv = self.q.get("resourceVersion")
        with self.store.lock:
            drops = self.store.drops
            if rv in (None, "", "0"):
                items, pos = self.store.list(
                    EVENTS if self.kind is CORE_EVENTS else self.kind,
                    self.ns)
                pos = int(pos)
                for o in items:
                    if self._wanted(_Fake(self.kind, o)):
                        yield self._event("ADDED", o)
            else:
                try:
                    pos = int(rv)
                    self.store.since(pos)
                except ValueError:
                    yield {"type": "ERROR", "object": status_object(
                        400, "BadRequest", "invalid resourceVersion " + rv)}
                    return
                except ApiError as e:
                    log("watch of %s from %s: %d %s, an ERROR event" % (
                        self.kind.plural, rv, e.code, e.reason))
                    yield {"type": "ERROR", "object": status_object(
                        e.code, e.reason, e.message)}
                    return
        last = time.monotonic()
        while True:
            with self.store.lock:
                if self.store.drops != drops:
                    return
                try:
                    changes = self.store.since(pos)
                except ApiError as e:   # fell behind the history
                    yield {"type": "ERROR", "object": status_object(
                        e.code, e.reason, e.message)}
                    return
                if not changes:
                    self.store.changed.wait(1.0)
                    changes = self.store.since(pos) if \
                        self.store.drops == drops else []
            for c in changes:
                pos = c.rv
                if self._wanted(c):
                    last = time.monotonic()
                    yield self._event(c.type, c.obj)
            if self.deadline and time.monotonic() >= self.deadline:
                return
            if self.bookmarks and time.monotonic() - last >= KEEPALIVE:
                last = time.monotonic()
                yield {"type": "BOOKMARK", "object": {
                    "kind": self.kind.kind, "apiVersion":
                    self.kind.api_version,
                    "metadata": {"resourceVersion": str(pos)}}}
            yield None


class _Fake:
    """A current object seen as a change, for a watch's first ADDEDs."""

    def __init__(self, kind, obj):
        self.kind = EVENTS if kind is CORE_EVENTS else kind
        self.obj = obj


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hk-k8s-standin"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            log("%s %s" % (self.client_address[0], fmt % args))

    def handle(self):
        try:
            super().handle()
        except (ssl.SSLError, ConnectionError, socket.timeout) as e:
            if self.server.verbose:
                log("connection: %s" % e)

    # --- answers ---

    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, e):
        self._send(e.code, status_object(e.code, e.reason, e.message,
                                         e.details))

    def _authorized(self):
        # the scheme in any case, as the API server reads it (the python
        # client's in-cluster loader sends "bearer")
        scheme, _, token = self.headers.get("Authorization", "").partition(
            " ")
        if scheme.lower() == "bearer" and token.strip() == self.server.token:
            return True
        try:
            return bool(self.connection.getpeercert())
        except (AttributeError, ValueError):
            return False

    def _read_body(self):
        """The request's body, read whatever the method (a DELETE has
        one, its options): left unread, it would be taken for the next
        request on the connection.  None when it is too large (the
        connection is then closed after the answer)."""
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            return None
        return self.rfile.read(n)

    def _body(self):
        data = self._raw
        if data is None:
            raise ApiError(413, "RequestEntityTooLarge",
                           "request entity too large")
        if "protobuf" in self.headers.get("Content-Type", ""):
            try:
                obj = standin_proto.decode(data)
            except (ValueError, IndexError, UnicodeDecodeError):
                obj = None
            if obj is not None:
                return obj
        if "json" not in self.headers.get("Content-Type", "json"):
            raise ApiError(415, "UnsupportedMediaType", "the body of the "
                           "request was in an unknown format - accepted "
                           "media types include: application/json, "
                           "application/merge-patch+json, "
                           "application/strategic-merge-patch+json, "
                           "application/json-patch+json")
        try:
            return json.loads(data or b"{}")
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the body is not JSON: %s" % e)

    # --- the verbs ---

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")

    def do_PUT(self):
        self._serve("PUT")

    def do_PATCH(self):
        self._serve("PATCH")

    def do_DELETE(self):
        self._serve("DELETE")

    def _serve(self, method):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        parts = [p for p in url.path.split("/") if p]
        self._raw = self._read_body()
        if not self._authorized():
            self._error(ApiError(401, "Unauthorized", "Unauthorized"))
            return
        try:
            if parts[:1] == ["standin"]:
                self._control(method, parts[1:], q)
            elif not self._discovery(method, parts):
                self._resource(method, parts, q)
        except ApiError as e:
            self._error(e)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            self._error(ApiError(400, "BadRequest", "malformed request: "
                                 "%s: %s" % (type(e).__name__, e)))

    def _discovery(self, method, parts):
        if method != "GET":
            return False
        doc = None
        if parts == ["version"]:
            doc = {"major": "1", "minor": "22", "gitVersion":
                   "v1.22.0-hk-standin", "platform": "linux/amd64",
                   "goVersion": "python", "compiler": "standin",
                   "gitCommit": "", "gitTreeState": "clean",
                   "buildDate": "2026-01-01T00:00:00Z"}
        elif parts == ["api"]:
            doc = {"kind": "APIVersions", "versions": ["v1"],
                   "serverAddressByClientCIDRs": [{
                       "clientCIDR": "0.0.0.0/0",
                       "serverAddress": self.server.address}]}
        elif parts == ["apis"]:
            doc = group_list()
        elif parts == ["api", "v1"]:
            doc = resource_list("", "v1")
        elif len(parts) == 3 and parts[0] == "apis":
            doc = resource_list(parts[1], parts[2])
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find "
                               "the requested resource")
        elif parts == ["openapi", "v2"]:
            self._openapi()
            return True
        elif parts in (["healthz"], ["readyz"], ["livez"]):
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(body)
            return True
        if doc is None:
            return False
        self._send(200, doc)
        return True

    def _openapi(self):
        """An OpenAPI v2 document with no paths and no definitions: kubectl
        will not create without one, and validates nothing it does not
        find there.  As protobuf (gnostic's openapi_v2.Document: swagger
        1, info 2 with title 1 and version 2, paths 8, definitions 9) when
        asked, as kubectl does; else JSON."""
        title, version = b"hk k8s stand-in", b"v1.22.0"
        if "protobuf" in self.headers.get("Accept", ""):
            info = (b"\x0a" + bytes([len(title)]) + title + b"\x12" +
                    bytes([len(version)]) + version)
            body = (b"\x0a\x032.0" + b"\x12" + bytes([len(info)]) + info +
                    b"\x42\x00\x4a\x00")
            ctype = "application/octet-stream"
        else:
            body = json.dumps({"swagger": "2.0", "info": {
                "title": title.decode(), "version": version.decode()},
                "paths": {}, "definitions": {}}).encode()
            ctype = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self, parts):
        """(kind, namespace or None, name or None, subresource or None)."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the "
                           "requested resource")
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and \
                (group, version, rest[2]) in KIND_BY_PATH:
            ns, rest = rest[1], rest[2:]
        kind = KIND_BY_PATH.get((group, version, rest[0] if rest else ""))
        if kind is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the "
                           "requested resource")
        if kind is NAMESPACES:
            ns = ""
        elif kind.namespaced and ns is None and len(rest) > 1:
            raise ApiError(404, "NotFound", "the server could not find the "
                           "requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return kind, ns, name, sub

    def _resource(self, method, parts, q):
        kind, ns, name, sub = self._route(parts)
        api = self.server.api
        verb = {"GET": "get" if name else "list", "POST": "create",
                "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[method]
        if truthy(q.get("watch")) and verb == "list":
            verb = "watch"
        if (verb not in kind.verbs and not sub) or \
                (verb == "create" and name) or \
                (verb in ("update", "patch", "delete") and not name):
            raise ApiError(405, "MethodNotAllowed", "the server does not "
                           "allow this method on the requested resource")
        ctype = self.headers.get("Content-Type", "")
        if sub == "scale" and kind is DEPLOYMENTS:
            out = {"get": lambda: api.scale(ns, name),
                   "update": lambda: api.put_scale(ns, name, self._body()),
                   "patch": lambda: api.patch_scale(ns, name, ctype,
                                                    self._body())}
            if verb not in out:
                raise ApiError(405, "MethodNotAllowed", "scale: " + verb)
            self._send(200, out[verb]())
        elif sub == "status" and kind is DEPLOYMENTS and verb == "get":
            self._send(200, api.get(kind, ns, name))
        elif sub:
            raise ApiError(404, "NotFound", "the server could not find the "
                           "requested resource")
        elif verb == "watch":
            self._watch(kind, ns, q)
        elif verb == "list":
            out = api.list(kind, ns, q)
            if self._wants_table():
                out = table(kind, out["items"], out["metadata"][
                    "resourceVersion"])
            self._send(200, out)
        elif verb == "get":
            out = api.get(kind, ns, name)
            if self._wants_table():
                out = table(kind, [out], out["metadata"]["resourceVersion"])
            self._send(200, out)
        elif verb == "create":
            self._send(201, api.create(kind, ns, self._body()))
        elif verb == "update":
            self._send(200, api.update(kind, ns, name, self._body()))
        elif verb == "patch":
            self._send(200, api.patch(kind, ns, name, ctype, self._body()))
        elif verb == "delete":
            self._send(200, api.delete(kind, ns, name))

    def _wants_table(self):
        return "as=Table" in self.headers.get("Accept", "")

    def _watch(self, kind, ns, q):
        rv = q.get("resourceVersion") or ""
        if self.server.gone_as_status and rv.isdigit() and rv != "0":
            try:
                self.server.store.since(int(rv))
            except ApiError as e:
                log("watch of %s from %s: %d %s, the answer" % (
                    kind.plural, rv, e.code, e.reason))
                raise
        w = Watch(self.server.store, kind, ns, q, self._wants_table())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        drops = self.server.store.drops
        self.close_connection = True
        with self.server.store.lock:
            self.server.watches["started"] += 1
            self.server.watches["open"] += 1
        try:
            for ev in w.events():
                if ev is None:
                    continue
                line = json.dumps(ev).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            if self.server.store.drops != drops and self.server.abrupt:
                # a connection lost mid-stream: no last chunk
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:         # the client went away
            pass
        finally:
            with self.server.store.lock:
                self.server.watches["open"] -= 1

    # --- the stand-in's own controls ---

    def _control(self, method, parts, q):
        store = self.server.store
        if method == "POST" and parts == ["drop-watches"]:
            with store.lock:
                self.server.abrupt = truthy(q.get("abrupt"))
                store.drop_watches()
            self._send(200, {"dropped": True})
        elif method == "POST" and parts == ["compact"]:
            self.server.gone_as_status = q.get("answer") == "status"
            self._send(200, {"compactedTo": str(store.compact())})
        elif method == "POST" and parts == ["readiness"]:
            self.server.pods.hold_readiness(truthy(q.get("hold")))
            self._send(200, {"held": self.server.pods.held})
        elif method == "GET" and parts == ["watches"]:
            with store.lock:
                self._send(200, dict(self.server.watches))
        elif method == "GET" and parts == ["containers"]:
            self._send(200, {"containers": self.server.pods.container_ids()})
        else:
            raise ApiError(404, "NotFound", "no such stand-in control")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def tls_context(cert, key, client_ca):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if client_ca:
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="a stand-in for a "
                                 "Kubernetes API server, for hk's tests")
    ap.add_argument("-d", dest="dir", required=True)
    ap.add_argument("-c", dest="cert", required=True)
    ap.add_argument("-k", dest="key", required=True)
    ap.add_argument("-t", dest="token_file", required=True)
    ap.add_argument("-C", dest="client_ca")
    ap.add_argument("-p", dest="port", type=int, default=0)
    ap.add_argument("-v", dest="verbose", action="store_true")
    args = ap.parse_args()
    try:
        with open(args.token_file) as f:
            token = f.read().strip()
        ctx = tls_context(args.cert, args.key, args.client_ca)
        server = Server(("127.0.0.1", args.port), Handler)
    except OSError as e:
        log("fatal: unable to start: %s" % e)
        return 71
    if not token:
        log("fatal: %s: empty token" % args.token_file)
        return 78
    server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                    do_handshake_on_connect=False)
    server.token = token
    server.verbose = args.verbose
    server.abrupt = False
    server.gone_as_status = False
    server.watches = {"started": 0, "open": 0}
    server.address = "127.0.0.1:%d" % server.server_address[1]
    server.store = Store()
    instance = uuid.uuid4().hex[:16]
    server.pods = Pods(server.store, args.dir, instance)
    server.proxies = Proxies(server.store)
    server.api = Api(server.store, server.pods, server.proxies)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for name, text in (("instance", instance),
                       ("url", "https://" + server.address),
                       ("pid", str(os.getpid()))):
        with open(os.path.join(args.dir, name + ".new"), "w") as f:
            f.write(text + "\n")
        os.rename(os.path.join(args.dir, name + ".new"),
                  os.path.join(args.dir, name))
    log("listening at https://%s, instance %s" % (server.address, instance))
    server.serve_forever()
    server.pods.stop()
    server.proxies.close_all()
    server.store.drop_watches()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
