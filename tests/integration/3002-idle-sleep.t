#!/bin/sh
# hk-idle with hk-scale and hk-activate, on SQLite and PostgreSQL: a
# service goes to sleep on its own after idle_seconds (its process gone,
# "hk ps" sleeping, HTTPIdleSleep) and the next request wakes it
# (HTTPIdleWake); min_replicas = 1 never sleeps; a service still before
# its readiness gate is not put to sleep; a long request keeps its
# service awake.  time_unit_ms = 10: idle_seconds = 30 lasts 300 ms.
#
# The states looked at last as long as the test looks: the start of
# fn/gate waits for $T/gate.go (fn/held), and the long request streams
# until $T/slow.end exists (idle-fn.py's until=), whatever the scheduler
# does; a look that fails says what it saw.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# look SERVICE PID: sets $saw to what the test sees of SERVICE: whether
# its instance PID is up, hk-scale's state, the gateway's active requests
# and hk-idle's deadline.
look() {
	if alive "$2"; then _up=up; else _up=gone; fi
	saw="pid $2 $_up, hk-scale: $(scale_state "$1"), active: $(ctl \
	    activate.sock '{"op":"status"}' "services.$1.active" 2>/dev/null \
	    ), hk-idle deadline: $(ctl idle.sock '{"op":"status"}' \
	    "services.$1.deadline" 2>/dev/null)"
}

# holds_for MS SERVICE PID PATTERN: for MS milliseconds, what look sees
# matches PATTERN (grep -E); fails at the first look that does not,
# saying what it saw.
holds_for() {
	_end=$(($(date +%s%3N) + $1))
	while [ "$(date +%s%3N)" -lt "$_end" ]; do
		look "$2" "$3"
		printf '%s\n' "$saw" | grep -Eq -- "$4" || {
			diag "after $(($(date +%s%3N) - _end + $1)) ms: $saw"
			return 1
		}
		sleep 0.05
	done
}

run_engine() {
	e=$1
	new_store "$e" sleep || { ok 1 "$e: store"; return; }
	rm -f "$T"/*.log "$T/gate.hold" "$T/gate.go" "$T/slow.end"
	idle_setup "$STORE" "max_concurrent_starts = 8"
	app="$(fn_svc a)$(fn_svc keep 'min_replicas = 1')$(fn_svc slow)"
	idle_apply "$app"
	ok $? "$e: the application is applied"
	start_events && start_scale && start_gw
	ok $? "$e: hk-events, hk-scale and hk-activate are ready"
	for s in a keep slow; do
		wait_t 5 scale_is fn/$s running
	done
	a=$(scale_pid fn/a)
	keep=$(scale_pid fn/keep)
	start_idle
	ok $? "$e: hk-idle is ready"

	wait_t 5 asleep fn/a "$a"
	ok $? "$e: a service goes to sleep on its own (pid $a gone)"
	is "$(ps_state a)" sleeping "$e: hk ps says sleeping"
	wait_t 5 events_reach 1 HTTPIdleSleep fn/a
	ok $? "$e: HTTPIdleSleep recorded"
	like "$(cat "$T/idle.log")" 'service=fn/a: idle for 30 s: sleeping' \
	    "$e: hk-idle says why"

	# A new service, not ready until the test releases its first start
	# (its readiness gate) after three idle periods and more.
	touch "$T/gate.hold"
	held="[\"sh\", \"$IFN/held\", \"$T/gate\","
	held="$held \"python3\", \"$IFN/idle-fn.py\"]"
	idle_apply "$app$(fn_svc gate 'startup_timeout_seconds = 20' |
	    sed "s|^command = .*|command = $held|")"
	ok $? "$e: a new service is applied"
	wait_t 5 scale_is fn/gate starting
	gate=$(scale_pid fn/gate)
	holds_for 1000 fn/gate "$gate" \
	    ' up, hk-scale: starting, .*hk-idle deadline: null$'
	ok $? "$e: a service before its readiness gate is not put to sleep, nor timed"
	touch "$T/gate.go"
	wait_t 10 asleep fn/gate "$gate"
	ok $? "$e: it goes to sleep"
	ready=$(grep -n 'service=fn/gate: ready at' "$T/scale.log" | cut -d: -f1)
	drain=$(grep -n 'service=fn/gate: running -> draining' "$T/scale.log" |
	    cut -d: -f1)
	ok "$([ "${ready:-0}" -gt 0 ] && [ "${drain:-0}" -gt "$ready" ]; echo $?)" \
	    "$e: only once it has passed its readiness gate"

	is "$(get a.fn.localhost /)" 200 "$e: the next request is answered"
	like "$(cat "$T/body")" '^idle-fn pid=[0-9]+$' "$e: by the function"
	a2=$(sed 's/.*pid=//' "$T/body")
	wait_t 5 events_reach 1 HTTPIdleWake fn/a
	is "$(events_of HTTPIdleWake fn/a)" 1 "$e: with one HTTPIdleWake"
	ok "$([ "$a2" != "$a" ]; echo $?)" "$e: by a fresh instance"
	wait_t 5 asleep fn/a "$a2"
	ok $? "$e: and it sleeps again after its idle period"

	# A request streaming until the test ends it; the check watches 1.2 s
	# (four idle periods) of it, from its first line (not a line the
	# previous engine's request left).
	rm -f "$T/slow.body"
	curl -sSN -o "$T/slow.body" -w '%{http_code}' --max-time 30 -G \
	    --data-urlencode s=25 --data-urlencode "until=$T/slow.end" \
	    -H 'Host: slow.fn.localhost' "$URL/slow" >"$T/slow.code" &
	curl_pid=$!
	wait_t 10 grep -q tick "$T/slow.body"
	slow=$(scale_pid fn/slow)
	holds_for 1200 fn/slow "$slow" ' up, hk-scale: running, active: 1,'
	ok $? "$e: a service with an active request stays awake"
	touch "$T/slow.end"
	wait "$curl_pid"
	is "$(cat "$T/slow.code") $(tail -n 1 "$T/slow.body")" \
	    "200 done pid=$slow" "$e: the long request ends normally"
	wait_t 5 asleep fn/slow "$slow"
	ok $? "$e: then the service goes to sleep"

	ok "$(alive "$keep" && scale_is fn/keep running; echo $?)" \
	    "$e: min_replicas = 1 never sleeps (same pid after $(($(date +%s) - $(stat -c %Y "$T/app.toml"))) s)"
	is "$(ctl idle.sock '{"op":"status"}' services.fn/keep.deadline)" null \
	    "$e: and no timer"

	stop_pid "$idle_pid"
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	# hk-events wrote all it was sent before it exited.
	is "$(events_of HTTPIdleSleep fn/keep)" 0 \
	    "$e: no HTTPIdleSleep for the min_replicas = 1 service"
	is "$(grep -Ec 'warning|Sanitizer|runtime error' "$T/idle.log")" 0 \
	    "$e: hk-idle logged no warning (nor a sanitizer report)"
}

for engine in $(engines); do
	run_engine "$engine"
done
pg_missing_is_failure
done_testing
