#!/usr/bin/env python3
# vet-model.py - A STAND-IN FOR A LANGUAGE MODEL, for the tests of hk's
# code vetting gate (71xx).  No language model can run on these
# machines; this server speaks the part of the OpenAI chat-completions
# protocol hk uses (POST, a JSON body with "model" and "messages", a JSON
# reply with choices[0].message.content) and answers by the request's
# "model", so that a test picks the answer in hakopod.toml:
#
#   safe      {"safe": true}
#   fenced    {"safe": true} in a ```json fence
#   unsafe    {"safe": false, "reason": REASON}
#   garbage   content that is prose, not the verdict
#   empty     an empty choice list
#   notjson   a body that is not JSON
#   e500      HTTP 500
#   e401      HTTP 401
#   slow      {"safe": true}, after SLOW seconds (past hk's timeout)
#
# usage: vet-model.py LOG [CERT KEY]
# Listens on 127.0.0.1, port chosen by the system, printed on stdout;
# with CERT and KEY it speaks HTTPS.  Every request is appended to LOG
# as one JSON line {"path", "headers", "body"} (body as text).
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REASON = "opens a reverse shell to a remote host in app.py"
SLOW = 4
lock = threading.Lock()


def completion(content):
    return {"id": "standin", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant",
                                     "content": content}}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass	# hk gave up first (its timeout): as a client may

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        with lock, open(sys.argv[1], "a") as f:
            f.write(json.dumps({"path": self.path,
                                "headers": dict(self.headers.items()),
                                "body": raw.decode("utf-8", "replace")})
                    + "\n")
        try:
            model = json.loads(raw).get("model")
        except ValueError:
            model = None
        if model == "safe":
            self.reply(200, completion('{"safe": true}'))
        elif model == "fenced":
            self.reply(200, completion('```json\n{"safe": true}\n```'))
        elif model == "unsafe":
            self.reply(200, completion(json.dumps(
                {"safe": False, "reason": REASON})))
        elif model == "garbage":
            self.reply(200, completion("The code looks fine to me."))
        elif model == "empty":
            self.reply(200, {"choices": []})
        elif model == "notjson":
            self.reply(200, b"<html>gateway</html>")
        elif model == "e500":
            self.reply(500, {"error": {"message": "internal"}})
        elif model == "e401":
            self.reply(401, {"error": {"message": "invalid api key"}})
        elif model == "slow":
            time.sleep(SLOW)
            self.reply(200, completion('{"safe": true}'))
        else:
            self.reply(400, {"error": {"message": "unknown model"}})

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if len(sys.argv) == 4:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
