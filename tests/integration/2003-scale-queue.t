#!/bin/sh
# hk-scale's start queue: with max_concurrent_starts = 2, three services
# woken at once start two at a time; the third waits, in arrival order,
# until one of the first two is ready.  The functions take a second to
# listen so that the order shows.  Then one service's operations in a row:
# a wake while it drains is served by a fresh start after the stop; and a
# subscriber that does not read is dropped.  Last, a start that waits in the
# queue past its own deadline fails without being started.
. tests/integration/lib.sh
. tests/integration/fn/scale-lib.sh

new_store sqlite queue
scale_operator "$T/hakopod.toml" "$STORE" "max_concurrent_starts = 2"
export HAKOPOD_CONFIG="$T/hakopod.toml"
{
	printf 'schema_version = 1\nname = "q"\n'
	for s in a b c; do
		fn_service $s "[services.$s.environment]
SCALE_DELAY = \"1.5\"
SCALE_TERM_DELAY = \"0.5\"
[services.$s.serverless]"
	done
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
daemon scale hk-scale -g 1
ok $? "hk-scale starts"
subscribe "$T/sub.out"

# started_after SERVICE FROM: the line number, in the log from line FROM,
# of the service's start and of the first ready of another service
order() {
	tail -n +"$2" "$T/scale.log" | awk -v s="service=$1:" '
	    index($0, s " started pid") && !st { st = NR }
	    /: ready at / && !index($0, s) && !rd { rd = NR }
	    END { print (st > rd && rd > 0) ? "after" : "before" }'
}

# The readiness gate starts all three: two at once, then the third.
wait_for 10 more_than 2 "$T/sub.out" '"op":"ready"'
ok $? "the readiness gate starts the three services"
is "$(order q/c 1)" after "the third starts only once another is ready"

for s in a b c; do
	ctl "{\"op\":\"sleep\",\"service\":\"q/$s\"}" >/dev/null
done
for s in a b c; do
	wait_for 5 state_is q/$s sleeping
done
mark=$(($(wc -l <"$T/scale.log") + 1))
python3 "$FN/scale-client.py" --batch "$SOCK" \
    '{"op":"wake","service":"q/a"}' '{"op":"wake","service":"q/b"}' \
    '{"op":"wake","service":"q/c"}' >"$T/states"
is "$(cat "$T/states")" "q/a starting pid
q/b starting pid
q/c starting -" \
    "three wakes: the first two start, the third waits for a slot"
wait_for 10 more_than 5 "$T/sub.out" '"op":"ready"'
ok $? "all three become ready"
# Which of a and b is ready first is up to the machine; that the third
# is not ready before both of them is the queue's doing.
first=$(grep '"op":"ready"' "$T/sub.out" | tail -3 | head -1 |
    sed 's/.*"service":"\([^"]*\)".*/\1/')
ok "$([ "$first" != q/c ]; echo $?)" "the third is not the first ready"
is "$(order q/c "$mark")" after "and started only after one of the first two was ready"

# A wake while draining: the stop ends, then a fresh start.
ctl '{"op":"sleep","service":"q/a"}' >"$T/slept" &
sleeper=$!
wait_for 5 state_is q/a draining
ok $? "sleep: the service drains (the function takes 0.5 s to stop)"
is "$(ctl '{"op":"wake","service":"q/a"}')" '{"ok":true}' \
    "a wake while draining is accepted"
wait_for 5 dead "$sleeper"
is "$(cat "$T/slept")" '{"ok":true}' "the sleep is answered once stopped"
wait_for 10 more_than 2 "$T/sub.out" '"op":"ready".*"service":"q/a"'
ok $? "and the wake is served by a fresh start"
is "$(grep '"service":"q/a"' "$T/sub.out" | tail -2 | sed 's/.*"op":"\([a-z]*\)".*/\1/' | tr '\n' ' ')" \
    "down ready " "down first, then ready"

# A subscriber that does not read is dropped, never waited for.
python3 "$FN/scale-client.py" --hold "$SOCK" 20 >"$T/hold.out" &
holder=$!
_pids="$_pids $holder"
wait_for 5 grep -q subscribed "$T/hold.out"
python3 "$FN/scale-client.py" --flood "$SOCK" 1000 '{"op":"wake","service":"q/b"}'
ok $? "a thousand wakes of a running service are answered"
grep -q 'hk-scale: warning: scale.sock: dropping a subscriber' "$T/scale.log"
ok $? "the subscriber that does not read is dropped"
is "$(status_of q/b state)" running "hk-scale goes on"
kill "$holder"
# The flood may have filled our own subscriber's buffer too, and a full
# subscriber is dropped whoever it is: subscribe afresh for what follows.
subscribe "$T/sub2.out"

# Two starts that never get ready hold both slots for 5 s; the third start
# waits past its own deadline of 5 s and fails where it stands.
for s in a b c; do
	ctl "{\"op\":\"sleep\",\"service\":\"q/$s\"}" >/dev/null
done
{
	cat "$T/app.toml"
	for s in x y z; do
		fn_service $s "readiness = \"notify\"
[services.$s.environment]
SCALE_NOTIFY = \"never\"
[services.$s.serverless]
startup_timeout_seconds = 5"
	done
} >"$T/app2.toml"
hk apply "$T/app2.toml" >/dev/null
for s in x y z; do
	wait_for 10 seen "$T/sub2.out" "\"op\":\"failed\".*\"service\":\"q/$s\""
	ok $? "q/$s: not ready within its deadline: failed"
done
is "$(count "$T/scale.log" 'service=q/[xyz]: started pid')" 2 \
    "two were started; the one that waited past its deadline was not"

stop_pid "$scale_pid"
done_testing
