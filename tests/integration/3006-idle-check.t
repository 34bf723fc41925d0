#!/bin/sh
# idle_check of hk.toml(5), on SQLite and PostgreSQL: a service that goes
# on working after its last response (busy-fn.py: a job in a thread,
# /busy answers 503 while it runs) is not put to sleep while it says it
# is busy, however many idle periods go by, and sleeps once it says it is
# idle; a request during the wait is answered by the same instance; a
# service still busy at idle_check_max_seconds is put to sleep anyway,
# and HTTPIdleBusyExpired says so; a check unanswered for 10 s counts
# busy, one closed without an answer idle.  hk validate refuses the
# forms that mean nothing.  time_unit_ms = 10: idle_seconds = 30 lasts
# 300 ms.
#
# A job lasts until the test creates its file ($T/job.done), and so does
# an unanswered check ($T/hang.go): the busy state lasts as long as the
# test looks, whatever the scheduler does.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# look SERVICE PID: what the test sees of SERVICE, in $saw.
look() {
	if alive "$2"; then _up=up; else _up=gone; fi
	saw="pid $2 $_up, hk-scale: $(scale_state "$1"), hk-idle step: $(ctl \
	    idle.sock '{"op":"status"}' "services.$1.step" 2>/dev/null)"
}

# holds_for MS SERVICE PID PATTERN: for MS milliseconds, what look sees
# matches PATTERN (grep -E); fails at the first look that does not.
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

# busy_svc NAME [serverless lines]: busy-fn.py with idle_check.
busy_svc() {
	cat <<SVC

[services.$1]
command = ["python3", "$IFN/busy-fn.py"]
public = true
[services.$1.serverless]
idle_seconds = 30
idle_check = "http:/busy"
${2:-}
SVC
}

# (a) What hk validate refuses, with the reason.
PORT=$(free_port)
idle_setup "sqlite://$T/validate.db"
refused() {	# refused NAME TEXT PATTERN
	printf 'schema_version = 1\nname = "v"\n%s\n' "$2" >"$T/v.toml"
	run hk validate "$T/v.toml"
	is "$rc" 65 "$1: refused (65)"
	like "$err" "$3" "$1: $(printf '%s' "$err" | head -n 1 | sed 's|.*v.toml:||')"
}
refused "a check that is not http:/PATH" "$(busy_svc a |
    sed 's|^idle_check = .*|idle_check = "tcp"|')" \
    'services\.a\.serverless\.idle_check: "tcp": must be http:/PATH'
refused "a path with a space" "$(busy_svc a |
    sed 's|^idle_check = .*|idle_check = "http:/a b"|')" \
    'services\.a\.serverless\.idle_check: "http:/a b": must be http:/PATH'
refused "min_replicas = 1" "$(busy_svc a 'min_replicas = 1')" \
    'services\.a\.serverless\.idle_check: not allowed with min_replicas = 1 \(the service never sleeps\)'
refused "a maximum without a check" "$(busy_svc a 'idle_check_max_seconds = 60' |
    grep -v '^idle_check = ')" \
    'services\.a\.serverless\.idle_check_max_seconds: only with idle_check'
refused "a maximum out of range" "$(busy_svc a 'idle_check_max_seconds = 5')" \
    'services\.a\.serverless\.idle_check_max_seconds: must be between 10 and 86400'
refused "an ordinary service" '[services.w]
command = ["sleep", "1000"]
idle_check = "http:/busy"' \
    'services\.w\.idle_check: unknown key \(a key of \[serverless\]: only a serverless service sleeps\)'
printf 'schema_version = 1\nname = "v"\n%s\n' "$(busy_svc a)" >"$T/v.toml"
run hk validate "$T/v.toml"
is "$rc" 0 "idle_check = \"http:/busy\" validates"

run_engine() {
	e=$1
	new_store "$e" check || { ok 1 "$e: store"; return; }
	rm -f "$T"/*.log "$T/job.done" "$T/stuck.done" "$T/hang.go"
	mport=$(free_port)
	idle_setup "$STORE" "[metrics]
idle = \"127.0.0.1:$mport\""
	app="$(busy_svc job 'idle_check_max_seconds = 6000')$(busy_svc stuck \
	    'idle_check_max_seconds = 100')$(busy_svc hang \
	    'idle_check_max_seconds = 6000' |
	    sed "s|^idle_check = .*|idle_check = \"http:/hang?until=$T/hang.go\"|")$(busy_svc gone |
	    sed 's|^idle_check = .*|idle_check = "http:/close"|')"
	idle_apply "$app"
	ok $? "$e: the application is applied"
	is "$(hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["service"] == "stuck":
        p = s["spec"]["serverless"]
        print(p["idle_check"], p["idle_check_max_seconds"])')" \
	    "http:/busy 100" "$e: the store keeps the check and its maximum"
	is "$(hk ps | awk -F '\t' '$2 == "stuck" { print $7 }')" \
	    'min=0 idle=30s start=60s request=60s concurrency=16 idle_check=http:/busy idle_check_max=100s' \
	    "$e: hk ps shows them in the policy"
	start_events && start_scale && start_gw
	ok $? "$e: hk-events, hk-scale and hk-activate are ready"
	up=0
	for s in job stuck hang gone; do
		wait_t 20 scale_is fn/$s running || up=1
	done
	ok $up "$e: the services run"
	job=$(scale_pid fn/job)
	stuck=$(scale_pid fn/stuck)
	hang=$(scale_pid fn/hang)
	gone=$(scale_pid fn/gone)
	# Each starts a job before hk-idle may put it to sleep.
	is "$(get job.fn.localhost "/job?until=$T/job.done")" 200 \
	    "$e: a request starts a job that outlives it"
	is "$(get stuck.fn.localhost "/job?until=$T/stuck.done")" 200 \
	    "$e: and another one a job that outlasts the maximum"
	start_idle
	ok $? "$e: hk-idle is ready"

	# (b) Busy: the job runs after the answer; five idle periods and more.
	wait_t 30 events_reach 1 HTTPIdleBusy fn/job
	ok $? "$e: the idle check found it busy (HTTPIdleBusy)"
	holds_for 1500 fn/job "$job" ' up, hk-scale: running, '
	ok $? "$e: it is not put to sleep while busy (1.5 s, 5 idle periods)"
	is "$(ps_state job)" running "$e: hk ps says running"
	like "$(ctl idle.sock '{"op":"status"}' services.fn/job.busy_since)" \
	    '^[0-9]+$' "$e: hk-idle's status says since when it is busy"
	is "$(events_of HTTPIdleSleep fn/job)" 0 "$e: no HTTPIdleSleep meanwhile"
	like "$(cat "$T/idle.log")" \
	    'service=fn/job: idle check /busy: busy \(status 503\): the sleep waits, at most 6000 s' \
	    "$e: hk-idle says why it waits"
	n=$(hk logs -n all fn/job | grep -c "pid=$job /busy -> 503")
	ok "$([ "$n" -ge 2 ]; echo $?)" "$e: asked again while busy ($n answers 503)"
	m=$(curl -sS --max-time 30 "http://127.0.0.1:$mport/metrics" |
	    awk '$1 == "hk_idle_checks_total{result=\"busy\"}" { print $2 }')
	ok "$([ "${m:-0}" -ge "$n" ]; echo $?)" \
	    "$e: hk_idle_checks_total{result=\"busy\"} counts them ($m)"
	busy_events=$(events_of HTTPIdleBusy fn/job)
	ok "$([ "$busy_events" -lt "$n" ]; echo $?)" \
	    "$e: not one event per answer ($busy_events events, $n answers)"

	# A request during the wait: the same instance answers it.
	is "$(get job.fn.localhost /)" 200 "$e: a request during the wait is answered"
	is "$(cat "$T/body")" "busy-fn pid=$job" "$e: by the same instance"
	is "$(events_of HTTPIdleWake fn/job)" 0 "$e: no wake"

	# (c) Idle: the job ends; the service sleeps.
	touch "$T/job.done"
	wait_t 30 asleep fn/job "$job"
	ok $? "$e: once the job is done, it goes to sleep (pid $job gone)"
	is "$(ps_state job)" sleeping "$e: hk ps says sleeping"
	wait_t 10 events_reach 1 HTTPIdleSleep fn/job
	ok $? "$e: HTTPIdleSleep recorded"
	like "$(cat "$T/idle.log")" \
	    'service=fn/job: idle check /busy: idle after [0-9]+ s busy' \
	    "$e: hk-idle says it waited"
	is "$(events_of HTTPIdleBusyExpired fn/job)" 0 \
	    "$e: no HTTPIdleBusyExpired for it"

	# A wake; no job this time: the check answers 200 and it sleeps.
	is "$(get job.fn.localhost /)" 200 "$e: the next request wakes it"
	job2=$(sed 's/.*pid=//' "$T/body")
	wait_t 30 asleep fn/job "$job2"
	ok $? "$e: idle at once, it sleeps after its idle period"
	like "$(hk logs -n all fn/job | grep "pid=$job2 /busy" | tail -n 1)" \
	    "/busy -> 200" "$e: after the check answered 200"

	# (d) The maximum: fn/stuck's job never ends before the maximum
	# (idle_check_max_seconds = 100, 1 s here).
	wait_t 30 asleep fn/stuck "$stuck"
	ok $? "$e: still busy at the maximum, it is put to sleep anyway"
	wait_t 10 events_reach 1 HTTPIdleBusyExpired fn/stuck
	ok $? "$e: HTTPIdleBusyExpired says so"
	detail=$(hk-events list --json -n 1 --kind HTTPIdleBusyExpired \
	    --service fn/stuck | python3 -c '
import json, sys
d = json.load(sys.stdin)[0]["detail"]
print(d["check"], d["status"], d["busy_ms"] >= 1000, d["answers"] >= 2)')
	is "$detail" "/busy 503 True True" \
	    "$e: with the check, its last status, and 1 s (100 units) busy or more"
	like "$(cat "$T/idle.log")" \
	    'service=fn/stuck: idle check /busy: still busy \(status 503\) after 100 s, idle_check_max_seconds: sleeping anyway' \
	    "$e: hk-idle logs it as a warning"
	touch "$T/stuck.done"

	# (e) A check that closes the connection without an answer: counted
	# idle, the service sleeps.
	wait_t 30 asleep fn/gone "$gone"
	ok $? "$e: a check closed without an answer counts idle: it sleeps"
	like "$(cat "$T/idle.log")" \
	    'service=fn/gone: idle check /close: no answer \(closed before its end\): counted idle' \
	    "$e: hk-idle says so"

	# (f) A check that does not answer in 10 s (real seconds): counted
	# busy; the service sleeps once it answers 200.
	wait_t 40 events_reach 1 HTTPIdleBusy fn/hang
	ok $? "$e: a check without an answer counts busy (HTTPIdleBusy)"
	is "$(hk-events list --json -n 1 --kind HTTPIdleBusy --service fn/hang |
	    python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["detail"]["status"])')" \
	    None "$e: with no status"
	look fn/hang "$hang"
	like "$saw" ' up, hk-scale: running, ' "$e: it is not put to sleep"
	like "$(cat "$T/idle.log")" \
	    'service=fn/hang: idle check /hang\?until=[^ ]*: busy \(no answer in time\)' \
	    "$e: hk-idle says why"
	touch "$T/hang.go"
	wait_t 40 asleep fn/hang "$hang"
	ok $? "$e: once the check answers 200, it sleeps"

	stop_pid "$idle_pid"
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	is "$(grep -E 'warning|Sanitizer|runtime error' "$T/idle.log" |
	    grep -vc 'service=fn/stuck: idle check /busy: still busy')" 0 \
	    "$e: hk-idle logged no other warning (nor a sanitizer report)"
}

for engine in $(engines); do
	run_engine "$engine"
done
pg_missing_is_failure
done_testing
