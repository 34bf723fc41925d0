#!/bin/sh
# The race between a sleep and new requests: for 30 cycles, ten requests
# at once, sent from 40 ms before to 200 ms after hk-idle's deadline.
# Every one is answered 200 by the function: a stopping instance answers
# 503 (it takes 150 ms to exit), so a request forwarded to one would show.
# The service did go to sleep and wake during the run.
. tests/integration/lib.sh
. tests/integration/fn/idle-lib.sh

new_store sqlite race
idle_setup "$STORE"
# On SIGTERM the function answers 503 for 150 ms before it exits.  Each
# answer takes 30 ms, so that bursts sent before the deadline are still
# active when the fence comes, and meet it.
idle_apply "$(fn_svc r)
[services.r.environment]
IDLE_FN_TERM_DELAY = \"0.15\"
IDLE_FN_ANSWER_DELAY = \"0.03\""
ok $? "the application is applied"
start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"

since=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
python3 "$IFN/idle-race.py" "$RUN/idle.sock" "$PORT" r.fn.localhost fn/r \
    30 10 >"$T/race.out" 2>&1
head -n 1 "$T/race.out" >"$T/race.head"
n=$(awk '{ print $2 }' "$T/race.head")
good=$(awk '{ print $4 }' "$T/race.head")
ok "$([ "${n:-0}" -ge 300 ]; echo $?)" "at least 300 requests sent ($n)"
is "$good" "$n" "every request answered 200 by the function"
sed -n '2,11s/^/# /p' "$T/race.out"
is "$(grep -Ec '" [5][0-9][0-9] ' "$T/gw.log")" 0 "the gateway logged no 5xx"
stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
# hk-events wrote all it was sent before it exited.
slept=$(events_of HTTPIdleSleep fn/r --since "$since")
woke=$(events_of HTTPIdleWake fn/r)
met=$(count_in "$T/idle.log" 'service=fn/r: [0-9]+ active requests')
ok "$([ "$slept" -ge 3 ] && [ "$woke" -ge 3 ] && [ "$met" -ge 3 ]; echo $?)" \
    "bursts met the fence and the sleep ($met fences refused while active, $slept sleeps, $woke wakes)"
is "$(grep -Ec 'warning|Sanitizer|runtime error' "$T/idle.log")" 0 \
    "hk-idle logged no warning (nor a sanitizer report)"
done_testing
