#!/bin/sh
# Schedules, [services.X.schedules.NAME], on both stores with every daemon
# real.  time_unit_ms = 10 (for tests only, hakopod.toml(5)) runs the
# schedules' clock 100 times as fast: a minute lasts 0.6 s.
#
# A schedule firing every minute runs once per firing, each an invocation
# of a sleeping function; a disabled one never fires; "forbid" skips a
# firing while the last run goes, "allow" overlaps them; a stopped
# service's firings are Skipped and do not wake it; a firing missed while
# hk-jobs was down runs once at its start with catch_up, never without;
# changing schedules does not restart the service.
#
# The schedules fire on, and a busy machine makes their runs late (a
# firing under "forbid" is Skipped while a slow cold start goes) and the
# test's reads slow: a check does not count runs and invocations at two
# moments, but matches each run with its invocation by the run id; it
# waits for what it needs (four runs that succeeded, the service's log
# lines of those runs); and a firing the test places after an apply is
# checked to come after it.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# sched_app SCHEDULES: fn/echo (jobs-fn.py) with those schedule tables
sched_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.echo]
command = ["python3", "$IFN/jobs-fn.py"]
public = true
[services.echo.serverless]
idle_seconds = 30
request_timeout_seconds = 10
$1
APP
}

calls() { grep -cF -- "$1" "$(outlog)"; }

# runs TRIGGER [PHASE [REASON]]: how many runs of fn/echo match
runs() {
	hk runs --json fn/echo | python3 -c "import json,sys
a = sys.argv[1:]
print(sum(1 for r in json.load(sys.stdin)
          if r['trigger'] == a[0] and (len(a) < 2 or r['phase'] == a[1])
          and (len(a) < 3 or r['reason'] == a[2])))" "$@"
}
at_least() { [ "$(runs "$2")" -ge "$1" ]; }
succeeded_at_least() { [ "$(runs "$2" Succeeded)" -ge "$1" ]; }
skipped_at_least() { [ "$(runs "$2" Skipped "$3")" -ge "$1" ]; }

# overlaps TRIGGER: how many of its runs began before the one before them
# ended.  A run still going has not ended: counting only finished runs
# would see no overlap while the overlapping ones still run.
overlaps() {
	hk runs --json fn/echo | python3 -c "import json,sys
rs = sorted((r for r in json.load(sys.stdin) if r['trigger'] == sys.argv[1]
             and r['started_at'] > 0), key=lambda r: r['started_at'])
end = lambda r: r['finished_at'] if r['phase'] != 'Running' else float('inf')
print(sum(1 for a, b in zip(rs, rs[1:]) if b['started_at'] < end(a)))" "$1"
}

# cron_at SECONDS: a cron expression (UTC) for the one minute of the
# schedules' clock at least SECONDS of it from now: it fires once a year.
cron_at() {
	python3 -c "import datetime,sys,time
v = time.time() * 100 + int(sys.argv[1])
m = datetime.datetime.utcfromtimestamp((int(v) // 60 + 1) * 60)
print('%d %d %d %d *' % (m.minute, m.hour, m.day, m.month))
print('%.3f' % (((int(v) // 60 + 1) * 60) / 100.0))" "$1"
}

# each_once RUNS TRIGGER TEXT [LATER-RUNS]: matches the runs of TRIGGER
# in RUNS (hk runs --json) with the lines of the service's log that
# contain TEXT, by the run id the function prints ("jobs-fn: ID ...").
# Prints "N C" (N runs that succeeded, C invocations of them), then what
# is wrong, if anything: a run that succeeded not invoked exactly once,
# an invocation of the trigger's text repeated or (with LATER-RUNS, read
# after the log) of no run of the trigger, or of one it Skipped.
each_once() {
	python3 - "$1" "$(outlog)" "$2" "$3" "${4:-}" <<'PY'
import collections, json, sys
runs, log, trig, text, later = sys.argv[1:6]
rs = [r for r in json.load(open(runs)) if r["trigger"] == trig]
ok = [r["id"] for r in rs if r["phase"] == "Succeeded"]
inv = collections.Counter(
    l.split("jobs-fn: ", 1)[1].split()[0]
    for l in open(log) if text in l and "jobs-fn: " in l)
bad = ["run %s invoked %d times" % (i, inv[i]) for i in ok if inv[i] != 1]
bad += ["run %s invoked %d times" % (i, n) for i, n in inv.items()
        if n > 1 and i not in ok]
if later:
    known = {r["id"]: r["phase"] for r in json.load(open(later))
             if r["trigger"] == trig}
    bad += ["invocation of no run: %s" % i for i in inv if i not in known]
    bad += ["invocation of a Skipped run: %s" % i for i in inv
            if known.get(i) == "Skipped"]
print(len(ok), sum(inv[i] for i in ok))
for b in bad:
    print(b)
PY
}

# invoked RUNS TRIGGER TEXT: each run that succeeded has its line in the
# service's log (written by hk-scale's output relay, a little later).
invoked() {
	each_once "$@" | python3 -c 'import sys
n, c = map(int, sys.stdin.readline().split())
sys.exit(c < n)'
}

FORBID='the previous run of this schedule is still going (concurrency = "forbid")'

one() {
	e=$1
	new_store "$e" sched || { ok 1 "$e: store"; return; }
	rm -rf "$RUN"; mkdir -p "$RUN"
	idle_setup "$STORE"
	sched_app '[services.echo.schedules.tick]
cron = "* * * * *"
event = { s = "tick" }
path = "/tick"
[services.echo.schedules.off]
cron = "* * * * *"
enabled = false
path = "/off"'
	run hk apply "$T/app.toml"
	is "$rc" 0 "$e: two schedules apply"
	like "$out" "^fn/echo	schedule tick	created$" "$e: ... apply lists them"
	start_all
	ok $? "$e: hk-events, hk-scale, hk-activate, hk-idle ready"
	start_jobs
	ok $? "$e: hk-jobs ready"

	wait_t 15 at_least 5 schedule:tick
	ok $? "$e: every minute: five firings"
	tick='POST /tick {"s":"tick"}'
	wait_t 15 succeeded_at_least 4 schedule:tick
	hk runs --json fn/echo >"$T/runs.json"
	wait_t 5 invoked "$T/runs.json" schedule:tick "$tick"
	hk runs --json fn/echo >"$T/later.json"
	each_once "$T/runs.json" schedule:tick "$tick" "$T/later.json" \
	    >"$T/each.out"
	read -r n c <"$T/each.out"
	if [ "${n:-0}" -ge 4 ] && [ "$(wc -l <"$T/each.out")" -eq 1 ]; then
		ok 0 "$e: ... each a run that succeeded, one invocation each ($n runs, $c invocations)"
	else
		ok 1 "$e: ... each a run that succeeded, one invocation each ($n runs, $c invocations)"
		sed '1d; s/^/# /' "$T/each.out"
	fi
	is "$(runs schedule:off) $(calls '/off')" "0 0" "$e: enabled = false never fires"
	wait_t 5 events_reach 1 HTTPIdleWake fn/echo
	ok $? "$e: a firing woke the sleeping function"

	# forbid and allow: runs of 1.5 s, firings every 0.6 s
	sched_app '[services.echo.schedules.slowf]
cron = "* * * * *"
event = { sleep = 1.5 }
path = "/slowf"
[services.echo.schedules.slowa]
cron = "* * * * *"
event = { sleep = 1.5 }
path = "/slowa"
concurrency = "allow"'
	run hk apply "$T/app.toml"
	ticks=$(( $(runs schedule:tick) + 1 ))	# one may be on its way
	like "$out" "^fn/echo	revision 1	unchanged$" \
	    "$e: new schedules: the service's revision is unchanged"
	like "$out" "^fn/echo	schedule slowa	created$" "$e: ... slowa created"
	wait_t 20 skipped_at_least 2 schedule:slowf "$FORBID"
	ok $? "$e: forbid: firings during a run are Skipped, with the reason"
	wait_t 20 at_least 4 schedule:slowa
	ok $? "$e: allow: firings every minute"
	is "$(overlaps schedule:slowf)" 0 "$e: forbid: no two runs overlap"
	ok $(( $(overlaps schedule:slowa) < 1 )) "$e: allow: runs overlap"
	is "$(runs schedule:slowa Skipped)" 0 "$e: allow: nothing skipped"
	ok $(( $(runs schedule:tick) > ticks )) "$e: a removed schedule fires no more"

	# a stopped service: Skipped, not woken
	sched_app '[services.echo.schedules.tick]
cron = "* * * * *"
path = "/tick"'
	hk apply "$T/app.toml" >/dev/null 2>&1
	hk stop fn/echo >/dev/null 2>&1
	wait_t 10 scale_is fn/echo stopped
	ok $? "$e: the function is stopped"
	before=$(calls 'POST /tick')
	wait_t 10 skipped_at_least 3 schedule:tick "service stopped"
	ok $? "$e: a stopped service's firings are recorded Skipped: service stopped"
	is "$(scale_state fn/echo) $(calls 'POST /tick')" "stopped $before" \
	    "$e: ... and it was not woken"
	hk start fn/echo >/dev/null 2>&1

	# catch_up: one firing, missed while hk-jobs is down.  It must come
	# after the apply (a schedule counts from its apply: one before it is
	# not missed): an apply that ends after it, on a busy machine, is
	# made again with a later one.
	stop_pid "$jobs_pid"
	_try=0
	while :; do
		set -f
		set -- $(cron_at $((90 + _try * 300)))
		set +f
		sched_app "[services.echo.schedules.cu]
cron = \"$1 $2 $3 $4 $5\"
path = \"/cu\"
catch_up = true
[services.echo.schedules.nocu]
cron = \"$1 $2 $3 $4 $5\"
path = \"/nocu\""
		hk apply "$T/app.toml" >/dev/null 2>&1
		[ "$(date +%s%3N)" -lt "$(echo "$6" | tr -d .)" ] && break
		_try=$((_try + 1))
		diag "the apply ended after the firing it placed ($6): again"
		[ "$_try" -lt 3 ] || break
	done
	# past the firing by more than 30 s of the schedules' clock (0.3 s)
	python3 -c "import time,sys; time.sleep(max(0, float(sys.argv[1]) + 1 - time.time()))" "$6"
	start_jobs
	ok $? "$e: hk-jobs starts after a missed firing"
	wait_t 10 at_least 1 schedule:cu
	ok $? "$e: catch_up = true: the missed firing runs at start"
	cu_done() { [ "$(runs schedule:cu Succeeded)" = 1 ]; }
	wait_t 10 cu_done
	ok $? "$e: ... and succeeds"
	is "$(runs schedule:nocu) $(calls '/nocu')" "0 0" \
	    "$e: catch_up = false: the missed firing does not run"
	like "$(cat "$T/jobs.log")" "schedule fn/echo/cu: catching up the firing of" \
	    "$e: hk-jobs says what it caught up"
	stop_pid "$jobs_pid"
	start_jobs
	ok $? "$e: hk-jobs restarts"
	hk apply "$T/app.toml" >/dev/null 2>&1
	is "$(runs schedule:cu) $(calls 'POST /cu')" "1 1" \
	    "$e: ... and catches up nothing twice"

	for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
		stop_pid "$p"
	done
}

for e in $(engines); do
	one "$e"
done
pg_missing_is_failure
done_testing
