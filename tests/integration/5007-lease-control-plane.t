#!/bin/sh
# The control plane under one lease, on two hosts sharing a PostgreSQL
# store (hk-lease(1), Joining and Epochs; hk(7), Several hosts).  Each
# "host" has a host name of its own (a UTS namespace: hosta, hostb), and
# a configuration of its own (its runtime_dir, and its gateway's
# serverless_listen behind the one serverless_address they advertise),
# and runs what the shipped units run: hk-lease -w gateway hk-activate,
# and hk-scale, hk-idle and hk-events under hk-lease -j gateway.
#
#	- Host a takes the lease; its daemons join it and serve: a request
#	  wakes fn, and the always-on worker bg runs once.
#	- Host b, started next, waits: its gateway has no listener and its
#	  daemons run no program, so nothing runs twice.
#	- Host a is paused (SIGSTOP of its hk-leases and daemons, not of
#	  the instances) past its TTL.  Host b takes over: its gateway
#	  answers, its hk-scale runs bg and wakes fn, under a newer epoch.
#	- Host a's hk-scale alone is continued (its hk-lease, which would
#	  stop it, stays stopped), and the exit of its old bg instance makes
#	  it act: the fence refuses it (exit 75, "fenced" in its log), it
#	  starts nothing, and the store still names b's instance.
#	- The rest of host a continued: every one of its processes ends
#	  with 75, and b still serves, with bg running exactly once.
#	- Host a started again is b's standby.  Host b dies: SIGKILL of its
#	  hk-leases, its daemons and its instances (what a host's death
#	  takes with it; hk(7) says what a host whose daemons alone die
#	  leaves behind).  Host a takes over, serves, and runs bg once.
#
# HAProxy is in front of both gateways as etc/haproxy/haproxy.cfg ships
# them for two (its commented servers gateway-a and gateway-b, PROXY v2
# from 127.0.0.2, which both hosts trust): on the advertised address, a
# client is answered by whichever host leads, before and after each
# takeover.
# On SQLite (one host): the joiners wait for the holder, and stop with
# it.  PostgreSQL only for the takeover.
. tests/integration/lib.sh
. tests/integration/lib/hosts.sh

IFN=$HK_TOP/tests/integration/fn
TTL=2
GRACE=1

# get H HOST PATH: the status code of a request to host H's gateway.
get() {
	eval "_p=\$PORT_$1"
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: $2" "http://127.0.0.1:$_p$3" 2>/dev/null
}

answers() {
	[ "$(get "$1" fn.fn.localhost /)" = 200 ]
}

write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.fn]
command = ["python3", "$IFN/idle-fn.py"]
public = true
[services.fn.serverless]
idle_seconds = 3600

[services.bg]
command = ["python3", "$IFN/scale-http.py"]
APP
}

write_app
VIP=$(free_port)	# advertised; each gateway listens on its own port

# --- SQLite, one host: the joiners follow the holder ---------------------
new_store sqlite cp
host_config a
as a hk apply "$T/app.toml" >"$T/apply.out" 2>&1
ok $? "sqlite: hk apply"
spawn a scale hk-lease -j -t $TTL -g $GRACE gateway hk-scale -v -g 2
wait_for 30 grep -q 'waiting for this host to hold it: no host has taken it' \
    "$T/a/scale.log"
ok $? "sqlite: a joiner started first waits for the holder, and says so"
is "$(prog_of $a_scale)" "" "sqlite: ... and runs nothing meanwhile"
spawn a gw hk-lease -w -t $TTL -g $GRACE gateway hk-activate -v
wait_t 60 answers a
ok $? "sqlite: once the gateway holds the lease, hk-scale joins and fn answers"
wait_t 30 bg_under a
ok $? "sqlite: bg runs once, under the joined hk-scale"
like "$(cat "$T/a/scale.log")" "joined this host's holder \\(epoch 1\\)" \
    "sqlite: the joiner logs the epoch it joined"
is "$(epoch_of "$(prog_of $a_scale)")" 1 \
    "sqlite: hk-scale runs with the holder's epoch in HAKOPOD_LEASE_EPOCH"
scale_prog=$(prog_of $a_scale)
kill -KILL "$a_gw"
wait_t 30 ended "$a_scale" && wait_t 30 ended "$scale_prog"
ok $? "sqlite: SIGKILL of the holding hk-lease: the joiner and its hk-scale end"
lost a scale 1
ok $? "sqlite: ... and the joiner says the lease is lost (its exit is 75)"
wait "$a_gw" 2>/dev/null

# --- PostgreSQL, two hosts ------------------------------------------------
if [ -z "${HK_TEST_PG:-}" ]; then
	pg_missing_is_failure
	done_testing
	exit
fi
E=postgres
new_store postgres cp2
host_config a
host_config b
rm -f "$T"/a/*.log
as a hk apply "$T/app.toml" >"$T/apply.out" 2>&1
ok $? "$E: hk apply"

host_start a
wait_t 60 answers a
ok $? "$E: host a: its gateway holds the lease and fn answers"
wait_t 60 bg_under a
ok $? "$E: host a: bg runs, once, under a's hk-scale"
a_epoch=$(epoch_of "$(prog_of $a_scale)")
like "$a_epoch" '^[0-9]+$' "$E: host a's hk-scale runs under epoch $a_epoch"
bg_a=$(bg_pids a)

host_start b
wait_for 30 grep -q 'waiting for it' "$T/b/gw.log"
ok $? "$E: host b's gateway waits for the lease (-w), and says so"
for d in scale idle events; do
	wait_for 30 grep -q 'waiting for this host to hold it: held by' \
	    "$T/b/$d.log"
	ok $? "$E: host b's $d waits for this host to hold it"
done
is "$(get b fn.fn.localhost /)" 000 "$E: host b has no listener"
haproxy_start
ok $? "$E: HAProxy in front of both gateways, from etc/haproxy/haproxy.cfg"
wait_t 30 via_haproxy
ok $? "$E: ... on the advertised address, host a answers"
is "$(prog_of $b_gw)$(prog_of $b_scale)$(prog_of $b_idle)$(prog_of $b_events)" "" \
    "$E: host b runs none of its programs"
is "$(bg_pids a)" "$bg_a" "$E: bg still runs once, a's"

# Host a paused: its hk-leases and daemons, not the instances.
a_procs=""
for p in $a_gw $a_scale $a_idle $a_events; do
	a_procs="$a_procs $p $(prog_of $p)"
done
a_scale_prog=$(prog_of $a_scale)
# host a's instances and their output relays: a fenced hk-scale leaves
# them running (hk(7)); the test stops them by their pids.
a_inst=$(pgrep -P "$a_scale_prog" | tr '\n' ' ')
t0=$(date +%s%3N)
kill -STOP $a_procs
wait_t 120 answers b
ok $? "$E: host a paused: host b takes over, and fn answers there"
t1=$(date +%s%3N)
diag "takeover: b answered $((t1 - t0)) ms after a was stopped (ttl $TTL s, grace $GRACE s)"
wait_t 60 bg_under b
ok $? "$E: host b's hk-scale runs bg"
b_epoch=$(epoch_of "$(prog_of $b_scale)")
ok "$([ "${b_epoch:-0}" -gt "$a_epoch" ] && echo 0 || echo 1)" \
    "$E: under a newer epoch ($b_epoch > $a_epoch)"
wait_t 30 via_haproxy
ok $? "$E: ... and through HAProxy, host b answers"
bg_b=$(bg_pids b)

# Host a's hk-scale alone continues, and its old bg exits: it must act
# on nothing.
kill -CONT "$a_scale_prog"
kill -KILL "$bg_a"
wait_t 60 ended "$a_scale_prog"
ok $? "$E: the continued hk-scale of host a stops itself"
like "$(cat "$T/a/scale.log")" \
    "lease gateway: fenced: epoch $b_epoch has replaced this process's $a_epoch, so it no longer leads: stopping" \
    "$E: ... fenced, and it says why"
is "$(grep -c 'service=fn/bg: started' "$T/a/scale.log")" 1 "$E: ... it started no new bg (one start in its log, the first)"
is "$(bg_pids b)" "$bg_b" "$E: the store still names host b's bg instance"
alive "$bg_b"
ok $? "$E: ... which runs"
kill -KILL $a_inst 2>/dev/null

# The rest of host a continues: each of its hk-leases ends with 75 (that
# of hk-scale, whose prog the fence ended, with its prog's 75).
kill -CONT $a_procs 2>/dev/null
wait_t 60 ended "$a_scale"
ok $? "$E: host a's hk-lease of scale ends"
for v in gw idle events; do
	eval "p=\$a_$v"
	wait_t 60 ended "$p" && lost a "$v" "$a_epoch"
	ok $? "$E: host a's hk-lease of $v ends, the lease lost (its exit is 75)" ||
	    diag "$(tail -n 20 "$T/a/$v.log")"
done
is "$(get a fn.fn.localhost /)" 000 "$E: host a's gateway no longer listens"
answers b
ok $? "$E: host b still serves"
wait_t 30 bg_under b
ok $? "$E: bg runs exactly once, under host b"

# Host a again, as the standby; then host b killed outright.
for f in gw scale idle events; do
	: >"$T/a/$f.log"
done
host_start a
wait_for 30 grep -q 'waiting for it' "$T/a/gw.log"
ok $? "$E: host a started again waits, b's standby"
b_procs=""
for p in $b_gw $b_scale $b_idle $b_events; do
	b_procs="$b_procs $p $(prog_of $p)"
done
b_procs="$b_procs $(pgrep -P "$(prog_of $b_scale)" | tr '\n' ' ')"
t0=$(date +%s%3N)
kill -KILL $b_procs
wait_t 120 answers a
ok $? "$E: host b killed: host a takes over, and fn answers"
t1=$(date +%s%3N)
diag "takeover: a answered $((t1 - t0)) ms after b was killed (ttl $TTL s, grace $GRACE s)"
wait_t 60 bg_under a
ok $? "$E: bg runs once, under host a's hk-scale"
wait_t 30 via_haproxy
ok $? "$E: ... and through HAProxy, host a answers"
# The previous holder ran on host b: host a waits out its row, and does
# not take a process of its own earlier term for it.
like "$(cat "$T/a/gw.log")" "lease gateway was not released: prog starts in" \
    "$E: host a waited for host b's row to expire"
grep -q "the previous holder's prog" "$T/a/gw.log"
ok $((! $?)) "$E: ... and did not watch a process of its own for it"

for v in events idle scale gw; do
	eval "p=\$a_$v"
	stop_pid "$p" 30
done
stop_pid "$haproxy_pid"
done_testing
