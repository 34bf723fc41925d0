#!/bin/sh
# hk validate: a valid config passes; each kind of broken input is refused
# with "file:line: key: reason" and the sysexits code of its kind.
. tests/integration/lib.sh

plan 50

cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "sqlite://$T/state.db"
runtime_dir = "$T/run"
CONF
export HAKOPOD_CONFIG="$T/hakopod.toml"

run hk validate etc/examples/http-functions.toml
is "$rc" 0 "the shipped example validates"
like "$out" '^etc/examples/http-functions.toml: app http-functions: [0-9]+ services, [0-9]+ serverless: OK$' \
    "validate says what it checked"

cat >"$T/range.toml" <<'APP'
schema_version = 1
name = "fn"

[services.api]
command = ["python3", "x.py"]
public = true

[services.api.serverless]
idle_seconds = 10
APP
run hk validate "$T/range.toml"
is "$rc" 65 "an out-of-range value exits 65"
is "$err" "$T/range.toml:9: services.api.serverless.idle_seconds: must be between 30 and 86400" \
    "the message names file, line, key and reason"
test ! -e "$T/state.db"
ok $? "validate touches no store"

# idle_action: a word of two; suspend_max_seconds only with suspend.
suspend_app() {
	printf 'schema_version = 1\nname = "fn"\n\n[services.api]\n'
	printf 'command = ["python3", "x.py"]\npublic = true\n\n'
	printf '[services.api.serverless]\n%s\n' "$1"
}
suspend_app 'idle_action = "pause"' >"$T/action.toml"
run hk validate "$T/action.toml"
is "$rc:$err" "65:$T/action.toml:9: services.api.serverless.idle_action: \"pause\": must be \"stop\" or \"suspend\"" \
    "idle_action: an unknown word is refused, naming the two"
suspend_app 'suspend_max_seconds = 600' >"$T/smax.toml"
run hk validate "$T/smax.toml"
is "$rc:$err" "65:$T/smax.toml:9: services.api.serverless.suspend_max_seconds: only with idle_action = \"suspend\"" \
    "suspend_max_seconds without suspend is refused, not ignored"
suspend_app 'idle_action = "suspend"
suspend_max_seconds = 29' >"$T/smin.toml"
run hk validate "$T/smin.toml"
is "$rc:$err" "65:$T/smin.toml:10: services.api.serverless.suspend_max_seconds: must be between 30 and 604800" \
    "suspend_max_seconds: out of range"
suspend_app 'idle_action = true' >"$T/abool.toml"
run hk validate "$T/abool.toml"
is "$rc" 65 "idle_action: not a string"
suspend_app 'idle_action = "suspend"
suspend_max_seconds = 30' >"$T/sok.toml"
run hk validate "$T/sok.toml"
is "$rc" 0 "idle_action = \"suspend\" with suspend_max_seconds validates"

cat >"$T/many.toml" <<'APP'
schema_version = 1
name = "fn"
colour = "blue"

[services.api]
command = ["python3", "x.py"]
public = false
volumes = ["/data"]

[services.api.serverless]
max_concurrency = 65
APP
run hk validate "$T/many.toml"
is "$rc" 65 "several errors exit 65"
is "$(printf '%s\n' "$err" | wc -l | tr -d ' ')" 4 "every error is reported, not only the first"
like "$err" "^$T/many.toml:3: colour: unknown key\$" "an unknown key is an error"
like "$err" "many.toml:11: services.api.serverless.max_concurrency: must be between 1 and 64" \
    "max_concurrency out of range"

run hk validate "$T/absent.toml"
is "$rc" 66 "a missing file exits 66"
like "$err" "absent.toml" "and names the file"

run hk validate "$T/absent.toml" etc/examples/http-functions.toml
is "$rc" 66 "a missing file beside a valid one exits 66"
run hk validate "$T/absent.toml" "$T/range.toml"
is "$rc" 66 "a missing file before an invalid one: 66 wins over 65"
is "$err" "$T/absent.toml: unable to open: No such file or directory
$T/range.toml:9: services.api.serverless.idle_seconds: must be between 30 and 86400" \
    "and the problems of both files are printed"
run hk validate "$T/range.toml" "$T/absent.toml"
is "$rc" 66 "a missing file after an invalid one: 66 as well"
run hk apply "$T/range.toml" "$T/absent.toml"
is "$rc" 66 "apply: the same rule"
mkdir "$T/dir.toml"
run hk validate "$T/dir.toml"
is "$rc" 66 "a directory cannot be read: 66"
is "$err" "$T/dir.toml: unable to read: Is a directory" "and says why"

printf 'schema_version = 1\nname = "fn"\n[services.api]\ncommand = ["a", ' \
    >"$T/truncated.toml"
run hk validate "$T/truncated.toml"
is "$rc" 65 "a truncated file exits 65"
like "$err" "^$T/truncated.toml:4: " "and names the line where it ends"

printf 'schema_version = 1\nname = "f\377n"\n' >"$T/utf8.toml"
run hk validate "$T/utf8.toml"
is "$rc" 65 "invalid UTF-8 exits 65"
like "$err" "^$T/utf8.toml:2: .*UTF-8" "and says so"

printf 'schema_version = 1\nname = "fn"\nname = "fn2"\n' >"$T/dup.toml"
run hk validate "$T/dup.toml"
is "$rc" 65 "a repeated key exits 65"
like "$err" "^$T/dup.toml:3: " "at the line of the repetition"

head -c 10485760 /dev/zero | tr '\0' '#' >"$T/big.toml"
run hk validate "$T/big.toml"
is "$rc" 65 "a 10 MB file is refused with 65"
like "$err" "big.toml.*(too large|exceeds)" "as too large"

run hk validate
is "$rc" 64 "no file is a usage error"

run hk --help
is "$rc" 0 "--help exits 0"

# Seed 000's example: an image alone means the container backend, on the
# default node, whose engine is the default socket.
printf '[server]\nserverless_address = "127.0.0.1:8082"\ncontainer_engine = ""\n' \
    >"$T/noengine.toml"
cat >"$T/seed.toml" <<'APP'
schema_version = 1
name = "http-functions"

[services.api]
image = "ghcr.io/example/http-function:latest"
port = 8080
public = true
size = "small"
replicas = 1
# node_name = "worker-eu-1" # Optional placement

[services.api.serverless]
min_replicas = 0
idle_seconds = 300
startup_timeout_seconds = 60
request_timeout_seconds = 60
max_concurrency = 16
APP
run hk validate "$T/seed.toml"
is "$rc $out" "0 $T/seed.toml: app http-functions: 1 services, 1 serverless: OK" \
    "seed 000's example validates: an image alone means the container backend"
run hk -f "$T/noengine.toml" validate "$T/seed.toml"
is "$rc $err" "65 $T/seed.toml:5: services.api.image: backend \"container\" needs server.container_engine (unset)" \
    "not without an engine on the default node"

cat >"$T/backends.toml" <<'APP'
schema_version = 1
name = "fn"

[services.a]
image = "x"
backend = "exec"

[services.b]
command = ["x"]
backend = "systemd"
readiness = "socket"

[services.c]
command = ["x"]
image = "y"

[services.e]
image = "y"
backend = "systemd"

[services.d]
command = ["x"]
image = "y"
backend = "exec"

[services.f]
command = ["x"]
backend = "systemd"
readiness = "notify"
APP
run hk validate "$T/backends.toml"
is "$rc" 65 "backends that cannot run a service are refused with 65"
is "$(printf '%s\n' "$err" | wc -l | tr -d ' ')" 3 "one line each; c (its command run in the image), b and f (systemd, readiness socket and notify) pass"
is "$err" "$T/backends.toml:6: services.a.backend: exec requires command
$T/backends.toml:19: services.e.backend: systemd requires command
$T/backends.toml:23: services.d.image: not used by backend \"exec\", which runs command on this host: use backend = \"container\", or remove it" \
    "exec without a command; systemd without a command; an image exec would not use"
sed -i '/^\[services.[abed]\]/,/^$/d' "$T/backends.toml"
run hk validate "$T/backends.toml"
is "$rc" 0 "image and command (container), and systemd with a command validate"

# s6 needs a command and the operator's scan directory.
cat >"$T/s6.toml" <<'APP'
schema_version = 1
name = "fn"

[services.a]
command = ["x"]
backend = "s6"
APP
run hk validate "$T/s6.toml"
is "$rc" 65 "backend s6 without server.s6_scandir: 65"
is "$err" "$T/s6.toml:6: services.a.backend: s6 requires server.s6_scandir (unset)" \
    "file:line: key: reason"
printf '[server]\ns6_scandir = "%s"\n' "$T" >"$T/s6-operator.toml"
run hk -f "$T/s6-operator.toml" validate "$T/s6.toml"
is "$rc" 0 "with s6_scandir set it validates"
printf 'readiness = "socket"\n' >>"$T/s6.toml"
run hk -f "$T/s6-operator.toml" validate "$T/s6.toml"
is "$err" "$T/s6.toml:7: services.a.readiness: \"socket\" needs backend \"exec\" or \"systemd\", which hand their command a listener: use tcp, http:/PATH or notify with \"s6\"" \
    "readiness socket is exec's and systemd's alone"

# Placement: node_name names a node of the operator config, and exec runs
# on this host only.
cat >"$T/nodes.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"

[nodes.worker-eu-1]
address = "10.0.0.2"
container_engine = "tcp://10.0.0.2:2375"
CONF
cat >"$T/placed.toml" <<'APP'
schema_version = 1
name = "fn"

[services.a]
command = ["x"]
node_name = "worker-eu-1"

[services.b]
command = ["x"]
node_name = "worker-eu-2"

[services.c]
command = ["x"]
APP
run hk -f "$T/nodes.toml" validate "$T/placed.toml"
is "$rc" 65 "node_name: refused with 65"
is "$err" "$T/placed.toml:6: services.a.node_name: backend \"exec\" runs its command on this host, not on node \"worker-eu-1\"
$T/placed.toml:10: services.b.node_name: no node \"worker-eu-2\" in the operator configuration" \
    "a node exec cannot run on; a node the operator config does not have"
run hk validate "$T/placed.toml"
like "$err" "placed.toml:6: services.a.node_name: no node \"worker-eu-1\" in the operator configuration" \
    "without [nodes], no node_name is a node"

# A container on a node: the node's engine, and TLS when it is on TCP.
cat >>"$T/nodes.toml" <<CONF

[nodes.bare]
address = "10.0.0.3"
CONF
cat >"$T/ct.toml" <<'APP'
schema_version = 1
name = "fn"

[services.a]
image = "x"
node_name = "worker-eu-1"

[services.b]
image = "x"
node_name = "bare"

[services.c]
image = "x"
readiness = "notify"

[services.d]
command = ["x"]
readiness = "healthcheck"
APP
run hk -f "$T/nodes.toml" validate "$T/ct.toml"
is "$rc $err" "65 $T/ct.toml:6: services.a.node_name: node \"worker-eu-1\": container_engine tcp://10.0.0.2:2375 has no TLS files (container_tls_ca, container_tls_cert, container_tls_key)
$T/ct.toml:10: services.b.node_name: node \"bare\" has no container_engine
$T/ct.toml:14: services.c.readiness: notify is not available with backend \"container\" (tcp, http:/PATH or healthcheck)
$T/ct.toml:18: services.d.readiness: healthcheck (the image's HEALTHCHECK) requires backend \"container\"" \
    "containers: an engine on TCP without TLS, a node without an engine, a readiness they cannot have; healthcheck on exec"
sed -i '/^node_name/d' "$T/placed.toml"
run hk -f "$T/nodes.toml" validate "$T/placed.toml"
is "$rc" 0 "without node_name, on the default node: valid"
printf '[nodes.w1]\naddress = "10.0.0.2:80"\n' >"$T/bad-node.toml"
run hk -f "$T/bad-node.toml" validate "$T/placed.toml"
is "$rc $err" "78 $T/bad-node.toml:2: nodes.w1.address: must be an IPv4 or IPv6 address" \
    "an operator config with a bad node exits 78 and says why"

printf '[server]\nmax_concurrent_starts = 0\n' >"$T/bad-operator.toml"
run hk -f "$T/bad-operator.toml" validate etc/examples/http-functions.toml
is "$rc" 78 "an invalid operator config exits 78"

done_testing
