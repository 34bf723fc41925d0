#!/bin/sh
# hk-events with its real senders, on SQLite and PostgreSQL: hk-scale's
# HTTPIdleWake and HTTPIdleSleep when it starts and stops a service, and
# the ManualStop, ManualStart and Applied events that hk writes itself,
# all in "hk-events list" (and through "hk events", which execs it).
. tests/integration/lib.sh
. tests/integration/lib/scale.sh
. tests/integration/lib/ev.sh

for engine in $(engines); do
	new_store "$engine" sources
	scale_operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	{
		printf 'schema_version = 1\nname = "fn"\n'
		fn_service web '[services.web.serverless]'
	} >"$T/app.toml"
	rm -f "$T/events.log" "$T/scale.log"
	ev_start
	ok $? "$engine: hk-events is ready"
	hk apply "$T/app.toml" >/dev/null
	daemon scale hk-scale -g 2
	ok $? "$engine: hk-scale is ready"
	wait_for 10 state_is fn/web running
	ok $? "$engine: the new service passed its readiness gate"
	is "$(ctl '{"op":"sleep","service":"fn/web"}')" '{"ok":true}' \
	    "$engine: hk-scale puts it to sleep"
	is "$(ctl '{"op":"wake","service":"fn/web","reason":"request"}')" \
	    '{"ok":true}' "$engine: and wakes it"
	wait_for 10 rows_are 1 events --kind HTTPIdleWake --service fn/web
	ok $? "$engine: hk-scale's HTTPIdleWake is in the store"
	is "$(nrows events --kind HTTPIdleSleep --service fn/web)" 1 \
	    "$engine: and its HTTPIdleSleep"
	like "$(hk-events list --kind HTTPIdleWake | cut -f2-)" \
	    '^HTTPIdleWake	fn/web	port_ms=[0-9]+ readiness_ms=[0-9]+ reason=request spawn_ms=[0-9]+$' \
	    "$engine: with its detail"
	grep -q 'hk-events: info: event=HTTPIdleSleep service=fn/web' \
	    "$T/events.log"
	ok $? "$engine: hk-events logged them on stderr"

	hk stop fn/web >/dev/null
	hk start fn/web >/dev/null
	is "$(hk-events list --service fn/web | cut -f2 | tr '\n' ' ')" \
	    "Applied HTTPIdleSleep HTTPIdleWake ManualStop ManualStart " \
	    "$engine: hk stop and hk start write ManualStop and ManualStart"
	is "$(hk events list --kind Applied | cut -f2-)" \
	    "Applied	fn/web	revision=1" \
	    "$engine: hk apply's Applied, through hk events"
	is "$(env -u HAKOPOD_CONFIG hk -f "$T/hakopod.toml" events list \
	    --kind Applied | cut -f2)" Applied \
	    "$engine: hk -f passes its configuration on to hk-events"
	run hk events list --nope
	is "$rc" 64 "$engine: hk events passes its arguments on"

	stop_pid "$scale_pid"
	stop_pid "$events_pid"
done
pg_missing_is_failure
done_testing
