#!/bin/sh
# hk-lease's exclusion, on SQLite and PostgreSQL: two loops contend for the
# same lease for a few seconds, each taking it again and again to run a
# prog that logs "start" and "end" lines (under flock) around a short
# random run.  The log must alternate start/end of the same prog: no two
# runs overlap.  Both loops must have held the lease, and the epochs only
# grow.
. tests/integration/lib.sh

SECONDS_EACH=${HK_LEASE_CONTEND:-5}

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

# contend NAME END: takes the lease again and again until date +%s >= END.
contend() {
	while [ "$(date +%s)" -lt "$2" ]; do
		LOOP=$1 hk-lease -t 2 gateway "$T/excl.sh" "$T/excl.log" \
		    2>/dev/null
		sleep 0.05
	done
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
	end=$(( $(date +%s) + SECONDS_EACH ))
	contend a "$end" </dev/null >/dev/null &
	a=$!
	contend b "$end" </dev/null >/dev/null &
	b=$!
	_pids="$_pids $a $b"
	wait "$a" "$b"
	is "$(check "$T/excl.log")" ok "$E: no two runs of prog overlap"
	runs=$(grep -c '^start' "$T/excl.log")
	hands=$(awk '$1 == "start" { if (NR > 1 && $2 != who) n++; who = $2 }
	    END { print n + 0 }' "$T/excl.log")
	[ "$runs" -ge 10 ] && [ "$hands" -ge 3 ]
	ok $? "$E: the lease changed hands ($runs runs, $hands handovers)"
	grep -q '^start a' "$T/excl.log" && grep -q '^start b' "$T/excl.log"
	ok $? "$E: both contenders held it"
done
pg_missing_is_failure
done_testing
