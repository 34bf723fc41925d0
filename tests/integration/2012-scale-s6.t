#!/bin/sh
# The s6 backend under a real s6-svscan, on SQLite and PostgreSQL: a wake
# is an s6 service up, as nobody with no_new_privs, whose output reaches
# hk-scale's log; a sleep brings it down and keeps its directory; readiness
# by s6's notification-fd; a failed start says why; a hk-scale killed with
# SIGKILL while an instance runs is adopted by the next, one killed while
# an instance starts has it stopped by the next, and one whose instance
# has no row yet has it swept; a new revision's directory replaces the
# old one once ready; a service with a source runs from its read-only
# copy, runtime_dir/src/HASH; SIGTERM brings everything down.
# What a check looks at lasts until the test has seen it: fn/slow's start
# is held (fn/held) until hk-scale is killed, and the sweep's stop of
# fn/web (scale-http.py's SCALE_TERM_GATE) until the wake that waits for
# it is seen; hk-scale's grace period (30 s) outlasts both.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh
. tests/integration/lib/s6.sh

s6_require

# sql ENGINE STATEMENT
sql() {
	case $1 in
	sqlite) sqlite3 "$T/s6-$1.db" "$2" ;;
	postgres) psql "$STORE" -qAtc "$2" >/dev/null ;;
	esac
}

write_app() {	# write_app TAG-OF-WEB [no-note]
	{
		printf 'schema_version = 1\nname = "fn"\n'
		fn_service web "backend = \"s6\"
[services.web.environment]
SCALE_TAG = \"$1\"
SCALE_TERM_DELAY = \"1.5\"
SCALE_TERM_GATE = \"$T/webstop\"
[services.web.serverless]"
		[ -n "${2:-}" ] || fn_service note 'backend = "s6"
readiness = "notify"
[services.note.environment]
SCALE_NOTIFY = "never"
SCALE_NOTIFY_FD = "3"
[services.note.serverless]'
		cat <<SVC

[services.slow]
command = ["sh", "$FN/held", "$T/slow", "python3", "$FN/scale-http.py"]
backend = "s6"
public = true
[services.slow.serverless]
startup_timeout_seconds = 60

[services.src]
source = "code"
command = ["python3", "app.py"]
backend = "s6"
public = true
[services.src.serverless]

[services.bad]
command = ["sh", "-c", "echo cannot start, as asked; exit 3"]
backend = "s6"
public = true
[services.bad.serverless]
SVC
	} >"$T/app.toml"
	hk apply "$T/app.toml" >/dev/null
}

# row_is SERVICE STATE: the store's row of its instance says so
row_is() {
	[ "$(instance "$1" | cut -d' ' -f1)" = "$2" ]
}

# ps_running SERVICE: "hk ps" shows it running (for wait_t: the row
# says running a moment after the ready, SCALE_RECORD_MS)
ps_running() {
	hk ps | grep -q "$(printf '^fn\t%s\trunning\t1\t' "$1")"
}

# s6_saw SERVICEDIR: what s6-svstat says of it, for the reader of a
# failed check
s6_saw() {
	diag "s6-svstat $1: $(s6-svstat "$1" 2>&1)"
}

# The source of fn/src (fn/src-app.py).
mkdir -p "$T/code"
cp "$HK_TOP/tests/integration/fn/src-app.py" "$T/code/app.py"
echo src-one >"$T/code/body.txt"

NOBODY=$(id -u nobody)
for engine in $(engines); do
	new_store "$engine" "s6$engine"
	rm -f "$T/slow.hold" "$T/webstop.hold" "$T/webstop.go"
	[ "$engine" = sqlite ] && STORE="sqlite://$T/s6-sqlite.db"
	SCAN=$T/scan-$engine
	scale_operator "$T/hakopod.toml" "$STORE" "s6_scandir = \"$SCAN\""
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	s6_scan_start "$SCAN"
	ok $? "$engine: an s6-svscan runs on the scan directory"
	write_app one
	ok $? "$engine: the app is applied"
	# Each revision has passed its readiness gate: nothing starts by itself.
	sql "$engine" "INSERT INTO settings (key, value) VALUES ('hk-scale.gate.fn/web', '1'), ('hk-scale.gate.fn/note', '1'), ('hk-scale.gate.fn/slow', '1'), ('hk-scale.gate.fn/bad', '1'), ('hk-scale.gate.fn/src', '1')"

	rm -f "$T/scale.log"
	daemon scale hk-scale -v -g 30
	ok $? "$engine: hk-scale starts"
	subscribe "$T/sub.out"

	# A wake: the service runs under s6, as nobody, its output logged.
	ctl '{"op":"wake","service":"fn/web","reason":"request"}' >/dev/null
	wait_t 10 seen "$T/sub.out" '"op":"ready".*"service":"fn/web"'
	ok $? "$engine: a wake of fn/web is ready"
	web=$SCAN/hk.fn.web.1
	pid=$(status_of fn/web pid)
	is "$(s6_field "$web" pid)" "$pid" "$engine: s6 supervises it (hk.fn.web.1, pid $pid)"
	is "$(readlink "$web")" "$SCAN/.hk/hk.fn.web.1" \
	    "$engine: linked into the scan directory from .hk"
	grep -q "service=fn/web: started pid $pid revision 1 at 127.0.0.1:[0-9]* as nobody (s6 service hk.fn.web.1)" \
	    "$T/scale.log"
	ok $? "$engine: the start is logged with the s6 service"
	is "$(proc_field "$pid" Uid) $(proc_field "$pid" NoNewPrivs) $(proc_field "$pid" CapEff)" \
	    "$NOBODY $NOBODY $NOBODY $NOBODY 1 0000000000000000" \
	    "$engine: it runs as nobody with no_new_privs and no capabilities"
	wait_t 5 out_grep "service=fn/web: listening on 127.0.0.1:"
	ok $? "$engine: its output reaches hk-scale's log"
	ep=$(status_of fn/web endpoint)
	is "$(get "http://$ep/")" "one pid=$pid" "$engine: it answers at its endpoint"
	wait_t 5 out_grep 'service=fn/web: request "GET / HTTP/1.1" 200'
	ok $? "$engine: and the output relay logs the request"
	run hk logs -n all fn/web
	like "$out" "rev=1 inst=pid:$pid request \"GET / HTTP/1\\.1\" 200" \
	    "$engine: hk logs shows it, with revision and instance"
	wait_t 5 ps_running web
	run hk ps
	like "$out" "$(printf '^fn\tweb\trunning\t1\t')" "$engine: hk ps shows it running"

	# A sleep: down under s6, the directory kept for the next wake.
	is "$(ctl '{"op":"sleep","service":"fn/web"}')" '{"ok":true}' \
	    "$engine: a sleep is answered once it is down"
	is "$(s6_field "$web" up)" false "$engine: s6 has it down"
	dead "$pid"
	ok $? "$engine: its process is gone"
	[ -e "$web/down" ] && [ -x "$web/run" ]
	ok $? "$engine: its service directory stays, with a down file"

	# A source: the s6 service runs from its read-only copy.
	hash=$(hk ps --json | python3 -c 'import json, sys
print([s for s in json.load(sys.stdin) if s["service"] == "src"][0]["code_hash"])')
	ctl '{"op":"wake","service":"fn/src"}' >/dev/null
	wait_t 10 seen "$T/sub.out" '"op":"ready".*"service":"fn/src"'
	ok $? "$engine: a wake of fn/src, which has a source, is ready"
	pid=$(status_of fn/src pid)
	is "$(s6_field "$SCAN/hk.fn.src.1" pid)" "$pid" "$engine: under s6"
	is "$(readlink "/proc/$pid/cwd")" "$T/run/src/$hash" \
	    "$engine: its working directory is runtime_dir/src/HASH"
	ep=$(status_of fn/src endpoint)
	is "$(get "http://$ep/")" "src-one cwd=$T/run/src/$hash write=EACCES" \
	    "$engine: it answers from the copy, which it cannot write"
	echo src-edited >"$T/code/body.txt"
	like "$(get "http://$ep/")" '^src-one ' \
	    "$engine: an edit of the working copy changes nothing"
	echo src-one >"$T/code/body.txt"
	ctl '{"op":"sleep","service":"fn/src"}' >/dev/null

	# Readiness from s6's own notification (fd 3), not NOTIFY_SOCKET.
	ctl '{"op":"wake","service":"fn/note"}' >/dev/null
	wait_t 10 seen "$T/sub.out" '"op":"ready".*"service":"fn/note"'
	ok $? "$engine: readiness = notify: ready"
	is "$(cat "$SCAN/hk.fn.note.1/notification-fd")" 3 \
	    "$engine: its notification-fd is 3"
	grep -q 'service=fn/note: ready by s6.s notification-fd' "$T/scale.log"
	ok $? "$engine: ready by s6's notification, the newline on fd 3"
	is "$(s6_field "$SCAN/hk.fn.note.1" ready)" true "$engine: s6 knows it is ready"
	out_grep 'service=fn/note: sent READY=1'
	ok $((!$?)) "$engine: it sent no READY=1"
	ctl '{"op":"sleep","service":"fn/note"}' >/dev/null

	# A start that fails: the exit status and the last line.
	ctl '{"op":"wake","service":"fn/bad"}' >/dev/null
	wait_t 10 seen "$T/sub.out" '"op":"failed".*"service":"fn/bad"'
	like "$(grep '"op":"failed".*fn/bad' "$T/sub.out")" \
	    '"reason":"exit status 3: cannot start, as asked"' \
	    "$engine: a failed start gives the exit status and the last line"
	# Its finish script's 125 told s6-supervise not to restart it: s6
	# wants it down, and has it down (a restart would come a second later).
	is "$(s6_field "$SCAN/hk.fn.bad.1" up) $(s6_field "$SCAN/hk.fn.bad.1" wantedup)" \
	    "false false" "$engine: and s6 does not restart it (not up, not wanted up)" ||
	    s6_saw "$SCAN/hk.fn.bad.1"

	# SIGKILL while it runs: the next hk-scale adopts it.
	ctl '{"op":"wake","service":"fn/web"}' >/dev/null
	wait_t 10 more_than 1 "$T/sub.out" '"op":"ready".*"service":"fn/web"'
	wait_t 5 row_is fn/web running
	pid=$(status_of fn/web pid)
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	daemon scale hk-scale -v -g 30
	ok $? "$engine: hk-scale killed while fn/web runs starts again"
	grep -q "service=fn/web: adopted pid $pid at 127.0.0.1:" "$T/scale.log"
	ok $? "$engine: it adopts the running s6 service"
	is "$(status_of fn/web state) $(status_of fn/web pid)" "running $pid" \
	    "$engine: which is running, the same process"
	subscribe "$T/sub.out"
	ep=$(status_of fn/web endpoint)
	is "$(get "http://$ep/again")" "one pid=$pid" "$engine: and still answers"
	wait_t 5 out_grep 'service=fn/web: request "GET /again HTTP/1.1" 200'
	ok $? "$engine: its output still reaches the log, through the first relay"
	is "$(ctl '{"op":"sleep","service":"fn/web"}')" '{"ok":true}' \
	    "$engine: the adopted instance sleeps as any other"
	dead "$pid"
	ok $? "$engine: and is gone"

	# SIGKILL while it starts (held: it passed its gate, so this start
	# waits for $T/slow.go, which never comes): the next hk-scale stops it.
	touch "$T/slow.hold"
	ctl '{"op":"wake","service":"fn/slow"}' >/dev/null
	wait_t 10 row_is fn/slow starting
	pid=$(s6_field "$SCAN/hk.fn.slow.1" pid)
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	alive "$pid"
	ok $? "$engine: hk-scale killed while fn/slow starts (pid $pid up)"
	daemon scale hk-scale -v -g 30
	ok $? "$engine: hk-scale starts again"
	grep -q "service=fn/slow: stopping pid $pid, left starting by an earlier run" "$T/scale.log"
	ok $? "$engine: it stops the instance that was starting"
	wait_t 10 s6_is "$SCAN/hk.fn.slow.1" up false
	ok $? "$engine: s6 has it down" || s6_saw "$SCAN/hk.fn.slow.1"
	dead "$pid"
	ok $? "$engine: its process is gone"
	is "$(instance fn/slow)" none "$engine: and its row"

	# SIGKILL between the start and its row: the sweep stops it.  Its
	# stop lasts until $T/webstop.go (SCALE_TERM_GATE): a wake meanwhile
	# waits for the directory.
	ctl '{"op":"wake","service":"fn/web"}' >/dev/null
	wait_t 10 state_is fn/web running
	pid=$(status_of fn/web pid)
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	sql "$engine" "DELETE FROM instances WHERE app = 'fn' AND service = 'web'"
	touch "$T/webstop.hold"
	daemon scale hk-scale -v -g 30
	up=$?
	ctl '{"op":"wake","service":"fn/web"}' >/dev/null
	ok $up "$engine: hk-scale starts with fn/web up and no row of it"
	grep -q 'service=fn/web: s6 service hk.fn.web.1: up, and no row of the store says so: stopping it' \
	    "$T/scale.log"
	ok $? "$engine: the sweep finds it"
	subscribe "$T/sub.out"
	wait_t 10 grep -q 'service=fn/web: hk.fn.web.1 is still stopping: starting after it' \
	    "$T/scale.log"
	ok $? "$engine: a wake meanwhile waits for it"
	alive "$pid" && [ "$(status_of fn/web state)" = starting ]
	ok $? "$engine: while it stops (pid $pid), fn/web is starting" ||
	    { diag "fn/web: $(status_of fn/web state); the end of scale.log:"
	    tail -n 5 "$T/scale.log" | sed 's/^/#   /'; }
	touch "$T/webstop.go"
	wait_t 10 dead "$pid"
	ok $? "$engine: and stops it"
	wait_t 10 state_is fn/web running
	ok $? "$engine: then its directory, the current revision's, wakes again"
	new=$(status_of fn/web pid)
	[ "$new" != "$pid" ] && alive "$new"
	ok $? "$engine: as a new process"

	# A new revision: its own directory; the old one goes once it is ready.
	write_app two
	ctl '{"op":"reload"}' >/dev/null
	wait_t 10 seen "$T/sub.out" '"op":"ready".*"revision":2.*"service":"fn/web"|"op":"ready","revision":2,"service":"fn/web"'
	ok $? "$engine: revision 2 of fn/web is ready"
	wait_t 10 sh -c "[ ! -e '$SCAN/hk.fn.web.1' ] && [ ! -e '$SCAN/.hk/hk.fn.web.1' ]"
	ok $? "$engine: the directory of revision 1 is removed"
	ep=$(status_of fn/web endpoint)
	like "$(get "http://$ep/")" '^two pid=' "$engine: revision 2 answers"

	# A service removed while it runs: down, and its directory goes.
	ctl '{"op":"wake","service":"fn/note"}' >/dev/null
	wait_t 10 state_is fn/note running
	pid=$(status_of fn/note pid)
	write_app two no-note
	ctl '{"op":"reload"}' >/dev/null
	wait_t 10 seen "$T/sub.out" '"op":"down","reason":"removed","service":"fn/note"'
	ok $? "$engine: fn/note removed while it runs is down"
	dead "$pid"
	ok $? "$engine: its process is gone"
	wait_t 10 sh -c "[ ! -e '$SCAN/hk.fn.note.1' ] && [ ! -e '$SCAN/.hk/hk.fn.note.1' ]"
	ok $? "$engine: and its directory is removed"

	# SIGTERM: every service down, the directories kept.
	pid=$(status_of fn/web pid)
	stop_pid "$scale_pid"
	dead "$pid"
	ok $? "$engine: SIGTERM stops the running service"
	is "$(s6_field "$SCAN/hk.fn.web.2" up)" false "$engine: s6 has it down" ||
	    s6_saw "$SCAN/hk.fn.web.2"
	stop_pid "$sub_pid"
	s6_scan_stop "$SCAN"
	ok $? "$engine: s6-svscanctl -t stops the s6-svscan"
done
pg_missing_is_failure
done_testing
