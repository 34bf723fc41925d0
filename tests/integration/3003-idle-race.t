#!/bin/sh
# The race between a sleep and new requests, for both idle actions: for
# 30 cycles, ten requests at once, sent from 40 ms before to 200 ms after
# hk-idle's deadline.  Every one is answered 200 by the function.
#   stop: a stopping instance answers 503 (it takes 150 ms to exit), so a
#     request forwarded to one would show.
#   suspend: a request forwarded to a frozen instance would hang until
#     its deadline (request_timeout_seconds = 3) and get 504.
# The service did go to sleep and wake during the run.
#   check: as stop, with an idle_check (the function's GET /, 200 after
#     30 ms) asked between the deadline and the fence: the bursts meet
#     the check too, and the fence still holds.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

race() {	# race stop|check|suspend
	a=$1
	act=$1
	check=
	if [ "$a" = check ]; then
		act=stop
		check='idle_check = "http:/"'
	fi
	new_store sqlite "race_$a" || { ok 1 "$a: store"; return; }
	rm -f "$T"/*.log
	idle_setup "$STORE"
	# On SIGTERM the function answers 503 for 150 ms before it exits.
	# Each answer takes 30 ms, so that bursts sent before the deadline
	# are still active when the fence comes, and meet it.
	idle_apply "$(fn_svc r "idle_action = \"$act\"
request_timeout_seconds = 3
$check")
[services.r.environment]
IDLE_FN_TERM_DELAY = \"0.15\"
IDLE_FN_ANSWER_DELAY = \"0.03\""
	ok $? "$a: the application is applied"
	start_all
	ok $? "$a: hk-events, hk-scale, hk-activate and hk-idle are ready"

	since=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
	python3 "$IFN/idle-race.py" "$RUN/idle.sock" "$PORT" r.fn.localhost \
	    fn/r 30 10 >"$T/race.out" 2>&1
	head -n 1 "$T/race.out" >"$T/race.head"
	n=$(awk '{ print $2 }' "$T/race.head")
	good=$(awk '{ print $4 }' "$T/race.head")
	ok "$([ "${n:-0}" -ge 300 ]; echo $?)" "$a: at least 300 requests sent ($n)"
	is "$good" "$n" "$a: every request answered 200 by the function"
	sed -n '2,11s/^/# /p' "$T/race.out"
	is "$(grep -Ec '" [5][0-9][0-9] ' "$T/gw.log")" 0 \
	    "$a: the gateway logged no 5xx"
	stop_pid "${idle_pid:-}"
	stop_pid "${gw_pid:-}"
	stop_pid "${scale_pid:-}"
	stop_pid "${events_pid:-}"
	# hk-events wrote all it was sent before it exited.
	slept=$(events_of HTTPIdleSleep fn/r --since "$since")
	woke=$(events_of HTTPIdleWake fn/r)
	met=$(count_in "$T/idle.log" 'service=fn/r: [0-9]+ active requests')
	ok "$([ "${slept:-0}" -ge 3 ] && [ "${woke:-0}" -ge 3 ] &&
	    [ "$met" -ge 3 ]; echo $?)" \
	    "$a: bursts met the fence and the sleep ($met fences refused while active, $slept sleeps, $woke wakes)"
	is "$(grep -Ec 'warning|Sanitizer|runtime error' "$T/idle.log")" 0 \
	    "$a: hk-idle logged no warning (nor a sanitizer report)"
	[ -z "$check" ] && return
	checks=$(count_in "$T/idle.log" 'service=fn/r: idle check /: idle$')
	ok "$([ "$checks" -ge 3 ]; echo $?)" \
	    "$a: the check was asked before the fences ($checks times)"
}

race stop
race check
race suspend
# Each wake of the suspend run thawed the instance frozen before it (the
# last freeze may have had no wake after it).
froze=$(grep -c 'service=fn/r: freezing' "$T/scale.log")
thawed=$(grep -c 'service=fn/r: thawed' "$T/scale.log")
ok "$([ "$froze" -ge 3 ] && [ "$thawed" -ge $((froze - 1)) ]; echo $?)" \
    "suspend: the wakes thawed the frozen instance ($froze freezes, $thawed thaws)"
done_testing
