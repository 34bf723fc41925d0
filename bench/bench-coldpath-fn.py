#!/usr/bin/env python3
"""bench-coldpath-fn.py - the function of bench/bench-coldpath (Python).

Appends "start T" to the file named by its argument (argv[1]; hk-scale
passes no environment of its own to a service) as its first statement, listens on
127.0.0.1:$PORT after $LISTEN_DELAY_MS (default 70) more milliseconds,
appends "listen T" there (Unix seconds, float), then answers every request on
every connection with 200 "hello\\n", one connection at a time.
"""
import os
import sys
import time

with open(sys.argv[1], "a") as f:
    f.write("start %.6f\n" % time.time())

import socket  # noqa: E402  (after the stamp: part of the start)

time.sleep(int(os.environ.get("LISTEN_DELAY_MS", "70")) / 1000)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(os.environ["PORT"])))
s.listen(64)
with open(sys.argv[1], "a") as f:
    f.write("listen %.6f\n" % time.time())
while True:
    c, _ = s.accept()
    data = b""
    while True:
        d = c.recv(4096)
        if not d:
            break
        data += d
        while b"\r\n\r\n" in data:
            _, data = data.split(b"\r\n\r\n", 1)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")
    c.close()
