#!/usr/bin/env python3
# tmpl-slow.py - a function that takes SECONDS (its argument) to import
# before it serves the handed socket (LISTEN_FDS), as a heavy handler
# does: with readiness = "socket" the gateway forwards a request before
# then, which waits in the socket's queue.  It answers JSON: its pid,
# how many requests it has served with this one, and whether http.server
# was imported before its first line ran (a fork of hk-scale's Python
# template).
import sys
PRELOADED = "http.server" in sys.modules
import json
import os
import socket
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

time.sleep(float(sys.argv[1]) if sys.argv[1:] else 0)
SERVED = [0]


class H(BaseHTTPRequestHandler):
    def do_GET(self):
        SERVED[0] += 1
        b = json.dumps({"pid": os.getpid(), "served": SERVED[0],
                        "preloaded": PRELOADED}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class Handed(HTTPServer):
    def server_bind(self):
        pass

    def server_activate(self):
        pass


srv = Handed(("127.0.0.1", 0), H, bind_and_activate=False)
srv.socket = socket.socket(fileno=3)
srv.serve_forever()
