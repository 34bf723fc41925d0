#!/bin/sh
# backend = "kubernetes": three simultaneous POSTs through the gateway to
# a sleeping kubernetes service wake it once and are each handled once,
# on both stores, as the other backends' lifecycle tests check (9101,
# 9210).  One wake: one write of the Deployment's scale to 1 replica
# (the stand-in's log), one pod, one HTTPIdleWake recorded by hk and one
# as a Kubernetes Event on the Deployment; three answers, 200 each, from
# the function, whose own output (podman logs of the pod's container)
# counts exactly three invocations, one per body.  Idle, it sleeps, and a
# request wakes it again.  time_unit_ms = 10: idle_seconds = 300 lasts
# 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

D=hk-three-api
S=three/api
H=api.three.localhost
SCALED_UP="deployment default/$D: scale 0 to 1\$"
POD_STARTED="pod $D-[0-9a-f]+-[0-9a-f]+: container [0-9a-f]+ at "

# invocations: the function's own lines for POST /three, in the output of
# its pod's container
invocations() {
	for _id in $(containers); do
		podman logs "$_id" 2>/dev/null
	done | grep -c '^ct-fn: POST /three 200 '
}
invocations_reach() { [ "$(invocations)" -ge "$1" ]; }

for engine in $(engines); do
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" three
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

	# hk-idle held: it runs until the test has counted.
	kill -STOP "$idle_pid"
	ups=$(count_in "$K/standin.log" "$SCALED_UP")
	pods=$(count_in "$K/standin.log" "$POD_STARTED")
	for i in 1 2 3; do
		curl -sS -o "$T/p$i" -w '%{http_code}' --max-time 60 \
		    -H "Host: $H" -d "n=$i" "$URL/three" >"$T/p$i.code" &
		eval "p$i=\$!"
	done
	wait "$p1" "$p2" "$p3"
	is "$(cat "$T/p1.code" "$T/p2.code" "$T/p3.code" | tr -d '\n')" \
	    200200200 "$engine: three simultaneous POSTs to it asleep are answered"
	is "$(cat "$T/p1" "$T/p2" "$T/p3" | sort -u)" "hello got 3 bytes" \
	    "$engine: by the function, each with its body"
	is "$(($(count_in "$K/standin.log" "$SCALED_UP") - ups))" 1 \
	    "$engine: one scale of its Deployment to 1 replica"
	is "$(($(count_in "$K/standin.log" "$POD_STARTED") - pods))" 1 \
	    "$engine: one pod"
	wait_t 10 events_reach 1 HTTPIdleWake "$S"
	ok $? "$engine: HTTPIdleWake recorded by hk"
	is "$(events_of HTTPIdleWake "$S")" 1 "$engine: once"
	wait_t 10 k8s_event_seen "$D" HTTPIdleWake
	ok $? "$engine: and as a Kubernetes Event on the Deployment"
	is "$(k8s_events "$D" | grep -c '^HTTPIdleWake|')" 1 "$engine: once"
	wait_t 10 invocations_reach 3
	ok $? "$engine: the function's output shows the POSTs"
	is "$(invocations)" 3 "$engine: exactly three invocations"
	for i in 1 2 3; do
		is "$(for _id in $(containers); do podman logs "$_id" 2>/dev/null; done |
		    grep -c "^ct-fn: POST /three 200 body=n=$i\$")" 1 \
		    "$engine: request $i handled once"
	done

	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: its Deployment scaled to 0"
	wait_t 30 no_container
	ok $? "$engine: its pod's container is gone"
	is "$(get "$H" /again)" 200 "$engine: a request wakes it again"
	wait_t 10 events_reach 2 HTTPIdleWake "$S"
	ok $? "$engine: a second HTTPIdleWake"

	k8s_round_end "$engine"
	wait_t 30 no_container
	ok $? "$engine: (its pod removed with its Deployment)"
done

done_testing
