#!/bin/sh
# A failed release never replaces a healthy one, with the container
# backend (hk-scale(8) "Releases"), on SQLite and PostgreSQL, against the
# suite's podman API service (its own when run alone) and the test image.
# Three container services pass revision 1: fn/sl (then asleep), fn/su
# (suspended: paused by the engine) and fn/ru (running).  Each gets a
# revision 2 whose image cannot be pulled, then a revision 3 that is
# never ready (it listens only after 60 s, past startup_timeout_seconds,
# 20 s: a good start on a busy machine takes several);
# every request meanwhile is answered 200 by revision 1 (its greeting
# says so), and hk history says why each failed.  A good revision 4 then
# takes over.  No hk-idle: services are put to sleep through scale.sock.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

SVCS="sl su ru"

# write_app KIND GREETING: every service at once; KIND good, nopull, never
write_app() {
	{
		printf 'schema_version = 1\nname = "fn"\n'
		for s in $SVCS; do
			img=$IMAGE
			[ "$1" = nopull ] &&
			    img=127.0.0.1:9/hk-missing@sha256:0000000000000000000000000000000000000000000000000000000000000000
			printf '\n[services.%s]\nimage = "%s"\nport = 8080\n' \
			    "$s" "$img"
			printf 'public = true\n[services.%s.environment]\n' "$s"
			printf 'GREETING = "%s"\n' "$2"
			[ "$1" = never ] && printf 'CT_FN_DELAY = "60"\n'
			printf '[services.%s.serverless]\n' "$s"
			printf 'idle_seconds = 86400\nstartup_timeout_seconds = 20\n'
			[ "$s" = su ] && printf 'idle_action = "suspend"\n'
		done
	} >"$T/app.toml"
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

gate_is() {	# gate_is SERVICE REV GATE: hk history says so
	[ "$(hk history "fn/$1" | awk -F '\t' -v r="$2" '$1 == r { print $4 }')" = "$3" ]
}

history_has() {	# history_has SERVICE PATTERN: a line of hk history matches
	hk history "$1" | grep -Eq -- "$2"
}

all_answer() {	# all_answer GREETING WHAT: each answers 200 with it
	for s in $SVCS; do
		_code=$(get "$s.fn.localhost" /)
		is "$_code $(cut -d' ' -f1 "$T/body")" "200 $1" \
		    "$engine: fn/$s: $2: answered 200 by $1"
	done
}

settle() {	# fn/sl asleep, fn/su suspended, fn/ru running
	ctl scale.sock '{"op":"sleep","service":"fn/sl"}' >/dev/null
	ctl scale.sock '{"op":"sleep","service":"fn/su"}' >/dev/null
	wait_t 20 scale_is fn/sl sleeping && wait_t 20 scale_is fn/su suspended
	ok $? "$engine: fn/sl sleeps, fn/su is suspended, fn/ru runs"
}

for engine in $(engines); do
	new_store "$engine" ctrel
	idle_setup "$STORE" "max_concurrent_starts = 8
container_engine = \"$U\"
container_network = \"slirp4netns\""
	write_app good v1
	start_events && start_scale && start_gw
	ok $? "$engine: hk-events, hk-scale and hk-activate are ready"
	for s in $SVCS; do
		wait_t 60 gate_is "$s" 1 passed
		ok $? "$engine: fn/$s: revision 1 passed its gate"
	done
	INST=$(ct_install "$STORE")
	all_answer v1 "revision 1"
	settle

	write_app nopull v2
	for s in $SVCS; do
		wait_t 30 gate_is "$s" 2 failed
		ok $? "$engine: fn/$s: revision 2 (an image that cannot be pulled) failed its gate"
	done
	run hk history fn/sl
	like "$out" "^2	[^	]*	-	failed	current	pull 127\\.0\\.0\\.1:9/hk-missing@sha256:0{64}: " \
	    "$engine: hk history: the pull's failure is the reason"
	is "$(scale_state fn/sl) $(scale_state fn/su) $(scale_state fn/ru)" \
	    "sleeping suspended running" "$engine: what served is as it was"
	all_answer v1 "revision 2 failed"
	settle

	write_app never v3
	all_answer v1 "revision 3 starting"
	for s in $SVCS; do
		wait_t 60 gate_is "$s" 3 failed
		ok $? "$engine: fn/$s: revision 3 (never ready) failed its gate"
	done
	# A retry of the gate may be under way: its row keeps the failure.
	wait_t 60 history_has fn/ru "^3	[^	]*	-	failed	current	not ready within 20 s\$"
	ok $? "$engine: hk history: revision 3 was not ready in time" ||
	    diag "$(hk history fn/ru 2>&1)"
	all_answer v1 "revision 3 failed"

	write_app good v4
	for s in $SVCS; do
		wait_t 60 gate_is "$s" 4 passed
		ok $? "$engine: fn/$s: revision 4 passed its gate"
	done
	all_answer v4 "revision 4"
	run hk status fn/sl
	like "$out" '^serving: +revision 4$' "$engine: hk status: revision 4 serves"

	stop_pid "$scale_pid" 120
	wait_t 30 ct_count_is 0 "$INST"
	ok $? "$engine: hk-scale stopped: its containers are gone"
	stop_pid "$gw_pid"
	stop_pid "$events_pid"
	: >"$T/gw.log"
	: >"$T/scale.log"
done
pg_missing_is_failure

done_testing
