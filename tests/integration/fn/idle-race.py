#!/usr/bin/env python3
# idle-race.py - bursts of requests timed around hk-idle's deadline.
#
#   idle-race.py IDLE_SOCK PORT HOST SERVICE CYCLES BURST
#
# Each cycle: the service is woken if it sleeps, hk-idle's next deadline
# for it (one at least 50 ms ahead) is read from idle.sock, and BURST requests are sent at once at
# that deadline plus an offset (from 40 ms before to 200 ms after).  Every
# answer is checked: 200 with a body from the function.  Prints one line,
# "requests N good G", then one line per bad answer.
import http.client
import json
import re
import socket
import sys
import threading
import time

OFFSETS = [-40, -20, -10, -5, 0, 5, 10, 20, 40, 80, 100, 150, 200]
GOOD = re.compile(r"^idle-fn pid=[0-9]+\n$")


def status(path, service):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    s.send(b'{"op":"status"}')
    reply = json.loads(s.recv(65536))
    s.close()
    for svc in reply["services"]:
        if svc["service"] == service:
            return svc
    return None


def get(port, host, out):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/", headers={"Host": host})
        r = c.getresponse()
        body = r.read().decode(errors="replace")
        c.close()
        out.append((r.status, body))
    except Exception as e:
        out.append((0, "error: %s" % e))


def deadline(path, port, host, service, results):
    end = time.monotonic() + 10
    woken = False
    while time.monotonic() < end:
        st = status(path, service)
        # A deadline already past is the one the last burst met.
        if st is not None and st["deadline"] is not None and \
                st["deadline"] > time.time() * 1000 + 50:
            return st["deadline"]
        if st is not None and not st["awake"] and st["step"] == "wait" \
                and not woken:
            get(port, host, results)
            woken = True
        time.sleep(0.005)
    return None


def main():
    path, port, host, service = sys.argv[1:5]
    cycles, burst = int(sys.argv[5]), int(sys.argv[6])
    results = []
    for i in range(cycles):
        d = deadline(path, int(port), host, service, results)
        if d is None:
            results.append((0, "no deadline in cycle %d" % i))
            continue
        wait = (d + OFFSETS[i % len(OFFSETS)]) / 1000.0 - time.time()
        if wait > 0:
            time.sleep(wait)
        threads = [threading.Thread(target=get,
                                    args=(int(port), host, results))
                   for _ in range(burst)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    good = [r for r in results if r[0] == 200 and GOOD.match(r[1])]
    print("requests %d good %d" % (len(results), len(good)))
    for r in results:
        if r not in good:
            print("bad: %d %r" % (r[0], r[1][:200]))


if __name__ == "__main__":
    sys.exit(main())
