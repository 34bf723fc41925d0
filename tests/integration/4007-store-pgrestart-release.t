#!/bin/sh
# The outcome of a release's readiness gate is not lost when PostgreSQL
# is away (hk-scale(8) "Releases"): fn/ru runs revision 1; revision 2 is
# applied, and its start is held (fn/held) until the server is stopped;
# then it exits, and its gate fails while the store cannot take the
# outcome.  Revision 1 answers all along; hk-scale's log says it kept the
# outcome, then wrote it once the server was started again; hk history
# says revision 2 failed, with the reason, and revision 1 serves.
# PostgreSQL only: the test stops a private server of its own (scripts/pg
# start, in $T), as 4006 does.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

write_app() {	# write_app TAG [held]: fn/ru, revision TAG
	if [ -n "${2:-}" ]; then
		cmd="[\"sh\", \"$IFN/held\", \"$T/r2\", \"sh\", \"-c\", \"echo broken; exit 3\"]"
	else
		cmd="[\"python3\", \"$IFN/scale-http.py\"]"
	fi
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.ru]
command = $cmd
public = true
[services.ru.environment]
SCALE_TAG = "$1"
[services.ru.serverless]
idle_seconds = 86400
APP
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

gate_is() {	# gate_is REV GATE: hk history says so
	[ "$(hk history fn/ru 2>/dev/null | awk -F '\t' -v r="$1" '$1 == r { print $4 }')" = "$2" ]
}

answers_v1() {
	[ "$(get ru.fn.localhost /)" = 200 ] && grep -q '^v1 ' "$T/body"
}

if [ -z "${HK_TEST_PG:-}" ]; then
	pg_missing_is_failure
	done_testing
	exit
fi
pgdir=$T/pg
trap '_cleanup_pg; _cleanup' EXIT
_cleanup_pg() {
	"$HK_TOP/scripts/pg" stop "$pgdir" >/dev/null 2>&1
}
chmod 711 "$T"		# the server runs as postgres
pgport=$(free_port)
url=$(HK_PG_PORT=$pgport "$HK_TOP/scripts/pg" start "$pgdir" 2>"$T/pg.err")
ok $? "a private PostgreSQL server starts (port $pgport)" ||
    { sed 's/^/# /' "$T/pg.err"; done_testing; }
for pgbin in "${HK_TEST_PG_BIN:-}" /usr/lib/postgresql/*/bin; do
	[ -x "$pgbin/pg_ctl" ] && break
done
idle_setup "$url"
write_app v1
start_events && start_scale && start_gw
ok $? "hk-events, hk-scale and hk-activate are ready"
wait_t 10 gate_is 1 passed
ok $? "revision 1 passed its gate"
answers_v1
ok $? "revision 1 answers"

touch "$T/r2.hold"
write_app v2 held
ok $? "revision 2 is applied"
wait_t 10 grep -q 'service=fn/ru: started pid [0-9]* revision 2' "$T/scale.log"
ok $? "its start is under way (held), behind revision 1"

as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null
ok $? "PostgreSQL stopped"
touch "$T/r2.go"
wait_t 10 grep -q 'service=fn/ru: revision 2 failed its readiness gate: exit status 3: broken' \
    "$T/scale.log"
ok $? "revision 2 exits: its gate fails while the store is away"
wait_t 10 grep -q 'service=fn/ru: unable to record revision 2 failed: .*kept, to be written once the store answers' \
    "$T/scale.log"
ok $? "hk-scale keeps the outcome"
answers_v1
ok $? "revision 1 answers meanwhile"

as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/data/server.log" \
    -o "-k $pgdir/sock -p $pgport -c listen_addresses='' -c fsync=off" \
    -w start >/dev/null
ok $? "PostgreSQL started again"
# What was owed is written by its timer, or in its place by a later
# outcome of the same revision (the gate tried again while the timer
# waits: its wait grows to 10 s while the store is away).
wait_t 20 grep -Eq 'store: ([0-9]+ owed .* written now that it answers|fn/ru.*: written in place of the one owed)' \
    "$T/scale.log"
ok $? "hk-scale writes what it owed once the store answers"
wait_t 10 gate_is 2 failed
ok $? "hk history: revision 2 failed"
run hk history fn/ru
like "$out" "^2	[^	]*	-	failed	current	exit status 3: broken\$" \
    "... with the reason"
like "$out" "^1	[^	]*	-	passed	serving	-\$" "... and revision 1 serves"
answers_v1
ok $? "revision 1 still answers"
stop_pid "$scale_pid"
is "$(count_in "$T/scale.log" 'still owed at exit')" 0 \
    "hk-scale: nothing still owed at exit"

done_testing
