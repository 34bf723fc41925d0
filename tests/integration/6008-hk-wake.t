#!/bin/sh
# hk wake, against both stores, with every daemon real: a sleeping
# function is woken without a request (hk-scale and the gateway see it
# running, HTTPIdleWake is recorded with reason "manual", and it sleeps
# again on its own); --wait returns once it is ready, 75 when its start
# fails; a stopped service is refused and not woken; hk-scale absent is
# 69; bad input is refused.
. tests/integration/lib.sh
. tests/integration/fn/idle-lib.sh

# the woken one's HTTPIdleWake reason, of the newest event
wake_reason() {
	hk-events list --json -n 1 --kind HTTPIdleWake --service "$1" |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["detail"]["reason"])'
}

ms() { date +%s%3N; }

one() {
	e=$1
	new_store "$e" wake || { ok 1 "$e: store"; return; }
	rm -rf "$RUN"; mkdir -p "$RUN"
	idle_setup "$STORE"
	idle_apply "$(fn_svc a '' 300)$(fn_svc slow 'startup_timeout_seconds = 20' 300)
[services.slow.environment]
IDLE_FN_DELAY = \"1\"

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
	wait_t 10 asleep fn/a "$pid"
	ok $? "$e: it sleeps again after its idle time"

	t0=$(ms)
	run hk wake --wait --timeout 30 fn/slow
	t1=$(ms)
	is "$rc $out" "0 fn/slow	ready" "$e: --wait of a sleeping one: exit 0, ready"
	ok "$([ $((t1 - t0)) -ge 1000 ]; echo $?)" \
	    "$e: ... after its 1 s start ($((t1 - t0)) ms)"
	is "$(scale_state fn/slow)" running "$e: ... and it is running then"
	ok "$(scale_pid fn/slow | grep -Eq '^[0-9]+$'; echo $?)" \
	    "$e: ... with a process"

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
