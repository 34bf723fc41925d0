#!/usr/bin/env python3
"""gw-backend.py - a test function for hk-activate's tests, run by hk-scale.

Listens on 127.0.0.1:$PORT (HTTP/1.1, keep-alive, one thread per
connection).  Every handled request appends "invocation METHOD PATH" to
$GW_LOG (if set).  Paths:

    /slow/MS[/ANY]  answers after MS milliseconds
    /hold/NAME      answers once the file $GW_HOLD_DIR/NAME exists (a
                    request the test holds for as long as it needs, and
                    then releases), or after 120 s
    /stream         a chunked response, one chunk every 200 ms, 50 chunks
    /chunked        a short chunked response
    /close          a body delimited by closing the connection
    /ws             with Upgrade: answers 101, then echoes bytes
    /conn           answers with an id of the connection (keep-alive reuse)
    /bytes/N        N bytes of body (blob(N)), with a Content-Length, written
                    in pieces of 7 KiB
    /cut/N          declares N bytes, sends half of them, then closes
    /extra/N        N bytes, then bytes that belong to no response
    anything else   "METHOD PATH bytes=N" (N = request body size; the
                    body may be chunked) plus the headers it saw on
                    /headers
"""
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
CONN_IDS = iter(range(1, 1 << 30))


def blob(n):
    """N bytes that differ at every offset: a reordered or lost piece
    shows as a different digest."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b"%08x|" % i
        i += 1
    return bytes(out[:n])


def note(line):
    path = os.environ.get("GW_LOG")
    if not path:
        return
    with LOCK, open(path, "a") as f:
        f.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with LOCK:
            self.conn_id = next(CONN_IDS)

    def log_message(self, fmt, *args):
        pass

    def body_size(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            size = 0
            while True:
                line = self.rfile.readline(1024)
                if not line.endswith(b"\n"):
                    raise ConnectionError("chunked body cut short")
                n = int(line.split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b""):
                        pass
                    return size
                size += len(self.rfile.read(n))
                self.rfile.readline(1024)
        n = int(self.headers.get("Content-Length") or 0)
        return len(self.rfile.read(n)) if n else 0

    def send_text(self, text, code=200):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_bytes(self, n, send=None, then=b""):
        body = blob(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if self.command == "HEAD":
            return
        self.wfile.flush()
        send = n if send is None else send
        for at in range(0, send, 7168):
            self.wfile.write(body[at:min(at + 7168, send)])
        self.wfile.write(then)
        self.wfile.flush()

    def chunks(self, parts, pause):
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for p in parts:
            data = p.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(pause)
        self.wfile.write(b"0\r\n\r\n")

    def upgrade(self):
        self.send_response(101)
        self.send_header("Upgrade", self.headers.get("Upgrade", "echo"))
        self.send_header("Connection", "Upgrade")
        self.end_headers()
        self.wfile.flush()
        while True:
            data = self.connection.recv(65536)
            if not data:
                break
            self.connection.sendall(data)
        self.close_connection = True

    def answer(self):
        path = self.path.split("?", 1)[0]
        try:
            size = self.body_size()
        except (ConnectionError, ValueError):
            self.close_connection = True
            return
        note("invocation %s %s" % (self.command, path))
        if path.startswith("/slow/"):
            ms = path[6:].split("/", 1)[0]
            time.sleep(int(ms) / 1000)
            self.send_text("slow %s\n" % ms)
        elif path.startswith("/hold/"):
            name = os.path.basename(path[6:])
            gate = os.path.join(os.environ.get("GW_HOLD_DIR", "/"), name)
            end = time.monotonic() + 120
            while not os.path.exists(gate) and time.monotonic() < end:
                time.sleep(0.02)
            self.send_text("held %s\n" % name)
        elif path == "/stream":
            self.chunks(["tick %d\n" % i for i in range(50)], 0.2)
        elif path == "/chunked":
            self.chunks(["one\n", "two\n", "three\n"], 0)
        elif path == "/close":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"until close\n")
            self.close_connection = True
        elif path == "/ws" and self.headers.get("Upgrade"):
            self.upgrade()
        elif path.startswith("/bytes/"):
            self.send_bytes(int(path[7:]))
        elif path.startswith("/cut/"):
            n = int(path[5:])
            self.send_bytes(n, send=n // 2)
            self.close_connection = True
        elif path.startswith("/extra/"):
            self.send_bytes(int(path[7:]), then=b"HTTP/1.1 200 OK\r\n\r\n")
        elif path == "/conn":
            self.send_text("conn %d\n" % self.conn_id)
        elif path == "/headers":
            self.send_text("".join("%s: %s\n" % (k.lower(), v)
                                   for k, v in self.headers.items()))
        else:
            self.send_text("%s %s bytes=%d\n" % (self.command, path, size))

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = answer


def main():
    port = int(os.environ["PORT"])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    note("started")
    sys.stderr.write("gw-backend.py: listening on %d\n" % port)
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
