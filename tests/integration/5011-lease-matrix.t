#!/bin/sh
# The takeover matrix of issue 36 ("Tested with real hosts"; hk(7),
# Several hosts; hk-lease(1)): each failure of the control host, with
# every load an installation carries at once.
#
# Network namespaces made here, joined by a bridge in the first
# (MACHINE-NOTES): the front's (PostgreSQL over TCP, HAProxy in front of
# both gateways, and the test's clients, on $NET.1), control hosts a
# ($NET.2) and b ($NET.3), each running what the shipped units run
# (lib/hosts.sh), and two container nodes, node-2 ($NET.5) and node-3
# ($NET.6), each a podman API service in its namespace behind socat's
# TLS (lib/node.sh's way), which the hosts reach over the bridge.
# Nothing leaves $NET.0/24, which the root namespace routes nowhere.
#
# The loads, all present at each failure:
#	a. requests flowing: clients through HAProxy to fn (on node-3), a
#	   request every 0.1 s, each answer recorded (status and curl's
#	   exit code);
#	b. a cold start in flight: coldN (one per failure), its container
#	   holding its readiness until the test makes /tmp/go in it, and
#	   asleep again 0.3 s after its last request (idle_seconds = 30,
#	   in units of 10 ms);
#	c. a schedule due: fn's, every 3 s (time_unit_ms = 10), each run
#	   sent through HAProxy;
#	d. an always-on service: bg, on node-2.
# The failures, each of the holder, which then comes back as the
# standby, so that the next failure is the other host's:
#	1. host a paused past the TTL (SIGSTOP), and continued: its
#	   hk-jobs and hk-scale alone first, which must stop themselves,
#	   fenced, then the rest;
#	2. host b killed (SIGKILL of its hk-leases and daemons);
#	3. host a's link cut (its veth down) while it holds the lease,
#	   and restored once b has taken over.
# After each: bg runs exactly once (the same container); the containers
# on both nodes are what the store's instance rows name, none doubled or
# left over; each firing of the schedule was claimed by one run; every
# request got a 200 or a clean 429/502/503/504 (counted, printed); the cold
# start in flight got a clean error and a new wake starts it once; and
# after the pause, the old holder's daemons are fenced and wrote nothing.
# The takeover times are printed, not asserted.
#
# PostgreSQL only: a store shared by two hosts.
. tests/integration/lib.sh
. tests/integration/lib/hosts.sh
. tests/integration/lib/ct.sh
. tests/integration/lib/node.sh

TTL=2
GRACE=1
HOST_JOBS=1
NET=10.219.0
NS_DB=hk11f$$
HOST_NETNS_a=hk11a$$
HOST_NETNS_b=hk11b$$
HOST_ADDR_a=$NET.2
HOST_ADDR_b=$NET.3
HOST_VIP_ADDR=$NET.1
HOST_PROXY_ADDR=$NET.1
HAPROXY_NETNS=$NS_DB
NS_N2=hk11n2$$
NS_N3=hk11n3$$
N2=$NET.5
N3=$NET.6

if [ -z "${HK_TEST_PG:-}" ]; then
	pg_missing_is_failure
	done_testing
	exit
fi
for t in ip unshare nsenter socat openssl haproxy; do
	command -v "$t" >/dev/null 2>&1 ||
	    { ok 1 "$t is installed"; done_testing; }
done


pgdir=$T/pg
eng_pids=
socat_pids=
# _matrix_cleanup: the hosts' daemons first (an hk-scale stops its
# containers through the nodes' engines as it ends), then the
# containers, the engines, and the namespaces.
_matrix_cleanup() {
	for _h in a b; do
		for _v in gw scale idle events jobs; do
			eval "_p=\${${_h}_$_v:-}"
			[ -z "$_p" ] || { kill -CONT "$_p" 2>/dev/null; stop_pid "$_p" 20; }
		done
	done
	ct_cleanup
	for _p in $socat_pids; do
		kill -STOP "$_p"
		pkill -P "$_p"
		kill "$_p"
		kill -CONT "$_p"
	done
	for _p in $eng_pids; do
		"$HK_TOP/scripts/podman-api" stop "$_p"
	done
	# the server before _cleanup removes its directory under $T
	"$HK_TOP/scripts/pg" stop "$pgdir" >/dev/null 2>&1
	_cleanup
	for _n in "$HOST_NETNS_a" "$HOST_NETNS_b" "$NS_N2" "$NS_N3" "$NS_DB"; do
		ip netns del "$_n" 2>/dev/null
	done
	ip route del unreachable "$NET.0/24" 2>/dev/null
}
trap _matrix_cleanup EXIT

# --- The network ------------------------------------------------------------
# veth NS NAME ADDR: a veth from the bridge to namespace NS (made here),
# NAME inside it, with ADDR.
veth() {
	ip netns add "$1" && ip -n "$1" link set lo up &&
	    ip link add "$2" type veth peer name "p$2" &&
	    ip link set "$2" netns "$1" &&
	    ip link set "p$2" netns "$NS_DB" &&
	    ip -n "$NS_DB" link set "p$2" master br11 up &&
	    ip -n "$1" addr add "$3/24" dev "$2" &&
	    ip -n "$1" link set "$2" up
}
net_setup() {
	ip route add unreachable "$NET.0/24" &&
	ip netns add "$NS_DB" && ip -n "$NS_DB" link set lo up &&
	ip -n "$NS_DB" link add br11 type bridge &&
	ip -n "$NS_DB" addr add "$NET.1/24" dev br11 &&
	ip -n "$NS_DB" link set br11 up &&
	veth "$HOST_NETNS_a" "v11a$$" "$HOST_ADDR_a" &&
	veth "$HOST_NETNS_b" "v11b$$" "$HOST_ADDR_b" &&
	veth "$NS_N2" "v11n2$$" "$N2" &&
	veth "$NS_N3" "v11n3$$" "$N3"
}
net_setup
ok $? "five namespaces on a bridge: the front's, hosts a and b, node-2, node-3"

# --- PostgreSQL in the front's namespace, over TCP -----------------------
pg_netns "$NS_DB" "$NET.1" "$NET"
ok $? "a private PostgreSQL server listens on $NET.1:$pgport, in the front's namespace" ||
    { sed 's/^/# /' "$T/pg.err"; done_testing; }
sql() { psql "$LOCAL" -qAtF ' ' -c "$1" 2>/dev/null; }

# --- The nodes: podman API services in their namespaces, TLS by socat ---
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
NODE=$N2
NODE_SAN="IP:$N2,IP:$N3"
_node_pki
ok $? "openssl: a CA, one certificate for both nodes, hk-scale's client one"

# node_answers ADDR PORT: that node's engine answers _ping over TLS,
# from the front's namespace.
node_answers() {
	[ "$(ip netns exec "$NS_DB" curl -sS --max-time 5 \
	    --cacert "$NODE_PKI/ca.pem" --cert "$NODE_PKI/client.pem" \
	    --key "$NODE_PKI/client.key" "https://$1:$2/_ping" 2>/dev/null)" = OK ]
}

# node_engine NS ADDR DIR: the podman API service of the node in
# namespace NS (nsenter: "ip netns exec" would give it a /sys without
# the cgroup file system its runtime needs), and socat's TLS in front
# on ADDR:$NODE_PORT.  The node's engine shares the suite's podman
# storage: its containers go by ct_cleanup.
node_engine() {
	_e=$(nsenter --net="/run/netns/$1" "$HK_TOP/scripts/podman-api" \
	    start "$3") || return 1
	eng_pids="$eng_pids $_e"
	nsenter --net="/run/netns/$1" socat \
	    "OPENSSL-LISTEN:$NODE_PORT,bind=$2,reuseaddr,fork,cert=$NODE_PKI/server.pem,key=$NODE_PKI/server.key,cafile=$NODE_PKI/ca.pem,verify=1" \
	    "UNIX-CONNECT:$3/podman.sock" 2>>"$T/socat.log" &
	socat_pids="$socat_pids $!"
	wait_t 60 node_answers "$2" "$NODE_PORT"
}
NODE_PORT=$(free_port)
node_engine "$NS_N2" "$N2" "$T/n2"
ok $? "node-2's podman API service answers on https://$N2:$NODE_PORT"
node_engine "$NS_N3" "$N3" "$T/n3"
ok $? "node-3's podman API service answers on https://$N3:$NODE_PORT"

# --- The installation -------------------------------------------------------
VIP=$(free_port)
for h in a b; do
	host_config "$h" 'time_unit_ms = 10'
	for n in 2 3; do
		eval "_ad=\$N$n"
		cat >>"$T/$h/hakopod.toml" <<CONF

[nodes.node-$n]
address = "$_ad"
container_engine = "tcp://$_ad:$NODE_PORT"
container_tls_ca = "$NODE_PKI/ca.pem"
container_tls_cert = "$NODE_PKI/client.pem"
container_tls_key = "$NODE_PKI/client.key"
container_network = "slirp4netns"
CONF
	done
done
{
	cat <<APP
schema_version = 1
name = "fn"

[services.bg]
image = "$IMAGE"
port = 8080
node_name = "node-2"
[services.bg.environment]
GREETING = "bg"

[services.fn]
image = "$IMAGE"
port = 8080
public = true
node_name = "node-3"
[services.fn.environment]
GREETING = "fn"
[services.fn.serverless]
idle_seconds = 86400
max_concurrency = 64
[services.fn.schedules.tick]
cron = "*/5 * * * *"
path = "/tick"
concurrency = "allow"
APP
	for i in 1 2 3; do
		cat <<APP

[services.cold$i]
image = "$IMAGE"
port = 8080
public = true
node_name = "node-$((2 + i % 2))"
command = [$CT_HELD]
[services.cold$i.environment]
GREETING = "cold$i"
[services.cold$i.serverless]
idle_seconds = 30
APP
	done
} >"$T/app.toml"
as a hk apply "$T/app.toml" >"$T/apply.out" 2>&1
ok $? "hk apply: bg always on (node-2), fn with a schedule every 3 s (node-3), cold1 to cold3" ||
    sed 's/^/# /' "$T/apply.out"
haproxy_start
ok $? "HAProxy in front of both gateways, on $NET.1:$VIP"

# --- Helpers ----------------------------------------------------------------
# front CMD...: CMD in the front's namespace (HAProxy's, the clients').
front() { ip netns exec "$NS_DB" "$@"; }

# via NAME: the status code of a request for NAME.fn.localhost through
# HAProxy; the body in $T/vbody.
via() {
	front curl -sS -o "$T/vbody" -w '%{http_code}' --max-time "$VIA_MAX" \
	    -H "Host: $1.fn.localhost" "http://$NET.1:$VIP/" 2>/dev/null
}
via_ok() { [ "$(via "$1")" = 200 ]; }
VIA_MAX=30

# ids NAME [STATE]: the installation's containers of service NAME, on
# either node (the nodes' engines share the suite's storage).
ids() { ct_svc_ids "$INST" "$@"; }
one_of() { [ "$(ids "$@" | grep -c .)" -eq 1 ]; }
# go ID: the held container's /tmp/go made (by the engine's exec).
go() {
	ct_cli exec "$1" /usr/bin/python3 -c 'open("/tmp/go", "w")' \
	    >"$T/go.err" 2>&1
}
none_of() { [ -z "$(ids "$1")" ]; }
gone() { ! ct_exists "$1"; }

# ct_view: each container of the installation, "service node pid
# status", sorted; store_view: each instance row, "service node pid
# running", sorted.  What the user compares: no container the store does
# not name, none twice, none the store names missing.
ct_view() {
	for _id in $(ct_ids "$INST"); do
		ct_inspect "$_id" '{{index .Config.Labels "hk.service"}} {{index .Config.Labels "hk.node"}} {{.State.Pid}} {{.State.Status}}'
	done | sort
}
store_view() {
	sql "SELECT service, node, pid, state FROM instances WHERE app = 'fn'
	    ORDER BY service"
}
views_agree() {
	_c=$(ct_view)
	[ -n "$_c" ] && [ "$_c" = "$(store_view)" ]
}

# procs H: host H's hk-leases and the programs they run.
procs() {
	_ps=
	for _v in gw scale idle events jobs; do
		eval "_p=\$${1}_$_v"
		_ps="$_ps $_p $(prog_of "$_p")"
	done
	echo "$_ps"
}
all_ended() {
	for _p in "$@"; do
		alive "$_p" && return 1
	done
	return 0
}

# claims: each firing claimed, "firing run-id", from every log of hk-jobs
# either host wrote (each start of a host keeps its logs apart: gen).
claims() {
	cat "$T"/[ab]/jobs.log "$T"/[ab]/gen*/jobs.log 2>/dev/null |
	    sed -n 's/.*run=\([0-9a-f]*\) .*trigger=schedule:tick: the firing of \(.*\)$/\2 \1/p'
}
claims_by() {	# claims_by H: host H's current hk-jobs's
	sed -n 's/.*trigger=schedule:tick: the firing of //p' "$T/$1/jobs.log"
}
claimed_by() {	# claimed_by H N: host H's hk-jobs claimed N firings
	[ "$(claims_by "$1" | wc -l)" -ge "$2" ]
}

# sched_once H: each firing claimed once, and each run of the schedule
# hk runs lists (from host H) is the run of one claimed firing.
sched_once() {
	# the runs first: a run's row is written before its claim's line
	as "$1" hk runs --json fn/fn >"$T/runs.json" 2>"$T/runs.err" ||
	    { echo "hk runs failed: $(cat "$T/runs.err")"; return; }
	claims | sort >"$T/claims"
	python3 - "$T/claims" "$T/runs.json" <<'PY'
import collections, json, sys
fires = collections.Counter(l.rsplit(" ", 1)[0] for l in open(sys.argv[1]))
run_of = collections.Counter(l.split()[-1] for l in open(sys.argv[1]))
runs = [r["id"] for r in json.load(open(sys.argv[2]))
        if r["trigger"] == "schedule:tick"]
bad = ["firing %s claimed %d times" % (f, n) for f, n in fires.items() if n > 1]
bad += ["run %s is no claimed firing's" % r for r in runs if run_of[r] != 1]
print("%d firings, %d runs" % (len(fires), len(runs)) if not bad
      else "; ".join(bad[:5]))
PY
}

reqs_n() { cat "$T/reqs" 2>/dev/null | wc -l; }
# A clean error is an answer of HAProxy or of the gateway: 502, 503,
# 504, or 429 (the gateway's when the requests parked for fn while the
# new holder adopts it reach max_concurrency, 64 here: requests come
# every 0.1 s, and a slow machine takes seconds).
# reqs_since N: the answers after line N: "total ok clean bad ;codes;
# the bad ones;span", the span the first and the last request that got
# no 200 started, in ms after $t0.
reqs_since() {
	sed -n "$(($1 + 1)),\$p" "$T/reqs" | awk -v t0="$t0" '
	{ n++ }
	$2 == 200 && $3 == 0 { ok++; next }
	{
		s = $1 - $4 * 1000 - t0
		if (first == "" || s < first) first = s
		if (last == "" || s > last) last = s
	}
	$2 ~ /^(429|50[234])$/ && $3 == 0 { clean++; c[$2]++; next }
	{ bad++; b = b " [" $2 " exit " $3 " after " $4 " s]" }
	END {
		s = ""
		for (k in c) s = s " " k "x" c[k]
		span = first == "" ? "none" : \
		    sprintf("from %d to %d ms", first, last)
		printf "%d %d %d %d ;%s;%s;%s\n", n, ok, clean, bad, s, b, span
	}'
}

# --- Host a leads, b waits --------------------------------------------------
# Each new service passes its readiness gate once (hk-scale(8)): each
# cold one's first container is released as soon as it runs (the gate's
# starts take the start slots fn's needs), and it then goes to sleep.
gates_done=
gates_step() {
	[ -n "${INST:-}" ] || INST=$(ct_install "$LOCAL")
	for _i in 1 2 3; do
		case " $gates_done " in
		*" $_i "*) continue ;;
		esac
		# passed: hk-scale's mark in the store (its container may
		# be asleep again before the next look)
		if [ "$(sql "SELECT count(*) FROM settings
		    WHERE key = 'hk-scale.gate.fn/cold$_i'")" = 1 ]; then
			gates_done="$gates_done $_i"
			continue
		fi
		_id=$(ids "cold$_i" running)
		[ -z "$_id" ] || ct_cli exec "$_id" /usr/bin/python3 -c \
		    'open("/tmp/go", "w")' >/dev/null 2>&1
	done
	[ "$(echo $gates_done | wc -w)" -eq 3 ]
}
host_start a
wait_t 120 gates_step
ok $? "host a leads: cold1 to cold3 pass their readiness gates, released"
for i in 1 2 3; do
	wait_t 60 none_of "cold$i"
	ok $? "... cold$i goes to sleep"
done
wait_t 120 via_ok fn
ok $? "host a: fn is woken on node-3 and answers through HAProxy"
like "$INST" '^[0-9a-f-]+$' "the installation: $INST"
wait_t 60 one_of bg running
ok $? "bg runs, one container"
# The client loop (load a): in the front's namespace, a request through
# HAProxy every 0.1 s, each on its own (as clients come, whether or not
# the one before was answered), each line "end-ms code curl-exit
# seconds" in $T/reqs.  Its own timeout, 60 s, is longer than any
# takeover.
front sh -c 'while [ ! -e "$1/reqs.stop" ]; do
	{
		r=$(curl -s -o /dev/null --max-time 60 \
		    -w "%{http_code} %{exitcode} %{time_total}" \
		    -H "Host: fn.fn.localhost" "http://$2/" 2>/dev/null)
		echo "$(date +%s%3N) $r" >>"$1/reqs"
	} &
	sleep 0.1
done
wait' loop "$T" "$NET.1:$VIP" </dev/null >/dev/null 2>&1 &
reqs_pid=$!
_pids="$_pids $reqs_pid"

host_start b
wait_for 30 grep -q 'waiting for it' "$T/b/gw.log"
ok $? "host b's gateway waits for the lease"
wait_t 60 claimed_by a 2
ok $? "host a's hk-jobs fires the schedule"
wait_t 30 views_agree
ok $? "the containers on both nodes are what the store names" ||
    diag "containers: $(ct_view | tr '\n' ';') store: $(store_view | tr '\n' ';')"

gen=0
# restart H: host H's daemons again (its logs of before kept apart), as
# the standby.
restart() {
	gen=$((gen + 1))
	mkdir "$T/$1/gen$gen"
	mv "$T/$1"/*.log "$T/$1/gen$gen/"
	host_start "$1"
	wait_for 30 grep -q 'waiting for it' "$T/$1/gw.log"
}

# --- A round: one failure of the holder H, the standby N takes over --------
# before_round I H: the loads in place for failure I of holder H.
before_round() {
	# b. a cold start in flight, held by its container
	front curl -sS -o "$T/cold$1.body" -w '%{http_code} %{exitcode}' \
	    --max-time 120 -H "Host: cold$1.fn.localhost" \
	    "http://$NET.1:$VIP/" >"$T/cold$1.code" 2>"$T/cold$1.err" &
	cold_curl=$!
	_pids="$_pids $cold_curl"
	wait_t 60 one_of "cold$1" running
	ok $? "$1: a cold start of cold$1 is in flight: its container runs, held"
	cold_ct=$(ids "cold$1")
	# d. the always-on service
	bg_ct=$(ids bg running)
	is "$(echo "$bg_ct" | grep -c .)" 1 "$1: bg runs once"
	# c. the schedule is due every 3 s; a. requests flow
	r0=$(reqs_n)
	ok "$([ "$r0" -gt 0 ] && echo 0 || echo 1)" "$1: requests flow ($r0 so far)"
	h_epoch=$(epoch_of "$(prog_of "$(eval echo "\$${2}_scale")")")
	h_procs=$(procs "$2")
}

# after_round I H N: the checks once N has taken over from H.
took_over() {
	# a probe of 3 s at most: one HAProxy still sends to a stopped
	# gateway hangs
	VIA_MAX=3
	wait_t 120 via_ok fn
	ok $? "$1: host $3 takes over: fn answers through HAProxy"
	VIA_MAX=30
	t1=$(date +%s%3N)
	diag "$1: takeover: fn answered through HAProxy $((t1 - t0)) ms after the failure (ttl $TTL s, grace $GRACE s)"
	n_epoch=$(epoch_of "$(prog_of "$(eval echo "\$${3}_scale")")")
	ok "$([ "${n_epoch:-0}" -gt "${h_epoch:-0}" ] && echo 0 || echo 1)" \
	    "$1: ... under a newer epoch (${n_epoch:-none} > $h_epoch)"
	# d.
	wait_t 60 one_of bg running
	is "$(ids bg)" "$bg_ct" "$1: bg runs exactly once, the same container, adopted"
}

cold_after() {
	# b. the request held at the old holder's gateway ended cleanly
	wait_t 60 ended "$cold_curl"
	ok $? "$1: the request of the cold start in flight ends"
	like "$(cat "$T/cold$1.code")" '^50[234] 0$' \
	    "$1: ... with a clean error ($(cat "$T/cold$1.code") $(head -c 80 "$T/cold$1.err"))"
	wait_t 60 gone "$cold_ct"
	ok $? "$1: the container the old holder was starting is removed"
	front curl -sS -o "$T/cold$1.body2" -w '%{http_code} %{exitcode}' \
	    --max-time 120 -H "Host: cold$1.fn.localhost" \
	    "http://$NET.1:$VIP/" >"$T/cold$1.code2" 2>&1 &
	_w=$!
	_pids="$_pids $_w"
	wait_t 60 one_of "cold$1" running
	ok $? "$1: a new wake of cold$1 starts one container"
	_c=$(ids "cold$1")
	wait_t 30 go "$_c"
	ok $? "$1: ... released (its /tmp/go)" || diag "$(cat "$T/go.err")"
	wait_t 60 ended "$_w"
	is "$(cat "$T/cold$1.code2")" "200 0" "$1: cold$1 answers once its start is released"
}

checks_after() {
	# no container doubled or left over
	wait_t 60 views_agree
	ok $? "$1: the containers on both nodes are what the store names" ||
	    diag "containers: $(ct_view | tr '\n' ';') store: $(store_view | tr '\n' ';')"
	# c. the schedule fired on, each firing once
	_c=$(claims_by "$3" | wc -l)
	wait_t 60 claimed_by "$3" $((_c + 2))
	ok $? "$1: host $3's hk-jobs fires the schedule"
	_s=$(sched_once "$3")
	like "$_s" '^[0-9]+ firings, [0-9]+ runs$' \
	    "$1: each firing of the schedule claimed once, each run one firing's ($_s)"
	# a. every request answered, or a clean error
	read -r _n _ok _cl _bad _rest <<EOF
$(reqs_since "$r0")
EOF
	_rest=${_rest#;}
	_codes=${_rest%%;*}
	_rest=${_rest#*;}
	diag "$1: requests during the failure: $_n, $_ok answered 200, $_cl clean errors ($_codes ), $_bad bad; the failed ones started ${_rest#*;} after it"
	is "$_bad" 0 "$1: every request got a 200 or a clean 429/502/503/504" ||
	    diag "${_rest%%;*}"
	ok "$([ "$_ok" -gt 0 ] && echo 0 || echo 1)" "$1: ... and requests are answered after the takeover"
}

# --- 1. Host a paused past the TTL, and continued -----------------------------
before_round 1 a
a_jobs_prog=$(prog_of "$a_jobs")
a_scale_prog=$(prog_of "$a_scale")
t0=$(date +%s%3N)
kill -STOP $h_procs
ok $? "1: host a paused: SIGSTOP of its hk-leases and daemons"
took_over 1 a b
wait_t 60 views_agree
ok $? "1: the containers on both nodes are what the store names"
sql "SELECT * FROM instances ORDER BY app, service, replica" >"$T/rows.before"
# Host a's hk-jobs and hk-scale alone continue (their hk-leases, which
# would stop them, stay stopped): a firing is long due, and the start
# hk-scale was making has had its container removed.
kill -CONT "$a_jobs_prog" "$a_scale_prog"
wait_t 60 all_ended "$a_jobs_prog" "$a_scale_prog"
ok $? "1: the continued hk-jobs and hk-scale of host a stop themselves"
for v in jobs scale; do
	like "$(cat "$T/a/$v.log")" \
	    "lease gateway: fenced: epoch $n_epoch has replaced this process's $h_epoch, so it no longer leads: stopping" \
	    "1: ... $v fenced, and it says why"
done
kill -CONT $h_procs 2>/dev/null
wait_t 60 all_ended $h_procs
ok $? "1: the rest of host a continued: every process of it ends"
sql "SELECT * FROM instances ORDER BY app, service, replica" >"$T/rows.after"
diff_ok "$T/rows.after" "$T/rows.before" \
    "1: host a wrote no instance row after its epoch ended"
# b may not have claimed a firing yet: wait for its first, or the
# comparison below has nothing to compare with.
wait_t 60 claimed_by b 1
ok $? "1: host b's hk-jobs claims a firing"
last_a=$(claims_by a | sort | tail -1)
first_b=$(claims_by b | sort | head -1)
ok "$([ -z "$last_a" ] || [ "$last_a" \< "$first_b" ] && echo 0 || echo 1)" \
    "1: ... and claimed no firing after b took the schedule on ($last_a < $first_b)"
cold_after 1
checks_after 1 a b
restart a
ok $? "1: host a started again waits, b's standby"

# --- 2. Host b killed --------------------------------------------------------
before_round 2 b
t0=$(date +%s%3N)
kill -KILL $h_procs
ok $? "2: host b killed: SIGKILL of its hk-leases and daemons"
took_over 2 b a
cold_after 2
checks_after 2 b a
restart b
ok $? "2: host b started again waits, a's standby"

# --- 3. Host a's link cut, then restored ------------------------------------
before_round 3 a
a_sessions() {
	sql "SELECT count(*) FROM pg_stat_activity WHERE client_addr = '$HOST_ADDR_a'"
}
no_a_sessions() { [ "$(a_sessions)" = 0 ]; }
n=$(a_sessions)
ok "$([ "${n:-0}" -gt 0 ] && echo 0 || echo 1)" \
    "3: host a has sessions open on PostgreSQL before the cut (${n:-none})"
t0=$(date +%s%3N)
ip -n "$HOST_NETNS_a" link set "v11a$$" down
ok $? "3: host a's link cut (its veth down): no PostgreSQL, no node, no HAProxy"
# Every session of a cut host, a daemon's as well as the lease's, must be
# dropped by the server within seconds (keepalives and tcp_user_timeout,
# store_pg.c's pg_silent()): one that holds the write lock would otherwise
# keep the standby out until the link returns.
wait_t 60 no_a_sessions
ok $? "3: the server drops every session of host a ($(a_sessions) left $(( $(date +%s%3N) - t0 )) ms after the cut)"
took_over 3 a b
ip -n "$HOST_NETNS_a" link set "v11a$$" up
ok $? "3: host a's link restored"
wait_t 120 all_ended $h_procs
ok $? "3: every process of host a ends, the lease lost"
cold_after 3
checks_after 3 a b
restart a
ok $? "3: host a started again waits, b's standby"

touch "$T/reqs.stop"
wait_t 90 ended "$reqs_pid"
for h in a b; do
	for v in events idle jobs scale gw; do
		eval "p=\$${h}_$v"
		stop_pid "$p" 30
	done
done
stop_pid "$haproxy_pid"
done_testing
