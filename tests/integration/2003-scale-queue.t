#!/bin/sh
# hk-scale's start queue: with max_concurrent_starts = 2, three services
# woken at once start two at a time; the third waits, in arrival order,
# until one of the first two is ready.  The functions' starts are held
# until the test releases them (fn/held), so that the order shows however
# busy the machine.  Then one service's operations in a row: a wake while
# it drains (its stop held by the test) is served by a fresh start after
# the stop; and a subscriber that does not read is dropped.  Last, a start
# that waits in the queue past its own deadline fails without being
# started.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

new_store sqlite queue
scale_operator "$T/hakopod.toml" "$STORE" "max_concurrent_starts = 2"
export HAKOPOD_CONFIG="$T/hakopod.toml"
# q/a, q/b and q/c: once $T/q.hold exists, a start waits for $T/q.go
# (fn/held); once $T/drain.hold exists, a stop waits for $T/drain.go
# (SCALE_TERM_GATE), within the grace period of 60 s.
{
	printf 'schema_version = 1\nname = "q"\n'
	for s in a b c; do
		cat <<APP

[services.$s]
command = ["sh", "$FN/held", "$T/q", "python3", "$FN/scale-http.py"]
public = true
[services.$s.environment]
SCALE_TERM_GATE = "$T/drain"
[services.$s.serverless]
APP
	done
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
touch "$T/q.hold"
daemon scale hk-scale -g 60
ok $? "hk-scale starts"
subscribe "$T/sub.out"

# states_are TEXT: one status says, for each service, "app/svc state pid"
# ("-" for no pid); the last read is in $states (for wait_t).
states_are() {
	states=$(python3 "$FN/scale-client.py" --states "$SOCK" | grep '^q/[abc] ')
	[ "$states" = "$1" ]
}
two_and_one="q/a starting pid
q/b starting pid
q/c starting -"

# started_after SERVICE FROM: the line number, in the log from line FROM,
# of the service's start and of the first ready of another service
order() {
	tail -n +"$2" "$T/scale.log" | awk -v s="service=$1:" '
	    index($0, s " started pid") && !st { st = NR }
	    /: ready at / && !index($0, s) && !rd { rd = NR }
	    END { print (st > rd && rd > 0) ? "after" : "before" }'
}

# The readiness gate starts all three: two at once, then the third.
wait_t 5 states_are "$two_and_one"
r=$?
ok $r "the readiness gate starts two at once (held); the third waits for a slot"
if [ $r -ne 0 ]; then
	diag "status says:"
	printf '%s\n' "$states" | sed 's/^/#   /'
fi
touch "$T/q.go"
wait_for 10 more_than 2 "$T/sub.out" '"op":"ready"'
ok $? "the readiness gate starts the three services"
is "$(order q/c 1)" after "the third starts only once another is ready"

for s in a b c; do
	ctl "{\"op\":\"sleep\",\"service\":\"q/$s\"}" >/dev/null
done
for s in a b c; do
	wait_t 5 state_is q/$s sleeping
done
rm "$T/q.go"	# the starts are held again
mark=$(($(wc -l <"$T/scale.log") + 1))
python3 "$FN/scale-client.py" --batch "$SOCK" \
    '{"op":"wake","service":"q/a"}' '{"op":"wake","service":"q/b"}' \
    '{"op":"wake","service":"q/c"}' >"$T/states"
is "$(cat "$T/states")" "$two_and_one" \
    "three wakes: the first two start (held), the third waits for a slot"
touch "$T/q.go"
wait_for 10 more_than 5 "$T/sub.out" '"op":"ready"'
ok $? "all three become ready"
# Which of a and b is ready first is up to the machine; that the third
# is not ready before both of them is the queue's doing.
first=$(grep '"op":"ready"' "$T/sub.out" | tail -3 | head -1 |
    sed 's/.*"service":"\([^"]*\)".*/\1/')
ok "$([ "$first" != q/c ]; echo $?)" "the third is not the first ready"
is "$(order q/c "$mark")" after "and started only after one of the first two was ready"

# A wake while draining: the stop ends, then a fresh start.  The stop
# lasts until the test releases it.
touch "$T/drain.hold"
ctl '{"op":"sleep","service":"q/a"}' >"$T/slept" &
sleeper=$!
wait_t 5 state_is q/a draining
ok $? "sleep: the service drains (its function's exit held)"
is "$(ctl '{"op":"wake","service":"q/a"}')" '{"ok":true}' \
    "a wake while draining is accepted"
is "$(status_of q/a state)" draining "and the stop goes on"
[ ! -s "$T/slept" ] && alive "$sleeper"
ok $? "the sleep is not answered while the stop lasts"
touch "$T/drain.go"
wait_for 5 dead "$sleeper"
is "$(cat "$T/slept")" '{"ok":true}' "the sleep is answered once stopped"
wait_for 10 more_than 2 "$T/sub.out" '"op":"ready".*"service":"q/a"'
ok $? "and the wake is served by a fresh start"
is "$(grep '"service":"q/a"' "$T/sub.out" | tail -2 | sed 's/.*"op":"\([a-z]*\)".*/\1/' | tr '\n' ' ')" \
    "down ready " "down first, then ready"

# A subscriber that does not read is dropped, never waited for.
python3 "$FN/scale-client.py" --hold "$SOCK" 600 >"$T/hold.out" &	# killed below
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
