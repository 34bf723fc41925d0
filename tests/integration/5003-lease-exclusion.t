#!/bin/sh
# hk-lease's exclusion, on SQLite and PostgreSQL: two loops contend for the
# same lease for a few seconds, each taking it again and again to run a
# prog that logs "start" and "end" lines (under flock) around a short
# random run.  The log must alternate start/end of the same prog: no two
# runs overlap.  Both loops must have held the lease, and the epochs only
# grow.
#
# For the exclusion check to mean something the loops must have contended:
# at least 10 runs and 3 handovers.  That count is the test's own
# precondition, not a behaviour of hk-lease (a second holder is refused at
# once; who takes the lease next is the loops' timing), and a busy machine
# fits fewer runs in a given time.  So the loops contend for SECONDS_EACH
# and then on until the log holds that count, SECONDS_EACH * WAIT_SCALE
# more at most: a lease that cannot be taken again, or only by the same
# loop, still fails.
. tests/integration/lib.sh

SECONDS_EACH=${HK_LEASE_CONTEND:-5}
RUNS=10
HANDS=3

cat >"$T/excl.sh" <<'PROG'
#!/bin/sh
log=$1
flock "$log" sh -c 'echo "start $0 $1 $2 $(date +%s.%N)" >>"$3"' \
    "$LOOP" $$ "$HAKOPOD_LEASE_EPOCH" "$log"
sleep 0.0$(( $$ % 8 + 1 ))
flock "$log" sh -c 'echo "end $0 $1 $2 $(date +%s.%N)" >>"$3"' \
    "$LOOP" $$ "$HAKOPOD_LEASE_EPOCH" "$log"
PROG
chmod +x "$T/excl.sh"

# contend NAME: takes the lease again and again until $T/stop exists.
# What hk-lease says, but for its refusals, goes to $T/lease-$E-NAME.log
# (shown if the test fails).
contend() {
	while [ ! -e "$T/stop" ]; do
		LOOP=$1 hk-lease -t 2 gateway "$T/excl.sh" "$T/excl.log" \
		    2>&1 >/dev/null | grep -v ' is held by ' >>"$T/lease-$E-$1.log"
		sleep 0.05
	done
}

# counts LOG: sets $runs (starts) and $hands (starts by another loop than
# the previous one's).
counts() {
	runs=$(grep -c '^start' "$1")
	hands=$(awk '$1 == "start" { if (NR > 1 && $2 != who) n++; who = $2 }
	    END { print n + 0 }' "$1")
}

# contended LOG: the log holds RUNS runs and HANDS handovers (for wait_t).
contended() {
	counts "$1"
	[ "$runs" -ge "$RUNS" ] && [ "$hands" -ge "$HANDS" ]
}

# check LOG: "ok" if lines alternate start/end of one prog and the epochs
# grow, else the first offending line.
check() {
	awk '
	$1 == "start" { if (open) { print "overlap: " $0; bad = 1; exit }
		if ($4 <= last) { print "epoch did not grow: " $0; bad = 1;
		    exit }
		open = $3; last = $4; next }
	$1 == "end" { if (open != $3) { print "unmatched: " $0; bad = 1;
		exit } open = ""; next }
	END { if (!bad) print open ? "unfinished" : "ok" }' "$1"
}

for engine in $(engines); do
	E=$engine
	new_store "$engine" excl
	printf '[server]\nstate = "%s"\nruntime_dir = "%s/run"\n' "$STORE" \
	    "$T" >"$T/hakopod.toml"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	: >"$T/excl.log"
	rm -f "$T/stop"
	t0=$(date +%s)
	contend a </dev/null >/dev/null &
	a=$!
	contend b </dev/null >/dev/null &
	b=$!
	_pids="$_pids $a $b"
	sleep "$SECONDS_EACH"
	WAIT_PAUSE=0.1
	wait_t "$SECONDS_EACH" contended "$T/excl.log" 2>/dev/null
	WAIT_PAUSE=0.02
	touch "$T/stop"
	wait "$a" "$b"
	took=$(($(date +%s) - t0))
	bad=$(check "$T/excl.log")
	is "$bad" ok "$E: no two runs of prog overlap" || {
		diag "excl.log up to it:"
		grep -B 4 -F -- "${bad#*: }" "$T/excl.log" | sed 's/^/#   /'
	}
	counts "$T/excl.log"
	[ "$runs" -ge "$RUNS" ] && [ "$hands" -ge "$HANDS" ]
	ok $? "$E: the lease changed hands ($runs runs, $hands handovers in $took s; $RUNS and $HANDS wanted)"
	grep -q '^start a' "$T/excl.log" && grep -q '^start b' "$T/excl.log"
	ok $? "$E: both contenders held it" ||
	    diag "starts by a: $(grep -c '^start a' "$T/excl.log"), by b: $(grep -c '^start b' "$T/excl.log")"
done
pg_missing_is_failure
done_testing
