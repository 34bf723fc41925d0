#!/bin/sh
# The http:/path probe reads the whole answer before it closes, so that a
# Python http.server behind it logs no reset: the example function cold
# started three times, a body sent after a pause, a server that keeps the
# connection open after its Content-Length.  The reading is bounded: an
# answer over 64 KiB, or one whose body never ends, is cut (with a
# warning) and its 2xx status still makes the instance ready.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

# quiet SERVICE: nothing in its output says that a connection was reset
quiet() {
	! grep -E "service=$1: .*(Traceback|ConnectionResetError|BrokenPipeError|Exception occurred)" \
	    "$(outlog)"
}

# served SERVICE PATH: GET PATH at the service, then wait for its line in
# the log; the single-threaded server has then finished with the probe.
served() {
	like "$(get "http://$(status_of "$1" endpoint)$2")" '.' "$1: GET $2 answers"
	wait_for 5 out_grep "service=$1: .*GET $2 "
	ok $? "$1: GET $2 is in its log"
}

new_store sqlite probe
scale_operator "$T/hakopod.toml" "$STORE" "max_concurrent_starts = 8"
export HAKOPOD_CONFIG="$T/hakopod.toml"
{
	printf 'schema_version = 1\nname = "p"\n'
	cat <<APP

[services.ex]
command = ["python3", "$HK_TOP/etc/examples/functions/hello.py"]
public = true
readiness = "http:/healthz"
[services.ex.serverless]
APP
	fn_service slow 'readiness = "http:/healthz"
[services.slow.environment]
SCALE_BODY_DELAY = "0.3"
[services.slow.serverless]'
	fn_service keep 'readiness = "http:/healthz"
[services.keep.environment]
SCALE_KEEP_OPEN = "1"
[services.keep.serverless]'
	fn_service big 'readiness = "http:/healthz"
[services.big.environment]
SCALE_BODY_BYTES = "200000"
[services.big.serverless]'
	fn_service endless 'readiness = "http:/healthz"
[services.endless.environment]
SCALE_BODY_ENDLESS = "1"
[services.endless.serverless]'
} >"$T/app.toml"
run hk apply "$T/app.toml"
is "$rc" 0 "the application is applied"

daemon scale hk-scale -g 2
ok $? "hk-scale starts"
subscribe "$T/sub.out"

# Every new service is started once, to pass its readiness gate.
for svc in ex slow keep big endless; do
	wait_for 10 seen "$T/sub.out" "\"op\":\"ready\".*\"service\":\"p/$svc\""
	ok $? "p/$svc is ready"
done

# The example function: two more cold starts, three in all.
served p/ex /after1
for i in 2 3; do
	ctl '{"op":"sleep","service":"p/ex"}' >/dev/null
	wait_for 10 state_is p/ex sleeping
	ok $? "p/ex sleeps"
	ctl '{"op":"wake","service":"p/ex"}' >/dev/null
	wait_for 10 state_is p/ex running
	ok $? "p/ex is woken: cold start $i"
	served p/ex /after$i
done
is "$(count "$(outlog)" 'service=p/ex: hello.py: info: GET /healthz 200')" 3 \
    "p/ex: each cold start was probed on /healthz"
quiet p/ex
ok $? "p/ex: no reset in its output over three cold starts"

served p/slow /after
quiet p/slow
ok $? "p/slow: a body 0.3 s after the head is read, no reset"

served p/keep /after
quiet p/keep
ok $? "p/keep: the probe closes after Content-Length, no reset"
grep -q 'service=p/keep: probe' "$T/scale.log"
ok "$((! $?))" "p/keep: without waiting for the close (no warning)"

wait_for 5 grep -q 'hk-scale: warning: service=p/big: probe /healthz: status 200, answer cut after [0-9]* bytes: longer than the probe reads' \
    "$T/scale.log"
ok $? "p/big: an answer over 64 KiB is cut, with a warning"
is "$(status_of p/big state)" running "p/big: and its 200 makes it ready"

wait_for 5 grep -q 'hk-scale: warning: service=p/endless: probe /healthz: status 200, answer cut after [0-9]* bytes: its rest did not come in time' \
    "$T/scale.log"
ok $? "p/endless: a body that never ends is cut at the deadline, with a warning"
is "$(status_of p/endless state)" running "p/endless: and its 200 makes it ready"

stop_pid "$scale_pid"
done_testing
