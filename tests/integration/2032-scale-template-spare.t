#!/bin/sh
# start_from = "python-template", exec backend with a cgroup freezer: the
# template hands hk-scale its spare fork's socket, and a wake sends its
# request to the spare straight: the instance is that spare (its pid),
# a fork of the template in a session and cgroup of its own.  A spare
# killed before its wake costs nothing but the shortcut: the wake is
# forked by the template, and a new spare follows.  The template killed,
# its spare ends with it (hk-scale lets go of its socket).  A function
# that takes 2 s to import is reached by the gateway before it listens
# (readiness = "socket": the handed socket queues the request): it
# answers that request once, and the next one as its second.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

SLOW=$HK_TOP/tests/integration/fn/tmpl-slow.py

write_app() {
	cat >"$T/ts.toml" <<APP
schema_version = 1
name = "ts"

[services.fn]
command = ["python3", "$SLOW", "0"]
public = true
readiness = "socket"
[services.fn.serverless]
start_from = "python-template"
startup_timeout_seconds = 20

[services.slow]
command = ["python3", "$SLOW", "2"]
public = true
readiness = "socket"
[services.slow.serverless]
start_from = "python-template"
startup_timeout_seconds = 20
APP
}

field() {	# field KEY: of the JSON in $T/body
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	    "$T/body" "$1"
}

answers() {	# answers HOST: 200 with JSON in $T/body
	[ "$(gw_code "$1" /)" = 200 ]
}

tmpl_ready() {	# the pid of the newest template hk-scale said ready
	sed -n 's/.*python template python3 for nobody: pid \([0-9]*\) ready.*/\1/p' \
	    "$T/scale.log" | tail -1
}

ready_count() {
	count 'python template python3 for nobody: pid [0-9]* ready' "$T/scale.log"
}

more_ready() {
	[ "$(ready_count)" -gt "$1" ]
}

stat_field() {	# stat_field PID N: field N of /proc/PID/stat after the name
	sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f"$2"
}

# spare_of TPID: the spare fork of template TPID: hk-scale's child in
# the template's session, not the template; nothing (false) if none
spare_of() {
	for _p in $(pgrep -P "$scale_pid"); do
		[ "$_p" != "$1" ] || continue
		[ "$(stat_field "$_p" 4)" = "$1" ] || continue
		alive "$_p" && echo "$_p" && return 0
	done
	return 1
}

has_spare() {
	spare_of "$1" >/dev/null
}

dead() {
	! alive "$1"
}

in_log() {
	grep -q -- "$1" "$T/scale.log"
}

new_store sqlite ts || { ok 1 "store"; done_testing; exit; }
GW_STATE=$STORE
gw_config 'freezer = "cgroup2"'
write_app
run hk apply "$T/ts.toml"
is "$rc" 0 "hk apply"
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"

# The gates' starts start the template; both services then sleep.
wait_t 20 answers fn.ts.localhost
ok $? "ts/fn answers (its gate)"
wait_t 30 more_ready 0
ok $? "the python template is ready"
tpid=$(tmpl_ready)
wait_t 20 answers slow.ts.localhost
ok $? "ts/slow answers (its gate)"
put_to_sleep ts/fn && put_to_sleep ts/slow
ok $? "both put to sleep"

# A wake goes to the spare straight: the spare is the instance.
wait_t 10 has_spare "$tpid"
ok $? "template $tpid has a spare fork"
spare=$(spare_of "$tpid")
wait_t 20 answers fn.ts.localhost
ok $? "ts/fn woken through the gateway"
is "$(field pid)" "$spare" "the spare, pid $spare, is the instance that answers"
is "$(field preloaded)" True "a fork of the template (http.server imported before its first line)"
in_log "python template python3 for nobody: spare pid $spare takes the start"
ok $? "hk-scale says the spare took the start"
in_log "service=ts/fn: started pid $spare revision .* from the python template"
ok $? "hk-scale started it from the python template"
is "$(stat_field "$spare" 4)" "$spare" "it leads a session of its own"
put_to_sleep ts/fn
ok $? "put to sleep again"

# A spare that died before its wake: the template forks the instance.
wait_t 10 has_spare "$tpid"
ok $? "a new spare after the wake"
gone=$(spare_of "$tpid")
[ -n "$gone" ] && [ "$gone" != "$spare" ]
ok $? "it is another process"
kill -KILL "$gone"
wait_t 10 dead "$gone"
ok $? "spare $gone killed"
wait_t 20 answers fn.ts.localhost
ok $? "ts/fn still wakes"
ipid=$(field pid)
[ -n "$ipid" ] && [ "$ipid" != "$gone" ]
ok $? "not by the dead spare"
is "$(field preloaded)" True "a fork of the template"
in_log "python template python3 for nobody: spare pid $gone is gone"
ok $? "hk-scale says the spare was gone"
in_log "service=ts/fn: started pid $ipid revision .* from the python template"
ok $? "the template forked it (pid $ipid)"
wait_t 10 has_spare "$tpid"
ok $? "and made a new spare"
put_to_sleep ts/fn
ok $? "put to sleep again"

# The gateway is ahead of a slow import: one answer, from the instance.
wait_t 10 has_spare "$tpid"
ok $? "a spare for ts/slow"
wait_t 20 answers slow.ts.localhost
ok $? "ts/slow, 2 s to import, answers the request that woke it"
is "$(field served)" 1 "that request was served once"
is "$(field preloaded)" True "by a fork of the template"
spid=$(field pid)
wait_t 20 answers slow.ts.localhost
ok $? "ts/slow answers the next request"
is "$(field served)" 2 "as its second"
is "$(field pid)" "$spid" "from the same instance"

# The template killed: its spare goes with it.
wait_t 10 has_spare "$tpid"
ok $? "a spare before the template dies"
last=$(spare_of "$tpid")
kill -KILL "$tpid"
wait_t 10 dead "$last"
ok $? "spare $last ended with template $tpid"
wait_t 30 more_ready 1
ok $? "a new template is ready"

done_testing
