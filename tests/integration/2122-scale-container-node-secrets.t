#!/bin/sh
# Secrets of a container service on another node (issue 36, "Functions
# on any node"; hk.toml(5) secrets, hk-hold(8)): the node is a podman
# API service in a network namespace of its own (lib/node.sh:
# 10.224.0.14, over TLS).  This host's secrets directory cannot be
# bind-mounted there: hk-scale creates the container with a tmpfs at
# /run/secrets and hk-hold as its entrypoint, puts the source and
# hk-hold into it, starts it, then puts the secrets into the tmpfs (the
# marker last), and hk-hold execs the function.  So:
#
#	- hk validate accepts secrets with node_name;
#	- woken through the gateway, the function (fn/ct-secret.py) answers
#	  the digest of $CREDENTIALS_DIRECTORY/DB_PASSWORD: the value's,
#	  from /run/secrets, which it cannot write, as nobody;
#	- the value is nowhere on the node's disk that the container has
#	  (its layer's upper directory, its own directory of podman's), not
#	  in podman inspect, not in hk logs nor any daemon's log; the
#	  container has no bind mount;
#	- hk-hold, without its marker, does not run the command;
#	- a node whose engine is Docker (scripts/docker-engine), which writes
#	  an archive put under a tmpfs to the layer on disk, is refused at
#	  the start: the wake's 503, its StartFailed event and hk-scale's
#	  log say why.
#
# SQLite only (2120 runs the node against both stores).  TAP lines name
# digests, never values.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh
. tests/integration/lib/node.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
IFN=$HK_TOP/tests/integration/fn

_stop_daemons() {
	for _p in ${idle_pid:-} ${gw_pid:-} ${scale_pid:-} ${events_pid:-}; do
		kill -CONT "$_p" 2>/dev/null
		stop_pid "$_p" 60 2>/dev/null
	done
}
trap '_stop_daemons; ct_cleanup; node_cleanup; _cleanup' EXIT
node_up_all 3

sha() {
	printf '%s' "$1" | sha256sum | cut -d' ' -f1
}

# A Docker engine of the test's own, as a second node (CT_DOCKER_DIR:
# ct_cleanup stops it).
CT_DOCKER_DIR=$T/docker
"$HK_TOP/scripts/docker-engine" start "$CT_DOCKER_DIR" >/dev/null
ok $? "a Docker engine runs: unix://$CT_DOCKER_DIR/docker.sock"

ct_config "secret_key_file = \"$T/secret.key\""
node_conf "$T/hakopod.toml"
cat >>"$T/hakopod.toml" <<CONF

[nodes.dock]
address = "127.0.0.1"
container_engine = "unix://$CT_DOCKER_DIR/docker.sock"
container_network = "host"
CONF

mkdir -p "$T/app/code"
cp "$IFN/ct-secret.py" "$T/app/code/app.py"
cat >"$T/app/hk.toml" <<APP
schema_version = 1
name = "sec"

[services.fn]
image = "$IMAGE"
source = "code"
command = ["python3", "app.py"]
node_name = "worker"
secrets = ["DB_PASSWORD"]
public = true

[services.fn.serverless]
idle_seconds = 3600

[services.dk]
image = "$IMAGE"
node_name = "dock"
secrets = ["DB_PASSWORD"]
public = true

[services.dk.serverless]
idle_seconds = 3600
APP
S=sec/fn
H=fn.sec.localhost

V=$(python3 -c 'import secrets; print("hk-node-" + secrets.token_hex(20))')
printf '%s' "$V" | hk secret set sec DB_PASSWORD >"$T/out.set" 2>&1
ok $? "hk secret set, the value on standard input"

run hk validate "$T/app/hk.toml"
is "$rc $err" "0 " "secrets with node_name validate"
run hk apply "$T/app/hk.toml"
is "$rc" 0 "and apply"
start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
wait_t 60 grep -q "service=$S: ready at $NODE:" "$T/scale.log"
ok $? "its first container on the node passes its readiness gate"
INST=$(ct_install "$STORE")
kill -STOP "$idle_pid"

is "$(get "$H" /file)" 200 "a request through the gateway is answered"
is "$(cat "$T/body")" "$(sha "$V")" \
    "the function read the secret's value from \$CREDENTIALS_DIRECTORY"
is "$(get "$H" /info)" 200 "its directory"
is "$(cat "$T/body")" "cd=/run/secrets write=EACCES uid=$(id -u nobody)" \
    "... /run/secrets, which nobody cannot write"

ID=$(ct_ids "$INST" running)
like "$ID" '^[0-9a-f]{64}$' "one container runs"
is "$(ct_inspect "$ID" '{{index .Config.Labels "hk.node"}} {{.HostConfig.Binds}} {{len .Mounts}}')" \
    "worker [] 0" "made on node worker, with no bind mount"
like "$(ct_inspect "$ID" '{{.Config.Entrypoint}}')" \
    '^\[?/\.hk/hold -t 60 /run/secrets' "hk-hold is its entrypoint"
UPPER=$(ct_inspect "$ID" '{{.GraphDriver.Data.UpperDir}}')
CTDIR=$(ct_inspect "$ID" '{{.StaticDir}}')
[ -d "$UPPER" ] && [ -d "$CTDIR" ]
ok $? "its layer's upper directory and its directory are there"
[ -x "$UPPER/.hk/hold" ] && [ -f "$UPPER/app/app.py" ]
ok $? "... holding hk-hold and the source (this test looks in the right place)"
! grep -rqF "$V" "$UPPER" "$CTDIR"
ok $? "the value is not on the node's disk"
! podman inspect "$ID" | grep -qF "$V"
ok $? "nor in podman inspect"
wait_t 20 sh -c "hk logs $S >'$T/logs.out' 2>&1"
ok $? "hk logs reads its output"
! grep -qF "$V" "$T/logs.out" "$T"/*.log
ok $? "the value is in no hk log nor daemon log"
kill -CONT "$idle_pid"

# Docker: refused at the start, with the reason where the user looks.
is "$(get dk.sec.localhost /file)" 503 "a service on a Docker node is not woken"
like "$(cat "$T/body")" "^service failed to start: secrets: node dock runs Docker, which writes an archive put under a container's tmpfs to its layer on the node's disk: the secrets would be there in clear" \
    "the 503's body says why"
grep -q "service=sec/dk: unable to start revision 1: secrets: node dock runs Docker, which writes an archive put under a container's tmpfs to its layer on the node's disk: the secrets would be there in clear" \
    "$T/scale.log"
ok $? "and hk-scale's log"
wait_t 30 sh -c "hk-events list --json -n 0 --kind StartFailed --service sec/dk | grep -q 'secrets: node dock runs Docker'"
ok $? "and its StartFailed event (hk events)"
is "$(docker -H "unix://$CT_DOCKER_DIR/docker.sock" ps -aq | grep -c .)" \
    0 "no container was made on the Docker node"

# hk-hold itself (it is static: it runs here as in any image): no marker
# within its deadline, the command is not run; a marker, it is, with the
# directory then read-only to its owner.
mkdir -m 0700 "$T/held"
run "$HK_BUILD/bin/hk-hold" -t 1 "$T/held" touch "$T/ran"
is "$rc $err" "75 hk-hold: error: $T/held: no secrets within 1 s (hk-scale writes them once the container runs): not started" \
    "hk-hold: no marker within -t, exit 75 and why"
[ ! -e "$T/ran" ]
ok $? "... and the command did not run"
: >"$T/held/.hk-ready"
run "$HK_BUILD/bin/hk-hold" -t 1 "$T/held" sh -c 'echo "$0 $1"' a b
is "$rc $out" "0 a b" "with the marker, the command runs with its arguments"
is "$(stat -c %a "$T/held")" 500 "... its directory then 0500"
done_testing
