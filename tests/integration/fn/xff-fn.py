#!/usr/bin/env python3
# xff-fn.py - an HTTP function for the HAProxy test (9300): answers every
# request, many at once, with what it was told of the client:
#   "xff-fn pid=PID xff=X-Forwarded-For proto=X-Forwarded-Proto body=BODY"
# and logs one line per request on stdout (hk-scale's log):
#   "xff-fn: pid=PID METHOD PATH xff=..."
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PID = os.getpid()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        xff = self.headers.get("X-Forwarded-For", "-")
        proto = self.headers.get("X-Forwarded-Proto", "-")
        print("xff-fn: pid=%d %s %s xff=%s" % (PID, self.command, self.path,
              xff), flush=True)
        out = ("xff-fn pid=%d xff=%s proto=%s body=%s" % (PID, xff, proto,
               body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = answer
    do_POST = answer

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
srv = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"),
                           int(os.environ["PORT"])), Handler)
print("xff-fn: listening pid=%d" % PID, flush=True)
sys.stdout.flush()
srv.serve_forever()
