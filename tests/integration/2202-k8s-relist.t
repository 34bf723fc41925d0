#!/bin/sh
# backend = "kubernetes": a watch the API server no longer has history
# for is listed again, on both stores.  While hk-scale is stopped
# (SIGSTOP) with a kubernetes service running, the stand-in drops its
# watches mid-stream and compacts its history past what hk-scale last
# saw, as a real server's etcd compaction does; resumed, hk-scale's
# watch from that resourceVersion gets 410 Gone: once as an ERROR event
# of a 200 stream (as kube-apiserver's watch cache answers), once as the
# HTTP status itself.  Each time hk-scale says it lists again, the
# service still answers through the gateway, and readiness still comes
# from the EndpointSlice watch: the pod's container removed behind hk's
# back is the instance's exit, seen by the relisted watch (once its
# Deployment is scaled to 0: a wake then scales to 1 after); woken again,
# it is ready at its new pod's address; idle, it sleeps.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

D=hk-rl-api
S=rl/api
H=api.rl.localhost
RELISTED="kubernetes: EndpointSlices of $D: resourceVersion [0-9]+ is gone \\(410\\): listed again"
touched=0

# gone_then_relisted HOW: hk-scale stopped, its watches dropped, a
# change, the history compacted (?answer=HOW), hk-scale resumed; true
# once it says it listed again.
gone_then_relisted() {
	_n=$(count_in "$T/scale.log" "$RELISTED")
	touched=$((touched + 1))
	kill -STOP "$scale_pid"
	standin POST "drop-watches?abrupt=1" >/dev/null &&
	    kc annotate deployment "$D" --overwrite \
	    "hk.test/touched=$touched" >/dev/null &&
	    standin POST "compact?answer=$1" >/dev/null
	_rc=$?
	kill -CONT "$scale_pid"
	[ "$_rc" = 0 ] || return 1
	wait_t 30 more_in "$T/scale.log" "$RELISTED" "$_n"
}

for engine in $(engines); do
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" rl
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: a kubernetes service applies"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 60 grep -q "service=$S: ready at 127\\.77\\." "$T/scale.log"
	ok $? "$engine: the readiness gate passes"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: then it sleeps"

	# hk-idle held while the test looks: it runs until released.
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: a request wakes it"
	host=$(sed -n 's/.* host=//p' "$T/body")
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")

	# 410 Gone as an ERROR event of the watch's stream
	gone_then_relisted event
	ok $? "$engine: its watch from a compacted resourceVersion: listed again" ||
	    grep 'kubernetes' "$T/scale.log" | tail -5 | sed 's/^/# /'
	grep -q "watch of endpointslices from [0-9]*: 410 Expired, an ERROR event" \
	    "$K/standin.log"
	ok $? "$engine: (the stand-in sent 410 Gone as an ERROR event)" ||
	    tail -5 "$K/standin.log" | sed 's/^/# /'
	is "$(scale_state "$S")" running "$engine: still running"
	is "$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")" "$ep" \
	    "$engine: at the same endpoint"
	is "$(get "$H" /y)" 200 "$engine: a request through the gateway is answered"
	like "$(cat "$T/body")" " host=$host\$" "$engine: by the same pod"
	is "$(events_of HTTPIdleWake "$S")" 1 "$engine: without a wake"
	podman rm -f -t 0 "$(containers)" >/dev/null
	wait_t 30 grep -q "service=$S: deployment default/$D .*: kubernetes: its pod is no longer ready" "$T/scale.log"
	ok $? "$engine: the pod's end is seen by the relisted watch" ||
	    grep "service=$S" "$T/scale.log" | tail -4 | sed 's/^/# /'
	is "$(replicas "$D")" 0 \
	    "$engine: its exit once its Deployment is at 0 replicas"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: and it sleeps"

	# 410 Gone as the answer to the watch's request
	n=$(count_in "$T/scale.log" "service=$S: ready at ")
	is "$(get "$H" /z)" 200 "$engine: woken again"
	is "$(count_in "$T/scale.log" "service=$S: ready at 127\\.77\\.") " \
	    "$((n + 1)) " "$engine: ready at its new pod's address"
	gone_then_relisted status
	ok $? "$engine: a watch answered 410 Gone itself: listed again" ||
	    grep 'kubernetes' "$T/scale.log" | tail -5 | sed 's/^/# /'
	grep -q "watch of endpointslices from [0-9]*: 410 Expired, the answer" \
	    "$K/standin.log"
	ok $? "$engine: (the stand-in answered 410 Gone itself)" ||
	    tail -5 "$K/standin.log" | sed 's/^/# /'
	is "$(get "$H" /w)" 200 "$engine: a request is answered"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: its Deployment scaled to 0"
	wait_t 30 no_container
	ok $? "$engine: its pod's container is gone"

	k8s_round_end "$engine"
done

done_testing
