#!/bin/sh
# After the ready of a woken start, hk-scale records the rest 20 ms later
# (the row says running, the output relay, the log, HTTPIdleWake), so as
# not to take the CPU the first request needs.  An instance that exits
# within those 20 ms must still leave the rows and events in their order:
# the start recorded first, then its exit; never a row that says running
# for a process that is gone.  On SQLite and PostgreSQL.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

cat >"$T/brief.py" <<'EOF'
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(os.environ["PORT"])))
s.listen(8)
print("listening", flush=True)
if os.path.exists(os.environ["BRIEF_FLAG"]):
    time.sleep(0.005)	# ready by now: the probe connected
    print("leaving", flush=True)
    sys.exit(3)
while True:
    c, _ = s.accept()
    c.close()
EOF
chmod 644 "$T/brief.py"

for engine in $(engines); do
	new_store "$engine" brief
	scale_operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	rm -f "$T/brief.flag" "$T/scale.log"
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.brief]
command = ["python3", "$T/brief.py"]
public = true
[services.brief.environment]
BRIEF_FLAG = "$T/brief.flag"
[services.brief.serverless]
APP
	hk apply "$T/app.toml" >/dev/null
	events "$T/ev.out"
	daemon scale hk-scale -v -g 1
	ok $? "$engine: hk-scale starts"
	subscribe "$T/sub.out"
	wait_for 10 state_is fn/brief running
	ok $? "$engine: fn/brief starts (a new service)"
	ctl '{"op":"sleep","service":"fn/brief"}' >/dev/null
	wait_for 10 state_is fn/brief sleeping
	ok $? "$engine: and sleeps when told to"

	touch "$T/brief.flag"
	is "$(ctl '{"op":"wake","service":"fn/brief"}')" '{"ok":true}' \
	    "$engine: a wake is taken"
	wait_for 10 seen "$T/sub.out" '"op":"down","reason":"exited","service":"fn/brief"'
	ok $? "$engine: the instance is ready, then exits within 20 ms of it"
	grep '"service":"fn/brief"' "$T/sub.out" | tail -2 |
	    grep -o '"op":"[a-z]*"' | cut -d'"' -f4 | tr '\n' ' ' >"$T/ops"
	is "$(cat "$T/ops")" "ready down " "$engine: subscribers hear ready, then down"
	sleep 0.2	# well past the 20 ms
	like "$(instance fn/brief)" '^(none|exited .*|failed .*)$' \
	    "$engine: no row says running for the process that is gone"
	is "$(status_of fn/brief state)" sleeping "$engine: the service sleeps"
	wait_for 5 grep -q 'service=fn/brief: .*exit status 3' "$T/scale.log"
	ok $? "$engine: hk-scale logs the exit"
	a=$(grep -n 'service=fn/brief: ready at' "$T/scale.log" | tail -1 | cut -d: -f1)
	b=$(grep -n 'service=fn/brief: .*exit status 3' "$T/scale.log" | tail -1 | cut -d: -f1)
	ok "$([ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]; echo $?)" \
	    "$engine: ... after the line that says it was ready ($a < $b)"
	wait_for 5 grep -q '"InstanceExited".*fn/brief\|fn/brief.*"InstanceExited"' "$T/ev.out"
	python3 - "$T/ev.out" >"$T/kinds" <<'EOF'
import json, sys
kinds = []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if "fn/brief" in json.dumps(e) and e.get("kind") in (
            "HTTPIdleWake", "InstanceExited"):
        kinds.append(e["kind"])
print(" ".join(kinds[-2:]))
EOF
	is "$(cat "$T/kinds")" "HTTPIdleWake InstanceExited" \
	    "$engine: hk-events hears the wake before the exit"
	stop_pid "$scale_pid"
	kill "$sub_pid" 2>/dev/null
done
pg_missing_is_failure
done_testing
