#!/usr/bin/env python3
"""@NAME@ - an HTTP function for hk, on Python's http.server.

Edit handle() below.  hk starts this program on the first request and
stops it (SIGTERM) when it has been idle: it serves the listening socket
hk hands over (LISTEN_FDS; a Unix socket only the gateway reaches, or a
TCP one), or 127.0.0.1:$PORT when run by hand:

	PORT=8080 python3 handler.py

The standard library only.  One line per request goes to stderr, without
the query string or the body.
"""
import os
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = "@NAME@"
MAX_BODY = 1024 * 1024


def handle(method, path, body):
    """The function: returns (status, content type, body as bytes)."""
    text = "hello from %s: %s %s, %d bytes received\n" % (
        NAME, method, path, len(body))
    return 200, "text/plain; charset=utf-8", text.encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = NAME
    # Head and body leave in one send: wfile is buffered and flushed once
    # a request is answered.  Sent in two, the body would wait for the
    # client's delayed ACK on a reused connection (Nagle), about 40 ms.
    wbufsize = -1
    disable_nagle_algorithm = True

    def setup(self):
        # Nagle is TCP's: a Unix socket (listen = "unix") refuses the option.
        self.disable_nagle_algorithm = self.request.family != socket.AF_UNIX
        super().setup()
        self.server.conn_idle(self)

    def finish(self):
        self.server.conn_gone(self)
        super().finish()

    def parse_request(self):
        # A request line has arrived: the connection is busy until answered.
        self.server.conn_busy(self)
        return super().parse_request()

    def handle_one_request(self):
        super().handle_one_request()
        if not self.server.conn_idle(self):
            self.close_connection = True    # stopping: no next request

    def answer(self):
        path = self.path.split("?", 1)[0]
        if "Transfer-Encoding" in self.headers:
            self.reply(411, "text/plain", b"length required\n", path)
            return
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = -1
        if n < 0 or n > MAX_BODY:
            self.reply(413, "text/plain", b"body too large\n", path)
            return
        body = self.rfile.read(n) if n else b""
        try:
            status, ctype, out = handle(self.command, path, body)
        except Exception as e:  # one bad request must not stop the function
            sys.stderr.write("%s: error: %s %s: %r\n"
                             % (NAME, self.command, path, e))
            status, ctype, out = 500, "text/plain", b"internal error\n"
        self.reply(status, ctype, out, path)

    def reply(self, status, ctype, out, path):
        if status >= 400:
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
        sys.stderr.write("%s: %s %s %d\n" % (NAME, self.command, path, status))
        sys.stderr.flush()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = answer

    def log_message(self, fmt, *args):
        pass    # reply() logs the one line, without the query string


class Server(ThreadingHTTPServer):
    # server_close() waits for the requests in flight.
    daemon_threads = False
    block_on_close = True

    def __init__(self, sock):
        addr = sock.getsockname()   # a path for a Unix socket
        super().__init__(addr[:2] if isinstance(addr, tuple) else addr,
                         Handler, bind_and_activate=False)
        # The socket as it was handed over: socketserver's own listen()
        # would cut its backlog to 5.
        self.socket.close()
        self.socket = sock
        self.lock = threading.Lock()
        self.idle = {}
        self.stopping = False

    def conn_idle(self, h):
        """Marks h idle; False once the server stops."""
        with self.lock:
            self.idle[h] = True
            return not self.stopping

    def conn_busy(self, h):
        with self.lock:
            self.idle[h] = False

    def conn_gone(self, h):
        with self.lock:
            self.idle.pop(h, None)

    def stop(self):
        """Stops accepting, ends idle keep-alive connections."""
        self.shutdown()
        with self.lock:
            self.stopping = True
            for h, idle in self.idle.items():
                if idle:
                    try:
                        h.connection.shutdown(socket.SHUT_RD)
                    except OSError:
                        pass


def listener():
    """The socket hk passed (LISTEN_FDS), else 127.0.0.1:$PORT."""
    if (os.environ.get("LISTEN_PID") == str(os.getpid())
            and os.environ.get("LISTEN_FDS") == "1"):
        return socket.socket(fileno=3)
    port = os.environ.get("PORT", "")
    if not port.isdigit() or not 0 < int(port) < 65536:
        sys.stderr.write("%s: fatal: PORT is not set to a port\n" % NAME)
        sys.exit(64)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(port)))
    s.listen(128)
    return s


def main():
    server = Server(listener())
    # SIGTERM: finish what is in flight, then exit 0.  shutdown() waits
    # for serve_forever(), so it runs in a thread of its own.
    signal.signal(signal.SIGTERM, lambda signum, frame: threading.Thread(
        target=server.stop).start())
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main()
