#!/bin/sh
# A new revision of an ordinary exec service with replicas = 3 rolls over
# its replicas one at a time (hk-scale(8), Replicas), on SQLite and
# PostgreSQL.  Each start of revision 2 is held (fn/held-each) until the
# test has looked: while replica 0's gate is held the three old replicas
# serve; while new replica 1 is held, old replica 1 is gone and new
# replica 2 not started, and new replica 0 and old replica 2 serve; while
# new replica 2 is held, new replicas 0 and 1 serve.  At every point at
# least two replicas answer.  Revision 3 passes its gate on replica 0
# but its other replicas exit at once: the roll stops at replica 1
# (StartFailed with the replica and the reason, logged), and old replica
# 2 goes on serving, the same process, through two failed tries.  hk
# status says when a roll is under way, and where it stopped and why.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# write_app TAG [COMMAND-PREFIX]: fn/web, replicas = 3, port 0 (a port
# each), its starts held by fn/held-each on $H.
write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = [${2:-}"sh", "$IFN/held-each", "$H", "python3", "$IFN/scale-http.py"]
replicas = 3
[services.web.environment]
SCALE_TAG = "$1"
APP
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

# replica_of N FIELD: "pid", "endpoint", "state" or "revision" of replica
# N in hk ps --json
replica_of() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == "web":
        for i in s["replicas"]:
            if i["replica"] == int(sys.argv[1]):
                print(i[sys.argv[2]])' "$1" "$2"
}

# replicas_are TEXT: the REPLICAS column of hk ps for fn/web (for wait_t)
replicas_are() {
	[ "$(hk ps | awk -F '\t' '$1 == "fn" && $2 == "web" { print $8 }')" = "$1" ]
}

# answer ENDPOINT: the body of GET / there
answer() {
	curl -sS --max-time 30 "http://$1/"
}

# serving: one line per replica of fn/web that hk ps has running and
# that answers at its endpoint: "TAG pid=PID"
serving() {
	for _r in 0 1 2; do
		[ "$(replica_of $_r state)" = running ] || continue
		answer "$(replica_of $_r endpoint)"
	done
}

# all_tag TAG: the three replicas run and each answers with TAG
all_tag() {
	replicas_are 3/3 || return 1
	[ "$(serving | grep -c "^$1 pid=")" = 3 ]
}

# failed_twice: two StartFailed events of fn/web's roll at replica 1
failed_twice() {
	hk-events list --json -n 0 --kind StartFailed --service fn/web |
	    python3 -c 'import json, sys
n = sum(1 for e in json.load(sys.stdin)
        if e["detail"].get("roll") == "stopped" and
        e["detail"].get("replica") == 1 and e["detail"].get("revision") == 3)
sys.exit(0 if n >= 2 else 1)'
}

for engine in $(engines); do
	new_store "$engine" roll
	idle_setup "$STORE"
	H=$T/h-$engine
	mkdir -p "$H"
	chmod 0777 "$H"	# the service runs as nobody
	start_events && start_scale
	ok $? "$engine: hk-events and hk-scale are ready"
	write_app one
	is "$?" 0 "$engine: hk apply of revision 1, replicas = 3"
	wait_t 30 all_tag one
	ok $? "$engine: three replicas of revision 1 answer"
	o0=$(replica_of 0 pid)
	o1=$(replica_of 1 pid)
	o2=$(replica_of 2 pid)

	# Revision 2, each start held.
	touch "$H/hold"
	write_app two
	is "$?" 0 "$engine: hk apply of revision 2"
	wait_t 30 test -e "$H/start.1/pid"
	ok $? "$engine: replica 0 of revision 2 starts (its gate), held"
	is "$(serving | sort)" "$(printf 'one pid=%s\n' "$o0" "$o1" "$o2" | sort)" \
	    "$engine: ... the three old replicas serve meanwhile"
	touch "$H/go.1"

	wait_t 30 test -e "$H/start.2/pid"
	ok $? "$engine: new replica 1 starts, held"
	n0=$(cat "$H/start.1/pid")
	n1=$(cat "$H/start.2/pid")
	wait_t 30 gone "$o1"
	ok $? "$engine: ... old replica 1 was stopped first"
	ok $([ ! -e "$H/start.3" ]; echo $?) \
	    "$engine: ... replica 2 is not replaced yet"
	alive "$o2"
	ok $? "$engine: ... old replica 2 runs"
	is "$(answer "$(replica_of 0 endpoint)")" "two pid=$n0" \
	    "$engine: ... new replica 0 serves"
	is "$(answer "$(replica_of 2 endpoint)")" "one pid=$o2" \
	    "$engine: ... old replica 2 serves: two replicas answer"
	like "$(hk status fn/web)" \
	    'roll: +under way to revision 2: 2 of 3 replicas; replica 2 of revision 1 serves meanwhile' \
	    "$engine: hk status: the roll is under way"
	touch "$H/go.2"

	wait_t 30 test -e "$H/start.3/pid"
	ok $? "$engine: once new replica 1 is ready, new replica 2 starts, held"
	n2=$(cat "$H/start.3/pid")
	wait_t 30 gone "$o2"
	ok $? "$engine: ... old replica 2 was stopped first"
	is "$(serving | sort)" "$(printf 'two pid=%s\n' "$n0" "$n1" | sort)" \
	    "$engine: ... new replicas 0 and 1 serve: two replicas answer"
	touch "$H/go.3"
	wait_t 30 all_tag two
	ok $? "$engine: the three replicas of revision 2 answer"
	is "$(replica_of 2 pid)" "$n2" "$engine: ... replica 2 is the one held"
	ok $([ ! -e "$H/start.4" ]; echo $?) "$engine: three starts in all"
	hk status fn/web >"$T/status.out"
	ok $(! grep -q '^roll:' "$T/status.out"; echo $?) \
	    "$engine: hk status: no roll once it is done"
	like "$(cat "$T/scale.log")" 'service=fn/web: replica 2: rolling from revision 1 to 2' \
	    "$engine: the log says each replica rolls"

	# Revision 3: replica 0 starts, the others exit at once.
	rm -f "$H/hold"
	r0=$(replica_of 0 pid)
	r2=$(replica_of 2 pid)
	write_app three "\"sh\", \"-c\", \"mkdir '$H/once' 2>/dev/null || { echo broken replica, as asked; exit 3; }; exec \\\"\$0\\\" \\\"\$@\\\"\", "
	is "$?" 0 "$engine: hk apply of revision 3, whose replicas past the first fail"
	wait_t 60 failed_twice
	ok $? "$engine: the roll stops at replica 1: StartFailed, twice (tried again)"
	hk-events list --json -n 0 --kind StartFailed --service fn/web >"$T/ev.json"
	like "$(cat "$T/ev.json")" '"reason": *"exit status 3: broken replica, as asked"' \
	    "$engine: ... with the reason"
	like "$(cat "$T/scale.log")" 'service=fn/web: rolling to revision 3 stopped at replica 1: exit status 3: broken replica, as asked; the replicas of revision 2 above it go on serving' \
	    "$engine: ... and the log says so"
	is "$(replica_of 2 pid)" "$r2" "$engine: old replica 2 is the same process"
	is "$(answer "$(replica_of 2 endpoint)")" "two pid=$r2" \
	    "$engine: ... and serves, of revision 2"
	like "$(answer "$(replica_of 0 endpoint)")" '^three pid=' \
	    "$engine: replica 0 serves revision 3 (it passed its gate)"
	like "$(hk status fn/web)" \
	    'roll: +stopped at replica 1 \(revision 3\): exit status 3: broken replica, as asked; replica 2 of revision 2 goes on serving' \
	    "$engine: hk status: the roll stopped, and why"
	hk status --json fn/web | python3 -c 'import json, sys
r = json.load(sys.stdin)["roll"]
sys.exit(0 if r["state"] == "stopped" and r["replica"] == 1 and
         r["revision"] == 3 and r["older"] == [[2, 2]] else 1)'
	ok $? "$engine: ... and hk status --json"

	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	: >"$T/scale.log"
done
pg_missing_is_failure
done_testing
