#!/bin/sh
# backend = "kubernetes", end to end, against the Kubernetes stand-in
# (tests/k8s/standin.py, scripts/k8s-standin: no real API server can run
# on these machines; 2200 checks the stand-in with kubectl and
# python3-kubernetes), on both stores.  hk-scale reads the stand-in's
# kubeconfig (bearer token, its CA: TLS verified).  A serverless service
# of the test image validates and applies; hk-scale makes its Deployment
# (labelled with installation, app, service and revision; PORT and the
# service's environment) and its Service, passes the readiness gate and
# scales it to 0.  A request through the gateway wakes it: scaled to 1,
# the EndpointSlice's ready endpoint (the pod's 127.77.X.Y) is the
# instance's endpoint, and the pod's container answers; hk ps and hk
# status show it running on kubernetes.  It sleeps after idle_seconds:
# the Deployment back at 0 replicas (kubectl), no endpoint left, and the
# Events HTTPIdleWake and HTTPIdleSleep on the Deployment with their
# causes (kubectl get events.events.k8s.io); hk-scale SIGKILLed while it
# runs, the next one adopts the pod (no new wake, the same pod answers),
# scales to 0 a Deployment of this installation that no row names, and
# leaves another installation's alone.
# Woken again, its watch cut
# mid-stream by the stand-in is started again, and its pod's container
# removed behind hk's back is the instance's exit, seen by that watch.
# A service whose image cannot be pulled fails its start with its pod's
# reason (ErrImagePull, from the Pod's containerStatuses: hk status, the
# gateway's 503), long before startup_timeout_seconds, and is scaled to 0
# again.  Keys the
# backend does not apply are refused by hk validate.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

# Keys the backend does not apply: refused, each with its reason.
cat >"$T/refused.toml" <<APP
schema_version = 1
name = "kr"

[services.a]
backend = "kubernetes"
image = "$IMAGE"
command = ["/bin/true"]
user = "nobody"
volumes = ["data:/data"]
readiness = "notify"
[services.a.serverless]
idle_action = "suspend"
APP
run hk validate "$T/refused.toml"
is "$rc" 65 "hk validate refuses what kubernetes does not apply"
for k in command user volumes readiness 'serverless.idle_action'; do
	like "$err" "services\\.a\\.$k: " "  $k: refused"
done
like "$err" 'idle_action: "suspend" is not supported with backend "kubernetes"' \
    "  suspend: not on kubernetes"
cat >"$T/noimage.toml" <<APP
schema_version = 1
name = "kr"

[services.a]
backend = "kubernetes"
command = ["/bin/true"]
APP
run hk validate "$T/noimage.toml"
like "$rc $err" '^65 .*kubernetes requires image' "an image it needs"

D=hk-http-functions-api
for engine in $(engines); do
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "http-functions"

[services.api]
backend = "kubernetes"
image = "$IMAGE"
port = 8080
public = true

[services.api.environment]
GREETING = "from hk"

[services.api.serverless]
idle_seconds = 300
startup_timeout_seconds = 60
APP
	run hk validate "$T/app.toml"
	is "$rc $out" "0 $T/app.toml: app http-functions: 1 services, 1 serverless: OK" \
	    "$engine: a kubernetes service validates"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and applies"
	run hk status http-functions/api
	like "$out" '^backend: +kubernetes$' "$engine: hk status: the kubernetes backend"

	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	S=http-functions/api
	H=api.http-functions.localhost
	wait_t 60 grep -q "service=$S: ready at 127\\.77\\." "$T/scale.log"
	ok $? "$engine: the readiness gate: ready at the pod's address"
	like "$(install)" '^[0-9a-f]{32}$' "$engine: hk-scale recorded the installation's ID"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: then it sleeps"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: its Deployment scaled to 0"
	wait_t 30 no_endpoint "$D"
	ok $? "$engine: no endpoint left"

	# A request wakes it; hk-idle is held while the test looks.
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: a request through the gateway wakes it"
	like "$(cat "$T/body")" '^from hk pid=[0-9]+ host=hk-http-functions-api-' \
	    "$engine: answered by the pod's container (GREETING)"
	is "$(replicas "$D")" 1 "$engine: the Deployment is at 1 replica"
	is "$(kc get deployment "$D" -o 'jsonpath={.metadata.labels.hakopod\.io/app} {.metadata.labels.hakopod\.io/service} {.metadata.labels.hakopod\.io/revision} {.metadata.labels.hakopod\.io/installation}')" \
	    "http-functions api 1 $(install)" \
	    "$engine: labelled with app, service, revision and installation" ||
	    kc get deployment "$D" -o 'jsonpath={.metadata.labels}' | sed 's/^/# /'
	is "$(kc get deployment "$D" -o 'jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}')" \
	    "$IMAGE 8080" "$engine: of the service's image and port"
	like "$(kc get deployment "$D" -o 'jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.value} {end}')" \
	    '^GREETING=from hk PORT=8080 $' "$engine: with its environment and PORT"
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
	like "$ep" '^127\.77\.[0-9]+\.[0-9]+:8080$' "$engine: its endpoint is the pod's ($ep)"
	is "$(endpoints "$D")" "$ep n=1" "$engine: as the EndpointSlice says"
	run hk ps
	like "$out" "$(printf '^http-functions\tapi\trunning\t')" "$engine: hk ps: running"
	run hk status http-functions/api
	like "$out" '^state: +running$' "$engine: hk status: running"
	wait_t 10 events_reach 1 HTTPIdleWake "$S"
	ok $? "$engine: HTTPIdleWake recorded by hk"
	wait_t 10 k8s_event_seen "$D" HTTPIdleWake
	ok $? "$engine: and as a Kubernetes Event on the Deployment"
	like "$(k8s_events "$D" | grep '^HTTPIdleWake|' | tail -1)" \
	    '^HTTPIdleWake\|Wake\|woken: request$' "$engine: with its cause"

	# hk-scale killed while it runs: the next one adopts the pod, found
	# by its Deployment's labels and its EndpointSlices.
	host=$(sed -n 's/.* host=//p' "$T/body")
	# and two Deployments no row names, at 1 replica (no port: no pod):
	# one of this installation, one of another
	for d in "ghost $(install)" "alien 0123456789abcdef0123456789abcdef"; do
		set -- $d
		cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hk-http-functions-$1
  labels: {hakopod.io/installation: "$2"}
spec:
  replicas: 1
  selector: {matchLabels: {x: "$1"}}
  template:
    metadata: {labels: {x: "$1"}}
    spec: {containers: [{name: c, image: "$IMAGE"}]}
---
YAML
	done >"$T/others.yaml"
	kc create -f "$T/others.yaml" >/dev/null
	ok $? "$engine: (two Deployments no row names)"
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	start_scale
	ok $? "$engine: hk-scale, SIGKILLed while it ran, starts again"
	wait_t 30 grep -q "service=$S: adopted deployment default/$D at $ep, revision 1" "$T/scale.log"
	ok $? "$engine: it adopts the running pod" ||
	    grep "service=$S" "$T/scale.log" | tail -4 | sed 's/^/# /'
	wait_t 30 gw_is "$S" running
	ok $? "$engine: the gateway learns it runs"
	is "$(get "$H" /y)" 200 "$engine: a request is answered"
	like "$(cat "$T/body")" " host=$host\$" "$engine: by the same pod"
	is "$(events_of HTTPIdleWake "$S")" 1 "$engine: without a wake"
	is "$(replicas "$D")" 1 "$engine: the Deployment still at 1 replica"
	wait_t 30 replicas_is hk-http-functions-ghost 0
	ok $? "$engine: this installation's Deployment that no row names: scaled to 0" || {
		grep 'kubernetes' "$T/scale.log" | grep -v 'ready at' | sed 's/^/# /'
		kc get deployments -o json | grep -i 'installation\|"name"\|replicas' | sed 's/^/# /'
		grep -i 'deployments?' "$K/standin.log" | tail -5 | sed 's/^/# /'
	}
	is "$(replicas hk-http-functions-alien)" 1 \
	    "$engine: another installation's left alone"

	# It sleeps after idle_seconds.
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: it sleeps after idle_seconds"
	is "$(replicas "$D")" 0 "$engine: the Deployment is at 0 replicas again"
	is "$(endpoints "$D")" "n=0" "$engine: no endpoint"
	wait_t 30 no_container
	ok $? "$engine: the pod's container is gone"
	wait_t 10 events_reach 1 HTTPIdleSleep "$S"
	ok $? "$engine: HTTPIdleSleep recorded by hk"
	wait_t 10 k8s_event_seen "$D" HTTPIdleSleep
	ok $? "$engine: and as a Kubernetes Event on the Deployment"
	like "$(k8s_events "$D" | grep '^HTTPIdleSleep|' | tail -1)" \
	    '^HTTPIdleSleep\|Sleep\|asleep: idle$' "$engine: with its cause"
	is "$(hk ps | awk '$2 == "api" { print $3 }')" sleeping "$engine: hk ps: sleeping"

	# Its watch dropped mid-stream, then its pod's container ended behind
	# hk's back: the watch, resumed, sees the endpoint go.
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: woken again"
	before=$(standin GET watches | json_field started)
	standin POST "drop-watches?abrupt=1" >/dev/null
	wait_t 30 watches_started_over "$before"
	ok $? "$engine: a dropped watch is started again"
	wait_t 10 grep -q "kubernetes: EndpointSlices of $D: " "$T/scale.log"
	ok $? "$engine: (the drop is logged)"
	podman rm -f -t 0 "$(containers)" >/dev/null
	wait_t 30 grep -q "service=$S: deployment default/$D .*: kubernetes: its pod is no longer ready" "$T/scale.log"
	ok $? "$engine: the pod's end is the instance's exit, seen by the watch" ||
	    grep "service=$S" "$T/scale.log" | tail -4 | sed 's/^/# /'
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: and it sleeps"
	kill -CONT "$idle_pid"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: scaled to 0"

	# An image that cannot be pulled: the start fails with its reason.
	cat >>"$T/app.toml" <<APP

[services.bad]
backend = "kubernetes"
image = "127.0.0.1:9/hk-missing:none"
public = true
[services.bad.serverless]
startup_timeout_seconds = 300
APP
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: a service of an image that is not there applies"
	why='kubernetes: pod hk-http-functions-bad-[0-9a-f]+-[0-9a-f]+: (ErrImagePull|ImagePullBackOff): '
	wait_t 60 grep -Eq "service=http-functions/bad: unable to start revision 1: $why" "$T/scale.log"
	ok $? "$engine: its start fails with its pod's reason, not at the deadline" ||
	    grep 'http-functions/bad' "$T/scale.log" | tail -5 | sed 's/^/# /'
	grep -Eq "service=http-functions/bad: unable to start revision 1: kubernetes: pod [^:]*: ErrImagePull: failed to pull image \"127\.0\.0\.1:9/hk-missing:none\"" "$T/scale.log"
	ok $? "$engine: ErrImagePull, and the image"
	wait_t 30 replicas_is hk-http-functions-bad 0
	ok $? "$engine: and its Deployment is scaled to 0 again"
	grep -q "pod hk-http-functions-bad-.*: cannot start: ErrImagePull: " "$K/standin.log"
	ok $? "$engine: (the stand-in could not pull its image)"
	wait_t 10 status_says http-functions/bad 'ErrImagePull'
	ok $? "$engine: hk status gives the reason" ||
	    hk status http-functions/bad | sed 's/^/# /'
	is "$(get bad.http-functions.localhost /)" 503 \
	    "$engine: a request that wakes it is refused"
	like "$(cat "$T/body")" "^service failed to start: $why" \
	    "$engine: with the pod's reason"

	stop_pid "$idle_pid"; stop_pid "$gw_pid"; stop_pid "$scale_pid"
	stop_pid "$events_pid"
	for _l in events gw idle scale; do
		mv "$T/$_l.log" "$T/$_l-$engine.log"
	done
	# the next store's installation starts from nothing
	kc delete deployment "$D" hk-http-functions-bad hk-http-functions-ghost \
	    hk-http-functions-alien >/dev/null 2>&1
	kc delete service "$D" hk-http-functions-bad >/dev/null 2>&1
	kc delete events.events.k8s.io --all >/dev/null 2>&1
done

done_testing
