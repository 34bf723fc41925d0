#!/bin/sh
# start_from = "node-spare", on SQLite and PostgreSQL, exec backend with a
# cgroup freezer: hk-scale starts a spare Node process (its log says
# ready) for the services that want one, as their user; a wake hands a
# function to it: the instance's pid is the spare's, a child of
# hk-scale, leading its own session, running as nobody in a cgroup of
# its own, with its argv, directory, environment, LISTEN_PID, secret's
# CREDENTIALS_DIRECTORY file and no channel to a Node parent; its output
# is in hk logs.  The next wake is handed to a new spare.  A stop ends
# it; a suspend freezes its cgroup and a request thaws the same pid.
# The spare killed with SIGKILL is replaced.  hk ps's status lists it
# beside the Python templates; hk-scale stopped, none is left.
# hk validate refuses the key with another backend and with a command a
# spare cannot run.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

SFN=$HK_TOP/tests/integration/fn/spare-fn.js
nobody_uid=$(id -u nobody)

write_app() {
	cat >"$T/sf.toml" <<APP
schema_version = 1
name = "sf"

[services.fn]
command = ["node", "$SFN", "one", "two"]
public = true
listen = "unix"
readiness = "socket"
secrets = ["DB_PASSWORD"]
[services.fn.environment]
GREETING = "hello-spare"
[services.fn.serverless]
start_from = "node-spare"
startup_timeout_seconds = 20

[services.sus]
command = ["node", "$SFN"]
public = true
readiness = "socket"
[services.sus.environment]
REVISION = "${1:-1}"
[services.sus.serverless]
start_from = "node-spare"
idle_action = "suspend"
suspend_max_seconds = 604800
APP
}

ps_pid() {	# ps_pid SERVICE: its instance's pid (hk ps), 0 if none
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        print(s["instance"]["pid"] if s["instance"] else 0)' "$1"
}

field() {	# field KEY: of the JSON in $T/body
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	    "$T/body" "$1"
}

spare_ready() {	# the pid of the newest spare hk-scale said ready
	sed -n 's/.*node spare node for nobody: pid \([0-9]*\) ready.*/\1/p' \
	    "$T/scale.log" | tail -1
}

ready_count() {
	count 'node spare node for nobody: pid [0-9]* ready' "$T/scale.log"
}

more_ready() {
	[ "$(ready_count)" -gt "$1" ]
}

dead() {
	! alive "$1"
}

ppid_of() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f2
}

sid_of() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f4
}

answers() {	# answers HOST: 200 with JSON in $T/body
	[ "$(gw_code "$1" /)" = 200 ]
}

# handed PID SERVICE: hk-scale says it handed PID to SERVICE, a pid it
# started as a spare
handed() {
	grep -q "service=$2: pid $1 from the node spare" "$T/scale.log" &&
	    grep -q "node spare node for nobody: started pid $1\$" "$T/scale.log"
}

# handed_to SERVICE: the pid of its newest instance from a spare
handed_to() {
	sed -n "s|.*service=$1: pid \([0-9]*\) from the node spare\$|\1|p" \
	    "$T/scale.log" | tail -1
}

# spare_alive: a spare said ready and is still one (not handed over)
spare_alive() {
	_s=$(spare_ready)
	[ -n "$_s" ] && alive "$_s" &&
	    ! grep -q "node spare node for nobody: pid $_s handed over" "$T/scale.log"
}

scale_is() {
	[ "$(scale_ctl '{"op":"status"}' "services.$1.state" 2>/dev/null)" = "$2" ]
}

suspend() {	# suspend SERVICE: fence, sleep, wait for it
	wait_t 20 state_is "$1" running &&
	    [ "$(gw_ctl "{\"op\":\"fence\",\"service\":\"$1\",\"idle_seconds\":0}")" = '{"ok":true}' ] &&
	    [ "$(scale_ctl "{\"op\":\"sleep\",\"service\":\"$1\"}")" = '{"ok":true}' ] &&
	    wait_t 5 scale_is "$1" suspended
}

cg_frozen() {	# cg_frozen PID: its cgroup says so
	_d=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)$(sed -n 's/^0:://p' "/proc/$1/cgroup")
	grep -qx 'frozen 1' "$_d/cgroup.events"
}

# spares: the runtimes and pids of scale.sock's status "templates"
spares() {
	scale_ctl '{"op":"status"}' | python3 -c '
import json, sys
print(" ".join("%s:%s:%d" % (t["runtime"], t["user"], t["pid"])
               for t in json.load(sys.stdin)["templates"]))'
}

pg_missing_is_failure

for e in $(engines); do
	new_store "$e" sf || { ok 1 "$e: store"; continue; }
	rm -f "$T"/*.log
	GW_STATE=$STORE
	gw_config "secret_key_file = \"$T/$e.key\"" 'freezer = "cgroup2"' \
	    "service_log_dir = \"$T/$e-logs\""
	V=$(python3 -c 'import secrets; print("hk-spare-" + secrets.token_hex(16))')
	printf '%s' "$V" | hk secret set sf DB_PASSWORD >/dev/null 2>&1
	ok $? "$e: hk secret set"
	hk new node tn "$T/$e-tn" >/dev/null
	ok $? "$e: hk new node tn"
	grep -q '^start_from = "node-spare"$' "$T/$e-tn/hk.toml"
	ok $? "$e: the starter opts in (start_from = \"node-spare\")"
	write_app
	run hk apply "$T/$e-tn/hk.toml"
	is "$rc" 0 "$e: hk apply of the starter"
	run hk apply "$T/sf.toml"
	is "$rc" 0 "$e: hk apply of sf"
	e2e_start
	ok $? "$e: hk-events, hk-scale and hk-activate are up"

	wait_t 30 more_ready 0
	ok $? "$e: hk-scale says a node spare is ready"
	spid=$(spare_ready)
	is "$(sed -n 's/^Uid:\t\([0-9]*\).*/\1/p' "/proc/$spid/status")" \
	    "$nobody_uid" "$e: the spare runs as nobody, not root"
	[ "$(ppid_of "$spid")" = "$scale_pid" ] && [ "$(sid_of "$spid")" = "$spid" ]
	ok $? "$e: a child of hk-scale, in a session of its own"
	like "$(spares)" "(^| )node:nobody:$spid( |\$)" \
	    "$e: scale.sock's status lists it among the templates (hk ps)"

	# The gates' first starts (bare, or from the spare) made ready; now
	# every wake is the spare's.
	wait_t 20 answers tn.tn.localhost
	ok $? "$e: the starter answers"
	put_to_sleep tn/tn
	ok $? "$e: put to sleep"
	wait_t 30 spare_alive
	wait_t 20 answers tn.tn.localhost
	ok $? "$e: woken again through the gateway"
	like "$(cat "$T/body")" "^hello from tn: GET /" "$e: the starter's answer"
	pid=$(ps_pid tn/tn)
	handed "$pid" tn/tn
	ok $? "$e: its instance, pid $pid, was a spare: hk-scale says it handed it over"

	# What a bare start gives, a spare gives too.
	put_to_sleep sf/fn
	wait_t 30 spare_alive
	spid=$(spare_ready)
	n=$(ready_count)
	wait_t 20 answers fn.sf.localhost
	ok $? "$e: sf/fn answers"
	fpid=$(field pid)
	is "$fpid" "$(ps_pid sf/fn)" "$e: the pid that answers is the instance's"
	is "$fpid" "$spid" "$e: and was the spare"
	[ "$(ppid_of "$fpid")" = "$scale_pid" ] && [ "$(sid_of "$fpid")" = "$fpid" ]
	ok $? "$e: a child of hk-scale, leading its session"
	is "$(field uid)" "$nobody_uid" "$e: runs as nobody"
	is "$(field greeting)" hello-spare "$e: its environment"
	is "$(field argv)" "['$SFN', 'one', 'two']" "$e: its argv, as node gives it"
	is "$(field cwd)" "$T" "$e: its directory"
	is "$(field secret)" "$(printf '%s' "$V" | sha256sum | cut -d' ' -f1)" \
	    "$e: its secret's file under CREDENTIALS_DIRECTORY"
	is "$(field listen_pid)" "$fpid" "$e: LISTEN_PID is its own pid"
	is "$(field channel)" False "$e: no channel to a Node parent"
	like "$(field cgroup)" "/hk\\.[^/]*\$" "$e: in a cgroup of hk-scale's"
	handed "$fpid" sf/fn
	ok $? "$e: hk-scale says it handed it over"
	wait_t 10 grep -q "spare-fn: GET / from pid $fpid" "$T/$e-logs/sf/fn/current"
	ok $? "$e: its output is in the service's log"
	run hk logs -n all sf/fn
	like "$out" "inst=pid:$fpid spare-fn: GET / from pid $fpid" \
	    "$e: hk logs shows it"

	# The next wake: another spare.
	put_to_sleep sf/fn
	ok $? "$e: stopped"
	wait_t 10 dead "$fpid"
	ok $? "$e: pid $fpid is gone"
	wait_t 30 more_ready "$n"
	ok $? "$e: a new spare is ready"
	spid2=$(spare_ready)
	wait_t 20 answers fn.sf.localhost
	ok $? "$e: sf/fn answers again"
	is "$(field pid)" "$spid2" "$e: from the new spare ($spid2), not $fpid"

	# Suspend: its cgroup frozen, the same pid thawed by a request.  A
	# new revision replaces the gate's instance, from a spare.
	wait_t 30 spare_alive
	write_app 2
	run hk apply "$T/sf.toml"
	is "$rc" 0 "$e: a new revision of sf/sus"
	wait_t 30 test -n "$(handed_to sf/sus)"
	ok $? "$e: started from a spare"
	wait_t 20 answers sus.sf.localhost
	ok $? "$e: sf/sus answers"
	upid=$(field pid)
	is "$upid" "$(handed_to sf/sus)" "$e: the spare's pid answers"
	suspend sf/sus
	ok $? "$e: sf/sus suspended"
	cg_frozen "$upid"
	ok $? "$e: its cgroup is frozen"
	wait_t 20 answers sus.sf.localhost
	ok $? "$e: a request thaws it"
	is "$(field pid)" "$upid" "$e: answered by the same pid"

	# The spare killed: replaced.
	wait_t 30 spare_alive
	n=$(ready_count)
	kpid=$(spare_ready)
	kill -KILL "$kpid"
	wait_t 30 more_ready "$n"
	ok $? "$e: the spare killed with SIGKILL is replaced"
	[ "$(spare_ready)" != "$kpid" ] && wait_t 10 dead "$kpid"
	ok $? "$e: a new pid ($(spare_ready)), the old one gone"
	grep -q "node spare node for nobody: pid $kpid exited" "$T/scale.log"
	ok $? "$e: hk-scale says it exited"

	last=$(spare_ready)
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	wait_t 10 dead "$last"
	ok $? "$e: hk-scale stopped: its spare is gone"
done

# The key is refused where it cannot do what it says.
sed 's|^readiness = "socket"$|backend = "container"\nimage = "x:1"|' \
    "$T/sf.toml" >"$T/bad.toml"
run hk validate "$T/bad.toml"
like "$err" 'services\.fn\.serverless\.start_from: "node-spare" needs backend "exec", not "container"' \
    "hk validate: start_from with another backend is refused"
sed 's|"node", "'"$SFN"'", "one", "two"|"node", "--max-old-space-size=64", "'"$SFN"'"|' \
    "$T/sf.toml" >"$T/bad2.toml"
run hk validate "$T/bad2.toml"
like "$err" 'services\.fn\.serverless\.start_from: "node-spare" needs a command node SCRIPT' \
    "hk validate: a command a spare cannot run is refused"
done_testing
