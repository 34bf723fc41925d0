#!/bin/sh
# hk-scale picks each service's backend from its stored spec, on SQLite and
# PostgreSQL.  Specs stored before backends had names keep running as they
# did: one with a command on exec, image or not; one with only an image
# (seed 000's example, applied by an earlier hk) runs on the container
# backend, and here, with no engine at its socket, fails its start
# at once with the engine's reason, instead of "no command to run".  A row
# whose spec this hk-scale cannot read is left alone at a restart, with
# its process.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

# sql ENGINE STATEMENT
sql() {
	case $1 in
	sqlite) sqlite3 "$T/backends.db" "$2" ;;
	postgres) psql "$STORE" -qAtc "$2" >/dev/null ;;
	esac
}

# respec SERVICE PYTHON: an UPDATE of the stored spec of fn/SERVICE,
# changed by PYTHON (on the dict s)
cat >"$T/respec.py" <<'PY'
import json, sys
s = json.load(sys.stdin)["spec"]
exec(sys.argv[2])
t = json.dumps(s, sort_keys=True, separators=(",", ":")).replace("'", "''")
print("UPDATE services SET spec = '%s' WHERE app = 'fn' AND name = '%s'"
      % (t, sys.argv[1]))
PY
respec() {
	hk status --json "fn/$1" | python3 "$T/respec.py" "$1" "$2"
}

for engine in $(engines); do
	new_store "$engine" backends
	scale_operator "$T/hakopod.toml" "$STORE" \
	    "container_engine = \"unix://$T/no-engine.sock\""
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	{
		printf 'schema_version = 1\nname = "fn"\n'
		fn_service img '[services.img.serverless]'
		fn_service both '[services.both.serverless]'
	} >"$T/app.toml"
	hk apply "$T/app.toml" >/dev/null
	ok $? "$engine: applied"
	# What an earlier hk stored for seed 000's example (an image, no
	# command), and for the shipped example (both, no backend).
	sql "$engine" "$(respec img 's["image"] = "ghcr.io/example/http-function:latest"; s["command"] = None')"
	ok $? "$engine: fn/img stored as an image alone"
	sql "$engine" "$(respec both 's["image"] = "ghcr.io/example/http-function:latest"')"
	ok $? "$engine: fn/both stored with an image and a command"
	gate='INSERT INTO settings (key, value) VALUES'
	sql "$engine" "$gate ('hk-scale.gate.fn/img', '1'), ('hk-scale.gate.fn/both', '1')"

	rm -f "$T/scale.log"
	events "$T/events.out"
	daemon scale hk-scale -g 2
	ok $? "$engine: hk-scale starts"
	subscribe "$T/sub.out"

	ctl '{"op":"wake","service":"fn/img","reason":"request"}' >/dev/null
	wait_for 10 seen "$T/sub.out" '"op":"failed".*"service":"fn/img"'
	ok $? "$engine: a wake of the image-only service fails"
	like "$(grep '"op":"failed"' "$T/sub.out")" "\"reason\":\"create: unable to connect to unix://$T/no-engine.sock: No such file or directory\"" \
	    "$engine: with the engine's reason: nothing at its socket"
	wait_for 5 seen "$T/events.out" '"kind":"StartFailed".*"service":"fn/img"'
	like "$(grep StartFailed "$T/events.out")" "unable to connect to unix://$T/no-engine.sock" \
	    "$engine: StartFailed says so too"
	run hk ps
	like "$out" "$(printf '^fn\timg\tfailed\t1\t%s\t' "$(hostname)")" \
	    "$engine: hk ps shows it failed, on this node"
	run hk status fn/img
	like "$out" '^backend: +container$' "$engine: hk status names its backend"
	like "$out" "^runs on: +- \\(its start failed on $(hostname)\\)\$" \
	    "$engine: and that it runs nowhere"
	grep -q 'no command to run' "$T/scale.log"
	ok $((!$?)) "$engine: not \"no command to run\" any more"

	ctl '{"op":"wake","service":"fn/both","reason":"request"}' >/dev/null
	wait_for 10 seen "$T/sub.out" '"op":"ready".*"service":"fn/both"'
	ok $? "$engine: the service with both still runs its command"
	pid=$(status_of fn/both pid)
	alive "$pid"
	ok $? "$engine: as a process of ours (pid $pid)"
	grep -q "service=fn/both: started pid $pid revision 1 at 127.0.0.1:" "$T/scale.log"
	ok $? "$engine: started by the exec backend, logged as before"
	run hk ps
	like "$out" "$(printf '^fn\tboth\trunning\t1\t%s\t' "$(hostname)")" \
	    "$engine: hk ps shows the node it runs on"
	run hk status fn/both
	like "$out" '^backend: +exec$' "$engine: hk status: exec, as stored before"
	like "$out" '^placement: +default node \(this host\)$' "$engine: asked for the default node"
	like "$out" "^runs on: +$(hostname)\$" "$engine: and runs on this host"

	# Killed, and restarted with fn/both's spec unreadable: its process
	# is not ours to judge, and is left alone.
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	sql "$engine" "$(respec both 's["backend"] = "nomad"')"
	daemon scale hk-scale -g 2
	ok $? "$engine: hk-scale starts again"
	grep -q 'service=fn/both: its spec cannot be read: the instance of an earlier run is left as it is' \
	    "$T/scale.log"
	ok $? "$engine: it says it leaves the unreadable service's instance"
	alive "$pid"
	ok $? "$engine: whose process still runs"
	like "$(hk status fn/both)" "instance: +running revision 1 pid $pid " \
	    "$engine: and whose row is still there"

	# Readable again: a restart adopts it as before.
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	sql "$engine" "$(respec both 'del s["backend"]')"
	daemon scale hk-scale -g 2
	grep -q "service=fn/both: adopted pid $pid at 127.0.0.1:" "$T/scale.log"
	ok $? "$engine: a restart with the spec readable adopts it"
	stop_pid "$scale_pid"
	dead "$pid"
	ok $? "$engine: and SIGTERM stops it"
	stop_pid "$sub_pid"
done
pg_missing_is_failure
done_testing
