#!/bin/sh
# hk wake, against both stores, with every daemon real: a sleeping
# function is woken without a request (hk-scale and the gateway see it
# running, HTTPIdleWake is recorded with reason "manual", and it sleeps
# again on its own); --wait returns once it is ready, 75 when its start
# fails; a stopped service is refused and not woken; hk-scale absent is
# 69; bad input is refused.
#
# What must last while the test looks lasts because the test holds it:
# fn/slow's start waits (fn/held) until the test releases it, and hk-idle,
# which puts a function to sleep its idle time after its last request, is
# stopped (SIGSTOP) while the test reads a running state and continued
# after; so a busy machine that makes the test slow changes nothing.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# idle_hold / idle_release: hk-idle stopped, continued (also at exit: a
# stopped process does not die of the SIGTERM that ends the test's).
# Held only while no function is awake, so never halfway through a fence.
idle_held=
idle_hold() {
	kill -STOP "$idle_pid" && idle_held=$idle_pid
}
idle_release() {
	[ -z "$idle_held" ] || kill -CONT "$idle_held"
	idle_held=
}
trap 'idle_release; _cleanup' EXIT

# the woken one's HTTPIdleWake reason, of the newest event
wake_reason() {
	hk-events list --json -n 1 --kind HTTPIdleWake --service "$1" |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["detail"]["reason"])'
}

one() {
	e=$1
	new_store "$e" wake || { ok 1 "$e: store"; return; }
	rm -rf "$RUN"; mkdir -p "$RUN"
	rm -f "$T/slow.hold" "$T/slow.go"
	idle_setup "$STORE"
	idle_apply "$(fn_svc a '' 300)

[services.slow]
command = [\"sh\", \"$IFN/held\", \"$T/slow\", \"python3\", \"$IFN/idle-fn.py\"]
public = true
[services.slow.serverless]
idle_seconds = 300
startup_timeout_seconds = 20

[services.bad]
command = [\"sh\", \"-c\", \"exit 3\"]
public = true
[services.bad.serverless]
startup_timeout_seconds = 5

[services.always]
command = [\"python3\", \"$IFN/idle-fn.py\"]"
	ok $? "$e: the functions are applied"

	run hk wake fn/a
	is "$rc" 69 "$e: hk-scale not running: exit 69"
	like "$err" '^hk: error: hk-scale is not running' "$e: ... saying so"

	start_all
	ok $? "$e: hk-events, hk-scale, hk-activate, hk-idle ready"
	wait_t 20 scale_is fn/a sleeping && wait_t 20 scale_is fn/slow sleeping
	ok $? "$e: the functions passed their gate and sleep"
	before=$(events_of HTTPIdleWake fn/a)

	# fn/a stays up until the test has seen it running and served.
	idle_hold
	run hk wake fn/a
	is "$rc $out" "0 fn/a	waking" "$e: hk wake: exit 0 at once"
	wait_t 10 scale_is fn/a running
	ok $? "$e: hk-scale runs it"
	wait_t 5 gw_is fn/a running
	ok $? "$e: the gateway knows its endpoint"
	wait_t 5 events_reach $((before + 1)) HTTPIdleWake fn/a
	ok $? "$e: HTTPIdleWake recorded"
	is "$(wake_reason fn/a)" manual "$e: ... with reason manual"
	pid=$(scale_pid fn/a)
	is "$(get a.fn.localhost /)" 200 "$e: a request is served at once"
	is "$(cat "$T/body")" "idle-fn pid=$pid" "$e: ... by the woken instance"

	run hk wake --wait fn/a
	is "$rc $out" "0 fn/a	ready" "$e: --wait of a running one: ready"
	is "$(scale_pid fn/a)" "$pid" "$e: ... and it was not started again"
	idle_release
	wait_t 10 asleep fn/a "$pid"
	ok $? "$e: it sleeps again after its idle time"

	# --wait of a start that the test holds, then releases; fn/slow then
	# stays up until the test has seen it running.
	: >"$T/slow.hold"
	idle_hold
	hk wake --wait --timeout 30 fn/slow >"$T/wake.out" 2>"$T/wake.err" &
	wpid=$!
	_pids="$_pids $wpid"
	wait_t 10 scale_is fn/slow starting
	ok $? "$e: --wait of a sleeping one: it starts"
	alive "$wpid"
	ok $? "$e: ... and hk waits while the start is held"
	: >"$T/slow.go"
	wait_t 10 gone "$wpid"
	wait "$wpid"
	rc=$?
	is "$rc $(cat "$T/wake.out")" "0 fn/slow	ready" \
	    "$e: ... until it is ready: exit 0, ready"
	is "$(scale_state fn/slow)" running "$e: ... and it is running then"
	ok "$(scale_pid fn/slow | grep -Eq '^[0-9]+$'; echo $?)" \
	    "$e: ... with a process"
	idle_release

	run hk wake --wait --timeout 20 fn/bad
	is "$rc" 75 "$e: --wait of a start that fails: exit 75"
	like "$err" '^hk: error: fn/bad: unable to start: ' "$e: ... saying why"

	hk stop fn/a >/dev/null 2>&1
	wait_t 10 scale_is fn/a stopped
	ok $? "$e: fn/a stopped"
	run hk wake --wait fn/a
	is "$rc" 65 "$e: a stopped service: exit 65"
	is "$err" "hk: error: fn/a is stopped (hk start fn/a)" "$e: ... saying so"
	is "$(ctl scale.sock '{"op":"wake","service":"fn/a","reason":"manual"}' error)" \
	    stopped "$e: hk-scale refuses it as well"
	is "$(scale_state fn/a) $(scale_pid fn/a)" "stopped null" \
	    "$e: ... and it was not woken"
	hk start fn/a >/dev/null 2>&1

	run hk wake fn/always
	is "$rc" 65 "$e: an ordinary service: exit 65"
	like "$err" 'fn/always is not serverless' "$e: ... saying so"
	run hk wake fn/nosuch
	is "$rc" 65 "$e: no such service: exit 65"
	like "$err" 'fn/nosuch: no such service' "$e: ... saying so"
	run hk wake /x
	is "$rc" 65 "$e: not a service name: exit 65"
	run hk wake
	is "$rc" 64 "$e: no service: exit 64"
	run hk wake fn/a fn/slow
	is "$rc" 64 "$e: two services: exit 64"
	run hk wake --timeout 3 fn/a
	is "$rc" 64 "$e: --timeout without --wait: exit 64"
	run hk wake --wait --timeout 0 fn/a
	is "$rc" 64 "$e: --timeout 0: exit 64"
	run hk wake --bogus fn/a
	is "$rc" 64 "$e: an unknown flag: exit 64"
	run hk wake --help
	like "$rc $out" '^0 usage: hk .* wake \[--wait \[--timeout seconds\]\] service' \
	    "$e: --help: the usage, exit 0"

	for p in $idle_pid $gw_pid $scale_pid $events_pid; do
		stop_pid "$p"
	done
	run hk wake --wait fn/slow
	is "$rc" 69 "$e: hk-scale gone: --wait exits 69"
}

for e in $(engines); do
	one "$e"
done
pg_missing_is_failure
done_testing
