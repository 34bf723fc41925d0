#!/bin/sh
# HAProxy in front, as the product runs it: etc/haproxy/haproxy.cfg with
# test ports on 127.0.0.1 and a test certificate ends TLS and passes each
# connection to the gateway with a PROXY v2 header; the gateway trusts
# 127.0.0.1 only.  A JavaScript service kept warm (min_replicas = 1)
# answers through it without a wake.  Three simultaneous POSTs through
# HAProxy, from a client bound to 127.0.0.3, wake the sleeping Python
# function, each gets its answer, exactly three invocations; the
# X-Forwarded-For the function saw and the request log carry 127.0.0.3,
# with the host route and the wake each joined.  A direct connection
# from 127.0.0.1 without a header is refused; a PROXY header from an
# untrusted peer (127.0.0.2) is refused; that peer's forged
# X-Forwarded-For is replaced; a header sent in pieces is read whole.
# After hk stop, public traffic through HAProxy leaves it stopped.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

for t in haproxy openssl curl python3 socat; do
	command -v $t >/dev/null
	ok $? "$t is installed"
done

P=$T/pki
mkdir "$P"
{
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
	    -nodes -days 1 -subj "/CN=hk-test ca" -keyout "$P/ca.key" \
	    -out "$P/ca.pem" -addext basicConstraints=critical,CA:TRUE \
	    -addext keyUsage=critical,keyCertSign,cRLSign &&
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=hk-test haproxy" -keyout "$P/server.key" \
	    -out "$P/server.csr" &&
	printf '%s\n' "subjectAltName=DNS:py.fn.localhost,DNS:js.fn.localhost,IP:127.0.0.1" \
	    "extendedKeyUsage=serverAuth" >"$P/server.ext" &&
	openssl x509 -req -in "$P/server.csr" -CA "$P/ca.pem" \
	    -CAkey "$P/ca.key" -set_serial 1 -days 1 \
	    -extfile "$P/server.ext" -out "$P/server.pem" &&
	cat "$P/server.pem" "$P/server.key" >"$P/haproxy.pem"
} >"$T/openssl.log" 2>&1
ok $? "openssl: a test CA and a certificate for py.fn.localhost, 127.0.0.1"

# A JavaScript service kept warm: Node's http, answering what it saw.
cat >"$T/js-fn.js" <<'JS'
// js-fn.js - a warm service of 9300: its answer names the client it was
// told of (X-Forwarded-For) and the host it was reached by.
const http = require("http");
http.createServer((req, res) => {
	const body = "js-fn xff=" + req.headers["x-forwarded-for"] +
	    " host=" + req.headers.host + "\n";
	res.writeHead(200, { "Content-Type": "text/plain",
	    "Content-Length": Buffer.byteLength(body) });
	res.end(body);
}).listen(Number(process.env.PORT), process.env.HOST || "127.0.0.1");
JS
chmod 644 "$T/js-fn.js"

new_store sqlite front
idle_setup "$STORE" 'trusted_proxies = ["127.0.0.1"]'
idle_apply "
[services.py]
command = [\"sh\", \"$IFN/held\", \"$T/py\", \"python3\", \"$IFN/xff-fn.py\"]
public = true
[services.py.serverless]
idle_seconds = 300

[services.js]
command = [\"node\", \"$T/js-fn.js\"]
public = true
[services.js.serverless]
min_replicas = 1"
ok $? "the Python function and the warm JavaScript service are applied"
start_all
ok $? "hk-events, hk-scale, hk-activate, hk-idle ready"
wait_t 10 scale_is fn/py sleeping
ok $? "the function passed its gate and sleeps"
touch "$T/py.hold"	# its next start waits for $T/py.go (fn/held)
wait_t 15 scale_is fn/js running
ok $? "the JavaScript service is kept warm (min_replicas = 1)"

# etc/haproxy/haproxy.cfg with the test's ports, certificate and logs.
HP=$(free_port)
sed -e "s|bind :443 ssl crt /etc/haproxy/certs/hk.pem|bind 127.0.0.1:$HP ssl crt $P/haproxy.pem|" \
    -e '/^	bind :80$/d' \
    -e "s|server gateway 127.0.0.1:8082|server gateway 127.0.0.1:$PORT|" \
    -e 's|log /dev/log local0|log stderr format raw local0|' \
    -e '/^	chroot /d' -e '/^	user /d' -e '/^	group /d' \
    -e "s|^	maxconn 4096|&\\
	stats socket $T/haproxy.sock mode 600|" \
    "$HK_TOP/etc/haproxy/haproxy.cfg" >"$T/haproxy.cfg"
grep -q "127.0.0.1:$HP ssl" "$T/haproxy.cfg" &&
    grep -q "127.0.0.1:$PORT send-proxy-v2" "$T/haproxy.cfg"
ok $? "the test's config is derived from etc/haproxy/haproxy.cfg"
haproxy -c -q -f "$T/haproxy.cfg" >"$T/haproxy-c.log" 2>&1
ok $? "haproxy -c accepts it"
haproxy -db -f "$T/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
hap_pid=$!
_pids="$_pids $hap_pid"
listening() { python3 -c "import socket; socket.create_connection(('127.0.0.1', $HP), 1)"; }
wait_t 10 listening
ok $? "haproxy listens on 127.0.0.1:$HP"

# post N: one POST through HAProxy from 127.0.0.3; the answer in $T/post.N
post() {
	curl -sS --max-time 60 --cacert "$P/ca.pem" --interface 127.0.0.3 \
	    --resolve "py.fn.localhost:$HP:127.0.0.1" -o "$T/post.$1" \
	    -w '%{http_code}' -d "n=$1" "https://py.fn.localhost:$HP/hello" \
	    >"$T/code.$1" 2>"$T/curl.$1"
}
js=$(curl -sS --max-time 30 --cacert "$P/ca.pem" --interface 127.0.0.3 \
    --resolve "js.fn.localhost:$HP:127.0.0.1" "https://js.fn.localhost:$HP/")
is "$js" "js-fn xff=127.0.0.3 host=js.fn.localhost:$HP" \
    "the warm JavaScript service answers through HAProxy, told of the client"
is "$(events_of HTTPIdleWake fn/js)" 0 "... without a wake"

# The three wait for one start, which goes on once all three are parked;
# hk-idle is held (SIGSTOP) while the test looks at the instance.
kill -STOP "$idle_pid"
for i in 1 2 3; do post $i & eval "p$i=\$!"; done
wait_t 20 sh -c "[ \"\$(python3 '$IFN/gw-ctl.py' '$RUN/activate.sock' \
    '{\"op\":\"status\"}' services.fn/py.parked)\" = 3 ]"
ok $? "three simultaneous POSTs through HAProxy park while it starts"
touch "$T/py.go"
wait "$p1"; wait "$p2"; wait "$p3"
is "$(cat "$T/code.1" "$T/code.2" "$T/code.3" | tr -d '\n')" 200200200 \
    "three simultaneous POSTs through HAProxy: three 200s"
pid=$(scale_pid fn/py)
for i in 1 2 3; do
	is "$(cat "$T/post.$i")" \
	    "xff-fn pid=$pid xff=127.0.0.3 proto=https body=n=$i" \
	    "POST $i: its own answer; X-Forwarded-For the client, 127.0.0.3"
done
is "$(grep -c 'xff-fn: pid=[0-9]* POST /hello xff=127.0.0.3$' "$(outlog)")" 3 \
    "exactly three invocations, each seeing 127.0.0.3"
wait_t 5 events_reach 1 HTTPIdleWake fn/py
is "$(events_of HTTPIdleWake fn/py)" 1 "one wake"
reqs() {
	hk-events requests --json --service fn/py |
	    python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(sorted("%s:%s:%s:%s%s:%s" % (x["method"], x["status"], x.get("client", "?"), x["host"], x["path"], "woke" if x.get("wake_id") else "warm") for x in r)))'
}
R="POST:200:127.0.0.3:py.fn.localhost/hello:woke"
three() { [ "$(reqs)" = "$R $R $R" ]; }
wait_t 5 three
is "$(reqs)" "$R $R $R" \
    "the request log: three POSTs from 127.0.0.3, by the host route, each joined to the wake"
like "$(hk-events requests --service fn/py)" '127\.0\.0\.3' \
    "hk-events requests shows the client"

# Straight to the gateway, from the trusted 127.0.0.1, without a header.
before=$(count_in "$T/gw.log" 'connection refused')
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
    -H 'Host: py.fn.localhost' "http://127.0.0.1:$PORT/" 2>/dev/null)
is "$code" 000 "a direct request from the trusted address, no header: no answer"
wait_t 5 more_in "$T/gw.log" \
    'peer=127\.0\.0\.1: connection refused: not a PROXY v2 signature' "$before"
ok $? "... the gateway says why"

# raw FROM HEXHEADER [split]: from FROM, a PROXY header (hex, may be
# empty) then a GET with a forged X-Forwarded-For; prints the answer's
# first line and X-Forwarded-For, or "closed".
raw() {
	python3 - "$1" "$2" "${3:-}" "$PORT" <<'PY'
import socket, sys, time
src, hexhdr, split, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.socket()
s.bind((src, 0))
s.connect(("127.0.0.1", port))
s.settimeout(10)
hdr = bytes.fromhex(hexhdr)
req = (b"GET /raw HTTP/1.1\r\nHost: py.fn.localhost\r\n"
       b"X-Forwarded-For: 6.6.6.6\r\nConnection: close\r\n\r\n")
try:
    if split:
        for i in range(0, len(hdr), 5):
            s.sendall(hdr[i:i + 5])
            time.sleep(0.05)
        s.sendall(req)
    else:
        s.sendall(hdr + req)
    data = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        data += b
except (ConnectionResetError, BrokenPipeError):
    data = b""
if not data:
    print("closed")
else:
    body = data.split(b"\r\n\r\n", 1)[1].decode()
    xff = body.split(" xff=")[1].split(" proto=")[0]
    print(data.split(b"\r\n")[0].decode(), "xff=" + xff)
PY
}
SIG=0d0a0d0a000d0a515549540a
# PROXY TCP4 192.0.2.7:40000 -> 127.0.0.1:443
V4="${SIG}2111000cc0000207 7f000001 9c40 01bb"
V4=$(echo "$V4" | tr -d ' ')
before=$(count_in "$T/gw.log" 'untrusted peer')
is "$(raw 127.0.0.2 "$V4")" closed \
    "a PROXY header from an untrusted peer (127.0.0.2): closed"
wait_t 5 more_in "$T/gw.log" \
    'peer=127\.0\.0\.2: connection refused: a PROXY header from an untrusted peer' \
    "$before"
ok $? "... the gateway says why"
is "$(raw 127.0.0.2 '')" "HTTP/1.1 200 OK xff=127.0.0.2" \
    "an untrusted peer's forged X-Forwarded-For is replaced by its address"
is "$(raw 127.0.0.1 "$V4" split)" "HTTP/1.1 200 OK xff=6.6.6.6, 192.0.2.7" \
    "a trusted proxy's header in pieces: read whole; its list kept, the client appended"
is "$(raw 127.0.0.1 "${SIG}20000000")" "HTTP/1.1 200 OK xff=6.6.6.6, 127.0.0.1" \
    "a LOCAL header: the proxy's own connection, its own address"
is "$(raw 127.0.0.1 "$(printf 'PROXY TCP4 192.0.2.7 127.0.0.1 1 2\r\n' |
    od -An -tx1 | tr -d ' \n')")" closed \
    "a version 1 header from the trusted proxy: closed"
is "$(raw 127.0.0.1 "${SIG}2112000cc00002077f0000019c4001bb")" closed \
    "a v2 header for UDP: closed"
ok "$([ "$(ctl activate.sock '{"op":"status"}' proxy_refused)" -ge 4 ]; echo $?)" \
    "the refusals are counted (activate.sock status: proxy_refused)"
# raw_clients: the clients of the request log's GET /raw records
raw_clients() {
	hk-events requests --json |
	    python3 -c 'import json,sys; print(" ".join(sorted(x.get("client", "?") for x in json.load(sys.stdin) if x["path"] == "/raw")))'
}
two_raw() { [ "$(raw_clients | wc -w)" -ge 2 ]; }
wait_t 5 two_raw
is "$(raw_clients)" "127.0.0.2 192.0.2.7" \
    "the request log keeps the clients' GET /raw, not the LOCAL one (a proxy's own check)"
# hap_check: the gateway server's last health check, as HAProxy's
# stats say (check_status and check_code of "show stat")
hap_check() {
	echo 'show stat' | socat - "UNIX-CONNECT:$T/haproxy.sock" |
	    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) f[$i] = i; next }
		$2 == "gateway" { print $f["check_status"], $f["check_code"] }'
}
checked() { case "$(hap_check)" in L7OK\ 2*|L7OK\ 3*|L7OK\ 4*) ;; *) false ;; esac; }
wait_t 20 checked
ok $? "HAProxy's HTTP health checks reach the gateway and pass" ||
    diag "last check: $(hap_check)"
is "$(hk-events requests --json | python3 -c 'import json,sys; print(sum(1 for x in json.load(sys.stdin) if x["method"] == "OPTIONS"))')" 0 \
    "... and the request log keeps none of them"

# A manual stop: public traffic through HAProxy does not wake it.
kill -CONT "$idle_pid"
hk stop fn/py >/dev/null 2>&1
wait_t 10 scale_is fn/py stopped
ok $? "hk stop: the function is stopped"
post 4
is "$(cat "$T/code.4")" 503 "a POST through HAProxy to a stopped function: 503"
is "$(scale_state fn/py) $(grep -c 'POST /hello' "$(outlog)")" "stopped 3" \
    "... and it stays stopped, with no fourth invocation"

stop_pid "$hap_pid"
for p in $idle_pid $gw_pid $scale_pid $events_pid; do
	stop_pid "$p"
done
done_testing
