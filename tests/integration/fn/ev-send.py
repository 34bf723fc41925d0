#!/usr/bin/env python3
"""ev-send.py - a sender of records to events.sock, as lib/evsink.c sends
them: unconnected datagrams, never blocking; a datagram the socket does
not take (absent, full) is dropped and counted.

    ev-send.py SOCK event KIND SERVICE [AGE_MS [DETAIL_JSON]]
    ev-send.py SOCK requests N [SERVICE [STATUS [AGE_MS [PATH]]]]
    ev-send.py SOCK raw TEXT...        each TEXT one datagram, as is
    ev-send.py SOCK blast N SECONDS    N request datagrams (10 records
                                       each) spread evenly over SECONDS
    ev-send.py SOCK packed JSON [CUT]  the records of the JSON array
                                       packed, as the gateway sends them
                                       (lib/reqbatch.h, in base64); CUT
                                       bytes off the end damage the value

Prints "sent S dropped D" on stdout (blast: "... in MS ms").  AGE_MS puts "at" that far back.
"""
import base64
import json
import socket
import sys
import time


class Sink:
    def __init__(self, path):
        self.path = path
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.setblocking(False)
        self.sent = 0
        self.dropped = 0

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        try:
            if self.s.sendto(data, self.path) == len(data):
                self.sent += 1
                return
        except OSError:
            pass
        self.dropped += 1


def now_ms(age=0):
    return int(time.time() * 1000) - age


def request(i, service="fn/py", status=200, age=0, path=None):
    return {"at": now_ms(age), "service": service, "method": "GET",
            "host": "py.fn.localhost",
            "path": path if path is not None else "/r/%d" % i,
            "status": status, "duration_us": 1000 + i, "wait_us": 0,
            "bytes_in": 0, "bytes_out": 42, "outcome": "ok"}


def varint(u):
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7f) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def zigzag(v):
    return varint(((v << 1) ^ (v >> 63)) & (2 ** 64 - 1))


def packed(recs):
    """A batch value of format 1, written here from its description in
    lib/reqbatch.h, not by hk's code."""
    out = bytearray([1]) + varint(len(recs))
    prev, prev_at = [b""] * 6, 0
    for r in recs:
        app, _, svc = (r.get("service") or "").partition("/")
        out += zigzag(r["at"] - prev_at)
        prev_at = r["at"]
        for i, v in enumerate([app, svc, r["method"], r["host"], r["path"],
                               r["outcome"]]):
            v = v.encode()
            out += varint(0) if v == prev[i] else varint(len(v) + 1) + v
            prev[i] = v
        for k in ("status", "duration_us", "wait_us", "wake_id", "bytes_in",
                  "bytes_out"):
            out += zigzag(r.get(k) or 0)
    return bytes(out)


def main():
    sink = Sink(sys.argv[1])
    mode, args = sys.argv[2], sys.argv[3:]
    if mode == "event":
        rec = {"op": "event", "kind": args[0], "service": args[1],
               "at": now_ms(int(args[2]) if len(args) > 2 else 0)}
        if len(args) > 3:
            rec["detail"] = json.loads(args[3])
        sink.send(json.dumps(rec))
    elif mode == "requests":
        n = int(args[0])
        svc = args[1] if len(args) > 1 else "fn/py"
        svc = None if svc == "null" else svc
        status = int(args[2]) if len(args) > 2 else 200
        age = int(args[3]) if len(args) > 3 else 0
        path = args[4] if len(args) > 4 else None
        for first in range(0, n, 50):
            recs = [request(i, svc, status, age, path)
                    for i in range(first, min(n, first + 50))]
            sink.send(json.dumps({"op": "requests", "records": recs}))
    elif mode == "packed":
        value = packed(json.loads(args[0]))
        if len(args) > 1:
            value = value[:len(value) - int(args[1])]
        sink.send('{"op":"requests","packed":"%s"}'
                  % base64.b64encode(value).decode())
    elif mode == "raw":
        for a in args:
            sink.send(a)
    elif mode == "blast":
        # Paced, not as fast as Python can: what the daemon takes is
        # listed afterwards, and a million records made that listing
        # most of the suite's time under the sanitizers.
        t0 = time.monotonic()
        n, secs = int(args[0]), float(args[1])
        for k in range(n):
            wait = t0 + secs * k / n - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            sink.send(json.dumps({"op": "requests", "records":
                                  [request(k * 10 + i) for i in range(10)]}))
        print("sent %d dropped %d in %d ms" % (sink.sent, sink.dropped,
              (time.monotonic() - t0) * 1000))
        return
    print("sent %d dropped %d" % (sink.sent, sink.dropped))


if __name__ == "__main__":
    main()
