#!/bin/sh
# hk-scale and the exec backend, on SQLite and PostgreSQL: the command line,
# the readiness gate of a new serverless service, sleep and wake through
# scale.sock, the instance row in the store, the child in its own process
# group with its output in our log, events, and a clean SIGTERM.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

# The command line.
run hk-scale -h
is "$rc $out" "0 usage: hk-scale [-nv] [-d fd] [-f config] [-g seconds]" \
    "-h prints the synopsis and exits 0"
run hk-scale -x
is "$rc" 64 "an unknown flag exits 64"
run hk-scale -g 0
is "$rc" 64 "a grace period of 0 s is refused with 64"
scale_operator "$T/good.toml" "sqlite://$T/check.db"
run hk-scale -n -f "$T/good.toml"
is "$rc $err" "0 configuration OK" "-n checks the configuration"
err=$(HAKOPOD_CONFIG=$T/good.toml hk-scale -n -v 2>&1)
like "$err" '^runtime_dir = ".*/run" \(file\)$' \
    "HAKOPOD_CONFIG names the file; -n -v shows where values came from"
scale_operator "$T/bad.toml" "sqlite://$T/check.db" "max_concurrent_starts = 0"
run hk-scale -n -f "$T/bad.toml"
is "$rc" 78 "-n with an out-of-range key exits 78"
like "$err" 'max_concurrent_starts' "and names the key"
scale_operator "$T/nostore.toml" "sqlite:///nonexistent/dir/state.db"
run hk-scale -f "$T/nostore.toml"
is "$rc" 69 "a store that cannot be opened exits 69"

for engine in $(engines); do
	new_store "$engine" exec
	scale_operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	{
		printf 'schema_version = 1\nname = "fn"\n'
		fn_service web '[services.web.serverless]'
	} >"$T/app.toml"
	hk apply "$T/app.toml" >/dev/null
	events "$T/events.out"
	rm -f "$T/scale.log"
	daemon scale hk-scale -g 2
	ok $? "$engine: hk-scale signals readiness on -d"
	subscribe "$T/sub.out"

	# A new serverless service passes its readiness gate once.
	wait_for 10 seen "$T/sub.out" '"op":"ready".*"service":"fn/web"'
	ok $? "$engine: a new serverless service is started once (readiness gate)"
	pid=$(status_of fn/web pid)
	is "$(ctl '{"op":"sleep","service":"fn/web"}')" '{"ok":true}' \
	    "$engine: sleep answers ok"
	dead "$pid"
	ok $? "$engine: and the process is gone when it answers"
	wait_for 5 seen "$T/sub.out" '"op":"down","reason":"idle","service":"fn/web"'
	ok $? "$engine: down (idle) is broadcast"
	is "$(instance fn/web)" none "$engine: the instance row is gone"
	is "$(status_of fn/web state)" sleeping "$engine: status says sleeping"
	wait_for 5 seen "$T/events.out" '"kind":"HTTPIdleSleep".*"service":"fn/web"'
	ok $? "$engine: HTTPIdleSleep is recorded"

	# A wake starts it again.
	is "$(ctl '{"op":"wake","service":"fn/web","reason":"request"}')" \
	    '{"ok":true}' "$engine: wake is accepted"
	wait_for 10 more_than 1 "$T/sub.out" '"op":"ready"'
	line=$(grep '"op":"ready"' "$T/sub.out" | tail -1)
	like "$line" '^\{"endpoint":"127\.0\.0\.1:[0-9]+","op":"ready","revision":1,"service":"fn/web"\}$' \
	    "$engine: ready is broadcast with the endpoint and revision"
	ep=$(printf '%s\n' "$line" | sed 's/.*"endpoint":"\([^"]*\)".*/\1/')
	pid=$(status_of fn/web pid)
	alive "$pid"
	ok $? "$engine: the process runs"
	is "$(pgrp "$pid")" "$pid $pid" \
	    "$engine: in its own process group and session"
	like "$(get "http://$ep/")" "^hello pid=$pid" \
	    "$engine: a GET to the endpoint answers"
	wait_for 5 out_grep 'hk-scale: info: service=fn/web: request "GET / HTTP/1.1" 200'
	ok $? "$engine: the child's output is in its service's log, a line each"
	is "$(instance fn/web)" "running $ep $pid" \
	    "$engine: the store has the instance, running at the endpoint"
	run hk ps
	like "$out" '^fn	web	running	1	' "$engine: hk ps shows it running"
	wait_for 5 seen "$T/events.out" '"detail":\{"port_ms":[0-9]+,"readiness_ms":[0-9]+,"reason":"request","spawn_ms":[0-9]+\},"kind":"HTTPIdleWake"'
	ok $? "$engine: HTTPIdleWake is recorded with reason and the cold start's breakdown: spawn_ms, port_ms, readiness_ms"
	python3 -c 'import json, re, sys
for l in open(sys.argv[1]):
    m = re.search(r"\"detail\":(\{[^}]*\}),\"kind\":\"HTTPIdleWake\"", l)
    if m:
        d = json.loads(m.group(1))
        sys.exit(0 if d["spawn_ms"] <= d["port_ms"] <= d["readiness_ms"] else 1)
sys.exit(1)' "$T/events.out"
	ok $? "$engine: ... in order: spawned, then the port accepted, then ready"

	# Waking a running service re-broadcasts its ready.
	ctl '{"op":"wake","service":"fn/web"}' >/dev/null
	wait_for 5 more_than 2 "$T/sub.out" '"op":"ready"'
	ok $? "$engine: a wake of a running service broadcasts ready again"
	is "$(status_of fn/web pid)" "$pid" "$engine: without a new process"

	# Refusals.
	is "$(ctl '{"op":"nope"}')" '{"error":"unknown op","ok":false}' \
	    "$engine: an unknown op is refused"
	is "$(ctl '{"op":"wake","service":"fn/none"}')" \
	    '{"error":"unknown service","ok":false}' \
	    "$engine: an unknown service is refused"
	like "$(ctl '{"op":"wake"')" '"ok":false' \
	    "$engine: malformed JSON gets an error reply"

	# SIGTERM: the children are stopped, the rows deleted, exit 0.
	kill -TERM "$scale_pid"
	wait_for 10 dead "$scale_pid"
	wait "$scale_pid"
	is "$?" 0 "$engine: SIGTERM makes hk-scale exit 0"
	dead "$pid"
	ok $? "$engine: its child is stopped"
	is "$(instance fn/web)" none "$engine: and its row deleted"
	wait_for 5 seen "$T/sub.out" '^closed$'
	ok $? "$engine: subscribers are disconnected"
	kill "$sub_pid" 2>/dev/null
done
pg_missing_is_failure
done_testing
