#!/bin/sh
# A failed release never replaces a healthy one, for ordinary services
# too (hk-scale(8) "Releases"), on SQLite and PostgreSQL.  Two ordinary
# services (no [serverless]: always running) pass revision 1: fn/fp on a
# fixed port (which its new revisions need too: stopped for them, started
# again when they fail) and fn/ru on a port hk-scale picks (its new
# revisions start beside it).  Each gets a revision 2 that exits at once:
# revision 1 answers again on fn/fp's port, fn/ru's revision 1 process
# answers throughout, hk history and hk status say what failed and what
# serves (hk apply --wait says it failed), and fn/ru's gate is tried
# again after its backoff.  hk-scale killed with SIGKILL and started
# again runs revision 1, not 2.  A revision 3 that is never ready (it
# holds its readiness past its startup_timeout_seconds, 10 s, where an
# ordinary service's default is 60 s) fails the same way; a good revision
# 4 then replaces revision 1.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

SVCS="fp ru"	# fp: on a fixed port

# write_app KIND TAG: both services at once; KIND good, exits or never.
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
			printf '\n[services.%s]\ncommand = %s\n' "$s" "$cmd"
			[ "$s" = fp ] && printf 'port = %s\n' "$FP_PORT"
			[ "$1" = never ] && printf 'readiness = "notify"\n' &&
			    printf 'startup_timeout_seconds = 10\n'
			printf '[services.%s.environment]\nSCALE_TAG = "%s"\n' \
			    "$s" "$2"
			[ "$1" = never ] && printf 'SCALE_NOTIFY = "never"\n'
		done
	} >"$T/app.toml"
	hk apply ${APPLY_WAIT:+--wait --timeout 60} "$T/app.toml" \
	    >"$T/apply.out" 2>&1
}

# gate_is SERVICE REV GATE: hk history says so of that revision
gate_is() {
	[ "$(hk history "fn/$1" | awk -F '\t' -v r="$2" '$1 == r { print $4 }')" = "$3" ]
}

# endpoint SERVICE: where hk-scale says its instance listens
endpoint() {
	ctl scale.sock '{"op":"status"}' "services.fn/$1.endpoint" 2>/dev/null
}

# answer SERVICE: "CODE TAG" of a request to its instance (fn/fp: on its
# fixed port), the body in $T/body
answer() {
	if [ "$1" = fp ]; then
		_ep=127.0.0.1:$FP_PORT
	else
		_ep=$(endpoint "$1")
	fi
	_code=$(curl -sS -o "$T/body" -w '%{http_code}' --max-time 10 \
	    "http://$_ep/" 2>/dev/null)
	echo "$_code $(cut -d' ' -f1 "$T/body" 2>/dev/null)"
}

# answers SERVICE TAG (for wait_t): answered 200 by that revision
answers() {
	[ "$(answer "$1")" = "200 $2" ]
}

# failed_in_log SERVICE REV N: more than N lines of hk-scale's log say
# that revision failed its gate
failed_in_log() {
	more_in "$T/scale.log" "service=fn/$1: revision $2 failed its readiness gate" "$3"
}

for engine in $(engines); do
	new_store "$engine" ord
	idle_setup "$STORE" "max_concurrent_starts = 8"
	FP_PORT=$(free_port)
	write_app good v1
	start_events && start_scale
	ok $? "$engine: hk-events and hk-scale are ready"
	for s in $SVCS; do
		wait_t 10 gate_is "$s" 1 passed
		ok $? "$engine: fn/$s: revision 1 passed its gate (ready once)"
		wait_t 10 answers "$s" v1
		ok $? "$engine: fn/$s: revision 1 answers"
	done
	ru_pid=$(scale_pid fn/ru)

	# Revision 2 exits at once.
	APPLY_WAIT=1
	write_app exits v2
	is "$?" 75 "$engine: hk apply --wait of revision 2 exits 75"
	APPLY_WAIT=
	like "$(cat "$T/apply.out")" '^fn/(fp|ru) revision 2 failed: exit status 3: broken$' \
	    "$engine: ... and says which revision failed, and why"
	for s in $SVCS; do
		wait_t 20 gate_is "$s" 2 failed
		ok $? "$engine: fn/$s: revision 2 failed its gate"
	done
	wait_t 30 answers fp v1
	ok $? "$engine: fn/fp: revision 1 answers on its port again"
	is "$(answer ru)" "200 v1" "$engine: fn/ru: revision 1 still answers"
	is "$(scale_pid fn/ru)" "$ru_pid" \
	    "$engine: fn/ru: the same revision 1 process, never stopped"
	wait_t 20 events_reach 2 StartFailed fn/ru
	ok $? "$engine: fn/ru: revision 2's gate is tried again after a backoff"
	is "$(answer ru) $(scale_pid fn/ru)" "200 v1 $ru_pid" \
	    "$engine: fn/ru: revision 1 answers throughout"
	for s in $SVCS; do
		run hk history "fn/$s"
		like "$out" "^2	[^	]*	-	failed	current	exit status 3: broken\$" \
		    "$engine: fn/$s: hk history: revision 2 failed, with the reason"
		like "$out" "^1	[^	]*	-	passed	serving	-\$" \
		    "$engine: fn/$s: hk history: revision 1 serves"
		run hk status "fn/$s"
		like "$out" '^gate: +revision 2 failed: exit status 3: broken$' \
		    "$engine: fn/$s: hk status: the gate of revision 2 failed, and why"
		like "$out" '^serving: +revision 1 \(the newest that passed its gate\)$' \
		    "$engine: fn/$s: hk status: revision 1 serves"
	done
	run hk-events list --json -n 0 --kind StartFailed --service fn/fp
	like "$out" '"reason": "exit status 3: broken"' \
	    "$engine: fn/fp: a StartFailed event says why revision 2 failed"
	like "$out" '"serving": 1' "$engine: ... and that revision 1 serves"

	# hk-scale killed while revision 2 fails: revision 1 runs again.
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	: >"$T/scale.log"
	start_scale
	ok $? "$engine: hk-scale starts again"
	for s in $SVCS; do
		wait_t 30 failed_in_log "$s" 2 0
		ok $? "$engine: fn/$s: the restarted hk-scale tries revision 2 once more"
		wait_t 30 answers "$s" v1
		ok $? "$engine: fn/$s: after hk-scale's restart, revision 1 answers"
		is "$(ctl scale.sock '{"op":"status"}' "services.fn/$s.revision")" 1 \
		    "$engine: fn/$s: hk-scale runs revision 1, not the failed 2"
	done
	ru_pid=$(scale_pid fn/ru)

	# Revision 3 is never ready: it fails at its 10 s startup deadline.
	write_app never v3
	is "$(answer ru)" "200 v1" "$engine: fn/ru: revision 1 answers while 3 starts"
	for s in $SVCS; do
		wait_t 90 gate_is "$s" 3 failed
		ok $? "$engine: fn/$s: revision 3 failed its gate"
	done
	run hk history fn/fp
	like "$out" "^3	[^	]*	-	failed	current	not ready within 10 s\$" \
	    "$engine: hk history: revision 3 was not ready in time"
	wait_t 30 answers fp v1
	ok $? "$engine: fn/fp: revision 1 answers on its port again"
	is "$(answer ru) $(scale_pid fn/ru)" "200 v1 $ru_pid" \
	    "$engine: fn/ru: the same revision 1 process answers throughout"

	# A good revision 4 passes and replaces revision 1.
	write_app good v4
	for s in $SVCS; do
		wait_t 20 gate_is "$s" 4 passed
		ok $? "$engine: fn/$s: revision 4 passed its gate"
		wait_t 20 answers "$s" v4
		ok $? "$engine: fn/$s: revision 4 answers"
		run hk status "fn/$s"
		like "$out" '^serving: +revision 4$' \
		    "$engine: fn/$s: hk status: revision 4 serves"
	done
	wait_for 10 gone "$ru_pid"
	ok $? "$engine: fn/ru: revision 1's process is stopped"

	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	: >"$T/scale.log"
done
pg_missing_is_failure

done_testing
