#!/usr/bin/env python3
"""gw-events.py - a stand-in for hk-events: binds RUNTIME_DIR/events.sock
(SOCK_DGRAM) and appends every datagram, one JSON object a line, to OUT.

    gw-events.py RUNTIME_DIR OUT

Prints "ready" on stdout once bound.
"""
import os
import socket
import sys


def main():
    path = os.path.join(sys.argv[1], "events.sock")
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    out = open(sys.argv[2], "ab", buffering=0)
    print("ready", flush=True)
    while True:
        out.write(s.recv(65536) + b"\n")


if __name__ == "__main__":
    main()
