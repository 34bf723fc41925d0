#!/bin/sh
# A restart of hk-scale is invisible to clients (SQLite store; the
# gateway's behaviour does not depend on the engine): requests for a
# sleeping service that arrive while hk-scale is away park, and once a new
# hk-scale subscribes they wake the service and are answered by it; a
# running service keeps answering meanwhile.  An hk-scale that stays away
# longer than the 5 s grace gets 503 "activation unavailable": the parked
# request at the end of the grace, a new one at once.
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

[services.warm]
command = ["python3", "$EX/hello.py"]
public = true
readiness = "http:/"
[services.warm.serverless]
min_replicas = 1
APP
hk apply "$T/app.toml" >/dev/null
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
put_to_sleep fn/cold
ok $? "fn/cold passed its gate and sleeps"
wait_t 20 state_is fn/warm running
ok $? "fn/warm runs"

# kill_scale: SIGKILL, and wait until the gateway has noticed.
kill_scale() {
	_n=$(count 'hk-scale unavailable' "$T/gw.log")
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	wait_t 5 sh -c "[ \$(grep -c 'hk-scale unavailable' '$T/gw.log') -gt $_n ]"
}

kill_scale
ok $? "hk-scale killed, the gateway noticed"
gw_code cold.fn.localhost /hello >"$T/cold.code" 2>/dev/null &
cold_curl=$!
is "$(gw_code warm.fn.localhost /hello)" 200 \
    "a running service answers while hk-scale is away"
sleep 0.5
ok "$(alive "$cold_curl" && echo 0 || echo 1)" \
    "the request for the sleeping service waits, parked"
daemon scale hk-scale -v -g 2
ok $? "hk-scale is back"
wait "$cold_curl"
is "$(cat "$T/cold.code")" 200 \
    "the parked request woke the service and was answered by it"
is "$(gw_code cold.fn.localhost /hello)" 200 "and the next one too"

put_to_sleep fn/cold
ok $? "fn/cold sleeps again"
kill_scale
ok $? "hk-scale killed again"
t0=$(date +%s%3N)
is "$(gw_code cold.fn.localhost /hello)" 503 \
    "hk-scale away past the grace: the parked request gets 503"
t1=$(date +%s%3N)
is "$(cat "$T/body")" "activation unavailable" "with the reason"
ok "$([ $((t1 - t0)) -ge 3000 ] && echo 0 || echo 1)" \
    "after waiting for the grace ($((t1 - t0)) ms)"
t0=$(date +%s%3N)
is "$(gw_code cold.fn.localhost /hello)" 503 "a new request gets 503"
t1=$(date +%s%3N)
ok "$([ $((t1 - t0)) -lt 2000 ] && echo 0 || echo 1)" \
    "at once ($((t1 - t0)) ms)"
is "$(gw_code warm.fn.localhost /hello)" 200 "the running service still answers"

# A new hk-scale adopts fn/warm's instance and stops it when it stops.
daemon scale hk-scale -v -g 2
ok $? "hk-scale is back once more"
stop_pid "$scale_pid"
stop_pid "$gw_pid"
stop_pid "$events_pid"
done_testing
