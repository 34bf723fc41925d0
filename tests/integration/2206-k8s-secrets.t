#!/bin/sh
# backend = "kubernetes": a service's secrets as a Secret of its
# revision, mounted read-only at /run/secrets, on both stores, against
# the Kubernetes stand-in (tests/k8s/standin.py, which mounts a Secret
# volume into its podman container as files).  The function is
# fn/ct-secret.py, made the image's /fn.py in an image built here from
# the test image: it answers the digest of /run/secrets/DB_PASSWORD, and
# "cd=DIR write=W uid=UID" (secrets_env: 2213).  Woken, the function
# reads the value from the file (read-only, as uid 1234); the value is in no variable of the
# Deployment or of the container; kubectl shows the Secret hk-APP-api-r1,
# labelled as hk's objects, Opaque, its data base64 of the value.  A new
# revision with a new value (the value and the apply are each one: N, as
# hk status says): woken, the function reads the new value
# from hk-APP-api-rN (APP: ks and the store), and r1, used by no pod, is deleted.  No log of
# hk-scale holds a value.
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
    -t "localhost/hk-k8s-secret-$$:1" "$T/img" 2>"$T/build.log" | tail -1)
ok $? "an image of fn/ct-secret.py, from the test image" ||
    sed 's/^/# /' "$T/build.log"

app() {
	k8s_app "$1" "${A:-ks}" 'user = "1234:2345"
secrets = ["DB_PASSWORD"]'"${2:-}"
	sed -i "s|^image = .*|image = \"localhost/hk-k8s-secret-$$:1\"|" "$1"
}
digest() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
for engine in $(engines); do
	# an app of its own each round: nothing of the last one is in the way
	A=ks$engine
	D=hk-$A-api
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\"
secret_key_file = \"$T/secret-$engine.key\""
	V=$(python3 -c 'import secrets; print("hk-k8s-" + secrets.token_hex(20))')
	printf '%s' "$V" | hk secret set "$A" DB_PASSWORD >"$T/out.set" 2>&1
	ok $? "$engine: hk secret set" || sed 's/^/# /' "$T/out.set"
	app "$T/app.toml"
	run hk validate "$T/app.toml"
	is "$rc" 0 "$engine: secrets validate with kubernetes" || diag "$err"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and apply" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	S=$A/api
	H=api.$A.localhost
	wait_t 180 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"

	kill -STOP "$idle_pid"
	is "$(get "$H" /file)$(cat "$T/body")" "200$(digest "$V")" \
	    "$engine: woken, the function reads the value from its file"
	is "$(get "$H" /info)$(cat "$T/body")" \
	    "200cd=/run/secrets write=EROFS uid=1234" \
	    "$engine: CREDENTIALS_DIRECTORY=/run/secrets, read-only, as uid 1234"
	kc get deployment "$D" -o json >"$T/dep.json"
	is "$(kc get deployment "$D" -o 'jsonpath={range .spec.template.spec.containers[0].env[*]}{.name} {end}')" \
	    "PORT CREDENTIALS_DIRECTORY " "$engine: no secret in the Deployment's environment"
	is "$(kc get deployment "$D" -o 'jsonpath={.spec.template.spec.volumes[0].secret.secretName} {.spec.template.spec.containers[0].volumeMounts[0].mountPath} {.spec.template.spec.containers[0].volumeMounts[0].readOnly}')" \
	    "$D-r1 /run/secrets true" "$engine: its pod mounts Secret $D-r1 read-only"
	! grep -qF -- "$V" "$T/dep.json"
	ok $? "$engine: the value is nowhere in the Deployment"
	# podman ps may fail under load: asked again, a bounded poll
	for _i in $(seq 30); do
		cid=$(containers)
		[ -z "$cid" ] || break
		sleep 1
	done
	podman inspect "$cid" >"$T/cenv" 2>&1
	grep -q 'CREDENTIALS_DIRECTORY=/run/secrets' "$T/cenv" &&
	    ! grep -qF -- "$V" "$T/cenv"
	ok $? "$engine: nor in the container's environment" ||
	    grep -n 'Env\|CRED\|rror' "$T/cenv" | sed 's/^/# /'
	is "$(echo "$cid" | wc -w)" 1 "$engine: one pod runs"
	is "$(kc get secret "$D-r1" -o 'jsonpath={.type} {.metadata.labels.hakopod\.io/app} {.metadata.labels.hakopod\.io/service} {.metadata.labels.hakopod\.io/revision} {.metadata.labels.hakopod\.io/installation}')" \
	    "Opaque $A api 1 $(install)" "$engine: kubectl: Secret $D-r1, labelled as hk's objects"
	is "$(kc get secret "$D-r1" -o 'jsonpath={.data.DB_PASSWORD}')" \
	    "$(printf '%s' "$V" | base64 -w0)" "$engine: its data base64 of the value"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"

	# a new revision, a new value
	V2=$(python3 -c 'import secrets; print("hk-k8s-" + secrets.token_hex(20))')
	printf '%s' "$V2" | hk secret set "$A" DB_PASSWORD >"$T/out.set" 2>&1
	ok $? "$engine: a new value set"
	app "$T/app.toml" '
[services.api.environment]
GREETING = "r2"'
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: revision 2 applies" || diag "$err"
	# (a new value is a new revision too: hk status says the last)
	N=$(hk status "$S" | sed -n 's/^revision: *\([0-9]*\) .*/\1/p')
	like "$N" '^[2-9]$' "$engine: revision $N"
	wait_t 180 grep -q "revision $N passed its readiness gate" "$T/scale.log"
	ok $? "$engine: revision $N passed its readiness gate"
	wait_t 60 scale_is "$S" sleeping
	kill -STOP "$idle_pid"
	is "$(get "$H" /file)$(cat "$T/body")" "200$(digest "$V2")" \
	    "$engine: woken, revision $N's pod reads the new value"
	is "$(kc get deployment "$D" -o 'jsonpath={.spec.template.spec.volumes[0].secret.secretName}')" \
	    "$D-r$N" "$engine: from Secret $D-r$N"
	wait_t 60 sh -c "! kubectl get secret $D-r1 >/dev/null 2>&1"
	ok $? "$engine: $D-r1, used by no pod, is deleted"
	is "$(kc get secrets -l "hakopod.io/app=$A" -o 'jsonpath={.items[*].metadata.name}')" \
	    "$D-r$N" "$engine: the service's only Secret is $D-r$N"
	kill -CONT "$idle_pid"
	wait_t 30 scale_is "$S" sleeping
	ok $? "$engine: idle, it sleeps"

	stop_pid "$idle_pid"; stop_pid "$gw_pid"; stop_pid "$scale_pid"
	stop_pid "$events_pid"
	! grep -qF -e "$V" -e "$V2" "$T/scale.log" "$T/standin.log"
	ok $? "$engine: no value in hk-scale's log"
	for _l in events gw idle scale; do
		mv "$T/$_l.log" "$T/$_l-$engine.log"
	done
	kc delete deployment "$D" >/dev/null 2>&1
	kc delete service "$D" >/dev/null 2>&1
	kc delete secrets -l "hakopod.io/app=$A" >/dev/null 2>&1
done

done_testing
