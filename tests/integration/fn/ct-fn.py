#!/usr/bin/env python3
# ct-fn.py - the HTTP function of the test image (scripts/test-image), as
# a container runs it: listens on 0.0.0.0:$PORT (8080 by default), as
# images do, and answers every GET with "$GREETING pid=N host=H", and
# every POST with "$GREETING got N bytes" after reading the body (with
# a pause of $CT_FN_POST_MS first, 0 by default).  One line per request
# on stdout ("ct-fn: POST /path 200 body=BODY" for a POST: the handler's
# invocations, counted by the tests), a line on each of stdout and stderr
# once listening; SIGTERM is a clean exit 0.  $CT_FN_DELAY seconds of
# sleep before it listens.  The standard library only.
import os
import signal
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("%s pid=%d host=%s\n" % (
            os.environ.get("GREETING", "hello"), os.getpid(),
            socket.gethostname())).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("ct-fn: GET %s 200" % self.path.split("?", 1)[0], flush=True)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or "0")
        data = self.rfile.read(n)
        time.sleep(int(os.environ.get("CT_FN_POST_MS", "0")) / 1000)
        body = ("%s got %d bytes\n" % (os.environ.get("GREETING", "hello"),
                                       len(data))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("ct-fn: POST %s 200 body=%s" % (self.path.split("?", 1)[0],
              data.decode("utf-8", "replace")[:64]), flush=True)

    def log_message(self, fmt, *args):
        pass


def main():
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    time.sleep(float(os.environ.get("CT_FN_DELAY", "0")))
    port = int(os.environ.get("PORT") or "8080")
    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    print("ct-fn: listening on port %d" % port, flush=True)
    print("ct-fn: stderr works", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
