# src-app.py - the handler the tests of "source" apply as app.py, beside a
# body.txt: it answers "BODY cwd=DIR write=W", W being "yes" when it can
# create a file in its working directory, else the errno's name (EROFS,
# EACCES).  Listens on $HOST (0.0.0.0 in a container) and $PORT.
import errno
import os
from http.server import BaseHTTPRequestHandler, HTTPServer


def can_write():
    try:
        open("probe", "w").close()
        return "yes"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


class H(BaseHTTPRequestHandler):
    def do_GET(self):
        with open("body.txt") as f:
            body = f.read().strip()
        b = ("%s cwd=%s write=%s" % (body, os.getcwd(), can_write())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


HTTPServer((os.environ.get("HOST", "0.0.0.0"), int(os.environ["PORT"])),
    H).serve_forever()
