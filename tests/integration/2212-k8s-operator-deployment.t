#!/bin/sh
# backend = "kubernetes" with kubernetes_deployment: a Deployment the
# operator made (with kubectl: its own labels, image and environment, at
# 0 replicas) is scaled by hk, never created, rewritten or deleted, on
# both stores, against the Kubernetes stand-in (tests/k8s/standin.py).
# hk validate refuses the keys that would write into it (image,
# environment), each with the reason.  Applied, the service passes its
# readiness gate and sleeps; a request wakes it: the Deployment at 1
# replica, the request answered by its pod (the operator's GREETING),
# the HTTPIdleWake Event on it; its template, labels and selector are as
# the operator wrote them; it sleeps (0 replicas, HTTPIdleSleep) and is
# still there.  A service naming a Deployment that is not there fails to
# start, with the reason.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

cat >"$T/refused.toml" <<APP
schema_version = 1
name = "ko"

[services.a]
backend = "kubernetes"
kubernetes_deployment = "web"
image = "$IMAGE"
[services.a.environment]
X = "1"
APP
run hk validate "$T/refused.toml"
is "$rc" 65 "hk validate refuses keys that would write into it"
like "$err" 'services\.a\.image: not with kubernetes_deployment: the operator.s Deployment names its image' \
    "  image, with the reason"
like "$err" 'services\.a\.environment: not with kubernetes_deployment: hk does not rewrite the operator.s Deployment' \
    "  environment, with the reason"

# shape NAME: what the operator wrote: labels, selector, template
shape() {
	kc get deployment "$1" -o json | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print(json.dumps([d["metadata"].get("labels"), d["spec"]["selector"],
                  d["spec"]["template"]], sort_keys=True))'
}

for engine in $(engines); do
	A=ko$engine
	OP=web-$engine
	D=hk-$A-api	# hk's Service (k8s_round_end deletes it)
	S=$A/api
	H=api.$A.localhost
	cat <<YAML | kc create -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $OP
  labels: {team: "ops"}
spec:
  replicas: 0
  selector: {matchLabels: {app.example.com/name: "$OP"}}
  template:
    metadata: {labels: {app.example.com/name: "$OP", tier: web}}
    spec:
      containers:
      - name: web
        image: "$IMAGE"
        ports: [{containerPort: 8080}]
        env: [{name: GREETING, value: "the operator's"}]
YAML
	ok $? "$engine: the operator's Deployment $OP, made with kubectl"
	before=$(shape "$OP")
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "$A"

[services.api]
backend = "kubernetes"
kubernetes_deployment = "$OP"
port = 8080
public = true
[services.api.serverless]
idle_seconds = 300
startup_timeout_seconds = 60
APP
	run hk validate "$T/app.toml"
	is "$rc" 0 "$engine: a service naming it validates" || diag "$err"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 120 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps" ||
	    grep "service=$S" "$T/scale.log" | tail -5 | sed 's/^/# /'
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: a request wakes it"
	like "$(cat "$T/body")" "^the operator's pid=" "$engine: answered by its pod"
	is "$(replicas "$OP")" 1 "$engine: the Deployment at 1 replica"
	wait_t 10 k8s_event_seen "$OP" HTTPIdleWake
	ok $? "$engine: HTTPIdleWake, an Event on it"
	is "$(shape "$OP")" "$before" \
	    "$engine: its labels, selector and template as the operator wrote them"
	is "$(kc get service "hk-$A-api" -o 'jsonpath={.spec.selector}')" \
	    "{\"app.example.com/name\":\"$OP\"}" \
	    "$engine: hk's Service selects its pods by its selector"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 30 replicas_is "$OP" 0
	ok $? "$engine: scaled to 0"
	wait_t 10 k8s_event_seen "$OP" HTTPIdleSleep
	ok $? "$engine: HTTPIdleSleep, an Event on it"
	is "$(shape "$OP")" "$before" "$engine: still as the operator wrote it"

	# a Deployment that is not there
	cat >>"$T/app.toml" <<APP

[services.gone]
backend = "kubernetes"
kubernetes_deployment = "nope-$engine"
public = true
[services.gone.serverless]
startup_timeout_seconds = 60
APP
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: a service naming a missing Deployment applies" ||
	    diag "$err"
	wait_t 60 grep -q "service=$A/gone: unable to start revision 1: kubernetes: Deployment default/nope-$engine: not found (kubernetes_deployment names a Deployment the operator makes; hk makes none)" "$T/scale.log"
	ok $? "$engine: its start fails, with the reason" ||
	    grep "service=$A/gone" "$T/scale.log" | tail -3 | sed 's/^/# /'
	! kc get deployment "nope-$engine" >/dev/null 2>&1
	ok $? "$engine: and hk made none"
	k8s_round_end "$engine"
	kc get deployment "$OP" >/dev/null 2>&1
	ok $? "$engine: the operator's Deployment is still there"
	kc delete deployment "$OP" >/dev/null 2>&1
	kc delete service "hk-$A-api" "hk-$A-gone" >/dev/null 2>&1
done

done_testing
