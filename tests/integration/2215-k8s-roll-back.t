#!/bin/sh
# backend = "kubernetes": a roll whose new revision fails is rolled back,
# so that the service keeps serving its healthy release, as hk's other
# backends keep it (release.c, 2019, 2111), on both stores, against the
# Kubernetes stand-in (tests/k8s/standin.py rolls a Deployment as a real
# one does: a template that is the old pod's again keeps that pod and
# removes the new one).
# Woken (revision 1, GREETING "one") and held awake, with a loop of
# requests running:
# - revision 2 (startup_timeout_seconds = 10) whose pod never gets ready
#   (its function never listens): its gate fails at the deadline,
#   the Deployment's template is revision 1's again (kubectl), revision
#   2's pod goes and revision 1's serves on;
# - revision 3 (startup_timeout_seconds = 300), whose container exits 3
#   at once: its gate fails with CrashLoopBackOff long before the
#   deadline, and the same follows;
# every request of the loop is answered (200), each of the others by
# revision 1.  Let sleep, the next wake starts revision 1, the one that
# passed its gate.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
LOOP=
IMGS=
trap '[ -z "$LOOP" ] || kill "$LOOP" 2>/dev/null; k8s_cleanup; [ -z "$IMGS" ] || podman rmi -f $IMGS >/dev/null 2>&1; _cleanup' EXIT
k8s_setup

# image NAME FN.PY-TEXT: an image of the test image with that /fn.py
image() {
	mkdir "$T/img-$1"
	printf '%s\n' "$2" >"$T/img-$1/fn.py"
	printf 'FROM %s\nCOPY fn.py /fn.py\n' "$IMAGE" >"$T/img-$1/Containerfile"
	_id=$(podman build -q --pull=never --network none --format docker \
	    -t "localhost/hk-k8s-rb-$1-$$:1" "$T/img-$1" 2>"$T/build.log" |
	    tail -1) && [ -n "$_id" ] && IMGS="$IMGS $_id"
}
image deaf 'import time
time.sleep(100000)'
ok $? "an image whose function never listens, from the test image" ||
    sed 's/^/# /' "$T/build.log"
image crash 'import sys
print("crashing on purpose", flush=True)
sys.exit(3)'
ok $? "an image whose function exits 3" || sed 's/^/# /' "$T/build.log"

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
# template NAME: the revision and image of the Deployment's pod template
template() {
	kc get deployment "$1" -o 'jsonpath={.spec.template.metadata.labels.hakopod\.io/revision} {.spec.template.spec.containers[0].image}' 2>/dev/null
}
template_is() { [ "$(template "$1")" = "$2" ]; }
answered_by() {
	[ "$(get "$H" /x)" = 200 ] && grep -q "^$1 pid=" "$T/body"
}
# five requests, each answered by revision 1: the count of the others
fails_of_five() {
	_f=0
	for _i in 1 2 3 4 5; do
		answered_by one || _f=$((_f + 1))
	done
	echo "$_f"
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
	A=kb$engine
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
	: >"$T/loop-$engine"
	loop "$T/loop-$engine" &
	LOOP=$!
	wait_t 30 test -s "$T/loop-$engine"

	# revision 2: its pod never ready
	sed -i -e 's/^GREETING = "one"/GREETING = "two"/' \
	    -e 's/^startup_timeout_seconds = .*/startup_timeout_seconds = 10/' \
	    -e "s|^image = .*|image = \"localhost/hk-k8s-rb-deaf-$$:1\"|" \
	    "$T/app.toml"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 2 applies" || diag "$err"
	wait_t 60 pods_are "$A" "1:True 2:False"
	ok $? "$engine: the roll: a pod of each revision, the old one alone ready" ||
	    diag "pods: $(pods "$A")"
	wait_t 90 grep -q "service=$S: revision 2 failed its readiness gate" \
	    "$T/scale.log"
	ok $? "$engine: at the deadline, revision 2 fails its gate"
	wait_t 60 grep -q "service=$S: kubernetes: revision 2's pod failed: the Deployment rolled back to revision 1, whose pod serves on" \
	    "$T/scale.log"
	ok $? "$engine: hk-scale rolls the Deployment back to revision 1"
	# (the gate is tried again after a backoff: a bounded poll each)
	wait_t 120 template_is "$D" "1 $IMAGE"
	ok $? "$engine: kubectl: the Deployment's template is revision 1's again" ||
	    diag "template: $(template "$D")"
	wait_t 120 pods_are "$A" "1:True"
	ok $? "$engine: revision 2's pod is gone, revision 1's serves on" ||
	    diag "pods: $(pods "$A")"
	is "$(fails_of_five)" 0 "$engine: requests are answered by revision 1"

	# revision 3: its container exits
	sed -i -e 's/^GREETING = "two"/GREETING = "three"/' \
	    -e 's/^startup_timeout_seconds = .*/startup_timeout_seconds = 300/' \
	    -e "s|^image = .*|image = \"localhost/hk-k8s-rb-crash-$$:1\"|" \
	    "$T/app.toml"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 3 applies" || diag "$err"
	wait_t 90 grep -q "service=$S: revision 3 failed its readiness gate: kubernetes: .*CrashLoopBackOff" \
	    "$T/scale.log"
	ok $? "$engine: revision 3 fails its gate: CrashLoopBackOff" ||
	    grep "service=$S" "$T/scale.log" | tail -5 | sed 's/^/# /'
	wait_t 60 grep -q "service=$S: kubernetes: revision 3's pod failed: the Deployment rolled back to revision 1, whose pod serves on" \
	    "$T/scale.log"
	ok $? "$engine: hk-scale rolls the Deployment back to revision 1"
	wait_t 120 template_is "$D" "1 $IMAGE"
	ok $? "$engine: kubectl: the Deployment's template is revision 1's again" ||
	    diag "template: $(template "$D")"
	wait_t 120 pods_are "$A" "1:True"
	ok $? "$engine: revision 3's pod is gone, revision 1's serves on" ||
	    diag "pods: $(pods "$A")"
	is "$(fails_of_five)" 0 "$engine: requests are answered by revision 1"

	touch "$T/loop-$engine.stop"
	wait "$LOOP"
	LOOP=
	is "$(sort -u "$T/loop-$engine" | tr '\n' ' ')" "200 " \
	    "$engine: no request failed across both ($(wc -l <"$T/loop-$engine") requests)" ||
	    sort "$T/loop-$engine" | uniq -c | sed 's/^/# /'
	run hk status "$S"
	like "$out" '^gate: +revision 3 failed: kubernetes: .*CrashLoopBackOff' \
	    "$engine: hk status: the gate of revision 3 failed, and why"
	like "$out" '^serving: +revision 1 \(the newest that passed its gate\)$' \
	    "$engine: hk status: revision 1 serves"

	kill -CONT "$idle_pid"
	wait_t 60 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	kill -STOP "$idle_pid"
	wait_t 60 answered_by one
	ok $? "$engine: woken, revision 1 answers, the one that passed its gate"
	kill -CONT "$idle_pid"
	k8s_round_end "$engine"
done

done_testing
