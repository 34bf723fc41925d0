# lib/k8s.sh - shell helpers of the Kubernetes backend's tests (22*-*.t),
# sourced after tests/integration/lib.sh and lib/idle.sh.  k8s_start
# starts the Kubernetes stand-in (tests/k8s/standin.py through
# scripts/k8s-standin: no real API server can run on these machines) in
# $K; at exit it is stopped by its PID (it removes its containers), then
# any container still carrying its label is removed by ID.  kubectl
# reads its kubeconfig ($KUBECONFIG).

K=$T/k8s
INSTANCE=
KPID=
k8s_cleanup() {
	[ -z "$KPID" ] || "$HK_TOP/scripts/k8s-standin" stop "$KPID"
	[ -n "$INSTANCE" ] || return 0
	for _id in $(podman ps -aq --no-trunc \
	    --filter "label=hk.k8s-standin=$INSTANCE" 2>/dev/null); do
		podman rm -f -t 0 "$_id" >/dev/null 2>&1
	done
}
trap 'k8s_cleanup; _cleanup' EXIT

# k8s_start: the stand-in started, KUBECONFIG exported; 1 (its log shown)
# if it did not start.
k8s_start() {
	KPID=$("$HK_TOP/scripts/k8s-standin" start "$K" 2>"$T/k8s-start.log") || {
		KPID=
		sed 's/^/# /' "$T/k8s-start.log"
		return 1
	}
	INSTANCE=$(cat "$K/instance")
	KUBECONFIG=$K/kubeconfig
	export KUBECONFIG
	ln -s "$K/standin.log" "$T/standin.log"
}

# k8s_setup: the tools, the test image ($IMAGE) and the stand-in, each
# checked; a missing one ends the test (failed).
k8s_setup() {
	for _t in kubectl podman openssl curl; do
		command -v "$_t" >/dev/null
		ok $? "$_t is installed (scripts/deps)" || done_testing
	done
	pg_missing_is_failure
	IMAGE=$("$HK_TOP/scripts/test-image")
	ok $? "the test image is there: $IMAGE" || done_testing
	k8s_start
	ok $? "scripts/k8s-standin starts the stand-in" || done_testing
}

# k8s_round_end ENGINE: the end of a store's round: its daemons stopped,
# their logs kept as NAME-ENGINE.log and checked for a sanitizer report,
# and the round's Deployment $D, its Service and the Events deleted.
k8s_round_end() {
	stop_pid "$idle_pid"; stop_pid "$gw_pid"; stop_pid "$scale_pid"
	stop_pid "$events_pid"
	for _l in events gw idle scale; do
		mv "$T/$_l.log" "$T/$_l-$1.log"
	done
	! grep -Eq 'Sanitizer|runtime error' "$T"/*-"$1".log
	ok $? "$1: no sanitizer report (make SANITIZE=1)" ||
	    grep -E -A30 'Sanitizer|runtime error' "$T"/*-"$1".log |
	    sed 's/^/# /'
	kc delete deployment "$D" >/dev/null 2>&1
	kc delete service "$D" >/dev/null 2>&1
	kc delete events.events.k8s.io --all >/dev/null 2>&1
}

kc() { kubectl "$@"; }
# containers: the IDs of the stand-in's running pods' containers
containers() {
	podman ps -q --no-trunc --filter "label=hk.k8s-standin=$INSTANCE" \
	    2>/dev/null
}
# replicas NAME: the Deployment's spec.replicas, as kubectl reads it
replicas() {
	kc get deployment "$1" -o 'jsonpath={.spec.replicas}' 2>/dev/null
}
replicas_is() { [ "$(replicas "$1")" = "$2" ]; }
# endpoints NAME: the ready endpoints of Service NAME's EndpointSlices,
# ADDRESS:PORT, and "n=COUNT" of all of them
endpoints() {
	kc get endpointslices -l "kubernetes.io/service-name=$1" -o json |
	    /usr/bin/python3 -c 'import json, sys
items = json.load(sys.stdin)["items"]
eps = [(e, s) for s in items for e in (s.get("endpoints") or [])]
print(" ".join(["%s:%d" % (e["addresses"][0], s["ports"][0]["port"])
    for e, s in eps if e["conditions"]["ready"]] + ["n=%d" % len(eps)]))'
}
no_endpoint() { [ "$(endpoints "$1")" = "n=0" ]; }
no_container() { [ -z "$(containers)" ]; }
# standin METHOD PATH: the stand-in's own test calls (/standin/PATH)
standin() {
	curl -sS -X "$1" --cacert "$K/ca.crt" \
	    -H "Authorization: Bearer $(cat "$K/token")" "$(cat "$K/url")/standin/$2"
}
json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
watches_started_over() {
	[ "$(standin GET watches | json_field started)" -gt "$1" ]
}
# status_says SERVICE TEXT: hk status SERVICE shows TEXT
status_says() { hk status "$1" 2>/dev/null | grep -qF "$2"; }
# install: the installation's ID, as hk-scale recorded it in the store
install() {
	case $STORE in
	sqlite://*)
		python3 -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT value FROM settings "
    "WHERE key = ?", ("hk-scale.installation",)).fetchone()
print(r[0] if r else "")' "${STORE#sqlite://}" ;;
	*)
		psql "$STORE" -qAtc "SELECT value FROM settings \
		    WHERE key = 'hk-scale.installation'" ;;
	esac
}
# k8s_events NAME: "REASON|ACTION|NOTE" of each events.k8s.io Event
# regarding Deployment NAME, in order
k8s_events() {
	kc get events.events.k8s.io -o json | /usr/bin/python3 -c 'import json, sys
items = json.load(sys.stdin)["items"]
items.sort(key=lambda e: e["eventTime"])
for e in items:
    r = e.get("regarding") or {}
    if r.get("kind") == "Deployment" and r.get("name") == sys.argv[1]:
        print("%s|%s|%s" % (e["reason"], e["action"], e.get("note", "")))' "$1"
}
k8s_event_seen() { k8s_events "$1" | grep -q "^$2|"; }
# k8s_app FILE NAME [SERVICE LINES]: an application NAME of one
# kubernetes service "api" of the test image, port 8080, public,
# idle_seconds = 300, startup_timeout_seconds = 60, written to FILE
k8s_app() {
	cat >"$1" <<APP
schema_version = 1
name = "$2"

[services.api]
backend = "kubernetes"
image = "$IMAGE"
port = 8080
public = true
${3:-}
[services.api.serverless]
idle_seconds = 300
startup_timeout_seconds = 60
APP
}
