#!/bin/sh
# Images from a private registry, against the suite's podman API service
# and a registry of the test's own on loopback (lib/registry.sh: Debian's
# docker-registry, TLS from a test CA, htpasswd basic auth): an image of
# the test image with GREETING=v1 is pushed under a tag.  With the right
# password in registry_auth_file, the readiness gate's start pulls it and
# a wake is answered by it (200 "v1 ..."); with a wrong one, the pull
# fails and so does the start: 503 "service failed to start: pull ...",
# the registry's refusal as the reason; a file others may read is refused
# with that reason.  The password is in no hk output, daemon log, event
# or the store file.  time_unit_ms = 10: idle_seconds = 1000 lasts 10 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh
. tests/integration/lib/registry.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
reg_start
ok $? "a registry with TLS and basic auth runs at $REG"

# Two images of the test's own, the test image with another greeting
# each: an image ID of their own, removed at the end by ID.
build() {	# build TAG GREETING
	printf 'FROM %s\nENV GREETING=%s\n' "$IMAGE" "$2" |
	    podman build -q --pull=never -t "$1" -f - "$T" 2>>"$T/build.log"
}
LOCAL=localhost/hk-reg-test-$$
ID1=$(build "$LOCAL:v1" v1)
ok $? "an image with GREETING=v1 is built"
REG_IMAGES="$REG_IMAGES $ID1"
reg_push "$LOCAL:v1" hk/fn:live
ok $? "and pushed to the registry as hk/fn:live"
D1=$(reg_digest hk/fn:live)
like "$D1" '^sha256:[0-9a-f]{64}$' "the registry serves it at $D1"
reg_forget "$LOCAL:v1"
podman image exists "$REG/hk/fn:live"
ok $((! $?)) "the engine does not have it"

auth_file() {	# auth_file PASSWORD [MODE]: $T/auth.json
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG" \
	    "$(printf '%s:%s' "$REG_USER" "$1" | base64 -w0)" >"$T/auth.json"
	chmod "${2:-600}" "$T/auth.json"
}
WRONG=hk-wrong-$$-password
auth_file "$WRONG"
ct_config "time_unit_ms = 10" "registry_auth_file = \"$T/auth.json\""
cat >"$T/app.toml" <<APP
schema_version = 1
name = "reg"

[services.fn]
image = "$REG/hk/fn:live"
public = true

[services.fn.serverless]
idle_seconds = 1000
APP
run hk apply "$T/app.toml"
is "$rc" 0 "a service of the registry's image applies"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")
S=reg/fn
H=fn.reg.localhost

# The wrong password: the pull is refused, and the start with it.
wait_t 60 grep -q "service=$S: unable to start revision 1: pull $REG/hk/fn:live: " \
    "$T/scale.log"
ok $? "a wrong password: the readiness gate's pull fails"
is "$(get "$H" /)" 503 "a wake is answered 503"
like "$(cat "$T/body")" "^service failed to start: pull $REG/hk/fn:live: .*(unauthorized|authentication required)" \
    "with the registry's refusal as the reason"
grep -q "service=$S: pulling $REG/hk/fn:live on node .* with the registry's credentials" \
    "$T/scale.log"
ok $? "hk-scale sent the file's credentials"

# A file others may read: refused, with that reason.
auth_file "$REG_PASS" 644
wait_t 60 sh -c "[ \"\$(curl -sS -o '$T/body' -w '%{http_code}' -H 'Host: $H' '$URL/')\" = 503 ] &&
    grep -q 'mode 0644: must be 0600 or stricter' '$T/body'"
ok $? "a file others may read: 503, the file refused"
like "$(cat "$T/body")" "^service failed to start: pull $REG/hk/fn:live: $T/auth\\.json: mode 0644: must be 0600 or stricter\$" \
    "with that reason"

# The right password: pulled, started, answered by the image.
auth_file "$REG_PASS"
wait_t 60 sh -c "[ \"\$(curl -sS -o '$T/body' -w '%{http_code}' -H 'Host: $H' '$URL/')\" = 200 ]"
ok $? "the right password: a wake is answered 200"
like "$(cat "$T/body")" '^v1 pid=' "by the registry's image (GREETING=v1)"
ID=$(ct_ids "$INST" running)
like "$ID" '^[0-9a-f]{64}$' "one container runs"
is "$(ct_inspect "$ID" '{{.Image}}')" "$ID1" "of the pushed image"
REG_IMAGES="$REG_IMAGES $(podman image inspect --format '{{.Id}}' "$REG/hk/fn:live")"

# Where the password must not be.
{
	hk ps; hk status "$S"; hk status --json "$S"
	hk-events list --json -n 0
	cat "$HAKOPOD_CONFIG"
} >"$T/outputs" 2>&1
for pw in "$REG_PASS" "$WRONG"; do
	grep -qaF -- "$pw" "$T/outputs" "$T"/*.log
	ok $((! $?)) "a password is in no hk output or daemon log"
	grep -qa 'CREATE TABLE' "$T/state.db" && ! grep -qaF -- "$pw" "$T"/state.db*
	ok $? "nor in the store file"
done

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid"
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
