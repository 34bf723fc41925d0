#!/bin/sh
# hk apply --wait: returns once every changed service is ready on its new
# revision (an ordinary one running, a serverless one past its readiness
# gate), reports the first that failed with its reason, or the timeout;
# exit 0, 75, 75.  Unchanged and stopped services are not waited for.
# Against both stores.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

plan_per=14
n=0
for e in $(engines); do n=$((n + plan_per)); done
plan $n

# app FILE TAG [extra service lines]: web (ordinary), fn (serverless)
app() {
	{
		printf 'schema_version = 1\nname = "w"\n'
		fn_service web "[services.web.environment]
SCALE_TAG = \"$2\""
		fn_service fn "[services.fn.environment]
SCALE_TAG = \"$2\"
[services.fn.serverless]"
		printf '%s\n' "${3:-}"
	} >"$1"
}

one() {
	e=$1
	new_store "$e" wait || { ok 1 "$e: store"; return; }
	rm -rf "$T/run"; mkdir -p "$T/run"
	scale_operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"

	app "$T/a.toml" one
	run hk apply --wait "$T/a.toml"
	is "$rc" 69 "$e: without hk-scale, --wait says it cannot wait"
	like "$err" '^hk: error: apply --wait: hk-scale is not running: .*scale.sock' \
	    "$e: ... and why"

	daemon scale hk-scale -g 1
	ok $? "$e: hk-scale starts"
	app "$T/a.toml" two
	run hk apply --wait "$T/a.toml"
	is "$rc" 0 "$e: a good deploy: exit 0"
	like "$out" '^w/web revision 2 ready$' "$e: the ordinary service is ready on revision 2"
	like "$out" '^w/fn revision 2 ready$' "$e: the serverless one passed its gate on revision 2"
	is "$(status_of w/web revision)" 2 "$e: and it runs revision 2"

	run hk apply --wait "$T/a.toml"
	is "$rc:$(echo "$out" | grep -c ready)" "0:0" "$e: nothing changed: nothing waited for"

	app "$T/a.toml" three '
[services.bad]
command = ["sh", "-c", "echo no database here; exit 3"]'
	run hk apply --wait "$T/a.toml"
	is "$rc" 75 "$e: a service whose command exits at once: exit 75"
	like "$out" '^w/bad revision 1 failed: .*no database here' \
	    "$e: ... with its reason"

	app "$T/a.toml" four "
[services.slow]
command = [\"python3\", \"$FN/scale-http.py\"]
[services.slow.environment]
SCALE_DELAY = \"5\""
	start=$(date +%s)
	run hk apply --wait --timeout 1 "$T/a.toml"
	is "$rc" 75 "$e: a slow start and --timeout 1: exit 75"
	like "$err" '^hk: error: apply --wait: 1 of 3 services not ready within 1 s: w/slow$' \
	    "$e: ... saying so"
	[ $(($(date +%s) - start)) -le 3 ]
	ok $? "$e: ... in about a second"

	run hk apply --wait --timeout x "$T/a.toml"
	is "$rc" 64 "$e: a bad --timeout is a usage error"
	stop_pid "$scale_pid"
}

for e in $(engines); do
	one "$e"
done
pg_missing_is_failure
done_testing
