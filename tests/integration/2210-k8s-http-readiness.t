#!/bin/sh
# backend = "kubernetes": readiness = "http:/PATH" on top of the
# EndpointSlice's ready condition, on both stores, against the
# Kubernetes stand-in (tests/k8s/standin.py).  The image is the test
# image whose /fn.py answers GET /ready 503 until the file /tmp/release
# exists in its container (the test makes it with podman exec and python3: the
# function holds its readiness until released), every other GET 200.
# The service's readiness gate starts its pod: the EndpointSlice lists it
# ready (its port accepts connections), hk-scale's probe asks /ready and
# gets 503, and the service stays starting; released, it is ready at the
# pod's address, passes its gate and sleeps; a request wakes it (its new
# pod is released again) and is answered.  Other readiness kinds are
# still refused.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

. tests/integration/lib/k8s.sh
HIMG=
trap 'k8s_cleanup; [ -z "$HIMG" ] || podman rmi -f "$HIMG" >/dev/null 2>&1; _cleanup' EXIT
k8s_setup

mkdir "$T/img"
cat >"$T/img/fn.py" <<'PY'
import os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200
        if self.path == "/ready" and not os.path.exists("/tmp/release"):
            code = 503
        body = b"held\n" if code == 503 else b"ok\n"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("fn: GET %s %d" % (self.path, code), flush=True)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("0.0.0.0", int(os.environ.get("PORT", "8080"))),
                    H).serve_forever()
PY
printf 'FROM %s\nCOPY fn.py /fn.py\n' "$IMAGE" >"$T/img/Containerfile"
HIMG=$(podman build -q --pull=never --network none --format docker \
    -t "localhost/hk-k8s-held-$$:1" "$T/img" 2>"$T/build.log" | tail -1)
ok $? "an image whose /ready is held until released, from the test image" ||
    sed 's/^/# /' "$T/build.log"

cat >"$T/notify.toml" <<APP
schema_version = 1
name = "kn"

[services.a]
backend = "kubernetes"
image = "$IMAGE"
readiness = "notify"
APP
run hk validate "$T/notify.toml"
like "$rc $err" '^65 .*services\.a\.readiness: only "tcp" or "http:/PATH" with backend "kubernetes"' \
    "readiness = \"notify\" is refused, with the reason"

# held_probe: the pod's function answered /ready 503 (hk-scale's probe)
held_probe() {
	_c=$(containers)
	[ -n "$_c" ] && podman logs "$_c" 2>/dev/null | grep -q '^fn: GET /ready 503'
}
release() {
	podman exec "$(containers)" /usr/bin/python3 -c \
	    'open("/tmp/release", "w").close()'
}

for engine in $(engines); do
	A=kh$engine
	D=hk-$A-api
	S=$A/api
	H=api.$A.localhost
	new_store "$engine" "k8s$engine"
	idle_setup "$STORE" "kubernetes_config = \"$K/kubeconfig\"
kubernetes_namespace = \"default\""
	k8s_app "$T/app.toml" "$A" 'readiness = "http:/ready"'
	sed -i -e "s|^image = .*|image = \"localhost/hk-k8s-held-$$:1\"|" \
	    -e 's/^startup_timeout_seconds = .*/startup_timeout_seconds = 300/' \
	    "$T/app.toml"
	run hk validate "$T/app.toml"
	is "$rc" 0 "$engine: readiness = \"http:/ready\" validates with kubernetes" ||
	    diag "$err"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: and applies" || diag "$err"
	start_all
	ok $? "$engine: hk-events, hk-scale, hk-activate and hk-idle are ready"
	wait_t 120 held_probe
	ok $? "$engine: hk-scale's probe asks /ready: 503"
	like "$(endpoints "$D")" '^127\.77\.[0-9]+\.[0-9]+:8080 n=1$' \
	    "$engine: while the EndpointSlice lists the pod ready"
	is "$(scale_state "$S")" starting "$engine: the service is still starting"
	! grep -q "service=$S: ready at " "$T/scale.log"
	ok $? "$engine: not ready"
	release
	ok $? "$engine: released (podman exec)"
	wait_t 60 grep -q "service=$S: ready at 127\\.77\\." "$T/scale.log"
	ok $? "$engine: then ready at the pod's address"
	podman logs "$(containers)" 2>/dev/null | grep -q '^fn: GET /ready 200'
	ok $? "$engine: after a /ready answered 200"
	wait_t 60 scale_is "$S" sleeping
	ok $? "$engine: past its readiness gate, it sleeps"
	wait_t 30 no_container
	ok $? "$engine: its pod is gone"
	# a wake: its new pod is held too, until released
	get "$H" /x >"$T/code" &
	req=$!
	wait_t 60 held_probe
	ok $? "$engine: a request's wake: the new pod's /ready is held"
	release
	wait "$req"
	is "$(cat "$T/code")" 200 "$engine: released, the request is answered"
	is "$(cat "$T/body")" ok "$engine: by the function"
	k8s_round_end "$engine"
done

done_testing
