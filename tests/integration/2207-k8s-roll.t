#!/bin/sh
# backend = "kubernetes": a new revision rolls the Deployment, and the
# old pod serves until the new one is ready, on both stores, against the
# Kubernetes stand-in (tests/k8s/standin.py rolls a Deployment as a real
# one does with one replica, maxSurge 1 and maxUnavailable 0: the new pod
# beside the old, the old removed once the new is ready).  The new pod's
# readiness is held by the stand-in (POST /standin/readiness?hold=1: its
# probe does not pass) until the test releases it.
# Woken (revision 1, GREETING "one"), then revision 2 (GREETING "two")
# applied: the Deployment holds the strategy and revision 2's template,
# kubectl lists two pods, one of each revision (label
# hakopod.io/revision), the EndpointSlice two endpoints, the old one's
# alone ready; requests are answered by revision 1, and hk-scale does not
# take the old pod for revision 2's.  Released: revision 2 replaces 1,
# requests are answered by revision 2, the old pod is gone, the
# Deployment still at 1 replica; a loop of requests across the release
# has no failure.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s (hk-idle is held).
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
LOOP=
trap '[ -z "$LOOP" ] || kill "$LOOP" 2>/dev/null; k8s_cleanup; _cleanup' EXIT
k8s_setup

# pods APP: "REVISION:READY" of each of its Pods, as kubectl lists them
pods() {
	kc get pods -l "hakopod.io/app=$1" -o json | /usr/bin/python3 -c '
import json, sys
out = []
for p in json.load(sys.stdin)["items"]:
    ready = [c["status"] for c in p["status"].get("conditions") or []
             if c["type"] == "Ready"]
    out.append("%s:%s" % (p["metadata"]["labels"].get("hakopod.io/revision"),
                          ready[0] if ready else "?"))
print(" ".join(sorted(out)))'
}
pods_are() { [ "$(pods "$1")" = "$2" ]; }
answered_by() {
	[ "$(get "$H" /x)" = 200 ] && grep -q "^$1 pid=" "$T/body"
}
# loop FILE: a request every 0.1 s until FILE.stop exists, each code in FILE
loop() {
	while [ ! -e "$1.stop" ]; do
		curl -sS -o /dev/null -w '%{http_code}\n' --max-time 30 \
		    -H "Host: $H" "$URL/loop" >>"$1" 2>>"$1.err"
		sleep 0.1
	done
}

for engine in $(engines); do
	A=kr$engine
	D=hk-$A-api
	S=$A/api
	H=api.$A.localhost
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" "$A" '[services.api.environment]
GREETING = "one"'
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 1 applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 120 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: a request wakes it"
	like "$(cat "$T/body")" '^one pid=' "$engine: answered by revision 1"
	old=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")

	standin POST "readiness?hold=1" >/dev/null
	sed -i 's/^GREETING = "one"/GREETING = "two"/' "$T/app.toml"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 2 applies" || diag "$err"
	wait_t 60 pods_are "$A" "1:True 2:False"
	ok $? "$engine: kubectl: a pod of each revision, the old one alone ready" ||
	    diag "pods: $(pods "$A")"
	is "$(kc get deployment "$D" -o 'jsonpath={.metadata.labels.hakopod\.io/revision} {.spec.replicas} {.spec.strategy.type} {.spec.strategy.rollingUpdate.maxSurge} {.spec.strategy.rollingUpdate.maxUnavailable}')" \
	    "2 1 RollingUpdate 1 0" \
	    "$engine: the Deployment: revision 2's, 1 replica, maxSurge 1, maxUnavailable 0"
	is "$(endpoints "$D")" "$old n=2" \
	    "$engine: its EndpointSlice: both pods, the old one ready"
	fails=0
	for i in 1 2 3 4 5; do
		answered_by one || fails=$((fails + 1))
	done
	is "$fails" 0 "$engine: during the roll, requests are answered by revision 1"
	! grep -q "service=$S: ready at .*, revision 2" "$T/scale.log"
	ok $? "$engine: hk-scale does not take the old pod for revision 2's"
	is "$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")" "$old" \
	    "$engine: the gateway's endpoint is still the old pod's"

	: >"$T/loop-$engine"
	loop "$T/loop-$engine" &
	LOOP=$!
	wait_t 30 test -s "$T/loop-$engine"
	standin POST "readiness?hold=0" >/dev/null
	wait_t 60 grep -q "service=$S: revision 2 replaces 1" "$T/scale.log"
	ok $? "$engine: released, revision 2 replaces 1" ||
	    grep "service=$S" "$T/scale.log" | tail -5 | sed 's/^/# /'
	wait_t 60 pods_are "$A" "2:True"
	ok $? "$engine: the old pod is gone" || diag "pods: $(pods "$A")"
	wait_t 30 answered_by two
	ok $? "$engine: requests are answered by revision 2"
	n=$(wc -l <"$T/loop-$engine")
	wait_t 30 sh -c "[ \$(wc -l <'$T/loop-$engine') -gt $((n + 2)) ]"
	touch "$T/loop-$engine.stop"
	wait "$LOOP"
	LOOP=
	is "$(sort -u "$T/loop-$engine" | tr '\n' ' ')" "200 " \
	    "$engine: no request failed across the roll ($(wc -l <"$T/loop-$engine") requests)" ||
	    sort "$T/loop-$engine" | uniq -c | sed 's/^/# /'
	is "$(replicas "$D")" 1 "$engine: the Deployment still at 1 replica"
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
	is "$(endpoints "$D")" "$ep n=1" "$engine: the EndpointSlice lists the new pod alone"
	[ "$ep" != "$old" ]
	ok $? "$engine: at an address of its own ($ep)"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: scaled to 0"
	k8s_round_end "$engine"
done

done_testing
