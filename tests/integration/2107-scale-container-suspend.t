#!/bin/sh
# idle_action = "suspend" with the container backend, against the suite's
# podman API service (its own when run alone), or Docker's engine when
# 2114 runs this with CT_ENGINE=docker, and the test image: an idle
# container service is frozen, not stopped (its cgroup frozen here, the
# engine being local: 2130 looks closer; hk-scale "suspended",
# HTTPIdleSleep's action "suspend"; it does not answer its endpoint); a
# request through the gateway thaws it: 200 from the same container, no
# new start, HTTPIdleWake resumed.
# hk-scale killed with SIGKILL while it is suspended: the restart adopts
# the paused container (still paused, suspended), the next request thaws
# it; a paused container of the installation that no row claims is
# removed; one the earlier run's row says suspended but that runs (a
# thaw behind its back) is frozen again and adopted.  hk stop of a
# suspended service removes its container well within the grace period
# (10 s here), and so does SIGTERM of hk-scale; suspend_max_seconds over,
# the container is removed and the service sleeps.  time_unit_ms = 10: idle_seconds = 30 lasts 300 ms.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

GRACE=10
start_scale() {
	daemon scale hk-scale -v -g "$GRACE"
}

STORE=sqlite://$T/state.db
idle_setup "$STORE" "container_engine = \"$U\"
container_network = \"$CT_NETWORK\""

# api: suspended for up to an hour of test time (36 s); exp: for 1 s.
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.api]
image = "$IMAGE"
port = $CT_PORT
public = true
[services.api.serverless]
idle_seconds = 30
idle_action = "suspend"
suspend_max_seconds = 3600

[services.exp]
image = "$IMAGE"
port = $CT_PORT
public = true
[services.exp.serverless]
idle_seconds = 30
idle_action = "suspend"
suspend_max_seconds = 100
APP
run hk validate "$T/app.toml"
is "$rc $out" "0 $T/app.toml: app fn: 2 services, 2 serverless: OK" \
    "idle_action = \"suspend\" validates with the container backend"
run hk apply "$T/app.toml"
is "$rc" 0 "and applies"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")
like "$INST" '^[0-9a-f]{32}$' "hk-scale recorded the installation's ID"
S=fn/api
H=api.fn.localhost

# svc_ids SERVICE: the IDs of fn/SERVICE's containers.
svc_ids() {
	ct_cli ps -aq --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=$1" 2>/dev/null | sort
}
# status_is ID STATUS: the engine's State.Status of the container.
status_is() {
	[ "$(ct_inspect "$1" '{{.State.Status}}')" = "$2" ]
}
# suspended SERVICE ID: hk-scale says suspended, the gateway sleeping,
# the container frozen (lib/ct.sh), and the store's row (hk ps)
# suspended: written once it is frozen.
suspended() {
	scale_is "$1" suspended && gw_is "$1" sleeping &&
	    ct_frozen "$2" && [ "$(ps_state "${1#fn/}")" = suspended ]
}
# died_with ID: the exit code of the container's death (ct_died_with).
died_with() {
	ct_died_with "$1"
}
# detail KIND SERVICE FIELD: that field of the last such event's detail.
detail() {
	hk-events list --json -n 0 --kind "$1" --service "$2" |
	    python3 -c 'import json, sys
e = json.load(sys.stdin)
print(json.dumps(e[-1]["detail"].get(sys.argv[1])) if e else "none")' "$3"
}
# ms_since T0: milliseconds since T0 (date +%s%3N).
ms_since() {
	echo $(($(date +%s%3N) - $1))
}

# The readiness gate passed, the idle service is paused, not stopped.
wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
ok $? "api passes its readiness gate"
ID=$(svc_ids api)
like "$ID" '^[0-9a-f]{64}$' "in one container"
ID12=$(echo "$ID" | cut -c1-12)
HOST=$(ct_host "$ID")
wait_t 20 suspended "$S" "$ID"
ok $? "idle, it is suspended: hk-scale says so, its cgroup is frozen"
is "$(svc_ids api)" "$ID" "the same container, kept"
is "$(ps_state api)" suspended "hk ps says suspended"
grep -q "service=$S: freezing container $ID12" "$T/scale.log"
ok $? "hk-scale froze it"
wait_t 5 events_reach 1 HTTPIdleSleep "$S"
ok $? "HTTPIdleSleep recorded"
is "$(detail HTTPIdleSleep "$S" action)" '"suspend"' "its action: suspend"
ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
like "$ep" '^127\.0\.0\.1:[0-9]+$' "its endpoint is kept ($ep)"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$ep/frozen")
is "$code" 000 "paused, the container does not answer there"

# A request thaws it: the same container answers, nothing starts.
starts=$(count_in "$T/scale.log" "service=$S: started container")
t0=$(date +%s%3N)
is "$(get "$H" /a)" 200 "a request through the gateway thaws it"
thaw_ms=$(ms_since "$t0")
like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$HOST\$" \
    "answered by the same container ($thaw_ms ms)"
is "$(svc_ids api)" "$ID" "no other container"
is "$(count_in "$T/scale.log" "service=$S: started container")" "$starts" \
    "and no start"
grep -q "service=$S: thawed container $ID12 after [0-9]* ms frozen" \
    "$T/scale.log"
ok $? "hk-scale thawed it"
wait_t 5 events_reach 1 HTTPIdleWake "$S"
ok $? "HTTPIdleWake recorded"
is "$(detail HTTPIdleWake "$S" resumed)" true "resumed: true"
diag "wake of a suspended container: $thaw_ms ms"
wait_t 20 suspended "$S" "$ID"
ok $? "idle again, suspended again"

# suspend_max_seconds: exp is stopped for real, and sleeps.
wait_t 60 grep -q "service=fn/exp: suspended for 100 s: stopping container" \
    "$T/scale.log"
ok $? "exp: suspended for suspend_max_seconds, stopped"
EXP=$(grep -o "service=fn/exp: suspended for 100 s: stopping container [0-9a-f]*" \
    "$T/scale.log" | head -n 1 | sed 's/.* //')
wait_t 10 scale_is fn/exp sleeping
ok $? "exp sleeps"
wait_t 10 eval '[ -z "$(svc_ids exp)" ]'
ok $? "its container is removed"
is "$(died_with "$EXP")" 0 \
    "its stop signal ended it: a clean exit"
wait_t 5 events_reach 1 HTTPSuspendExpired fn/exp
ok $? "HTTPSuspendExpired recorded"
! grep -q "service=fn/exp: container [0-9a-f]* still there after" \
    "$T/scale.log"
ok $? "not killed after the grace period: it ended at once"

# hk-scale killed while api is suspended; a paused container of the
# installation that no row claims is there when it comes back.
NODE=$(ct_inspect "$ID" '{{index .Config.Labels "hk.node"}}')
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
GHOST=$(ct_cli run -d --network none --ulimit nofile=1024:1024 \
    --ulimit nproc=1024:1024 --label "hk.installation=$INST" \
    --label "hk.node=$NODE" --label hk.app=fn --label hk.service=ghost \
    --label hk.revision=1 "$IMAGE" 2>/dev/null) &&
    ct_cli pause "$GHOST" >/dev/null 2>&1
ok $? "a paused container that no row claims: $(echo "$GHOST" | cut -c1-12)"
ct_frozen "$ID"
ok $? "killed, hk-scale left api's container frozen"
subs=$(count_in "$T/gw.log" 'scale.sock: subscribed')
adopted=$(count_in "$T/scale.log" "service=$S: adopted container $ID12, frozen")
start_scale
ok $? "hk-scale restarts"
wait_t 20 more_in "$T/scale.log" \
    "service=$S: adopted container $ID12, frozen" "$adopted"
ok $? "it adopts the paused container"
is "$(scale_state "$S")" suspended "api is suspended still"
ct_frozen "$ID"
ok $? "its container frozen still"
wait_t 20 eval '! ct_exists "$GHOST"'
ok $? "the one no row claims is removed"
wait_t 10 more_in "$T/gw.log" 'scale.sock: subscribed' "$subs"
ok $? "the gateway has subscribed again"
t0=$(date +%s%3N)
is "$(get "$H" /b)" 200 "the next request thaws it"
like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$HOST\$" \
    "the same container answers ($(ms_since "$t0") ms)"
is "$(svc_ids api)" "$ID" "no other container"
wait_t 5 events_reach 2 HTTPIdleWake "$S"
is "$(detail HTTPIdleWake "$S" resumed)" true "HTTPIdleWake: resumed"
wait_t 20 suspended "$S" "$ID"
ok $? "idle, suspended again"

# Killed again, and its container unpaused behind its back: the restart
# pauses it again, as its row says, and adopts it.
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
ct_thaw_behind "$ID"
! ct_frozen "$ID" && status_is "$ID" running
ok $? "api's container thawed while hk-scale is away"
adopted=$(count_in "$T/scale.log" "service=$S: adopted container $ID12, frozen")
start_scale
ok $? "hk-scale restarts"
wait_t 20 more_in "$T/scale.log" \
    "service=$S: adopted container $ID12, frozen" "$adopted"
ok $? "it adopts it as suspended"
grep -q "service=$S: freezing container $ID12, as its row says suspended" \
    "$T/scale.log"
ok $? "having frozen it again"
ct_frozen "$ID"
ok $? "its cgroup is frozen"

# hk stop of a suspended service: gone at once, not after the grace period.
t0=$(date +%s%3N)
run hk stop "$S"
is "$rc" 0 "hk stop of the suspended service"
wait_t 20 eval 'scale_is "$S" stopped && [ -z "$(svc_ids api)" ]'
ok $? "it is stopped, its container removed"
stop_ms=$(ms_since "$t0")
[ "$stop_ms" -lt $((GRACE * 1000 / 2)) ]
ok $? \
    "promptly: $stop_ms ms (the grace period is $GRACE s)"
! grep -q "service=$S: container $ID12 still there after" "$T/scale.log"
ok $? "not killed after the grace period"
# Docker unpauses it itself once it has sent the signal: the unpause
# that follows, answered "is not paused", is no failure.
! grep -q "service=$S: unable to unpause" "$T/scale.log"
ok $? "no unpause reported as failed"
is "$(died_with "$ID")" 0 "its stop signal ended it: a clean exit"

# Started again, woken, suspended: SIGTERM removes the paused container
# as promptly.
run hk start "$S"
is "$(get "$H" /c)" 200 "hk start, and a request wakes it again"
ID=$(svc_ids api)
wait_t 20 suspended "$S" "$ID"
ok $? "it is suspended again, in a fresh container"
stop_pid "$idle_pid"
stop_pid "$gw_pid"
t0=$(date +%s%3N)
stop_pid "$scale_pid" 120
stop_ms=$(ms_since "$t0")
ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes the paused container before it exits"
[ "$stop_ms" -lt $((GRACE * 1000 / 2)) ]
ok $? "promptly: $stop_ms ms"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
