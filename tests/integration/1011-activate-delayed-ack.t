#!/bin/sh
# Delayed ACKs on reused backend connections.  A backend that writes its
# head and its body in two sends (Python's http.server: fn/gw-backend.py)
# holds the second by Nagle until the first is acknowledged; the gateway
# must acknowledge at once rather than let its delayed-ACK timer (40 ms)
# do it.  The example function must not need that: it sends each answer
# whole.  The test runs in a network namespace of its own, so that the
# kernel's DelayedACKs counter (delayed ACKs sent when their timer fired)
# counts its traffic alone: 50 requests on one keep-alive connection, and
# the timer may fire once or twice at the end, not once per request.
if [ -z "${HK_NETNS:-}" ]; then
	HK_NETNS=1 exec unshare --net "$0" "$@"
fi
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

ip link set lo up
ok $? "a network namespace of its own, loopback up"

delayed_acks() {
	tcpext DelayedACKs
}

# fifty PORT HOST PATH: 50 GETs on one keep-alive connection, all 200?
fifty() {
	python3 - "$@" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
ok = 0
for i in range(50):
    c.request("GET", sys.argv[3], headers={"Host": sys.argv[2]})
    r = c.getresponse()
    r.read()
    ok += r.status == 200
print(ok)
EOF
}

gw_config
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$GW_FN/gw-backend.py"]
public = true
[services.web.serverless]
min_replicas = 1

[services.hello]
command = ["python3", "$HK_TOP/etc/examples/functions/hello.py"]
public = true
[services.hello.serverless]
min_replicas = 1

[services.hellojs]
command = ["node", "$HK_TOP/etc/examples/functions/hello.js"]
public = true
[services.hellojs.serverless]
min_replicas = 1
APP
hk apply "$T/app.toml" >/dev/null
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
wait_t 20 state_is fn/web running && wait_t 20 state_is fn/hello running &&
    wait_t 20 state_is fn/hellojs running
ok $? "fn/web, fn/hello and fn/hellojs running"
is "$(fifty "$GW_PORT" web.fn.localhost /warm)" 50 "warm-up: 50 answers"

d0=$(delayed_acks)
is "$(fifty "$GW_PORT" web.fn.localhost /x)" 50 \
    "50 requests through the gateway to a head-then-body backend: 200"
d=$(($(delayed_acks) - d0))
diag "delayed ACKs: $d"
ok $((d > 3)) "the gateway acknowledged its answers at once (no delayed ACK each)"

for f in hello hellojs; do
	ep=$(gw_ctl '{"op":"status"}' services.fn/$f.endpoint)
	d0=$(delayed_acks)
	is "$(fifty "${ep##*:}" $f /x)" 50 \
	    "50 requests straight to the example $f on one connection"
	d=$(($(delayed_acks) - d0))
	diag "delayed ACKs: $d"
	ok $((d > 3)) "$f sends each answer whole: no delayed ACK each"
done

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"

done_testing
