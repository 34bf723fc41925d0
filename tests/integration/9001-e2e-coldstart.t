#!/bin/sh
# End to end, hk-activate with hk-scale (exec backend): the first request
# to a sleeping Python and Node function is answered by it; three
# simultaneous POSTs wake a service once and are handled three times; a
# stopped service answers 503 and is not started; a backend killed with
# SIGKILL is started again by the next request; a revision applied during
# a cold start of the one that passed its gate lets that start answer,
# then takes over once it passed its own.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

EX=$HK_TOP/etc/examples/functions
gw_config "max_concurrent_starts = 2"
write_app() {	# write_app REV_GREETING
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.py]
command = ["python3", "$EX/hello.py"]
public = true
readiness = "http:/"
[services.py.serverless]
startup_timeout_seconds = 20

[services.js]
command = ["node", "$EX/hello.js"]
public = true
readiness = "http:/"
[services.js.serverless]
startup_timeout_seconds = 20

[services.rev]
command = ["sh", "-c", "[ -e $T/slow ] && sleep 1; exec python3 $EX/hello.py"]
public = true
readiness = "http:/"
[services.rev.environment]
GREETING = "$1"
[services.rev.serverless]
startup_timeout_seconds = 20
APP
	hk apply "$T/app.toml" >/dev/null
}
write_app "revision one"

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
for s in fn/py fn/js fn/rev; do
	put_to_sleep $s
	ok $? "$s passed its readiness gate and was put to sleep"
done

is "$(gw_code py.fn.localhost /hello?token=1)" 200 \
    "the first request to a sleeping Python function"
is "$(cat "$T/body")" "hello from python: GET /hello, 0 bytes received" \
    "is answered by it"
is "$(gw_code js.fn.localhost /hello)" 200 \
    "the first request to a sleeping Node function"
is "$(cat "$T/body")" "hello from javascript: GET /hello, 0 bytes received" \
    "is answered by it"
wait_t 5 events_reach 1 HTTPIdleWake fn/py
is "$(events_of HTTPIdleWake fn/py)" 1 "HTTPIdleWake recorded for the wake"

put_to_sleep fn/py
ok $? "fn/py asleep again"
starts=$(count 'service=fn/py: started pid' "$T/scale.log")
handled=$(count 'hello.py: info: POST /three 200' "$(outlog)")
for i in 1 2 3; do
	curl -sS -o "$T/p$i" -w '%{http_code}' --max-time 30 \
	    -H 'Host: py.fn.localhost' -d "n=$i" "$GW_URL/three" >"$T/p$i.code" &
	eval "p$i=\$!"
done
wait "$p1" "$p2" "$p3"
is "$(cat "$T/p1.code" "$T/p2.code" "$T/p3.code" | tr -d '\n')" 200200200 \
    "three simultaneous POSTs to a sleeping service are answered"
wait_t 5 events_reach 2 HTTPIdleWake fn/py
is "$(events_of HTTPIdleWake fn/py)" 2 "with one HTTPIdleWake"
# The wake that served them: its id is in the event and in all three
# request records, and no other request of fn/py joined it.
wake_id=$(hk-events list --json -n 1 --kind HTTPIdleWake --service fn/py |
    python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["detail"]["wake_id"])')
like "$wake_id" '^[1-9][0-9]{12,}$' "the HTTPIdleWake event carries the wake's id"
wait_t 5 sh -c "[ \$(hk-events requests --json --service fn/py |
    grep -o '\"path\": *\"/three\"' | wc -l) -ge 3 ]"
is "$(hk-events requests --json --service fn/py | python3 -c '
import json, sys
print(sorted((r["path"], r["wake_id"]) for r in json.load(sys.stdin)
             if r["wake_id"] == int(sys.argv[1]) or r["path"] == "/three"))
' "$wake_id")" "[('/three', $wake_id), ('/three', $wake_id), ('/three', $wake_id)]" \
    "the three requests joined that wake, and only they"
is "$(($(count 'service=fn/py: started pid' "$T/scale.log") - starts))" 1 \
    "and one start"
wait_for 5 sh -c "[ \$(grep -c 'hello.py: info: POST /three 200' '$T/run/logs/fn/py/current') -ge $((handled + 3)) ]"
is "$(($(count 'hello.py: info: POST /three 200' "$(outlog)") - handled))" 3 \
    "the handler log counts exactly three invocations"

put_to_sleep fn/js
ok $? "fn/js asleep"
jstarts=$(count 'service=fn/js: started pid' "$T/scale.log")
hk stop fn/js >/dev/null
is "$(gw_code js.fn.localhost /)" 503 "a stopped service answers 503"
is "$(cat "$T/body")" "service stopped" "saying so"
is "$(count 'service=fn/js: started pid' "$T/scale.log")" "$jstarts" \
    "and its process is not started"
hk start fn/js >/dev/null
is "$(gw_code js.fn.localhost /)" 200 "after hk start, traffic wakes it again"

pid=$(scale_ctl '{"op":"status"}' services.fn/py.pid)
kill -KILL "$pid"
wait_for 5 sh -c "! grep -q '^State:' /proc/$pid/status 2>/dev/null || grep -q 'State:.*Z' /proc/$pid/status"
is "$(gw_code py.fn.localhost /again)" 200 \
    "a backend killed with SIGKILL is started again by the next request"
is "$(cat "$T/body")" "hello from python: GET /again, 0 bytes received" \
    "and answers"

# A cold start of revision 1 is in progress (it starts slowly) when
# revision 2 is applied: that start goes on and answers the parked
# request (a revision that has not passed its readiness gate is never
# what a wake starts, hk-scale(8) "Releases"); revision 2 then passes
# its gate behind it and the gateway routes to it.
touch "$T/slow"
curl -sS -o "$T/rev.body" -w '%{http_code}' --max-time 30 \
    -H 'Host: rev.fn.localhost' "$GW_URL/r" >"$T/rev.code" &
rev=$!
wait_for 5 grep -q 'service=fn/rev: started pid' "$T/scale.log"
write_app "revision two"
wait "$rev"
is "$(cat "$T/rev.code")" 200 "a request parked across a new revision"
is "$(cat "$T/rev.body")" "revision one: GET /r, 0 bytes received" \
    "is answered by the revision that passed, whose start went on"
rev_routed() {
	[ "$(gw_ctl '{"op":"status"}' services.fn/rev.revision)" = 2 ]
}
wait_t 10 rev_routed
ok $? "then revision 2 passes its gate and the gateway routes to it"
is "$(gw_code rev.fn.localhost /s)" 200 "revision 2 answers"
is "$(cat "$T/body")" "revision two: GET /s, 0 bytes received" \
    "with its greeting"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
done_testing
