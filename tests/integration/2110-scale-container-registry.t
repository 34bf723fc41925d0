#!/bin/sh
# Images from a private registry, pinned to digests, against the suite's
# podman API service (2117: Docker's engine) and a registry of the test's own on loopback
# (lib/registry.sh: Debian's docker-registry, TLS from a test CA,
# htpasswd basic auth): the test image with GREETING=v1 is pushed under
# a tag.  hk apply pins the tag to the digest the registry serves (hk
# status and the plan show it); with a wrong password in
# registry_auth_file it refuses (69), and a start's pull fails: 503
# "service failed to start: pull ...", the registry's refusal as the
# reason; a file others may read is refused with that reason.  With the
# right one, the pinned image is pulled and answers (200 "v1 ...").  The
# tag pushed again with v2 changes nothing until an apply, whose plan
# shows the new digest, and which makes a new revision that runs v2.
# image_pull = "always" pulls the pinned digest at every start.  The
# passwords are in no hk output, daemon log, event or the store file.
# The pin is checked again in a PostgreSQL store.
# time_unit_ms = 10: idle_seconds = 1000 lasts 10 s.
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
ct_cli image inspect "$ID1" >/dev/null 2>&1
ok $((! $?)) "the engine does not have it"

auth_file() {	# auth_file PASSWORD [MODE]: $T/auth.json
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG" \
	    "$(printf '%s:%s' "$REG_USER" "$1" | base64 -w0)" >"$T/auth.json"
	chmod "${2:-600}" "$T/auth.json"
}
WRONG=hk-wrong-$$-password
auth_file "$REG_PASS"
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
S=reg/fn
H=fn.reg.localhost

# The plan and apply pin the tag.
run hk apply --dry-run "$T/app.toml"
is "$rc $(echo "$out" | head -1)" "0 $S	revision 1	created	image $D1" \
    "the plan shows the digest the revision would pin"
run hk apply "$T/app.toml"
is "$rc" 0 "hk apply pins it"
run hk status "$S"
like "$out" "digest: +$D1 \\(pinned by hk apply\\)" "hk status shows the digest"
run hk apply --dry-run "$T/app.toml"
is "$(echo "$out" | head -1)" "$S	revision 1	unchanged	image $D1" \
    "applied again: unchanged"

# The wrong password: apply refuses, a start's pull fails.
auth_file "$WRONG"
run hk apply "$T/app.toml"
is "$rc" 69 "a wrong password: hk apply refuses (69)"
is "$err" "hk: $S: image $REG/hk/fn:live: cannot pin its digest: https://$REG/v2/hk/fn/manifests/live: 401 (the credentials of registry_auth_file are refused)" \
    "with the registry's answer"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")
PINNED=$REG/hk/fn@$D1
wait_t 60 grep -q "service=$S: unable to start revision 1: pull $PINNED: " \
    "$T/scale.log"
ok $? "a wrong password: the readiness gate's pull (by digest) fails"
is "$(get "$H" /)" 503 "a wake is answered 503"
like "$(cat "$T/body")" "^service failed to start: pull $PINNED: .*(unauthorized|authentication required)" \
    "with the registry's refusal as the reason"
grep -q "service=$S: pulling $PINNED on node .* with the registry's credentials" \
    "$T/scale.log"
ok $? "hk-scale sent the file's credentials"

# A file others may read: refused, with that reason.
auth_file "$REG_PASS" 644
wait_t 60 sh -c "[ \"\$(curl -sS -o '$T/body' -w '%{http_code}' -H 'Host: $H' '$URL/')\" = 503 ] &&
    grep -q 'mode 0644: must be 0600 or stricter' '$T/body'"
ok $? "a file others may read: 503, the file refused"
like "$(cat "$T/body")" "^service failed to start: pull $PINNED: $T/auth\\.json: mode 0644: must be 0600 or stricter\$" \
    "with that reason"

# The right password: pulled, started, answered by the image.
auth_file "$REG_PASS"
wait_t 60 sh -c "[ \"\$(curl -sS -o '$T/body' -w '%{http_code}' -H 'Host: $H' '$URL/')\" = 200 ]"
ok $? "the right password: a wake is answered 200"
like "$(cat "$T/body")" '^v1 pid=' "by the registry's image (GREETING=v1)"
ID=$(ct_ids "$INST" running)
like "$ID" '^[0-9a-f]{64}$' "one container runs"
is "$(reg_image_of "$ID")" "$ID1 $PINNED" \
    "of the pinned image, by digest"

# The tag pushed again: nothing changes until an apply.
ID2=$(build "$LOCAL:v2" v2)
ok $? "an image with GREETING=v2 is built"
REG_IMAGES="$REG_IMAGES $ID2"
reg_push "$LOCAL:v2" hk/fn:live
ok $? "and pushed under the same tag"
D2=$(reg_digest hk/fn:live)
ok "$([ -n "$D2" ] && [ "$D2" != "$D1" ]; echo $?)" "the tag now names $D2"
reg_forget "$LOCAL:v2"
wait_t 60 ct_asleep "$S"
ok $? "idle, the service sleeps"
is "$(get "$H" /)" 200 "woken again"
like "$(cat "$T/body")" '^v1 pid=' "it still runs v1: the pinned digest"
run hk status "$S"
like "$out" "digest: +$D1 " "hk status: still $D1"

run hk apply --dry-run "$T/app.toml"
is "$(echo "$out" | head -1)" \
    "$S	revision 2	updated	keys image_digest	image $D1 -> $D2" \
    "the plan shows the new digest a new revision would pin"
run hk apply "$T/app.toml"
like "$rc $out" "^0 $S	revision 2	updated" "hk apply pins it: revision 2"
run hk status "$S"
like "$out" "digest: +$D2 " "hk status shows it"
wait_t 60 sh -c "curl -sS -H 'Host: $H' '$URL/' | grep -q '^v2 pid='"
ok $? "the new revision runs v2"
# The old revision's container goes once the new one is ready: after.
wait_t 20 ct_count_is 1 "$INST"
ID=$(ct_ids "$INST" running)
is "$(ct_inspect "$ID" '{{.Image}} {{index .Config.Labels "hk.revision"}}' | sed 's/^sha256://')" \
    "$ID2 2" "its container is revision 2's, of the new image"

# image_pull = "always": the pinned digest is pulled at every start.
sed 's/^public = true$/&\nimage_pull = "always"/' "$T/app.toml" >"$T/always.toml"
PINNED=$REG/hk/fn@$D2
n0=$(grep -c "service=$S: pulling $PINNED " "$T/scale.log")
run hk apply "$T/always.toml"
like "$rc $out" "^0 $S	revision 3	updated" "image_pull = \"always\": revision 3"
wait_t 60 sh -c "[ \$(grep -c 'service=$S: pulling $PINNED ' '$T/scale.log') -gt $n0 ]"
ok $? "its start pulls $D2 though the engine has it"
wait_t 60 ct_asleep "$S"
ok $? "it sleeps"
n0=$(grep -c "service=$S: pulling $PINNED " "$T/scale.log")
is "$(get "$H" /)" 200 "a wake is answered"
is "$(grep -c "service=$S: pulling $PINNED " "$T/scale.log")" $((n0 + 1)) \
    "after one more pull"

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

# The pin in a PostgreSQL store (scripts/pg): stored and shown alike.
for engine in $(engines); do
	[ "$engine" = postgres ] || continue
	new_store postgres regpin || { ok 1 "postgres: store"; continue; }
	{ grep -v '^state = ' "$HAKOPOD_CONFIG"; echo "state = \"$STORE\""; } \
	    >"$T/pg.toml"
	run hk -f "$T/pg.toml" apply "$T/app.toml"
	like "$rc $out" "^0 $S	revision 1	created" \
	    "postgres: hk apply pins the tag"
	run hk -f "$T/pg.toml" status "$S"
	like "$out" "digest: +$D2 " "postgres: hk status shows $D2"
	run hk -f "$T/pg.toml" apply --dry-run "$T/app.toml"
	is "$(echo "$out" | head -1)" "$S	revision 1	unchanged	image $D2" \
	    "postgres: applied again, unchanged"
	psql "$STORE" -qAtc 'SELECT spec FROM services' >"$T/pg.rows"
	grep -q "\"image_digest\":\"$D2\"" "$T/pg.rows" &&
	    ! grep -qF -- "$REG_PASS" "$T/pg.rows"
	ok $? "postgres: the digest is in the row, the password is not"
done
pg_missing_is_failure

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
