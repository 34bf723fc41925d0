#!/usr/bin/env python3
"""inflight.py PORT PID - SIGTERM to a function with work in hand.

On 127.0.0.1:PORT: a keep-alive connection that has been answered and
waits idle, and a POST whose head is sent but half its body not; then
SIGTERM to PID, then the rest of the body.  Prints the status of the
POST's answer and "idle closed" if the idle connection was closed by the
function (not left open for the next request).
"""
import os
import signal
import socket
import sys
import time

port, pid = int(sys.argv[1]), int(sys.argv[2])


def answer(s):
    """Reads one answer; returns its status code."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return "eof"
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(rest) < n:
        chunk = s.recv(4096)
        if not chunk:
            break
        rest += chunk
    return head.split(b" ")[1].decode()


idle = socket.create_connection(("127.0.0.1", port), timeout=10)
idle.sendall(b"GET /idle HTTP/1.1\r\nHost: t\r\n\r\n")
first = answer(idle)
busy = socket.create_connection(("127.0.0.1", port), timeout=10)
busy.sendall(b"POST /inflight HTTP/1.1\r\nHost: t\r\n"
             b"Content-Length: 10\r\n\r\n12345")
time.sleep(0.3)     # the function reads the head and waits for the body
os.kill(pid, signal.SIGTERM)
time.sleep(0.3)     # the function has the signal
busy.sendall(b"67890")
status = answer(busy)
try:
    closed = idle.recv(1) == b""
except OSError:
    closed = True
print(first, status, "idle closed" if closed else "idle open")
