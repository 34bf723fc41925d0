#!/bin/sh
# End to end, the framework starters of hk new (FastAPI under uvicorn,
# Express) with every daemon, on SQLite and PostgreSQL: each goes to
# sleep after its readiness gate, is woken through the gateway by three
# simultaneous POSTs that its handler runs exactly three times (its log
# lines counted) in one start, and sleeps again after its idle period.
# time_unit_ms = 10: idle_seconds = 30 lasts 300 ms.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

py=$(runuser -u nobody -- sh -c 'command -v python3')
runuser -u nobody -- "${py:-python3}" -c 'import fastapi, uvicorn' \
    >/dev/null 2>&1
ok $? "python3 ($py) has FastAPI and uvicorn (python3-fastapi, python3-uvicorn)"
NM=$HK_TOP/tests/npm/node_modules
[ -f "$NM/express/package.json" ] && command -v node >/dev/null
ok $? "node and Express in tests/npm (scripts/deps) are there"

# starter KIND NAME ARGS...: hk new into $T/$e-KIND, its idle period cut
# to 30 (300 ms), applied.  Express gets the tree's node_modules, as
# "npm install" in its folder would.
starter() {
	_d=$T/$e-$1
	_n=$2
	shift 2
	hk new "$@" "$_n" "$_d" >/dev/null &&
	    sed -i 's/^idle_seconds = .*/idle_seconds = 30/' "$_d/hk.toml" &&
	    { [ ! -f "$_d/package.json" ] || cp -R "$NM" "$_d/node_modules"; } &&
	    hk apply "$_d/hk.toml" >"$T/apply.out" 2>&1
}

# post3 NAME: three simultaneous POSTs; prints their status codes.
post3() {
	for _i in 1 2 3; do
		curl -sS -o "$T/p$_i" -w '%{http_code}' --max-time 30 \
		    -H "Host: $1.$1.localhost" -d "n=$_i" "$URL/three" \
		    >"$T/p$_i.code" &
		eval "_p$_i=\$!"
	done
	# shellcheck disable=SC2154
	wait "$_p1" "$_p2" "$_p3"
	cat "$T/p1.code" "$T/p2.code" "$T/p3.code"
}

# runs_of NAME: the handler's lines for the three POSTs, as hk logs shows
# the service's own output
runs_of() {
	hk logs -n all "$1/$1" 2>/dev/null | grep -c -- " $1: POST /three 200\$"
}

for e in $(engines); do
	new_store "$e" fw || { ok 1 "$e: store"; continue; }
	rm -f "$T"/*.log
	idle_setup "$STORE" "max_concurrent_starts = 4"
	starter fastapi fa --framework fastapi python
	ok $? "$e: hk new --framework fastapi python fa, applied"
	starter express ex --framework express node
	ok $? "$e: hk new --framework express node ex, applied"
	start_all
	ok $? "$e: hk-events, hk-scale, hk-activate and hk-idle are ready"
	for n in fa ex; do
		wait_t 20 eval "grep -q 'service=$n/$n: ready at' '$T/scale.log' &&
		    scale_is $n/$n sleeping && gw_is $n/$n sleeping"
		ok $? "$e: $n passed its readiness gate and went to sleep"
		starts=$(count_in "$T/scale.log" "service=$n/$n: started pid")
		runs=$(runs_of $n)
		is "$(post3 $n | tr -d '\n')" 200200200 \
		    "$e: $n: three simultaneous POSTs wake it and are answered"
		is "$(cat "$T/p1" "$T/p2" "$T/p3" | sort -u)" \
		    "hello from $n: POST /three, 3 bytes received" \
		    "$e: $n: by its handler"
		wait_t 5 eval "[ \$(runs_of $n) -ge $((runs + 3)) ]"
		is "$(($(runs_of $n) - runs))" \
		    3 "$e: $n: hk logs shows exactly three invocations"
		is "$(($(count_in "$T/scale.log" "service=$n/$n: started pid") -
		    starts))" 1 "$e: $n: in one start"
		# Its pid from the log: by now it may have gone to sleep.
		pid=$(sed -n "s|.*service=$n/$n: started pid \([0-9]*\) .*|\1|p" \
		    "$T/scale.log" | tail -1)
		like "$pid" '^[0-9]+$' "$e: $n: the instance that answered (pid $pid)"
		wait_t 10 asleep $n/$n "$pid"
		ok $? "$e: $n: and it sleeps again after its idle period"
		wait_t 5 events_reach 2 HTTPIdleSleep $n/$n
		ok $? "$e: $n: HTTPIdleSleep recorded for both sleeps"
	done
	for d in idle gw scale events; do
		eval "stop_pid \$${d}_pid"
	done
done
pg_missing_is_failure
done_testing
