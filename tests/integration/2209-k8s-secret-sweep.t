#!/bin/sh
# backend = "kubernetes": hk-scale's sweep deletes the Secrets of this
# installation that nothing uses, and no other, on both stores, against
# the Kubernetes stand-in (tests/k8s/standin.py).  The app's service
# "api" is at revision 1 and sleeps.  Secrets made with kubectl, labelled
# as hk labels its own: one of revision 7 of "api" (no instance, no
# Deployment, not its revision), one of a service "gone" that no longer
# exists, one of revision 1 of "api" (its current revision), one of
# another installation, one without hk's labels, while hk-scale is down.
# hk-scale started again (the sweep is once every row is adopted, then
# every 5 minutes: 2214): the first two are deleted,
# each logged, the three others are left.
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
	A=kw$engine
	D=hk-$A-api
	S=$A/api
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" "$A"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 1 applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 120 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"
	I=$(install)
	# made while hk-scale is down: its sweep while it runs (2214) would
	# find them before the restart's
	stop_pid "$scale_pid"
	mv "$T/scale.log" "$T/scale-$engine-1.log"
	secret "$D-r7" "$I" api 7 &&
	    secret "hk-$A-gone-r1" "$I" gone 1 &&
	    secret "$D-r1" "$I" api 1 &&
	    secret "$D-r8" 0123456789abcdef0123456789abcdef api 8 &&
	    kc create secret generic "hk-$A-plain" --from-literal=K=v >/dev/null
	ok $? "$engine: five Secrets made with kubectl"
	start_scale
	ok $? "$engine: hk-scale starts again"
	wait_t 60 gone "$D-r7"
	ok $? "$engine: revision 7's Secret, used by nothing, is deleted"
	wait_t 60 gone "hk-$A-gone-r1"
	ok $? "$engine: so is that of a service that is gone"
	grep -q "kubernetes: secret default/$D-r7: no instance or Deployment uses it: deleted" "$T/scale.log" &&
	    grep -q "kubernetes: secret default/hk-$A-gone-r1: no instance or Deployment uses it: deleted" "$T/scale.log"
	ok $? "$engine: each delete is logged"
	there "$D-r1"
	ok $? "$engine: the current revision's is left"
	there "$D-r8"
	ok $? "$engine: another installation's is left"
	there "hk-$A-plain"
	ok $? "$engine: one without hk's labels is left"
	is "$(grep -c 'kubernetes: secret .*: deleted' "$T/scale.log")" 2 \
	    "$engine: nothing else is deleted"
	k8s_round_end "$engine"
	kc delete secret "$D-r1" "$D-r8" "hk-$A-plain" >/dev/null 2>&1
done

done_testing
