#!/bin/sh
# backend = "kubernetes", secrets_env = true: each secret also as the
# variable of its name, as the exec backend gives it (2014), but as a
# reference to the key of the revision's Secret (valueFrom.secretKeyRef),
# so that the Deployment holds no value; on both stores, against the
# Kubernetes stand-in (tests/k8s/standin.py, which resolves a
# secretKeyRef as a kubelet does when it runs the pod's container).  The
# function is fn/ct-secret.py, made the image's /fn.py: it answers the
# digest of $DB_PASSWORD (/env) and of its file (/file).  Woken, the
# function sees the value in its variable and its file; kubectl and
# python3-kubernetes read, in the Deployment, the variable's reference
# to Secret hk-APP-api-r1, key DB_PASSWORD, and the value nowhere.  No
# log of hk's daemons, nor the stand-in's, holds the value.  A value
# with a NUL byte cannot be a variable: the start fails with that
# reason, as with exec.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
SIMG=
trap 'k8s_cleanup; [ -z "$SIMG" ] || podman rmi -f "$SIMG" >/dev/null 2>&1; _cleanup' EXIT
k8s_setup

mkdir "$T/img"
cp "$IFN/ct-secret.py" "$T/img/fn.py"
printf 'FROM %s\nCOPY fn.py /fn.py\n' "$IMAGE" >"$T/img/Containerfile"
SIMG=$(podman build -q --pull=never --network none --format docker \
    -t "localhost/hk-k8s-senv-$$:1" "$T/img" 2>"$T/build.log" | tail -1)
ok $? "an image of fn/ct-secret.py, from the test image" ||
    sed 's/^/# /' "$T/build.log"

app() {
	k8s_app "$1" "$A" 'secrets = ["DB_PASSWORD"]
secrets_env = true'
	sed -i "s|^image = .*|image = \"localhost/hk-k8s-senv-$$:1\"|" "$1"
}

digest() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
for engine in $(engines); do
	A=ke$engine
	D=hk-$A-api
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\"
secret_key_file = \"$T/secret-$engine.key\""
	V=$(python3 -c 'import secrets; print("hk-k8s-env-" + secrets.token_hex(20))')
	printf '%s' "$V" | hk secret set "$A" DB_PASSWORD >"$T/out.set" 2>&1
	ok $? "$engine: hk secret set" || sed 's/^/# /' "$T/out.set"
	app "$T/app.toml"
	run hk validate "$T/app.toml"
	is "$rc" 0 "$engine: secrets_env validates with kubernetes" || diag "$err"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	S=$A/api
	H=api.$A.localhost
	wait_t 180 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"

	kill -STOP "$idle_pid"
	is "$(get "$H" /env)$(cat "$T/body")" "200$(digest "$V")" \
	    "$engine: woken, the function reads the value from \$DB_PASSWORD"
	is "$(get "$H" /file)$(cat "$T/body")" "200$(digest "$V")" \
	    "$engine: and from its file"
	kc get deployment "$D" -o json >"$T/dep.json"
	is "$(kc get deployment "$D" -o 'jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.value}{.valueFrom.secretKeyRef.name}/{.valueFrom.secretKeyRef.key} {end}')" \
	    "PORT=8080/ CREDENTIALS_DIRECTORY=/run/secrets/ DB_PASSWORD=$D-r1/DB_PASSWORD " \
	    "$engine: kubectl: DB_PASSWORD refers to key DB_PASSWORD of Secret $D-r1"
	run /usr/bin/python3 -c 'import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
d = client.AppsV1Api().read_namespaced_deployment(sys.argv[2], "default")
for e in d.spec.template.spec.containers[0].env:
    if e.value_from is not None:
        r = e.value_from.secret_key_ref
        print(e.name, repr(e.value), r.name, r.key, r.optional)' \
	    "$KUBECONFIG" "$D"
	is "$rc $out" "0 DB_PASSWORD None $D-r1 DB_PASSWORD None" \
	    "$engine: python3-kubernetes reads the same reference, and no value" ||
	    diag "$err"
	! grep -qF -- "$V" "$T/dep.json"
	ok $? "$engine: the value is nowhere in the Deployment"
	is "$(kc get secret "$D-r1" -o 'jsonpath={.data.DB_PASSWORD}')" \
	    "$(printf '%s' "$V" | base64 -w0)" "$engine: Secret $D-r1 holds it"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"

	# a value no variable can hold: refused at the start, with why
	printf 'a\000b' | hk secret set "$A" DB_PASSWORD >"$T/out.set" 2>&1
	ok $? "$engine: a value with a NUL byte is set"
	get "$H" /env >/dev/null
	wait_t 60 status_says "$S" "holds a NUL byte: not a variable (secrets_env)"
	ok $? "$engine: the next start fails: the value holds a NUL byte" ||
	    hk status "$S" | sed 's/^/# /'

	stop_pid "$idle_pid"; stop_pid "$gw_pid"; stop_pid "$scale_pid"
	stop_pid "$events_pid"
	! grep -qF -e "$V" "$T/scale.log" "$T/gw.log" "$T/idle.log" \
	    "$T/events.log" "$T/standin.log"
	ok $? "$engine: no log holds the value"
	! grep -Eq 'Sanitizer|runtime error' "$T"/scale.log "$T"/gw.log \
	    "$T"/idle.log "$T"/events.log
	ok $? "$engine: no sanitizer report (make SANITIZE=1)" ||
	    grep -E -A30 'Sanitizer|runtime error' "$T"/*.log | sed 's/^/# /'
	for _l in events gw idle scale; do
		mv "$T/$_l.log" "$T/$_l-$engine.log"
	done
	kc delete deployment "$D" >/dev/null 2>&1
	kc delete service "$D" >/dev/null 2>&1
	kc delete secrets -l "hakopod.io/app=$A" >/dev/null 2>&1
done

done_testing
