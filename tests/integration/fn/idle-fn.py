#!/usr/bin/env python3
# idle-fn.py - an HTTP function for the hk-idle tests (3xxx).
#
# Listens on $HOST:$PORT and answers every request, many at once:
#   GET /          "idle-fn pid=PID"
#   GET /slow?s=S  streams one line every 100 ms for S seconds (chunked),
#                  then "done pid=PID"; with &until=F, ends as soon as file
#                  F exists (a stream that lasts until the test ends it)
# One line per request on stdout (hk-scale's log): "idle-fn: pid=PID PATH".
# IDLE_FN_DELAY=S: wait S seconds before listening (not ready meanwhile).
# IDLE_FN_ANSWER_DELAY=S: GET / takes S seconds to answer.
# IDLE_FN_TERM_DELAY=S: on SIGTERM, exit only S seconds later, answering
# 503 "stopping pid=PID" to any request that comes meanwhile: a request
# forwarded to a stopping instance shows.
# IDLE_FN_TICK_FILE=F: a thread writes a count to F every 10 ms, so a test
# sees whether the process runs (a frozen one's count stands still).
# IDLE_FN_DAEMON_TICK_FILE=F: so does a child in a session of its own (a
# daemon: outside the process group), its pid in F.pid.
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PID = os.getpid()
stopping = False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        print("idle-fn: pid=%d %s" % (PID, self.path), flush=True)
        url = urlparse(self.path)
        if stopping:
            body = ("stopping pid=%d\n" % PID).encode()
            self.send_response(503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if url.path == "/slow":
            query = parse_qs(url.query)
            secs = float(query.get("s", ["1"])[0])
            until = query.get("until", [None])[0]
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            end = time.monotonic() + secs
            while time.monotonic() < end and not (
                    until and os.path.exists(until)):
                self.chunk(b"tick\n")
                time.sleep(0.1)
            self.chunk(("done pid=%d\n" % PID).encode())
            self.wfile.write(b"0\r\n\r\n")
            return
        time.sleep(float(os.environ.get("IDLE_FN_ANSWER_DELAY", "0")))
        body = ("idle-fn pid=%d\n" % PID).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def log_message(self, fmt, *args):
        pass


def term(signum, frame):
    global stopping
    stopping = True
    print("idle-fn: pid=%d stopping" % PID, flush=True)
    threading.Timer(float(os.environ["IDLE_FN_TERM_DELAY"]),
                    lambda: os._exit(0)).start()


def tick(path):
    n = 0
    while True:
        n += 1
        with open(path + ".tmp", "w") as f:
            f.write("%d\n" % n)
        os.replace(path + ".tmp", path)
        time.sleep(0.01)


def daemon_ticker(path):
    pid = os.fork()
    if pid != 0:
        return
    os.setsid()
    with open(path + ".pid.tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.replace(path + ".pid.tmp", path + ".pid")
    try:
        tick(path)
    finally:
        os._exit(0)


def main():
    if os.environ.get("IDLE_FN_DAEMON_TICK_FILE"):
        daemon_ticker(os.environ["IDLE_FN_DAEMON_TICK_FILE"])
    if os.environ.get("IDLE_FN_TICK_FILE"):
        threading.Thread(target=tick, args=(os.environ["IDLE_FN_TICK_FILE"],),
                         daemon=True).start()
    if os.environ.get("IDLE_FN_TERM_DELAY"):
        signal.signal(signal.SIGTERM, term)
    time.sleep(float(os.environ.get("IDLE_FN_DELAY", "0")))
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"),
                               int(os.environ["PORT"])), Handler)
    print("idle-fn: listening pid=%d" % PID, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
