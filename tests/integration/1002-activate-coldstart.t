#!/bin/sh
# hk-activate's cold starts, with hk-scale (exec backend) running real
# functions (fn/gw-backend.py, fn/gw-late.py): parked requests forwarded on
# ready with one wake, a failed start and a wake refused as stopped
# answered 503 at once, the startup deadline 504, a refused connection
# retried within the startup deadline, fence and down, hk-scale going
# away (killed) and coming back, and the request records hk-events keeps.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
gw_config "max_concurrent_requests = 16" "max_concurrent_starts = 4"
svc() {	# svc NAME COMMAND [EXTRA]: a function, startup deadline 5 s
	cat <<APP

[services.$1]
command = ["sh", "-c", "$2"]
public = true
${3:-}
[services.$1.environment]
GW_LOG = "$W/$1.inv"
GW_GO = "$T/$1.go"
[services.$1.serverless]
startup_timeout_seconds = 5
APP
}
# hk-scale starts each new service once (its readiness gate), then each
# is put to sleep as hk-idle would.  From then on $T/fail.go makes fn/fail
# print "boom" and 400 bytes more and exit 1, $T/never.go makes fn/never hang without
# listening, fn/late (gw-late.py) listens only once $T/late.go exists, and
# fn/cold and fn/leave, once $T/NAME.hold exists, start only once the
# test makes $T/NAME.go (fn/held): a start that lasts as long as the test
# needs it to, however busy the machine.  fn/fail's line is long, as an
# engine's errors are: its reason reaches the client whole.
LONG=$(printf 'x%.0s' $(seq 1 400))
held() {	# held NAME: the command of a function the test holds
	echo "exec sh $GW_FN/held $T/$1 python3 $BE"
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc cold "$(held cold)"
	svc fail "[ -e $T/fail.go ] && { echo boom $LONG; exit 1; }; exec python3 $BE"
	svc never "[ -e $T/never.go ] && exec sleep 1000; exec python3 $BE"
	svc refuse "exec python3 $BE"
	svc late "exec python3 $GW_FN/gw-late.py" 'readiness = "notify"'
	svc leave "$(held leave)"
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
for s in cold fail never refuse leave late; do
	put_to_sleep fn/$s
	ok $? "fn/$s passed its readiness gate and sleeps"
done
touch "$T/fail.go" "$T/never.go" "$T/cold.hold" "$T/leave.hold"
wakes() {	# wakes SERVICE: wakes the gateway sent for it
	count "service=$1: wake sent" "$T/gw.log"
}
starts() {	# starts SERVICE: processes hk-scale started for it
	count "service=$1: started pid" "$T/scale.log"
}

# The startup deadline runs in the background meanwhile (5 s).
curl -sS -o "$T/never.body" -w '%{http_code} %{time_total}' --max-time 20 \
    -H 'Host: never.fn.localhost' "$GW_URL/" >"$T/never.out" &
never=$!

# fn/cold starts once the three are parked.
cold_starts=$(starts fn/cold)
for i in 1 2 3; do
	curl -sS -o "$T/post$i" -w '%{http_code}' --max-time 20 \
	    -H 'Host: cold.fn.localhost' -H 'Authorization: Bearer secret' \
	    -H 'Cookie: c=secret' -d "n=$i" "$GW_URL/p?secret=$i" \
	    >"$T/post$i.code" &
	eval "post$i=\$!"
done
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/cold.parked) = 3 ]"
is "$(gw_ctl '{"op":"status"}' services.fn/cold.state \
    services.fn/cold.parked)" "starting
3" "three requests park while the service starts"
touch "$T/cold.go"
wait "$post1" "$post2" "$post3"
is "$(cat "$T/post1.code" "$T/post2.code" "$T/post3.code" | tr -d '\n')" \
    200200200 "all three are answered once it is ready"
is "$(cat "$T/post1")" "POST /p bytes=3" "by the function"
is "$(wakes fn/cold)/$(($(starts fn/cold) - cold_starts))" 1/1 \
    "one wake, one start for the cold start"
is "$(count 'invocation POST /p' "$W/cold.inv")" 3 \
    "the handler saw exactly three requests"
is "$(gw_ctl '{"op":"status"}' services.fn/cold.state \
    services.fn/cold.endpoint services.fn/cold.active)" "running
$(scale_ctl '{"op":"status"}' services.fn/cold.endpoint)
0" "status: running at hk-scale's endpoint, nothing active"
is "$(gw_code cold.fn.localhost /warm)" 200 "a warm request goes straight through"
is "$(wakes fn/cold)" 1 "without a wake"

# fn/fail prints "boom" and exits 1: hk-scale's first backoff is 1 s,
# doubled at each failure after it.  The checks of what holds while a
# backoff lasts are made in the third (4 s), which a busy machine does
# not outlast.
is "$(gw_code fail.fn.localhost /)" 503 "a failed start: 503"
is "$(cat "$T/body")" "service failed to start: exit status 1: boom $LONG" \
    "with the reason, whole (an engine's errors are long)"
is "$(gw_header retry-after)" 1 "and Retry-After from retry_after: 1 s"
is "$(wakes fn/fail)/$(count 'service=fn/fail: unable to start' \
    "$T/scale.log")" 1/1 "one wake, one start"
backoff_reaches() {	# backoff_reaches S: a 503 says Retry-After S or more
	[ "$(gw_code fail.fn.localhost /)" = 503 ] &&
	    [ "$(gw_header retry-after)" -ge "$1" ]
}
wait_t 30 backoff_reaches 4
ok $? "woken again after each backoff, it fails again: 1, 2, then 4 s"
is "$(gw_code fail.fn.localhost /)" 503 "again while retry_after lasts: 503"
is "$(wakes fn/fail)/$(count 'service=fn/fail: unable to start' \
    "$T/scale.log")" 3/3 "at once: no wake, no start while a backoff lasts"
is "$(gw_ctl '{"op":"status"}' services.fn/fail.state)" failed \
    "status: failed"

# hk stop as seen by hk-scale only (an hk that reaches scale.sock alone):
# the gateway learns it from the refused wake.
mkdir "$T/only-scale"
ln -s "$T/run/scale.sock" "$T/only-scale/scale.sock"
HAKOPOD_RUNTIME_DIR=$T/only-scale hk stop fn/refuse >/dev/null
is "$(gw_code refuse.fn.localhost /)" 503 "a wake refused as stopped: 503"
is "$(cat "$T/body")" "service stopped" "body: service stopped"
like "$(cat "$T/gw.log")" 'service=fn/refuse: wake refused: stopped' \
    "hk-scale refused the wake"
is "$(gw_code refuse.fn.localhost /)" 503 "stays stopped"
is "$(wakes fn/refuse)" 1 "and is not woken again"

# fn/late says it is ready (readiness = "notify") before it listens: the
# connection is refused, the request goes back to the queue and
# another wake is sent, until the function listens.
curl -sS -o "$T/late.body" -w '%{http_code}' --max-time 20 \
    -H 'Host: late.fn.localhost' "$GW_URL/late" >"$T/late.code" &
late=$!
wait_t 5 sh -c "[ \$(grep -c 'service=fn/late: wake sent' '$T/gw.log') -ge 2 ]"
ok $? "a refused connection is retried with a new wake"
touch "$T/late.go"
wait "$late"
is "$(cat "$T/late.code")" 200 "and answered once the function listens"
is "$(count 'invocation GET /late' "$W/late.inv")" 1 "exactly once"

# A client that leaves while parked is not forwarded (fn/leave starts once
# it has left).
curl -sS -o /dev/null --max-time 0.5 -H 'Host: leave.fn.localhost' \
    "$GW_URL/left" 2>/dev/null
wait_t 10 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/leave.active) = 0 ]"
ok $? "a client that hangs up while parked gives its slot back"
touch "$T/leave.go"
wait_t 20 state_is fn/leave running
is "$(count 'invocation GET /left' "$W/leave.inv")" 0 \
    "and its request is not forwarded"

wait "$never"
like "$(cat "$T/never.out")" '^504 (4\.9|[5-9]\.)' \
    "a service never ready: 504 at startup_timeout_seconds (5 s: 4.9 to 9.9)"
is "$(cat "$T/never.body")" "startup deadline exceeded" "body says so"

# Fence: hk-idle's question.  Granted, new requests park and wake; the
# fenced instance's ready (sent again by hk-scale for the wake) is not
# used; hk-idle's sleep brings its down, then a fresh start.
is "$(gw_ctl '{"op":"fence","service":"fn/cold","idle_seconds":0}')" \
    '{"ok":true}' "fence granted to an idle service"
is "$(gw_ctl '{"op":"status"}' services.fn/cold.state)" draining \
    "status: draining"
cold_starts=$(starts fn/cold)
curl -sS -o "$T/fenced.body" -w '%{http_code}' --max-time 20 \
    -H 'Host: cold.fn.localhost' "$GW_URL/fenced" >"$T/fenced.code" &
fenced=$!
wait_t 5 sh -c "[ \$(grep -c 'service=fn/cold: wake sent' '$T/gw.log') -ge 2 ]"
ok $? "a request after the fence wakes"
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/cold.parked) = 1 ]"
ok $? "and parks: the fenced instance's ready is not used"
is "$(count 'invocation GET /fenced' "$W/cold.inv")" 0 \
    "nothing reaches the fenced instance"
is "$(scale_ctl '{"op":"sleep","service":"fn/cold"}')" '{"ok":true}' \
    "hk-scale puts the fenced instance to sleep"
wait "$fenced"
is "$(cat "$T/fenced.code")" 200 "after its down, a fresh start answers"
is "$(wakes fn/cold)/$(($(starts fn/cold) - cold_starts))" 3/1 \
    "woken again after the down, one new process"

is "$(gw_ctl '{"op":"fence","service":"fn/cold","idle_seconds":3600}' \
    ok active)" "false
0" "fence refused before idle_seconds after the last request"

# hk-scale goes away (killed: its instances live on): wakes are
# impossible, warm services still work; a new hk-scale adopts them.
# fn/never, failed at its deadline, sleeps again once its backoff is
# over: the gateway answers a wake of it from then on.
wait_t 20 state_is fn/never sleeping
ok $? "fn/never sleeps again after its failure's backoff"
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
wait_t 5 grep -q 'hk-scale unavailable' "$T/gw.log"
ok $? "the gateway notices hk-scale went away"
is "$(gw_code never.fn.localhost /)" 503 "a sleeping service: 503"
is "$(cat "$T/body")" "activation unavailable" "activation unavailable"
is "$(gw_code cold.fn.localhost /)" 200 "a running service still answers"
daemon scale2 hk-scale -v -g 2
ok $? "hk-scale started again"
wait_t 5 sh -c "[ \$(grep -c 'scale.sock: subscribed' '$T/gw.log') -ge 2 ]"
ok $? "and the gateway subscribes again"
like "$(cat "$T/scale2.log")" 'service=fn/cold: adopted pid' \
    "the running instance is adopted"
is "$(gw_code cold.fn.localhost /again)" 200 "and still answers"

# Request records reach hk-events, which writes them in batches.
has_fenced() {
	requests_json | grep -q '"path": "/fenced"'
}
wait_t 5 has_fenced
ok $? "request records reach the store (hk-events requests)"
requests_json >"$T/recs.json"
python3 - "$T/recs.json" >"$T/recs.out" <<'EOF'
import json, sys
recs = json.load(open(sys.argv[1]))
posts = [r for r in recs if r["path"] == "/p"]
print(len(posts))
print(sorted(posts[0].keys()))
print(all(r["wait_us"] > 0 for r in posts), posts[0]["status"],
      posts[0]["service"], posts[0]["method"], posts[0]["bytes_in"])
print([r["outcome"] for r in recs if r["path"] == "/" and
       r["host"] == "never.fn.localhost"][0])
EOF
is "$(sed -n 1p "$T/recs.out")" 3 "one record per request"
is "$(sed -n 2p "$T/recs.out")" "['at', 'bytes_in', 'bytes_out', 'client', 'duration_us', 'host', 'id', 'method', 'outcome', 'path', 'service', 'status', 'time', 'wait_us', 'wake_id']" \
    "with the protocol's fields"
is "$(sed -n 3p "$T/recs.out")" "True 200 fn/cold POST 3" \
    "cold-start wait reported separately"
is "$(sed -n 4p "$T/recs.out")" startup_timeout "outcome of a 504"
is "$(count secret "$T/recs.json")" 0 \
    "no query string, Authorization or Cookie value in the records"

stop_pid "$gw_pid"
stop_pid "$scale2_pid"
stop_pid "$events_pid"
events_clean
ok $? "hk-events took every record as the gateway sent it: the protocol's fields only"
is "$(grep -l secret "$T/events.log" "$T/gw.log")" "" \
    "and no secret reached the logs of hk-events or the gateway"
done_testing
