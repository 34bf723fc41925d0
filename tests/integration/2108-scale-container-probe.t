#!/bin/sh
# A container's tcp readiness behind its published port's forwarder.  The
# forwarder (rootlessport here) accepts a connection before anything
# listens in the container, and closes it once it finds nothing there; on
# a busy machine that close came after the probe's hold, and a container
# that did not listen yet was declared ready: the gateway then sent the
# first request into a connection the forwarder closed (502).  hk-scale
# reads the container's own sockets instead (its first process's network
# namespace, /proc/PID/net/tcp), so the forwarder's timing cannot matter.
# The test makes the worst case last: fn/late's command waits for /tmp/go
# in its container, and the forwarder is stopped (SIGSTOP, by its pid)
# while hk-scale probes, so that it never closes a connection at all.
# fn/late stays starting for three times the longest hold (1 s), then,
# the forwarder going on and /tmp/go made, is ready and answers 200.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
for tool in ss; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
WAIT_PAUSE=0.1	# each wait polls podman


late_id() {
	podman ps -q --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=late" --filter status=running 2>/dev/null
}
has_late() { [ -n "$(late_id)" ]; }
# forwarder PORT: the pid of the process listening on 127.0.0.1:PORT
forwarder() {
	ss -ltnpH "sport = :$1" | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n 1
}
fwd=
resume_forwarder() { [ -n "$fwd" ] && kill -CONT "$fwd" 2>/dev/null; fwd=; }
trap 'resume_forwarder; ct_cleanup; _cleanup' EXIT

new_store sqlite ctprobe
scale_operator "$T/hakopod.toml" "$STORE" "container_engine = \"$U\"
container_network = \"slirp4netns\""
export HAKOPOD_CONFIG="$T/hakopod.toml"
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.late]
image = "$IMAGE"
command = [$CT_HELD]
port = 8080
public = true
[services.late.serverless]
startup_timeout_seconds = 120
APP
hk apply "$T/app.toml" >/dev/null
ok $? "applied: fn/late, ready by tcp (the default)"
daemon scale hk-scale -v
ok $? "hk-scale starts"
INST=$(ct_install "$STORE")

is "$(ctl '{"op":"wake","service":"fn/late"}')" '{"ok":true}' "woken"
wait_t 30 has_late
ok $? "its container runs (its command holds)"
ID=$(late_id)
hp=$(podman port "$ID" 8080/tcp | sed -n 's/.*:\([0-9]*\)$/\1/p' | head -n 1)
fwd=$(forwarder "$hp")
[ -n "$fwd" ]
ok $? "the published port $hp is a forwarder's (pid $fwd: $(cat "/proc/$fwd/comm" 2>/dev/null))"
kill -STOP "$fwd"
ok $? "the forwarder stopped: it accepts, and closes nothing"
sleep 3	# the bound is the behaviour: three times the longest hold
is "$(status_of fn/late state)" starting \
    "after 3 s the service is still starting: nothing listens in it"
grep -q "service=fn/late: ready" "$T/scale.log"
ok $((!$?)) "hk-scale never said it was ready" ||
    grep "service=fn/late" "$T/scale.log" | tail -n 8 | sed 's/^/#   /'
resume_forwarder
podman exec "$ID" /usr/bin/python3 -c 'open("/tmp/go", "w")'
ok $? "released: the function listens"
wait_t 30 state_is fn/late running
ok $? "then it is ready"
like "$(grep 'service=fn/late: probe: port' "$T/scale.log")" \
    'probe: port 8080 listens in the network namespace of pid [0-9]+' \
    "by its own sockets, port 8080 in its network namespace"
ep=$(status_of fn/late endpoint)
like "$(get "http://$ep/a")" '^hello ' "and answers at $ep"

stop_pid "$scale_pid" 120
wait_t 20 ct_count_is 0 "$INST"
ok $? "SIGTERM: no container is left"
grep -Eq 'Sanitizer|runtime error' "$T/scale.log"
ok $((!$?)) "no sanitizer report"
done_testing
