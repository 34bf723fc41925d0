#!/bin/sh
# Where a cold start's time goes: a wake of a service that sleeps 1 s
# before it listens is recorded by hk-scale (HTTPIdleWake: spawn_ms,
# port_ms, readiness_ms) and by the gateway (HTTPWakeFirstByte, the same
# wake_id: first_byte_ms), shown by hk status and hk events, exported as
# hk_wake_first_byte_seconds; the request's record carries its wait and
# the wake_id.  With cold_start_header, the woken response says what it
# waited (Hk-Cold-Start: MS); a warm one does not; without it, none does.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
MPORT=$(free_port)
gw_config "cold_start_header = true" "[metrics]" \
    "activate = \"127.0.0.1:$MPORT\""
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.slow]
command = ["sh", "-c", "sleep 1; exec python3 $BE"]
public = true
[services.slow.environment]
GW_LOG = "$W/slow.inv"
[services.slow.serverless]
startup_timeout_seconds = 10

[services.quick]
command = ["sh", "$GW_FN/held", "$T/quick", "python3", "$BE"]
public = true
[services.quick.serverless]
startup_timeout_seconds = 10

[services.http]
command = ["python3", "$BE"]
public = true
readiness = "http:/ready"
[services.http.serverless]
startup_timeout_seconds = 10
APP
hk apply "$T/app.toml" >/dev/null
ok $? "hk apply"
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
put_to_sleep fn/slow
ok $? "fn/slow passed its readiness gate and sleeps"

get() {	# get NAME: a GET of fn/slow; head in $T/NAME.head
	curl -sS -o /dev/null -D "$T/$1.head" -w '%{http_code}' --max-time 20 \
	    -H 'Host: slow.fn.localhost' "$GW_URL/"
}
hdr() {	# hdr NAME: the Hk-Cold-Start field's value, or nothing
	tr -d '\r' <"$T/$1.head" | sed -n 's/^hk-cold-start: //Ip'
}

is "$(get cold)" 200 "a request wakes fn/slow and is answered"
cs=$(hdr cold)
like "$cs" '^[0-9]+$' "cold_start_header: the woken response says Hk-Cold-Start: $cs"
ok $(( !(cs >= 1000 && cs < 20000) )) "... at least the 1 s the service slept ($cs ms)"
is "$(get warm) $(hdr warm)" "200 " "a warm response has no Hk-Cold-Start"

wait_t 5 events_reach 1 HTTPWakeFirstByte fn/slow
ok $? "the gateway recorded HTTPWakeFirstByte"
hk-events list --json -n 0 --service fn/slow >"$T/ev.json"
python3 - "$T/ev.json" >"$T/bd.txt" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
w = [e["detail"] for e in ev if e["kind"] == "HTTPIdleWake"][-1]
f = [e["detail"] for e in ev if e["kind"] == "HTTPWakeFirstByte"][-1]
print("same wake", w["wake_id"] == f["wake_id"])
print("order", 0 <= w["spawn_ms"] <= w["port_ms"] <= w["readiness_ms"]
      <= f["first_byte_ms"])
print("slept", w["readiness_ms"] >= 1000)
print("status", f["status"])
PY
is "$(cat "$T/bd.txt")" "same wake True
order True
slept True
status 200" "the breakdown: spawn <= port <= ready (>= 1 s) <= first byte, one wake_id"

run hk status fn/slow
like "$out" '^last wake: +20[0-9-]+T[0-9:]+.* \(request\): spawn [0-9]+ ms, port [0-9]+ ms, ready [0-9]+ ms, first byte [0-9]+ ms$' \
    "hk status shows the last wake's breakdown"
is "$(hk status --json fn/slow | python3 -c 'import json,sys
w = json.load(sys.stdin)["last_wake"]
print(sorted(k for k in w if k.endswith("_ms")))')" \
    "['first_byte_ms', 'port_ms', 'readiness_ms', 'spawn_ms']" "hk status --json: last_wake"

requests_json >"$T/req.json"
python3 - "$T/req.json" "$T/ev.json" >"$T/rq.txt" <<'PY'
import json, sys
rq = json.load(open(sys.argv[1]))
ev = json.load(open(sys.argv[2]))
wid = [e["detail"]["wake_id"] for e in ev if e["kind"] == "HTTPIdleWake"][-1]
cold = [r for r in rq if r.get("wake_id") == wid]
print(len(cold), cold[0]["wait_us"] >= 1000000 if cold else None)
PY
is "$(cat "$T/rq.txt")" "1 True" "the request's record has its wait and the wake's id"

curl -sS "http://127.0.0.1:$MPORT/metrics" >"$T/metrics.txt"
is "$(sed -n 's/^hk_wake_first_byte_seconds_count //p' "$T/metrics.txt")" 1 \
    "hk_wake_first_byte_seconds counts the wake"

# The readiness probe's connection.  gw-backend.py numbers its connections
# from 1 as it accepts them (GET /conn answers "conn N").
conn() {	# conn SERVICE: GET /conn through the gateway
	curl -sS --max-time 20 -H "Host: $1.fn.localhost" "$GW_URL/conn"
}
put_to_sleep fn/quick
ok $? "fn/quick passed its readiness gate and sleeps"
is "$(conn quick)" "conn 1" \
    "tcp probe: the request that woke fn/quick came on the probe's connection, the service's first"
is "$(conn quick)" "conn 1" "... which the gateway keeps, as any other, for the next request"
put_to_sleep fn/quick
ok $? "fn/quick sleeps again"
# The three are parked before it starts (fn/held): a busy machine could
# otherwise spread them so that each finds the last one's connection.
touch "$T/quick.hold"
bursts=
for i in 1 2 3; do
	conn quick >"$T/burst.$i" &
	bursts="$bursts $!"
done
wait_t 20 sh -c "[ \"\$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/quick.parked)\" = 3 ]"
ok $? "three requests park while it starts"
touch "$T/quick.go"
wait $bursts
is "$(cat "$T/burst.1" "$T/burst.2" "$T/burst.3" | sort | head -n 1)" "conn 1" \
    "three requests wake it: one of them takes the probe's connection"
is "$(cat "$T/burst.1" "$T/burst.2" "$T/burst.3" | sort -u | wc -l)" 3 \
    "... the other two their own connections, all answered"
put_to_sleep fn/http
ok $? "fn/http (readiness http:/ready) sleeps"
is "$(conn http)" "conn 2" \
    "http probe: its own connection is closed (conn 1), the request comes on a new one"
is "$(grep -c 'passed with "ready"' "$T/gw.log")" 0 "the gateway took every connection passed to it"

# cold_start_header off (SIGHUP): no field
sed -i '/^cold_start_header/d' "$T/hakopod.toml"
kill -HUP "$gw_pid"
put_to_sleep fn/slow
ok $? "fn/slow sleeps again"
is "$(get off) $(hdr off)" "200 " "cold_start_header = false: no Hk-Cold-Start"

# A start that fails: hk ps and hk status say why, from the event log.
cat >>"$T/app.toml" <<APP

[services.broken]
command = ["sh", "-c", "echo cannot start >&2; exit 3"]
public = true
[services.broken.serverless]
startup_timeout_seconds = 10
APP
hk apply "$T/app.toml" >/dev/null
ok $? "hk apply adds fn/broken, whose process exits at once"
wait_t 60 sh -c "[ \"\$(hk ps | awk -F '\t' '\$2 == \"broken\" { print \$3 }')\" = failed ]"
ok $? "hk ps: fn/broken failed"
wait_t 30 events_reach 1 StartFailed fn/broken
ok $? "hk-events has its StartFailed"
hk ps --json | python3 -c 'import json, sys
for s in json.load(sys.stdin):
    print(s["service"], s["last_failure"] and (s["last_failure"]["revision"],
        "exit" in s["last_failure"]["reason"]))' >"$T/psf.txt"
is "$(sort "$T/psf.txt")" "broken (1, True)
http None
quick None
slow None" "hk ps --json: last_failure for the failed service alone, with its reason"
reason=$(hk ps --json | python3 -c 'import json, sys
print([s for s in json.load(sys.stdin) if s["service"] == "broken"][0]["last_failure"]["reason"])')
run hk status fn/broken
line=$(printf '%s\n' "$out" | grep '^last failed:')
like "$line" '^last failed: +20[0-9-]+T[0-9:]+Z \(revision 1\): ' \
    "hk status: last failure, its time and revision"
is "${line#*): }" "$reason" "... and its reason, as hk ps --json has it ($reason)"
run hk status fn/slow
like "$out" '^last failed: +none kept$' "hk status: a service that never failed has none"
script -qec "hk ps" /dev/null </dev/null | tr -d '\r' >"$T/ps.tty"
like "$(cat "$T/ps.tty")" "fn/broken: +20[0-9-]+T[0-9:]+Z \\(revision 1\\): " \
    "hk ps on a terminal: why fn/broken failed, under the table"

for p in $gw_pid $scale_pid $events_pid; do
	stop_pid "$p"
done
done_testing
