#!/usr/bin/env python3
"""hello.py - a Python HTTP function for hk's exec backend.

Listens on 127.0.0.1 and $PORT (or on the socket hk hands over through
LISTEN_FDS), answers GET, HEAD and POST with a short text body, and writes
one line per handled request to stderr.  The standard library only.
Query strings and bodies are never logged.
"""
import os
import signal
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROG = "hello.py"
MAX_BODY = 4 * 1024 * 1024


class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hello-py"
    # Each answer goes out in one send: the head alone, then the body,
    # would wait for the client's delayed ACK (Nagle) on a reused
    # connection, about 40 ms a request.  Buffered writes are flushed
    # once the handler returns; no Nagle for what is sent.
    wbufsize = -1
    disable_nagle_algorithm = True

    def setup(self):
        # Nagle is TCP's: a Unix socket (listen = "unix") refuses the option.
        self.disable_nagle_algorithm = self.request.family != socket.AF_UNIX
        super().setup()

    def read_body(self):
        """Reads the body, by Content-Length or chunked; returns its size."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            size = 0
            while True:
                line = self.rfile.readline(1024)
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return size
                size += len(self.rfile.read(n))
                self.rfile.readline(1024)
                if size > MAX_BODY:
                    raise ValueError("body too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > MAX_BODY:
            raise ValueError("bad Content-Length")
        return len(self.rfile.read(n)) if n else 0

    def answer(self):
        path = self.path.split("?", 1)[0]
        try:
            size = self.read_body() if self.command == "POST" else 0
        except ValueError:
            self.send_error(400)
            self.close_connection = True
            return
        greeting = os.environ.get("GREETING", "hello from python")
        body = ("%s: %s %s, %d bytes received\n"
                % (greeting, self.command, path, size)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        sys.stderr.write("%s: info: %s %s 200 %d\n"
                         % (PROG, self.command, path, size))
        sys.stderr.flush()

    do_GET = answer
    do_HEAD = answer
    do_POST = answer

    def log_message(self, fmt, *args):
        pass  # answer() logs the one line; errors need no second one


def listener():
    """The socket hk passed (LISTEN_FDS), else 127.0.0.1:$PORT."""
    if (os.environ.get("LISTEN_PID") == str(os.getpid())
            and os.environ.get("LISTEN_FDS") == "1"):
        return socket.socket(fileno=3)
    port = os.environ.get("PORT", "")
    if not port.isdigit() or not 0 < int(port) < 65536:
        sys.stderr.write("%s: fatal: PORT is not set to a port\n" % PROG)
        sys.exit(64)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(port)))
    s.listen(128)
    return s


def main():
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    sock = listener()
    addr = sock.getsockname()   # a path for a Unix socket
    server = ThreadingHTTPServer(addr[:2] if isinstance(addr, tuple) else addr,
                                 Hello, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.daemon_threads = True
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
