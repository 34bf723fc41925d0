#!/usr/bin/env python3
# jobs-fn.py - an HTTP function for the hk-jobs tests (70xx).
#
# Listens on $HOST:$PORT (threads: several runs at once).  Every request
# prints a line "jobs-fn: RUN-ID METHOD PATH BODY" (hk-scale's service
# log; one per invocation) and answers with a JSON body echoing the run id header and the event:
#   event {"fail": true}   500
#   event {"sleep": S}     sleeps S seconds first
#   else                   200
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        rid = self.headers.get("Hk-Run-Id", "-")
        with lock:
            print("jobs-fn: %s %s %s %s" % (rid, self.command, self.path,
                                            raw.decode()), flush=True)
        try:
            event = json.loads(raw or b"{}")
        except ValueError:
            event = None
        if isinstance(event, dict) and "sleep" in event:
            time.sleep(float(event["sleep"]))
        status = 500 if isinstance(event, dict) and event.get("fail") else 200
        body = json.dumps({"run": rid, "type": self.headers.get(
            "Content-Type"), "path": self.path, "event": event},
            sort_keys=True).encode() + b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = do_POST

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"),
                     int(os.environ["PORT"])), Handler).serve_forever()
