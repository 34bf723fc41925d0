#!/usr/bin/env python3
"""gw-fake-scale.py - a stand-in for hk-scale's scale.sock, for the
gateway's own tests (tests/integration/1*-activate-*.t).

    gw-fake-scale.py RUNTIME_DIR LOG SERVICE=ACTION ...

Listens on RUNTIME_DIR/scale.sock (SOCK_SEQPACKET) and speaks the wake
path of the protocol: "subscribe" is acknowledged and kept; "wake" is
acknowledged, logged to LOG as "wake SERVICE", and answered by ACTION:

    ready:ENDPOINT[:DELAY_MS]   broadcast ready {endpoint, revision 1}
    fail:RETRY                  broadcast failed {reason, retry_after}
    never                       nothing (the startup deadline decides)
    refuse:ERROR                reply {"ok":false,"error":ERROR}

A line written to RUNTIME_DIR/fake.cmd is broadcast as is (JSON), so a
test can send down or ready at a moment of its choosing.  Prints "ready"
on stdout once listening.
"""
import json
import os
import selectors
import socket
import sys
import time


def main():
    rundir, logpath = sys.argv[1], sys.argv[2]
    actions = dict(a.split("=", 1) for a in sys.argv[3:])
    path = os.path.join(rundir, "scale.sock")
    if os.path.exists(path):
        os.unlink(path)
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lsock.bind(path)
    lsock.listen(16)
    cmd = os.path.join(rundir, "fake.cmd")
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, "listen")
    subs, timers = [], []
    log = open(logpath, "a", buffering=1)
    print("ready", flush=True)

    def broadcast(msg):
        data = json.dumps(msg).encode()
        for s in list(subs):
            try:
                s.send(data)
            except OSError:
                subs.remove(s)

    while True:
        now = time.monotonic()
        for t in [t for t in timers if t[0] <= now]:
            timers.remove(t)
            broadcast(t[1])
        if os.path.exists(cmd):
            with open(cmd) as f:
                lines = f.read().splitlines()
            os.unlink(cmd)
            for line in lines:
                if line.strip():
                    broadcast(json.loads(line))
        for key, _ in sel.select(0.02):
            if key.data == "listen":
                conn, _ = lsock.accept()
                sel.register(conn, selectors.EVENT_READ, "conn")
                continue
            conn = key.fileobj
            data = conn.recv(65536)
            if not data:
                sel.unregister(conn)
                if conn in subs:
                    subs.remove(conn)
                conn.close()
                continue
            msg = json.loads(data)
            if msg.get("op") == "subscribe":
                conn.send(b'{"ok":true}')
                subs.append(conn)
                continue
            if msg.get("op") != "wake":
                conn.send(b'{"ok":false,"error":"unknown op"}')
                continue
            svc = msg["service"]
            log.write("wake %s\n" % svc)
            act = actions.get(svc, "never")
            if act.startswith("refuse:"):
                conn.send(json.dumps({"ok": False,
                                      "error": act[7:]}).encode())
                continue
            conn.send(b'{"ok":true}')
            if act.startswith("ready:"):
                parts = act[6:].split(":")
                ep = parts[0] + ":" + parts[1]
                delay = int(parts[2]) / 1000 if len(parts) > 2 else 0
                timers.append((time.monotonic() + delay,
                               {"op": "ready", "service": svc,
                                "endpoint": ep, "revision": 1}))
            elif act.startswith("fail:"):
                timers.append((time.monotonic(),
                               {"op": "failed", "service": svc,
                                "reason": "exit status 1: boom",
                                "retry_after": int(act[5:])}))


if __name__ == "__main__":
    main()
