#!/bin/sh
# hk apply --dry-run [--json] on SQLite and PostgreSQL: the plan of a first
# apply, of an unchanged app, of a changed command, environment value and
# code, of a removed service, of jobs and schedules, with the vetting gate
# on; what it prints (names of keys, never values) and its exit codes; and
# that it writes nothing: the store's dump (and the SQLite file's bytes
# and mtime) are the same before and after each plan.  Then apply does
# what the plan said.
. tests/integration/lib.sh

pg_missing_is_failure
command -v jq >/dev/null
ok $? "jq is installed"

S=$T/src
mkdir -p "$S"
printf 'print("one")\n' >"$S/app.py"
chmod -R a+rX "$S"

write_app() {	# write_app FILE CMD FOO [extra text]
	cat >"$1" <<APP
schema_version = 1
name = "fn"

[services.py]
command = ["python3", "$2"]
source = "$S"
port = 8081
public = true
[services.py.environment]
FOO = "$3"
[services.py.serverless]
idle_seconds = 300

[services.db]
command = ["sleep", "1000"]
${4:-}
APP
}

operator() {	# operator STORE [extra lines]
	{
		printf '[server]\nserverless_address = "127.0.0.1:8082"\n'
		printf 'state = "%s"\nruntime_dir = "%s"\n' "$1" "$T/run"
		printf '%s\n' "${2:-}"
	} >"$T/hakopod.toml"
}

# dump: the whole store as text; for SQLite also the file's hash and mtime
dump() {
	case $engine in
	sqlite)
		sqlite3 "${STORE#sqlite://}" .dump
		sha256sum "${STORE#sqlite://}"
		stat -c '%Y.%y %s' "${STORE#sqlite://}"
		;;
	postgres)
		pg_dump --data-only "$STORE" | grep -v "^.\(un\)\?restrict "
		;;
	esac
}

# plan WHAT ARGS...: hk apply --dry-run ARGS, and the store as it was
plan() {
	_what=$1
	shift
	dump >"$T/before.dump"
	run hk apply --dry-run "$@"
	dump >"$T/after.dump"
	diff_ok "$T/after.dump" "$T/before.dump" \
	    "$engine: $_what: the store is byte for byte as it was"
}

mkdir -p "$T/run"
export HAKOPOD_CONFIG="$T/hakopod.toml"
for engine in $(engines); do
	new_store "$engine" plan
	operator "$STORE"
	write_app "$T/app.toml" app.py one

	if [ "$engine" = sqlite ]; then
		mkdir "$T/tmp"
		run env TMPDIR="$T/tmp" hk apply --dry-run "$T/app.toml"
		is "$rc" 0 "$engine: a plan without a store exits 0"
		like "$out" '^fn/py	revision 1	created	code [0-9a-f]{12}$' \
		    "$engine: ... and plans against an empty one"
		is "$err" "hk: info: apply --dry-run: no store at $STORE yet: planned against an empty one" \
		    "$engine: ... and says so"
		test ! -e "${STORE#sqlite://}"
		ok $? "$engine: ... without making the store's file"
		is "$(ls -A "$T/tmp")" "" \
		    "$engine: ... and the empty one under TMPDIR is gone"
	fi
	hk ps >/dev/null	# the store made, as any command makes it

	# A first apply.
	plan "the first apply" "$T/app.toml"
	is "$rc" 0 "$engine: the plan of a first apply exits 0"
	like "$out" '^fn/py	revision 1	created	code [0-9a-f]{12}$' \
	    "$engine: a new service is created, revision 1, with its code"
	like "$out" '^fn/db	revision 1	created$' \
	    "$engine: ... one without source has no code"
	like "$out" '^dry run: 2 created, 0 updated, 0 unchanged, 0 removed; nothing written$' \
	    "$engine: ... and the summary says nothing was written"
	run hk ps
	is "$out" "" "$engine: hk ps shows no service after the plan"

	run hk apply "$T/app.toml"
	is "$rc" 0 "$engine: apply"
	code1=$(hk ps --json | jq -r '.[] | select(.service == "py") | .code_hash')

	# Unchanged.
	plan "an unchanged app" "$T/app.toml"
	is "$rc" 0 "$engine: the plan of an unchanged app exits 0"
	is "$out" "fn/py	revision 1	unchanged	code $(printf %.12s "$code1")
fn/db	revision 1	unchanged
dry run: 0 created, 0 updated, 2 unchanged, 0 removed; nothing written" \
	    "$engine: every service is unchanged"

	# A changed command, environment value and code.
	printf 'print("two")\n' >"$S/app.py"
	write_app "$T/app.toml" main.py sekrit-value-42
	plan "a changed command, environment and code" "$T/app.toml"
	is "$rc" 0 "$engine: the plan of a change exits 0"
	like "$out" "^fn/py	revision 2	updated	code $(printf %.12s "$code1") -> [0-9a-f]{12}	keys command environment.FOO source$" \
	    "$engine: the new revision, the code before and after, the keys that differ"
	like "$out" '^fn/db	revision 1	unchanged$' "$engine: ... the other service unchanged"
	case "$out$err" in
	*sekrit-value-42*|*one*|*two*) ok 1 "$engine: no value is printed" ;;
	*) ok 0 "$engine: no value is printed" ;;
	esac

	plan "--json" --json "$T/app.toml"
	is "$rc" 0 "$engine: --json exits 0"
	printf '%s\n' "$out" >"$T/plan.json"
	jq -e . "$T/plan.json" >/dev/null
	ok $? "$engine: --json prints one JSON document"
	is "$(jq -r '.dry_run, (.services[] | select(.service == "py") |
	    .result, .revision, .previous_revision, (.keys | join(",")),
	    (.previous_code == "'"$code1"'"), (.code | length), .vet),
	    (.jobs | length), (.schedules | length)' "$T/plan.json" | tr '\n' ' ')" \
	    "true updated 2 1 command,environment.FOO,source true 64 false 0 0 " \
	    "$engine: --json: result, revisions, keys, the whole code hashes"
	grep -q sekrit "$T/plan.json"
	ok $((! $?)) "$engine: --json prints no value either"

	# What apply then does is what the plan said.
	run hk apply "$T/app.toml"
	like "$out" '^fn/py	revision 2	updated	' "$engine: apply gives the revision the plan said"

	# A removed service, a job and a schedule.
	cat >"$T/less.toml" <<APP
schema_version = 1
name = "fn"

[jobs.seed]
service = "py"
run_id = 1

[services.py]
command = ["python3", "main.py"]
source = "$S"
port = 8081
public = true
[services.py.environment]
FOO = "sekrit-value-42"
[services.py.serverless]
idle_seconds = 300
[services.py.schedules.tick]
cron = "0 * * * *"
path = "/tick"
APP
	plan "a removed service, a job and a schedule" "$T/less.toml"
	is "$rc" 0 "$engine: the plan of a removal exits 0"
	like "$out" '^fn/db	removed$' "$engine: the service no longer in the file is removed"
	like "$out" '^fn/seed	job run_id 1	queued$' "$engine: a new job is queued"
	like "$out" '^fn/py	schedule tick	created$' "$engine: a new schedule is created"
	like "$out" '^dry run: 0 created, 0 updated, 1 unchanged, 1 removed; nothing written$' \
	    "$engine: ... and the summary counts it"
	run hk apply "$T/less.toml"
	run hk ps
	is "$(printf '%s\n' "$out" | cut -f2 | tr '\n' ' ')" "py " \
	    "$engine: apply removes what the plan said"
	plan "removed jobs and schedules" "$T/app.toml"
	like "$out" '^fn/seed	job run_id 1	removed$' "$engine: a job no longer in the file is removed"
	like "$out" '^fn/py	schedule tick	removed$' "$engine: ... and a schedule"
	like "$out" '^fn/db	revision 1	created$' "$engine: ... and a service back is created"

	# Refusals: as apply refuses, store untouched.
	write_app "$T/sec.toml" main.py x 'secrets = ["db_password"]'
	plan "a missing secret" "$T/sec.toml"
	is "$rc $err" "65 $T/sec.toml:16: services.db.secrets: no secret \"db_password\" in app fn (hk secret set fn db_password)" \
	    "$engine: a missing secret is refused as apply refuses it (65)"
	printf 'schema_version = 1\nname = "fn"\n[services.a]\ncommand = [' >"$T/bad.toml"
	plan "a bad file" "$T/bad.toml"
	is "$rc" 65 "$engine: an invalid file exits 65"
	plan "a missing file" "$T/none.toml"
	is "$rc" 66 "$engine: a missing file exits 66"
	run hk apply --json "$T/app.toml"
	is "$rc" 64 "$engine: --json without --dry-run is a usage error (64)"
	run hk apply --dry-run --wait "$T/app.toml"
	is "$rc" 64 "$engine: --dry-run with --wait is a usage error (64)"

	# The vetting gate: said, not asked, nothing kept.
	printf 'Judge this code.\n' >"$T/prompt"
	operator "$STORE" "[vet]
enabled = true
model = \"m\"
endpoint = \"http://127.0.0.1:$(free_port)/v1/chat/completions\"
prompt_file = \"$T/prompt\""
	printf 'print("three")\n' >"$S/app.py"
	plan "code the gate would vet" "$T/app.toml"
	is "$rc $err" "0 " "$engine: a plan with the gate on exits 0"
	like "$out" '^fn/py	revision 3	updated	code [0-9a-f]{12} -> [0-9a-f]{12}	keys source	would be vetted$' \
	    "$engine: new code would be vetted"
	run hk-events list --json -n 0
	is "$rc $(printf '%s\n' "$out" | jq -r '[.[] | .kind] | unique | join(" ")')" \
	    "0 Applied" "$engine: ... no verdict or skip is recorded: Applied is the only event"
	operator "$STORE" "[vet]
enabled = true
model = \"m\"
endpoint = \"http://127.0.0.1:9/v1/chat/completions\"
prompt_file = \"$T/no-such-prompt\""
	plan "an unreadable prompt" "$T/app.toml"
	is "$rc" 78 "$engine: an unreadable prompt file exits 78, as apply"
	operator "$STORE"
done

done_testing
