#!/bin/sh
# hk-activate's own answers, with no hk-scale running: command line and
# config check, 404 for unknown hosts and services that are not public
# serverless ones, 400 for ambiguous framing (connection closed), 431, 413
# by Content-Length, 503 "activation unavailable", the slow-loris cut,
# activate.sock (status, fence, reload, stop, start, unknown op), SIGHUP,
# SIGTERM and an inherited listener (systemd socket activation).
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

write_app() {	# write_app EXTRA: app "fn" with api (serverless), web, db
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.api]
command = ["python3", "api.py"]
port = 9
public = true
hosts = ["api.example.test"]

[services.api.serverless]
startup_timeout_seconds = 5

[services.web]
command = ["python3", "web.py"]
port = 10

[services.db]
command = ["sleep", "1000"]
$1
APP
	hk apply "$T/app.toml" >/dev/null
}

gw_config "max_concurrent_requests = 4"
write_app ""

run hk-activate -n
is "$rc/$err" "0/configuration OK" "-n checks the configuration"
run hk-activate -x
is "$rc" 64 "an unknown flag exits 64"
like "$err" '^usage: hk-activate \[-mnv\] \[-d fd\] \[-f config\] \[-l address\] \[-t seconds\]$' \
    "usage line on stderr"
run hk-activate -f "$T/nonexistent.toml" -n
is "$rc" 66 "a missing config file exits 66"
printf '[server]\nruntime_dir = "%s/run"\n' "$T" >"$T/bare.toml"
run hk-activate -f "$T/bare.toml" -n
is "$rc" 78 "no serverless_address exits 78"
like "$err" 'serverless_address: unset' "and says why"

run hk-activate -n -l nonsense
is "$rc" 64 "a bad -l address exits 64"
port=$(free_port)
# (a store of its own: serverless services are deployed behind
# $GW_URL in this one, and a start elsewhere is refused, see 1017)
HAKOPOD_STATE=sqlite://$T/lflag.db daemon lflag hk-activate -l "127.0.0.1:$port" \
    -f "$HAKOPOD_CONFIG"
ok $? "-l names the address to listen on"
is "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: nope' \
    "http://127.0.0.1:$port/")" 404 "and it is served"
stop_pid "$lflag_pid"

gw_start
ok $? "hk-activate starts without hk-scale and signals readiness"

run hk-activate -l "127.0.0.1:$GW_PORT"
is "$rc" 71 "an address already in use exits 71"
like "$err" 'unable to listen: 127\.0\.0\.1:[0-9]+: Address already in use' \
    "and says so"

# The slow-loris client runs while the other checks do: one header part
# every 4 s, so the head is still incomplete at the 10 s deadline.
gw_raw -t 14 -p 4 'GET / HTTP/1.1\r\n' 'Host: api' '.example.test\r\n' \
    >"$T/loris.out" &
loris=$!
# A client silent for 1.5 s (past the deferred accept's second), then a
# request: answered.  One silent throughout: cut like the slow-loris,
# counted from its hand-over 1 s after it connected.
gw_raw -t 3 -p 1.5 '' 'GET / HTTP/1.1\r\nHost: nope\r\n\r\n' \
    >"$T/late.out" &
late=$!
gw_raw -t 14 >"$T/silent.out" &
silent=$!

is "$(gw_code nope.example.test /)" 404 "unknown host: 404"
is "$(cat "$T/body")" "no such service" "404 body is a short text line"
is "$(gw_code web.fn.localhost /)" 404 "an ordinary service is not routed"
is "$(gw_code db.fn.localhost /)" 404 "a private service is not routed"
is "$(gw_code x /fn/fn/db/)" 404 "nor by path"
is "$(gw_code x /fn/fn/nope/)" 404 "unknown path service: 404"

is "$(gw_code api.example.test /)" 503 "a sleeping service without hk-scale: 503"
is "$(cat "$T/body")" "activation unavailable" "body says why"
is "$(gw_header retry-after)" 1 "with Retry-After"
is "$(gw_code API.Example.TEST:8082 /)" 503 "Host is routed without port or case"
is "$(gw_code x /fn/fn/api/hello)" 503 "and by /fn/app/service/"
is "$(gw_code x /fn/fn/api)" 503 "also without the trailing slash"

framing() {	# framing NAME REQUEST...
	gw_raw -t 3 "$@" >"$T/raw.out"
	is "$(head -1 "$T/raw.out")" "HTTP/1.1 400 Bad Request" "$1: 400"
	is "$(tail -2 "$T/raw.out" | head -1)" closed "$1: connection closed"
}
H='Host: api.example.test\r\n'
framing "Content-Length with Transfer-Encoding" \
    "POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
framing "duplicate Content-Length" \
    "POST / HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
framing "differing Content-Length" \
    "POST / HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"
framing "bad chunk size" \
    "POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
framing "a transfer coding other than chunked" \
    "POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\n\r\n"
framing "HTTP/1.1 without Host" "GET / HTTP/1.1\r\n\r\n"

gw_raw -t 3 "GET / HTTP/1.1\r\n${H}X-Big: " @17000 '\r\n\r\n' >"$T/raw.out"
is "$(head -1 "$T/raw.out")" "HTTP/1.1 431 Request Header Fields Too Large" \
    "a head over 16 KiB: 431"
gw_raw -t 3 "POST / HTTP/1.1\r\n${H}Content-Length: 4194305\r\n\r\n" >"$T/raw.out"
is "$(head -1 "$T/raw.out")" "HTTP/1.1 413 Content Too Large" \
    "Content-Length over max_body_bytes: 413 at once"
is "$(tail -2 "$T/raw.out" | head -1)" closed "and the connection closed"
gw_raw -t 1 "GET / HTTP/1.1\r\nHost: nope\r\n\r\n" >"$T/raw.out"
is "$(tail -2 "$T/raw.out" | head -1)" open "a 404 keeps the connection open"

is "$(gw_ctl '{"op":"status"}' services.fn/api.state services.fn/api.active \
    requests_in_flight)" "sleeping
0
0" "status: the service sleeps, nothing active"
is "$(gw_ctl '{"op":"status"}' services.fn/api.endpoint)" null \
    "status: no endpoint while asleep"
is "$(gw_ctl '{"op":"fence","service":"fn/api","idle_seconds":3600}' ok)" \
    false "fence refused before idle_seconds"
like "$(gw_ctl '{"op":"fence","service":"fn/api","idle_seconds":3600}')" \
    '^\{"active":0,"idle_since":[0-9]{13},"ok":false\}$' \
    "a refused fence says active and idle_since"
is "$(gw_ctl '{"op":"fence","service":"fn/api","idle_seconds":3600,"idle_ms":0}')" \
    '{"ok":true}' "fence granted when idle long enough (idle_ms wins)"
is "$(gw_ctl '{"op":"fence","service":"fn/api","idle_seconds":0}')" \
    '{"ok":true}' "fence granted again"
is "$(gw_ctl '{"op":"fence","service":"fn/api","idle_seconds":"x"}' error)" \
    "fence needs service and idle_seconds" "a malformed fence is refused"
is "$(gw_ctl '{"op":"fence","service":"fn/zzz","idle_seconds":0}')" \
    '{"error":"unknown service","ok":false}' "fence of an unknown service"
is "$(gw_ctl '{"op":"frobnicate"}')" '{"error":"unknown op","ok":false}' \
    "unknown op"
like "$(gw_ctl '{"op":')" '^\{"error":"invalid JSON: .*","ok":false\}$' \
    "a malformed message gets an error reply"

hk stop fn/api >/dev/null 2>&1
is "$(gw_code api.example.test /)" 503 "hk stop: 503"
is "$(cat "$T/body")" "service stopped" "body: service stopped"
is "$(gw_ctl '{"op":"status"}' services.fn/api.state)" stopped \
    "status: stopped"
hk start fn/api >/dev/null 2>&1
gw_code api.example.test / >/dev/null
is "$(cat "$T/body")" "activation unavailable" \
    "hk start: wakes again (503 without hk-scale)"

write_app '[services.new]
command = ["python3", "new.py"]
port = 11
public = true
[services.new.serverless]
startup_timeout_seconds = 5'
is "$(gw_code new.fn.localhost /)" 503 "hk apply has the gateway reload its routes"
is "$(gw_ctl '{"op":"reload"}')" '{"ok":true}' "reload over activate.sock"

HAKOPOD_RUNTIME_DIR=$T/elsewhere	# no nudge: the store changes alone
export HAKOPOD_RUNTIME_DIR
write_app '[services.newer]
command = ["python3", "new.py"]
port = 12
public = true
[services.newer.serverless]
startup_timeout_seconds = 5'
unset HAKOPOD_RUNTIME_DIR
is "$(gw_code newer.fn.localhost /)" 404 "a service applied unseen is not routed"
kill -HUP "$gw_pid"
wait_for 5 sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: newer.fn.localhost' $GW_URL/) = 503 ]"
ok $? "SIGHUP reloads the routes"
is "$(gw_code new.fn.localhost /)" 404 "a service gone from the store is not routed"

wait "$late"
is "$(head -1 "$T/late.out")" "HTTP/1.1 404 Not Found" \
    "a connection silent for 1.5 s, then a request: answered"
wait "$silent"
like "$(tail -2 "$T/silent.out" | tr '\n' ' ')" '^closed after (10|11|12)\.' \
    "a connection that says nothing is closed at the header deadline"
wait "$loris"
is "$(head -1 "$T/loris.out")" "HTTP/1.1 408 Request Timeout" \
    "slow-loris: a head not complete within 10 s is answered 408"
like "$(tail -2 "$T/loris.out" | tr '\n' ' ')" '^closed after (9|10|11)\.' \
    "and the connection is closed at the header deadline"

kill -TERM "$gw_pid"
wait "$gw_pid"
is "$?" 0 "SIGTERM: exits 0"
like "$(cat "$T/gw.log")" 'hk-activate: info: stopping: draining for 10 s' \
    "logs the drain"

# systemd socket activation: the listener on fd 3 is adopted.
port=$(free_port)
systemd-socket-activate -l "127.0.0.1:$port" hk-activate -v \
    -f "$HAKOPOD_CONFIG" \
    2>>"$T/sa.log" &
sa=$!
_pids="$_pids $sa"
wait_for 5 sh -c "ss -ltn | grep -q '127.0.0.1:$port '"
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
    -H 'Host: api.example.test' "http://127.0.0.1:$port/")
is "$code" 503 "an inherited listener (LISTEN_FDS) is served"
like "$(cat "$T/sa.log")" 'inherited socket' "and logged as inherited"
stop_pid "$sa"

# serverless_listen: the gateway binds it, not serverless_address.
lport=$(free_port)
mkdir -p "$T/run2"
sed -e "s|^runtime_dir = .*|runtime_dir = \"$T/run2\"|" \
    -e "/^\[server\]/a serverless_listen = \"127.0.0.1:$lport\"" \
    "$HAKOPOD_CONFIG" >"$T/listen.toml"
run hk-activate -m -f "$T/listen.toml"
like "$rc $err" "^0 hk-activate: server.serverless_listen: .*: moved: .*: fn/api, fn/newer\$" \
    "hk-activate -m: the gateway moves to its serverless_listen on purpose"
daemon gwl hk-activate -v -f "$T/listen.toml"
ok $? "hk-activate starts with serverless_listen"
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
    -H 'Host: api.example.test' "http://127.0.0.1:$lport/")
is "$code" 503 "serverless_listen: the gateway answers there"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
    -H 'Host: api.example.test' "$GW_URL/")
is "$code" 000 "... and not at serverless_address"
stop_pid "$gwl_pid"

done_testing
