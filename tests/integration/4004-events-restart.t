#!/bin/sh
# hk-events killed and restarted, on SQLite and PostgreSQL: nothing it had
# written is lost; a sender that keeps sending meanwhile is never blocked
# (it counts its drops, as lib/evsink.c does); the restarted daemon takes
# the socket back and records again.
. tests/integration/lib.sh
. tests/integration/lib/ev.sh

for engine in $(engines); do
	new_store "$engine" restart
	ev_config "$STORE"
	ev_start
	ok $? "$engine: hk-events is ready"
	ev_send requests 500 >/dev/null
	ev_send event HTTPIdleWake fn/py >/dev/null
	wait_for 10 rows_are 500 requests
	ok $? "$engine: 500 requests are in the store"
	wait_for 5 rows_are 1 events
	ok $? "$engine: and the event"

	# A sender blasting across the kill and the restart: 20,000 records
	# a second.
	ev_send blast 6000 3 >"$T/blast.out" &
	blast_pid=$!
	sleep 0.5
	kill -KILL "$events_pid"
	wait "$events_pid" 2>/dev/null
	is "$(nrows events)" 1 "$engine: after SIGKILL the event is still there"
	before=$(nrows requests)
	test "$before" -ge 500
	ok $? "$engine: and the 500 requests ($before rows)"
	sleep 0.5
	ev_start
	ok $? "$engine: hk-events restarts on the socket left behind"
	wait "$blast_pid"
	read -r _ sent _ dropped _ ms _ <"$T/blast.out"
	diag "$engine: the sender: $(cat "$T/blast.out")"
	test "$ms" -lt 4500
	ok $? "$engine: the sender was never blocked (3 s of sending)"
	test "$dropped" -gt 0 && test "$sent" -gt 0
	ok $? "$engine: it counted drops while hk-events was down"
	ev_send requests 50 fn/after >/dev/null
	wait_for 10 rows_are 50 requests --service fn/after
	ok $? "$engine: the restarted hk-events records again"
	stop_pid "$events_pid"
	after=$(nrows requests)
	test "$after" -ge $((before + 50)) &&
	    test "$after" -le $((500 + sent * 10 + 50))
	ok $? "$engine: rows only grew ($before, then $after)"
done
pg_missing_is_failure
done_testing
