#!/bin/sh
# hk history and hk rollback, on SQLite and PostgreSQL, without daemons:
# each revision an apply makes is listed with its code and gate (pending
# while no hk-scale saw it); keep_revisions bounds what is kept, and the
# code of a revision goes with it; rollback makes a new revision of an
# earlier kept one's spec and code, refuses what is not kept and a host
# another service took since, and the next apply of the file applies the
# file again.
. tests/integration/lib.sh

write_app() {	# write_app VERSION: the source says which version it is
	mkdir -p "$T/app/code"
	printf 'print("v%s")\n' "$1" >"$T/app/code/handler.py"
	hosts=
	[ "$1" = 3 ] && hosts='hosts = ["old.example"]'
	cat >"$T/app/hk.toml" <<APP
schema_version = 1
name = "fn"

[services.fn]
command = ["python3", "handler.py"]
source = "code"
public = true
$hosts

[services.fn.serverless]
idle_seconds = 300
APP
}

other() {	# other HOST: the app "other", whose service has that host
	cat >"$T/other.toml" <<APP
schema_version = 1
name = "other"

[services.web]
command = ["python3", "-m", "http.server"]
public = true
hosts = ["$1"]
[services.web.serverless]
APP
	hk apply "$T/other.toml" >/dev/null
}

hash_of() {	# hash_of REV: the short code hash hk history prints for it
	hk history fn/fn | awk -F '\t' -v r="$1" '$1 == r { print $3 }'
}

mkdir -p "$T/run"
for engine in $(engines); do
	new_store "$engine" hist
	cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "$STORE"
runtime_dir = "$T/run"
keep_revisions = 2
max_serverless_services = 3
CONF
	export HAKOPOD_CONFIG="$T/hakopod.toml"

	write_app 1
	run hk apply "$T/app/hk.toml"
	is "$rc" 0 "$engine: apply of revision 1"
	c1=$(printf '%s\n' "$out" | sed -n 's/.*code //p')
	run hk history fn/fn
	is "$rc" 0 "$engine: history exits 0"
	like "$out" "^1	[0-9-]*T[0-9:]*Z	$c1	pending	current	-\$" \
	    "$engine: history: revision 1, its code, pending, current"
	run hk history --json fn/fn
	like "$out" '"gate": "pending"' "$engine: history --json has the gate"
	like "$out" '"current": true' "$engine: ... and which is current"
	like "$out" '"serving": false' "$engine: ... and that none serves yet"

	for v in 2 3 4; do
		write_app $v
		hk apply "$T/app/hk.toml" >/dev/null
	done
	run hk history fn/fn
	is "$(printf '%s\n' "$out" | cut -f1 | tr '\n' ' ')" "3 4 " \
	    "$engine: keep_revisions = 2: revisions 3 and 4 are kept"
	c3=$(hash_of 3) c4=$(hash_of 4)
	like "$c3" '^[0-9a-f]{12}$' "$engine: revision 3 has its code hash"

	run hk rollback fn/fn 1
	is "$rc:$out" "65:" "$engine: rollback to a revision not kept: exit 65"
	is "$err" "hk: error: fn/fn: revision 1 is not kept (hk history lists those that are)" \
	    "$engine: ... and why"
	run hk rollback fn/fn
	is "$rc" 65 "$engine: rollback with no passed revision: exit 65"
	is "$err" "hk: error: fn/fn: no revision older than 4 passed its readiness gate: name one (hk history)" \
	    "$engine: ... and why"
	run hk rollback fn/fn 4
	is "$rc:$err" "65:hk: error: fn/fn: revision 4 is the current one" \
	    "$engine: rollback to the current revision is refused"

	other old.example
	run hk rollback fn/fn 3
	is "$rc:$err" "65:hk: error: fn/fn: revision 3: host \"old.example\" is used by other/web now" \
	    "$engine: rollback to a revision whose host another service took is refused"
	other new.example

	run hk rollback fn/fn 3
	is "$rc" 0 "$engine: rollback to revision 3 exits 0"
	is "$out" "fn/fn	revision 5	updated	from revision 3" \
	    "$engine: rollback makes revision 5 from revision 3"
	is "$(hash_of 5)" "$c3" "$engine: revision 5 runs revision 3's code"
	run hk status fn/fn
	like "$out" "^code: +$c3" "$engine: status shows revision 3's code"
	run hk history fn/fn
	is "$(printf '%s\n' "$out" | cut -f1 | tr '\n' ' ')" "4 5 " \
	    "$engine: the rollback's revision is kept, the oldest goes"

	run hk apply "$T/app/hk.toml"
	like "$out" "^fn/fn	revision 6	updated" \
	    "$engine: the next apply of the file applies the file again"
	is "$(hash_of 6)" "$c4" "$engine: ... with the file's code"

	# A rollback to a serverless revision counts against the limit.
	lim() {	# lim SERVERLESS-LINES: the app "lim" with its service w
		printf 'schema_version = 1\nname = "lim"\n[services.w]\ncommand = ["x"]\n%s\n' \
		    "$1" >"$T/lim.toml"
		hk apply "$T/lim.toml" >/dev/null
	}
	fill() {	# fill SERVERLESS-LINES: the app "fill" with its service f
		printf 'schema_version = 1\nname = "fill"\n[services.f]\ncommand = ["x"]\n%s\n' \
		    "$1" >"$T/fill.toml"
		hk apply "$T/fill.toml" >/dev/null
	}
	lim 'public = true
[services.w.serverless]'
	lim ''
	fill 'public = true
[services.f.serverless]'
	run hk rollback lim/w 1
	is "$rc:$err" "65:hk: error: lim/w: the revision is serverless: the installation would have 4 serverless services, more than max_serverless_services (3)" \
	    "$engine: rollback beyond max_serverless_services is refused"
	fill ''
	run hk rollback lim/w 1
	is "$rc:$out" "0:lim/w	revision 3	updated	from revision 1" \
	    "$engine: within the limit, it is made"

	run hk history fn/nothere
	is "$rc:$err" "65:hk: error: fn/nothere: no such service" \
	    "$engine: history of no service: exit 65"
done
pg_missing_is_failure

done_testing
