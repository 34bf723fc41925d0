#!/bin/sh
# The Kubernetes stand-in (tests/k8s/standin.py, started by
# scripts/k8s-standin: no real API server can run on these machines),
# checked by real clients, so that hk's Kubernetes backend is written
# against the wire protocol a cluster speaks.  kubectl (HK_TEST_KUBECTL
# names another one) over TLS with a bearer token: version; a Deployment
# of the test image and its Service created from YAML; get -o json and
# the human-readable table; scale to 1, the EndpointSlice ready (a bounded
# poll), and the loopback endpoint answered by the container's process;
# a watch (get -w, in the background) sees the endpoint come and go as it
# scales to 0, and the container is removed; a Secret mounted read-only
# as files in the pod; a new revision rolls: the old pod serves until the
# new one is ready; a container that exits makes the endpoint not ready;
# events.k8s.io Events listed.  Then python3-kubernetes
# (tests/k8s/client-check.py, its output diffed): deployments by label,
# the scale patched, readiness by a watch from a list's resourceVersion,
# a dropped watch resumed from its resourceVersion, an events.k8s.io/v1
# HTTPIdleWake Event written and read back, 410 Gone from a compacted
# resourceVersion, 409 Conflict, 404.  A wrong token is 401 to both
# clients; a wrong CA is an x509 error to kubectl; the client certificate
# and in-cluster credentials (scripts/k8s-standin's serviceaccount/) are
# accepted, and hk reads each of them (lib/kubeconfig.c, through
# tests/tools/kube-creds) to a /version answered over verified TLS; kubectl delete removes a Service's slice and a Deployment's
# pod; a watch cut mid-stream is an error to curl; a watch sends BOOKMARKs
# when asked and ends cleanly at its timeoutSeconds.  On SIGTERM the
# stand-in removes its containers; none is left with its label.
. tests/integration/lib.sh

KUBECTL=${HK_TEST_KUBECTL:-kubectl}
for t in "$KUBECTL" podman openssl curl; do
	command -v "$t" >/dev/null
	ok $? "$t is installed (scripts/deps)" || done_testing
done
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null
ok $? "python3-kubernetes is installed (scripts/deps)" || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE" || done_testing

. tests/integration/lib/k8s.sh
k8s_start
ok $? "scripts/k8s-standin starts the stand-in" || done_testing
URL=$(cat "$K/url")
TOKEN=$(cat "$K/token")

kc() { "$KUBECTL" "$@"; }
# containers: the IDs of the stand-in's containers, by its label
containers() {
	podman ps -aq --no-trunc --filter "label=hk.k8s-standin=$INSTANCE" \
	    2>/dev/null
}
container_count_is() { [ "$(containers | grep -c .)" -eq "$1" ]; }
# slice FIELD...: python over the EndpointSlices of service fn, as kubectl
# gives them (-o json); prints what the expression says
slice() {
	kc get endpointslices -l kubernetes.io/service-name=fn -o json |
	    /usr/bin/python3 -c "import json, sys
items = json.load(sys.stdin)['items']
eps = [e for s in items for e in (s.get('endpoints') or [])]
ports = [p['port'] for s in items for p in (s.get('ports') or [])]
$1"
}
ready_count_is() {
	[ "$(slice "print(sum(1 for e in eps if e['conditions']['ready']))")" \
	    = "$1" ]
}
ready_endpoint() {
	slice "print(' '.join('%s:%d' % (e['addresses'][0], ports[0]) for e in eps if e['conditions']['ready']))"
}

run kc version
like "$out" 'Server Version: .*v1\.22\.0-hk-standin' \
    "kubectl version: the stand-in's version" || diag "$err"

cat >"$T/app.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: fn
  labels: {hk.installation: test, hk.app: demo, hk.service: fn, hk.revision: "1"}
spec:
  replicas: 0
  selector:
    matchLabels: {hk.app: demo, hk.service: fn}
  template:
    metadata:
      labels: {hk.app: demo, hk.service: fn}
    spec:
      nodeName: node-a
      securityContext: {runAsUser: 65534, runAsGroup: 65534}
      containers:
      - name: fn
        image: $IMAGE
        ports:
        - {name: http, containerPort: 8080}
        env:
        - {name: GREETING, value: standin}
        resources:
          limits: {memory: 256Mi, cpu: 500m}
        volumeMounts:
        - {name: secrets, mountPath: /run/hk-secrets, readOnly: true}
      volumes:
      - name: secrets
        secret: {secretName: fn-rev1}
---
apiVersion: v1
kind: Service
metadata:
  name: fn
spec:
  selector: {hk.app: demo, hk.service: fn}
  ports:
  - {name: http, port: 80, targetPort: http}
YAML
run kc create secret generic fn-rev1 --from-literal=token=s3cret-1
is "$rc $out" "0 secret/fn-rev1 created" "kubectl create secret generic"
is "$(kc get secret fn-rev1 -o 'jsonpath={.data.token}')" \
    "$(printf s3cret-1 | base64)" "kubectl get secret: the data, base64"
run kc create -f "$T/app.yaml"
is "$rc $out" "0 deployment.apps/fn created
service/fn created" "kubectl create -f: a Deployment and its Service" ||
    diag "$err"

run kc get deployments -o json
is "$(echo "$out" | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)["items"][0]
m = d["metadata"]
print(d["kind"], m["name"], d["spec"]["replicas"], m["generation"],
      m["labels"]["hk.installation"], m["uid"] != "",
      m["resourceVersion"].isdigit())')" \
    "Deployment fn 0 1 test True True" \
    "kubectl get deployments -o json: kind, name, replicas, generation, labels, uid, resourceVersion"
run kc get deployments
like "$(echo "$out" | tr -s ' ')" '^NAME READY UP-TO-DATE AVAILABLE AGE
fn 0/0 0 0 [0-9]+s$' "kubectl get deployments: the table"
slice_port_is() { [ "$(slice "print(ports)")" = "[$1]" ]; }
wait_t 10 slice_port_is 8080
ok $? "the Service has an EndpointSlice, its port the named containerPort"

# Scale to 1: a container answers on the ready endpoint.
bg kc get endpointslices -l kubernetes.io/service-name=fn -w \
    >"$T/watch.out" 2>&1
WATCH=$last_pid
run kc scale deployment fn --replicas=1
is "$rc $out" "0 deployment.apps/fn scaled" "kubectl scale --replicas=1"
wait_t 60 ready_count_is 1
ok $? "kubectl get endpointslices: one endpoint becomes ready"
EP=$(ready_endpoint)
like "$EP" '^127\.[0-9]+\.[0-9]+\.[0-9]+:8080$' "on loopback: $EP"
is "$(slice "print(eps[0]['nodeName'], eps[0]['targetRef']['kind'], eps[0]['conditions']['serving'])")" \
    "node-a Pod True" "the endpoint names its node and pod, and serves"
like "$(curl -sS --max-time 10 "http://$EP/")" '^standin pid=[0-9]+ host=fn-' \
    "curl to the endpoint: the test image's process answers"
ID=$(containers)
like "$ID" '^[0-9a-f]{64}$' "one container carries the stand-in's label"
like "$(curl -sS --cacert "$K/ca.crt" -H "Authorization: Bearer $TOKEN" \
    "$URL/standin/containers")" "\"$ID\"" "the stand-in lists it"
is "$(podman container inspect --format '{{.Config.User}} {{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}' "$ID")" \
    "65534:65534 268435456 500000000" \
    "run as the securityContext's user, with the limits"
# pod_file ID PATH: a file in the pod (the image has python3, no cat)
pod_file() {
	podman exec "$1" /usr/bin/python3 -c \
	    'import sys; sys.stdout.write(open(sys.argv[1]).read())' "$2"
}
is "$(pod_file "$ID" /run/hk-secrets/token)" s3cret-1 \
    "the Secret is a file in the pod"
is "$(podman container inspect --format '{{range .Mounts}}{{.Destination}} {{.RW}}{{end}}' "$ID")" \
    "/run/hk-secrets false" "mounted read-only"
run kc get deployment fn
like "$(echo "$out" | tr -s ' ' | tail -1)" '^fn 1/1 1 1 ' \
    "kubectl get deployment: 1/1 ready"
wait_t 20 grep -q "$(echo "$EP" | cut -d: -f1) *true" "$T/watch.out"
ok $? "kubectl get -w saw the endpoint become ready" || sed 's/^/# /' "$T/watch.out"

# A new revision rolls: the old pod serves until the new one is ready.
run kc create secret generic fn-rev2 --from-literal=token=s3cret-2
bg kc get endpointslices -l kubernetes.io/service-name=fn -w \
    >"$T/roll.out" 2>&1
ROLL=$last_pid
run kc patch deployment fn -p '{"metadata": {"labels": {"hk.revision": "2"}}, "spec": {"template": {"spec": {"volumes": [{"name": "secrets", "secret": {"secretName": "fn-rev2"}}], "containers": [{"name": "fn", "env": [{"name": "GREETING", "value": "rev2"}]}]}}}}'
is "$rc $out" "0 deployment.apps/fn patched" "kubectl patch: a new template"
rev2_answers() {
	[ "$(curl -sS --max-time 5 "http://$(ready_endpoint | cut -d' ' -f1)/" |
	    cut -d' ' -f1)" = rev2 ]
}
wait_t 60 rev2_answers
ok $? "the new revision's pod becomes the ready endpoint"
wait_t 30 container_count_is 1
ok $? "the old pod's container is removed"
EP2=$(ready_endpoint)
ID2=$(containers)
ok "$([ "$EP2" != "$EP" ] && [ "$ID2" != "$ID" ]; echo $?)" \
    "a new pod: $EP2, another container"
is "$(pod_file "$ID2" /run/hk-secrets/token)" s3cret-2 \
    "with the new revision's Secret"
wait_t 20 grep -q "${EP2%:*} *true" "$T/roll.out"
ok $? "kubectl get -w saw the new pod's endpoint ready"
stop_pid "$ROLL"
grep -q . "$T/roll.out" &&
    ! awk '$1 != "NAME" && $5 !~ /true/ { bad = 1 } END { exit !bad }' \
    "$T/roll.out"
ok $? "every change the watch saw during the roll had a ready endpoint" ||
    sed 's/^/# /' "$T/roll.out"
is "$(kc get deployment fn -o 'jsonpath={.metadata.generation} {.metadata.annotations.deployment\.kubernetes\.io/revision}')" \
    "3 2" "generation bumped by each change of the spec (scale, patch), the revision by the template's"

# A container that exits: its endpoint is not ready.
podman stop -t 5 "$ID2" >/dev/null 2>>"$T/podman.log"
wait_t 30 ready_count_is 0
ok $? "a container that exits: the endpoint is not ready"
is "$(slice "print(len(eps))")" 1 "(it is still listed)"

# Scale to 0: the endpoint goes, the container is removed.
run kc scale deployment fn --replicas=0
is "$rc $out" "0 deployment.apps/fn scaled" "kubectl scale --replicas=0"
wait_t 30 container_count_is 0
ok $? "its container is removed"
wait_t 20 sh -c "tail -1 '$T/watch.out' | grep -q '<unset>'"
ok $? "kubectl get -w saw the endpoints go" || sed 's/^/# /' "$T/watch.out"
stop_pid "$WATCH"

# python3-kubernetes, as hk's backend will use the API.
cat >"$T/client.want" <<WANT
version: v1.22.0-hk-standin
deployments hk.app=demo: fn
deployments hk.app=other: 0
slices of fn: 1, ready=[[]]
scale fn: spec.replicas=1
watch: MODIFIED ready=[False]
watch: MODIFIED ready=[True]
deployment fn: readyReplicas=1 availableReplicas=1
endpoint: loopback port 8080
scale fn: spec.replicas=0
watch: MODIFIED ready=[False]
watch: MODIFIED ready=[]
watch resumed: True
event read back: Normal HTTPIdleWake Deployment/fn: a request woke it
events of fn with reason HTTPIdleWake: 1
watch from a compacted resourceVersion: ApiException 410
replace with a stale resourceVersion: 409 Conflict
read a missing deployment: 404 Not Found
WANT
/usr/bin/python3 "$HK_TOP/tests/k8s/client-check.py" "$KUBECONFIG" fn \
    >"$T/client.out" 2>"$T/client.log"
diff_ok "$T/client.out" "$T/client.want" \
    "python3-kubernetes: list, scale, watch, resume, event, 410, 409, 404"
run kc get events.events.k8s.io
like "$(echo "$out" | tr -s ' ')" ' Normal HTTPIdleWake deployment/fn a request woke it ' \
    "kubectl get events.events.k8s.io: the HTTPIdleWake event"
run kc get events -o 'jsonpath={.items[0].reason} {.items[0].involvedObject.name}'
is "$out" "HTTPIdleWake fn" "and core v1 events show it too"

# A watch cut mid-stream.
curl -sSN --cacert "$K/ca.crt" -H "Authorization: Bearer $TOKEN" \
    "$URL/apis/apps/v1/namespaces/default/deployments?watch=1" \
    >"$T/curl-watch.out" 2>"$T/curl-watch.err" &
CURL=$!
_pids="$_pids $CURL"
wait_t 20 grep -q '"ADDED"' "$T/curl-watch.out"
ok $? "curl watches the deployments"
curl -sS -X POST --cacert "$K/ca.crt" -H "Authorization: Bearer $TOKEN" \
    "$URL/standin/drop-watches?abrupt=1" >/dev/null
wait "$CURL"
is "$?" 18 "a watch cut mid-stream: curl: transfer closed with data outstanding"

# Bookmarks when asked (after 5 s without a change), and a watch's
# timeoutSeconds ends it cleanly.
curl -sSN --cacert "$K/ca.crt" -H "Authorization: Bearer $TOKEN" \
    "$URL/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?watch=true&allowWatchBookmarks=true" \
    >"$T/bookmark.out" 2>&1 &
CURL=$!
_pids="$_pids $CURL"
wait_t 20 grep -q '"BOOKMARK"' "$T/bookmark.out"
ok $? "allowWatchBookmarks: a BOOKMARK event comes"
is "$(grep '"BOOKMARK"' "$T/bookmark.out" | head -1 | /usr/bin/python3 -c 'import json, sys
e = json.load(sys.stdin)
print(e["object"]["kind"], e["object"]["metadata"]["resourceVersion"].isdigit())')" \
    "EndpointSlice True" "with the kind and a resourceVersion"
kill "$CURL"
run curl -sSN --cacert "$K/ca.crt" -H "Authorization: Bearer $TOKEN" \
    "$URL/apis/apps/v1/namespaces/default/deployments?watch=1&timeoutSeconds=1"
is "$rc $(echo "$out" | grep -c '"ADDED"')" "0 1" \
    "timeoutSeconds: the watch ends cleanly, after the ADDED of the current one"

# Who may talk to it.
sed "s/token: $TOKEN/token: wrong-$TOKEN/" "$KUBECONFIG" >"$T/bad-token"
run kc --kubeconfig "$T/bad-token" get deployments
is "$rc $err" "1 error: You must be logged in to the server (Unauthorized)" \
    "a wrong token: kubectl is refused"
run /usr/bin/python3 "$HK_TOP/tests/k8s/client-check.py" "$T/bad-token" \
    unauthorized
is "$out" "list: 401 Unauthorized" "and python3-kubernetes too"
mkdir "$T/other"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca \
    -keyout "$T/other/ca.key" -out "$T/other/ca.crt" 2>/dev/null
sed "s|certificate-authority: .*|certificate-authority: $T/other/ca.crt|" \
    "$KUBECONFIG" >"$T/bad-ca"
run kc --kubeconfig "$T/bad-ca" get deployments
like "$rc $err" '^1 .*x509: certificate signed by unknown authority' \
    "a wrong CA: kubectl refuses the server's certificate"
run /usr/bin/python3 "$HK_TOP/tests/k8s/client-check.py" \
    "$K/serviceaccount" "$URL" incluster
is "$out" "in-cluster: deployments: fn" \
    "python3-kubernetes with in-cluster credentials (service account token and CA)"
run kc --context standin-cert get deployments -o name
is "$rc $out" "0 deployment.apps/fn" "a client certificate of the CA is accepted"

# hk's own reading of the same credentials (lib/kubeconfig.c, through
# tests/tools/kube-creds): a GET of /version, TLS verified, with what it
# read; the same refusals as the clients'.
KC=$HK_BUILD/tests/tools/kube-creds
PORT=${URL##*:}
run "$KC" "$KUBECONFIG"
is "$rc $(echo "$out" | tr '\n' ' ')" \
    "0 server $URL namespace default ca yes token yes cert no version 200 v1.22.0-hk-standin " \
    "hk reads the kubeconfig's token context, and the server answers it"
run "$KC" -c standin-cert "$KUBECONFIG"
is "$rc $(echo "$out" | sed -n 's/^\(cert\|token\|version\) //p' | tr '\n' ' ')" \
    "0 no yes 200 v1.22.0-hk-standin " \
    "... its client certificate context"
run env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$PORT" \
    "$KC" -i "$K/serviceaccount"
is "$rc $(echo "$out" | tail -n 1)" "0 version 200 v1.22.0-hk-standin" \
    "... in-cluster credentials"
chmod 600 "$T/bad-token" "$T/bad-ca"
run "$KC" "$T/bad-token"
is "$rc $(echo "$out" | tail -n 1)" "69 version 401 -" \
    "... a wrong token: 401"
run "$KC" "$T/bad-ca"
like "$rc $(echo "$out" | tail -n 1)" '^69 version error: SSL certificate problem' \
    "... a wrong CA: the server's certificate is refused"
chmod 644 "$T/bad-token"
run "$KC" "$T/bad-token"
is "$rc $err" "78 kube-creds: $T/bad-token: mode 0644: must be 0600 or stricter" \
    "... a kubeconfig others may read: refused"
! echo "$out$err" | grep -q "$TOKEN"
ok $? "... and no token is printed"

# Deletion: a Service's slice goes with it, a Deployment's pod too.
run kc scale deployment fn --replicas=1
wait_t 60 container_count_is 1
ok $? "scaled to 1 again: a container"
run kc delete service fn
is "$rc $out" '0 service "fn" deleted' "kubectl delete service"
is "$(kc get endpointslices -o name)" "" "its EndpointSlice is gone"
run kc delete deployment fn
is "$rc $out" '0 deployment.apps "fn" deleted' "kubectl delete deployment"
wait_t 30 container_count_is 0
ok $? "its pod's container is removed"
run kc get deployment fn
is "$rc $err" '1 Error from server (NotFound): deployments.apps "fn" not found' \
    "kubectl get: NotFound"

# Errors are the API's Status objects.
run curl -sS --cacert "$K/ca.crt" -H "Authorization: Bearer $TOKEN" \
    -w ' %{http_code}' "$URL/apis/apps/v1/namespaces/default/deployments/fn"
is "$out" '{"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "deployments.apps \"fn\" not found", "reason": "NotFound", "details": {"name": "fn", "group": "apps", "kind": "deployments"}, "code": 404} 404' \
    "a missing Deployment: 404 and a NotFound Status"
sed 's/matchLabels: {hk.app: demo, hk.service: fn}/matchLabels: {hk.app: other}/' \
    "$T/app.yaml" >"$T/bad.yaml"
run kc create -f "$T/bad.yaml"
like "$err" '^The Deployment "fn" is invalid: spec.template.metadata.labels: Invalid value: .*`selector` does not match template `labels`' \
    "a selector the template's labels do not match: Invalid (422)"

# SIGTERM: the stand-in removes its containers.
run kc create -f "$T/app.yaml"
run kc create -f "$T/app.yaml"
like "$rc $err" '^1 Error from server \(AlreadyExists\).*: deployments.apps "fn" already exists' \
    "created twice: AlreadyExists"
run kc scale deployment fn --replicas=1
wait_t 60 container_count_is 1
ok $? "created and scaled to 1 again: a container"
"$HK_TOP/scripts/k8s-standin" stop "$KPID"
alive "$KPID"
ok $((! $?)) "scripts/k8s-standin stop: the stand-in exits"
KPID=
is "$(containers | grep -c .)" 0 "no container with its label is left"
done_testing
