#!/bin/sh
# End to end, hk-activate with hk-scale, limits and deadlines: with three
# sleeping services (whose starts the test holds, fn/held) and
# max_concurrent_starts = 2 the third start waits;
# 429 at max_concurrency; 503 at max_concurrent_requests; 413 for 4 MiB + 1
# declared and chunked; 404 for an unknown host; 504 for a service that
# never becomes ready and for a handler slower than request_timeout; a
# streaming response cut at the deadline; keep-alive reuse, chunked both
# ways, Expect: 100-continue and an Upgrade tunnel through a real start.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
gw_config "max_concurrent_starts = 2" "max_concurrent_requests = 3"
svc() {	# svc NAME COMMAND STARTUP REQUEST_TIMEOUT
	cat <<APP

[services.$1]
command = ["sh", "-c", "$2"]
public = true
[services.$1.environment]
GW_LOG = "$W/$1.inv"
GW_HOLD_DIR = "$T"
[services.$1.serverless]
startup_timeout_seconds = $3
request_timeout_seconds = $4
max_concurrency = 2
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc be "exec python3 $BE" 20 1
	for s in s1 s2 s3; do
		svc $s "exec sh $GW_FN/held $T/$s python3 $BE" 60 120
	done
	svc nr "[ -e $T/broken ] && exec sleep 1000; exec python3 $BE" 5 1
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
for s in s1 s2 s3 nr; do
	put_to_sleep fn/$s
	ok $? "fn/$s asleep"
done
wait_t 20 state_is fn/be running
ok $? "fn/be running"

# s1..s3 start once the test lets them (fn/held): two starts at a time,
# the third waits for a slot while the first two are held.
starts() {	# starts: processes hk-scale started for s1, s2 and s3
	for _s in s1 s2 s3; do
		count "service=fn/$_s: started pid" "$T/scale.log"
	done | tr -d '\n'
}
touch "$T/s1.hold" "$T/s2.hold" "$T/s3.hold"
for s in s1 s2 s3; do
	curl -sS -o /dev/null -w '%{http_code}\n' --max-time 60 \
	    -H "Host: $s.fn.localhost" "$GW_URL/" >"$T/$s.out" &
	eval "c_$s=\$!"
done
wait_t 10 grep -q 'waiting for a start slot (2 of 2 busy)' "$T/scale.log"
ok $? "with max_concurrent_starts = 2, hk-scale says the third waits for a slot"
like "$(starts)" '^(221|212|122)$' \
    "while two start: two new processes, none for the third"
touch "$T/s1.go" "$T/s2.go" "$T/s3.go"
wait "$c_s1" "$c_s2" "$c_s3"
is "$(cat "$T/s1.out" "$T/s2.out" "$T/s3.out" | tr -d '\n')" \
    200200200 "three sleeping services woken at once are all answered"
is "$(starts)" 222 "the third started once a slot was free"

is "$(gw_code nope.example.test /)" 404 "unknown host: 404"

head -c 4194305 /dev/zero >"$T/big"
is "$(gw_code be.fn.localhost /big --data-binary @"$T/big")" 413 \
    "4 MiB + 1 declared by Content-Length: 413"
is "$(gw_code be.fn.localhost /big -H 'Transfer-Encoding: chunked' \
    --data-binary @"$T/big")" 413 "4 MiB + 1 chunked: 413"
is "$(count 'invocation POST /big' "$W/be.inv")" 0 \
    "neither reached the handler as a whole request"

is "$(gw_code be.fn.localhost /hold/never)" 504 \
    "a handler slower than request_timeout_seconds (it never answers): 504"
curl -sS -o "$T/stream" --max-time 10 -H 'Host: be.fn.localhost' \
    "$GW_URL/stream" 2>/dev/null
is "$?" 18 "a streaming response is cut at the deadline"
like "$(head -1 "$T/stream")" '^tick 0$' "after it started"

touch "$T/broken"
is "$(gw_code nr.fn.localhost /)" 504 "a service that never becomes ready: 504"
is "$(cat "$T/body")" "startup deadline exceeded" "at the startup deadline"

# Requests the function holds until $T/release exists.
for i in 1 2; do
	curl -sS -o /dev/null --max-time 60 -H 'Host: s1.fn.localhost' \
	    "$GW_URL/hold/release" &
	eval "h$i=\$!"
done
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/s1.active) = 2 ]"
is "$(gw_code s1.fn.localhost /x)" 429 "at max_concurrency: 429"
curl -sS -o /dev/null --max-time 60 -H 'Host: s2.fn.localhost' \
    "$GW_URL/hold/release" &
h3=$!
wait_t 5 sh -c "[ \"\$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/s2.active requests_in_flight |
    tr '\n' ' ')\" = '1 3 ' ]"
ok $? "a third, to fn/s2, in flight: 3 in all"
is "$(gw_code s3.fn.localhost /x)" 503 "at max_concurrent_requests: 503"
touch "$T/release"
wait "$h1" "$h2" "$h3"

out=$(curl -sS --max-time 10 -H 'Host: be.fn.localhost' "$GW_URL/conn" \
    "$GW_URL/conn" | sort -u | wc -l)
is "$(echo $out)" 1 "keep-alive: one backend connection for two requests"
is "$(gw_code be.fn.localhost /c -H 'Transfer-Encoding: chunked' \
    -d 'chunked body')" 200 "a chunked request"
is "$(cat "$T/body")" "POST /c bytes=12" "arrives whole"
gw_code be.fn.localhost /chunked >/dev/null
is "$(gw_header transfer-encoding)/$(cat "$T/body" | tr '\n' ' ')" \
    "chunked/one two three " "a chunked response"
head -c 65536 /dev/zero >"$T/64k"
curl -sS -v --max-time 10 -H 'Host: be.fn.localhost' \
    -H 'Expect: 100-continue' --data-binary @"$T/64k" "$GW_URL/e" \
    >"$T/body" 2>"$T/verbose"
like "$(grep '^< HTTP' "$T/verbose" | tr -d '\r' | tr '\n' ' ')" \
    '^< HTTP/1.1 100 Continue < HTTP/1.1 200 OK $' "Expect: 100-continue"
python3 - "$GW_PORT" >"$T/ws.out" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /ws HTTP/1.1\r\nHost: be.fn.localhost\r\n"
          b"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
print(head.split(b"\r\n")[0].decode())
s.sendall(b"echo me")
print(s.recv(100).decode())
s.close()
EOF
is "$(tr '\n' '/' <"$T/ws.out")" "HTTP/1.1 101 Switching Protocols/echo me/" \
    "a WebSocket-style Upgrade is tunnelled"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
done_testing
