#!/bin/sh
# The store on PostgreSQL, stopped and started again under traffic
# (issue 32), with every daemon real: hk-events, hk-scale, hk-activate,
# hk-idle and hk-jobs.  Twice, once stopped with "pg_ctl stop -m fast"
# and once with "-m immediate": a client keeps asking a warm function
# all along, and inside the outage a request wakes a sleeping function
# (answered 200: the instance runs from memory), a run ends (its record
# refused), and "hk apply" of a new service fails as hk(1) says (exit
# 69, the store cannot be opened), applying nothing.  Once the server is
# back, what the user sees: the woken function in "hk ps" as running,
# with its instance (the row hk-scale kept and wrote once the store
# answered); a service applied right away routed at once (its first
# request 200, not 404: each daemon's first call on its broken
# connection is made again on a new one); every request of the outage
# recorded, once (hk-events kept its batches); the run that ended
# meanwhile recorded Succeeded (hk-jobs kept its record); a new run
# works, and the run_id of a job applied right away is run; and each
# daemon's log says what it kept and when it wrote it.  A third outage,
# fast, has every daemon asked to reload inside it: each refuses, and
# makes the reload again, of itself, once the store answers (then the
# apply of the new service is no longer right after the restart).
# PostgreSQL only: the test stops a private server of its own
# (scripts/pg start, in $T, its own socket directory and port), not the
# shared one of make check.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# now_ms: sets $now to CLOCK_BOOTTIME in ms (/proc/uptime, 10 ms steps),
# the clock of the traffic's stamps, without a fork.
now_ms() {
	read -r _up _ </proc/uptime
	now=${_up%.*}${_up#*.}0
}

# traffic N: GET /tN/I of fn/warm, one after another, I from 1, until
# $T/stop.N exists (5000 at most); "MS CODE" for each in $T/traffic.N,
# MS when it was sent.
traffic() {
	_n=0
	while [ ! -e "$T/stop.$1" ] && [ "$_n" -lt 5000 ]; do
		_n=$((_n + 1))
		read -r _tu _ </proc/uptime
		_c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 \
		    -H 'Host: warm.fn.localhost' "$URL/t$1/$_n")
		echo "${_tu%.*}${_tu#*.}0 $_c" >>"$T/traffic.$1"
		sleep 0.02
	done
}

# sent_in N FROM TO: requests of traffic N sent at FROM <= MS < TO (ms)
sent_in() {
	awk -v a="$2" -v b="$3" '$1 >= a && $1 < b' "$T/traffic.$1" | wc -l
}

# answered_in N FROM TO: ... and answered 200
answered_in() {
	awk -v a="$2" -v b="$3" '$1 >= a && $1 < b && $2 == 200' \
	    "$T/traffic.$1" | wc -l
}

# answered_since N FROM AT_LEAST: at least that many answered 200 of
# those sent since FROM
answered_since() {
	[ "$(answered_in "$1" "$2" 99999999999999)" -ge "$3" ]
}

# stored N: "RECORDS DISTINCT" of traffic N's requests in the store
stored() {
	hk-events requests --json -n 0 --service fn/warm | python3 -c '
import json, sys
p = [r["path"] for r in json.load(sys.stdin)
     if r["path"].startswith("/t" + sys.argv[1] + "/")]
print(len(p), len(set(p)))' "$1"
}

# stored_all N COUNT: COUNT records of traffic N are stored (for wait_t)
stored_all() {
	[ "$(stored "$1")" = "$2 $2" ]
}

# ps_row NAME: the "hk ps" line of fn/NAME: "STATE NODE"
ps_row() {
	hk ps 2>/dev/null | awk -F '\t' -v n="$1" \
	    '$1 == "fn" && $2 == n { print $3, $5 }'
}

# ps_pid NAME: the pid of the instance "hk ps --json" shows
ps_pid() {
	hk ps --json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == sys.argv[1]:
        print((s["instance"] or {}).get("pid"))' "$1"
}

# ps_running NAME HOST: hk ps shows fn/NAME running on HOST
ps_running() {
	[ "$(ps_row "$1")" = "running $2" ]
}

# ps_sleeping NAME: hk ps shows fn/NAME sleeping, without an instance
ps_sleeping() {
	[ "$(ps_row "$1")" = "sleeping -" ]
}

# phase ID: the phase "hk runs show" gives run ID
phase() {
	hk runs show "$1" 2>/dev/null | sed -n 's/^phase: //p'
}

phase_is() {
	[ "$(phase "$1")" = "$2" ]
}

# seed_runs N: N runs of the job seed succeeded (their count in $seeds)
seed_runs() {
	seeds=$(hk runs --json fn/job | python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin)
          if r["trigger"] == "apply:seed" and r["phase"] == "Succeeded"))')
	[ "$seeds" = "$1" ]
}

# run_id: the id "hk invoke --wait" printed on stderr ($err)
run_id() {
	echo "$err" | sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p'
}

# the application: fn/warm (the traffic's: up all along, its
# idle_seconds 86400 lasting 864 s), fn/nap1..3 (each woken in an
# outage), fn/job (runs: hold-fn.py), and the new services of $news and
# of the arguments (all but warm asleep after 30, 300 ms, without a
# request); with $seed, the job fn/seed of fn/job, run_id $seed.  The
# requests the test holds (fn/nap*, fn/job) may last 300 s.
news=
seed=
app_file() {
	{
		printf 'schema_version = 1\nname = "fn"\n'
		fn_svc warm '' 86400
		for n in nap1 nap2 nap3; do
			fn_svc "$n" 'request_timeout_seconds = 300'
		done
		cat <<JOB

[services.job]
command = ["python3", "$IFN/hold-fn.py"]
public = true
[services.job.serverless]
idle_seconds = 30
request_timeout_seconds = 300
JOB
		[ -z "$seed" ] || printf '\n[jobs.seed]\nservice = "job"\nrun_id = %s\n' "$seed"
		for n in $news "$@"; do
			fn_svc "$n"
		done
	} >"$T/app.toml"
}

KEPT=': kept, to be written once the store answers'

# outage N MODE: stop the server (pg_ctl stop -m MODE) under traffic N;
# inside the outage a wake, a run's end and an apply; start it again;
# then what the user sees.  The outage lasts until every daemon met it.
outage() {
	r=$1
	m=$2
	e="$m ($r)"
	: >"$T/traffic.$r"
	bg traffic "$r"
	tpid=$last_pid
	now_ms
	wait_t 10 answered_since "$r" "$now" 5
	ok $? "$e: the client's requests to fn/warm are answered"

	# a run sent before the outage, that ends inside it
	run hk invoke --event "{\"until\": \"$T/runend.$r\"}" fn/job
	rid=$out
	is "$rc" 0 "$e: a run of fn/job ($rid), held, sent before the stop"
	wait_t 10 out_grep "hold-fn: $rid POST"
	ok $? "$e: ... it reached the function"

	# what each daemon's log says it kept, then wrote
	kept_s="service=fn/nap$r: unable to record instance: .*$KEPT"
	kept_j="run=$rid: unable to record Succeeded: .*$KEPT"
	kept_v='unable to write [0-9]+ records to the store: .*: keeping them'
	wrote_s='store: [0-9]+ owed instance rows.* written now that it answers'
	wrote_j='store: [0-9]+ owed run records written now that it answers'
	wrote_v='the store takes records again'
	s0=$(count_in "$T/scale.log" "$kept_s")
	j0=$(count_in "$T/jobs.log" "$kept_j")
	v0=$(count_in "$T/events.log" "$kept_v")
	s1=$(count_in "$T/scale.log" "$wrote_s")
	j1=$(count_in "$T/jobs.log" "$wrote_j")
	v1=$(count_in "$T/events.log" "$wrote_v")
	now_ms
	t_stop=$now
	as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -m "$m" -w stop >/dev/null
	ok $? "$e: PostgreSQL stopped (pg_ctl stop -m $m)"

	# inside the outage: a wake, by a request that streams until the
	# test ends it (the instance stays up, busy, to be seen)...
	bg curl -sS -N -o "$T/nap$r.body" -D "$T/nap$r.head" --max-time 300 \
	    -H "Host: nap$r.fn.localhost" "$URL/slow?s=250&until=$T/release.$r"
	cpid=$last_pid
	wait_t 10 grep -q '^HTTP/1.1 200' "$T/nap$r.head"
	ok $? "$e: inside the outage, a request wakes fn/nap$r: 200"
	npid=$(scale_pid "fn/nap$r")
	alive "$npid"
	ok $? "$e: ... its instance runs (pid $npid)"
	# ... an apply ...
	app_file "x$r"
	run hk apply "$T/app.toml"
	is "$rc" 69 "$e: hk apply of a new service x$r: exit 69 (the store cannot be opened)"
	like "$err" '^hk: error: .+' "$e: ... saying why on stderr: $(echo "$err" | head -n 1)"
	is "$out" "" "$e: ... and printing no service as applied"
	# ... the run's end ...
	touch "$T/runend.$r"
	# ... and each daemon meets the outage
	wait_t 10 more_in "$T/scale.log" "$kept_s" "$s0"
	ok $? "$e: hk-scale: the instance's row refused, kept"
	wait_t 10 more_in "$T/jobs.log" "$kept_j" "$j0"
	ok $? "$e: hk-jobs: the run ended, its record refused, kept"
	wait_t 10 more_in "$T/events.log" "$kept_v" "$v0"
	ok $? "$e: hk-events: the records refused, kept"
	wait_t 10 answered_since "$r" "$t_stop" 20
	ok $? "$e: the client goes on being answered"
	if [ "$r" = 3 ]; then
		# every daemon asked to reload: refused, made again
		g0=$(count_in "$T/gw.log" 'routes reloaded: the store answers again')
		i0=$(count_in "$T/idle.log" 'policies reloaded: the store answers again')
		s0=$(count_in "$T/scale.log" 'services reloaded: the store answers again')
		j0=$(count_in "$T/jobs.log" 'jobs and schedules reloaded: the store answers again')
		like "$(ctl activate.sock '{"op":"reload"}')" '"ok":false' \
		    "$e: the gateway asked to reload: refused"
		like "$(ctl idle.sock '{"op":"reload"}')" '"ok":false' \
		    "$e: hk-idle asked to reload: refused"
		like "$(ctl scale.sock '{"op":"reload"}')" '"ok":false' \
		    "$e: hk-scale asked to reload: refused"
		like "$(ctl jobs.sock '{"op":"reload"}')" '"ok":false' \
		    "$e: hk-jobs asked to reload: refused"
	fi

	as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/data/server.log" \
	    -o "-k $pgdir/sock -p $pgport -c listen_addresses='' -c fsync=off" \
	    -w start >/dev/null
	ok $? "$e: PostgreSQL started again"
	now_ms
	t_start=$now
	if [ "$r" = 3 ]; then
		# the reloads made again by the daemons themselves, before any
		# apply tells them to
		wait_t 15 more_in "$T/gw.log" 'routes reloaded: the store answers again' "$g0"
		ok $? "$e: the gateway's refused reload made again once the store answers"
		wait_t 15 more_in "$T/idle.log" 'policies reloaded: the store answers again' "$i0"
		ok $? "$e: hk-idle's refused reload made again once the store answers"
		wait_t 15 more_in "$T/scale.log" 'services reloaded: the store answers again' "$s0"
		ok $? "$e: hk-scale's refused reload made again once the store answers"
		wait_t 15 more_in "$T/jobs.log" 'jobs and schedules reloaded: the store answers again' "$j0"
		ok $? "$e: hk-jobs' refused reload made again once the store answers"
	fi

	# right after: nothing of the failed apply, and an apply routed at once
	is "$(ps_row "x$r")" "" "$e: nothing of the failed apply: no fn/x$r"
	seed=$r
	app_file "d$r"
	news="$news d$r"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$e: right after the restart, hk apply of a new service d$r \
and of the job seed, run_id $r: exit 0"
	like "$out" "^fn/d$r	revision 1	created\$" "$e: ... d$r created"
	like "$out" "^fn/seed	job run_id $r	queued\$" "$e: ... seed queued"
	is "$err" "" "$e: ... every daemon took the reload (hk apply warns of none)"
	is "$(get "d$r.fn.localhost" /)" 200 \
	    "$e: ... its first request is routed and answered: 200 (not 404)"
	dpid=$(sed -n 's/^idle-fn pid=//p' "$T/body")
	wait_t 10 asleep "fn/d$r" "${dpid:-0}"
	ok $? "$e: ... and hk-idle puts it to sleep after its idle period"

	# the woken function, as hk ps shows it once hk-scale wrote its row
	wait_t 15 ps_running "nap$r" "$(uname -n)"
	ok $? "$e: hk ps shows fn/nap$r running on $(uname -n), with its instance ($(ps_row "nap$r"))"
	is "$(ps_pid "nap$r")" "$npid" "$e: ... the pid of the instance that serves"
	is "$(get "nap$r.fn.localhost" /)" 200 "$e: ... which still answers"
	touch "$T/release.$r"
	wait "$cpid"
	like "$(tail -n 1 "$T/nap$r.body")" "^done pid=$npid\$" \
	    "$e: the request that woke it ends, answered by that instance"
	wait_t 10 asleep "fn/nap$r" "$npid"
	ok $? "$e: then hk-idle puts fn/nap$r to sleep"
	wait_t 15 ps_sleeping "nap$r"
	ok $? "$e: ... and hk ps says so ($(ps_row "nap$r"))"
	wait_t 10 more_in "$T/scale.log" "$wrote_s" "$s1"
	ok $? "$e: hk-scale says it made the writes it owed"

	# the job's run, started by hk-jobs at the reload
	wait_t 10 seed_runs "$r"
	ok $? "$e: hk-jobs ran the job seed of run_id $r \
($(seed_runs "$r"; echo "$seeds") Succeeded runs of it)"

	# the run that ended inside the outage
	wait_t 15 phase_is "$rid" Succeeded
	ok $? "$e: the run $rid that ended in the outage is recorded Succeeded ($(phase "$rid"))"
	wait_t 10 more_in "$T/jobs.log" "$wrote_j" "$j1"
	ok $? "$e: hk-jobs says it wrote the records it owed"
	run hk invoke --wait --event '{"after": 1}' fn/job
	nid=$(run_id)
	is "$rc" 0 "$e: a run after the restart: hk invoke --wait exits 0"
	is "$(phase "$nid")" Succeeded "$e: ... and hk runs show has its record ($nid)"

	# the traffic: every request answered, every record stored once
	touch "$T/stop.$r"
	wait "$tpid"
	sent=$(wc -l <"$T/traffic.$r")
	good=$(awk '$2 == 200' "$T/traffic.$r" | wc -l)
	in_sent=$(sent_in "$r" "$t_stop" "$t_start")
	in_good=$(answered_in "$r" "$t_stop" "$t_start")
	is "$good" "$sent" \
	    "$e: every request of the client answered 200 ($good of $sent)"
	wait_t 15 stored_all "$r" "$sent"
	ok $? "$e: every request's record stored, once ($(stored "$r") of $sent)"
	more_in "$T/events.log" "$wrote_v" "$v1"
	ok $? "$e: hk-events says the store takes records again"
	diag "$e: outage of $((t_start - t_stop)) ms: $in_good of $in_sent \
requests answered during it; $good of $sent in all; records stored: \
$(stored "$r" | cut -d' ' -f1); the gateway's dropped records: \
$(ctl activate.sock '{"op":"status"}' dropped_records)"
}

if [ -n "${HK_TEST_PG:-}" ]; then
	pgdir=$T/pg
	trap '_cleanup_pg; _cleanup' EXIT
	_cleanup_pg() {
		"$HK_TOP/scripts/pg" stop "$pgdir" >/dev/null 2>&1
	}
	chmod 711 "$T"		# the server runs as postgres
	pgport=$(free_port)
	url=$(HK_PG_PORT=$pgport "$HK_TOP/scripts/pg" start "$pgdir" 2>"$T/pg.err")
	ok $? "a private PostgreSQL server starts (port $pgport)" ||
	    { sed 's/^/# /' "$T/pg.err"; done_testing; }
	for pgbin in "${HK_TEST_PG_BIN:-}" /usr/lib/postgresql/*/bin; do
		[ -x "$pgbin/pg_ctl" ] && break
	done
	idle_setup "$url"
	app_file
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
	ok $? "the app is applied: fn/warm, fn/nap1..3, fn/job" ||
	    sed 's/^/# /' "$T/apply.out"
	start_all && start_jobs
	ok $? "hk-events, hk-scale, hk-activate, hk-idle and hk-jobs ready" ||
	    done_testing
	asleep_all() {
		for _s in nap1 nap2 nap3 job; do
			scale_is "fn/$_s" sleeping || return 1
		done
	}
	wait_t 10 asleep_all
	ok $? "fn/nap1..3 and fn/job passed their gates and sleep"
	wait_t 10 scale_is fn/warm running
	ok $? "fn/warm passed its gate and stays up"
	is "$(get warm.fn.localhost /)" 200 "fn/warm answers"
	run hk invoke --wait fn/job
	is "$rc" 0 "a run of fn/job before any outage"

	outage 1 fast
	outage 2 immediate
	outage 3 fast

	# nothing dropped in silence: each daemon's log
	is "$(count_in "$T/events.log" 'records dropped')" 0 \
	    "hk-events dropped no record"
	is "$(count_in "$T/jobs.log" 'a write lost')$(count_in "$T/scale.log" 'a write lost')" 00 \
	    "neither hk-jobs nor hk-scale lost a write"
	is "$(ctl jobs.sock '{"op":"status"}' owed owed_lost | tr '\n' ' ')" "0 0 " \
	    "hk-jobs owes nothing now, and lost nothing"
	for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
		stop_pid "$p"
	done
	for n in scale jobs; do
		is "$(count_in "$T/$n.log" 'still owed at exit')" 0 "hk-$n: nothing still owed at exit"
	done
fi
pg_missing_is_failure
done_testing
