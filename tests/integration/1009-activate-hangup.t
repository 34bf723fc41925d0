#!/bin/sh
# A client that hangs up while its request is with the backend (or parked)
# frees its concurrency slots at once: the gateway sees the EOF, closes
# the backend connection, and records the request as client_closed (in
# each store).  No client socket is left in CLOSE-WAIT, and new requests
# are served rather than refused with 429.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py

active() {
	gw_ctl '{"op":"status"}' "services.$1.active"
}
active_is() {
	[ "$(active "$1")" = "$2" ]
}
close_wait() {	# client sockets of the gateway in CLOSE-WAIT
	ss -Htn state close-wait "( sport = :$GW_PORT )" | wc -l | tr -d ' '
}
backend_conns() {	# the gateway's connections to fn/web's instance
	_ep=$(gw_ctl '{"op":"status"}' services.fn/web.endpoint)
	ss -Htnp state established "( dport = :${_ep##*:} )" |
	    grep -c "pid=$gw_pid,"
}
closed() {	# PATH: its records with the outcome client_closed
	requests_json | python3 -c '
import json, sys
print(sum(1 for r in json.load(sys.stdin)
          if r["path"] == sys.argv[1] and r["outcome"] == "client_closed"))
' "$1"
}
closed_reach() {	# N: at least N such records in all
	[ "$(requests_json | grep -c client_closed)" -ge "$1" ]
}

cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$BE"]
public = true
[services.web.environment]
GW_LOG = "$W/web.inv"
[services.web.serverless]
max_concurrency = 4
request_timeout_seconds = 60

[services.cold]
command = ["sh", "$GW_FN/held", "$T/cold", "python3", "$GW_FN/echo-cl.py"]
public = true
[services.cold.serverless]
max_concurrency = 2
APP

pg_missing_is_failure
for engine in $(engines); do
	rm -rf "$T/run" "$T"/*.log "$W"/*.inv "$T"/state.db* "$T"/cold.*
	new_store "$engine" hangup
	GW_STATE=$STORE gw_config
	hk apply "$T/app.toml" >/dev/null
	e2e_start
	ok $? "$engine: hk-events, hk-scale and hk-activate are up"
	wait_t 20 state_is fn/web running
	ok $? "$engine: fn/web running"
	put_to_sleep fn/cold
	ok $? "$engine: fn/cold passed its readiness gate and sleeps"
	touch "$T/cold.hold"	# its next start waits for $T/cold.go

	for i in 1 2 3 4; do
		curl -s -o /dev/null --max-time 30 \
		    -H 'Host: web.fn.localhost' "$GW_URL/slow/20000" &
		eval "c$i=\$!"
	done
	wait_t 10 active_is fn/web 4
	ok $? "$engine: four slow requests hold fn/web's four slots"
	is "$(gw_code web.fn.localhost /x)" 429 "$engine: a fifth gets 429"
	wait_t 10 sh -c \
	    "[ \$(grep -c 'invocation GET /slow' '$W/web.inv') -ge 4 ]"
	ok $? "$engine: the backend is working on all four"
	kill -TERM $c1 $c2 $c3 $c4
	wait $c1 $c2 $c3 $c4 2>/dev/null
	wait_t 10 active_is fn/web 0
	ok $? "$engine: the clients hang up: their slots are free at once"
	is "$(close_wait)" 0 \
	    "$engine: no client socket of the gateway in CLOSE-WAIT"
	is "$(backend_conns)" 0 "$engine: their backend connections are closed"
	is "$(gw_code web.fn.localhost /x)" 200 \
	    "$engine: a new request is served, not 429"
	wait_t 5 closed_reach 4
	is "$(closed /slow/20000)" 4 \
	    "$engine: each recorded with its outcome, client_closed"

	# Parked requests whose clients leave while the service starts (held
	# until they have).
	curl -s -o /dev/null --max-time 30 -H 'Host: cold.fn.localhost' \
	    "$GW_URL/a" &
	p1=$!
	curl -s -o /dev/null --max-time 30 -H 'Host: cold.fn.localhost' \
	    "$GW_URL/b" &
	p2=$!
	wait_t 5 active_is fn/cold 2
	ok $? "$engine: two parked requests hold fn/cold's two slots"
	kill -TERM $p1 $p2
	wait $p1 $p2 2>/dev/null
	wait_t 10 active_is fn/cold 0
	ok $? "$engine: their clients hang up: free while it still starts"
	is "$(gw_state fn/cold)" starting "$engine: fn/cold is still starting"
	touch "$T/cold.go"
	is "$(gw_code cold.fn.localhost /c)" 200 \
	    "$engine: a new request waits for it: 200"
	wait_t 5 closed_reach 6
	is "$(closed /a)$(closed /b)" 11 \
	    "$engine: the parked ones are recorded as client_closed"

	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
done

done_testing
