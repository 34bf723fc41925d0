#!/bin/sh
# A Python function from source on another node (issue 36, "Functions
# on any node"; hk.toml(5) source): the node is a podman API service in
# a network namespace of its own, reached over TCP on its own address
# (10.224.0.2, a veth from this host's 10.224.0.1: lib/node.sh), with
# TLS (socat in front of its socket, as in 2104), its containers
# published there.  The
# source is not on the node's disk: hk-scale sends it through the
# engine (PUT /containers/ID/archive) into the created container before
# it starts.  So:
#
#	- hk validate accepts source with node_name;
#	- a request through the gateway wakes the function on the node and
#	  is answered by the handler from /app, its working directory, which
#	  the container's user (nobody) cannot write; the container has no
#	  bind mount (nothing of this host's disk);
#	- hk logs shows the function's output, read from the
#	  node's engine (GET /containers/ID/logs);
#	- a new source is a new revision, whose container on the node has
#	  the new code;
#	- secrets on another node are no longer refused for their node
#	  (2122 runs them).
#
# Both stores.  The suite's podman storage is shared by both API
# services, as in 2103: each hk-scale sees only its installation's.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh
. tests/integration/lib/node.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
pg_missing_is_failure

# The daemons stop first: hk-scale removes its container on the node
# through the node's engine, which must still be there.
_stop_daemons() {
	for _p in ${idle_pid:-} ${gw_pid:-} ${scale_pid:-} ${events_pid:-}; do
		kill -CONT "$_p" 2>/dev/null	# idle, if a failure left it held
		stop_pid "$_p" 60 2>/dev/null
	done
}
trap '_stop_daemons; ct_cleanup; node_cleanup; _cleanup' EXIT
node_up_all 0

mkdir -p "$T/app/code"
cat >"$T/app/code/app.py" <<'PY'
# A function from source: answers body.txt's text, its working directory,
# and whether it can write there; says each request on stdout.
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
        print("node-fn: served %s with %s" % (self.path, body), flush=True)

    def log_message(self, *a):
        pass


HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()
PY
cat >"$T/app/hk.toml" <<APP
schema_version = 1
name = "fn"

[services.py]
image = "$IMAGE"
source = "code"
command = ["python3", "app.py"]
node_name = "worker"
public = true

[services.py.serverless]
idle_seconds = 3600
APP
S=fn/py
H=py.fn.localhost

for st in $(engines); do
	stop_pid "${idle_pid:-}" 2>/dev/null
	stop_pid "${gw_pid:-}" 2>/dev/null
	stop_pid "${scale_pid:-}" 2>/dev/null
	stop_pid "${events_pid:-}" 2>/dev/null
	rm -rf "$RUN" "$T"/*.log
	mkdir -p "$RUN"
	new_store "$st" node
	CT_STORE=$STORE
	ct_config
	node_conf "$T/hakopod.toml"
	echo v1 >"$T/app/code/body.txt"

	run hk validate "$T/app/hk.toml"
	is "$rc" 0 "$st: source with node_name validates"
	run hk apply "$T/app/hk.toml"
	is "$rc" 0 "$st: and applies"
	start_all
	ok $? "$st: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 60 grep -q "service=$S: ready at $NODE:" "$T/scale.log"
	ok $? "$st: its first container on the node passes its readiness gate"
	INST=$(ct_install "$STORE")
	ctl activate.sock "{\"op\":\"fence\",\"service\":\"$S\",\"idle_seconds\":0}" >/dev/null &&
	    ctl scale.sock "{\"op\":\"sleep\",\"service\":\"$S\"}" >/dev/null
	wait_t 30 ct_asleep "$S"
	ok $? "$st: then sleeps"
	wait_t 30 ct_count_is 0 "$INST"
	ok $? "$st: and its container is removed"

	kill -STOP "$idle_pid"
	is "$(get "$H" /hello)" 200 "$st: a request through the gateway wakes it"
	is "$(cat "$T/body")" "v1 cwd=/app write=EACCES" \
	    "$st: answered from /app, which nobody cannot write"
	ID=$(ct_ids "$INST" running)
	like "$ID" '^[0-9a-f]{64}$' "$st: one container runs"
	is "$(ct_inspect "$ID" '{{index .Config.Labels "hk.node"}} {{.HostConfig.Binds}} {{len .Mounts}}')" \
	    "worker [] 0" "$st: made on node worker, with no bind mount"
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
	like "$ep" "^$NODE:[0-9]+\$" "$st: its endpoint is on the node: $ep"
	is "$(in_node ss -Hltn "src $ep" | grep -c .)" 1 \
	    "$st: ... published in the node's namespace"
	wait_t 20 sh -c "hk logs $S 2>/dev/null | grep -q 'node-fn: served /hello with v1\$'"
	ok $? "$st: hk logs shows the function's output, read from the node's engine"
	run hk logs "$S"
	like "$out" "rev=1 inst=container:$(echo "$ID" | cut -c1-12) node-fn: served /hello with v1\$" \
	    "$st: ... with its revision and container"

	# A new source: a new revision, its code sent to the node again.
	echo v2 >"$T/app/code/body.txt"
	run hk apply "$T/app/hk.toml"
	is "$rc" 0 "$st: a new source applies"
	v2() { [ "$(get "$H" /again)" = 200 ] && grep -q '^v2 ' "$T/body"; }
	wait_t 60 v2
	ok $? "$st: and the node's container answers with it: $(cat "$T/body")"
	kill -CONT "$idle_pid"
done

# Secrets on a node: accepted, sent through its engine (2122).
sed 's/^source = .*$/secrets = ["token"]/' "$T/app/hk.toml" >"$T/app/sec.toml"
run hk validate "$T/app/sec.toml"
is "$rc $err" "65 $T/app/sec.toml:6: services.py.secrets: no secret \"token\" in app fn (hk secret set fn token)" \
    "secrets on another node: only a missing value is refused (2122 runs them)"
done_testing
