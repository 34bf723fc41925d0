#!/bin/sh
# The wake of a suspended Node function (idle_action = "suspend", the
# exec backend), under each freezer this host gives (signal, cgroup2):
# a Node process of several threads (V8's workers) is frozen whole and
# thawed by a wake; "ready" is broadcast with the same endpoint; the
# same process answers, each request once, and keeps its pid; the
# HTTPIdleWake event says resumed.  SQLite only: the store plays no part
# in a thaw (2001 and 3005 run both).
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

command -v node >/dev/null || { ok 1 "node is installed"; done_testing; }

for mode in signal cgroup2; do
	new_store sqlite "wake$mode"
	scale_operator "$T/hakopod.toml" "$STORE" "freezer = \"$mode\""
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.node]
command = ["node", "$FN/wake-fn.js"]
public = true

[services.node.serverless]
idle_action = "suspend"
suspend_max_seconds = 604800
APP
	hk apply "$T/app.toml" >/dev/null
	events "$T/events.out"
	rm -f "$T/scale.log"
	daemon scale hk-scale -g 2
	ok $? "$mode: hk-scale is ready"
	subscribe "$T/sub.out"
	wait_for 10 seen "$T/sub.out" '"op":"ready".*"service":"fn/node"'
	ok $? "$mode: the Node function passes its readiness gate"
	pid=$(status_of fn/node pid)
	ep=$(instance fn/node | cut -d' ' -f2)
	ntasks=$(ls "/proc/$pid/task" | wc -l)
	ok $([ "$ntasks" -gt 1 ]; echo $?) \
	    "$mode: a Node process of several threads ($ntasks)"

	is "$(ctl '{"op":"sleep","service":"fn/node"}')" '{"ok":true}' \
	    "$mode: sleep answers ok once it is frozen"
	is "$(status_of fn/node state)" suspended "$mode: it is suspended"
	wait_for 5 seen "$T/sub.out" '"op":"down","reason":"suspended","service":"fn/node"'
	ok $? "$mode: down (suspended) is broadcast"
	readies=$(count "$T/sub.out" '"op":"ready".*"service":"fn/node"')
	wakes=$(count "$T/events.out" '"kind":"HTTPIdleWake".*"service":"fn/node"')

	is "$(ctl '{"op":"wake","service":"fn/node"}')" '{"ok":true}' \
	    "$mode: a wake of the frozen process is accepted"
	wait_for 5 more_than "$readies" "$T/sub.out" \
	    '"op":"ready".*"service":"fn/node"'
	ok $? "$mode: ready is broadcast"
	like "$(grep '"op":"ready".*"service":"fn/node"' "$T/sub.out" | tail -1)" \
	    "\"endpoint\":\"$ep\"" "$mode: with the same endpoint ($ep)"
	b1=$(get "http://$ep/")
	b2=$(get "http://$ep/")
	like "$b1" "^pid=$pid count=[0-9]+\$" \
	    "$mode: the same process answers ($b1)"
	is "${b2##*=}" "$((${b1##*=} + 1))" \
	    "$mode: each request is answered once ($b2 after it)"
	is "$(status_of fn/node pid)" "$pid" "$mode: it keeps its pid"
	wait_for 5 more_than "$wakes" "$T/events.out" \
	    '"kind":"HTTPIdleWake".*"service":"fn/node"'
	like "$(grep '"kind":"HTTPIdleWake"' "$T/events.out" | tail -1)" \
	    '"resumed":true' "$mode: HTTPIdleWake says resumed"

	kill -TERM "$scale_pid"
	wait_for 10 dead "$scale_pid"
	ok $? "$mode: hk-scale stops"
	wait "$scale_pid"
	dead "$pid"
	ok $? "$mode: and the Node process with it"
	kill -TERM "$sub_pid" 2>/dev/null
done

done_testing
