#!/bin/sh
# enabled = false, hk.toml's declarative off switch, on SQLite and
# PostgreSQL with hk-scale, hk-activate and hk-events real: hk apply stops
# an ordinary and a serverless service; they stay stopped across a second
# apply and a restart of hk-scale; the gateway answers the serverless one
# 503 "service disabled in hk.toml"; hk start and hk wake are refused with
# the way out; enabled = true makes both run again per their kind.  hk stop
# and hk start still work on an enabled service.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

pg_missing_is_failure
EX=$HK_TOP/etc/examples/functions

write_app() {	# write_app ENABLED CONTROL-TAG
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$EX/hello.py"]
public = true
readiness = "http:/"
enabled = $1
[services.web.serverless]

[services.worker]
command = ["python3", "$EX/hello.py"]
readiness = "http:/"
enabled = $1

[services.control]
command = ["python3", "$EX/hello.py"]
readiness = "http:/"
[services.control.environment]
TAG = "$2"
APP
}

# inst SERVICE: "STATE PID" of its instance in the store, or "none"
inst() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        i = s["instance"]
        print("none" if i is None else "%s %d" % (i["state"], i["pid"]))' "$1"
}
inst_is() {	# inst_is SERVICE STATE (for wait_t)
	case "$(inst "$1")" in
	"$2"*) return 0 ;;
	esac
	return 1
}
ps_state() {	# ps_state SERVICE: its state column in hk ps
	hk ps | awk -F '\t' -v s="$1" '$1 "/" $2 == s { print $3 }'
}
code_is() {	# code_is HOST CODE (for wait_t)
	[ "$(gw_code "$1" /hello 2>/dev/null)" = "$2" ]
}
# still_down WHEN: the disabled services have no instance, their last
# process is gone, the gateway answers 503 with the reason
still_down() {
	is "$(inst fn/worker) $(inst fn/web) $(ps_state fn/worker) $(ps_state fn/web)" \
	    "none none disabled disabled" \
	    "$engine: $1: no instance of either; hk ps says disabled"
	dead "$worker_pid"
	ok $? "$engine: $1: the worker's process is gone"
	is "$(gw_code web.fn.localhost /hello) $(cat "$T/body")" \
	    "503 service disabled in hk.toml" \
	    "$engine: $1: the gateway answers 503 with the reason"
}
dead() { ! alive "$1"; }

for engine in $(engines); do
	rm -rf "$T/run" "$T"/*.log "$T"/state.db*
	if [ "$engine" = sqlite ]; then
		GW_STATE=sqlite://$T/state.db
	else
		new_store postgres enabled
		GW_STATE=$STORE
	fi
	gw_config
	write_app true v1
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: apply, everything enabled"
	e2e_start
	ok $? "$engine: hk-events, hk-scale and hk-activate are up"
	wait_t 20 inst_is fn/worker running
	ok $? "$engine: the ordinary service runs"
	wait_t 20 code_is web.fn.localhost 200
	ok $? "$engine: the serverless one answers"
	worker_pid=$(inst fn/worker | cut -d' ' -f2)

	# Disabled: stopped by the apply.
	write_app false v1
	run hk apply --dry-run "$T/app.toml"
	like "$out" '^fn/worker	revision 2	updated	keys enabled	disabled$' \
	    "$engine: hk apply --dry-run names the key and says disabled"
	run hk apply "$T/app.toml"
	is "$rc $out" "0 fn/web	revision 2	updated
fn/worker	revision 2	updated
fn/control	revision 1	unchanged" "$engine: enabled = false is a new revision"
	wait_t 20 inst_is fn/worker none
	ok $? "$engine: hk-scale stops the disabled ordinary service"
	wait_t 20 inst_is fn/web none
	ok $? "$engine: ... and the disabled serverless one"
	wait_t 10 code_is web.fn.localhost 503
	still_down "after the apply"
	run hk status fn/worker
	like "$out" '^desired: +stopped \(enabled = false in hk.toml\)$' \
	    "$engine: hk status says why"

	# The file wins over the commands.
	run hk start fn/worker
	is "$rc $err" "65 hk: error: fn/worker: disabled in hk.toml: set enabled = true and apply" \
	    "$engine: hk start of a disabled service is refused with the way out"
	run hk wake fn/web
	is "$rc $err" "65 hk: error: fn/web: disabled in hk.toml: set enabled = true and apply" \
	    "$engine: hk wake of a disabled service is refused too"

	# A second apply, waited for: hk-scale has read it when it returns.
	write_app false v2
	run hk apply --wait --timeout 60 "$T/app.toml"
	is "$rc" 0 "$engine: a second apply (fn/control changed), waited for"
	like "$out" '^fn/control revision 2 ready$' "$engine: ... which hk-scale has acted on"
	still_down "after a second apply"

	# A restart of hk-scale.
	kill -TERM "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	daemon scale hk-scale -v -g 2
	ok $? "$engine: hk-scale restarted"
	wait_t 20 inst_is fn/control running
	ok $? "$engine: ... and has started the enabled ordinary service"
	still_down "after hk-scale restarted"

	# Enabled again: each runs per its kind.
	write_app true v2
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: enabled = true applied"
	wait_t 20 inst_is fn/worker running
	ok $? "$engine: the ordinary service runs again"
	wait_t 20 code_is web.fn.localhost 200
	ok $? "$engine: the serverless one answers again"
	is "$(cat "$T/body" | head -c 10)" "hello from" "$engine: ... from the function"

	# hk stop and start work as before on an enabled service.
	run hk stop fn/worker
	is "$rc $out" "0 fn/worker	stopped" "$engine: hk stop of an enabled service"
	wait_t 20 inst_is fn/worker none
	ok $? "$engine: ... stops it"
	run hk apply "$T/app.toml"
	is "$(ps_state fn/worker)" stopped "$engine: a manual stop survives an apply"
	run hk start fn/worker
	is "$rc" 0 "$engine: hk start"
	wait_t 20 inst_is fn/worker running
	ok $? "$engine: ... starts it again"

	kill -TERM "$gw_pid" "$scale_pid" "$events_pid"
	wait "$gw_pid" "$scale_pid" "$events_pid" 2>/dev/null
done

done_testing
