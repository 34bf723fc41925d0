#!/bin/sh
# source = PATH with the container backend, against the suite's podman
# API service and the test image: hk-scale writes the tree out under
# runtime_dir/src/HASH and bind-mounts it read-only at /app, the
# container's working directory, so command = ["python3", "app.py"] runs
# the handler from there.  A request through the gateway wakes it and is
# answered by that handler; the container cannot write /app (EROFS; the
# mount is RW=false); an edit of the working copy changes nothing; a new
# hash is a new revision, whose container replaces the old one once ready.
# A container placed on another node with a source validates: the code
# goes there through its engine (2120).
# time_unit_ms = 10: idle_seconds = 1000 lasts 10 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

write_src() {	# write_src DIR BODY: fn/src-app.py answering BODY
	mkdir -p "$1"
	cp "$IFN/src-app.py" "$1/app.py"
	echo "$2" >"$1/body.txt"
}

ct_config "time_unit_ms = 10"
cat >>"$T/hakopod.toml" <<CONF

[nodes.other]
address = "127.0.0.2"
container_engine = "$U"
CONF

mkdir -p "$T/app"
write_src "$T/app/code" v1
cat >"$T/app/hk.toml" <<APP
schema_version = 1
name = "src"

[services.fn]
image = "$IMAGE"
source = "code"
command = ["python3", "app.py"]
public = true

[services.fn.serverless]
idle_seconds = 1000
APP

# Another node gets a copy through its engine (2120): accepted.
sed 's/^public = true$/public = true\nnode_name = "other"/' \
    "$T/app/hk.toml" >"$T/app/other.toml"
run hk validate "$T/app/other.toml"
is "$rc $err" "0 " "a source on a container of another node validates"

run hk validate "$T/app/hk.toml"
is "$rc" 0 "a container with a source validates"
run hk apply "$T/app/hk.toml"
is "$rc" 0 "and applies"
h1=$(hk ps --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["code_hash"])')
like "$h1" '^[0-9a-f]{64}$' "its code hash: $(echo "$h1" | cut -c1-12)"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")
S=src/fn
H=fn.src.localhost
wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
ok $? "the service passes its readiness gate"
ok "$([ -f "$RUN/src/$h1/app.py" ]; echo $?)" "its tree is under runtime_dir/src/HASH"
wait_t 20 ct_asleep "$S"
ok $? "then sleeps"
INST=$(ct_install "$STORE")
wait_t 10 ct_count_is 0 "$INST"
ok $? "its container is removed"

is "$(get "$H" /x)" 200 "a request through the gateway wakes it"
is "$(cat "$T/body")" "v1 cwd=/app write=EROFS" \
    "answered by the handler, run in /app, which it cannot write"
ID=$(ct_ids "$INST" running)
like "$ID" '^[0-9a-f]{64}$' "one container runs"
is "$(ct_inspect "$ID" '{{range .Mounts}}{{if eq .Destination "/app"}}{{.Source}} {{.RW}}{{end}}{{end}} {{.Config.WorkingDir}}')" \
    "$RUN/src/$h1 false /app" \
    "the tree bind-mounted read-only at /app, its working directory"

# The working copy edited: nothing changes.
write_src "$T/app/code" v2
is "$(get "$H" /y)" 200 "after an edit of the working copy"
is "$(cat "$T/body")" "v1 cwd=/app write=EROFS" "the old code answers"

# A new hash: a new revision, replacing the running container once ready.
run hk apply "$T/app/hk.toml"
is "$rc" 0 "hk apply of the edited source"
h2=$(hk ps --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["code_hash"])')
ok "$([ "$h2" != "$h1" ]; echo $?)" "a new hash: $(echo "$h2" | cut -c1-12)"
wait_t 30 grep -q "service=$S: revision 2 replaces 1" "$T/scale.log"
ok $? "its container replaces the running one once ready"
wait_t 10 ct_count_is 1 "$INST"
ok $? "one container is left"
podman container exists "$ID"
ok $((!$?)) "the old revision's is removed"
is "$(get "$H" /z)" 200 "a request"
is "$(cat "$T/body")" "v2 cwd=/app write=EROFS" "is answered by the new code"
ID2=$(ct_ids "$INST" running)
is "$(ct_inspect "$ID2" '{{range .Mounts}}{{if eq .Destination "/app"}}{{.Source}} {{.RW}}{{end}}{{end}}')" \
    "$RUN/src/$h2 false" "from the new tree, read-only"
wait_t 10 sh -c "! test -e '$RUN/src/$h1'"
ok $? "the old tree goes once no container uses it"

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
