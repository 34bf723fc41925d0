#!/bin/sh
# image_pull, against the suite's podman API service and the test image:
# "never" starts the image the engine has without a pull, and fails the
# start of one it lacks with that reason (503 at the first wake, no pull
# asked); "always" pulls before every start, even an image the engine
# has: the test image is podman's local localhost/ name, which no
# registry serves, so that pull fails the start, with the engine's
# reason.  A value other than missing, always or never, and image_pull
# beside a backend that pulls nothing, are refused.
# time_unit_ms = 10: idle_seconds = 1000 lasts 10 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
ABSENT=localhost/hk-absent-$$:1
podman image exists "$ABSENT"
ok $((! $?)) "$ABSENT is not on the engine"

ct_config "time_unit_ms = 10"

service() {	# service NAME IMAGE PULL
	cat <<SVC

[services.$1]
image = "$2"
image_pull = "$3"
public = true

[services.$1.serverless]
idle_seconds = 1000
SVC
}
{
	printf 'schema_version = 1\nname = "pull"\n'
	service have "$IMAGE" never
	service absent "$ABSENT" never
	service always "$IMAGE" always
} >"$T/app.toml"

# Refusals first.
sed 's/= "always"/= "sometimes"/' "$T/app.toml" >"$T/bad.toml"
run hk validate "$T/bad.toml"
is "$rc $err" "65 $T/bad.toml:22: services.always.image_pull: must be missing, always or never" \
    "image_pull = \"sometimes\" is refused (65)"
printf 'schema_version = 1\nname = "x"\n[services.s]\ncommand = ["x"]\nimage_pull = "always"\n' \
    >"$T/exec.toml"
run hk validate "$T/exec.toml"
is "$rc $err" "65 $T/exec.toml:5: services.s.image_pull: not used by backend \"exec\", which pulls no image" \
    "image_pull without a container is refused (65)"

run hk validate "$T/app.toml"
is "$rc" 0 "the three services validate"
run hk apply "$T/app.toml"
is "$rc" 0 "and apply"
run hk apply --dry-run "$T/app.toml"
like "$out" 'pull/always	revision 1	unchanged' "applied again: unchanged"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")

# never, the image there: started as it is.
wait_t 60 grep -q "service=pull/have: ready at 127.0.0.1:" "$T/scale.log"
ok $? "never, the image on the engine: the service passes its readiness gate"
wait_t 30 ct_asleep pull/have
ok $? "and sleeps"
is "$(get have.pull.localhost /x)" 200 "a request wakes it: 200"
like "$(cat "$T/body")" '^hello pid=' "answered by the function"
is "$(grep -c 'service=pull/have: pulling' "$T/scale.log")" 0 \
    "no pull was asked"

# never, the image absent: the start fails, nothing is pulled.
wait_t 60 grep -q "service=pull/absent: unable to start revision 1: $ABSENT: not on node" \
    "$T/scale.log"
ok $? "never, the image absent: the readiness gate's start fails"
is "$(get absent.pull.localhost /)" 503 \
    "never, the image absent: the wake is answered 503"
like "$(cat "$T/body")" \
    "^service failed to start: $ABSENT: not on node [^ ]+'s engine, and image_pull = \"never\"\$" \
    "with the reason"
is "$(grep -c 'service=pull/absent: pulling' "$T/scale.log")" 0 \
    "and no pull was asked"
run hk status pull/absent
like "$out" 'image_pull: +never' "hk status shows image_pull"

# always: a pull before the start, though the engine has the image.
wait_t 60 grep -q "service=pull/always: unable to start revision 1: pull $IMAGE: " \
    "$T/scale.log"
ok $? "always: the readiness gate's start fails at the pull"
is "$(get always.pull.localhost /)" 503 \
    "always: the pull of an image no registry serves fails the start (503)"
like "$(cat "$T/body")" "^service failed to start: pull $IMAGE: " \
    "with the engine's reason"
ok "$(grep -q "service=pull/always: pulling $IMAGE" "$T/scale.log"; echo $?)" \
    "the pull was asked, though the engine has the image"
podman image exists "$IMAGE"
ok $? "and the engine still has it"

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
