#!/bin/sh
# Restarts: hk-idle, then hk-scale, then hk-activate killed with SIGKILL
# and started again; each time the service still goes to sleep after its
# idle period and still wakes on a request.  With hk-idle absent requests
# are answered and nothing sleeps, and a fence granted while it was away
# is completed when it starts; with the gateway absent nothing sleeps, and
# hk-idle says so once.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

new_store sqlite restarts
idle_setup "$STORE"
idle_apply "$(fn_svc a)"
ok $? "the application is applied"
start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"

# wake: a request answered 200 by the function; its pid in $pid.
wake() {
	pid=
	[ "$(get a.fn.localhost /)" = 200 ] || return 1
	pid=$(sed -n 's/^idle-fn pid=//p' "$T/body")
	[ -n "$pid" ]
}

# killed NAME: SIGKILL to ${NAME}_pid, waited for.
killed() {
	eval "_p=\$${1}_pid"
	kill -KILL "$_p"
	wait "$_p" 2>/dev/null
	gone "$_p"
}

wait_t 30 scale_is fn/a running
ok $? "the service runs (its readiness gate)"
first=$(scale_pid fn/a)
wait_t 5 asleep fn/a "$first"
ok $? "the service goes to sleep"

wake
ok $? "a request wakes it (pid $pid)"
killed idle
start_idle
ok $? "hk-idle killed with SIGKILL and started again"
wait_t 5 asleep fn/a "$pid"
ok $? "the service still goes to sleep"
wake
ok $? "and wakes on a request"

killed scale
ok $? "hk-scale killed with SIGKILL (the instance $pid lives on: $(alive "$pid" && echo yes))"
before=$(count_in "$T/idle.log" 'scale.sock: subscribed')
start_scale
ok $? "hk-scale started again"
wait_t 5 more_in "$T/idle.log" 'scale.sock: subscribed' "$before"
ok $? "hk-idle subscribes again"
wait_t 5 asleep fn/a "$pid"
ok $? "the service adopted by hk-scale goes to sleep"
wake
ok $? "and wakes on a request"

killed gw
start_gw
ok $? "hk-activate killed with SIGKILL and started again"
gw_start=$(date +%s%3N)
wait_t 5 asleep fn/a "$pid"
ok $? "the service still goes to sleep"
slept=$(date +%s%3N)
ok "$([ $((slept - gw_start)) -ge 250 ]; echo $?)" \
    "not before an idle period counted from the gateway's start ($((slept - gw_start)) ms)"
wake
ok $? "and wakes on a request"

stop_pid "$idle_pid"
wake
ok $? "hk-idle absent: a request is answered"
stays_for 1200 running fn/a "$pid"
ok $? "and the service stays awake (four idle periods)"
wake
ok $? "requests still answered"

# As if hk-idle had died between the gateway's fence and its sleep.
is "$(ctl activate.sock '{"op":"fence","service":"fn/a","idle_seconds":0,"idle_ms":0}')" \
    '{"ok":true}' "the gateway fences the service while hk-idle is absent"
start_idle
ok $? "hk-idle starts"
wait_t 5 asleep fn/a "$pid"
ok $? "and completes the sleep the gateway granted"
like "$(cat "$T/idle.log")" 'service=fn/a: fenced by the gateway: sleeping' \
    "saying so"
wake
ok $? "a request wakes it"
stop_pid "$idle_pid"

stop_pid "$gw_pid"
# Counted from here: an earlier hk-idle may have met the gateway away too
# (its SIGKILL above, if a fence fell in the gap).
unavailable='warning: activate.sock: the gateway is unavailable'
before=$(count_in "$T/idle.log" "$unavailable")
start_idle
ok $? "hk-idle started while the gateway is absent"
stays_for 1200 running fn/a "$pid"
ok $? "nothing sleeps without the gateway"
is "$(($(count_in "$T/idle.log" "$unavailable") - before))" 1 \
    "hk-idle said so once"
start_gw
ok $? "the gateway is back"
wait_t 5 asleep fn/a "$pid"
ok $? "the service goes to sleep again"
like "$(cat "$T/idle.log")" 'info: activate.sock: the gateway answers again' \
    "hk-idle says the gateway answers"
wake
ok $? "and wakes on a request"

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/idle.log")" 0 \
    "no sanitizer report from hk-idle"
done_testing
