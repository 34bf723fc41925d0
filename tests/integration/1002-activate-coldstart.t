#!/bin/sh
# hk-activate's cold starts against a stand-in for hk-scale
# (fn/gw-fake-scale.py): parked requests forwarded on ready with one wake,
# failed and refused wakes answered 503 at once, the startup deadline 504,
# a refused connection retried within the startup deadline, fence and
# down, hk-scale going away and coming back, and the request records.
. tests/integration/lib.sh
. tests/integration/fn/gw-lib.sh

P1=$(free_port)
P2=$(free_port)
gw_config "max_concurrent_requests = 16"
svc() {	# svc NAME PORT
	cat <<APP

[services.$1]
command = ["true"]
port = $2
public = true

[services.$1.serverless]
startup_timeout_seconds = 5
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc cold "$P1"
	svc fail 9
	svc never 9
	svc refuse 9
	svc late "$P2"
	svc leave "$P1"
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null

bg_ready events python3 "$GW_FN/gw-events.py" "$T/run" "$T/events.out"
ok $? "events.sock stand-in"
gw_backend be1 "$P1"
ok $? "backend on $P1"
start_fake() {
	bg_ready fake python3 "$GW_FN/gw-fake-scale.py" "$T/run" "$T/wake.log" \
	    "fn/cold=ready:127.0.0.1:$P1:300" "fn/fail=fail:3" \
	    "fn/refuse=refuse:stopped" "fn/late=ready:127.0.0.1:$P2" \
	    "fn/leave=ready:127.0.0.1:$P1:1500"
}
start_fake
ok $? "scale.sock stand-in"
gw_start
ok $? "hk-activate ready"
wait_for 5 grep -q 'scale.sock: subscribed' "$T/gw.log"
ok $? "subscribed to scale.sock"

# The startup deadline runs in the background meanwhile (5 s).
curl -sS -o "$T/never.body" -w '%{http_code} %{time_total}' --max-time 20 \
    -H 'Host: never.fn.localhost' "$GW_URL/" >"$T/never.out" &
never=$!

for i in 1 2 3; do
	curl -sS -o "$T/post$i" -w '%{http_code}' --max-time 20 \
	    -H 'Host: cold.fn.localhost' -H 'Authorization: Bearer secret' \
	    -H 'Cookie: c=secret' -d "n=$i" "$GW_URL/p?secret=$i" \
	    >"$T/post$i.code" &
	eval "post$i=\$!"
done
wait_for 5 sh -c "[ \$(grep -c 'wake fn/cold' '$T/wake.log') -ge 1 ]"
is "$(gw_ctl '{"op":"status"}' services.fn/cold.state \
    services.fn/cold.parked)" "starting
3" "three requests park while the service starts"
wait "$post1" "$post2" "$post3"
is "$(cat "$T/post1.code" "$T/post2.code" "$T/post3.code" | tr -d '\n')" \
    200200200 "all three are answered once it is ready"
is "$(cat "$T/post1")" "POST /p bytes=3" "by the backend"
is "$(count 'wake fn/cold' "$T/wake.log")" 1 "one wake for the cold start"
is "$(count 'invocation POST /p' "$T/be1.inv")" 3 \
    "the handler saw exactly three requests"
is "$(gw_ctl '{"op":"status"}' services.fn/cold.state \
    services.fn/cold.endpoint services.fn/cold.active)" "running
127.0.0.1:$P1
0" "status: running at its endpoint, nothing active"
is "$(gw_code cold.fn.localhost /warm)" 200 "a warm request goes straight through"
is "$(count 'wake fn/cold' "$T/wake.log")" 1 "without a wake"

is "$(gw_code fail.fn.localhost /)" 503 "a failed start: 503"
is "$(cat "$T/body")" "service failed to start: exit status 1: boom" \
    "with the reason"
is "$(gw_header retry-after)" 3 "and Retry-After from retry_after"
is "$(gw_code fail.fn.localhost /)" 503 "again while retry_after lasts: 503"
is "$(count 'wake fn/fail' "$T/wake.log")" 1 "at once, without a second wake"
is "$(gw_ctl '{"op":"status"}' services.fn/fail.state)" failed \
    "status: failed"

is "$(gw_code refuse.fn.localhost /)" 503 "a wake refused as stopped: 503"
is "$(cat "$T/body")" "service stopped" "body: service stopped"
is "$(gw_code refuse.fn.localhost /)" 503 "stays stopped"
is "$(count 'wake fn/refuse' "$T/wake.log")" 1 "and is not woken again"

# Nothing listens on P2 yet: the connection is refused, the request goes
# back to the queue and another wake is sent, until the backend is there.
curl -sS -o "$T/late.body" -w '%{http_code}' --max-time 20 \
    -H 'Host: late.fn.localhost' "$GW_URL/late" >"$T/late.code" &
late=$!
wait_for 5 sh -c "[ \$(grep -c 'wake fn/late' '$T/wake.log') -ge 2 ]"
ok $? "a refused connection is retried with a new wake"
gw_backend be2 "$P2"
wait "$late"
is "$(cat "$T/late.code")" 200 "and answered once the backend listens"
is "$(count 'invocation GET /late' "$T/be2.inv")" 1 "exactly once"

# A client that leaves while parked is not forwarded.
curl -sS -o /dev/null --max-time 0.5 -H 'Host: leave.fn.localhost' \
    "$GW_URL/left" 2>/dev/null
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/leave.active) = 0 ]"
ok $? "a client that hangs up while parked gives its slot back"
wait_t 5 state_is fn/leave running
is "$(count 'invocation GET /left' "$T/be1.inv")" 0 \
    "and its request is not forwarded"

wait "$never"
like "$(cat "$T/never.out")" '^504 (4\.9|5\.|6\.)' \
    "a service never ready: 504 at startup_timeout_seconds"
is "$(cat "$T/never.body")" "startup deadline exceeded" "body says so"

# Fence: hk-idle's question.  Granted, new requests park and wake; the
# fenced instance's ready is not used; its down, then a fresh start.
is "$(gw_ctl '{"op":"fence","service":"fn/cold","idle_seconds":0}')" \
    '{"ok":true}' "fence granted to an idle service"
is "$(gw_ctl '{"op":"status"}' services.fn/cold.state)" draining \
    "status: draining"
curl -sS -o "$T/fenced.body" -w '%{http_code}' --max-time 20 \
    -H 'Host: cold.fn.localhost' "$GW_URL/fenced" >"$T/fenced.code" &
fenced=$!
wait_for 5 sh -c "[ \$(grep -c 'wake fn/cold' '$T/wake.log') -ge 2 ]"
ok $? "a request after the fence wakes"
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/cold.parked) = 1 ]"
ok $? "and parks: the fenced instance's ready is not used"
is "$(count 'invocation GET /fenced' "$T/be1.inv")" 0 \
    "nothing reaches the fenced instance"
echo '{"op":"down","service":"fn/cold","reason":"idle"}' >"$T/run/fake.cmd"
wait "$fenced"
is "$(cat "$T/fenced.code")" 200 "after its down, a fresh start answers"
is "$(count 'wake fn/cold' "$T/wake.log")" 3 "woken again after the down"

is "$(gw_ctl '{"op":"fence","service":"fn/cold","idle_seconds":3600}' \
    ok active)" "false
0" "fence refused before idle_seconds after the last request"

# hk-scale goes away: wakes are impossible, warm services still work.
stop_pid "$fake_pid"
wait_for 5 grep -q 'hk-scale unavailable' "$T/gw.log"
ok $? "the gateway notices hk-scale went away"
is "$(gw_code never.fn.localhost /)" 503 "a sleeping service: 503"
is "$(cat "$T/body")" "activation unavailable" "activation unavailable"
is "$(gw_code cold.fn.localhost /)" 200 "a running service still answers"
start_fake
wait_for 5 sh -c "[ \$(grep -c 'scale.sock: subscribed' '$T/gw.log') -ge 2 ]"
ok $? "and subscribes again when hk-scale is back"

# Request records reach events.sock in batches.
wait_for 5 grep -q '"path":"/fenced"' "$T/events.out"
ok $? "request records are sent to events.sock"
python3 - "$T/events.out" >"$T/recs.out" <<'EOF'
import json, sys
recs = []
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("op") == "requests":
        recs += m["records"]
posts = [r for r in recs if r["path"] == "/p"]
print(len(posts))
print(sorted(posts[0].keys()))
print(all(r["wait_us"] > 0 for r in posts), posts[0]["status"],
      posts[0]["service"], posts[0]["method"], posts[0]["bytes_in"])
print([r["outcome"] for r in recs if r["path"] == "/" and
       r["host"] == "never.fn.localhost"][0])
EOF
is "$(sed -n 1p "$T/recs.out")" 3 "one record per request"
is "$(sed -n 2p "$T/recs.out")" "['at', 'bytes_in', 'bytes_out', 'duration_us', 'host', 'method', 'outcome', 'path', 'service', 'status', 'wait_us']" \
    "with the protocol's fields"
is "$(sed -n 3p "$T/recs.out")" "True 200 fn/cold POST 3" \
    "cold-start wait reported separately"
is "$(sed -n 4p "$T/recs.out")" startup_timeout "outcome of a 504"
is "$(count secret "$T/events.out")" 0 \
    "no query string, Authorization or Cookie value in the records"

done_testing
