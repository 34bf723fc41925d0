#!/bin/sh
# hk-scale's output relays: once an instance is ready, a relay of its own
# (a child of hk-scale, in a session of its own) copies its lines to
# hk-scale's stderr.  When hk-scale is killed with SIGKILL, the instances
# go on printing (a Python function that logs each request, a shell loop
# that SIGPIPE would kill) and their lines keep reaching the same log
# stream, as under a supervisor; the next hk-scale adopts them.  A relay
# ends at EOF, once its instance is gone, and hk-scale reaps its own.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

# relays PPID: the pids of the output relays whose parent is PPID
relays() {
	for f in /proc/[0-9]*/stat; do
		sed -n 's/^\([0-9]*\) (hk-scale-relay) [A-Z] \([0-9]*\) .*/\1 \2/p' \
		    "$f" 2>/dev/null
	done | awk -v pp="$1" '$2 == pp { print $1 }' | sort -n
}

# logged PATTERN: a line of the services' logs matches (grep -E)
logged() {
	grep -Eq -- "$1" "$(outlog)"
}

new_store sqlite out
scale_operator "$T/hakopod.toml" "$STORE"
export HAKOPOD_CONFIG="$T/hakopod.toml"
{
	printf 'schema_version = 1\nname = "out"\n'
	fn_service web '[services.web.environment]
SCALE_TERM_DELAY = "0.1"'
	cat <<'APP'

[services.tick]
command = ["sh", "-c", 'while :; do echo "tick $$"; sleep 0.1; done']
readiness = "socket"
APP
} >"$T/app.toml"
run hk apply "$T/app.toml"
is "$rc" 0 "the application is applied"

daemon scale hk-scale -g 2
ok $? "hk-scale starts"
subscribe "$T/sub.out"
for s in web tick; do
	wait_for 10 seen "$T/sub.out" "\"op\":\"ready\".*\"service\":\"out/$s\""
	ok $? "out/$s is ready"
done
web=$(status_of out/web pid)
tick=$(status_of out/tick pid)
ep=$(status_of out/web endpoint)
first=$(relays "$scale_pid")
is "$(echo $first | wc -w)" 2 "each ready instance has an output relay, a child of hk-scale"
for r in $first; do
	is "$(pgrp "$r")" "$r $r" "relay $r: in a session of its own, not the instance's group"
done
like "$(get "http://$ep/before")" "^hello pid=$web" "the function answers"
wait_for 5 logged "^hk-scale: info: service=out/web: request \"GET /before HTTP/1\.1\" 200"
ok $? "its line reaches hk-scale's log through the relay"
wait_for 5 logged "^hk-scale: info: service=out/tick: tick $tick$"
ok $? "and so do the shell loop's"

# SIGKILL: the relays keep the pipes open, and the log stream flowing.
kill -KILL "$scale_pid"
wait_for 5 dead "$scale_pid"
kill "$sub_pid" 2>/dev/null
like "$(get "http://$ep/alone")" "^hello pid=$web" \
    "with hk-scale killed, the function still answers"
wait_for 5 logged 'service=out/web: request "GET /alone HTTP/1\.1" 200'
ok $? "and its line still reaches the log"
n=$(count "$(outlog)" "service=out/tick: tick $tick$")
wait_for 5 sh -c "[ \$(grep -c 'tick $tick\$' '$T/run/logs/out/tick/current') -gt $((n + 2)) ]"
ok $? "the shell loop goes on printing (no SIGPIPE)"
for r in $first; do
	alive "$r"
	ok $? "relay $r outlives hk-scale"
done

# A new hk-scale on the same log stream adopts both.
daemon scale hk-scale -g 2
ok $? "a new hk-scale starts"
is "$(status_of out/web pid) $(status_of out/tick pid)" "$web $tick" \
    "it adopts both instances, same pids"
is "$(relays "$scale_pid")" "" "and starts no relay for them"
like "$(get "http://$ep/after")" "^hello pid=$web" "the function answers"
wait_for 5 logged 'service=out/web: request "GET /after HTTP/1\.1" 200'
ok $? "and its lines still reach the log after the restart"
grep -Eq 'unable to adopt|stopping pid' "$T/scale.log"
ok "$((! $?))" "the relays are not taken for instances"

# A stop: the instance's pipe ends, so does its relay.
run hk stop out/tick
wait_for 5 dead "$tick"
ok $? "hk stop stops the adopted shell loop"
run hk start out/tick
wait_for 10 state_is out/tick running
tick=$(status_of out/tick pid)
r=$(relays "$scale_pid")
like "$r" '^[0-9]+$' "hk start: the new instance has a relay, a child of hk-scale"
wait_for 5 logged "^hk-scale: info: service=out/tick: tick $tick$"
ok $? "which relays its lines"
run hk stop out/tick
wait_for 5 test ! -e "/proc/$r"
ok $? "hk stop: the relay ends at EOF and hk-scale reaps it"

# SIGTERM: the adopted function's last words still reach the log, and
# every relay is gone with its instance.
kill -TERM "$scale_pid"
wait_for 10 dead "$scale_pid"
wait "$scale_pid"
is "$?" 0 "SIGTERM: hk-scale exits 0"
wait_for 5 logged '^hk-scale: info: service=out/web: stopping$'
ok $? "the adopted function's line at its stop is in the log"
for p in $web $first; do
	wait_for 5 dead "$p"
	ok $? "pid $p is gone"
done
done_testing
