#!/usr/bin/env python3
# hold-fn.py - an HTTP function whose answer a test holds (4006): a run
# that ends when the test says, whatever the scheduler does.
#
# Listens on $HOST:$PORT (threads: several runs at once).  Every request
# (POST, PUT or GET) prints "hold-fn: RUN-ID METHOD PATH" on stdout
# (hk-scale's service log), then, if its JSON body is {"until": F},
# waits until file F exists (120 s at most: then 504), and answers 200
# "held RUN-ID".
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        rid = self.headers.get("Hk-Run-Id", "-")
        print("hold-fn: %s %s %s" % (rid, self.command, self.path),
              flush=True)
        try:
            event = json.loads(raw or b"{}")
        except ValueError:
            event = None
        status = 200
        if isinstance(event, dict) and "until" in event:
            end = time.monotonic() + 120
            while not os.path.exists(event["until"]):
                if time.monotonic() >= end:
                    status = 504
                    break
                time.sleep(0.02)
        body = ("held %s\n" % rid).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = do_POST
    do_GET = do_POST

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"),
                     int(os.environ["PORT"])), Handler).serve_forever()
sys.exit(0)
