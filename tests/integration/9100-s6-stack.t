#!/bin/sh
# The whole stack under a real s6-svscan, from the service directories in
# etc/s6, which drop privileges: every daemon becomes ready as its user
# (hk-scale with its three capabilities), the instances run as nobody;
# SIGKILL of each daemon in turn is followed by a restart by s6;
# afterwards a sleeping service still wakes on a request and an idle one
# still sleeps.  hk-scale's run script gives it a cgroup of its own
# (freezer = "cgroup2"): the instances' cgroups are made in it, and an
# adopted instance keeps its own.  time_unit_ms = 10 makes
# idle_seconds = 30 last 300 ms.
. tests/integration/lib.sh

for tool in s6-svscan s6-svwait s6-svstat s6-svok s6-svscanctl curl; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done

scan=$T/service
mkdir -p "$scan" "$T/run" "$T/db"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT/
cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "sqlite://$T/db/state.db"
runtime_dir = "$T/run"
time_unit_ms = 10
freezer = "cgroup2"
CONF
cat >"$T/app.toml" <<APP
schema_version = 1
name = "st"

[services.sl]
command = ["python3", "$HK_TOP/tests/integration/fn/idle-fn.py"]
public = true
[services.sl.serverless]
idle_seconds = 30

[services.warm]
command = ["python3", "$HK_TOP/tests/integration/fn/idle-fn.py"]
public = true
[services.warm.serverless]
min_replicas = 1
idle_seconds = 30
APP
HAKOPOD_CONFIG=$T/hakopod.toml
export HAKOPOD_CONFIG
hk apply "$T/app.toml" >/dev/null
ok $? "the app is applied"

for d in "$HK_TOP"/etc/s6/*/; do
	cp -R "$d" "$scan/"
done
# The run scripts drop to hakopod, which an operator creates (hk(7)) and
# this host need not have: here the stack runs as daemon, which owns the
# store and the runtime directory.
is "$(grep -lE '(s6-setuidgid|--reuid|--regid) hakopod ' "$scan"/*/run | wc -l)" \
    5 "every run script drops to hakopod"
sed -i -E -e 's/(s6-setuidgid|--reuid|--regid) hakopod /\1 daemon /g' \
    -e 's/chown hakopod:hakopod /chown daemon:daemon /' "$scan"/*/run
# The cgroup the run script makes for hk-scale, in the hierarchy of
# cgroup2, beside ours; its finish removes it.
cg2=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
mine=$(sed -n 's/^0:://p' /proc/self/cgroup)
scale_cg=${mine%/}/hk-scale
chown -R daemon:daemon "$T/run" "$T/db"
daemons=$(ls "$scan")
s6-svscan "$scan" >"$T/svscan.log" 2>&1 &
svscan_pid=$!
_pids="$_pids $svscan_pid"

stop_stack() {
	s6-svscanctl -t "$scan" 2>/dev/null
	wait_for 20 sh -c "! kill -0 $svscan_pid"
}

svc_pid() { s6-svstat -o pid "$scan/$1" 2>/dev/null; }
svc_ready() { s6-svstat -o up,ready "$scan/$1" 2>/dev/null | grep -qx 'true true'; }

# s6-svok answers once s6-supervise runs, a moment before it has written
# the status file that s6-svwait reads: wait for that file too.
for d in $daemons; do
	wait_for 10 s6-svok "$scan/$d"
	wait_for 10 test -s "$scan/$d/supervise/status"
	s6-svwait -U -t 15000 "$scan/$d"
	ok $? "$d is up and ready under s6"
done

DAEMON=$(id -u daemon)
uid_of() { sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }
for d in $daemons; do
	is "$(uid_of "$(svc_pid "$d")")" "$DAEMON" "$d runs as the run script's user"
done
is "$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$(svc_pid hk-scale)/status")" \
    00000000000000e1 "hk-scale holds CAP_CHOWN, CAP_KILL, CAP_SETGID and CAP_SETUID only"
is "$(sed -n 's/^0:://p' "/proc/$(svc_pid hk-scale)/cgroup")" "$scale_cg" \
    "hk-scale runs in a cgroup of its own, beside s6's"
is "$(stat -c %U "$cg2$scale_cg") $(stat -c %U "$cg2$scale_cg/cgroup.procs")" \
    "daemon daemon" "which belongs to the run script's user"
# warm_cg: the cgroup of the min_replicas = 1 instance
warm_pid() {
	hk ps --json | python3 -c 'import json, sys
print([s for s in json.load(sys.stdin) if s["service"] == "warm"][0]["instance"]["pid"])'
}
warm_cg() { sed -n 's/^0:://p' "/proc/$(warm_pid)/cgroup"; }
wcg=$(warm_cg)
like "$wcg" "^$scale_cg/hk\.[0-9a-f]+\.[0-9]+\.[0-9]+\$" \
    "an instance runs in a cgroup hk-scale made in its own"

state() {	# state SERVICE: what hk ps says
	hk ps | awk -F '\t' -v s="$1" '$2 == s { print $3 }'
}
get() {
	curl -sS -m 20 -o "$T/body" -w '%{http_code}' -H "Host: $1.st.localhost" "$URL"
}
is_state() { [ "$(state "$1")" = "$2" ]; }

# The gate started both; sl then sleeps on its own after 300 ms idle.
wait_for 20 is_state sl sleeping
ok $? "the serverless service goes to sleep on its own"
is "$(get sl)" 200 "a request wakes it"
like "$(cat "$T/body")" '^idle-fn pid=' "and is answered by the function"
wait_for 20 is_state sl sleeping
ok $? "and it sleeps again when idle"

# epoch D: the lease epoch D's program runs under (the environment of
# the child of D's hk-lease).
epoch() {
	_e=$(pgrep -P "$(svc_pid "$1")" 2>/dev/null | head -1)
	[ -n "$_e" ] && tr '\0' '\n' <"/proc/$_e/environ" 2>/dev/null |
	    sed -n 's/^HAKOPOD_LEASE_EPOCH=//p'
}

# up_and_ready D: s6 says D runs, with a pid, and is ready, under the
# gateway's epoch: a joiner still under the epoch of a gateway killed
# before finds out within a third of the TTL, and ends (75).
up_and_ready() {
	_p=$(svc_pid "$1")
	[ -n "$_p" ] && [ "$_p" -gt 1 ] 2>/dev/null && svc_ready "$1" &&
	    _ep=$(epoch "$1") && [ -n "$_ep" ] &&
	    [ "$_ep" = "$(epoch hk-activate)" ]
}

for d in $daemons; do
	# The kill of the gateway's hk-lease ends the lease the others joined
	# (hk-lease -j): the new one takes it again, and they end (hk-scale
	# leaving its instances, its epoch replaced), are restarted by s6
	# and join it.  Each is killed once it is up again.
	wait_for 30 up_and_ready "$d"
	old=$(svc_pid "$d")
	# s6-svstat says -1 for a service that is down: "kill -KILL -1" from
	# root would end every process of the machine.
	case $old in
	''|-*|0|1)
		ok 1 "$d has a pid to kill (s6-svstat: '$old')"
		continue
		;;
	esac
	# hk-scale itself is killed, as a crash would: its hk-lease ends
	# with it, and the next one adopts the instances.  (A SIGKILL of
	# hk-lease gives its prog SIGTERM, PR_SET_PDEATHSIG: a stop.)
	victim=$old
	[ "$d" != hk-scale ] || victim=$(pgrep -P "$old" | head -1)
	kill -KILL "$victim"
	restarted() {
		p=$(svc_pid "$d")
		[ -n "$p" ] && [ "$p" != -1 ] && [ "$p" != "$old" ] && svc_ready "$d"
	}
	wait_for 20 restarted
	ok $? "$d killed with SIGKILL is restarted by s6 and ready again"
done

# Consistent afterwards: a sleeping service wakes, an idle one sleeps, the
# warm one was never put to sleep.
wait_for 20 is_state sl sleeping
ok $? "after the kills the service is asleep"
# Until the gateway has subscribed to the new hk-scale it answers 503 with
# Retry-After; a client that honours it gets through.
woke() { [ "$(get sl)" = 200 ]; }
wait_for 10 woke
ok $? "after the kills a request still wakes it"
wait_for 20 is_state sl sleeping
ok $? "and an idle service still sleeps"
is "$(state warm)" running "the min_replicas = 1 service is still running"
warm=$(warm_pid)
is "$(warm_cg)" "$wcg" "in the cgroup it had before the kills"
is "$(uid_of "$warm") $(sed -n 's/^NoNewPrivs:[[:space:]]*//p' "/proc/$warm/status")" \
    "$(id -u nobody) 1" "which runs as nobody with no_new_privs"
is "$(get warm)" 200 "and answers"

stop_stack
ok $? "s6-svscanctl -t stops the stack"
made=$(cat "$scan/hk-scale/cgroups")
like "$made" "^$cg2$scale_cg\$" "run listed the cgroups it made"
left=
for d in $made; do
	[ -d "$d" ] && left="$left $d"
done
is "$left" "" "finish removed them: no instance was left in them"
done_testing
