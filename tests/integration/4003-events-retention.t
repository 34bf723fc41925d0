#!/bin/sh
# hk-events retention, on SQLite and PostgreSQL: rows older than
# events_max_age_days / requests_max_age_days and beyond events_max_rows /
# requests_max_rows (the newest are kept) are deleted at start, every
# minute and on SIGHUP, which also applies changed retention keys.  Request
# records go by whole batches (a batch is what one write took): each send
# below waits until it is in, so that it is a batch of its own.
. tests/integration/lib.sh
. tests/integration/lib/ev.sh

DAY=86400000
retention() {	# retention EVENTS_ROWS REQUESTS_ROWS
	ev_config "$STORE" "events_max_rows = $1" "events_max_age_days = 30" \
	    "requests_max_rows = $2" "requests_max_age_days = 7"
}

for engine in $(engines); do
	new_store "$engine" retention
	retention 5 20
	rm -f "$T/events.log"
	ev_start
	ok $? "$engine: hk-events is ready"
	for i in 1 2 3; do
		ev_send event Applied fn/old $((40 * DAY)) >/dev/null
	done
	for i in 1 2 3 4 5 6 7 8; do
		ev_send event ManualStart fn/py 0 "{\"n\":$i}" >/dev/null
	done
	in=0
	for batch in "10 fn/old 200 $((8 * DAY))" "10 fn/py 200" \
	    "10 fn/py 200" "10 fn/py 200" "5 fn/recent 200 $((6 * DAY))"; do
		# shellcheck disable=SC2086 # the batch's words are arguments
		ev_send requests $batch >/dev/null
		in=$((in + ${batch%% *}))
		wait_for 10 rows_are $in requests
	done
	wait_for 10 rows_are 11 events
	ok $? "$engine: 11 events are in (3 of them 40 days old)"
	wait_for 10 rows_are 45 requests
	ok $? "$engine: 45 requests are in, 5 batches (10 of them 8 days old)"

	kill -HUP "$events_pid"
	wait_for 10 rows_are 5 events
	ok $? "$engine: SIGHUP prunes events to events_max_rows"
	is "$(nrows events --service fn/old)" 0 \
	    "$engine: the old events are gone"
	is "$(hk-events list | cut -f4 | tr '\n' ' ')" \
	    "n=4 n=5 n=6 n=7 n=8 " "$engine: the newest events are kept"
	# 20 newest ids: ids 26 to 45, in the batches of ids 21 to 45.
	wait_for 10 rows_are 25 requests
	ok $? "$engine: requests are pruned to requests_max_rows, by batch"
	is "$(nrows requests --service fn/old)" 0 \
	    "$engine: requests older than requests_max_age_days are gone"
	is "$(nrows requests --service fn/recent)" 5 \
	    "$engine: the newest are kept, even 6 days old"
	wait_for 5 grep -q 'retention: 6 events and 20 requests deleted' \
	    "$T/events.log"
	ok $? "$engine: retention says what it deleted"

	retention 2 20
	kill -HUP "$events_pid"
	wait_for 10 rows_are 2 events
	ok $? "$engine: a reload applies a new events_max_rows"
	stop_pid "$events_pid"

	retention 1 3
	ev_start
	ok $? "$engine: hk-events restarts"
	wait_for 10 rows_are 1 events
	ok $? "$engine: retention runs at start (events)"
	# The newest 3 ids are in the last batch, of 5.
	wait_for 10 rows_are 5 requests
	ok $? "$engine: retention runs at start (requests)"
	stop_pid "$events_pid"
done
pg_missing_is_failure
done_testing
