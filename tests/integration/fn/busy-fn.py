#!/usr/bin/env python3
# busy-fn.py - an HTTP function that goes on working after its answer, for
# the idle_check tests (3006): a background job the test holds.
#
# Listens on $HOST:$PORT:
#   GET /              "busy-fn pid=PID"
#   GET /job?until=F   starts a job in a thread that runs until file F
#                      exists, answers "job started pid=PID" at once
#   GET /busy          503 "busy N" while N > 0 jobs run, else 200 "idle"
#   GET /hang?until=F  no answer until file F exists, then 200 "idle"
#   GET /close         no answer: the connection is closed
# One line per request on stdout (hk-scale's log): "busy-fn: pid=PID PATH
# -> STATUS", and "busy-fn: job done" when a job ends.
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PID = os.getpid()
lock = threading.Lock()
jobs = 0


def job(until):
    global jobs
    while not os.path.exists(until):
        time.sleep(0.02)
    with lock:
        jobs -= 1
    print("busy-fn: pid=%d job done" % PID, flush=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        global jobs
        url = urlparse(self.path)
        status, body = 200, "busy-fn pid=%d\n" % PID
        if url.path == "/job":
            until = parse_qs(url.query)["until"][0]
            with lock:
                jobs += 1
            threading.Thread(target=job, args=(until,), daemon=True).start()
            body = "job started pid=%d\n" % PID
        elif url.path == "/close":
            print("busy-fn: pid=%d %s -> closed" % (PID, self.path),
                  flush=True)
            self.close_connection = True
            return
        elif url.path == "/hang":
            until = parse_qs(url.query)["until"][0]
            while not os.path.exists(until):
                time.sleep(0.02)
            body = "idle\n"
        elif url.path == "/busy":
            with lock:
                n = jobs
            status, body = (503, "busy %d\n" % n) if n > 0 else (200,
                                                                "idle\n")
        print("busy-fn: pid=%d %s -> %d" % (PID, self.path, status),
              flush=True)
        data = body.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:     # the asker gave up (a /hang)
            self.close_connection = True

    def log_message(self, fmt, *args):
        pass


def main():
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"),
                               int(os.environ["PORT"])), Handler)
    print("busy-fn: listening pid=%d" % PID, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
