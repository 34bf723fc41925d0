#!/bin/sh
# hk logs of a container service on another node (issue 36, "Functions
# on any node"; hk(1) logs): the node is a podman API service in a
# network namespace of its own (lib/node.sh: 10.224.0.6, over TLS), and
# hk reads the container's output through that engine
# (GET /containers/ID/logs), wherever it runs.  So:
#
#	- the function's lines on stdout and on stderr show, each once,
#	  with its time, revision and container, control characters made
#	  '?', to a control host that never ran hk-scale (a config whose
#	  service log directory is empty): they come from the node;
#	- after a sleep and a wake, the first container's lines (its
#	  container removed) come from this host's service log and the new
#	  one's from the engine, none twice; -n and --since pick among them;
#	- -f shows the last line, then a new line of the running container,
#	  then the lines of the container of the next wake;
#	- a node whose engine is down is an error that names the node and
#	  its engine, exit 69; -f says so, and goes on when it is back.
#
# SQLite only: the store holds nothing here but the service and the
# installation's ID (2120 runs the node against both stores).
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh
. tests/integration/lib/node.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

_stop_daemons() {
	for _p in ${follow_pid:-} ${idle_pid:-} ${gw_pid:-} ${scale_pid:-} ${events_pid:-}; do
		kill -CONT "$_p" 2>/dev/null
		stop_pid "$_p" 60 2>/dev/null
	done
}
trap '_stop_daemons; ct_cleanup; node_cleanup; _cleanup' EXIT
node_up_all 1

mkdir -p "$T/app"
cat >"$T/app/hk.toml" <<APP
schema_version = 1
name = "lg"

[services.py]
image = "$IMAGE"
command = ["python3", "-c", '''
import os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
print("pyfn: up", flush=True)
print("pyfn: stderr says hello", file=sys.stderr, flush=True)
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
        print("pyfn: served %s" % self.path, flush=True)
        print("pyfn: warned %s \\x1b[31mred" % self.path, file=sys.stderr, flush=True)
    def log_message(self, *a):
        pass
HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()
''']
node_name = "worker"
public = true

[services.py.serverless]
idle_seconds = 3600
APP
S=lg/py
H=py.lg.localhost

new_store sqlite nlogs
CT_STORE=$STORE
mkdir -m 755 "$T/logs" "$T/elsewhere"
ct_config "service_log_dir = \"$T/logs\""
node_conf "$T/hakopod.toml"
# Another control host's view: the same installation, its own (empty)
# service log directory.
sed "s|^service_log_dir = .*|service_log_dir = \"$T/elsewhere\"|" \
    "$T/hakopod.toml" >"$T/other.toml"

run hk apply "$T/app/hk.toml"
is "$rc" 0 "the application applies"
start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
wait_t 60 grep -q "service=$S: ready at $NODE:" "$T/scale.log"
ok $? "its first container on the node passes its readiness gate"
INST=$(ct_install "$STORE")
kill -STOP "$idle_pid"
ID1=$(ct_ids "$INST" running)
like "$ID1" '^[0-9a-f]{64}$' "one container runs on the node"
I1=$(echo "$ID1" | cut -c1-12)
is "$(get "$H" /one)" 200 "a request through the gateway is answered"

other_logs() { HAKOPOD_CONFIG=$T/other.toml hk logs "$@"; }
seen() { other_logs "$S" 2>/dev/null | grep -q "$1"; }
wait_t 20 seen 'pyfn: warned /one'
ok $? "hk logs on another control host shows the function's output"
run other_logs "$S"
is "$rc" 0 "... and exits 0"
like "$out" "^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z rev=1 inst=container:$I1 pyfn: up\$" \
    "a line of stdout, with its time, revision and container"
like "$out" "rev=1 inst=container:$I1 pyfn: stderr says hello\$" "a line of stderr"
like "$out" "inst=container:$I1 pyfn: served /one\$" "the request's line on stdout"
like "$out" "inst=container:$I1 pyfn: warned /one \\?\\[31mred\$" \
    "... and on stderr, its escape made '?'"
test -z "$(ls -A "$T/elsewhere")"
ok $? "... none of it from that host's own service log, which is empty"
is "$(echo "$out" | grep -c 'pyfn: up$')" 1 "each line once"

run hk logs "$S"
is "$(echo "$out" | grep -c 'served /one$')" 1 \
    "on this host, which has the same lines in its log, each once too"

# A sleep removes the container; a wake makes another.
ctl activate.sock "{\"op\":\"fence\",\"service\":\"$S\",\"idle_seconds\":0}" >/dev/null &&
    ctl scale.sock "{\"op\":\"sleep\",\"service\":\"$S\"}" >/dev/null
wait_t 30 ct_count_is 0 "$INST"
ok $? "a sleep removes the container"
is "$(get "$H" /two)" 200 "a request wakes another"
ID2=$(ct_ids "$INST" running)
I2=$(echo "$ID2" | cut -c1-12)
test -n "$I2" && test "$I2" != "$I1"
ok $? "... a new container: $I2"
wait_t 20 seen 'pyfn: warned /two'
ok $? "its lines show"
run hk logs -n all "$S"
like "$out" "inst=container:$I1 pyfn: served /one\$" \
    "the first container's lines, from this host's log"
like "$out" "inst=container:$I2 pyfn: served /two\$" \
    "the second's, from the engine"
is "$(echo "$out" | grep -c 'pyfn: up$')" 2 "each container's first line once"
echo "$out" | cut -c1-24 | LC_ALL=C sort -c
ok $? "in the order of their times"
run other_logs "$S"
! echo "$out" | grep -q "served /one" && echo "$out" | grep -q "served /two"
ok $? "another control host has only the engine's"
run hk logs -n 1 "$S"
like "$out" "inst=container:$I2 pyfn: (served|warned) /two" "-n 1: the last line"
is "$(echo "$out" | wc -l)" 1 "... alone"
run hk logs --since 2999-01-01T00:00:00Z "$S"
is "$rc:$out" "0:" "--since a time to come: nothing"

# -f: a new line of the running container, then the next container's.
HAKOPOD_CONFIG=$T/other.toml hk logs -f -n 1 "$S" >"$T/follow.out" 2>"$T/follow.err" &
follow_pid=$!
wait_t 20 grep -q "inst=container:$I2 pyfn: warned /two" "$T/follow.out"
ok $? "hk logs -f -n 1 shows the last line first"
is "$(get "$H" /three)" 200 "then a request while it follows"
wait_t 20 grep -q "inst=container:$I2 pyfn: served /three\$" "$T/follow.out"
ok $? "hk logs -f shows its line"
ctl activate.sock "{\"op\":\"fence\",\"service\":\"$S\",\"idle_seconds\":0}" >/dev/null &&
    ctl scale.sock "{\"op\":\"sleep\",\"service\":\"$S\"}" >/dev/null
wait_t 30 ct_count_is 0 "$INST"
is "$(get "$H" /four)" 200 "a sleep, then a wake"
ID3=$(ct_ids "$INST" running)
I3=$(echo "$ID3" | cut -c1-12)
wait_t 20 grep -q "inst=container:$I3 pyfn: served /four\$" "$T/follow.out"
ok $? "hk logs -f shows the new container's lines"
like "$(cat "$T/follow.out")" "inst=container:$I3 pyfn: up\$" "... from its first"
is "$(grep -c 'served /three$' "$T/follow.out") $(grep -c 'served /one$' "$T/follow.out")" "1 0" \
    "nothing twice, nothing from before -n 1"

# The node's engine down: a clear error; -f goes on once it is back.
node_engine_down
run hk logs "$S"
is "$rc" 69 "with the node's engine down, hk logs exits 69"
like "$err" "^hk: error: $S: node worker \\(tcp://$NODE:$NODE_PORT\\): unable to read its containers' output: " \
    "and says which node and engine: $err"
is "$out" "" "... and prints no line"
wait_t 30 grep -q "unable to list its containers: .*; trying again" "$T/follow.err"
ok $? "hk logs -f says once that the engine does not answer: $(head -c 300 "$T/follow.err")"
node_engine_up
ok $? "the node's engine is back"
is "$(get "$H" /five)" 200 "a request to the container, which ran on"
wait_t 30 grep -q "inst=container:$I3 pyfn: served /five\$" "$T/follow.out"
ok $? "hk logs -f, which went on, shows its line"
is "$(grep -c 'pyfn: up$' "$T/follow.out") $(grep -c 'served /four$' "$T/follow.out")" "1 1" \
    "... and none of the lines it had shown again"
is "$(grep -c 'trying again' "$T/follow.err")" 1 "... once"
stop_pid "$follow_pid"
follow_pid=
kill -CONT "$idle_pid"
done_testing
