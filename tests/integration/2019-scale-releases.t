#!/bin/sh
# A failed release never replaces a healthy one (hk-scale(8) "Releases"),
# on SQLite and PostgreSQL, through the gateway.  Four serverless
# services pass revision 1: fn/sl (then asleep), fn/su (suspended),
# fn/ru (running) and fn/fp (running on a fixed port, which its new
# revisions need too: stopped for them, started again when they fail).
# Each gets a revision 2 that exits at once, then a revision 3 that is
# never ready (it holds its readiness past startup_timeout_seconds);
# every request meanwhile is answered 200 by revision 1 (the body says
# which), hk history and hk status say what failed and what serves, and
# a StartFailed event names the revision and the reason.  A good
# revision 4 then takes over; hk rollback to revision 1 makes revision
# 5, which serves; hk apply --wait of a revision 6 that exits says it
# failed (exit 75); and an hk-scale killed with SIGKILL and started again
# while revision 6 fails still serves revision 5.
# No hk-idle: services are put to sleep through scale.sock.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

SVCS="sl su ru fp"	# fp: running, on a fixed port

# write_app KIND: every service at once; KIND good TAG, exits, never.
write_app() {
	{
		printf 'schema_version = 1\nname = "fn"\n'
		for s in $SVCS; do
			case $1 in
			exits)
				cmd='["sh", "-c", "echo broken; exit 3"]' ;;
			*)
				cmd="[\"python3\", \"$IFN/scale-http.py\"]" ;;
			esac
			printf '\n[services.%s]\ncommand = %s\npublic = true\n' \
			    "$s" "$cmd"
			[ "$s" = fp ] && printf 'port = %s\n' "$FP_PORT"
			[ "$1" = never ] && printf 'readiness = "notify"\n'
			printf '[services.%s.environment]\nSCALE_TAG = "%s"\n' \
			    "$s" "${2:-$1}"
			[ "$1" = never ] && printf 'SCALE_NOTIFY = "never"\n'
			printf '[services.%s.serverless]\n' "$s"
			printf 'idle_seconds = 86400\nstartup_timeout_seconds = 5\n'
			[ "$s" = su ] && printf 'idle_action = "suspend"\n'
		done
	} >"$T/app.toml"
	hk apply ${APPLY_WAIT:+--wait --timeout 60} "$T/app.toml" \
	    >"$T/apply.out" 2>&1
}

# gate_is SERVICE REV GATE: hk history says so of that revision
gate_is() {
	[ "$(hk history "fn/$1" | awk -F '\t' -v r="$2" '$1 == r { print $4 }')" = "$3" ]
}

# answers SERVICE TAG: a request is answered 200 by that revision
answers() {
	_code=$(get "$1.fn.localhost" /)
	[ "$_code" = 200 ] && grep -q "^$2 " "$T/body"
}

# all_answer TAG WHAT [SERVICES]: each service answers 200 with TAG
all_answer() {
	for s in ${3:-$SVCS}; do
		_code=$(get "$s.fn.localhost" /)
		is "$_code $(cut -d' ' -f1 "$T/body")" "200 $1" \
		    "$engine: fn/$s: $2: answered 200 by $1"
	done
}

# settle: sl asleep, su suspended, ru running (after a request to each)
settle() {
	ctl scale.sock '{"op":"sleep","service":"fn/sl"}' >/dev/null
	ctl scale.sock '{"op":"sleep","service":"fn/su"}' >/dev/null
	wait_t 10 scale_is fn/sl sleeping && wait_t 10 scale_is fn/su suspended
	ok $? "$engine: fn/sl sleeps, fn/su is suspended, fn/ru runs"
}

for engine in $(engines); do
	new_store "$engine" rel
	idle_setup "$STORE" "max_concurrent_starts = 8"
	FP_PORT=$(free_port)
	write_app good v1
	start_events && start_scale && start_gw
	ok $? "$engine: hk-events, hk-scale and hk-activate are ready"
	for s in $SVCS; do
		wait_t 10 gate_is "$s" 1 passed
		ok $? "$engine: fn/$s: revision 1 passed its gate"
	done
	all_answer v1 "revision 1"
	settle
	su_pid=$(scale_pid fn/su)

	# Revision 2 exits at once.
	write_app exits v2
	for s in $SVCS; do
		wait_t 10 gate_is "$s" 2 failed
		ok $? "$engine: fn/$s: revision 2 failed its gate"
	done
	wait_t 10 scale_is fn/fp running
	is "$(scale_state fn/sl) $(scale_state fn/su) $(scale_state fn/ru)" \
	    "sleeping suspended running" \
	    "$engine: what served before is as it was"
	ok $? "$engine: fn/fp: revision 1 runs again once revision 2 failed on its port"
	is "$(scale_pid fn/su)" "$su_pid" \
	    "$engine: fn/su: the frozen revision 1 is still there"
	all_answer v1 "revision 2 failed"
	is "$(scale_pid fn/su)" "$su_pid" \
	    "$engine: fn/su: thawed, the same process answered"
	run hk history fn/sl
	like "$out" "^2	[^	]*	-	failed	current	exit status 3: broken\$" \
	    "$engine: hk history: revision 2 failed, with the reason"
	like "$out" "^1	[^	]*	-	passed	serving	-\$" \
	    "$engine: hk history: revision 1 serves"
	run hk status fn/sl
	like "$out" '^gate: +revision 2 failed: exit status 3: broken$' \
	    "$engine: hk status: the gate of revision 2 failed, and why"
	like "$out" '^serving: +revision 1 \(the newest that passed its gate\)$' \
	    "$engine: hk status: revision 1 serves"
	wait_t 10 events_reach 1 StartFailed fn/sl
	run hk-events list --json -n 0 --kind StartFailed --service fn/sl
	like "$out" '"revision": 2' "$engine: a StartFailed event names revision 2"
	like "$out" '"reason": "exit status 3: broken"' "$engine: ... and why"
	like "$out" '"serving": 1' "$engine: ... and what serves"
	settle

	# Revision 3 is never ready (its readiness is held past 5 s).
	write_app never v3
	all_answer v1 "revision 3 starting" "sl su ru"
	for s in $SVCS; do
		wait_t 15 gate_is "$s" 3 failed
		ok $? "$engine: fn/$s: revision 3 failed its gate"
	done
	run hk history fn/ru
	like "$out" "^3	[^	]*	-	failed	current	not ready within 5 s\$" \
	    "$engine: hk history: revision 3 was not ready in time"
	all_answer v1 "revision 3 failed"
	settle

	# A good revision 4 passes and serves.
	write_app good v4
	for s in $SVCS; do
		wait_t 10 gate_is "$s" 4 passed
		ok $? "$engine: fn/$s: revision 4 passed its gate"
	done
	all_answer v4 "revision 4"
	run hk status fn/su
	like "$out" '^serving: +revision 4$' "$engine: hk status: revision 4 serves"

	# Rollback to revision 1.
	for s in $SVCS; do
		run hk rollback "fn/$s" 1
		is "$out" "fn/$s	revision 5	updated	from revision 1" \
		    "$engine: fn/$s: rollback to revision 1 makes revision 5"
	done
	for s in $SVCS; do
		wait_t 10 gate_is "$s" 5 passed
		ok $? "$engine: fn/$s: revision 5 passed its gate"
	done
	all_answer v1 "revision 5 (revision 1 again)"
	settle

	# hk-scale killed while revision 6 fails: revision 5 still serves.
	APPLY_WAIT=1
	write_app exits v6
	is "$?" 75 "$engine: hk apply --wait of revision 6 exits 75"
	APPLY_WAIT=
	like "$(cat "$T/apply.out")" '^fn/(sl|su|ru|fp) revision 6 failed: exit status 3: broken$' \
	    "$engine: ... and says which revision failed, and why"
	for s in $SVCS; do
		wait_t 10 gate_is "$s" 6 failed
	done
	ok $? "$engine: revision 6 failed its gate"
	subs=$(count_in "$T/gw.log" 'scale.sock: subscribed')
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	start_scale
	ok $? "$engine: hk-scale starts again"
	wait_t 10 more_in "$T/gw.log" 'scale.sock: subscribed' "$subs"
	ok $? "$engine: the gateway subscribes to it again"
	all_answer v1 "after hk-scale's restart, revision 6 failed"
	run hk history fn/sl
	like "$out" "^6	[^	]*	-	failed	current	" \
	    "$engine: revision 6 is still recorded failed"

	stop_pid "$scale_pid"
	stop_pid "$gw_pid"
	stop_pid "$events_pid"
	: >"$T/gw.log"
	: >"$T/scale.log"
done
pg_missing_is_failure

done_testing
