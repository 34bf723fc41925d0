# standin_proxy.py - what kube-proxy does for the stand-in (standin.py):
# a Service of type ClusterIP gets a cluster IP of its own when created,
# on loopback, 127.78.X.Y (a real cluster's service CIDR is not routable
# here), kept as long as it lives (spec.clusterIP cannot change); each of
# its ports listens there, and a connection is forwarded to a ready
# endpoint of the Service's EndpointSlices (the slice's port of the same
# name), the first one listed; with none ready the connection is closed
# at once (kube-proxy rejects it).  A headless Service (clusterIP "None")
# gets neither.  Deleting the Service closes its listeners.
import random
import socket
import sys
import threading

from standin_kinds import SERVICES, SLICES

BACKLOG = 64
CHUNK = 65536


def log(msg):
    print("standin: " + msg, file=sys.stderr, flush=True)


def _free_ip(ports):
    for _ in range(200):
        ip = "127.78.%d.%d" % (random.randint(0, 255), random.randint(1, 254))
        try:
            for p in ports:
                s = socket.socket()
                try:
                    s.bind((ip, p))
                finally:
                    s.close()
            return ip
        except OSError:
            continue
    raise OSError("no free loopback address for a Service's ports %s" % ports)


def _pump(src, dst):
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


class Proxies:
    def __init__(self, store):
        self.store = store
        self.open = {}          # (ns, name) -> [listening sockets]
        store.listeners.append(self._changed)

    def allocate(self, svc):
        """A cluster IP for a new Service (spec.clusterIP unset)."""
        spec = svc.setdefault("spec", {})
        if spec.get("clusterIP") or spec.get("type") == "ExternalName":
            return
        ports = [p["port"] for p in spec.get("ports") or [] if p.get("port")]
        ip = _free_ip(ports)
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]

    def _changed(self, kind, etype, obj):
        if kind is not SERVICES:
            return
        key = (obj["metadata"].get("namespace"), obj["metadata"]["name"])
        ip = (obj.get("spec") or {}).get("clusterIP")
        if etype == "DELETED":
            self._close(key)
        elif etype == "ADDED" and ip and ip != "None" and \
                key not in self.open:
            self._listen(key, ip, obj["spec"].get("ports") or [])

    def _listen(self, key, ip, ports):
        socks = []
        for p in ports:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((ip, p["port"]))
                s.listen(BACKLOG)
            except OSError as e:
                log("service %s/%s: %s:%d: %s" % (key[0], key[1], ip,
                                                  p["port"], e))
                s.close()
                continue
            socks.append(s)
            threading.Thread(target=self._accept, args=(
                key, s, p.get("name", "")), daemon=True).start()
        self.open[key] = socks
        log("service %s/%s: cluster IP %s" % (key[0], key[1], ip))

    def _close(self, key):
        for s in self.open.pop(key, []):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close_all(self):
        for key in list(self.open):
            self._close(key)

    def _target(self, key, port_name):
        ns, name = key
        with self.store.lock:
            for sl in self.store.list(SLICES, ns)[0]:
                if sl["metadata"].get("labels", {}).get(
                        "kubernetes.io/service-name") != name:
                    continue
                port = next((p["port"] for p in sl.get("ports") or []
                             if p.get("name", "") == port_name), None)
                for e in sl.get("endpoints") or []:
                    if port and (e.get("conditions") or {}).get(
                            "ready", True):
                        return e["addresses"][0], port
        return None

    def _accept(self, key, lsock, port_name):
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return          # closed: the Service is gone
            target = self._target(key, port_name)
            if target is None:
                conn.close()    # no ready endpoint: rejected
                continue
            try:
                up = socket.create_connection(target, 5)
                up.settimeout(None)
            except OSError:
                conn.close()
                continue
            threading.Thread(target=_pump, args=(conn, up),
                             daemon=True).start()
            threading.Thread(target=_pump, args=(up, conn),
                             daemon=True).start()
