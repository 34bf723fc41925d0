#!/usr/bin/env python3
# scale-http.py - a small HTTP function for the hk-scale tests.
#
# Listens on $HOST:$PORT, or on fd 3 when LISTEN_FDS=1 and LISTEN_PID is
# its own pid; sends READY=1 to $NOTIFY_SOCKET once listening.  Logs one
# line per request on stdout; as in a real function, a failed write (a
# broken pipe) fails the request.  Knobs (environment):
#   SCALE_DELAY=S        sleep S seconds before listening
#   SCALE_NOTIFY=never   never send READY=1
#   SCALE_NOTIFY_FD=N    once listening, write a newline to fd N and close
#                        it (s6's notification-fd)
#   SCALE_HEALTH_AFTER=N answer GET /health 503 N times, then 200
#   SCALE_TAG=T          returned in every body
#   SCALE_TERM_DELAY=S   on SIGTERM, take S seconds to exit
#   SCALE_TERM_GATE=G    on SIGTERM (after SCALE_TERM_DELAY), once G.hold
#                        exists, exit only once G.go exists too: a stop
#                        that lasts until the test releases it (as
#                        fn/held does for a start)
#   GET /hold answers 200 with "pid=N" and keeps the connection until the
#   client closes it: the process serves no one else meanwhile (the
#   replicas test, 2021, learns which process took each connection)
#   GET /healthz answers 200 with a short body, after the head
#   SCALE_BODY_DELAY=S   ... S seconds after the head
#   SCALE_BODY_BYTES=N   ... of N bytes
#   SCALE_BODY_ENDLESS=1 ... with no length, a line every 50 ms, for ever
#   SCALE_KEEP_OPEN=1    HTTP/1.1, the connection kept open after an
#                        answer even when the client asked to close it
import os
import signal
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

health_left = int(os.environ.get("SCALE_HEALTH_AFTER", "0"))


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        global health_left
        if self.path == "/healthz":
            self.healthz()
            return
        if self.path == "/hold":
            self.hold()
            return
        code = 200
        if self.path == "/health" and health_left > 0:
            health_left -= 1
            code = 503
        body = ("%s pid=%d\n" % (os.environ.get("SCALE_TAG", "hello"),
                                 os.getpid())).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def hold(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"pid=%d\n" % os.getpid())
        self.wfile.flush()
        self.rfile.read()       # until the client closes
        self.close_connection = True

    def healthz(self):
        if os.environ.get("SCALE_BODY_ENDLESS"):
            self.send_response(200)
            self.end_headers()
            while True:
                self.wfile.write(b"still here\n")
                time.sleep(0.05)
        body = b"x" * int(os.environ.get("SCALE_BODY_BYTES", "3"))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        time.sleep(float(os.environ.get("SCALE_BODY_DELAY", "0")))
        self.wfile.write(body)
        if os.environ.get("SCALE_KEEP_OPEN"):
            self.close_connection = False

    def log_message(self, fmt, *args):
        print("request " + fmt % args, flush=True)


def term(signum, frame):
    print("stopping", flush=True)
    time.sleep(float(os.environ.get("SCALE_TERM_DELAY", "0")))
    gate = os.environ.get("SCALE_TERM_GATE")
    if gate and os.path.exists(gate + ".hold"):
        while not os.path.exists(gate + ".go"):
            time.sleep(0.02)
    os._exit(0)


def main():
    print("starting pid %d" % os.getpid(), flush=True)
    if os.environ.get("SCALE_KEEP_OPEN"):
        Handler.protocol_version = "HTTP/1.1"
    if (os.environ.get("SCALE_TERM_DELAY") or
            os.environ.get("SCALE_TERM_GATE")):
        signal.signal(signal.SIGTERM, term)
    time.sleep(float(os.environ.get("SCALE_DELAY", "0")))
    if (os.environ.get("LISTEN_FDS") == "1" and
            os.environ.get("LISTEN_PID") == str(os.getpid())):
        srv = HTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        srv.socket.close()
        srv.socket = socket.socket(fileno=3)
        print("listening on the socket from LISTEN_FDS", flush=True)
    else:
        srv = HTTPServer((os.environ["HOST"], int(os.environ["PORT"])),
                         Handler)
        print("listening on %s:%s" % (os.environ["HOST"],
                                      os.environ["PORT"]), flush=True)
    fd = os.environ.get("SCALE_NOTIFY_FD")
    if fd:
        os.write(int(fd), b"\n")
        os.close(int(fd))
        print("wrote a newline to fd %s" % fd, flush=True)
    path = os.environ.get("NOTIFY_SOCKET")
    if path and os.environ.get("SCALE_NOTIFY") != "never":
        if path.startswith("@"):
            path = "\0" + path[1:]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b"STATUS=serving\nREADY=1", path)
        s.close()
        print("sent READY=1", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
