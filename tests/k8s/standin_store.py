# standin_store.py - the stand-in's storage (see standin.py): every object
# of every resource in one dict, one global resourceVersion counter as
# etcd's revision, a bounded history of changes for watches, and the
# Status objects of the API's errors.  One lock guards it all; watches
# wait on its condition.
import collections
import copy
import datetime
import json
import threading
import uuid

# How many changes a watch may resume across; older resourceVersions are
# 410 Gone, as a real server's compacted etcd history.
HISTORY = 100


class ApiError(Exception):
    """An error the API answers with a Status object."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details


def status_object(code, reason, message, details=None):
    """A meta/v1 Status, as the API server writes its errors."""
    # in the order of the API server's own
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
          "status": "Success" if code < 400 else "Failure"}
    if code >= 400:
        st["message"] = message
        st["reason"] = reason
    if details:
        st["details"] = details
    st["code"] = code
    return st


def not_found(kind, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (kind.qualified,
                    name), {"name": name, "group": kind.group,
                            "kind": kind.plural})


def gone(rv, oldest):
    return ApiError(410, "Expired", "too old resource version: %s (%s)"
                    % (rv, oldest))


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


class Change:
    """One entry of the history: the object as the change left it."""

    def __init__(self, rv, kind, etype, obj):
        self.rv = rv
        self.kind = kind
        self.type = etype
        self.obj = obj


class Store:
    def __init__(self):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.objects = {}       # (kind.key, namespace, name) -> object
        self.rv = 0             # the last resourceVersion handed out
        self.history = collections.deque()
        self.compacted = 0      # no watch can resume from before this
        self.drops = 0          # bumped to end every open watch
        self.listeners = []     # fn(kind, etype, obj), under the lock

    # --- reading ---

    def get(self, kind, ns, name):
        with self.lock:
            obj = self.objects.get((kind.key, ns, name))
            if obj is None:
                raise not_found(kind, name)
            return copy.deepcopy(obj)

    def find(self, kind, ns, name):
        """The object or None, no copy: for the stand-in's own use."""
        return self.objects.get((kind.key, ns, name))

    def list(self, kind, ns=None):
        with self.lock:
            items = [copy.deepcopy(o) for (k, n, _), o in
                     sorted(self.objects.items())
                     if k == kind.key and (ns is None or n == ns)]
            return items, str(self.rv)

    # --- writing: each change takes the next resourceVersion ---

    def _record(self, kind, etype, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append(Change(self.rv, kind, etype,
                                   copy.deepcopy(obj)))
        while len(self.history) > HISTORY:
            self.compacted = self.history.popleft().rv
        for fn in self.listeners:
            fn(kind, etype, obj)
        self.changed.notify_all()

    def create(self, kind, ns, obj):
        with self.lock:
            name = obj["metadata"]["name"]
            if (kind.key, ns, name) in self.objects:
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists'
                               % (kind.qualified, name),
                               {"name": name, "group": kind.group,
                                "kind": kind.plural})
            meta = obj["metadata"]
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if kind.namespaced:
                meta["namespace"] = ns
            self.objects[(kind.key, ns, name)] = obj
            self._record(kind, "ADDED", obj)
            return copy.deepcopy(obj)

    def replace(self, kind, ns, obj, expect_rv=None):
        """Replace the stored object; a stale expect_rv is a Conflict."""
        with self.lock:
            name = obj["metadata"]["name"]
            old = self.objects.get((kind.key, ns, name))
            if old is None:
                raise not_found(kind, name)
            if expect_rv and expect_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(
                    409, "Conflict", 'Operation cannot be fulfilled on %s '
                    '"%s": the object has been modified; please apply your '
                    'changes to the latest version and try again'
                    % (kind.qualified, name),
                    {"name": name, "group": kind.group, "kind": kind.plural})
            for key in ("uid", "creationTimestamp", "namespace"):
                if key in old["metadata"]:
                    obj["metadata"][key] = old["metadata"][key]
            if json.dumps(obj, sort_keys=True) == json.dumps(
                    old, sort_keys=True):
                return copy.deepcopy(old)       # no change, no new version
            self.objects[(kind.key, ns, name)] = obj
            self._record(kind, "MODIFIED", obj)
            return copy.deepcopy(obj)

    def delete(self, kind, ns, name):
        with self.lock:
            obj = self.objects.pop((kind.key, ns, name), None)
            if obj is None:
                raise not_found(kind, name)
            self._record(kind, "DELETED", obj)
            return copy.deepcopy(obj)

    # --- watching ---

    def since(self, rv):
        """The changes after rv; 410 Gone if history no longer has them."""
        with self.lock:
            if rv < self.compacted:
                raise gone(rv, self.compacted)
            return [c for c in self.history if c.rv > rv]

    def compact(self):
        """Forget the whole history: every older watch start is 410."""
        with self.lock:
            self.history.clear()
            self.compacted = self.rv
            self.changed.notify_all()
            return self.rv

    def drop_watches(self):
        with self.lock:
            self.drops += 1
            self.changed.notify_all()
