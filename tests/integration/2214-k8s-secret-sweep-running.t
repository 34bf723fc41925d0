#!/bin/sh
# backend = "kubernetes": while hk-scale runs, its sweep deletes again,
# every 5 minutes (time_unit_ms = 10: 3 s), the Secrets of this
# installation that nothing uses, and no other, on both stores, against
# the Kubernetes stand-in (tests/k8s/standin.py).  The app's service
# "api" has a secret, so revision 1 has its Secret hk-APP-api-r1.  Woken
# and held awake (hk-idle stopped), Secrets are made with kubectl,
# labelled as hk labels its own: one of revision 7 of "api" (no
# instance, no Deployment, not its revision), one of a service "gone"
# that no longer exists, one of another installation, one without hk's
# labels.  Without a restart of hk-scale, the first two are deleted
# within a generous bound, each logged; the pod's own Secret (r1, its
# instance runs) and the two others are left.  Asleep, one more of
# revision 9 is deleted in turn, and r1 (the current revision) is left.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
k8s_setup

# secret NAME INSTALLATION SERVICE REVISION: a Secret as hk labels its own
secret() {
	cat <<YAML | kc create -f - >/dev/null
apiVersion: v1
kind: Secret
metadata:
  name: $1
  labels:
    app.kubernetes.io/managed-by: hakopod
    hakopod.io/installation: "$2"
    hakopod.io/app: "$A"
    hakopod.io/service: "$3"
    hakopod.io/revision: "$4"
type: Opaque
data: {K: dg==}
YAML
}
there() { kc get secret "$1" >/dev/null 2>&1; }
gone() { ! there "$1"; }

for engine in $(engines); do
	A=kv$engine
	D=hk-$A-api
	S=$A/api
	H=api.$A.localhost
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\"
secret_key_file = \"$T/secret-$engine.key\""
	printf 'v' | hk secret set "$A" DB_PASSWORD >"$T/out.set" 2>&1
	ok $? "$engine: hk secret set" || sed 's/^/# /' "$T/out.set"
	k8s_app "$T/app.toml" "$A" 'secrets = ["DB_PASSWORD"]'
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 1 applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 120 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$engine: woken, it answers"
	spid=$scale_pid
	I=$(install)
	secret "$D-r7" "$I" api 7 &&
	    secret "hk-$A-gone-r1" "$I" gone 1 &&
	    secret "$D-r8" 0123456789abcdef0123456789abcdef api 8 &&
	    kc create secret generic "hk-$A-plain" --from-literal=K=v >/dev/null
	ok $? "$engine: four Secrets made with kubectl while hk-scale runs"
	wait_t 120 gone "$D-r7"
	ok $? "$engine: revision 7's Secret, used by nothing, is deleted"
	wait_t 120 gone "hk-$A-gone-r1"
	ok $? "$engine: so is that of a service that is gone"
	grep -q "kubernetes: secret default/$D-r7: no instance or Deployment uses it: deleted" "$T/scale.log" &&
	    grep -q "kubernetes: secret default/hk-$A-gone-r1: no instance or Deployment uses it: deleted" "$T/scale.log"
	ok $? "$engine: each delete is logged"
	[ "$scale_pid" = "$spid" ] && ! grep -q '^State:.*Z' "/proc/$spid/status" 2>/dev/null &&
	    [ -e "/proc/$spid" ]
	ok $? "$engine: by the hk-scale that runs, not a restart"
	is "$(get "$H" /x)" 200 "$engine: the service still answers"
	there "$D-r1"
	ok $? "$engine: its pod's own Secret is left"
	there "$D-r8"
	ok $? "$engine: another installation's is left"
	there "hk-$A-plain"
	ok $? "$engine: one without hk's labels is left"

	kill -CONT "$idle_pid"
	wait_t 60 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"
	secret "$D-r9" "$I" api 9
	ok $? "$engine: a Secret of revision 9 made with kubectl"
	wait_t 120 gone "$D-r9"
	ok $? "$engine: it is deleted too"
	there "$D-r1"
	ok $? "$engine: the current revision's is left"
	is "$(grep -c 'kubernetes: secret .*: deleted' "$T/scale.log")" 3 \
	    "$engine: nothing else is deleted"
	k8s_round_end "$engine"
	kc delete secret "$D-r1" "$D-r8" "hk-$A-plain" >/dev/null 2>&1
done

done_testing
