#!/usr/bin/env python3
"""echo-cl.py - a function as most are written: Python's http.server, which
reads a request body by Content-Length only (a chunked body reaches its
handler empty).  For hk-activate's body tests.

Listens on 127.0.0.1:$PORT after sleeping $START_DELAY seconds (a slow
start).  Answers every request with one line:

    len=N sha256=HEX te=VALUE cl=VALUE

N and HEX of the body it read by Content-Length, VALUE the request's
Transfer-Encoding and Content-Length headers ("-" if absent).  Each
request it answers appends "invocation METHOD PATH len=N" to $GW_LOG.
"""
import hashlib
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        line = "len=%d sha256=%s te=%s cl=%s\n" % (
            len(body), hashlib.sha256(body).hexdigest(),
            self.headers.get("Transfer-Encoding", "-"),
            self.headers.get("Content-Length", "-"))
        if os.environ.get("GW_LOG"):
            with open(os.environ["GW_LOG"], "a") as f:
                f.write("invocation %s %s len=%d\n"
                        % (self.command, self.path, len(body)))
        out = line.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = answer


def main():
    time.sleep(float(os.environ.get("START_DELAY", "0")))
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Echo)
    server.daemon_threads = True
    sys.stderr.write("echo-cl.py: listening\n")
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
