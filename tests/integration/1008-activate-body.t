#!/bin/sh
# Request bodies at the gateway (request_buffering, the default): a chunked
# body reaches a backend that reads only Content-Length (Python's
# http.server, fn/echo-cl.py) whole and de-chunked; a large one goes
# through a spool file in spool_dir, not the gateway's memory; a declared
# chunk size over max_body_bytes is 413 before its data; a body crossing
# the limit is 413 and reaches no backend, also when it is streamed
# (request_buffering = false) to a backend that answers at once; a parked
# request's body is taken, with the gateway's 100 Continue, while its
# service wakes; a body that does not arrive in time is 408; a spool that
# cannot be written is 503.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/echo-cl.py
LIMIT=1048576
mkdir -p "$T/spool"
gw_config "max_body_bytes = $LIMIT" "spool_dir = \"$T/spool\""
svc() {	# svc NAME [serverless lines...]
	_n=$1
	shift
	printf '\n[services.%s]\ncommand = ["python3", "%s"]\npublic = true\n' \
	    "$_n" "$BE"
	printf '[services.%s.environment]\nGW_LOG = "%s"\n' "$_n" "$W/$_n.inv"
	[ "$_n" = slow ] && echo 'START_DELAY = "2"'
	printf '[services.%s.serverless]\n' "$_n"
	for _l in "$@"; do
		echo "$_l"
	done
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc buf
	svc stream "request_buffering = false"
	svc slow
	svc short "request_timeout_seconds = 1"
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
for s in buf stream short; do
	wait_t 20 state_is fn/$s running || break
done
ok $? "fn/buf, fn/stream and fn/short running"
put_to_sleep fn/slow
ok $? "fn/slow passed its readiness gate (a 2 s start) and sleeps"

sha() { sha256sum "$1" | cut -d' ' -f1; }
head -c 5 /dev/urandom >"$T/small"
head -c 307200 /dev/urandom >"$T/large"
head -c $((LIMIT + 1)) /dev/zero >"$T/over"

post() {	# post SERVICE FILE [curl args]: code; body in $T/body
	_s=$1
	_f=$2
	shift 2
	gw_code $_s.fn.localhost /p --data-binary @"$_f" "$@"
}

is "$(post buf "$T/small" -H 'Transfer-Encoding: chunked')" 200 \
    "a small chunked body: 200"
is "$(cat "$T/body")" "len=5 sha256=$(sha "$T/small") te=- cl=5" \
    "it reaches a Content-Length-only backend whole, de-chunked"
is "$(post buf "$T/large" -H 'Transfer-Encoding: chunked')" 200 \
    "a 300 KiB chunked body: 200"
is "$(cat "$T/body")" "len=307200 sha256=$(sha "$T/large") te=- cl=307200" \
    "it reaches the backend whole, through the spool"
is "$(post buf "$T/large")" 200 "a 300 KiB Content-Length body: 200"
is "$(cat "$T/body")" "len=307200 sha256=$(sha "$T/large") te=- cl=307200" \
    "it reaches the backend whole"
is "$(ls -A "$T/spool")" "" "the spool keeps no file behind"

# A spooled body gives its buffer's pages back (hk-activate(8)); the next
# request on the same connection, whose body stays in memory, is whole.
head -c 8000 /dev/urandom >"$T/mid"
curl -sS --max-time 30 -H 'Host: buf.fn.localhost' -o "$T/body1" \
    -w '%{num_connects} ' --data-binary @"$T/large" "$GW_URL/p" --next \
    -sS --max-time 30 -H 'Host: buf.fn.localhost' -o "$T/body2" \
    -w '%{num_connects}' --data-binary @"$T/mid" "$GW_URL/p" \
    >"$T/conns"
is "$(cat "$T/conns")" "1 0" "a spooled body, then another on the same connection"
is "$(cat "$T/body1") $(cat "$T/body2")" \
    "len=307200 sha256=$(sha "$T/large") te=- cl=307200 len=8000 sha256=$(sha "$T/mid") te=- cl=8000" \
    "both reach the backend whole"

is "$(post stream "$T/small" -H 'Transfer-Encoding: chunked')" 200 \
    "request_buffering = false: a chunked body is streamed"
is "$(cat "$T/body")" "len=0 sha256=$(sha /dev/null) te=chunked cl=-" \
    "as it came: a Content-Length-only backend reads none of it"

# A chunk whose declared size alone passes the limit; its data never sent.
before=$(count invocation "$W/buf.inv")
gw_raw -t 5 "POST /p HTTP/1.1\r\nHost: buf.fn.localhost\r\n" \
    "Transfer-Encoding: chunked\r\n\r\n200000\r\n" >"$T/raw.out"
is "$(sed -n 1p "$T/raw.out")" "HTTP/1.1 413 Content Too Large" \
    "a declared chunk size over max_body_bytes: 413 before its data"
is "$(tail -n 2 "$T/raw.out" | sed -n 1p)" closed "and the connection closed"
is "$(post buf "$T/over" -H 'Transfer-Encoding: chunked')" 413 \
    "a chunked body crossing max_body_bytes: 413"
is "$(post buf "$T/over" -H 'Transfer-Encoding: chunked' \
    -H 'Expect: 100-continue')" 413 "also after a 100 Continue"
is "$(count invocation "$W/buf.inv")" "$before" \
    "no over-limit body reached the backend"
sbefore=$(count invocation "$W/stream.inv")
is "$(post stream "$T/over" -H 'Transfer-Encoding: chunked')" 413 \
    "streamed to a backend that answers at once: still 413"
is "$(grep -c 'len=[1-9]' "$W/stream.inv")" 0 \
    "the streaming backend never read a body"

# A parked request: its body is taken while the service wakes (2 s).
python3 - "$GW_PORT" >"$T/park.out" <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"PUT /p HTTP/1.1\r\nHost: slow.fn.localhost\r\n"
          b"Content-Length: 10\r\nExpect: 100-continue\r\n\r\n")
t0 = time.monotonic()
s.settimeout(1.5)
try:
    first = s.recv(100)
except socket.timeout:
    first = b"nothing"
print(first.split(b"\r\n")[0].decode())
s.settimeout(10)
s.sendall(b"0123456789")
got = b""
while b"\n" not in got.split(b"\r\n\r\n", 1)[-1] or b"\r\n\r\n" not in got:
    b = s.recv(4096)
    if not b:
        break
    got += b
print(got.split(b"\r\n")[0].decode())
print(got.split(b"\r\n\r\n", 1)[-1].decode().strip())
EOF
park=$!
wait_t 5 state_is fn/slow starting
ok $? "fn/slow wakes"
wait "$park"
is "$(sed -n 1p "$T/park.out")" "HTTP/1.1 100 Continue" \
    "a parked request gets the gateway's 100 Continue while it wakes"
is "$(sed -n 2p "$T/park.out")" "HTTP/1.1 200 OK" "then the answer"
is "$(sed -n 3p "$T/park.out")" \
    "len=10 sha256=$(printf 0123456789 | sha256sum | cut -d' ' -f1) te=- cl=10" \
    "with the body taken while parked"

put_to_sleep fn/slow
curl -sS -o "$T/big.body" --max-time 20 -H 'Host: slow.fn.localhost' \
    -H 'Transfer-Encoding: chunked' --data-binary @"$T/large" \
    "$GW_URL/p" &
big=$!
spooled() {
	[ "$(gw_state fn/slow)" = starting ] &&
	    ls -l "/proc/$gw_pid/fd" | grep -q "$T/spool/"
}
wait_t 5 spooled
ok $? "a large parked body is in a spool file while the service wakes"
wait "$big"
is "$(cat "$T/big.body")" \
    "len=307200 sha256=$(sha "$T/large") te=- cl=307200" \
    "and reaches the woken service whole"

before=$(count invocation "$W/short.inv")
gw_raw -t 5 "POST /p HTTP/1.1\r\nHost: short.fn.localhost\r\n" \
    "Content-Length: 10\r\n\r\nabc" >"$T/raw.out"
is "$(sed -n 1p "$T/raw.out")" "HTTP/1.1 408 Request Timeout" \
    "a body that does not arrive within request_timeout_seconds: 408"
is "$(count invocation "$W/short.inv")" "$before" "the backend saw nothing"

sed -i "s|^spool_dir = .*|spool_dir = \"$T/gone\"|" "$HAKOPOD_CONFIG"
kill -HUP "$gw_pid"
wait_t 30 grep -q 'hk-activate: info: reloading' "$T/gw.log"
ok $? "hk-activate reloads on SIGHUP"
is "$(post buf "$T/large" -H 'Transfer-Encoding: chunked')" 503 \
    "a spool_dir that cannot be written: 503"
grep -q "unable to spool a request body in $T/gone" "$T/gw.log"
ok $? "logged with the directory and the reason"
is "$(post buf "$T/small" -H 'Transfer-Encoding: chunked')" 200 \
    "a body that fits in memory still goes"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"

done_testing
