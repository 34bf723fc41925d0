#!/bin/sh
# hk-lease when a holder goes away, on SQLite and PostgreSQL: after SIGKILL
# of the holding hk-lease, its prog is stopped too (PR_SET_PDEATHSIG) and
# another hk-lease takes the lease over within the TTL, at a bigger epoch;
# the old holder did not release it, but its prog ran on this host and is
# gone, so the new prog starts at once.  If the old prog ignores SIGTERM,
# the new holder waits until the old row's expiry plus its grace period
# and then kills it, as the old hk-lease would have.  A lease lost under a running prog (SQLite: its lock file
# removed; PostgreSQL: pg_terminate_backend on its connection, found by
# application_name) stops prog within the TTL, with SIGKILL after the grace
# period if prog ignores SIGTERM, and hk-lease exits 75 with LeaseLost; so
# do renewals that keep failing (SQLite: the database locked by another
# writer).  5006 checks that a takeover never overlaps two progs.
#
# A time is read where it happens, not where the test sees it: prog
# stamps its SIGTERM, the store its acquisition, the test a kill just
# before it and a cut just before or after it, whichever bound it is for;
# so a busy machine adds to a measured time only the lateness of hk-lease
# itself, not that of the test's polls and tools (psql, python).
. tests/integration/lib.sh

# now_ms: sets $now to CLOCK_BOOTTIME in ms, read from /proc/uptime (10 ms
# steps) without a fork, as prog stamps its SIGTERM.
now_ms() {
	read -r _up _ </proc/uptime
	now=${_up%.*}${_up#*.}0
}

# prog FILE [ignore]: writes "pid sleeper epoch" to FILE, then waits; on
# TERM it writes "term MS" to FILE.term (MS as now_ms) and exits 0, or
# ignores it with "ignore".
cat >"$T/prog.sh" <<'PROG'
#!/bin/sh
f=$1
sleep 30 </dev/null >/dev/null 2>&1 &
s=$!
term() {
	read -r up _ </proc/uptime
	echo "term ${up%.*}${up#*.}0" >"$f.term"
}
if [ "${2:-}" = ignore ]; then
	trap term TERM
else
	trap 'term; kill $s 2>/dev/null; exit 0' TERM
fi
echo "$$ $s $HAKOPOD_LEASE_EPOCH" >"$f.tmp"
mv "$f.tmp" "$f"
while kill -0 $s 2>/dev/null; do
	wait $s
done
PROG
chmod +x "$T/prog.sh"

mkdir -p "$T/run"
socat -u UNIX-RECV:"$T/run/events.sock" OPEN:"$T/events.out",creat,append \
    </dev/null >/dev/null 2>&1 &
_pids="$_pids $!"
wait_for 5 test -S "$T/run/events.sock"

# holder FILE ARGS...: hk-lease -t 2 ARGS gateway prog FILE in the
# background, waiting for prog; sets lpid, ppid, spid, epoch.
holder() {
	_f=$1
	shift
	rm -f "$_f" "$_f.term"
	hk-lease -t 2 "$@" gateway "$T/prog.sh" "$_f" ${extra:-} </dev/null \
	    >/dev/null 2>"$_f.log" &
	lpid=$!
	_pids="$_pids $lpid"
	wait_for 5 test -s "$_f" || return 1
	read -r ppid spid epoch <"$_f"
	_pids="$_pids $ppid $spid"
}

gone() {
	! alive "$1"
}

# term_after MS FILE: how long after MS (as now_ms) prog stamped its
# SIGTERM in FILE.term; "never" (not a number) without a stamp.
term_after() {
	_t=
	read -r _ _t 2>/dev/null <"$2.term"
	if [ -n "$_t" ]; then
		echo $(( _t - $1 ))
	else
		echo never
	fi
}

# terminate DB: pg_terminate_backend on hk-lease:gateway's connection to DB;
# prints how many were ended.
terminate() {
	psql "$HK_TEST_PG" -qAtc "SELECT count(pg_terminate_backend(pid))
	    FROM pg_stat_activity WHERE application_name = 'hk-lease:gateway'
	    AND datname = '$1'"
}

try_take() {
	hk-lease -t 2 gateway sh -c 'echo $HAKOPOD_LEASE_EPOCH' \
	    >"$T/take.out" 2>/dev/null
}

# take_loop: tries to take the lease until it gets it (at most 10 s), its
# prog printing "epoch wall-clock-ms" to take.out; its log in take.log.
take_loop() {
	_n=0
	while [ "$_n" -lt 500 ]; do
		hk-lease -t 2 gateway sh -c \
		    'echo $HAKOPOD_LEASE_EPOCH $(($(date +%s%N) / 1000000))' \
		    >"$T/take.out" 2>>"$T/take.log" </dev/null
		[ $? -eq 75 ] || return 0
		_n=$((_n + 1))
		sleep 0.02
	done
}

# row_end [EXPR]: the stored lease's expires_at + grace_ms, or EXPR of
# its columns (Unix ms).
row_end() {
	_q="SELECT ${1:-expires_at + grace_ms} FROM leases WHERE name = 'gateway'"
	if [ "$engine" = sqlite ]; then
		python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' \
		    "$T/takeover.db" "$_q"
	else
		psql "$STORE" -qAtc "$_q"
	fi
}

for engine in $(engines); do
	E=$engine
	new_store "$engine" takeover
	printf '[server]\nstate = "%s"\nruntime_dir = "%s/run"\n' "$STORE" \
	    "$T" >"$T/hakopod.toml"
	export HAKOPOD_CONFIG="$T/hakopod.toml"

	# SIGKILL of the holder, while another hk-lease tries to take the
	# lease (refused, 75) again and again, as a supervisor would: the
	# takeover is timed from the kill to the acquisition the new row
	# records.  The old row's end is read while the holder still renews
	# it: it only grows, so a prog that starts before it starts before
	# the last one.
	extra= holder "$T/a" -g 1
	ok $? "$E: the first holder runs prog"
	: >"$T/take.log"
	take_loop &
	tl=$!
	_pids="$_pids $tl"
	wait_for 3 grep -q 'lease gateway is held by' "$T/take.log"
	end=$(row_end)
	t0=$(date +%s%N)
	kill -KILL "$lpid"
	wait_for 3 gone "$ppid"
	wait_for 3 test -f "$T/a.term"
	ok $? "$E: prog of a killed hk-lease gets SIGTERM"
	kill -KILL "$ppid" "$spid" 2>/dev/null
	wait_for 3 grep -q 'lease gateway acquired' "$T/take.log"
	ok $? "$E: another hk-lease takes the lease over"
	# (a row still at the old epoch reads as far ahead: no takeover fails)
	ms=$(( $(row_end "CASE WHEN epoch > $epoch THEN acquired_at
	    ELSE 4000000000000000 END") - t0 / 1000000 ))
	[ "$ms" -lt 2000 ]
	ok $? "$E: within the TTL of 2 s ($ms ms)"
	like "$(cat "$T/take.log")" \
	    'lease gateway was not released: prog starts in [0-9]+ ms' \
	    "$E: and says its prog waits for the old holder's grace"
	wait_for 10 gone "$tl"
	wait "$tl"
	read -r epoch at <"$T/take.out"
	is "$epoch" 2 "$E: at a bigger epoch"
	like "$(cat "$T/take.log")" \
	    "the previous holder's prog ran here as pid $ppid" \
	    "$E: which ran on this host"
	ms=$(( at - t0 / 1000000 ))
	[ "$ms" -lt 1500 ] && [ "$at" -lt "$end" ]
	ok $? "$E: so its prog starts once that one is gone, before the old row's end ($ms ms)"

	# SIGKILL of a holder whose prog ignores SIGTERM: the new holder
	# waits until the old row's end, then kills the old prog itself.
	extra=ignore holder "$T/c" -g 1
	ok $? "$E: a holder whose prog ignores SIGTERM runs it"
	kill -KILL "$lpid"
	wait_for 3 test -f "$T/c.term"
	ok $? "$E: its hk-lease killed, prog gets SIGTERM and goes on"
	end=$(row_end)
	: >"$T/take.log"
	take_loop &
	tl=$!
	_pids="$_pids $tl"
	wait_for 10 gone "$tl"
	wait "$tl"
	read -r epoch at <"$T/take.out"
	is "$epoch" 4 "$E: the next holder takes over"
	after=$((at - end))
	[ "$after" -ge 0 ]
	ok $? "$E: its prog starts after the old row's end ($after ms after)"
	[ "$after" -lt 1000 ]
	ok $? "$E: and not much later: less than 1 s"
	ok "$(gone "$ppid" && echo 0 || echo 1)" \
	    "$E: the old prog was killed by then"
	like "$(cat "$T/take.log")" \
	    "prog, pid $ppid, still runs past its grace period: killing it" \
	    "$E: and the new holder says so"
	kill -KILL "$spid" 2>/dev/null

	# Loss under a running prog that stops on SIGTERM: timed from the
	# end of the cut (psql may take a while on a busy machine), which
	# the holder's last renewal began before.
	: >"$T/events.out"
	extra= holder "$T/b" -g 1
	if [ "$engine" = sqlite ]; then
		rm -f "$T/takeover.db.lease-gateway.lock"
		now_ms
	else
		db=$(echo "$STORE" | sed 's|^postgres:///\([^?]*\)?.*|\1|')
		n=$(terminate "$db")
		now_ms
		is "$n" 1 \
		    "$E: the holder's connection is found by application_name"
	fi
	cut=$now
	wait_for 3 test -s "$T/b.term"
	ok $? "$E: a lost lease stops prog"
	ms=$(term_after "$cut" "$T/b")
	[ "$ms" -lt 2000 ] 2>/dev/null
	ok $? "$E: within the TTL of 2 s of the cut ($ms ms)"
	wait "$lpid"
	is "$?" 75 "$E: hk-lease exits 75"
	like "$(cat "$T/b.log")" "error: lease gateway lost \(epoch 5\): " \
	    "$E: the loss is logged at error level"
	wait_for 3 grep -q LeaseLost "$T/events.out"
	ok $? "$E: LeaseLost goes to events.sock"
	like "$(cat "$T/events.out")" '"kind":"LeaseLost".*"reason":' \
	    "$E: with its reason"
	wait_for 3 try_take
	ok $? "$E: the lease can be taken again afterwards"

	# Loss under a prog that ignores SIGTERM: SIGKILL after the grace.
	# It comes the grace period after SIGTERM, which is sent when the
	# loss is found, after the start of the cut, and TTL + grace after
	# the holder's last renewal, before the end of the cut, at the
	# latest; 0.5 s more for seeing hk-lease go.
	extra=ignore holder "$T/c" -g 1
	t0=$(date +%s%3N)
	if [ "$engine" = sqlite ]; then
		rm -f "$T/takeover.db.lease-gateway.lock"
	else
		terminate "$db" >/dev/null
	fi
	t1=$(date +%s%3N)
	wait_for 5 gone "$lpid"
	t2=$(date +%s%3N)
	wait "$lpid"
	is "$?" 75 "$E: a prog that ignores SIGTERM: hk-lease still exits 75"
	[ $((t2 - t0)) -ge 1000 ] && [ $((t2 - t1)) -lt 3500 ]
	ok $? "$E: after the grace period of 1 s, within TTL + grace, 3 s, + 0.5 s ($((t2 - t0)) ms from the cut's start, $((t2 - t1)) ms from its end)"
	test -f "$T/c.term" && ! alive "$ppid"
	ok $? "$E: prog got SIGTERM, then SIGKILL"
	like "$(cat "$T/c.log")" \
	    "warning: prog pid $ppid did not stop within 1000 ms: killing it" \
	    "$E: the SIGKILL is logged"
	kill "$spid" 2>/dev/null

	# Renewals that keep failing (SQLite: the database locked by another
	# writer for longer than the TTL) lose the lease within the TTL.
	[ "$engine" = sqlite ] || continue
	extra= holder "$T/d" -g 1 -t 3
	python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(8)' "$T/takeover.db" "$T/locked" </dev/null >/dev/null 2>&1 &
	locker=$!
	_pids="$_pids $locker"
	wait_for 5 test -f "$T/locked"
	now_ms
	t0=$now
	wait_for 5 test -s "$T/d.term"
	ok $? "$E: renewals failing past the TTL stop prog"
	ms=$(term_after "$t0" "$T/d")
	[ "$ms" -lt 3000 ] 2>/dev/null
	ok $? "$E: within the TTL of 3 s ($ms ms)"
	wait "$lpid"
	is "$?" 75 "$E: hk-lease exits 75"
	like "$(cat "$T/d.log")" "warning: lease gateway: unable to renew: " \
	    "$E: each failed renewal is a warning"
	like "$(cat "$T/d.log")" \
	    "lost \(epoch [0-9]+\): no renewal within the TTL" \
	    "$E: the loss says why"
	kill "$locker" "$spid" 2>/dev/null
done
pg_missing_is_failure
done_testing
