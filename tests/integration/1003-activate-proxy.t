#!/bin/sh
# hk-activate as a reverse proxy, with hk-scale (exec backend) running the
# functions (fn/gw-backend.py): keep-alive with clients and backends,
# chunked bodies both ways, Expect: 100-continue, HTTP/1.0, pipelining,
# hop-by-hop headers and X-Forwarded-*, the /fn/ prefix, 413 while a
# chunked body streams, 429, 503 at max_concurrent_requests, the request
# deadline (504, or a cut stream), an Upgrade tunnel, and the drain.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
gw_config "max_concurrent_requests = 5" "max_concurrent_starts = 3"
svc() {	# svc NAME REQUEST_TIMEOUT
	cat <<APP

[services.$1]
command = ["python3", "$BE"]
public = true
[services.$1.environment]
GW_LOG = "$W/$1.inv"
GW_HOLD_DIR = "$T"
[services.$1.serverless]
request_timeout_seconds = $2
max_concurrency = 4
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc web 1
	svc other 120
	svc hold 120
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
put_to_sleep fn/web
ok $? "fn/web passed its readiness gate and sleeps"
wait_t 20 state_is fn/other running && wait_t 20 state_is fn/hold running
ok $? "fn/other and fn/hold running"
H=web.fn.localhost

is "$(gw_code $H /first)" 200 "first request (cold start)"
is "$(count 'service=fn/web: wake sent' "$T/gw.log")" 1 "woken once"
out=$(curl -sS --max-time 10 -H "Host: $H" "$GW_URL/conn" "$GW_URL/conn")
is "$(echo "$out" | sort -u | wc -l | tr -d ' ')" 1 \
    "two requests on one client connection use one backend connection"
a=$(curl -sS --max-time 10 -H "Host: $H" "$GW_URL/conn")
b=$(curl -sS --max-time 10 -H "Host: $H" "$GW_URL/conn")
is "$a" "$b" "an idle backend connection is reused by the next client"

is "$(gw_code $H /c -H 'Transfer-Encoding: chunked' -d 'hello world')" 200 \
    "a chunked request"
is "$(cat "$T/body")" "POST /c bytes=11" "reaches the backend whole"
is "$(gw_code $H /chunked)" 200 "a chunked response"
is "$(gw_header transfer-encoding)" chunked "stays chunked"
is "$(cat "$T/body" | tr '\n' ' ')" "one two three " "with its body"
is "$(gw_code $H /close)" 200 "a body delimited by the backend's close"
is "$(gw_header transfer-encoding)" chunked "is re-chunked for HTTP/1.1"
is "$(cat "$T/body")" "until close" "whole"

head -c 1048576 /dev/zero >"$T/1m"
curl -sS -v --max-time 10 -H "Host: $H" -H 'Expect: 100-continue' \
    --data-binary @"$T/1m" "$GW_URL/e" >"$T/body" 2>"$T/verbose"
like "$(grep '^< HTTP' "$T/verbose" | tr -d '\r' | tr '\n' ' ')" \
    '^< HTTP/1.1 100 Continue < HTTP/1.1 200 OK $' \
    "Expect: 100-continue gets 100, then the answer"
is "$(cat "$T/body")" "POST /e bytes=1048576" "and the body went through"

gw_raw -t 5 "GET /old HTTP/1.0\r\nHost: $H\r\n\r\n" >"$T/raw.out"
is "$(head -1 "$T/raw.out")" "HTTP/1.0 200 OK" "HTTP/1.0 client"
is "$(tail -2 "$T/raw.out" | head -1)" closed "closed after the response"
gw_raw -t 1 "GET /old HTTP/1.0\r\nHost: $H\r\nConnection: keep-alive\r\n\r\n" \
    >"$T/raw.out"
like "$(tr '\n' ' ' <"$T/raw.out")" 'Connection: keep-alive .* open ' \
    "HTTP/1.0 keep-alive when asked"
gw_raw -t 5 "GET /chunked HTTP/1.0\r\nHost: $H\r\n\r\n" >"$T/raw.out"
like "$(tr '\n' ' ' <"$T/raw.out")" '^HTTP/1.0 200 OK .* one two three closed' \
    "a chunked response reaches an HTTP/1.0 client unchunked"
gw_raw -t 5 "GET /a HTTP/1.1\r\nHost: $H\r\n\r\nGET /b HTTP/1.1\r\nHost: $H\r\nConnection: close\r\n\r\n" \
    >"$T/raw.out"
like "$(tr '\n' ' ' <"$T/raw.out")" 'GET /a bytes=0 .*GET /b bytes=0 closed' \
    "pipelined requests are answered in order"

is "$(gw_code $H /headers -H 'Connection: X-Hop' -H 'X-Hop: 1' \
    -H 'Keep-Alive: timeout=5' -H 'TE: trailers' -H 'Proxy-Connection: x' \
    -H 'X-Forwarded-For: 192.0.2.1' -H 'X-Kept: yes')" 200 "headers request"
is "$(grep -E '^(connection|x-hop|keep-alive|te|proxy-connection):' "$T/body")" \
    "" "hop-by-hop headers and those named by Connection are removed"
is "$(grep -E '^x-(kept|forwarded-[a-z]+):' "$T/body")" "x-kept: yes
x-forwarded-for: 127.0.0.1
x-forwarded-proto: http
x-forwarded-host: $H" "a client's X-Forwarded-For replaced, -Proto and -Host set"
is "$(gw_code $H /headers -H 'X-Forwarded-Proto: https' \
    -H 'x-forwarded-HOST: evil.example' -H 'X-Forwarded-Port: 443' \
    -H 'Forwarded: for=192.0.2.1;proto=https' -H 'X-Real-IP: 192.0.2.1' \
    -H 'X-Client-IP: 192.0.2.1' -H 'True-Client-IP: 192.0.2.1' \
    -H 'X-Cluster-Client-IP: 192.0.2.1')" 200 \
    "a request with forged forwarding headers, from a peer not trusted"
is "$(grep -Ei '^(forwarded|x-forwarded-[a-z]+|x-real-ip|x-client-ip|true-client-ip|x-cluster-client-ip):' "$T/body")" \
    "x-forwarded-for: 127.0.0.1
x-forwarded-proto: http
x-forwarded-host: $H" "none reaches the backend: only the gateway's own"

is "$(gw_code x /fn/fn/web/deep/path?q=1)" 200 "/fn/app/service/ routes"
is "$(cat "$T/body")" "GET /deep/path bytes=0" "and the prefix is stripped"
gw_code x /fn/fn/web >/dev/null
is "$(cat "$T/body")" "GET / bytes=0" "/fn/app/service alone forwards /"

head -c 4194305 /dev/zero >"$T/big"
is "$(gw_code $H /big -H 'Transfer-Encoding: chunked' --data-binary @"$T/big")" \
    413 "a chunked body over max_body_bytes: 413 while it streams"
head -c 4194304 /dev/zero >"$T/4m"
is "$(gw_code $H /big -H 'Transfer-Encoding: chunked' --data-binary @"$T/4m")" \
    200 "exactly max_body_bytes passes"

is "$(gw_code $H /hold/never)" 504 \
    "a handler slower than request_timeout (it never answers): 504"
is "$(cat "$T/body")" "request deadline exceeded" "body says so"
curl -sS -o "$T/stream" -w '%{http_code}' --max-time 10 -H "Host: $H" \
    "$GW_URL/stream" >"$T/stream.code" 2>"$T/stream.err"
is "$?/$(cat "$T/stream.code")" 18/200 \
    "a streaming response is cut at the deadline (connection closed)"
like "$(head -1 "$T/stream")" '^tick 0$' "after part of it was sent"

# Four requests, held by the function until $T/release exists, hold
# other's max_concurrency; one more holds the installation's
# max_concurrent_requests (5).
held=
for i in 1 2 3 4; do
	curl -sS -o /dev/null --max-time 60 -H 'Host: other.fn.localhost' \
	    "$GW_URL/hold/release" &
	held="$held $!"
done
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/other.active) = 4 ]"
is "$(gw_code other.fn.localhost /x)" 429 "at max_concurrency: 429"
is "$(gw_header retry-after)" 1 "with Retry-After"
curl -sS -o /dev/null --max-time 60 -H 'Host: hold.fn.localhost' \
    "$GW_URL/hold/release" &
held="$held $!"
wait_t 5 sh -c "[ \"\$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/hold.active requests_in_flight |
    tr '\n' ' ')\" = '1 5 ' ]"
ok $? "the fifth, to fn/hold, in flight: 5 in all" ||
    diag "fn/hold active, in flight: $(gw_ctl '{"op":"status"}' \
    services.fn/hold.active requests_in_flight | tr '\n' ' ')"
is "$(gw_code $H /x)" 503 "at max_concurrent_requests: 503"
is "$(cat "$T/body")" "gateway at capacity" "body says so"
touch "$T/release"
wait $held

python3 - "$GW_PORT" "$GW_FN/gw-ctl.py" "$T/run/activate.sock" \
    >"$T/ws.out" <<'EOF'
import socket, subprocess, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /ws HTTP/1.1\r\nHost: web.fn.localhost\r\n"
          b"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
print(head.split(b"\r\n")[0].decode())
for msg in (b"ping 1", b"ping 2"):
    s.sendall(msg)
    print(s.recv(100).decode())
sys.stdout.flush()
subprocess.run([sys.executable, sys.argv[2], sys.argv[3], '{"op":"status"}',
                "services.fn/web.active"])
s.close()
EOF
is "$(tr '\n' '/' <"$T/ws.out")" \
    "HTTP/1.1 101 Switching Protocols/ping 1/ping 2/1/" \
    "an Upgrade is tunnelled both ways after the 101, an active request"
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/web.active) = 0 ]"
ok $? "the tunnel stops counting once closed"

# A request the function holds (fn/other: a deadline of 120 s) until the
# gateway has been told to stop.
curl -sS -o "$T/drain.body" -w '%{http_code}' --max-time 30 \
    -H 'Host: other.fn.localhost' "$GW_URL/hold/drain" >"$T/drain.code" &
drain=$!
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' requests_in_flight) = 1 ]"
ok $? "a request in flight"
kill -TERM "$gw_pid"
wait_t 5 grep -q 'stopping: draining' "$T/gw.log"
alive "$gw_pid"
ok $? "SIGTERM: the gateway waits for it"
touch "$T/drain"
wait "$drain"
is "$(cat "$T/drain.code")" 200 "SIGTERM lets an in-flight request finish"
wait "$gw_pid"
is "$?" 0 "then exits 0"
is "$(curl -s -o /dev/null -w '%{http_code}' "$GW_URL/")" 000 \
    "no longer accepting"
stop_pid "$scale_pid"
stop_pid "$events_pid"

done_testing
