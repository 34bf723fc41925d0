#!/bin/sh
# idle_action = "suspend" with the s6 backend, under a real s6-svscan,
# with hk-idle, hk-activate and hk-events, on SQLite.  fn/fz runs a shell
# that, on SIGTERM, stops its child (the function) and waits for it, as a
# process manager does.  Woken (200), then idle: frozen, its process
# group stopped (/proc/PID/stat: T), hk-scale says "suspended",
# HTTPIdleSleep has action "suspend".  A request thaws it: 200 from the
# same process, no new start, HTTPIdleWake with resumed true.  hk-scale
# killed with SIGKILL while it is frozen: the next adopts it still
# frozen, and the next request thaws it.  hk stop of the frozen service
# ends it at once, its child too, not after the grace period (5 s).
# suspend_max_seconds over: stopped for real, HTTPSuspendExpired.
# SIGTERM of hk-scale brings a frozen service down with it.
# time_unit_ms = 10: idle_seconds = 50 lasts 500 ms, suspend_max_seconds
# = 100 1 s; fn/fz's (604800) outlasts any run, however slow.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/s6.sh

s6_require

# pstate PID: its state letter in /proc/PID/stat
pstate() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
stopped() { [ "$(pstate "$1")" = T ]; }
# frozen SERVICE PID...: hk-scale says suspended and each PID is stopped
frozen() {
	_s=$1
	shift
	scale_is "fn/$_s" suspended || return 1
	for _p; do
		stopped "$_p" || return 1
	done
}
# ev KIND SERVICE EXPR: of its last such event, python on e
ev() {
	hk-events list --json -n 0 --kind "$1" --service "fn/$2" |
	    python3 -c 'import json, sys
l = json.load(sys.stdin)
e = l[-1] if l else {"detail": {}}
print(eval(sys.argv[1]))' "$3"
}
starts() { count_in "$T/scale.log" "service=fn/$1: started pid"; }
wakes() { events_of HTTPIdleWake "fn/$1"; }
# s6_saw SERVICEDIR: what s6-svstat says of it, for the reader of a
# failed check
s6_saw() {
	diag "s6-svstat $1: $(s6-svstat "$1" 2>&1)"
}
# fz_down: s6 has fn/fz down (s6-supervise writes its status a moment
# after the process ends)
fz_down() { [ "$(s6_field "$SCAN/hk.fn.fz.1" up)" = false ]; }
body_pid() { sed -n 's/^idle-fn pid=//p' "$T/body"; }

new_store sqlite s6suspend
SCAN=$T/scan
idle_setup "$STORE" "s6_scandir = \"$SCAN\""
s6_scan_start "$SCAN"
ok $? "an s6-svscan runs on the scan directory"
app=$(sed "s|@IFN@|$IFN|" <<'APP'

[services.fz]
command = ["sh", "-c", "trap 'kill $c; wait $c; exit 0' TERM; python3 @IFN@/idle-fn.py & c=$!; wait $c"]
backend = "s6"
public = true
[services.fz.serverless]
idle_seconds = 50
idle_action = "suspend"
suspend_max_seconds = 604800

[services.ex]
command = ["python3", "@IFN@/idle-fn.py"]
backend = "s6"
public = true
[services.ex.serverless]
idle_seconds = 50
idle_action = "suspend"
suspend_max_seconds = 100
APP
)
idle_apply "$app"
ok $? "idle_action = \"suspend\" with backend \"s6\" is applied"
start_events && daemon scale hk-scale -v -g 5 && start_gw && start_idle
ok $? "hk-events, hk-scale (grace 5 s), hk-activate and hk-idle are ready"

# Woken, then frozen when idle.
is "$(get fz.fn.localhost /one)" 200 "a request to fn/fz is answered"
pid=$(body_pid)
sh=$(scale_pid fn/fz)
is "$(s6_field "$SCAN/hk.fn.fz.1" pid)" "$sh" \
    "s6 runs its shell (pid $sh), the function is pid $pid"
wait_t 10 frozen fz "$sh" "$pid"
ok $? "idle: hk-scale says suspended, shell and function stopped (T)"
is "$(ps_state fz)" suspended "hk ps says suspended"
is "$(s6_field "$SCAN/hk.fn.fz.1" up)" true "s6 still has it up"
wait_t 5 events_reach 1 HTTPIdleSleep fn/fz
is "$(ev HTTPIdleSleep fz 'e["detail"].get("action")')" suspend \
    "HTTPIdleSleep says action suspend"

# A request thaws it: the same process, no start.  Its HTTPIdleWake is
# the one after those there before it.
n=$(starts fz)
w=$(wakes fz)
is "$(get fz.fn.localhost /two)" 200 "a request to the frozen service is answered"
is "$(body_pid)" "$pid" "by the same process"
is "$(starts fz)" "$n" "with no new start"
wait_t 5 events_reach $((w + 1)) HTTPIdleWake fn/fz
is "$(ev HTTPIdleWake fz 'e["detail"].get("resumed")')" True \
    "HTTPIdleWake says resumed"
diag "thawed: readiness_ms $(ev HTTPIdleWake fz 'e["detail"].get("readiness_ms")')"

# hk-scale killed while it is frozen: adopted frozen, thawed by a request.
wait_t 10 frozen fz "$sh" "$pid"
ok $? "idle again: frozen again"
# A request after the restart waits for the gateway's next subscription:
# one sent before it is answered 503 once the gateway's grace (5 s) is
# over.
subs=$(count_in "$T/gw.log" 'scale.sock: subscribed')
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
daemon scale hk-scale -v -g 5
ok $? "hk-scale killed with SIGKILL starts again"
grep -q "service=fn/fz: adopted pid $sh, frozen, at 127.0.0.1:" "$T/scale.log"
ok $? "it adopts the s6 service, frozen"
frozen fz "$sh" "$pid"
ok $? "suspended still, and still stopped"
wait_t 5 more_in "$T/gw.log" 'scale.sock: subscribed' "$subs"
wait_t 5 gw_is fn/fz sleeping
is "$(get fz.fn.localhost /three)" 200 "the next request is answered"
is "$(body_pid)" "$pid" "by the same process: thawed"

# hk stop of a frozen service: it ends at once, its child too.
wait_t 10 frozen fz "$sh" "$pid"
ok $? "idle: frozen again"
t0=$(date +%s%3N)
run hk stop fn/fz
is "$rc" 0 "hk stop of the frozen service"
wait_t 10 sh -c "! kill -0 $sh 2>/dev/null || grep -q ') Z' /proc/$sh/stat" &&
    wait_t 10 gone "$pid"
ok $? "its shell and its function end"
ms=$(($(date +%s%3N) - t0))
# Frozen and not continued, the shell would wait, stopped, for its
# child until s6-supervise's kill at the end of the grace period (5 s,
# timeout-kill): an end before it is the behaviour, whatever the load.
ok "$([ "$ms" -lt 5000 ]; echo $?)" \
    "promptly: $ms ms, before the grace period's kill at 5 s"
diag "hk stop of a frozen s6 service: $ms ms"
# hk-scale hears of the end from s6 (s6-svwait -D), after s6-supervise
# has written its status: once it says stopped, s6 has it down.
wait_t 2 scale_is fn/fz stopped
ok $? "hk-scale says stopped"
wait_t 2 fz_down
ok $? "s6 has it down" || s6_saw "$SCAN/hk.fn.fz.1"

# suspend_max_seconds over: stopped for real.  Its time frozen (1 s) is
# not one to catch it in: what says it was frozen is hk-scale's log and
# the event, after the fact (the one after those of its earlier instances).
x=$(events_of HTTPSuspendExpired fn/ex)
is "$(get ex.fn.localhost /)" 200 "fn/ex is answered"
ex=$(body_pid)
wait_t 10 grep -q "service=fn/ex: suspended for 100 s: stopping pid $ex\$" \
    "$T/scale.log"
ok $? "idle: fn/ex frozen, then stopped after suspend_max_seconds (pid $ex)"
wait_t 10 gone "$ex"
ok $? "after suspend_max_seconds its process ends"
wait_t 5 scale_is fn/ex sleeping
ok $? "and it sleeps"
wait_t 5 events_reach $((x + 1)) HTTPSuspendExpired fn/ex
ok $? "HTTPSuspendExpired recorded"
sms=$(ev HTTPSuspendExpired ex 'e["detail"].get("suspended_ms")')
ok "$([ "${sms:-0}" -ge 1000 ] 2>/dev/null; echo $?)" \
    "after it was frozen for suspend_max_seconds: $sms ms, 1000 or more"

# SIGTERM while fn/fz is frozen: it goes down with hk-scale.
run hk start fn/fz
is "$rc" 0 "hk start of fn/fz"
is "$(get fz.fn.localhost /four)" 200 "it is answered"
pid=$(body_pid)
sh=$(scale_pid fn/fz)
wait_t 10 frozen fz "$sh" "$pid"
ok $? "idle: frozen"
stop_pid "$idle_pid"
stop_pid "$gw_pid"
kill -TERM "$scale_pid"
wait "$scale_pid"
is "$?" 0 "hk-scale stops cleanly on SIGTERM"
gone "$pid" && gone "$sh"
ok $? "and the frozen service with it, its child too"
wait_t 2 fz_down
ok $? "s6 has it down" || s6_saw "$SCAN/hk.fn.fz.1"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "hk-scale logged no sanitizer report"
stop_pid "$events_pid"
s6_scan_stop "$SCAN"
ok $? "s6-svscanctl -t stops the s6-svscan"
done_testing
