#!/bin/sh
# Strict framing (RFC 9112) at the gateway: whitespace before a colon,
# obs-fold (Host included), a bare CR in the head or in a chunk line,
# other bytes after a chunk's data, and an HTTP version the gateway does
# not speak.  Each is refused (400, or 505) before anything is routed, the
# connection is closed, a request pipelined after it is not answered, and
# the backend (fn/gw-backend.py, which notes every request it receives
# whole) sees nothing; for a body streamed to the backend
# (request_buffering = false) the backend never gets a complete request.
# The same requests well-formed are answered 200, so the test can fail.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
gw_config
svc() {	# svc NAME BUFFERING
	cat <<APP

[services.$1]
command = ["python3", "$BE"]
public = true
[services.$1.environment]
GW_LOG = "$W/$1.inv"
[services.$1.serverless]
request_buffering = $2
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc web true
	svc stream false
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
wait_t 20 state_is fn/web running && wait_t 20 state_is fn/stream running
ok $? "fn/web and fn/stream running"

NEXT='GET /next HTTP/1.1\r\nHost: web.fn.localhost\r\n\r\n'

# refused NAME STATUS SERVICE REQUEST: the request (with a good one
# pipelined after it) gets STATUS alone, the connection is closed, and the
# backend of SERVICE received no request.
refused() {
	_before=$(count invocation "$W/$3.inv")
	gw_raw -t 3 "$4$NEXT" >"$T/raw.out"
	is "$(sed -n 1p "$T/raw.out")" "$2" "$1: refused"
	is "$(grep -c '^HTTP/1' "$T/raw.out")" 1 \
	    "$1: the request pipelined after it is not answered"
	is "$(tail -n 2 "$T/raw.out" | sed -n 1p)" closed \
	    "$1: the connection is closed"
	is "$(count invocation "$W/$3.inv")" "$_before" \
	    "$1: the backend received nothing"
}

# taken NAME SERVICE REQUEST: the same shape, well-formed: two answers.
taken() {
	gw_raw -t 3 "$3$NEXT" >"$T/raw.out"
	is "$(grep -c '^HTTP/1.1 200' "$T/raw.out")" 2 "$1, well-formed: 200"
}

B400='HTTP/1.1 400 Bad Request'
G='GET / HTTP/1.1\r\n'
HW='Host: web.fn.localhost\r\n'
PW='POST /p HTTP/1.1\r\nHost: web.fn.localhost\r\n'
PS='POST /p HTTP/1.1\r\nHost: stream.fn.localhost\r\n'
TE='Transfer-Encoding: chunked\r\n\r\n'

taken "a header" web "$G${HW}X-A: b\r\n\r\n"
refused "whitespace before a colon" "$B400" web "$G${HW}X-A : b\r\n\r\n"
refused "whitespace before Host's colon" "$B400" web \
    "${G}Host : web.fn.localhost\r\n\r\n"
refused "whitespace before Content-Length's colon" "$B400" web \
    "${PW}Content-Length : 5\r\n\r\nhello"
refused "obs-fold" "$B400" web "$G${HW}X-A: b\r\n c\r\n\r\n"
refused "obs-fold in Host" "$B400" web \
    "${G}Host: web.fn.localhost\r\n .other\r\n\r\n"
refused "a bare CR in a value" "$B400" web "$G${HW}X-A: b\rc\r\n\r\n"
refused "a bare CR in the request line" "$B400" web \
    "GET /\r HTTP/1.1\r\n$HW\r\n"
refused "a control character in a value" "$B400" web \
    "$G${HW}X-A: b\x01c\r\n\r\n"
refused "HTTP/9.9" 'HTTP/1.1 505 HTTP Version Not Supported' web \
    "GET / HTTP/9.9\r\n$HW\r\n"
refused "Transfer-Encoding in HTTP/1.0" "$B400" web \
    "POST /p HTTP/1.0\r\n${HW}$TE""5\r\nhello\r\n0\r\n\r\n"
refused "a Host that is not host:port" "$B400" web \
    "${G}Host: web.fn.localhost/x\r\n\r\n"
refused "Connection naming Content-Length" "$B400" web \
    "${PW}Content-Length: 5\r\nConnection: content-length\r\n\r\nhello"
refused "Connection naming Host" "$B400" web "$G${HW}Connection: host\r\n\r\n"
refused "a target of another scheme" "$B400" web \
    "GET ftp://web.fn.localhost/ HTTP/1.1\r\n$HW\r\n"

gw_raw -t 3 "GET http://web.fn.localhost/headers?x HTTP/1.1\r\n" \
    "Host: nowhere.example\r\n\r\n" >"$T/raw.out"
is "$(sed -n 1p "$T/raw.out")" "HTTP/1.1 200 OK" \
    "an absolute target is routed by its authority"
is "$(grep -c '^host: web.fn.localhost$' "$T/raw.out")" 1 \
    "and forwarded with it as Host"

taken "a chunked body" web "$PW$TE""5;a=b\r\nhello\r\n0\r\n\r\n"
refused "a bare CR in a chunk size" "$B400" web \
    "$PW$TE""5\rhello\r\n0\r\n\r\n"
refused "a bare CR in a chunk extension" "$B400" web \
    "$PW$TE""5;a\rb\r\nhello\r\n0\r\n\r\n"
refused "other bytes after a chunk's data" "$B400" web \
    "$PW$TE""5\r\nhelloXX0\r\n\r\n"
refused "whitespace before a trailer's colon" "$B400" web \
    "$PW$TE""5\r\nhello\r\n0\r\nT : x\r\n\r\n"

gw_raw -t 3 "POST /headers HTTP/1.1\r\nHost: web.fn.localhost\r\n$TE" \
    "5\r\nhello\r\n0\r\nX-Injected: 1\r\nHost: other\r\n\r\n" >"$T/raw.out"
is "$(sed -n 1p "$T/raw.out")" "HTTP/1.1 200 OK" "a chunked body with trailers"
is "$(grep -ci -e x-injected -e other "$T/raw.out")" 0 \
    "its trailer fields are dropped, never merged into the head"

taken "a streamed chunked body" stream "$PS$TE""5\r\nhello\r\n0\r\n\r\n"
refused "streamed: a bare CR in a chunk size" "$B400" stream \
    "$PS$TE""5\r\nhello\r\n5\rworld\r\n0\r\n\r\n"
refused "streamed: other bytes after a chunk's data" "$B400" stream \
    "$PS$TE""5\r\nhelloXX0\r\n\r\n"

grep -q 'disagree' "$T/gw.log"
ok $((!$?)) "the parser and the lexer never disagreed"
stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"

done_testing
