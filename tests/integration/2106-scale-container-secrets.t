#!/bin/sh
# Secrets with the container backend, against the suite's podman API
# service and the test image: hk-scale writes the instance's directory
# (0500, files 0400, the container's user's: a rootful engine keeps host
# uids) before the create and bind-mounts it read-only at /run/secrets,
# which CREDENTIALS_DIRECTORY names.  Woken through the gateway, the
# handler (a source file, fn/ct-secret.py) answers the digest of
# /run/secrets/DB_PASSWORD; it cannot write there; the value is not in
# podman inspect of the container, in any hk output, daemon log or the
# store file.  The directory goes when the container does.  secrets_env
# is refused; a container on another node validates (2122 runs one).
# hk-scale killed with
# SIGKILL and the container removed meanwhile: at the next start the
# instance's directory goes, and one no row describes.  TAP lines name
# digests, never values.  time_unit_ms = 10: idle_seconds = 1000 lasts 10 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

digest() {
	printf '%s' "$1" | sha256sum | cut -d' ' -f1
}

body_is() {	# body_is HOST PATH WANT (for wait_t)
	[ "$(get "$1" "$2")" = 200 ] && [ "$(cat "$T/body")" = "$3" ]
}

nobody=$(id -un nobody 2>/dev/null || echo nobody)
ct_config "time_unit_ms = 10" "secret_key_file = \"$T/secret.key\""
cat >>"$T/hakopod.toml" <<CONF

[nodes.other]
address = "127.0.0.2"
container_engine = "$U"
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
public = true
secrets = ["DB_PASSWORD"]

[services.fn.serverless]
idle_seconds = 1000
APP

V=$(python3 -c 'import secrets; print("hk-ct-" + secrets.token_hex(20))')
printf '%s' "$V" | hk secret set sec DB_PASSWORD >"$T/out.set" 2>&1
ok $? "hk secret set, the value on standard input"

# Refused: as variables (the engine keeps them).  On another node: 2122.
sed 's/^secrets = .*$/&\nsecrets_env = true/' "$T/app/hk.toml" \
    >"$T/app/env.toml"
run hk validate "$T/app/env.toml"
is "$rc" 65 "secrets_env in a container is refused (65)"
is "$err" "$T/app/env.toml:10: services.fn.secrets_env: not with backend \"container\" (the engine keeps a container's environment, shown by podman inspect): read the files of \$CREDENTIALS_DIRECTORY" \
    "file:line: key: reason"
sed 's/^source = .*$/node_name = "other"/' "$T/app/hk.toml" \
    >"$T/app/other.toml"
run hk validate "$T/app/other.toml"
is "$rc $err" "0 " \
    "secrets in a container of another node validate (sent through its engine: 2122)"

run hk validate "$T/app/hk.toml"
is "$rc" 0 "a container with secrets validates"
run hk apply "$T/app/hk.toml"
is "$rc" 0 "and applies"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
S=sec/fn
H=fn.sec.localhost
wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
ok $? "the service passes its readiness gate"
wait_t 20 ct_asleep "$S"
ok $? "then sleeps"
INST=$(ct_install "$STORE")
wait_t 10 ct_count_is 0 "$INST"
ok $? "its container is removed"
is "$(ls -A "$RUN/cred")" "" "and so is its directory"

D=$(digest "$V")
wait_t 30 body_is "$H" /file "$D"
ok $? "woken through the gateway, reads /run/secrets/DB_PASSWORD (digest $(echo "$D" | cut -c1-12))"
is "$(get "$H" /info; cat "$T/body")" \
    "200cd=/run/secrets write=EROFS uid=$(id -u nobody)" \
    "CREDENTIALS_DIRECTORY=/run/secrets, read-only, run as nobody"
ID=$(ct_ids "$INST" running)
like "$ID" '^[0-9a-f]{64}$' "one container runs"
dir=$(ct_inspect "$ID" '{{range .Mounts}}{{if eq .Destination "/run/secrets"}}{{.Source}} {{.RW}}{{end}}{{end}}')
like "$dir" "^$RUN/cred/sec\\.fn\\.[0-9]+ false\$" \
    "the instance's directory bind-mounted read-only at /run/secrets"
dir=${dir% false}
is "$(stat -c '%a %U' "$dir" "$dir/DB_PASSWORD" | tr '\n' ' ')" \
    "500 $nobody 400 $nobody " "directory 0500, file 0400, the container's user's"
podman container inspect "$ID" >"$T/inspect.json" 2>&1
ok $? "podman inspect of the container"
grep -q 'CREDENTIALS_DIRECTORY=/run/secrets' "$T/inspect.json"
ok $? "its environment names the directory"
grep -qaF -- "$V" "$T/inspect.json"
ok $((! $?)) "the value is not in podman inspect"

# Asleep once idle: the container goes, and its directory with it.
wait_t 30 ct_asleep "$S"
ok $? "idle, it sleeps"
wait_t 10 ct_count_is 0 "$INST"
ok $? "its container is removed"
wait_t 10 test ! -e "$dir"
ok $? "and its directory with it"

# hk-scale killed, its container removed meanwhile: the next hk-scale
# removes that instance's directory, and one that no row describes.
wait_t 30 body_is "$H" /file "$D"
ok $? "woken again"
ID=$(ct_ids "$INST" running)
dir=$(ct_inspect "$ID" '{{range .Mounts}}{{if eq .Destination "/run/secrets"}}{{.Source}}{{end}}{{end}}')
ok "$([ -d "$dir" ]; echo $?)" "its directory is there"
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
podman rm -f -t 0 "$ID" >/dev/null 2>&1
ok $? "hk-scale killed (SIGKILL), its container removed by ID"
stale=$RUN/cred/sec.fn.1
mkdir "$stale" && : >"$stale/X"
ok "$([ -d "$dir" ] && [ -d "$stale" ]; echo $?)" "both directories are there"
start_scale
ok $? "hk-scale starts again"
wait_t 20 test ! -e "$dir"
ok $? "the dead instance's directory is removed once adopted"
ok "$([ ! -e "$stale" ]; echo $?)" "and the one no row describes"
wait_t 30 body_is "$H" /file "$D"
ok $? "a request wakes it again"

# Where the value must not be.
{
	hk ps; hk ps --json; hk status "$S"; hk status --json "$S"
	hk secret list sec; hk routes --json
	hk-events list --json -n 0
	cat "$T/out.set"
} >"$T/outputs" 2>&1
grep -qaF -- "$V" "$T/outputs"
ok $((! $?)) "the value is in no hk output"
grep -qaF -- "$V" "$T"/*.log
ok $((! $?)) "nor in a daemon's log"
grep -qa 'CREATE TABLE secrets' "$T/state.db" && ! grep -qaF -- "$V" "$T"/state.db*
ok $? "nor in the store file"

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
is "$(ls -A "$RUN/cred")" "" "and their directories"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
