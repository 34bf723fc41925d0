#!/bin/sh
# backend = "kubernetes": a service's size, user and node_name in its
# Deployment's pod, on both stores, against the Kubernetes stand-in
# (tests/k8s/standin.py).  hk validate refuses a user that is a name
# (a pod's runAsUser is a number) and uid 0 without allow_root_services.
# A service of size "medium", user "1234:2345" and node_name "node-a"
# applies; woken by a request, kubectl shows its container's resource
# limits (2048Mi, 2000m), its pod's securityContext (runAsUser 1234,
# runAsGroup 2345) and nodeName node-a; the stand-in's podman container
# has that memory limit and its function runs as uid 1234.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

k8s_app "$T/name.toml" ku 'user = "nobody"'
run hk validate "$T/name.toml"
is "$rc" 65 "hk validate refuses a user name with kubernetes"
like "$err" 'services\.api\.user: "nobody": with backend "kubernetes", UID or UID:GID, numbers' \
    "  with the reason"
k8s_app "$T/root.toml" ku 'user = "0:0"'
run hk validate "$T/root.toml"
like "$rc $err" '^65 .*services\.api\.user: "0:0" is uid 0: allowed only with server\.allow_root_services = true' \
    "uid 0 needs allow_root_services"

D=hk-ku-api
for engine in $(engines); do
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" ku 'size = "medium"
user = "1234:2345"
node_name = "node-a"'
	run hk validate "$T/app.toml"
	is "$rc" 0 "$engine: size, user and node_name validate with kubernetes" ||
	    diag "$err"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and apply"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	S=ku/api
	H=api.ku.localhost
	wait_t 60 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"

	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: a request wakes it"
	is "$(kc get deployment "$D" -o 'jsonpath={.spec.template.spec.containers[0].resources.limits.memory} {.spec.template.spec.containers[0].resources.limits.cpu}')" \
	    "2048Mi 2000m" "$engine: kubectl: the container's limits are size medium's"
	is "$(kc get deployment "$D" -o 'jsonpath={.spec.template.spec.securityContext.runAsUser}:{.spec.template.spec.securityContext.runAsGroup}')" \
	    "1234:2345" "$engine: kubectl: the pod runs as the service's user"
	is "$(kc get deployment "$D" -o 'jsonpath={.spec.template.spec.nodeName}')" \
	    "node-a" "$engine: kubectl: on the service's node_name"
	cid=$(containers)
	is "$(podman inspect --format '{{.HostConfig.Memory}}' "$cid")" \
	    2147483648 "$engine: the pod's container has that memory limit"
	like "$(podman top "$cid" user group 2>&1)" '1234 +2345' \
	    "$engine: its function runs as uid 1234, gid 2345" ||
	    podman top "$cid" user group 2>&1 | sed 's/^/# /'
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	wait_t 60 no_container
	ok $? "$engine: no pod is left"

	stop_pid "$idle_pid"; stop_pid "$gw_pid"; stop_pid "$scale_pid"
	stop_pid "$events_pid"
	for _l in events gw idle scale; do
		mv "$T/$_l.log" "$T/$_l-$engine.log"
	done
	kc delete deployment "$D" >/dev/null 2>&1
	kc delete service "$D" >/dev/null 2>&1
done

done_testing
