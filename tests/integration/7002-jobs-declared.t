#!/bin/sh
# Declarative runs, [jobs.NAME], on both stores with every daemon real:
# run_id 0 -> 1 -> 1 -> 2 gives a Skipped record and exactly two runs; a
# lower run_id is refused with nothing written; apply --wait waits for
# the run and says how it ended; a run_id applied while hk-jobs is down
# runs once it starts, once; timeout_seconds fails a slow run.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# jobs_app RUN_ID [EXTRA]: the function fn/echo (jobs-fn.py) and the job
# "seed" with run_id RUN_ID.  Line 11 is run_id.
jobs_app() {
	_extra=${2:-}
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[jobs.seed]
service = "echo"
event = { table = "users", rows = [1, 2] }
method = "PUT"
path = "/seed"
timeout_seconds = ${3:-10}
# run_id on line 11
run_id = $1
$_extra

[services.echo]
command = ["python3", "$IFN/jobs-fn.py"]
public = true
[services.echo.serverless]
idle_seconds = 30
request_timeout_seconds = 5
APP
}

# calls TEXT: how many lines of the handler's log hold TEXT
calls() { grep -cF -- "$1" "$(outlog)"; }
# runs_of TRIGGER [PHASE]: how many runs hk runs lists with that trigger
runs_of() {
	hk runs --json fn/echo | python3 -c "import json,sys
t, p = sys.argv[1], sys.argv[2:]
print(sum(1 for r in json.load(sys.stdin)
          if r['trigger'] == t and (not p or r['phase'] == p[0])))" "$@"
}
field() {
	hk runs show --json "$1" |
	    python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

one() {
	e=$1
	new_store "$e" declared || { ok 1 "$e: store"; return; }
	rm -rf "$RUN"; mkdir -p "$RUN"
	idle_setup "$STORE"
	start_all
	ok $? "$e: hk-events, hk-scale, hk-activate, hk-idle ready"
	start_jobs
	ok $? "$e: hk-jobs ready"

	jobs_app 0
	run hk apply "$T/app.toml"
	is "$rc" 0 "$e: run_id 0 applies"
	like "$out" "^fn/seed	job run_id 0	skipped$" "$e: ... and says skipped"
	wait_t 10 scale_is fn/echo sleeping
	ok $? "$e: the function sleeps"
	skipped() { [ "$(runs_of apply:seed Skipped)" = 1 ]; }
	wait_t 5 skipped
	ok $? "$e: run_id 0 is recorded as one Skipped run, trigger apply:seed"
	is "$(calls 'PUT /seed')" 0 "$e: ... and nothing was sent"

	jobs_app 1
	run hk apply --wait --timeout 60 "$T/app.toml"
	is "$rc" 0 "$e: run_id 1 with apply --wait: exit 0"
	like "$out" "^fn/seed	job run_id 1	queued$" "$e: ... apply says queued"
	like "$out" "^fn/seed	job run [0-9a-f]{16}	Succeeded$" \
	    "$e: ... and --wait prints the run's end"
	id1=$(echo "$out" | sed -n 's/^fn\/seed	job run \([0-9a-f]*\)	.*/\1/p')
	is "$(calls "jobs-fn: $id1 PUT /seed {\"table\":\"users\",\"rows\":[1,2]}")" 1 \
	    "$e: the handler got the run once: method, path and the event as JSON"
	is "$(field "$id1" trigger) $(field "$id1" phase) $(field "$id1" status)" \
	    "apply:seed Succeeded 200" "$e: recorded: trigger apply:seed, Succeeded, 200"

	run hk apply --wait "$T/app.toml"
	is "$rc" 0 "$e: the same run_id again: exit 0"
	like "$out" "^fn/seed	job run_id 1	unchanged$" "$e: ... unchanged"
	is "$(runs_of apply:seed Succeeded) $(calls 'PUT /seed')" "1 1" \
	    "$e: ... and no run started"

	# The same run_id with another timeout: the job is updated (its next
	# run takes 20 s), and no run is started for it
	jobs_app 1 "" 20
	run hk apply --dry-run "$T/app.toml"
	like "$out" "^fn/seed	job run_id 1	updated$" \
	    "$e: another timeout, the same run_id: the plan says updated"
	run hk apply --wait "$T/app.toml"
	is "$rc" 0 "$e: ... applied: exit 0"
	like "$out" "^fn/seed	job run_id 1	updated$" "$e: ... apply says updated"
	is "$(runs_of apply:seed Succeeded) $(calls 'PUT /seed')" "1 1" \
	    "$e: ... and no run started"

	jobs_app 2
	run hk apply --wait "$T/app.toml"
	is "$rc" 0 "$e: run_id 2: exit 0"
	is "$(runs_of apply:seed Succeeded) $(runs_of apply:seed Skipped) $(calls 'PUT /seed')" \
	    "2 1 2" "$e: 0 -> 1 -> 1 -> 2: one Skipped record, exactly two runs"

	# Compare at rest: the function asleep again (idle_seconds is 300 ms
	# with time_unit_ms = 10), so that only a write could change a byte
	at_rest() { scale_is fn/echo sleeping && [ "$(ps_state echo)" = sleeping ]; }
	wait_t 10 at_rest
	ok $? "$e: the function sleeps again after its runs (hk-scale, hk ps)"
	hk ps --json >"$T/ps.before"
	hk runs --json >"$T/runs.before"
	jobs_app 1
	run hk apply "$T/app.toml"
	is "$rc $err" "65 $T/app.toml:11: jobs.seed.run_id: 1 is lower than 2, the run_id last applied (it may only grow)" \
	    "$e: a lower run_id is refused with file:line: key: reason"
	hk ps --json >"$T/ps.after"
	hk runs --json >"$T/runs.after"
	cmp -s "$T/ps.before" "$T/ps.after" && cmp -s "$T/runs.before" "$T/runs.after"
	ok $? "$e: ... and nothing was written (hk ps, hk runs byte-identical)"
	diff -u "$T/ps.before" "$T/ps.after" | sed 's/^/# /'
	diff -u "$T/runs.before" "$T/runs.after" | sed 's/^/# /'
	run hk validate "$T/app.toml"
	is "$rc $err" "65 $T/app.toml:11: jobs.seed.run_id: 1 is lower than 2, the run_id last applied (it may only grow)" \
	    "$e: hk validate refuses it too, from the store"
	jobs_app 2
	run hk validate "$T/app.toml"
	is "$rc $err" "0 " "$e: hk validate passes the run_id the store has"
	run hk apply "$T/app.toml"
	like "$out" "^fn/seed	job run_id 2	unchanged$" "$e: ... the store still has run_id 2"

	# run_id 3 applied while hk-jobs is down: run when it starts, once
	stop_pid "$jobs_pid"
	jobs_app 3
	run hk apply "$T/app.toml"
	is "$rc" 0 "$e: run_id 3 applied with hk-jobs down"
	like "$out" "^fn/seed	job run_id 3	queued$" "$e: ... queued"
	is "$(runs_of apply:seed)" 3 "$e: ... nothing ran yet"
	start_jobs
	ok $? "$e: hk-jobs starts"
	three() { [ "$(runs_of apply:seed Succeeded)" = 3 ]; }
	wait_t 20 three
	ok $? "$e: ... and runs run_id 3"
	stop_pid "$jobs_pid"
	start_jobs
	ok $? "$e: hk-jobs restarts"
	run hk apply --wait "$T/app.toml"
	is "$rc $(runs_of apply:seed Succeeded) $(calls 'PUT /seed')" "0 3 3" \
	    "$e: ... and runs nothing twice: three runs, three invocations"

	# timeout_seconds: a run slower than it fails; --wait exits 75
	jobs_app 4 '[jobs.slow]
service = "echo"
event = { sleep = 3 }
timeout_seconds = 1
run_id = 1'
	run hk apply --wait "$T/app.toml"
	is "$rc" 75 "$e: a run past its timeout_seconds: apply --wait exits 75"
	like "$out" "^fn/slow	job run [0-9a-f]{16}	Failed$" "$e: ... printing Failed"
	like "$err" "job fn/slow: run [0-9a-f]{16} Failed: timeout_seconds passed without a response" \
	    "$e: ... and why"
	like "$out" "^fn/seed	job run [0-9a-f]{16}	Succeeded$" \
	    "$e: ... while the other job's run_id 4 succeeded"

	# removing a job forgets it; a stopped service's run fails, not woken
	jobs_app 5
	hk stop fn/echo >/dev/null 2>&1
	wait_t 10 scale_is fn/echo stopped
	run hk apply --wait "$T/app.toml"
	is "$rc" 75 "$e: a job of a stopped service: apply --wait exits 75"
	like "$err" "job fn/seed: run [0-9a-f]{16} Failed: service stopped" \
	    "$e: ... Failed: service stopped"
	is "$(scale_state fn/echo)" stopped "$e: ... and it was not woken"
	is "$(ctl jobs.sock '{"op":"wait_job","app":"fn","job":"slow","run_id":1}' error)" \
	    "no such job" "$e: a job removed from the file is gone"

	for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
		stop_pid "$p"
	done
}

for e in $(engines); do
	one "$e"
done
pg_missing_is_failure
done_testing
