#!/bin/sh
# The gateway's start grace (SQLite store; the path does not touch the
# store): hk-activate started before hk-scale parks a request for a
# sleeping service instead of answering 503 at once, and once hk-scale
# subscribes, within the grace, the request wakes the service and is
# answered by it, once.  A gateway whose hk-scale never comes answers the
# parked request 503 "activation unavailable" at the end of the grace:
# 5 s by default, or scale_grace_seconds.  The first case sets a grace
# that a loaded machine cannot outlast, so that it tests the parking
# alone.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

EX=$HK_TOP/etc/examples/functions
gw_config
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.cold]
command = ["python3", "$EX/hello.py"]
public = true
readiness = "http:/"
[services.cold.serverless]
startup_timeout_seconds = 20
APP
hk apply "$T/app.toml" >/dev/null
daemon events hk-events -v
ok $? "hk-events is up"

parked() {
	[ "$(gw_ctl '{"op":"status","service":"fn/cold"}' services.0.parked \
	    2>/dev/null)" = 1 ]
}

# hk-scale starts after the gateway, once the request has parked.
echo 'scale_grace_seconds = 600' >>"$T/hakopod.toml"
gw_start
ok $? "hk-activate starts before hk-scale"
gw_code cold.fn.localhost /first >"$T/first.code" 2>/dev/null &
first=$!
wait_t 4 parked
ok $? "the request for the sleeping service is parked, not answered 503"
daemon scale hk-scale -v -g 2
ok $? "hk-scale starts within the grace"
wait "$first"
is "$(cat "$T/first.code")" 200 \
    "the parked request woke the service and was answered by it"
like "$(cat "$T/body")" "^hello from python: GET /first" \
    "with the service's body"
wait_t 5 grep -q 'GET /first 200' "$T/run/logs/fn/cold/current"
is "$(count 'GET /first ' "$T/run/logs/fn/cold/current")" 1 \
    "the service saw it exactly once"
is "$(gw_code cold.fn.localhost /second)" 200 "and the next one is forwarded"
stop_pid "$scale_pid"
stop_pid "$gw_pid"

# hk-scale never comes: 503 at the end of the grace, counted from the
# gateway's start, then at once.
sed -i '/^scale_grace_seconds/d' "$T/hakopod.toml"
t0=$(date +%s%3N)
gw_start
ok $? "hk-activate starts again, without hk-scale"
is "$(gw_code cold.fn.localhost /third)" 503 \
    "hk-scale never subscribed: the parked request gets 503"
t1=$(date +%s%3N)
is "$(cat "$T/body")" "activation unavailable" "with the reason"
ok "$([ $((t1 - t0)) -ge 5000 ] && [ $((t1 - t0)) -le 9000 ] &&
    echo 0 || echo 1)" \
    "at the end of the 5 s grace ($((t1 - t0)) ms after the start)"
t0=$(date +%s%3N)
is "$(gw_code cold.fn.localhost /fourth)" 503 "a new request gets 503"
t1=$(date +%s%3N)
ok "$([ $((t1 - t0)) -lt 2000 ] && echo 0 || echo 1)" \
    "at once ($((t1 - t0)) ms)"
grep -q 'hk-scale still unavailable after 5000 ms' "$T/gw.log"
ok $? "the gateway logs the end of the grace"
stop_pid "$gw_pid"

# scale_grace_seconds = 2: the same, after 2 s.
echo 'scale_grace_seconds = 2' >>"$T/hakopod.toml"
t0=$(date +%s%3N)
gw_start
ok $? "hk-activate starts with scale_grace_seconds = 2"
is "$(gw_code cold.fn.localhost /fifth)" 503 \
    "hk-scale never subscribed: 503 at the end of that grace"
t1=$(date +%s%3N)
ok "$([ $((t1 - t0)) -ge 2000 ] && [ $((t1 - t0)) -lt 5000 ] &&
    echo 0 || echo 1)" \
    "at the end of the 2 s grace ($((t1 - t0)) ms after the start)"
grep -q 'hk-scale still unavailable after 2000 ms' "$T/gw.log"
ok $? "the gateway logs it"
stop_pid "$gw_pid"
stop_pid "$events_pid"
done_testing
