#!/usr/bin/env python3
# secret-http.py - a function that reads its secret DB_PASSWORD and
# answers its SHA-256, never the value: /file from
# $CREDENTIALS_DIRECTORY, /env from the variable (secrets_env).
import hashlib, os
from http.server import BaseHTTPRequestHandler, HTTPServer


class H(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/file":
            d = os.environ.get("CREDENTIALS_DIRECTORY", "")
            with open(os.path.join(d, "DB_PASSWORD"), "rb") as f:
                v = f.read()
        elif self.path == "/env":
            v = os.environ.get("DB_PASSWORD", "").encode()
        else:
            v = b""
        b = hashlib.sha256(v).hexdigest().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
