#!/bin/sh
# hk-activate as a reverse proxy, with hk-scale (exec backend) running the
# functions (fn/gw-backend.py): keep-alive with clients and backends,
# chunked bodies both ways, Expect: 100-continue, HTTP/1.0, pipelining,
# hop-by-hop headers and X-Forwarded-*, the /fn/ prefix, 413 while a
# chunked body streams, 429, 503 at max_concurrent_requests, the request
# deadline (504, or a cut stream), an Upgrade tunnel, and the drain.
. tests/integration/lib.sh
. tests/integration/fn/gw-lib.sh

BE=$GW_FN/gw-backend.py
gw_config "max_concurrent_requests = 5" "max_concurrent_starts = 3"
svc() {	# svc NAME REQUEST_TIMEOUT
	cat <<APP

[services.$1]
command = ["python3", "$BE"]
public = true
[services.$1.environment]
GW_LOG = "$W/$1.inv"
[services.$1.serverless]
request_timeout_seconds = $2
max_concurrency = 4
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc web 1
	svc other 10
	svc hold 10
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

is "$(gw_code $H /slow/2000)" 504 "a handler slower than request_timeout: 504"
is "$(cat "$T/body")" "request deadline exceeded" "body says so"
curl -sS -o "$T/stream" -w '%{http_code}' --max-time 10 -H "Host: $H" \
    "$GW_URL/stream" >"$T/stream.code" 2>"$T/stream.err"
is "$?/$(cat "$T/stream.code")" 18/200 \
    "a streaming response is cut at the deadline (connection closed)"
like "$(head -1 "$T/stream")" '^tick 0$' "after part of it was sent"

# Four slow requests hold other's max_concurrency, one more holds the
# installation's max_concurrent_requests (5).
held=
for i in 1 2 3 4; do
	curl -sS -o /dev/null --max-time 10 -H 'Host: other.fn.localhost' \
	    "$GW_URL/slow/2000" &
	held="$held $!"
done
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' services.fn/other.active) = 4 ]"
is "$(gw_code other.fn.localhost /x)" 429 "at max_concurrency: 429"
is "$(gw_header retry-after)" 1 "with Retry-After"
curl -sS -o /dev/null --max-time 10 -H 'Host: hold.fn.localhost' \
    "$GW_URL/slow/2000" &
held="$held $!"
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' requests_in_flight) = 5 ]"
is "$(gw_code $H /x)" 503 "at max_concurrent_requests: 503"
is "$(cat "$T/body")" "gateway at capacity" "body says so"
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

curl -sS -o "$T/drain.body" -w '%{http_code}' --max-time 10 -H "Host: $H" \
    "$GW_URL/slow/700" >"$T/drain.code" &
drain=$!
wait_t 5 sh -c "[ \$(python3 '$GW_FN/gw-ctl.py' '$T/run/activate.sock' \
    '{\"op\":\"status\"}' requests_in_flight) = 1 ]"
kill -TERM "$gw_pid"
wait "$drain"
is "$(cat "$T/drain.code")" 200 "SIGTERM lets an in-flight request finish"
wait "$gw_pid"
is "$?" 0 "then exits 0"
is "$(curl -s -o /dev/null -w '%{http_code}' "$GW_URL/")" 000 \
    "no longer accepting"
stop_pid "$scale_pid"
stop_pid "$events_pid"

done_testing
