#!/bin/sh
# A schedule due during a takeover (issue 36; hk-lease(1), Epochs; hk(7),
# Several hosts): two hosts share a PostgreSQL store (lib/hosts.sh), each
# with hk-jobs joined to its gateway's lease.  time_unit_ms = 10: the
# schedule fires every minute of its clock, every 0.6 s.
#
#	- Host a leads: its hk-jobs fires the schedule, each run sent to
#	  the advertised address, where HAProxy is in front of both
#	  gateways, and invoked through a's.
#	- Host b waits: its hk-jobs runs no program.
#	- Host a is paused (SIGSTOP of its hk-leases and daemons, not of
#	  its instances) past its TTL: host b takes over, and its hk-jobs
#	  fires the schedule on.
#	- Host a's hk-jobs alone is continued, with firings due since it
#	  stood still: the fence refuses its claim of the first, and it
#	  stops itself (75, "fenced" in its log) having claimed none.
#	- Across both hosts' logs, each firing was claimed once, by one run;
#	  each run that succeeded was invoked once.
#
# PostgreSQL only: one host cannot take over from another on SQLite.
. tests/integration/lib.sh
. tests/integration/lib/hosts.sh

IFN=$HK_TOP/tests/integration/fn
TTL=2
GRACE=1
HOST_JOBS=1

if [ -z "${HK_TEST_PG:-}" ]; then
	pg_missing_is_failure
	done_testing
	exit
fi

cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.fn]
command = ["python3", "$IFN/jobs-fn.py"]
public = true
[services.fn.serverless]
idle_seconds = 3600
request_timeout_seconds = 10
[services.fn.schedules.tick]
cron = "* * * * *"
path = "/tick"
concurrency = "allow"
APP

# claims H: the firings host H's hk-jobs claimed, one per line
claims() {
	sed -n 's/.*trigger=schedule:tick: the firing of //p' "$T/$1/jobs.log"
}
claimed_at_least() {	# claimed_at_least N H
	[ "$(claims "$2" | wc -l)" -ge "$1" ]
}

# succeeded N: at least N runs of the schedule succeeded
succeeded() {
	[ "$(as a hk runs --json fn/fn 2>/dev/null | python3 -c 'import json, sys
print(sum(1 for r in json.load(sys.stdin)
          if r["trigger"] == "schedule:tick" and r["phase"] == "Succeeded"))')" \
	    -ge "$1" ]
}

new_store postgres sched
VIP=$(free_port)
host_config a 'time_unit_ms = 10'
host_config b 'time_unit_ms = 10'
as a hk apply "$T/app.toml" >"$T/apply.out" 2>&1
ok $? "hk apply: fn, with a schedule every minute (0.6 s)"
# hk-jobs sends each run to serverless_address: HAProxy there, in front
# of both gateways, as etc/haproxy/haproxy.cfg ships it for two.
haproxy_start
ok $? "HAProxy in front of both gateways, on the advertised address"

host_start a
wait_t 60 succeeded 3
ok $? "host a leads: its hk-jobs fires the schedule, and runs succeed"
a_epoch=$(epoch_of "$(prog_of $a_jobs)")
like "$a_epoch" '^[0-9]+$' "host a's hk-jobs runs under epoch $a_epoch"

host_start b
wait_for 30 grep -q 'waiting for this host to hold it: held by' \
    "$T/b/jobs.log"
ok $? "host b's hk-jobs waits for this host to hold the lease"
is "$(prog_of $b_jobs)" "" "... and runs no program"

# Host a paused: its hk-leases and daemons, not the instances.  HAProxy's
# health checks find its gateway no longer answers, and b's once it does.
a_procs=""
for p in $a_gw $a_scale $a_idle $a_events $a_jobs; do
	a_procs="$a_procs $p $(prog_of $p)"
done
a_jobs_prog=$(prog_of $a_jobs)
a_inst=$(pgrep -P "$(prog_of $a_scale)" | tr '\n' ' ')
kill -STOP $a_procs
n_a=$(claims a | wc -l)
wait_t 60 claimed_at_least 3 b
ok $? "host a paused: host b's hk-jobs takes the schedule on"
b_epoch=$(epoch_of "$(prog_of $b_jobs)")
ok "$([ "${b_epoch:-0}" -gt "$a_epoch" ] && echo 0 || echo 1)" \
    "... under a newer epoch ($b_epoch > $a_epoch)"

# Host a's hk-jobs alone continues: its next firing is long due.
kill -CONT "$a_jobs_prog"
wait_t 30 ended "$a_jobs_prog"
ok $? "the continued hk-jobs of host a stops itself"
like "$(cat "$T/a/jobs.log")" \
    "lease gateway: fenced: epoch $b_epoch has replaced this process's $a_epoch, so it no longer leads: stopping" \
    "... fenced, and it says why"
# A claim a made just before its pause may reach its log only now; what
# the fence forbids is a firing after those b took on.
last_a=$(claims a | sort | tail -1)
first_b=$(claims b | sort | head -1)
ok "$([ -n "$last_a" ] && [ -n "$first_b" ] && [ "$last_a" \< "$first_b" ] &&
    echo 0 || echo 1)" \
    "... having claimed no firing after b took the schedule on ($last_a < $first_b)"

# The rest of host a: its instances stopped by their pids (a fenced
# hk-scale leaves them, hk(7)), its programs continued; they end (75).
kill -KILL $a_inst 2>/dev/null
kill -CONT $a_procs 2>/dev/null
for v in gw scale idle events jobs; do
	eval "p=\$a_$v"
	wait_t 60 ended "$p"
	ok $? "host a's hk-lease of $v ends"
done

n_b=$(claims b | wc -l)
wait_t 30 claimed_at_least $((n_b + 2)) b
ok $? "host b's hk-jobs still fires"
{ claims a; claims b; } >"$T/claims"
is "$(sort "$T/claims" | uniq -d)" "" \
    "each firing was claimed once across both hosts ($(wc -l <"$T/claims") in all)"

# Each run that succeeded was invoked once (the function prints its run
# id), in host a's service log or host b's.
wait_t 30 succeeded $((n_a + 3))
as b hk runs --json fn/fn >"$T/runs.json"
cat "$(outlog "$T/a/run")" >"$T/inv.log"
cat "$(outlog "$T/b/run")" >>"$T/inv.log"
python3 - "$T/runs.json" "$T/inv.log" >"$T/once.out" <<'PY'
import collections, json, sys
runs = [r for r in json.load(open(sys.argv[1]))
        if r["trigger"] == "schedule:tick" and r["phase"] == "Succeeded"]
inv = collections.Counter(l.split("jobs-fn: ", 1)[1].split()[0]
                          for l in open(sys.argv[2]) if "jobs-fn: " in l)
bad = [r["id"] for r in runs if inv[r["id"]] != 1]
print(len(runs), " ".join(bad))
PY
read -r n_ok bad <"$T/once.out"
is "${bad:-}" "" "each of the $n_ok runs that succeeded was invoked once"

for v in events idle scale jobs gw; do
	eval "p=\$b_$v"
	stop_pid "$p" 30
done
stop_pid "$haproxy_pid"
done_testing
