#!/usr/bin/env python3
# tmpl-fn.py - a function that says how it was started, as JSON: its pid,
# whether http.server was imported before its first line ran (it was in
# a fork of hk-scale's Python template, not in a new interpreter), its
# uid, directory, argv, GREETING, LISTEN_PID and its secret's SHA-256 (never the
# value).  Serves the handed socket (LISTEN_FDS).  "never" as its
# argument: it never listens (a start that times out).
import sys
PRELOADED = "http.server" in sys.modules
import hashlib
import json
import os
import socket
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

if sys.argv[1:] == ["never"]:
    time.sleep(3600)


class H(BaseHTTPRequestHandler):
    def do_GET(self):
        d = os.environ.get("CREDENTIALS_DIRECTORY", "")
        try:
            with open(os.path.join(d, "DB_PASSWORD"), "rb") as f:
                sec = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            sec = ""
        b = json.dumps({"pid": os.getpid(), "preloaded": PRELOADED,
                        "uid": os.getuid(), "cwd": os.getcwd(),
                        "argv": sys.argv, "secret": sec,
                        "listen_pid": os.environ.get("LISTEN_PID", ""),
                        "greeting": os.environ.get("GREETING", "")}).encode()
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
