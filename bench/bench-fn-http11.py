#!/usr/bin/env python3
"""bench-fn-http11.py - the function of bench-burst and bench-nagle.

    PORT=N bench-fn-http11.py [MS [LOG]]

Python's http.server as it comes, stdlib only: ThreadingHTTPServer on
127.0.0.1:$PORT with its default listen backlog (5), HTTP/1.1 with
keep-alive, one thread per connection, and BaseHTTPRequestHandler's
unbuffered writes: the head and the body leave in two sends, and Nagle's
algorithm is on.  Every GET is answered 200 "hello\\n" after MS
milliseconds (default 50; 0 answers at once).  With LOG, "started PID" is
appended to it once listening, and each request's path before it is
answered, so that the bench counts how many times each request ran.
"""
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = int(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0.05
LOG = sys.argv[2] if len(sys.argv) > 2 else None
LOCK = threading.Lock()


def note(line):
    if LOG is None:
        return
    with LOCK, open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        note("GET %s" % self.path)
        if DELAY > 0:
            time.sleep(DELAY)
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])),
                                 Handler)
    note("started %d" % os.getpid())
    server.serve_forever()


if __name__ == "__main__":
    main()
