#!/bin/sh
# End to end with the s6 backend, under a real s6-svscan, on SQLite and
# PostgreSQL: every daemon is real (hk-events, hk-scale, hk-activate,
# hk-idle).  A Python function on s6 passes its readiness gate and goes to
# sleep; a request through the gateway wakes it and is answered by it, as
# nobody with no_new_privs; idle, it sleeps again (s6 has it down); three
# simultaneous POSTs while it sleeps wake it once and are handled exactly
# three times; it wakes again after that.  time_unit_ms = 10:
# idle_seconds = 30 lasts 300 ms.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/s6.sh

s6_require
EX=$HK_TOP/etc/examples/functions
NOBODY=$(id -u nobody)

for e in $(engines); do
	new_store "$e" "e2es6" || { ok 1 "$e: store"; continue; }
	rm -f "$T"/*.log
	SCAN=$T/scan-$e
	idle_setup "$STORE" "s6_scandir = \"$SCAN\""
	s6_scan_start "$SCAN"
	ok $? "$e: an s6-svscan runs on the scan directory"
	idle_apply "
[services.py]
command = [\"python3\", \"$EX/hello.py\"]
backend = \"s6\"
public = true
readiness = \"http:/\"
[services.py.serverless]
idle_seconds = 30
startup_timeout_seconds = 20"
	ok $? "$e: a Python function on s6 is applied"
	start_all
	ok $? "$e: hk-events, hk-scale, hk-activate and hk-idle are ready"

	# Its readiness gate, then asleep on its own.
	wait_t 20 more_in "$T/scale.log" 'service=fn/py: ready at' 0
	ok $? "$e: the new revision passes its readiness gate under s6"
	wait_t 20 scale_is fn/py sleeping
	ok $? "$e: and goes to sleep when idle"
	is "$(s6_field "$SCAN/hk.fn.py.1" up)" false "$e: s6 has it down"

	# A request wakes it.
	starts=$(count_in "$T/scale.log" 'service=fn/py: started pid')
	is "$(get py.fn.localhost /hello?token=1)" 200 \
	    "$e: a request to the sleeping function"
	is "$(cat "$T/body")" "hello from python: GET /hello, 0 bytes received" \
	    "$e: is answered by it"
	# Who it runs as, from one read of its status: idle for 300 ms, it
	# may be stopped before a busy machine reads it, so a request wakes
	# it again then (five at most).
	for _try in 1 2 3 4 5; do
		pid=$(s6_field "$SCAN/hk.fn.py.1" pid)
		creds=$(creds_of "$pid") && break
		get py.fn.localhost /hello?token=1 >/dev/null
	done
	is "$creds" "$NOBODY $NOBODY $NOBODY $NOBODY 1" \
	    "$e: which runs as nobody with no_new_privs (pid $pid)"
	wait_t 5 events_reach 1 HTTPIdleWake fn/py
	ok $? "$e: HTTPIdleWake is recorded"
	wait_t 20 scale_is fn/py sleeping
	ok $? "$e: idle, it sleeps again"
	wait_t 5 dead "$pid"
	ok $? "$e: its process is gone"
	is "$(s6_field "$SCAN/hk.fn.py.1" up)" false "$e: s6 has it down"

	# Three simultaneous POSTs while it sleeps: one wake, three handled.
	starts=$(count_in "$T/scale.log" 'service=fn/py: started pid')
	handled=$(count_in "$(outlog)" 'hello.py: info: POST /three 200')
	for i in 1 2 3; do
		curl -sS -o "$T/p$i" -w '%{http_code}' --max-time 30 \
		    -H 'Host: py.fn.localhost' -d "n=$i" "$URL/three" \
		    >"$T/p$i.code" &
		eval "p$i=\$!"
	done
	wait "$p1" "$p2" "$p3"
	is "$(cat "$T/p1.code" "$T/p2.code" "$T/p3.code" | tr -d '\n')" \
	    200200200 "$e: three simultaneous POSTs to it asleep are answered"
	is "$(cat "$T/p1")" "hello from python: POST /three, 3 bytes received" \
	    "$e: by the function"
	is "$(($(count_in "$T/scale.log" 'service=fn/py: started pid') - starts))" 1 \
	    "$e: after one start"
	wait_t 5 more_in "$T/run/logs/fn/py/current" 'hello.py: info: POST /three 200' \
	    $((handled + 2))
	is "$(($(count_in "$(outlog)" 'hello.py: info: POST /three 200') - handled))" 3 \
	    "$e: the handler's log counts exactly three invocations"

	# And once more.
	wait_t 20 scale_is fn/py sleeping
	ok $? "$e: it sleeps again"
	is "$(get py.fn.localhost /again)" 200 "$e: and wakes again"
	is "$(cat "$T/body")" "hello from python: GET /again, 0 bytes received" \
	    "$e: answered by it"

	stop_pid "$idle_pid"
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	is "$(s6_field "$SCAN/hk.fn.py.1" up)" false \
	    "$e: hk-scale stopped, s6 has it down"
	s6_scan_stop "$SCAN"
	ok $? "$e: s6-svscanctl -t stops the s6-svscan"
done
pg_missing_is_failure
done_testing
