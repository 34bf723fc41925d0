#!/bin/sh
# listen = "unix" when the program shrinks the socket's queue: a Unix
# socket never makes a connect wait, as TCP does for a SYN, it refuses
# one at once with EAGAIN when the queue is full.  The gateway keeps
# such a request first in line and connects again later: eight requests
# at once to a function that listened again with a backlog of 1 and
# takes a while before it accepts are all answered 200, none 502, and
# the gateway says the queue was full.  A function that died leaves a
# socket nobody accepts on: that is a refused connect, as over TCP, and
# the request wakes a new instance.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

gw_config "max_concurrent_starts = 2"
cat >"$T/small.py" <<'EOF'
import os, socket, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"pid=%d\n" % os.getpid()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.path == "/die":
            self.wfile.flush()
            os._exit(1)

    def log_message(self, fmt, *args):
        pass

s = socket.socket(fileno=3)
s.listen(1)                     # a queue of one,
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.sendto(b"READY=1", os.environ["NOTIFY_SOCKET"])
time.sleep(float(os.environ["SMALL_SLEEP"]))    # and a slow start
srv = HTTPServer(("127.0.0.1", 0), H, bind_and_activate=False)
srv.socket.close()
srv.socket = s
srv.serve_forever()
EOF
chmod 644 "$T/small.py"
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.small]
command = ["python3", "$T/small.py"]
public = true
listen = "unix"
readiness = "notify"
[services.small.environment]
SMALL_SLEEP = "1.5"
[services.small.serverless]
max_concurrency = 16
APP
hk apply "$T/app.toml" >/dev/null

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
put_to_sleep fn/small
ok $? "fn/small passed its readiness gate and sleeps"

# Eight at once: the function says it is ready once its queue is of one,
# and lets the connections there wait 1.5 s.
cpids=
for i in 1 2 3 4 5 6 7 8; do
	curl -sS -o /dev/null -w '%{http_code}\n' --max-time 30 \
	    -H "Host: small.fn.localhost" "$GW_URL/$i" >"$T/code.$i" 2>&1 &
	cpids="$cpids $!"
done
# shellcheck disable=SC2086
wait $cpids
is "$(cat "$T"/code.* | sort | uniq -c | tr -s ' ' | sed 's/^ //')" "8 200" \
    "eight requests at once: all answered 200"
grep -q 'service=fn/small endpoint=unix:.*: its queue is full' "$T/gw.log"
ok $? "the gateway found the queue full, and connected again later"

# The function dies after answering; its socket is left with nobody on
# it until hk-scale sees the exit: a connect then is refused, the request
# waits for a new instance.
is "$(gw_code small.fn.localhost /die)" 200 "a request that ends the function"
p1=$(cat "$T/body")
is "$(gw_code small.fn.localhost /after)" 200 \
    "the next request is answered, by a new instance"
isnt=$([ "$(cat "$T/body")" != "$p1" ] && echo other)
is "$isnt" other "not the one that died"
done_testing
