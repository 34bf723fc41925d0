#!/usr/bin/env python3
"""gw-late.py - a function that is ready before it listens, for the
gateway's tests.  Run with readiness = "notify": it sends READY=1 to
$NOTIFY_SOCKET without listening, so hk-scale reports it ready while
connections to $PORT are refused; once the file $GW_GO exists it execs
gw-backend.py, which listens on $PORT.
"""
import os
import socket
import sys
import time


def main():
    path = os.environ["NOTIFY_SOCKET"]
    if path.startswith("@"):
        path = "\0" + path[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"READY=1", path)
    s.close()
    while not os.path.exists(os.environ["GW_GO"]):
        time.sleep(0.05)
    be = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "gw-backend.py")
    os.execv(sys.executable, [sys.executable, be])


if __name__ == "__main__":
    main()
