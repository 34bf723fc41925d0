#!/bin/sh
# start_from = "python-template", exec backend with a cgroup freezer: the
# template as hk-scale's loop and an operator see it (SQLite: the store
# plays no part here).  It is started when its service is loaded, before
# any request, and after hk-scale is killed and started again the new
# hk-scale's first wake of the service is a fork of its new template.
# hk ps shows it beside the services, with its memory.  A template that
# does not answer (stopped by SIGSTOP, its spare fork killed: the wake
# must ask the template itself) stalls nothing else: hk-scale's
# status answers meanwhile with the wake still starting, and once the
# template runs again the wake is a fork of that same template; one that
# stays stopped is replaced after 5 s, and the next wake forks from the
# new one.  No process of the services' user may ptrace the template or
# its spare fork, while an instance is dumpable as a bare exec of it is.
# A reload that leaves no service wanting it ends it.  Run by hand, the
# template's program says how it is used and exits 64.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

TFN=$HK_TOP/tests/integration/fn/tmpl-fn.py
TPROG=$HK_BUILD/bin/hk-python-template

write_app() {	# write_app START_FROM
	cat >"$T/ta.toml" <<APP
schema_version = 1
name = "ta"

[services.fn]
command = ["python3", "$TFN"]
public = true
readiness = "socket"
[services.fn.serverless]
start_from = "$1"
startup_timeout_seconds = 20
APP
}

ready_count() {
	count 'python template python3 for nobody: pid [0-9]* ready' "$T/scale.log"
}

more_ready() {
	[ "$(ready_count)" -gt "$1" ]
}

tmpl_ready() {	# the pid of the newest template hk-scale said ready
	sed -n 's/.*python template python3 for nobody: pid \([0-9]*\) ready.*/\1/p' \
	    "$T/scale.log" | tail -1
}

dead() {
	! alive "$1"
}

answers() {	# answers HOST: 200 with JSON in $T/body
	[ "$(gw_code "$1" /)" = 200 ]
}

field() {	# field KEY: of the JSON in $T/body
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	    "$T/body" "$1"
}

ppid_of() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f2
}

sid_of() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f4
}

cmdline() {
	tr '\0' ' ' <"/proc/$1/cmdline"
}

# from_template PID TPID: PID is a fork of template TPID, hk-scale's child
from_template() {
	[ "$(cmdline "$1")" = "$(cmdline "$2")" ] &&
	    [ "$(ppid_of "$1")" = "$scale_pid" ] && [ "$(sid_of "$1")" = "$1" ]
}

# spare_of TPID: the fork that waits for the template's next request
# (hk-scale's child, in the template's session)
spare_of() {
	for _p in $(pgrep -f "$TPROG\$"); do
		[ "$_p" != "$1" ] && [ "$(sid_of "$_p" 2>/dev/null)" = "$1" ] &&
		    echo "$_p"
	done | head -1
}

no_spare() {	# no_spare TPID: template TPID has no spare fork
	[ -z "$(spare_of "$1")" ]
}

has_spare() {	# has_spare TPID: template TPID has forked its spare
	[ -n "$(spare_of "$1")" ]
}

# stop_template TPID: stopped (SIGSTOP) and its spare fork killed: a
# wake then asks the template itself (a spare takes a wake without it)
stop_template() {
	kill -STOP "$1"
	while _s=$(spare_of "$1") && [ -n "$_s" ]; do
		kill -KILL "$_s"
		wait_t 10 dead "$_s" || return 1
	done
}

# as_nobody_attach PID: what a process of user nobody gets from
# ptrace(PTRACE_SEIZE) of PID: "ok" or the error
as_nobody_attach() {
	runuser -u nobody -- python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                        ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) == 0:
    print("ok")
else:
    print(os.strerror(ctypes.get_errno()))' "$1"
}

# as_nobody_mem PID: what a process of user nobody gets from opening
# /proc/PID/mem: "ok" or the error
as_nobody_mem() {
	runuser -u nobody -- python3 -c '
import os, sys
try:
    os.close(os.open("/proc/%s/mem" % sys.argv[1], os.O_RDONLY))
    print("ok")
except OSError as e:
    print(e.strerror)' "$1"
}

ps_templates() {	# the TEMPLATE table of hk ps on a terminal
	script -qec "hk ps" /dev/null </dev/null | tr -d '\r' |
	    sed -n '/^TEMPLATE /,$p'
}

started_lines() {	# started_lines LOG: hk-scale's starts of ta/fn
	grep 'service=ta/fn: started ' "$1"
}

more_in_gw() {	# more_in_gw N: the gateway subscribed more than N times
	[ "$(count 'scale.sock: subscribed' "$T/gw.log")" -gt "$1" ]
}

asked() {	# asked N: more than N starts of ta/fn asked of the template
	[ "$(count 'service=ta/fn: revision [0-9]* asked of the python template' \
	    "$T/scale.log")" -gt "$1" ]
}

new_store sqlite ta
GW_STATE=$STORE
gw_config 'freezer = "cgroup2"'
write_app python-template
run hk apply "$T/ta.toml"
is "$rc" 0 "hk apply of ta"

# Loaded: the template starts with hk-scale, before any request.
daemon events hk-events -v
ok $? "hk-events is up"
daemon scale hk-scale -v -g 2
ok $? "hk-scale is up"
wait_t 30 more_ready 0
ok $? "hk-scale starts the python template as the service is loaded"
tpid=$(tmpl_ready)
first=$(grep -n 'python template python3 for nobody: started pid\|service=ta/fn: started' \
    "$T/scale.log" | head -1)
like "$first" 'python template python3 for nobody: started pid [0-9]*$' \
    "the template is started before the service's first start (its gate's)"
gw_start && wait_for 5 grep -q 'scale.sock: subscribed' "$T/gw.log"
ok $? "hk-activate is up"

like "$(ps_templates)" "^TEMPLATE +USER +PID +MEMORY
python3 +nobody +$tpid +[1-9][0-9]*\\.[0-9] MiB\$" \
    "hk ps shows the template, its user, pid and memory"
is "$(hk ps | wc -l)" 1 "off a terminal, the service's line alone (for scripts)"
like "$(scale_ctl '{"op":"status"}' templates.0.memory_bytes)" '^[1-9][0-9]{6,}$' \
    "hk-scale's status gives its memory in bytes"

wait_t 20 answers fn.ta.localhost
ok $? "ta/fn answers"
put_to_sleep ta/fn
ok $? "ta/fn put to sleep"

# hk-scale killed and started again: the old template ends with it, the
# new one is started at the load, and the first wake forks from it.
subs=$(count 'scale.sock: subscribed' "$T/gw.log")
kill -KILL "$scale_pid"
wait "$scale_pid" 2>/dev/null
wait_t 10 dead "$tpid"
ok $? "hk-scale killed: its template ends"
mv "$T/scale.log" "$T/scale1.log"
daemon scale hk-scale -v -g 2
ok $? "hk-scale started again"
wait_t 30 more_ready 0
ok $? "it starts a new template at once"
tpid=$(tmpl_ready)
wait_t 10 more_in_gw "$subs"
wait_t 20 answers fn.ta.localhost
ok $? "ta/fn wakes"
fpid=$(field pid)
from_template "$fpid" "$tpid"
ok $? "pid $fpid is a fork of template $tpid"
like "$(started_lines "$T/scale.log" | head -1)" \
    "started pid $fpid revision 1 .* as nobody from the python template\$" \
    "the first wake of this hk-scale is forked from the template"

# Not dumpable: ptrace and /proc/PID/mem refused to the user's processes,
# the template's and its spare's; the instance is as a bare exec.
is "$(as_nobody_attach "$tpid")" "Operation not permitted" \
    "a process of user nobody may not ptrace the template (EPERM)"
is "$(as_nobody_mem "$tpid")" "Permission denied" \
    "nor open its /proc/PID/mem"
# the spare is forked a moment after the start it replaces
wait_t 30 has_spare "$tpid"
spid=$(spare_of "$tpid")
[ -n "$spid" ] && [ "$(as_nobody_attach "$spid")" = "Operation not permitted" ]
ok $? "nor ptrace its spare fork (pid $spid)"
is "$(as_nobody_mem "$fpid")" ok \
    "the instance, nobody's own, is dumpable again: its /proc/PID/mem opens"
is "$(python3 -c 'import sys; print(open("/proc/%s/status" % sys.argv[1]).read().split("Uid:")[1].split()[0])' "$tpid")" \
    "$(id -u nobody)" "the template runs as nobody"

# A template that does not answer stalls no one else.
put_to_sleep ta/fn
ok $? "ta/fn put to sleep again"
n=$(count 'asked of the python template' "$T/scale.log")
stop_template "$tpid"
curl -sS -o "$T/slow.body" --max-time 60 -H 'Host: fn.ta.localhost' \
    "$GW_URL/" 2>"$T/slow.err" &
curl_pid=$!
_pids="$_pids $curl_pid"
wait_t 20 asked "$n"
ok $? "a wake is asked of the stopped template"
is "$(scale_ctl '{"op":"status"}' services.ta/fn.state)" starting \
    "hk-scale's status answers meanwhile: the wake is starting"
kill -CONT "$tpid"
wait "$curl_pid"
ok $? "the template runs again: the wake is answered"
python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' \
    "$T/slow.body" >"$T/slow.pid"
from_template "$(cat "$T/slow.pid")" "$tpid" &&
    ! grep -q 'no answer within' "$T/scale.log"
ok $? "by a fork of the same template, never replaced"

# A start stopped while the template has not answered never runs: the
# pid that comes is killed first.
put_to_sleep ta/fn
ok $? "ta/fn put to sleep (before a stop)"
n=$(count 'asked of the python template' "$T/scale.log")
started=$(count 'service=ta/fn: started pid' "$T/scale.log")
stop_template "$tpid"
curl -sS -o /dev/null --max-time 60 -H 'Host: fn.ta.localhost' \
    "$GW_URL/" 2>/dev/null &
_pids="$_pids $!"
wait_t 20 asked "$n"
ok $? "a wake is asked of the stopped template"
run hk stop ta/fn
is "$rc" 0 "hk stop ta/fn meanwhile"
wait_t 10 grep -q 'service=ta/fn: stopping instance$' "$T/scale.log"
ok $? "hk-scale stops the start under way"
kill -CONT "$tpid"
wait_t 20 grep -q 'service=ta/fn: revision 1 from the python template: stopped before it ran$' \
    "$T/scale.log"
ok $? "the template's answer comes: its pid is killed before it runs"
is "$(count 'service=ta/fn: started pid' "$T/scale.log")" "$started" \
    "hk-scale never says it started"
run hk start ta/fn
is "$rc" 0 "hk start ta/fn"
wait_t 30 answers fn.ta.localhost
from_template "$(field pid)" "$tpid"
ok $? "the next wake forks from the same template"

# One that stays stopped is replaced, and the wake after forks from the
# new one.
put_to_sleep ta/fn
ok $? "ta/fn put to sleep once more"
n=$(ready_count)
stop_template "$tpid"
curl -sS -o /dev/null --max-time 60 -H 'Host: fn.ta.localhost' \
    "$GW_URL/" 2>/dev/null &
_pids="$_pids $!"
wait_t 30 grep -q "python template python3 for nobody: pid $tpid no answer within 5 s: replaced" \
    "$T/scale.log"
ok $? "a template that does not answer within 5 s is replaced"
wait_t 10 dead "$tpid"
ok $? "the stopped one is killed"
wait_t 30 more_ready "$n"
ok $? "a new template is ready"
tpid2=$(tmpl_ready)
wait_t 30 answers fn.ta.localhost
ok $? "ta/fn answers"
put_to_sleep ta/fn
wait_t 20 answers fn.ta.localhost
from_template "$(field pid)" "$tpid2"
ok $? "the next wake forks from the new template ($tpid2)"

# A reload that leaves no service wanting it ends it.
write_app exec
run hk apply "$T/ta.toml"
is "$rc" 0 "hk apply: ta/fn with start_from = \"exec\""
wait_t 20 grep -q "python template python3 for nobody: pid $tpid2 no longer wanted: ended" \
    "$T/scale.log"
ok $? "hk-scale ends the template no service wants"
wait_t 10 dead "$tpid2"
ok $? "pid $tpid2 is gone"
is "$(ps_templates)" "" "hk ps shows no template"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"

# By hand.
run "$TPROG" --help
is "$rc" 0 "hk-python-template --help exits 0"
like "$out" '^usage: hk-python-template \[--help\]' "and says how it is used"
run "$TPROG" 3<&-
is "$rc" 64 "run by hand, hk-python-template exits 64"
like "$err" 'hk-python-template: fd 3: Bad file descriptor: it runs under hk-scale only' \
    "and says why"
run "$TPROG" 3<"$T/ta.toml"
like "$rc:$err" '^64:hk-python-template: fd 3: Socket operation on non-socket' \
    "fd 3 a file: exit 64, and why"
run "$TPROG" extra
like "$rc:$err" '^64:usage: hk-python-template' "an argument: exit 64, usage"
done_testing
