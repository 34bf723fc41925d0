#!/usr/bin/env python3
# A STAND-IN FOR A FAULT, NOT FOR AN ENGINE: a relay in front of a real
# engine's Unix socket (podman's API service) that fails some of its
# answers on purpose.  Every request goes on to the engine, with
# "Connection: close" added so that each connection carries one request
# and is looked at; while the file FAILS holds a number N > 0, a
# container inspect (GET .../containers/ID/json) is answered 500 by the
# relay itself, N is decremented, and the request line goes to LOG.
#
#	engine-fault.py LISTEN ENGINE FAILS LOG
import os
import re
import socket
import sys
import threading

INSPECT = re.compile(rb"^GET [^ ]*/containers/[0-9a-f]{12,}/json")


def take_fault(fails):
    try:
        with open(fails) as f:
            n = int(f.read().strip() or "0")
    except (OSError, ValueError):
        return False
    if n <= 0:
        return False
    with open(fails + ".tmp", "w") as f:
        f.write("%d\n" % (n - 1))
    os.rename(fails + ".tmp", fails)
    return True


def pipe(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client, engine, fails, log, lock):
    head = b""
    while b"\r\n\r\n" not in head:
        b = client.recv(65536)
        if not b:
            client.close()
            return
        head += b
    end = head.index(b"\r\n\r\n")
    first = head.split(b"\r\n", 1)[0]
    with lock:
        fault = INSPECT.match(first) and take_fault(fails)
    if fault:
        with lock, open(log, "ab") as f:
            f.write(first + b"\n")
        body = b'{"message":"a fault the test injected"}'
        client.sendall(b"HTTP/1.1 500 Internal Server Error\r\n"
                       b"Content-Type: application/json\r\n"
                       b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                       % len(body) + body)
        client.close()
        return
    lines = [l for l in head[:end].split(b"\r\n")
             if not l.lower().startswith(b"connection:")]
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(engine)
    except OSError:
        client.close()
        return
    up.sendall(b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n" +
               head[end + 4:])
    t = threading.Thread(target=pipe, args=(up, client), daemon=True)
    t.start()
    pipe(client, up)
    t.join()
    up.close()
    client.close()


def main():
    listen, engine, fails, log = sys.argv[1:5]
    lock = threading.Lock()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(listen)
    except FileNotFoundError:
        pass
    s.bind(listen)
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, engine, fails, log, lock),
                         daemon=True).start()


if __name__ == "__main__":
    main()
