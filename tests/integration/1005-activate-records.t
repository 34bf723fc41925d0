#!/bin/sh
# The gateway's request records reach hk-events intact, on SQLite and
# PostgreSQL: a path with a quote and a backslash comes back byte for byte
# (the gateway packs it itself), the query is gone, an unknown host
# is recorded without a service; request_log = false, applied by SIGHUP,
# stops the records, and true brings them back.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

# nrec: request records in the store.
nrec() {
	hk-events requests | wc -l
}

# hup_gw: SIGHUP to the gateway, and wait until it has reloaded.
hup_gw() {
	_n=$(count 'routes:' "$T/gw.log")
	kill -HUP "$gw_pid"
	wait_for 5 sh -c "[ \$(grep -c 'routes:' '$T/gw.log') -gt $_n ]"
}

for engine in $(engines); do
	rm -rf "$T/run" "$T"/*.log "$T"/state.db*
	new_store "$engine" records
	GW_STATE=$STORE gw_config
	daemon events hk-events -v && gw_start
	ok $? "$engine: hk-events and hk-activate are up"

	is "$(gw_code nowhere.example /plain)" 404 "$engine: an unknown host"
	is "$(gw_code nowhere.example '/q"uote' --path-as-is)" 404 \
	    "$engine: a path with a quote"
	is "$(gw_code nowhere.example '/back\slash?secret=1' --path-as-is)" \
	    404 "$engine: a path with a backslash and a query"
	wait_t 5 sh -c '[ "$(hk-events requests | wc -l)" -ge 3 ]'
	ok $? "$engine: three records arrive"
	is "$(hk-events requests --json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    print(r["path"], r["host"], r["service"], r["status"], r["method"])
' | sort)" "/back\\slash nowhere.example None 404 GET
/plain nowhere.example None 404 GET
/q\"uote nowhere.example None 404 GET" \
	    "$engine: paths byte for byte, no query, no service"
	is "$(gw_ctl '{"op":"status"}' dropped_records)" 0 \
	    "$engine: nothing dropped"

	echo 'request_log = false' >>"$T/hakopod.toml"
	hup_gw
	before=$(nrec)
	gw_code nowhere.example /off1 >/dev/null
	gw_code nowhere.example /off2 >/dev/null
	sleep 0.5	# records wait at most 100 ms before they are sent
	is "$(nrec)" "$before" "$engine: request_log = false: no record"

	sed -i 's/^request_log = false$/request_log = true/' "$T/hakopod.toml"
	hup_gw
	gw_code nowhere.example /on >/dev/null
	wait_t 5 sh -c "hk-events requests | grep -q '	/on	'"
	ok $? "$engine: request_log = true again: recorded"
	run hk-events requests
	echo "$out" | grep -q '/off'
	[ $? -ne 0 ]
	ok $? "$engine: the requests made while off are not there"

	stop_pid "$gw_pid"
	stop_pid "$events_pid"
done
done_testing
