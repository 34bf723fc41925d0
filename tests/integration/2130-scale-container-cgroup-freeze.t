#!/bin/sh
# idle_action = "suspend" of a container whose engine is on this host,
# on both stores: hk-scale freezes the container's own cgroup (found from
# its first process, State.Pid) instead of asking the engine to pause it
# (ct_freezer.c).  Idle, the container is frozen there (it does not
# answer its endpoint) while the engine, not told, says it runs; a
# request through the gateway thaws it: 200 from the same container, no
# new start, and its cgroup thawed (cgroup2's, else cgroup v1's freezer).  hk-scale killed with SIGKILL while
# it is frozen: the restart adopts it frozen, as its row says.  hk stop
# of a frozen container thaws it first: its stop signal ends it at once
# (a clean exit), not SIGKILL after the grace period.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

pg_missing_is_failure
ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

GRACE=10
start_scale() {
	daemon scale hk-scale -v -g "$GRACE"
}
S=fn/api
H=api.fn.localhost

# svc_id: the ID of fn/api's container(s).
svc_id() {
	ct_cli ps -aq --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=api" 2>/dev/null | sort
}
# frozen_here ID: suspended as hk-scale, the gateway and hk ps say, its
# cgroup frozen, the engine saying it runs.
frozen_here() {
	scale_is "$S" suspended && gw_is "$S" sleeping &&
	    [ "$(ps_state api)" = suspended ] &&
	    case $(ct_freezer "$1") in FROZEN|1) : ;; *) false ;; esac &&
	    [ "$(ct_inspect "$1" '{{.State.Status}}')" = running ]
}
thawed() {
	case $(ct_freezer "$1") in THAWED|0) return 0 ;; esac
	return 1
}

for engine in $(engines); do
	new_store "$engine" "cgfz$engine"
	rm -f "$T/scale.log" "$T/gw.log"
	idle_setup "$STORE" "container_engine = \"$U\"
container_network = \"$CT_NETWORK\""
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
APP
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: applies"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	INST=$(ct_install "$STORE")
	wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
	ok $? "$engine: api passes its readiness gate"
	ID=$(svc_id)
	like "$ID" '^[0-9a-f]{64}$' "$engine: in one container"
	ID12=$(echo "$ID" | cut -c1-12)
	HOST=$(ct_host "$ID")

	wait_t 20 frozen_here "$ID"
	ok $? "$engine: idle, its cgroup is frozen; the engine says running"
	like "$(ct_freezer "$ID")" '^(FROZEN|1)$' \
	    "$engine: the freezer says $(ct_freezer "$ID")"
	grep -q "service=$S: freezing container $ID12" "$T/scale.log"
	ok $? "$engine: hk-scale froze it"
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
	    "http://$ep/frozen")
	is "$code" 000 "$engine: frozen, it does not answer at $ep"

	# hk-idle held while the test looks: it would freeze it again.
	kill -STOP "$idle_pid"
	starts=$(count_in "$T/scale.log" "service=$S: started container")
	t0=$(date +%s%3N)
	is "$(get "$H" /a)" 200 "$engine: a request through the gateway thaws it"
	wake_ms=$(($(date +%s%3N) - t0))
	like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$HOST\$" \
	    "$engine: answered by the same container"
	is "$(svc_id)" "$ID" "$engine: no other container"
	is "$(count_in "$T/scale.log" "service=$S: started container")" \
	    "$starts" "$engine: and no start"
	thawed "$ID"
	ok $? "$engine: its cgroup is thawed"
	grep -q "service=$S: thawed container $ID12 after [0-9]* ms frozen" \
	    "$T/scale.log"
	ok $? "$engine: hk-scale thawed it"
	diag "$engine: wake of a container frozen here: $wake_ms ms"
	kill -CONT "$idle_pid"

	wait_t 20 frozen_here "$ID"
	ok $? "$engine: idle again, frozen again"
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	adopted=$(count_in "$T/scale.log" \
	    "service=$S: adopted container $ID12, frozen")
	start_scale
	ok $? "$engine: hk-scale, killed, restarts"
	wait_t 20 more_in "$T/scale.log" \
	    "service=$S: adopted container $ID12, frozen" "$adopted"
	ok $? "$engine: it adopts the frozen container as frozen"
	frozen_here "$ID"
	ok $? "$engine: frozen still"

	# hk stop of the frozen container: thawed, it ends on its signal.
	t0=$(date +%s%3N)
	run hk stop "$S"
	is "$rc" 0 "$engine: hk stop of the frozen service"
	wait_t 20 eval 'scale_is "$S" stopped && [ -z "$(svc_id)" ]'
	ok $? "$engine: it is stopped, its container removed"
	stop_ms=$(($(date +%s%3N) - t0))
	[ "$stop_ms" -lt $((GRACE * 1000 / 2)) ]
	ok $? "$engine: promptly: $stop_ms ms (the grace period is $GRACE s)"
	! grep -q "service=$S: container $ID12 still there after" \
	    "$T/scale.log"
	ok $? "$engine: not killed after the grace period"
	is "$(ct_died_with "$ID")" 0 "$engine: its stop signal ended it: a clean exit"

	stop_pid "$idle_pid"; stop_pid "$gw_pid"; stop_pid "$scale_pid"
	stop_pid "$events_pid"
	is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
	    "$engine: no sanitizer report"
done
done_testing
