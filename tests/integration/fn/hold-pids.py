#!/usr/bin/env python3
# hold-pids.py PORT N - N connections to 127.0.0.1:PORT, one after the
# other, each a "GET /hold" of scale-http.py: the process that takes one
# answers with its pid and then serves nothing else until the connection
# closes, so each next connection is taken by another process.  Prints
# the N pids, sorted, on one line; exits 1 if a connection is not
# answered within 30 s (fewer than N processes accept on the port).
import socket
import sys

port, n = int(sys.argv[1]), int(sys.argv[2])
held, pids = [], []
try:
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        held.append(c)
        c.sendall(b"GET /hold HTTP/1.0\r\n\r\n")
        data = b""
        while b"pid=" not in data or not data.endswith(b"\n"):
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        line = [x for x in data.split(b"\n") if x.startswith(b"pid=")]
        if not line:
            sys.exit("no pid in %r" % data)
        pids.append(int(line[0][4:]))
except OSError as e:
    sys.exit("connection %d: %s" % (len(held), e))
finally:
    for c in held:
        c.close()
print(" ".join(str(p) for p in sorted(pids)))
