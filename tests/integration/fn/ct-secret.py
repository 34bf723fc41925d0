# ct-secret.py - the handler tests/integration/2106 applies as app.py of a
# container's source: it reads its secret DB_PASSWORD and answers its
# SHA-256, never the value: /file from $CREDENTIALS_DIRECTORY, /env from
# the variable DB_PASSWORD ("unset" without it: secrets_env); /info says
# "cd=DIR write=W uid=UID", W being "yes" when it can create a file in
# DIR, else the errno's name (EROFS).  Listens on $HOST (0.0.0.0) and
# $PORT.
import errno
import hashlib
import os
from http.server import BaseHTTPRequestHandler, HTTPServer


def can_write(d):
    try:
        open(os.path.join(d, "probe"), "w").close()
        return "yes"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


class H(BaseHTTPRequestHandler):
    def do_GET(self):
        d = os.environ.get("CREDENTIALS_DIRECTORY", "")
        if self.path == "/file":
            with open(os.path.join(d, "DB_PASSWORD"), "rb") as f:
                b = hashlib.sha256(f.read()).hexdigest()
        elif self.path == "/env":
            v = os.environb.get(b"DB_PASSWORD")
            b = hashlib.sha256(v).hexdigest() if v is not None else "unset"
        else:
            b = "cd=%s write=%s uid=%d" % (d, can_write(d), os.getuid())
        b = b.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


HTTPServer((os.environ.get("HOST", "0.0.0.0"), int(os.environ["PORT"])),
    H).serve_forever()
