# standin_kinds.py - what the stand-in (standin.py) knows of each resource:
# its group, version, kind and verbs (the discovery documents kubectl
# reads), defaults and the validation a real server would refuse a
# request for, label and field selectors, the three patch types, and the
# Table that kubectl's human-readable output asks for.
import base64
import copy
import datetime
import hashlib
import json
import os
import re

from standin_store import ApiError

ALL_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


class Kind:
    def __init__(self, group, version, plural, kind, namespaced=True,
                 verbs=ALL_VERBS, short=(), subresources=()):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.verbs = list(verbs)
        self.short = list(short)
        self.subresources = subresources     # (name, group, version, kind)
        self.key = (group, plural)
        # "deployments.apps", as a real server names a resource in messages
        self.qualified = plural + ("." + group if group else "")

    @property
    def api_version(self):
        return self.group + "/" + self.version if self.group else self.version


KINDS = [
    Kind("", "v1", "namespaces", "Namespace", namespaced=False,
         verbs=["create", "get", "list", "watch"], short=["ns"]),
    Kind("", "v1", "services", "Service", short=["svc"]),
    Kind("", "v1", "secrets", "Secret"),
    # core v1 events: a read-only view of the events.k8s.io/v1 ones
    Kind("", "v1", "events", "Event", verbs=["get", "list", "watch"],
         short=["ev"]),
    # pods: the stand-in's controller writes them, clients only read
    Kind("", "v1", "pods", "Pod", verbs=["get", "list", "watch"],
         short=["po"]),
    Kind("apps", "v1", "deployments", "Deployment", short=["deploy"],
         subresources=(("scale", "autoscaling", "v1", "Scale"),
                       ("status", "apps", "v1", "Deployment"))),
    Kind("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    Kind("events.k8s.io", "v1", "events", "Event", short=["ev"]),
]
KIND_BY_PATH = {(k.group, k.version, k.plural): k for k in KINDS}
DEPLOYMENTS = KIND_BY_PATH[("apps", "v1", "deployments")]
SLICES = KIND_BY_PATH[("discovery.k8s.io", "v1", "endpointslices")]
SERVICES = KIND_BY_PATH[("", "v1", "services")]
SECRETS = KIND_BY_PATH[("", "v1", "secrets")]
PODS = KIND_BY_PATH[("", "v1", "pods")]
NAMESPACES = KIND_BY_PATH[("", "v1", "namespaces")]
EVENTS = KIND_BY_PATH[("events.k8s.io", "v1", "events")]
CORE_EVENTS = KIND_BY_PATH[("", "v1", "events")]

# --- discovery ---


def resource_list(group, version):
    """The APIResourceList of /api/v1 or /apis/GROUP/VERSION."""
    kinds = [k for k in KINDS if k.group == group and k.version == version]
    if not kinds:
        return None
    res = []
    for k in kinds:
        res.append({"name": k.plural, "singularName": k.kind.lower(),
                    "namespaced": k.namespaced, "kind": k.kind,
                    "verbs": k.verbs, "shortNames": k.short})
        for sub, sgroup, sversion, skind in k.subresources:
            res.append({"name": k.plural + "/" + sub, "singularName": "",
                        "namespaced": k.namespaced, "group": sgroup,
                        "version": sversion, "kind": skind,
                        "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": kinds[0].api_version, "resources": res}


def group_list():
    groups = sorted({k.group for k in KINDS if k.group})
    out = []
    for g in groups:
        gv = {"groupVersion": g + "/v1", "version": "v1"}
        out.append({"name": g, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


# --- selectors: equality-based labels (a=b, a==b, a!=b, a, !a) and
# fields (dotted paths, = == !=), as kubectl and the clients send them ---


def _terms(selector):
    for term in filter(None, (t.strip() for t in (selector or "").split(
            ","))):
        m = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", term)
        if m:
            yield m.group(1).strip(), m.group(2), m.group(3).strip()
        elif term.startswith("!"):
            yield term[1:].strip(), "absent", None
        elif " in " in term or " notin " in term:
            raise ApiError(400, "BadRequest", "unable to parse requirement: "
                           "set-based selectors are not served by the "
                           "stand-in: " + term)
        else:
            yield term, "exists", None


def _term_ok(value, op, want):
    if op == "exists":
        return value is not None
    if op == "absent":
        return value is None
    if op == "!=":
        return value != want
    return value == want


def labels_match(obj, selector):
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(_term_ok(labels.get(k), op, v) for k, op, v in
               _terms(selector))


def _field(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return None if obj is None else str(obj)


def fields_match(obj, selector):
    return all(_term_ok(_field(obj, k), op, v) for k, op, v in
               _terms(selector))


def selector_string(match_labels):
    return ",".join("%s=%s" % kv for kv in sorted(match_labels.items()))


# --- patches ---


def merge_patch(target, patch, strategic=False):
    """RFC 7386 merge patch; strategic also merges lists of objects that
    carry a "name" (containers, env, ports, volumes) element by element,
    which is what kubectl patch needs of a pod template."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, val in patch.items():
        if key.startswith("$"):
            continue
        if val is None:
            out.pop(key, None)
        elif (strategic and isinstance(val, list) and
              isinstance(out.get(key), list) and
              all(isinstance(v, dict) and "name" in v for v in val)):
            out[key] = _merge_named(out[key], val)
        else:
            out[key] = merge_patch(out.get(key), val, strategic)
    return out


def _merge_named(old, new):
    by_name = {e.get("name"): e for e in old if isinstance(e, dict)}
    merged = list(old)
    for e in new:
        if e.get("$patch") == "delete":
            merged = [m for m in merged if m.get("name") != e["name"]]
        elif e["name"] in by_name:
            i = merged.index(by_name[e["name"]])
            merged[i] = merge_patch(merged[i], e, True)
        else:
            merged.append(e)
    return merged


def json_patch(target, ops):
    """RFC 6902: add, replace, remove, test (what clients send)."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~")
                 for p in op["path"].split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else \
                parent.setdefault(p, {})
        last = parts[-1]
        if isinstance(parent, list):
            last = len(parent) if last == "-" else int(last)
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list) and op["op"] == "add":
                parent.insert(last, op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[last]
        elif op["op"] == "test":
            if parent[last] != op["value"]:
                raise ApiError(422, "Invalid", "test operation failed: "
                               + op["path"])
        else:
            raise ApiError(422, "Invalid", "unsupported patch operation: "
                           + op["op"])
    return doc


def apply_patch(obj, content_type, patch):
    ctype = (content_type or "").split(";")[0].strip()
    if ctype == "application/json-patch+json":
        return json_patch(obj, patch)
    if ctype == "application/merge-patch+json":
        return merge_patch(obj, patch)
    if ctype == "application/strategic-merge-patch+json":
        return merge_patch(obj, patch, strategic=True)
    raise ApiError(415, "UnsupportedMediaType", "the body of the request "
                   "was in an unknown format - accepted media types "
                   "include: application/json-patch+json, "
                   "application/merge-patch+json, "
                   "application/strategic-merge-patch+json")


# --- defaults and validation, per kind ---

NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def invalid(kind, name, field, reason, message):
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s: %s' % (
        kind.kind + ("." + kind.group if kind.group else ""), name, field,
        message), {"name": name, "group": kind.group, "kind": kind.kind,
                   "causes": [{"reason": reason, "message": message,
                               "field": field}]})


def template_hash(template):
    """pod-template-hash: the name of a revision's pods, as a
    Deployment's ReplicaSets are named."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()
                          ).hexdigest()[:10]


def prepare(kind, obj, name_from_path=None):
    """Defaults and validation before a create or an update."""
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + base64.b32encode(
            os.urandom(5)).decode().lower()[:5]
    name = meta.get("name") or ""
    if name_from_path and name != name_from_path:
        raise ApiError(400, "BadRequest", "the name of the object (%s) does "
                       "not match the name on the URL (%s)"
                       % (name, name_from_path))
    if not name:
        raise invalid(kind, name, "metadata.name", "FieldValueRequired",
                      "Required value: name or generateName is required")
    if not NAME_RE.fullmatch(name) or len(name) > 253:
        raise invalid(kind, name, "metadata.name", "FieldValueInvalid",
                      "Invalid value: \"%s\": a lowercase RFC 1123 "
                      "subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.'" % name)
    obj["apiVersion"] = kind.api_version
    obj["kind"] = kind.kind
    PREPARE.get(kind.key, lambda o, n: None)(obj, name)
    return obj


def _prepare_deployment(obj, name):
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": "25%", "maxUnavailable": "25%"}})
    sel = (spec.get("selector") or {}).get("matchLabels")
    if not sel:
        raise invalid(DEPLOYMENTS, name, "spec.selector",
                      "FieldValueRequired", "Required value")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get(
        "labels") or {}
    if any(labels.get(k) != v for k, v in sel.items()):
        raise invalid(DEPLOYMENTS, name, "spec.template.metadata.labels",
                      "FieldValueInvalid", "Invalid value: %s: `selector` "
                      "does not match template `labels`" % json.dumps(labels))
    containers = ((spec["template"].get("spec") or {}).get("containers")
                  or [])
    if not containers:
        raise invalid(DEPLOYMENTS, name, "spec.template.spec.containers",
                      "FieldValueRequired", "Required value")
    if not isinstance(spec["replicas"], int) or spec["replicas"] < 0:
        raise invalid(DEPLOYMENTS, name, "spec.replicas",
                      "FieldValueInvalid", "Invalid value: %r: must be "
                      "greater than or equal to 0" % spec["replicas"])
    obj.setdefault("status", {})


def _prepare_secret(obj, name):
    data = obj.get("data") or {}
    for k, v in (obj.pop("stringData", None) or {}).items():
        data[k] = base64.b64encode(v.encode()).decode()
    for k, v in data.items():
        try:
            base64.b64decode(v, validate=True)
        except ValueError:
            raise invalid(SECRETS, name, "data[%s]" % k, "FieldValueInvalid",
                          "Invalid value: illegal base64 data")
    obj["data"] = data
    obj.setdefault("type", "Opaque")


def _prepare_service(obj, name):
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    # spec.clusterIP: allocated at create (standin_proxy.py), kept after
    for p in spec.get("ports") or []:
        p.setdefault("protocol", "TCP")
        p.setdefault("targetPort", p.get("port"))


def _prepare_event(obj, name):
    for field in ("eventTime", "reason", "action", "reportingController",
                  "reportingInstance"):
        if not obj.get(field):
            raise invalid(EVENTS, name, field, "FieldValueRequired",
                          "Required value")
    obj.setdefault("type", "Normal")


def _prepare_slice(obj, name):
    if obj.get("addressType") not in ("IPv4", "IPv6", "FQDN"):
        raise invalid(SLICES, name, "addressType", "FieldValueRequired",
                      "Required value")
    obj.setdefault("endpoints", [])


PREPARE = {
    DEPLOYMENTS.key: _prepare_deployment,
    SECRETS.key: _prepare_secret,
    SERVICES.key: _prepare_service,
    EVENTS.key: _prepare_event,
    SLICES.key: _prepare_slice,
}


def core_event(ev):
    """An events.k8s.io/v1 Event as core v1 shows it (kubectl describe)."""
    out = {"apiVersion": "v1", "kind": "Event",
           "metadata": copy.deepcopy(ev["metadata"]),
           "involvedObject": ev.get("regarding") or {},
           "reason": ev.get("reason"), "message": ev.get("note", ""),
           "type": ev.get("type"), "eventTime": ev.get("eventTime"),
           "action": ev.get("action"),
           "reportingComponent": ev.get("reportingController"),
           "reportingInstance": ev.get("reportingInstance"),
           "source": {"component": ev.get("reportingController")},
           "firstTimestamp": None, "lastTimestamp": None, "count": 1}
    return out


# --- Table: kubectl's human-readable output asks the server for rows ---


def _age(obj):
    ts = obj.get("metadata", {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)
    s = int((datetime.datetime.now(datetime.timezone.utc) - t
             ).total_seconds())
    return "%ds" % s if s < 120 else "%dm" % (s // 60) if s < 7200 else \
        "%dh" % (s // 3600)


def _cols_deployment(o):
    st = o.get("status") or {}
    return [("Ready", "%d/%d" % (st.get("readyReplicas", 0),
                                 o["spec"].get("replicas", 0))),
            ("Up-to-date", st.get("updatedReplicas", 0)),
            ("Available", st.get("availableReplicas", 0))]


def _cols_slice(o):
    eps = o.get("endpoints") or []
    addrs = [a for e in eps for a in e.get("addresses", [])]
    ports = [str(p.get("port")) for p in o.get("ports") or []]
    return [("AddressType", o.get("addressType", "")),
            ("Ports", ",".join(ports) or "<unset>"),
            ("Endpoints", ",".join(addrs) or "<unset>"),
            ("Ready", ",".join(
                str(bool((e.get("conditions") or {}).get("ready"))).lower()
                for e in eps) or "<none>")]


def _cols_event(o):
    reg = o.get("regarding") or o.get("involvedObject") or {}
    return [("Type", o.get("type", "")), ("Reason", o.get("reason", "")),
            ("Object", "%s/%s" % (reg.get("kind", "").lower(),
                                  reg.get("name", ""))),
            ("Note", o.get("note", o.get("message", "")))]


def _cols_secret(o):
    return [("Type", o.get("type", "")),
            ("Data", len(o.get("data") or {}))]


def _cols_service(o):
    spec = o.get("spec") or {}
    return [("Type", spec.get("type", "")),
            ("Cluster-IP", spec.get("clusterIP", "")),
            ("Ports", ",".join("%s/%s" % (p.get("port"), p.get("protocol"))
                               for p in spec.get("ports") or []))]


def _cols_pod(o):
    st = o.get("status") or {}
    cs = st.get("containerStatuses") or []
    ready = sum(1 for c in cs if c.get("ready"))
    reason = st.get("phase", "")
    for c in cs:
        w = (c.get("state") or {}).get("waiting")
        if w:
            reason = w.get("reason", reason)
    return [("Ready", "%d/%d" % (ready, len(cs))), ("Status", reason),
            ("IP", st.get("podIP", ""))]


COLUMNS = {
    PODS.key: _cols_pod,
    DEPLOYMENTS.key: _cols_deployment, SLICES.key: _cols_slice,
    EVENTS.key: _cols_event, CORE_EVENTS.key: _cols_event,
    SECRETS.key: _cols_secret, SERVICES.key: _cols_service,
}


def table(kind, objects, rv):
    cols = COLUMNS.get(kind.key, lambda o: [])
    sample = cols(objects[0]) if objects else cols(
        {"spec": {}, "status": {}})
    defs = [{"name": "Name", "type": "string", "format": "name",
             "description": "Name", "priority": 0}]
    defs += [{"name": n, "type": "string", "format": "", "description": n,
              "priority": 0} for n, _ in sample]
    defs.append({"name": "Age", "type": "string", "format": "",
                 "description": "Age", "priority": 0})
    rows = []
    for o in objects:
        meta = {"kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
        rows.append({"cells": [o["metadata"]["name"]] +
                     [v for _, v in cols(o)] + [_age(o)], "object": meta})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": rv}, "columnDefinitions": defs,
            "rows": rows}
