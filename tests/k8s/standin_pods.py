# standin_pods.py - the stand-in's controllers (see standin.py): what a
# cluster's Deployment, ReplicaSet, kubelet and EndpointSlice controllers
# do, for one pod per Deployment, with podman on loopback.
#
# A Deployment at replicas >= 1 whose template's first container has an
# image runs one pod: a podman container (slirp4netns, MACHINE-NOTES.md)
# published on a loopback address of its own, 127.77.X.Y, at each of its
# containerPorts, as a pod has an IP of its own; PORT is set to the first
# containerPort.  The pod is ready once that port accepts a TCP
# connection that slirp4netns does not close at once (nothing listening
# inside yet: _listens), and not ready once its container has exited.
# As a kubelet does: a container that cannot be made waits with a reason
# (ErrImagePull, then ImagePullBackOff, for an image podman cannot find
# or pull; CreateContainerConfigError for a missing Secret;
# RunContainerError), tried again after START_RETRY; one that exited
# waits in CrashLoopBackOff (lastState: its exit code) and is started
# again (podman start) after a back-off of 10 s, doubling to 300 s.
# A test may hold readiness (Pods.hold_readiness): a pod not
# ready yet stays so until released.
# A changed template rolls the Deployment as a real one does with one
# replica and maxSurge 1, maxUnavailable 0 (the defaults' 25%s round so
# too): a new pod is made beside the old one, which serves on; once the
# new one is ready (the slice says so first, both ready), the old one is
# terminating (not ready, still serving), then removed.  Replicas 0
# removes them.  Containers carry the label hk.k8s-standin=INSTANCE and
# are removed by ID.
#
# Each pod is also a Pod object (v1, read-only to clients): the labels of
# the template it was made from, status.podIP, phase, the Ready
# condition and containerStatuses (running, or terminated once its
# container exited).
#
# Each Service whose selector matches a pod's labels has one
# EndpointSlice (label kubernetes.io/service-name=SERVICE) listing those
# pods (targetRef: the Pod), address 127.77.X.Y, conditions
# ready/serving/terminating, the Service's ports resolved to the
# containerPorts.
import base64
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

from standin_kinds import (DEPLOYMENTS, PODS, SECRETS, SERVICES, SLICES,
                           labels_match, prepare, selector_string,
                           template_hash)
from standin_store import ApiError, now_rfc3339

TICK = 2.0              # seconds between looks at a settled pod
PROBE_TICK = 0.2        # between readiness probes of a starting pod
START_RETRY = 10.0      # after a pod that could not be created
HOLD = 0.3              # a readiness probe's connection held open
NODE = "standin-node"
BACKOFF = 10.0          # a kubelet's first back-off; doubling
BACKOFF_MAX = 300.0


def log(msg):
    print("standin: " + msg, file=sys.stderr, flush=True)


def _quantity(q):
    """A resource quantity ("512Mi", "1G", "500m", "2") as a number."""
    q = str(q)
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "m": 0.001}
    for suffix, mult in units.items():
        if q.endswith(suffix):
            return float(q[:-len(suffix)]) * mult
    return float(q)


def _listens(address, port):
    """The pod's process listens on port.  Not a bare connect: slirp4netns
    accepts on the published port before anything listens inside, then
    closes; a connection that stays open, silent, for HOLD seconds reached
    the process (one that closes it at once did not)."""
    try:
        s = socket.create_connection((address, port), 1)
    except OSError:
        return False
    try:
        s.settimeout(HOLD)
        return s.recv(1) != b""     # it spoke first: it is there
    except socket.timeout:
        return True
    except OSError:
        return False
    finally:
        s.close()


def _free_address(ports):
    """A loopback address 127.77.X.Y on which every port is free."""
    for _ in range(200):
        addr = "127.77.%d.%d" % (random.randint(0, 255),
                                 random.randint(1, 254))
        try:
            for p in ports:
                s = socket.socket()
                try:
                    s.bind((addr, p))
                finally:
                    s.close()
            return addr
        except OSError:
            continue
    raise OSError("no free loopback address for ports %s" % ports)


class Pod:
    def __init__(self, name, thash, cid, address, ports, sdir, labels):
        self.name = name
        self.labels = labels            # its template's
        self.terminating = False
        self.started = now_rfc3339()
        self.uid = str(uuid.uuid4())
        self.hash = thash
        self.cid = cid
        self.address = address
        self.ports = ports              # {name or str(port): port}
        self.secret_dir = sdir
        self.ready = False
        self.alive = True
        self.inspected = time.monotonic()
        self.argv = None
        self.template = None
        self.waiting = None             # (reason, message)
        self.exit_code = None           # lastState.terminated
        self.restarts = 0
        self.restart_at = None
        self.backoff = BACKOFF
        self.conmons = []               # pids, of each run and start


def _kill_conmon(pid, cid):
    """SIGKILL to pid if it is still the conmon of container cid (its
    command line names the ID), and to the processes it watches."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read()
    except OSError:
        return
    if b"conmon" not in cmd or cid.encode() not in cmd:
        return
    kids = []
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        pass
    log("container %s: its conmon %d outlived podman rm: killed" % (
        cid[:12], pid))
    for k in [pid] + kids:
        try:
            os.kill(k, signal.SIGKILL)
        except OSError:
            pass


class Pods:
    def __init__(self, store, workdir, instance):
        self.store = store
        self.workdir = workdir
        self.instance = instance
        self.lock = threading.Lock()
        self.pods = {}          # (ns, deployment) -> [Pod]
        self.wake = {}          # (ns, deployment) -> threading.Event
        self.workers = {}       # (ns, deployment) -> threading.Thread
        self.failed = {}        # (ns, deployment) -> monotonic time
        self.stopping = False
        self.held = False       # readiness held: no pod becomes ready
        self.published = {}     # (ns, deployment) -> {pod name: Pod}
        store.listeners.append(self._changed)

    # --- triggers: any change of a Deployment, Service or Secret ---

    def _changed(self, kind, etype, obj):
        if kind is DEPLOYMENTS:
            self.poke(obj["metadata"]["namespace"], obj["metadata"]["name"])
        elif kind in (SERVICES, SECRETS):
            ns = obj["metadata"]["namespace"]
            for (k, n, name) in list(self.store.objects):
                if k == DEPLOYMENTS.key and n == ns:
                    self.poke(n, name)

    def poke(self, ns, name):
        key = (ns, name)
        with self.lock:
            if self.stopping:
                return
            ev = self.wake.get(key)
            if ev is None:
                ev = self.wake[key] = threading.Event()
                t = self.workers[key] = threading.Thread(
                    target=self._work, args=(key, ev), daemon=True)
                t.start()
        ev.set()

    # --- one worker per Deployment ---

    def _work(self, key, ev):
        while not self.stopping:
            ev.wait(self._tick(key))
            ev.clear()
            with self.store.lock:
                dep = self.store.find(DEPLOYMENTS, *key)
                dep = json.loads(json.dumps(dep)) if dep else None
            try:
                self._reconcile(key, dep)
            except Exception as e:      # a worker must not die
                log("deployment %s/%s: %s" % (key[0], key[1], e))
            with self.lock:
                if dep is None and not self.pods.get(key):
                    del self.wake[key]
                    del self.workers[key]
                    return

    def _tick(self, key):
        pods = self.pods.get(key) or []
        return PROBE_TICK if any(p.alive and not p.ready for p in pods) \
            else TICK

    def _reconcile(self, key, dep):
        pods = self.pods.setdefault(key, [])
        want = dep is not None and dep["spec"].get("replicas", 0) >= 1
        if not want:
            # as a deleted pod: terminating (not ready) first, then gone
            if any(not p.terminating for p in pods):
                for p in pods:
                    p.terminating = True
                self._publish(key, dep, pods)
            for p in pods:
                self._remove(p)
            pods.clear()
            self._publish(key, dep, pods)
            return
        thash = template_hash(dep["spec"]["template"])
        new = next((p for p in pods if p.hash == thash), None)
        if new is None and self._may_start(key):
            new = self._start(key, dep, thash)
            if new:
                pods.append(new)
                self._publish(key, dep, pods)   # a pod, not ready yet
        elif new is not None and new.cid is None and self._may_start(key):
            self._run(key, new)                 # its image again
        for p in pods:
            self._check(p)
        olds = [p for p in pods if p is not new]
        if new and new.ready and olds:
            # the roll's end, in a real cluster's order: the new pod
            # ready beside the old ones, then those terminating, then gone
            self._publish(key, dep, pods)
            for old in olds:
                old.terminating = True
            self._publish(key, dep, pods)
            for old in olds:
                self._remove(old)
                pods.remove(old)
        self._publish(key, dep, pods)

    def _may_start(self, key):
        return time.monotonic() - self.failed.get(key, -START_RETRY) \
            >= START_RETRY

    def _check(self, p):
        """Alive (podman inspect, every TICK) and ready (TCP connect)."""
        if p.cid is None:
            return                      # waiting (_run), not ready
        if p.alive and time.monotonic() - p.inspected >= TICK:
            p.inspected = time.monotonic()
            r = subprocess.run(["podman", "inspect", "--format",
                                "{{.State.Running}} {{.State.ExitCode}}",
                                p.cid], capture_output=True, text=True)
            st = r.stdout.split()
            p.alive = st[:1] == ["true"]
            if not p.alive:
                p.exit_code = int(st[1]) if len(st) > 1 and \
                    st[1].lstrip("-").isdigit() else None
                self._crashed(p)
        elif not p.alive and p.restart_at is not None and \
                time.monotonic() >= p.restart_at and not p.terminating:
            self._restart(p)
        if not p.alive:
            p.ready = False
        elif not p.ready and not self.held:
            port = next(iter(p.ports.values()))
            if _listens(p.address, port):
                p.ready = True
                log("pod %s: ready at %s:%d" % (p.name, p.address, port))

    def _crashed(self, p):
        log("pod %s: container %s exited (%s)" % (
            p.name, p.cid[:12], p.exit_code))
        p.waiting = ("CrashLoopBackOff",
                     "back-off %ds restarting failed container=%s pod=%s"
                     % (p.backoff, "service", p.name))
        p.restart_at = time.monotonic() + p.backoff

    def _restart(self, p):
        r = subprocess.run(["podman", "start", p.cid], capture_output=True,
                           text=True)
        p.backoff = min(p.backoff * 2, BACKOFF_MAX)
        if r.returncode != 0:
            p.restart_at = time.monotonic() + p.backoff
            return
        self._note_conmon(p)
        p.restarts += 1
        p.alive = True
        p.waiting = None
        p.restart_at = None
        p.inspected = time.monotonic()
        log("pod %s: container %s started again (%d)" % (
            p.name, p.cid[:12], p.restarts))

    def hold_readiness(self, held):
        """Held: a pod not ready yet stays so (its readiness probe does
        not pass), as long as the test wants a start to last; released,
        the probes go on."""
        self.held = held
        log("readiness %s" % ("held" if held else "released"))
        if not held:
            for (ns, name) in list(self.pods):
                self.poke(ns, name)

    # --- podman ---

    def _start(self, key, dep, thash):
        ns, name = key
        tpl = dep["spec"]["template"]
        spec = tpl.get("spec") or {}
        c = spec["containers"][0]
        ports = {p.get("name") or str(p["containerPort"]): p["containerPort"]
                 for p in c.get("ports") or [] if p.get("containerPort")}
        if not c.get("image") or not ports:
            return None
        podname = "%s-%s-%s" % (name, thash, uuid.uuid4().hex[:5])
        labels = dict((tpl.get("metadata") or {}).get("labels") or {})
        labels["pod-template-hash"] = thash
        try:
            address = _free_address(list(ports.values()))
        except OSError as e:
            self.failed[key] = time.monotonic()
            log("pod %s: cannot start: %s" % (podname, e))
            return None
        p = Pod(podname, thash, None, address, ports,
                os.path.join(self.workdir, "pods", podname), labels)
        p.alive = False
        p.template = tpl
        self._run(key, p)
        return p

    def _run(self, key, p):
        """Its container run; else the reason it waits, as a kubelet's."""
        ns = key[0]
        tpl = p.template
        spec = tpl.get("spec") or {}
        c = spec["containers"][0]
        try:
            sdir, mounts = self._secret_volumes(ns, p.name, spec, c)
            argv = self._run_argv(ns, p.name, tpl, c, p.ports, p.address,
                                  mounts)
        except ApiError as e:
            self._waits(key, p, "CreateContainerConfigError", e.message)
            return
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or ["exit %d" %
                                                     r.returncode])[-1]
            # podman run -d leaves no container when it cannot make one
            if subprocess.run(["podman", "image", "exists", c["image"]],
                              capture_output=True).returncode != 0:
                if p.waiting and p.waiting[0] in ("ErrImagePull",
                                                  "ImagePullBackOff"):
                    self._waits(key, p, "ImagePullBackOff",
                                'Back-off pulling image "%s"' % c["image"])
                else:
                    self._waits(key, p, "ErrImagePull",
                                'failed to pull image "%s": %s'
                                % (c["image"], why))
            else:
                self._waits(key, p, "RunContainerError", why)
            return
        p.cid = r.stdout.strip().splitlines()[-1]
        self._note_conmon(p)
        p.alive = True
        p.waiting = None
        p.inspected = time.monotonic()
        log("pod %s: container %s at %s" % (p.name, p.cid[:12], p.address))

    def _waits(self, key, p, reason, message):
        self.failed[key] = time.monotonic()
        p.waiting = (reason, message)
        log("pod %s: cannot start: %s: %s" % (p.name, reason, message))

    def _run_argv(self, ns, podname, tpl, c, ports, address, mounts):
        spec = tpl.get("spec") or {}
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nofile = min(nofile, 20000) if nofile > 0 else 20000
        argv = ["podman", "run", "-d", "--health-cmd", "none",
                "--label", "hk.k8s-standin=" + self.instance,
                "--label", "hk.k8s-standin.pod=%s/%s" % (ns, podname),
                "--hostname", podname[:63],
                "--ulimit", "nofile=%d:%d" % (nofile, nofile),
                "--ulimit", "nproc=1024:1024",
                "--tmpfs", "/tmp:rw,notmpcopyup",
                "--network", "slirp4netns:port_handler=slirp4netns"]
        for p in ports.values():
            argv += ["-p", "%s:%d:%d" % (address, p, p)]
        env = {"PORT": str(next(iter(ports.values())))}
        for e in c.get("env") or []:
            env[e["name"]] = self._env_value(ns, e)
        for k, v in env.items():
            argv += ["-e", "%s=%s" % (k, v)]
        sc = dict(spec.get("securityContext") or {})
        sc.update(c.get("securityContext") or {})
        if "runAsUser" in sc:
            argv += ["--user", "%d:%d" % (sc["runAsUser"],
                                          sc.get("runAsGroup",
                                                 sc["runAsUser"]))]
        if sc.get("allowPrivilegeEscalation") is False:
            argv += ["--security-opt", "no-new-privileges"]
        if sc.get("readOnlyRootFilesystem"):
            argv += ["--read-only"]
        limits = (c.get("resources") or {}).get("limits") or {}
        if "memory" in limits:
            argv += ["--memory", str(int(_quantity(limits["memory"])))]
        if "cpu" in limits:
            argv += ["--cpus", "%g" % _quantity(limits["cpu"])]
        for src, dst in mounts:
            argv += ["-v", "%s:%s:ro" % (src, dst)]
        if c.get("command"):
            argv += ["--entrypoint", json.dumps(c["command"])]
        argv.append(c["image"])
        argv += c.get("args") or []
        return argv

    def _env_value(self, ns, e):
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if not ref:
            return e.get("value", "")
        data = self._secret_data(ns, ref["name"])
        if ref["key"] not in data:
            raise ApiError(404, "NotFound", 'secret "%s" has no key "%s"'
                           % (ref["name"], ref["key"]))
        return data[ref["key"]].decode()

    def _secret_data(self, ns, name):
        with self.store.lock:
            sec = self.store.find(SECRETS, ns, name)
            if sec is None:
                raise ApiError(404, "NotFound", 'secret "%s" not found'
                               % name)
            return {k: base64.b64decode(v) for k, v in
                    (sec.get("data") or {}).items()}

    def _secret_volumes(self, ns, podname, spec, c):
        """Each secret volume the container mounts, as files in a
        directory of the pod's own, bind-mounted read-only."""
        vols = {v["name"]: v["secret"]["secretName"]
                for v in spec.get("volumes") or [] if v.get("secret")}
        sdir = os.path.join(self.workdir, "pods", podname)
        mounts = []
        for m in c.get("volumeMounts") or []:
            if m["name"] not in vols:
                continue
            vdir = os.path.join(sdir, m["name"])
            os.makedirs(vdir, mode=0o755, exist_ok=True)
            os.chmod(sdir, 0o755)
            for k, v in self._secret_data(ns, vols[m["name"]]).items():
                path = os.path.join(vdir, k)
                with open(path, "wb") as f:
                    f.write(v)
                os.chmod(path, 0o644)
            mounts.append((vdir, m["mountPath"]))
        return sdir, mounts

    def _note_conmon(self, p):
        """The pid of its container's conmon: what _remove kills if
        podman leaves it (a start and a remove that crossed)."""
        r = subprocess.run(["podman", "inspect", "--format",
                            "{{.State.ConmonPid}}", p.cid],
                           capture_output=True, text=True)
        pid = r.stdout.strip()
        if pid.isdigit() and int(pid) > 0:
            p.conmons.append(int(pid))

    def _remove(self, p):
        r = subprocess.run(["podman", "rm", "-f", "-t", "5", p.cid],
                           capture_output=True, text=True) if p.cid else None
        if r and r.returncode != 0 and "no such container" not in r.stderr:
            log("pod %s: podman rm %s: %s" % (p.name, p.cid[:12],
                                              r.stderr.strip()))
        for pid in p.conmons:
            _kill_conmon(pid, p.cid)
        subprocess.run(["rm", "-rf", p.secret_dir])
        log("pod %s: removed" % p.name)

    def container_ids(self):
        r = subprocess.run(["podman", "ps", "-aq", "--no-trunc", "--filter",
                            "label=hk.k8s-standin=" + self.instance],
                           capture_output=True, text=True)
        return r.stdout.split()

    def stop(self):
        """SIGTERM: every container of this stand-in, by ID."""
        with self.lock:
            self.stopping = True
            workers = list(self.workers.values())
        for ev in list(self.wake.values()):
            ev.set()
        # A worker in the middle of a podman run or start finishes it
        # first: a remove that crossed it would leave a conmon behind.
        for t in workers:
            t.join(60)
        for pods in list(self.pods.values()):
            for p in pods:
                self._remove(p)
        for cid in self.container_ids():     # one a worker was starting
            subprocess.run(["podman", "rm", "-f", "-t", "5", cid],
                           capture_output=True)

    # --- what the cluster shows: Deployment status, EndpointSlices ---

    def _publish(self, key, dep, pods):
        with self.store.lock:
            if dep is not None:
                self._deployment_status(key, pods)
            self._pod_objects(key, dep, pods)
            self._slices(key, pods)

    def _pod_objects(self, key, dep, pods):
        """Each pod as a Pod object: made, brought up to date, deleted
        once the pod is gone."""
        ns = key[0]
        had = self.published.setdefault(key, {})
        for name in [n for n in had if not any(p.name == n for p in pods)]:
            del had[name]
            try:
                self.store.delete(PODS, ns, name)
            except ApiError:
                pass
        for p in pods:
            obj = prepare(PODS, self._pod_object(key, dep, p))
            if p.name in had:
                cur = self.store.find(PODS, ns, p.name)
                if cur is not None:
                    obj["metadata"]["resourceVersion"] = cur["metadata"][
                        "resourceVersion"]
                    self.store.replace(PODS, ns, obj)
                    continue
            had[p.name] = p
            p.uid = self.store.create(PODS, ns, obj)["metadata"]["uid"]

    def _pod_object(self, key, dep, p):
        ns, name = key
        if p.waiting:
            state = {"waiting": {"reason": p.waiting[0],
                                 "message": p.waiting[1]}}
        elif p.alive:
            state = {"running": {"startedAt": p.started}}
        else:
            state = {"terminated": {"exitCode": p.exit_code or 0,
                                    "reason": "Error",
                                    "startedAt": p.started}}
        last = {}
        if p.exit_code is not None:
            last = {"terminated": {"exitCode": p.exit_code,
                                   "reason": "Error" if p.exit_code
                                   else "Completed"}}
        ready = "True" if p.ready and not p.terminating else "False"
        c = {}
        if dep is not None:
            c = dep["spec"]["template"]["spec"]["containers"][0]
        meta = {"name": p.name, "labels": dict(p.labels),
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "%s-%s" % (name, p.hash),
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s-%s" % (
                        ns, name, p.hash))),
                    "controller": True, "blockOwnerDeletion": True}]}
        if p.terminating:
            meta["deletionTimestamp"] = now_rfc3339()
        return {"metadata": meta,
                "spec": {"containers": [{"name": c.get("name", "c"),
                                         "image": c.get("image", "")}],
                         "nodeName": NODE},
                "status": {
                    "phase": "Pending" if p.cid is None else "Running",
                    "podIP": p.address, "hostIP": "127.0.0.1",
                    "conditions": [
                        {"type": "Ready", "status": ready},
                        {"type": "ContainersReady", "status": ready}],
                    "containerStatuses": [{
                        "name": c.get("name", "c"),
                        "image": c.get("image", ""), "ready": p.ready,
                        "started": p.alive, "restartCount": p.restarts,
                        "state": state, "lastState": last}]}}

    def _deployment_status(self, key, pods):
        cur = self.store.find(DEPLOYMENTS, *key)
        if cur is None:
            return
        obj = json.loads(json.dumps(cur))
        thash = template_hash(obj["spec"]["template"])
        ready = sum(1 for p in pods if p.ready)
        updated = sum(1 for p in pods if p.hash == thash)
        want = obj["spec"].get("replicas", 0)
        avail = ready >= min(want, 1)
        st = {"observedGeneration": obj["metadata"].get("generation", 1),
              "replicas": len(pods), "updatedReplicas": updated,
              "readyReplicas": ready, "availableReplicas": ready,
              "conditions": [
                  {"type": "Available",
                   "status": "True" if avail else "False",
                   "reason": "MinimumReplicasAvailable" if avail
                   else "MinimumReplicasUnavailable"},
                  {"type": "Progressing", "status": "True",
                   "reason": "NewReplicaSetAvailable"
                   if updated == ready == min(want, 1)
                   else "ReplicaSetUpdated"}]}
        if len(pods) - ready:
            st["unavailableReplicas"] = len(pods) - ready
        for k in ("readyReplicas", "availableReplicas", "updatedReplicas",
                  "replicas"):
            if not st[k]:
                del st[k]
        old = obj.get("status") or {}
        for c in old.get("conditions") or []:      # keep their times
            for n in st["conditions"]:
                if n["type"] == c["type"] and n["status"] == c["status"]:
                    n["lastTransitionTime"] = c.get("lastTransitionTime")
        for n in st["conditions"]:
            n.setdefault("lastTransitionTime", now_rfc3339())
            n["lastUpdateTime"] = n["lastTransitionTime"]
        if st != old:
            obj["status"] = st
            self.store.replace(DEPLOYMENTS, key[0], obj)

    def _slices(self, key, pods):
        ns, name = key
        dep = self.store.find(DEPLOYMENTS, ns, name)
        labels = {}
        if dep:
            labels = ((dep["spec"]["template"].get("metadata") or {})
                      .get("labels") or {})
        for svc in self.store.list(SERVICES, ns)[0]:
            sel = (svc.get("spec") or {}).get("selector")
            if not sel or not dep or not labels_match(
                    {"metadata": {"labels": labels}}, selector_string(sel)):
                continue
            self.sync_slice(svc, dep, [
                p for p in pods if labels_match({"metadata": {
                    "labels": p.labels}}, selector_string(sel))])

    def sync_slice(self, svc, dep, pods):
        """The Service's EndpointSlice, made if missing, with the pods."""
        ns = svc["metadata"]["namespace"]
        sname = svc["metadata"]["name"]
        slices = [s for s in self.store.list(SLICES, ns)[0]
                  if s["metadata"].get("labels", {}).get(
                      "kubernetes.io/service-name") == sname]
        obj = slices[0] if slices else self._new_slice(svc)
        c = dep["spec"]["template"]["spec"]["containers"][0] if dep else {}
        named = {p.get("name"): p["containerPort"]
                 for p in c.get("ports") or [] if p.get("name")}
        ports = []
        for p in (svc.get("spec") or {}).get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            if isinstance(target, str):
                target = named.get(target)
            if target is None:          # a name no container port has
                continue
            ports.append({"name": p.get("name", ""), "port": target,
                          "protocol": p.get("protocol", "TCP")})
        obj["ports"] = ports
        obj["endpoints"] = [{
            "addresses": [p.address],
            "conditions": {"ready": p.ready and not p.terminating,
                           "serving": p.ready,
                           "terminating": p.terminating},
            "targetRef": {"kind": "Pod", "namespace": ns, "name": p.name,
                          "uid": p.uid},
            "nodeName": (dep["spec"]["template"]["spec"].get("nodeName")
                         or NODE)} for p in pods]
        if slices:
            self.store.replace(SLICES, ns, obj)
        else:
            self.store.create(SLICES, ns, obj)

    def _new_slice(self, svc):
        sname = svc["metadata"]["name"]
        obj = {"metadata": {
            "generateName": sname + "-",
            "labels": {"kubernetes.io/service-name": sname,
                       "endpointslice.kubernetes.io/managed-by":
                       "endpointslice-controller.k8s.io"},
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Service", "name": sname,
                "uid": svc["metadata"]["uid"], "controller": True,
                "blockOwnerDeletion": True}]},
            "addressType": "IPv4", "endpoints": []}
        return prepare(SLICES, obj)
