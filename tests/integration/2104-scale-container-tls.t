#!/bin/sh
# The container backend on a tcp:// engine with TLS client certificates
# (container_tls_ca, container_tls_cert, container_tls_key): a throwaway
# CA signs a server certificate for 127.0.0.1 and a client certificate;
# socat terminates TLS on 127.0.0.1, demands the client's certificate and
# passes the bytes to the suite's podman API socket.  Through it, a
# request wakes a container service (its container labelled with the
# installation, its output followed), which goes to sleep again: the
# stop's exit comes over the events stream on TLS, as does that of an
# always-on service's container killed behind hk-scale's back.  A node
# whose container_tls_ca is another CA does not trust the engine: its
# events stream is refused, and a wake fails at once with 503 and the
# TLS reason.  hk validate refuses a tcp:// engine without TLS files.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

missing=
for t in socat openssl curl; do
	command -v "$t" >/dev/null || missing="$missing $t"
	ok $? "$t is installed (scripts/deps)"
done
[ -z "$missing" ] || done_testing
ct_engine || done_testing
case $U in
unix://*) SOCK=${U#unix://} ;;
*) SOCK= ;;
esac
like "$SOCK" '^/' "the engine is a Unix socket, for socat to reach"
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

# Two CAs: one signs the engine's certificate (IP 127.0.0.1) and the
# client's; the other signs nothing here.
P=$T/pki
mkdir "$P"
mkca() {	# mkca NAME
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
	    -nodes -days 1 -subj "/CN=hk-test $1" -keyout "$P/$1.key" \
	    -out "$P/$1.pem" -addext basicConstraints=critical,CA:TRUE \
	    -addext keyUsage=critical,keyCertSign,cRLSign
}
mkcert() {	# mkcert NAME EXTENSIONS SERIAL: signed by ca
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=hk-test $1" -keyout "$P/$1.key" -out "$P/$1.csr" &&
	    printf '%s\n' "$2" >"$P/$1.ext" &&
	    openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.pem" \
	    -CAkey "$P/ca.key" -set_serial "$3" -days 1 \
	    -extfile "$P/$1.ext" -out "$P/$1.pem"
}
{
	mkca ca && mkca other &&
	    mkcert server "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" 1 &&
	    mkcert client "extendedKeyUsage=clientAuth" 2 &&
	    openssl verify -CAfile "$P/ca.pem" "$P/server.pem" "$P/client.pem"
} >"$T/openssl.log" 2>&1
rc=$?
ok $rc "openssl: two CAs, a server certificate for 127.0.0.1, a client's"
[ $rc = 0 ] || { sed 's/^/# /' "$T/openssl.log"; done_testing; }

# socat: TLS on 127.0.0.1, a client certificate required, to podman.
SPORT=$(free_port)
E=tcp://127.0.0.1:$SPORT
bg socat "OPENSSL-LISTEN:$SPORT,bind=127.0.0.1,reuseaddr,fork,cert=$P/server.pem,key=$P/server.key,cafile=$P/ca.pem,verify=1" \
    "UNIX-CONNECT:$SOCK" 2>>"$T/socat.log"
socat_pid=$last_pid
ping_tls() {	# ping_tls CURL-ARGS...: the engine's /_ping through socat
	curl -sS --max-time 5 --cacert "$P/ca.pem" "$@" \
	    "https://127.0.0.1:$SPORT/_ping"
}
ping_ok() {
	[ "$(ping_tls --cert "$P/client.pem" --key "$P/client.key")" = OK ]
}
wait_t 10 ping_ok
rc=$?
ok $rc "socat terminates TLS at $E"
[ $rc = 0 ] || { sed 's/^/# /' "$T/socat.log"; done_testing; }
run ping_tls --cert "$P/client.pem" --key "$P/client.key"
is "$rc $out" "0 OK" "with the client certificate, the engine answers"
run ping_tls
ok "$([ "$rc" != 0 ] && [ -z "$out" ]; echo $?)" \
    "without one, no answer (curl: $rc): socat demands it"
run curl -sS --max-time 5 --cacert "$P/other.pem" --cert "$P/client.pem" \
    --key "$P/client.key" "https://127.0.0.1:$SPORT/_ping"
like "$rc $err" '^60 .*SSL certificate problem' \
    "the other CA does not vouch for the engine"

STORE=sqlite://$T/state.db
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
NODE=$(hostname)
cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "$STORE"
runtime_dir = "$RUN"
time_unit_ms = 10
container_engine = "$E"
container_network = "slirp4netns"
container_tls_ca = "$P/ca.pem"
container_tls_cert = "$P/client.pem"
container_tls_key = "$P/client.key"

[nodes.untrusted]
address = "127.0.0.1"
container_engine = "$E"
container_network = "slirp4netns"
container_tls_ca = "$P/other.pem"
container_tls_cert = "$P/client.pem"
container_tls_key = "$P/client.key"
CONF
export HAKOPOD_CONFIG=$T/hakopod.toml
run hk-scale -n
is "$rc $err" "0 configuration OK" "the operator configuration with TLS files"

cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.api]
image = "$IMAGE"
port = 8080
public = true
[services.api.serverless]
idle_seconds = 300

[services.kept]
image = "$IMAGE"
port = 8080
public = true
[services.kept.serverless]
min_replicas = 1

[services.untrusted]
image = "$IMAGE"
port = 8080
public = true
node_name = "untrusted"
[services.untrusted.serverless]
startup_timeout_seconds = 60
APP
run hk validate "$T/app.toml"
is "$rc $out" "0 $T/app.toml: app fn: 3 services, 3 serverless: OK" \
    "hk validate: a tcp:// engine with its TLS files"

# The same engine without TLS files: refused.
sed '/^container_tls_/d; /^\[nodes\./,$d' "$T/hakopod.toml" >"$T/notls.toml"
sed '/^\[services\.kept\]/,$d' "$T/app.toml" >"$T/api.toml"
run hk -f "$T/notls.toml" validate "$T/api.toml"
is "$rc $err" "65 $T/api.toml:5: services.api.image: server: container_engine $E has no TLS files (container_tls_ca, container_tls_cert, container_tls_key)" \
    "hk validate: a tcp:// engine without TLS files"

run hk apply "$T/app.toml"
is "$rc" 0 "applied"
start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")
like "$INST" '^[0-9a-f]{32}$' "hk-scale recorded the installation's ID"
grep -q "node=$NODE: engine $E, containers at 127.0.0.1 (slirp4netns)\$" \
    "$T/scale.log"
ok $? "hk-scale's log names the engine: $E"
wait_t 20 grep -q "node=$NODE: engine events up\$" "$T/scale.log"
ok $? "its events stream is up, over TLS"

# svc_ids SERVICE [state]: the IDs of its containers; svc_count_is N
# SERVICE [state]: how many there are (for wait_t).
svc_ids() {
	podman ps -aq --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=$1" ${2:+--filter "status=$2"} \
	    2>/dev/null
}
svc_count_is() {
	[ "$(svc_ids "$2" ${3:-} | grep -c .)" -eq "$1" ]
}

S=fn/api
H=api.fn.localhost
wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
ok $? "the service passes its readiness gate"
wait_t 20 ct_asleep "$S"
ok $? "then sleeps"
wait_t 10 svc_count_is 0 api
ok $? "and its container is removed"

# A request wakes it; it goes to sleep after idle_seconds.
is "$(get "$H" /x)" 200 "a request through the gateway wakes it"
ID=$(svc_ids api running)
like "$ID" '^[0-9a-f]{64}$' "one container of the installation runs"
like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$(echo "$ID" | cut -c1-12)\$" \
    "and answers"
is "$(ct_inspect "$ID" '{{index .Config.Labels "hk.installation"}} {{index .Config.Labels "hk.node"}} {{index .Config.Labels "hk.app"}} {{index .Config.Labels "hk.service"}}')" \
    "$INST $NODE fn api" "labelled with installation, node, app and service"
wait_t 10 out_grep "service=$S: ct-fn: GET /x 200\$"
ok $? "its output, followed over TLS, is in hk-scale's log"
wait_t 20 ct_asleep "$S"
ok $? "it sleeps after idle_seconds"
wait_t 10 svc_count_is 0 api
ok $? "its container stopped and removed"
podman container exists "$ID"
ok $((!$?)) "(that one, $(echo "$ID" | cut -c1-12), is gone)"
wait_t 5 events_reach 2 HTTPIdleSleep "$S"
ok $? "HTTPIdleSleep recorded"

# An always-on service's container killed behind hk-scale's back: only
# the events stream tells.
wait_t 60 scale_is fn/kept running
ok $? "the always-on service runs"
KID=$(svc_ids kept running)
like "$KID" '^[0-9a-f]{64}$' "in one container"
podman kill --signal KILL "$KID" >/dev/null 2>&1
wait_t 10 grep -q "service=fn/kept: container $(echo "$KID" | cut -c1-12) killed by signal 9" \
    "$T/scale.log"
ok $? "killed with SIGKILL: its exit came over TLS, as killed by signal 9"
wait_t 30 svc_count_is 1 kept running
KID2=$(svc_ids kept running)
ok "$([ -n "$KID2" ] && [ "$KID2" != "$KID" ]; echo $?)" \
    "min_replicas = 1: a fresh container replaces it"
no_ct() {
	! podman container exists "$1"
}
wait_t 10 no_ct "$KID"
ok $? "the dead one is removed"

# The node that trusts another CA.
wait_t 20 grep -q 'node=untrusted: engine events down: .*SSL certificate problem' \
    "$T/scale.log"
ok $? "node untrusted: its events stream refuses the engine's certificate"
wait_t 30 grep -q 'service=fn/untrusted: unable to start revision 1: .*SSL certificate problem' \
    "$T/scale.log"
ok $? "its readiness gate fails, with the TLS reason"
# Past the backoff of that failure (1 s), a request wakes it.
t0=$(($(date +%s%3N) + 1500))
while [ "$(date +%s%3N)" -lt "$t0" ]; do sleep 0.1; done
is "$(get untrusted.fn.localhost /)" 503 \
    "a request that wakes it gets 503"
t1=$(date +%s%3N)
ok "$([ $((t1 - t0)) -lt 5000 ]; echo $?)" \
    "at once ($((t1 - t0)) ms; startup_timeout_seconds is 60)"
like "$(cat "$T/body")" "^service failed to start: create: $(echo "$E" | sed 's/\./\\./g'): .*SSL certificate problem" \
    "its body names the engine and the TLS failure"
grep -q 'fn/untrusted: started container' "$T/scale.log"
ok $((!$?)) "no container was started for it"
is "$(svc_ids untrusted | grep -c .)" 0 "none is there"

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
stop_pid "$events_pid"
is "$(cat "$T/scale.log" "$T/gw.log" "$T/idle.log" "$T/events.log" |
    grep -Ec 'Sanitizer|runtime error')" 0 "no sanitizer report"

# socat, by its PID; the connections it forked end with hk-scale's.
kids=$(pgrep -P "$socat_pid")
stop_pid "$socat_pid"
alive "$socat_pid"
ok $((!$?)) "socat stopped, by its PID"
none_of() {
	for _k in "$@"; do
		alive "$_k" && return 1
	done
	return 0
}
# shellcheck disable=SC2086
wait_t 5 none_of $kids
ok $? "and none of its connections is left"
done_testing
