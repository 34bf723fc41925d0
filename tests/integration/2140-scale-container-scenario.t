#!/bin/sh
# The product's own verification, with containers on two nodes (issue
# 36, "Functions on any node"; 9300 runs it with HAProxy in front and
# exec services): one application, its Python service from source placed
# on the worker node (lib/node.sh: a podman API service in a network
# namespace, reached over TLS), its JavaScript service from source on the
# management node (this host's engine, the default node) and kept warm.
# So:
#
#	- the idle Python service reaches zero containers while the
#	  JavaScript one stays at one container and answers without a wake;
#	- three simultaneous POSTs wake the Python service on the worker;
#	  each gets its own answer, and its output (read from the worker's
#	  engine) shows exactly one invocation for each;
#	- the request log records the three, each joined to the one wake;
#	- the routes show each service's endpoint on its node;
#	- after hk stop, public traffic leaves it at zero.
#
# hk-scale is held (SIGSTOP) while the three are sent, so that all three
# are parked before the wake begins.  Both stores.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh
. tests/integration/lib/node.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
NIMAGE=$("$HK_TOP/scripts/test-image-node")
ok $? "the Node image is there: $NIMAGE"
pg_missing_is_failure

_stop_daemons() {
	for _p in ${idle_pid:-} ${gw_pid:-} ${scale_pid:-} ${events_pid:-}; do
		kill -CONT "$_p" 2>/dev/null	# if a failure left it held
		stop_pid "$_p" 60 2>/dev/null
	done
}
# The daemons stop first: hk-scale removes its container on the node
# through the node's engine, which must still be there.
trap '_stop_daemons; ct_cleanup; node_cleanup; _cleanup' EXIT
node_up_all 2

mkdir -p "$T/app/py" "$T/app/js"
cat >"$T/app/py/app.py" <<'PY'
# The Python function: answers each POST with its body and says each
# invocation on stdout.
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        b = b"py-fn body=" + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
        print("py-fn: invoked %s %s body=%s" % (self.command, self.path,
              body.decode()), flush=True)

    def log_message(self, *a):
        pass


ThreadingHTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()
PY
cat >"$T/app/js/app.js" <<'JS'
// The JavaScript service: answers every request with Node's version.
const http = require("http");
http.createServer((req, res) => {
	const body = "js-fn node " + process.version + " " + req.method + " " +
	    req.url + "\n";
	res.writeHead(200, { "Content-Type": "text/plain",
	    "Content-Length": Buffer.byteLength(body) });
	res.end(body);
	console.log("js-fn: " + req.method + " " + req.url);
}).listen(Number(process.env.PORT), "0.0.0.0");
JS
cat >"$T/app/hk.toml" <<APP
schema_version = 1
name = "fn"

[services.py]
image = "$IMAGE"
source = "py"
command = ["python3", "app.py"]
node_name = "worker"
public = true

[services.py.serverless]
idle_seconds = 3600

[services.js]
image = "$NIMAGE"
source = "js"
command = ["node", "app.js"]
public = true

[services.js.serverless]
min_replicas = 1
APP

post() {
	curl -sS -o "$T/post.$1" -w '%{http_code}' --max-time 120 \
	    -H 'Host: py.fn.localhost' --data-binary "n=$1" "$URL/hello" \
	    >"$T/code.$1" 2>"$T/curl.$1"
}
parked_is() {
	[ "$(ctl activate.sock '{"op":"status"}' services.fn/py.parked)" = "$1" ]
}
reqs() {
	hk-events requests --json --service fn/py |
	    python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(sorted("%s:%s:%s%s:%s" % (x["method"], x["status"], x["host"], x["path"], "woke" if x.get("wake_id") else "warm") for x in r)))'
}
R="POST:200:py.fn.localhost/hello:woke"
three_logged() { [ "$(reqs)" = "$R $R $R" ]; }
invocations() {
	hk logs fn/py 2>/dev/null | grep -c 'py-fn: invoked POST /hello body=n=[123]$'
}
invoked_3() { [ "$(invocations)" = 3 ]; }

for st in $(engines); do
	_stop_daemons
	rm -rf "$RUN" "$T"/*.log
	mkdir -p "$RUN"
	new_store "$st" scen
	CT_STORE=$STORE
	ct_config
	node_conf "$T/hakopod.toml"

	run hk apply "$T/app/hk.toml"
	is "$rc" 0 "$st: the application applies: Python on worker, JavaScript on the default node"
	start_all
	ok $? "$st: hk-events, hk-scale, hk-activate and hk-idle are ready"
	INST=$(ct_install "$STORE")
	wait_t 60 grep -q "service=fn/py: ready at $NODE:" "$T/scale.log"
	ok $? "$st: ... on the worker, where it passes its readiness gate"
	ctl activate.sock '{"op":"fence","service":"fn/py","idle_seconds":0}' >/dev/null &&
	    ctl scale.sock '{"op":"sleep","service":"fn/py"}' >/dev/null
	wait_t 60 ct_asleep fn/py
	ok $? "$st: then sleeps"
	wait_t 60 ct_svc_count_is 0 "$INST" py
	ok $? "$st: the idle Python service has no container"
	wait_t 60 scale_is fn/js running
	ok $? "$st: the JavaScript service is kept warm (min_replicas = 1)"
	JS=$(ct_svc_ids "$INST" js running)
	like "$JS" '^[0-9a-f]{64}$' "$st: ... in one container"
	is "$(ct_inspect "$JS" '{{index .Config.Labels "hk.node"}}')" \
	    "$(uname -n)" "$st: ... on the default node, this host"

	is "$(get js.fn.localhost /hi)" 200 "$st: the JavaScript service answers"
	like "$(cat "$T/body")" '^js-fn node v[0-9.]+ GET /hi$' \
	    "$st: ... from its source, run by the image's node"
	is "$(events_of HTTPIdleWake fn/js)" 0 "$st: ... without a wake"
	wait_t 20 sh -c "hk logs fn/js 2>/dev/null | grep -q 'js-fn: GET /hi\$'"
	ok $? "$st: hk logs shows the JavaScript service's output"

	# Three at once, parked while hk-scale is held.
	kill -STOP "$idle_pid"
	kill -STOP "$scale_pid"
	for i in 1 2 3; do post $i & eval "p$i=\$!"; done
	wait_t 60 parked_is 3
	ok $? "$st: three simultaneous POSTs park for the Python service's wake"
	kill -CONT "$scale_pid"
	wait "$p1"; wait "$p2"; wait "$p3"
	is "$(cat "$T/code.1" "$T/code.2" "$T/code.3" | tr -d '\n')" 200200200 \
	    "$st: three 200s"
	for i in 1 2 3; do
		is "$(cat "$T/post.$i")" "py-fn body=n=$i" "$st: POST $i: its own answer"
	done
	PY=$(ct_svc_ids "$INST" py running)
	like "$PY" '^[0-9a-f]{64}$' "$st: one Python container runs"
	is "$(ct_inspect "$PY" '{{index .Config.Labels "hk.node"}} {{len .Mounts}}')" \
	    "worker 0" "$st: ... on the worker, with no mount of this host's"
	wait_t 30 invoked_3
	is "$(invocations)" 3 \
	    "$st: hk logs, from the worker's engine: one invocation for each"
	wait_t 10 events_reach 1 HTTPIdleWake fn/py
	is "$(events_of HTTPIdleWake fn/py)" 1 "$st: one wake"
	wait_t 20 three_logged
	is "$(reqs)" "$R $R $R" "$st: the request log: three POSTs, each joined to the wake"

	run hk routes
	like "$out" "py\\.fn\\.localhost.*fn/py" "$st: hk routes shows the Python route"
	ep=$(ctl scale.sock '{"op":"status"}' services.fn/py.endpoint)
	like "$ep" "^$NODE:[0-9]+\$" "$st: its endpoint is on the worker: $ep"
	kill -CONT "$idle_pid"

	# A manual stop: public traffic does not start it again.
	run hk stop fn/py
	is "$rc" 0 "$st: hk stop"
	wait_t 60 scale_is fn/py stopped
	ok $? "$st: the Python service is stopped"
	wait_t 60 ct_svc_count_is 0 "$INST" py
	ok $? "$st: ... with no container"
	is "$(post 4; cat "$T/code.4")" 503 "$st: a POST to it: 503"
	is "$(ct_svc_ids "$INST" py | grep -c .) $(scale_state fn/py)" \
	    "0 stopped" "$st: ... and it stays at zero"
	is "$(get js.fn.localhost /after)" 200 \
	    "$st: the JavaScript service answers still"
done
done_testing
