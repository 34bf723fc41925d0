#!/bin/sh
# backend = "kubernetes": a container that exits fails the start with its
# pod's reason, on both stores, against the Kubernetes stand-in
# (tests/k8s/standin.py: as a kubelet, it reports a container that
# exited as waiting in CrashLoopBackOff, its exit code in lastState, and
# starts it again after a back-off).  The image is the test image whose
# /fn.py exits 3 at once.  With startup_timeout_seconds = 300, the start
# (the readiness gate's, then a request's wake) fails with
# "CrashLoopBackOff" and the exit status long before the deadline: in
# hk-scale's log, in hk status, in the gateway's 503; the Deployment is
# scaled to 0 again, and no pod is left.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
CIMG=
trap 'k8s_cleanup; [ -z "$CIMG" ] || podman rmi -f "$CIMG" >/dev/null 2>&1; _cleanup' EXIT
k8s_setup

mkdir "$T/img"
printf 'import sys\nprint("crashing on purpose", flush=True)\nsys.exit(3)\n' \
    >"$T/img/fn.py"
printf 'FROM %s\nCOPY fn.py /fn.py\n' "$IMAGE" >"$T/img/Containerfile"
CIMG=$(podman build -q --pull=never --network none --format docker \
    -t "localhost/hk-k8s-crash-$$:1" "$T/img" 2>"$T/build.log" | tail -1)
ok $? "an image whose function exits 3, from the test image" ||
    sed 's/^/# /' "$T/build.log"

for engine in $(engines); do
	A=kc$engine
	D=hk-$A-api
	S=$A/api
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" "$A"
	sed -i -e "s|^image = .*|image = \"localhost/hk-k8s-crash-$$:1\"|" \
	    -e 's/^startup_timeout_seconds = .*/startup_timeout_seconds = 300/' \
	    "$T/app.toml"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: a service whose container exits applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	why="kubernetes: pod $D-[0-9a-f]+-[0-9a-f]+: CrashLoopBackOff: back-off [0-9]+s restarting failed container=service pod=$D-[0-9a-f]+-[0-9a-f]+ \\(last exit status 3\\)"
	wait_t 120 grep -Eq "service=$S: .*revision 1.*: $why" "$T/scale.log"
	ok $? "$engine: its start fails: CrashLoopBackOff, exit status 3, not the deadline" ||
	    grep "service=$S" "$T/scale.log" | tail -5 | sed 's/^/# /'
	grep -q "pod $D-.*: container .* exited (3)" "$K/standin.log"
	ok $? "$engine: (the stand-in saw its container exit 3)"
	wait_t 30 replicas_is "$D" 0
	ok $? "$engine: its Deployment is scaled to 0 again"
	wait_t 30 no_container
	ok $? "$engine: no pod is left"
	wait_t 30 status_says "$S" CrashLoopBackOff
	ok $? "$engine: hk status gives the reason" ||
	    hk status "$S" | sed 's/^/# /'
	is "$(get "api.$A.localhost" /)" 503 "$engine: a request that wakes it is refused"
	like "$(cat "$T/body")" "^service failed to start: $why" \
	    "$engine: with the pod's reason"
	k8s_round_end "$engine"
done

done_testing
