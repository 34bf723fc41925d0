#!/usr/bin/env python3
"""gw-ctl.py - one request to an hk control socket, for the tests.

    gw-ctl.py SOCKET JSON [FIELD ...]

Sends JSON as one SOCK_SEQPACKET message and prints the reply (compact,
keys sorted), or with FIELDs the value at each dotted path, one a line
("services.0.state"; a list index is a number, "services.ID" picks the
service with that "service").  Waits 5 s at most; exits 1 on no reply.
"""
import json
import socket
import sys


def pick(v, path):
    for k in path.split("."):
        if isinstance(v, list) and k.isdigit():
            v = v[int(k)]
        elif isinstance(v, list):
            v = [x for x in v if x.get("service") == k][0]
        else:
            v = v[k]
    return v


def main():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(sys.argv[1])
    s.send(sys.argv[2].encode())
    reply = json.loads(s.recv(65536))
    if len(sys.argv) == 3:
        print(json.dumps(reply, sort_keys=True, separators=(",", ":")))
        return
    for f in sys.argv[3:]:
        v = pick(reply, f)
        print(json.dumps(v) if not isinstance(v, str) else v)


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError) as e:
        sys.stderr.write("gw-ctl.py: %s\n" % e)
        sys.exit(1)
