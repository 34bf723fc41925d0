#!/bin/sh
# backend = "kubernetes": hk-scale killed with SIGKILL while a kubernetes
# service starts, and while it runs, on both stores.  The start lasts
# while the stand-in holds its pods' readiness (POST
# /standin/readiness?hold=1: the pod is there, not ready, as one whose
# readiness probe has not passed yet); a request waits at the gateway
# meanwhile.  Killed then, the next hk-scale finds the Deployment by name
# and its installation label, and, the row saying starting, scales it to
# 0 as an earlier run's; the gateway's waiting request wakes the service
# again (its scale to 1 written after that 0, the stand-in's log says),
# and once readiness is released it is answered by the function.  Killed while it runs, the next hk-scale adopts the running
# pod: the next request is answered by the same pod, without a wake.
# Each time nothing is left over: one Deployment, one Service, one pod,
# and hk ps says it runs; idle, it sleeps, and no pod is left.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

D=hk-kill-api
S=kill/api
H=api.kill.localhost

# ps_is STATE: hk ps says kill/api is STATE
ps_is() { [ "$(hk ps 2>/dev/null | awk '$1 == "kill" && $2 == "api" { print $3 }')" = "$1" ]; }
# one_of_each: one Deployment and one Service of this app, one pod
# (its container), and that pod's name is the host that answered last
one_of_each() {
	[ "$(kc get deployments -l hakopod.io/app=kill -o name | wc -l)" = 1 ] &&
	    [ "$(kc get services -o name | grep -c '/hk-kill-')" = 1 ] &&
	    [ "$(containers | wc -l)" = 1 ] &&
	    [ "$(podman inspect -f '{{.Config.Hostname}}' "$(containers)")" = \
	    "$(sed -n 's/.* host=//p' "$T/body")" ]
}
pod_held() {
	[ "$(containers | wc -l)" = 1 ] &&
	    [ "$(endpoints "$D")" = "n=1" ]
}

for engine in $(engines); do
	new_store "$engine" "k8s$engine"
	# the waiting request parks while hk-scale is away, however long
	# its restart takes on a busy machine
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\"
scale_grace_seconds = 120"
	k8s_app "$T/app.toml" kill
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: a kubernetes service applies"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 60 grep -q "service=$S: ready at 127\\.77\\." "$T/scale.log"
	ok $? "$engine: the readiness gate passes"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: then it sleeps"
	wait_t 30 no_container
	ok $? "$engine: no pod left"

	# SIGKILL while it starts: its pod there, held not ready.
	kill -STOP "$idle_pid"
	is "$(standin POST 'readiness?hold=1' | json_field held)" True \
	    "$engine: (the stand-in holds its pods' readiness)"
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 120 \
	    -H "Host: $H" "$URL/held" >"$T/held.code" 2>"$T/held.err" &
	held=$!
	wait_t 30 scale_is "$S" starting
	ok $? "$engine: a request wakes it: starting"
	wait_t 30 pod_held
	ok $? "$engine: its pod is there, not ready"
	wait_t 10 ps_is starting
	ok $? "$engine: hk ps: starting"
	first=$(containers)
	lines=$(wc -l <"$K/standin.log")
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	start_scale
	ok $? "$engine: hk-scale, SIGKILLed while it started, starts again"
	wait_t 30 grep -q "service=$S: kubernetes: deployment default/$D, an earlier run's: scaled to 0" "$T/scale.log"
	ok $? "$engine: it scales the Deployment it left starting to 0" ||
	    grep "service=$S" "$T/scale.log" | tail -4 | sed 's/^/# /'
	wait_t 30 scale_is "$S" starting
	ok $? "$engine: the waiting request wakes it again"
	is "$(standin POST 'readiness?hold=0' | json_field held)" False \
	    "$engine: (readiness released)"
	wait "$held"
	is "$(cat "$T/held.code")" 200 "$engine: the waiting request is answered" ||
	    sed 's/^/# /' "$T/held.err"
	like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$D-" "$engine: by the function"
	wait_t 30 ps_is running
	ok $? "$engine: hk ps: running"
	wait_t 30 one_of_each
	ok $? "$engine: one Deployment, one Service, one pod: the one that answered" || {
		kc get deployments,services | sed 's/^/# /'
		podman ps --filter "label=hk.k8s-standin=$INSTANCE" | sed 's/^/# /'
	}
	is "$(replicas "$D")" 1 "$engine: at 1 replica"
	is "$(sed -n "$((lines + 1)),\$ s/^.*: deployment default\/$D: //p" \
	    "$K/standin.log" | grep '^scale ' | tr '\n' ,)" \
	    "scale 1 to 0,scale 0 to 1," \
	    "$engine: its scale written to 0, then to 1 by the next wake"
	[ "$(containers)" = "$first" ] ||
	    ! podman container exists "$first"
	ok $? "$engine: the first pod's container is the one, or is gone"

	# SIGKILL while it runs: adopted.
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
	host=$(sed -n 's/.* host=//p' "$T/body")
	wait_t 10 events_reach 1 HTTPIdleWake "$S"
	wakes=$(events_of HTTPIdleWake "$S")
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	start_scale
	ok $? "$engine: hk-scale, SIGKILLed while it ran, starts again"
	wait_t 30 grep -q "service=$S: adopted deployment default/$D at $ep, revision 1" "$T/scale.log"
	ok $? "$engine: it adopts the running pod" ||
	    grep "service=$S" "$T/scale.log" | tail -4 | sed 's/^/# /'
	wait_t 30 gw_is "$S" running
	ok $? "$engine: the gateway learns it runs"
	is "$(get "$H" /next)" 200 "$engine: the next request is answered"
	like "$(cat "$T/body")" " host=$host\$" "$engine: by the same pod"
	is "$(events_of HTTPIdleWake "$S")" "$wakes" "$engine: without a wake"
	is "$(hk ps | awk '$1 == "kill" && $2 == "api" { print $3 }')" running \
	    "$engine: hk ps: running"
	one_of_each
	ok $? "$engine: one Deployment, one Service, one pod"

	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: its Deployment at 0 replicas"
	wait_t 30 no_container
	ok $? "$engine: no pod left"
	is "$(hk ps | awk '$1 == "kill" && $2 == "api" { print $3 }')" sleeping \
	    "$engine: hk ps: sleeping"

	k8s_round_end "$engine"
done

done_testing
