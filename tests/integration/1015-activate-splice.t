#!/bin/sh
# hk-activate passes the rest of a large Content-Length body from the
# backend's socket to the client's through a pipe (splice(2)): bodies of
# every size around the 16 KiB threshold arrive whole and in order, the
# connections on both sides are reused after one, HEAD and HTTP/1.0 are
# unchanged, a slow client holds back the backend without stalling
# anyone else, and a client or a backend that cuts a body short leaves
# no pipe behind (fn/gw-backend.py's /bytes, /cut and /extra).
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
gw_config
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.big]
command = ["python3", "$BE"]
public = true
[services.big.serverless]
min_replicas = 1
request_timeout_seconds = 30
max_concurrency = 8
APP
hk apply "$T/app.toml" >/dev/null
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
wait_t 20 state_is fn/big running
ok $? "fn/big running"
H=big.fn.localhost

# sha_of N: the digest of the body /bytes/N sends (gw-backend.py's blob).
sha_of() {
	python3 -c 'import hashlib, runpy, sys
print(hashlib.sha256(runpy.run_path(sys.argv[1])["blob"](int(sys.argv[2]))).hexdigest())' "$BE" "$1"
}
sha() {
	sha256sum "$1" | cut -d' ' -f1
}
# pipes: the pipe descriptors the gateway holds (two per pipe).
pipes() {
	ls -l "/proc/$gw_pid/fd" 2>/dev/null | grep -c 'pipe:'
}
# fds: every descriptor the gateway holds.
fds() {
	ls "/proc/$gw_pid/fd" 2>/dev/null | wc -l
}
pipes0=$(pipes)

for n in 100 16383 16384 16385 65535 65536 65537 300000 4194304; do
	is "$(gw_code $H "/bytes/$n") $(gw_header content-length) $(sha "$T/body")" \
	    "200 $n $(sha_of $n)" "a body of $n bytes arrives whole and in order"
done
is "$(gw_header transfer-encoding)" "" "... with its Content-Length, not chunked"
is "$(pipes)" "$((pipes0 + 2))" "one pipe is kept for the next response, none more"

# One client connection: a spliced response, then more requests on it.
curl -sS --max-time 30 -H "Host: $H" -o "$T/k1" "$GW_URL/bytes/200000" \
    -o "$T/k2" "$GW_URL/conn" -o "$T/k3" "$GW_URL/bytes/70000" \
    -o "$T/k4" "$GW_URL/conn" 2>"$T/k.err"
ok $? "four requests on one client connection, two of them spliced"
is "$(sha "$T/k1") $(sha "$T/k3")" "$(sha_of 200000) $(sha_of 70000)" \
    "... both large bodies whole"
is "$(cat "$T/k2")" "$(cat "$T/k4")" \
    "... and the backend connection is reused after a spliced body"
is "$(cat "$T/k.err")" "" "... and curl reported no error"

# HEAD of a large body, then a GET on the same connection.
python3 - "$GW_PORT" "$H" >"$T/head.out" <<'EOF'
import hashlib, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
host = sys.argv[2].encode()
def head_of(data):
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, rest = data.split(b"\r\n\r\n", 1)
    cl = [l.split(b":")[1].strip().decode() for l in head.split(b"\r\n")
          if l.lower().startswith(b"content-length:")]
    return head.split(b" ")[1].decode(), cl[0], rest
s.sendall(b"HEAD /bytes/200000 HTTP/1.1\r\nHost: %s\r\n\r\n" % host)
code, cl, rest = head_of(b"")
print(code, cl, len(rest))
s.sendall(b"GET /bytes/20000 HTTP/1.1\r\nHost: %s\r\n\r\n" % host)
code, cl, body = head_of(rest)
while len(body) < int(cl):
    part = s.recv(65536)
    if not part:
        break
    body += part
print(code, len(body), hashlib.sha256(body).hexdigest())
EOF
is "$(sed -n 1p "$T/head.out")" "200 200000 0" \
    "HEAD of a large body: 200 with its Content-Length, and no body"
is "$(sed -n 2p "$T/head.out")" "200 20000 $(sha_of 20000)" \
    "... and a GET on the same connection after it gets its own body whole"

is "$(gw_code $H /bytes/300000 --http1.0) $(sha "$T/body")" \
    "200 $(sha_of 300000)" "an HTTP/1.0 client gets the body whole"

is "$(gw_code $H /extra/100000) $(sha "$T/body")" "200 $(sha_of 100000)" \
    "bytes the backend sends after a large body are not the client's"
is "$(gw_code $H /bytes/30000) $(sha "$T/body")" "200 $(sha_of 30000)" \
    "... and the next request is answered by the backend, whole"

# A slow client: 1 MiB read at 256 KiB every 50 ms through a small
# receive buffer, while another client is served at once.
python3 - "$GW_PORT" "$H" >"$T/slow.out" 2>&1 <<'EOF' &
import hashlib, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /bytes/1048576 HTTP/1.1\r\nHost: %s\r\n\r\n" % sys.argv[2].encode())
data = b""
while b"\r\n\r\n" not in data:
    data += s.recv(65536)
head, body = data.split(b"\r\n\r\n", 1)
while len(body) < 1048576:
    time.sleep(0.05)
    part = s.recv(262144)
    if not part:
        break
    body += part
print(len(body), hashlib.sha256(body).hexdigest())
EOF
slow=$!
sleep 0.3
want=$(sha_of 65536)
t0=$(date +%s%3N)
code=$(gw_code $H /bytes/65536)
t1=$(date +%s%3N)
is "$code $(sha "$T/body")" "200 $want" \
    "while a slow client holds a large body, another is answered"
diag "the other client's request took $((t1 - t0)) ms"
alive $slow
ok $? "... before the slow client is through"
wait "$slow"
is "$(cat "$T/slow.out")" "1048576 $(sha_of 1048576)" \
    "the slow client gets its 1 MiB whole"

# Clients that leave in the middle of a large body, 30 times.
fds0=$(fds)
python3 - "$GW_PORT" "$H" <<'EOF'
import socket, sys
for i in range(30):
    s = socket.socket()
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /bytes/8388608 HTTP/1.1\r\nHost: %s\r\n\r\n" % sys.argv[2].encode())
    got = 0
    while got < 100000:
        got += len(s.recv(65536))
    s.close()
EOF
wait_t 10 sh -c "[ \$(ls -l /proc/$gw_pid/fd | grep -c 'pipe:') -le $((pipes0 + 2 * 8)) ]"
ok $? "30 clients that left mid-body leave no pipe behind (at most one idle per connection in use)"
is "$(gw_code $H /bytes/65537) $(sha "$T/body")" "200 $(sha_of 65537)" \
    "... and the next large body arrives whole"
wait_t 10 sh -c "[ \$(ls /proc/$gw_pid/fd | wc -l) -le $((fds0 + 16)) ]"
ok $? "... nor other descriptors ($(fds) now, $fds0 before)"

# The backend cuts a large body short: the client's connection is closed
# before the declared length (curl: 18), never completed with other bytes.
code=$(curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 -H "Host: $H" \
    "$GW_URL/cut/1000000" 2>"$T/cut.err")
is "$? $code" "18 200" "a body the backend cut short is cut short for the client"
is "$(head -c 500000 "$T/body" | sha256sum | cut -d' ' -f1)" \
    "$(python3 -c 'import hashlib, runpy, sys
print(hashlib.sha256(runpy.run_path(sys.argv[1])["blob"](1000000)[:500000]).hexdigest())' "$BE")" \
    "... after the bytes it did send, in order"
is "$(wc -c <"$T/body" | tr -d ' ')" 500000 "... and not one byte more"
is "$(gw_code $H /bytes/40000) $(sha "$T/body")" "200 $(sha_of 40000)" \
    "the next request is served"

# The request log counts spliced bytes as sent.
wait_t 5 sh -c "hk-events requests --json -n 0 | grep -q '\"path\":\"/bytes/4194304\"'"
out=$(requests_json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["path"] == "/bytes/4194304" and r["status"] == 200:
        print(r["outcome"], r["bytes_out"] > 4194304, r["bytes_out"] < 4194304 + 512)
        break')
is "$out" "ok True True" "the request record counts the spliced body in bytes_out"

# A large response read ahead of the client, and behind it, pipelined, a
# request whose body comes later: the reads that follow a response end
# with it, and the next exchange waits for its body.
gw_raw -t 10 -p 0.5 "GET /bytes/300000 HTTP/1.1\r\nHost: $H\r\n\r\nPOST /p HTTP/1.1\r\nHost: $H\r\nContent-Length: 10\r\nConnection: close\r\n\r\n12345" \
    67890 >"$T/raw.out"
is "$(grep -ao 'HTTP/1.1 200 OK' "$T/raw.out" | wc -l | tr -d ' ') $(grep -ai '^content-length' "$T/raw.out" | head -1 | tr -d '\r' | tr A-Z a-z)" \
    "2 content-length: 300000" "a pipelined request after a large response is answered"
like "$(tail -3 "$T/raw.out" | head -2 | tr '\n' ' ')" '^POST /p bytes=10 closed $' \
    "with its whole body, which came later"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
done_testing
