#!/bin/sh
# backend = "kubernetes" with kubernetes_service_address = true: the
# endpoint the gateway forwards to is the Service's address (its cluster
# IP and port), not the pod's, on both stores, against the Kubernetes
# stand-in (tests/k8s/standin.py gives a Service a cluster IP 127.78.X.Y
# whose port forwards to a ready endpoint, as kube-proxy does).  A
# request wakes the service: hk-scale's status gives the Service's
# clusterIP:8080 (kubectl), not the pod's 127.77.X.Y, and the request is
# answered by the pod through it.  hk-scale SIGKILLed while it runs: the
# next one adopts the pod at the Service's address (no wake).  It sleeps:
# scaled to 0, and the Service's address then answers nothing.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s (hk-idle held).
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

for engine in $(engines); do
	A=ka$engine
	D=hk-$A-api
	S=$A/api
	H=api.$A.localhost
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\"
kubernetes_service_address = true"
	k8s_app "$T/app.toml" "$A"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: the app applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 120 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"
	ip=$(kc get service "$D" -o 'jsonpath={.spec.clusterIP}')
	like "$ip" '^127\.78\.[0-9]+\.[0-9]+$' "$engine: its Service has a cluster IP ($ip)"
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: a request wakes it"
	like "$(cat "$T/body")" '^hello pid=' "$engine: answered by the function"
	is "$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")" "$ip:8080" \
	    "$engine: its endpoint is the Service's address"
	like "$(endpoints "$D")" '^127\.77\.[0-9]+\.[0-9]+:8080 n=1$' \
	    "$engine: not the pod's, which the EndpointSlice lists"
	grep -q "service=$S: kubernetes: deployment default/$D ready at 127\\.77\\.[0-9.]*:8080 (revision 1), through its Service at $ip:8080" "$T/scale.log"
	ok $? "$engine: hk-scale's log says both"
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	start_scale
	ok $? "$engine: hk-scale, SIGKILLed while it ran, starts again"
	wait_t 30 grep -q "service=$S: adopted deployment default/$D at $ip:8080, revision 1" "$T/scale.log"
	ok $? "$engine: it adopts the pod at the Service's address" ||
	    grep "service=$S" "$T/scale.log" | tail -4 | sed 's/^/# /'
	wait_t 30 gw_is "$S" running
	ok $? "$engine: the gateway learns it runs"
	is "$(get "$H" /y)" 200 "$engine: a request is answered through the Service"
	is "$(events_of HTTPIdleWake "$S")" 1 "$engine: without a wake"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: scaled to 0"
	wait_t 30 no_container
	ok $? "$engine: no pod is left"
	curl -s -o /dev/null --max-time 5 "http://$ip:8080/"
	[ $? -ne 0 ]
	ok $? "$engine: the Service's address answers nothing then"
	k8s_round_end "$engine"
done

done_testing
