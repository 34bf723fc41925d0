#!/bin/sh
# hk-jobs and hk invoke, against both stores, with every daemon real: a
# run wakes a sleeping function through the gateway and succeeds (the
# event and the run id reach the handler, the body comes back), one
# fails with 500, one meets the service's request deadline (504), one of
# a stopped service fails without waking it; three at once give three
# invocations; hk-jobs killed during a run records it Failed at its next
# start and never runs it again; bad input is refused.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

command -v python3 >/dev/null
ok $? "python3 is installed (the function)"

# jobs_app: the function fn/echo (jobs-fn.py), request deadline 3 s,
# asleep after 300 ms idle (time_unit_ms = 10).
jobs_app() {
	idle_apply "
[services.echo]
command = [\"python3\", \"$IFN/jobs-fn.py\"]
public = true
[services.echo.serverless]
idle_seconds = 30
request_timeout_seconds = 3"
}

# calls ID: how many times the handler saw run ID (its log)
calls() { grep -c "jobs-fn: $1 " "$(outlog)"; }
# field ID KEY: a field of hk runs show --json
field() {
	hk runs show --json "$1" |
	    python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

one() {
	e=$1
	new_store "$e" jobs || { ok 1 "$e: store"; return; }
	rm -rf "$RUN"; mkdir -p "$RUN"
	idle_setup "$STORE" "runs_body_bytes = 128"
	jobs_app
	ok $? "$e: the function is applied"

	run hk invoke fn/echo
	is "$rc" 69 "$e: hk-jobs not running: exit 69"
	like "$err" '^hk: error: hk-jobs is not running' "$e: ... saying so"

	start_events && start_scale && start_gw && start_idle
	ok $? "$e: hk-events, hk-scale, hk-activate, hk-idle ready"
	start_jobs
	ok $? "$e: hk-jobs ready"
	wait_t 10 scale_is fn/echo sleeping
	ok $? "$e: the function sleeps"

	run hk invoke --wait --event '{"n": 1}' --path /hello fn/echo
	is "$rc" 0 "$e: invoke --wait of a sleeping function: exit 0"
	id=$(echo "$err" | sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p')
	like "$id" '^[0-9a-f]{16}$' "$e: the run id on stderr"
	is "$out" "{\"event\": {\"n\": 1}, \"path\": \"/hello\", \"run\": \"$id\", \"type\": \"application/json\"}" \
	    "$e: the body printed: the event, path, run id and type reached the handler"
	is "$(field "$id" phase) $(field "$id" status) $(field "$id" trigger)" \
	    "Succeeded 200 manual" "$e: recorded Succeeded, 200, manual"
	is "$(field "$id" event_bytes) $(field "$id" revision)" "7 1" \
	    "$e: with the event's size and the revision"
	is "$(calls "$id")" 1 "$e: one invocation"
	wait_t 5 events_reach 1 HTTPIdleWake fn/echo
	ok $? "$e: the run woke it: the wake is in the event log"

	# the excerpt is bounded by runs_body_bytes (128)
	run hk invoke --wait --event '{"pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}' fn/echo
	is "$rc ${#out}" "0 128" "$e: the body kept is at most runs_body_bytes"

	run hk invoke --wait --event '{"fail": true}' fn/echo
	is "$rc" 75 "$e: a 500: exit 75"
	fid=$(echo "$err" | sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p')
	like "$err" "hk: error: run $fid: Failed: HTTP status 500" "$e: ... saying why"
	is "$(field "$fid" phase) $(field "$fid" status)" "Failed 500" \
	    "$e: recorded Failed, 500"

	run hk invoke --wait --event '{"sleep": 5}' fn/echo
	did=$(echo "$err" | sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p')
	is "$rc $(field "$did" phase) $(field "$did" status)" "75 Failed 504" \
	    "$e: past request_timeout_seconds: the gateway's 504, Failed, exit 75"

	# without --wait: the id at once; the run goes on alone
	run hk invoke --event '{"k": 2}' fn/echo
	is "$rc" 0 "$e: invoke without --wait: exit 0"
	nid=$out
	like "$nid" '^[0-9a-f]{16}$' "$e: ... printing the id"
	done_run() { [ "$(field "$1" phase)" = "$2" ]; }
	wait_t 10 done_run "$nid" Succeeded
	ok $? "$e: ... and the run succeeds without anyone waiting"

	# three at once: three invocations, three runs
	: >"$T/ids"
	inv=
	for i in 1 2 3; do
		hk invoke --wait --event "{\"c\": $i}" fn/echo \
		    >/dev/null 2>>"$T/ids" &
		inv="$inv $!"
	done
	for p in $inv; do wait "$p"; done
	ids=$(sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p' "$T/ids" | sort -u)
	is "$(echo "$ids" | wc -l)" 3 "$e: three concurrent invokes, three runs"
	n=0
	for i in $ids; do n=$((n + $(calls "$i"))); done
	is "$n" 3 "$e: ... and exactly three handler invocations"

	# hk runs lists them; by service too; JSON
	run hk runs fn/echo
	is "$rc $(echo "$out" | wc -l)" "0 8" "$e: hk runs fn/echo: eight runs, TSV"
	is "$(echo "$out" | awk -F'\t' -v id="$fid" '$1 == id { print $2, $3, $4, $5, $8 }')" \
	    "fn echo Failed 500 manual" "$e: ... a row: id app service phase status ... trigger"
	is "$(hk runs --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 8 \
	    "$e: hk runs --json"
	like "$(hk runs show "$id")" "^phase: Succeeded$" "$e: hk runs show"

	# stopped: Failed, not woken
	hk stop fn/echo >/dev/null 2>&1
	wait_t 10 scale_is fn/echo stopped
	ok $? "$e: the function is stopped"
	run hk invoke --wait fn/echo
	sid=$(echo "$err" | sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p')
	is "$rc $(field "$sid" phase) $(field "$sid" reason)" \
	    "75 Failed service stopped" "$e: a stopped service: Failed, exit 75"
	is "$(calls "$sid") $(scale_state fn/echo)" "0 stopped" \
	    "$e: ... and it was not woken"
	hk start fn/echo >/dev/null 2>&1

	# hk-jobs killed during a run: Failed at its next start, not rerun
	hk invoke --event '{"sleep": 2.5}' fn/echo >"$T/kid" 2>&1
	kid=$(cat "$T/kid")
	reached() { [ "$(calls "$kid")" -ge 1 ]; }
	wait_t 10 reached
	ok $? "$e: a run reached the handler"
	kill -KILL "$jobs_pid"
	wait "$jobs_pid" 2>/dev/null
	is "$(field "$kid" phase)" Running "$e: killed hk-jobs left it Running"
	start_jobs
	ok $? "$e: hk-jobs starts again"
	is "$(field "$kid" phase) $(field "$kid" reason)" \
	    "Failed hk-jobs exited during the run" \
	    "$e: the run is recorded Failed with the reason"
	# A resend would be sent at start, before hk-jobs listens: before
	# this next run, which the handler sees after it.
	run hk invoke --wait --event '{"after": "restart"}' fn/echo
	is "$rc" 0 "$e: a run after the restart succeeds"
	is "$(calls "$kid")" 1 "$e: ... and the killed one was not sent again"

	# jobs.sock by hand
	is "$(ctl jobs.sock '{"op":"bogus"}')" \
	    '{"error":"unknown op","input":true,"ok":false}' \
	    "$e: jobs.sock: an unknown op is an error"
	is "$(ctl jobs.sock "{\"op\":\"get\",\"id\":\"$fid\"}" run.phase)" Failed \
	    "$e: jobs.sock: get of a run"
	is "$(ctl jobs.sock '{"op":"invoke","service":"fn/echo","x":1}' ok)" false \
	    "$e: jobs.sock: an unknown field refuses an invoke"

	# bad input
	run hk invoke --event '{bad' fn/echo
	is "$rc" 65 "$e: a bad JSON event: exit 65"
	like "$err" '^hk: error: --event: not JSON' "$e: ... saying so"
	echo '[1, 2]' >"$T/ev.json"
	run hk invoke --wait --event "@$T/ev.json" fn/echo
	is "$rc" 0 "$e: --event @file"
	run hk invoke --event "@$T/nonexistent.json" fn/echo
	is "$rc" 66 "$e: a missing event file: exit 66"
	run hk invoke fn/nosuch
	is "$rc" 65 "$e: an unknown service: exit 65"
	like "$err" 'fn/nosuch: no such serverless service' "$e: ... saying so"
	run hk invoke --path nopath fn/echo
	is "$rc" 65 "$e: a path without /: exit 65"
	run hk invoke --method 'a b' fn/echo
	is "$rc" 65 "$e: a bad method: exit 65"
	run hk invoke --bogus fn/echo
	is "$rc" 64 "$e: an unknown flag: exit 64"
	run hk invoke --timeout 3 fn/echo
	is "$rc" 64 "$e: --timeout without --wait: exit 64"
	run hk invoke
	is "$rc" 64 "$e: no service: exit 64"
	run hk runs show 0123
	is "$rc" 65 "$e: hk runs show of a bad id: exit 65"
	run hk runs show 0123456789abcdef
	is "$rc" 65 "$e: hk runs show of an unknown id: exit 65"

	# retention at hk-jobs' start: the newest runs_max_rows, then age
	nruns() { hk runs --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
	stop_pid "$jobs_pid"
	echo 'runs_max_rows = 3' >>"$T/hakopod.toml"
	start_jobs
	runs_are() { [ "$(nruns)" = "$1" ]; }
	wait_t 5 runs_are 3
	ok $? "$e: runs_max_rows = 3: hk-jobs keeps the newest 3 runs"
	stop_pid "$jobs_pid"
	old="UPDATE runs SET created_at = created_at - 2 * 86400000"
	case $e in
	sqlite) sqlite3 "${STORE#sqlite://}" "$old" ;;
	postgres) psql "$STORE" -qAtc "$old" >/dev/null ;;
	esac
	echo 'runs_max_age_days = 1' >>"$T/hakopod.toml"
	start_jobs
	wait_t 5 runs_are 0
	ok $? "$e: runs_max_age_days = 1: runs two days old are deleted"

	for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
		stop_pid "$p"
	done
}

for e in $(engines); do
	one "$e"
done
pg_missing_is_failure
done_testing
