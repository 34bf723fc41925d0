#!/bin/sh
# hk-scale's engine client against a real podman API service
# (scripts/podman-api; make check shares one through HK_TEST_ENGINE, a
# test run alone starts its own), driven on a loop by
# tests/tools/engine-cli, as the container backend will drive it: the
# version; a pull of a missing image failing
# with the engine's reason; a container of the test image
# (scripts/test-image) created with labels, environment, limits and its
# port published on 127.0.0.1 through slirp4netns, started, answering
# HTTP there; its start, health and death in the events stream; found by
# label, its logs followed; paused (a stop refused then) and unpaused;
# stopped gracefully, removed.  A dead engine, a hung one and a TLS one
# behind socat; the events stream across a restart of the service.
# Every container is removed by ID.
. tests/integration/lib.sh

CLI=$HK_BUILD/tests/tools/engine-cli
for tool in podman curl socat openssl "$CLI"; do
	command -v "$tool" >/dev/null ||
	    { ok 1 "$tool is installed"; done_testing; }
done

U=${HK_TEST_ENGINE:-}
if [ -z "$U" ]; then
	pid=$("$HK_TOP/scripts/podman-api" start "$T/engine") &&
	    U="unix://$T/engine/podman.sock" && _pids="$_pids $pid"
fi
[ -n "$U" ]
ok $? "a podman API service runs"
[ -n "$U" ] || done_testing

# Containers of this test: labelled with it, removed by ID at the end.
TAG=hk-2100-$$
IDS=
rm_all() {
	for id in $IDS; do
		podman rm -f -t 0 "$id" >/dev/null 2>&1
	done
}
trap 'rm_all; _cleanup' EXIT
cli() { "$CLI" "$@"; }
# wait_line FILE PATTERN: waits (20 s at most) for a line in FILE
wait_line() { wait_for 20 grep -Eq "$2" "$1"; }

IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

run cli "$U" version
is "$rc $out" "0 version 4.3.1
api 1.41" "version: podman 4.3.1 serves API 1.41"

run cli "$U" pull 127.0.0.1:9/hk-test-missing:1
is "$rc" 1 "pulling a missing image fails"
like "$err" '^engine-cli: error: 200: .*127\.0\.0\.1:9.*connection refused$' \
    "with the engine's reason, from the progress stream"
run cli "$U" image localhost/hk-test-missing:1
like "$rc $err" '^1 engine-cli: error: 404: .*No such image' \
    "inspecting a missing image: 404 and the engine's message"
run cli "$U" image "$IMAGE"
like "$rc $out" '^0 sha256:[0-9a-f]{64}$' "the test image inspected"

# The events stream of this test's containers, from before the create.
bg "$CLI" "$U" events "hk.test=$TAG" >"$T/events" 2>&1
EVPID=$last_pid
wait_line "$T/events" '^up$'
ok $? "the events stream is up"

PORT=$(free_port)
run cli "$U" create -l "hk.test=$TAG" -l hk.app=engine -e GREETING=hi-2100 \
    -p 8080 -P "127.0.0.1:$PORT" -N slirp4netns:port_handler=slirp4netns \
    -m 134217728 -C 500000000 -n "$TAG" "$IMAGE"
ID=$out
IDS="$IDS $ID"
like "$rc $ID" '^0 [0-9a-f]{64}$' "a container is created: its ID"
wait_line "$T/events" "^create $ID\$"
ok $? "the events stream reports the create"
run cli "$U" inspect "$ID" 8080
like "$out" '^status=created running=0 ' "created, not running"
fmt='{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}'
run podman container inspect --format \
    "$fmt {{index .Config.Labels \"hk.app\"}}" "$ID"
is "$out" "134217728 500000000 engine" "with its limits and labels"

run cli "$U" start "$ID"
is "$rc $out" "0 ok 204" "started"
wait_line "$T/events" "^start $ID\$"
ok $? "the events stream reports the start"
wait_for 20 curl -sf -o "$T/answer" "http://127.0.0.1:$PORT/x"
ok $? "it answers HTTP on 127.0.0.1:$PORT"
ID12=$(echo "$ID" | cut -c1-12)
like "$(cat "$T/answer")" "^hi-2100 pid=[0-9]+ host=$ID12\$" \
    "from the container, with its environment"
run cli "$U" inspect "$ID" 8080
like "$out" "^status=running running=1 exit=0 health=starting \
pid=[1-9][0-9]* published=127\.0\.0\.1:$PORT\$" \
    "inspected: running, health starting, published where asked"

# A command in the container, through the exec API: its exit status.
run cli "$U" exec "$ID" /usr/bin/python3 -c 'import sys; print("out"); sys.exit(3)'
is "$rc $out" "0 exit 3" "a command run in the container: its exit status"
run cli "$U" exec "$ID" /usr/bin/python3 -c "import os, urllib.request as u; u.urlopen('http://127.0.0.1:8080/health')"
is "$rc $out" "0 exit 0" "the image's health check command, run so"

# podman runs health checks from systemd timers: none here, so by hand.
podman healthcheck run "$ID" >/dev/null 2>&1
ok $? "the image's HEALTHCHECK passes"
wait_line "$T/events" "^health $ID [a-z]+\$"
ok $? "the events stream reports the health check"
run cli "$U" inspect "$ID" 8080
like "$out" ' health=healthy ' "inspected: healthy"

run cli "$U" ls "hk.test=$TAG" hk.app=engine
is "$out" "$ID running" "listed by its labels"
run cli "$U" ls "hk.test=$TAG" hk.app=other
is "$rc $out" "0 " "not by a label it does not have"

# Paused: frozen, "paused" to inspect and list; podman 4.3 refuses to
# stop it, at once; unpaused, it answers again.
run cli "$U" pause "$ID"
is "$rc $out" "0 ok 204" "paused"
run cli "$U" inspect "$ID" 8080
like "$out" '^status=paused running=1 ' \
    "inspected: paused, and running for the engine"
run cli "$U" ls "hk.test=$TAG"
is "$out" "$ID paused" "listed as paused"
run cli "$U" stop "$ID" 10
like "$rc $err" '^1 engine-cli: error: 500: ' \
    "a stop of a paused container: refused"
run cli "$U" unpause "$ID"
is "$rc $out" "0 ok 204" "unpaused"
curl -sf -o /dev/null --max-time 10 "http://127.0.0.1:$PORT/p"
ok $? "and it answers again"

bg "$CLI" "$U" logs "$ID" >"$T/logs" 2>&1
wait_line "$T/logs" '^stdout: ct-fn: GET /x 200$'
ok $? "its logs: a request's line, followed"
grep -q '^stderr: ct-fn: stderr works$' "$T/logs"
ok $? "stderr told from stdout"

run cli "$U" kill "$ID" SIGKILL
is "$rc $out" "0 ok 204" "killed"
wait_line "$T/events" "^die $ID 137\$"
ok $? "the events stream reports the death, with exit code 137"
wait_line "$T/logs" '^ok 200$'
ok $? "the logs end with the container"
run cli "$U" inspect "$ID"
like "$out" '^status=exited running=0 exit=137 ' "inspected: exited 137"
run cli "$U" ls "hk.test=$TAG"
is "$out" "$ID exited" "listed when stopped too"

run cli "$U" start "$ID"
wait_for 20 curl -sf -o /dev/null "http://127.0.0.1:$PORT/"
ok $? "started again, answering"
run cli "$U" stop "$ID" 10
is "$rc $out" "0 ok 204" "stopped (SIGTERM)"
wait_line "$T/events" "^die $ID 0\$"
ok $? "a clean exit, code 0"
run cli "$U" stop "$ID" 10
is "$rc $out" "0 ok 304" "stopping a stopped container: 304, a success"

run cli "$U" rm "$ID"
is "$rc $out" "0 ok 204" "removed"
run cli "$U" ls "hk.test=$TAG"
is "$rc $out" "0 " "gone from the list"
run cli "$U" inspect "$ID"
like "$rc $err" '^1 engine-cli: error: 404: .*no such container' \
    "inspecting it: 404, no such container"
run cli "$U" stop "no-such-$TAG" 1
like "$rc $err" '^1 engine-cli: error: 404: ' "stopping a stranger: 404"

# A dead engine: a socket nobody listens on, and no socket at all.
python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/dead.sock"
run timeout 10 "$CLI" "unix://$T/dead.sock" version
E="engine-cli: error: 0"
is "$rc $err" "69 $E: unable to connect to unix://$T/dead.sock: \
Connection refused" \
    "a dead engine socket: refused at once, with the reason"
run timeout 10 "$CLI" "unix://$T/none.sock" version
is "$rc $err" "69 $E: unable to connect to unix://$T/none.sock: \
No such file or directory" \
    "no socket at all: said so"

# A hung engine: it takes the connection and never answers.  The call
# times out, and the loop goes on meanwhile (ticks every 10 ms).
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
c = s.accept(); time.sleep(30)' "$T/hung.sock" &
_pids="$_pids $!"
wait_for 5 test -S "$T/hung.sock"
run timeout 10 "$CLI" -T -t 1000 "unix://$T/hung.sock" version
like "$rc $err" "^69 $E: no answer from unix://$T/hung.sock within \
1[0-9]{3} ms" \
    "a hung engine: the call times out"
ticks=$(echo "$err" | sed -n 's/^loop: ticks=\([0-9]*\) .*/\1/p')
gap=$(echo "$err" | sed -n 's/^loop: ticks=[0-9]* maxgap=//p')
[ -n "$gap" ] && [ "$ticks" -ge 50 ] && [ "$gap" -lt 500 ]
ok $? "the loop ran on meanwhile (${ticks:-?} ticks of 10 ms, the \
longest gap ${gap:-?} ms)"

# TCP with TLS: socat in front of the service, a client certificate
# required.
mkdir "$T/tls"
(
	cd "$T/tls" || exit 1
	key() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"; }
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=hk-2100-ca &&
	key server 127.0.0.1 && key client hk-2100 &&
	echo subjectAltName=IP:127.0.0.1 >san.ext &&
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
	    -CAcreateserial -out server.pem -days 1 -extfile san.ext &&
	openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key \
	    -CAcreateserial -out client.pem -days 1
) >"$T/tls/log" 2>&1
ok $? "a CA, a server and a client certificate"
TPORT=$(free_port)
X=$T/tls
bg socat "OPENSSL-LISTEN:$TPORT,bind=127.0.0.1,reuseaddr,fork,\
cert=$X/server.pem,key=$X/server.key,cafile=$X/ca.pem,verify=1" \
    "UNIX-CONNECT:${U#unix://}" 2>"$T/socat.log"
wait_for 5 python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$TPORT"
run "$CLI" -c "$T/tls/client.pem" -k "$T/tls/client.key" -a "$T/tls/ca.pem" \
    "tcp://127.0.0.1:$TPORT" version
is "$rc $out" "0 version 4.3.1
api 1.41" "tcp:// with TLS and a client certificate"
run "$CLI" -a "$T/tls/ca.pem" "tcp://127.0.0.1:$TPORT" version
like "$rc $err" "^69 engine-cli: error: 0: tcp://127\.0\.0\.1:$TPORT: " \
    "without the client certificate: refused"

# The events stream across a restart of the service: a service of this
# test's own, so that the shared one stays up for the others.
R=$T/restart
pid=$("$HK_TOP/scripts/podman-api" start "$R")
ok $? "a second service, to restart"
bg "$CLI" "unix://$R/podman.sock" events "hk.test=$TAG-r" >"$T/revents" 2>&1
wait_line "$T/revents" '^up$'
ok $? "its events stream is up"
"$HK_TOP/scripts/podman-api" stop "$pid"
wait_line "$T/revents" "^down unix://$R/podman.sock closed the connection "
ok $? "the service stopped: the stream says it is down"
wait_line "$T/revents" "^down unable to connect to unix://$R/podman.sock: "
ok $? "and that it cannot reconnect yet"
pid=$("$HK_TOP/scripts/podman-api" start "$R")
ok $? "the service restarted"
_pids="$_pids $pid"
wait_for 20 sh -c "grep -c '^up\$' '$T/revents' | grep -qx 2"
ok $? "the stream is up again, by itself"
run cli "unix://$R/podman.sock" create -l "hk.test=$TAG-r" "$IMAGE"
ID=$out
IDS="$IDS $ID"
run cli "unix://$R/podman.sock" start "$ID"
wait_line "$T/revents" "^start $ID\$"
ok $? "and reports a container started after the restart"
run cli "unix://$R/podman.sock" rm "$ID"
is "$rc $out" "0 ok 204" "which is removed"
"$HK_TOP/scripts/podman-api" stop "$pid"

kill "$EVPID"
done_testing
