#!/bin/sh
# hk-scale readiness kinds (tcp, http:/path, socket, notify), what the child
# is given (PORT, HOST, LISTEN_FDS, NOTIFY_SOCKET but never ours), and start
# failures: a command that exits at once, a deadline missed, the failure
# backoff; readiness of hk-scale itself through NOTIFY_SOCKET.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

new_store sqlite ready
scale_operator "$T/hakopod.toml" "$STORE" "max_concurrent_starts = 8"
export HAKOPOD_CONFIG="$T/hakopod.toml"
port=$(free_port)
{
	printf 'schema_version = 1\nname = "fn"\n'
	fn_service http 'readiness = "http:/health"
[services.http.environment]
SCALE_HEALTH_AFTER = "3"
SCALE_TAG = "http"
[services.http.serverless]'
	fn_service sock 'readiness = "socket"
[services.sock.serverless]'
	fn_service note 'readiness = "notify"
[services.note.serverless]'
	cat <<APP

[services.env]
command = ["sh", "-c", "echo NOTIFY_SOCKET=\${NOTIFY_SOCKET:-unset} PORT=\$PORT HOST=\$HOST LISTEN_FDS=\${LISTEN_FDS:-unset}; echo STRAY=\${HK_TEST_STRAY:-unset} TZ=\${TZ:-unset} MINE=\${HK_TEST_MINE:-unset}; exec python3 $FN/scale-http.py"]
port = $port
public = true
[services.env.environment]
HK_TEST_MINE = "spec"
[services.env.serverless]
APP
} >"$T/app.toml"
run hk apply "$T/app.toml"
is "$rc" 0 "the application is applied"

# Two more, applied while hk-scale runs (hk apply sends reload).
{
	cat "$T/app.toml"
	fn_service slow 'readiness = "notify"
[services.slow.environment]
SCALE_NOTIFY = "never"
[services.slow.serverless]
startup_timeout_seconds = 5'
	cat <<'APP'

[services.crash]
command = ["sh", "-c", "echo starting; echo 'boom: no config' >&2; exit 1"]
public = true
[services.crash.serverless]
APP
} >"$T/app2.toml"

# hk-scale's own NOTIFY_SOCKET gets READY=1; its children never see it.
events "$T/sd.out"
mv "$T/run/events.sock" "$T/sd.sock"
HK_TEST_STRAY=leak TZ=UTC HK_TEST_MINE=theirs NOTIFY_SOCKET=$T/sd.sock \
    daemon scale hk-scale -g 1
ok $? "hk-scale starts"
wait_for 5 grep -q '^READY=1$' "$T/sd.out"
ok $? "READY=1 is sent to NOTIFY_SOCKET"
subscribe "$T/sub.out"

for svc in http sock note env; do
	wait_for 10 seen "$T/sub.out" "\"op\":\"ready\".*\"service\":\"fn/$svc\""
	ok $? "readiness of fn/$svc"
done
# The output goes through a relay once ready: lines may come a bit later.
wait_for 5 out_grep 'service=fn/http: request "GET /health HTTP/1.0" 200'
ok $? "http:/path: ready on a 2xx answer"
is "$(count "$(outlog)" 'service=fn/http: request "GET /health HTTP/1.0" 503')" 3 \
    "http:/path: 503 answers are retried"
like "$(get "http://$(status_of fn/http endpoint)/")" '^http pid=' \
    "the environment of the spec is given to the child"
wait_for 5 out_grep 'service=fn/sock: listening on the socket from LISTEN_FDS'
ok $? "socket: the child got fd 3 with LISTEN_FDS=1 and LISTEN_PID"
like "$(get "http://$(status_of fn/sock endpoint)/")" '^hello pid=' \
    "socket: the handed-over listener answers"
wait_for 5 out_grep 'service=fn/note: sent READY=1'
ok $? "notify: ready after READY=1"
wait_for 5 out_grep "service=fn/env: NOTIFY_SOCKET=unset PORT=$port HOST=127.0.0.1 LISTEN_FDS=unset"
ok $? "tcp: PORT (the spec's) and HOST are set; our NOTIFY_SOCKET is not"
wait_for 5 out_grep "service=fn/env: STRAY=unset TZ=UTC MINE=spec"
ok $? "a clean environment: hk-scale's TZ is passed on, a stray variable is not, the spec's wins"
is "$(status_of fn/env endpoint)" "127.0.0.1:$port" "the endpoint is on the spec's port"

# first_seen SERVICE OUT: a client, in the background, that asks for the
# status every 20 ms (making OUT.ready after the first answer) until
# SERVICE has a pid or is neither sleeping nor starting, and writes to OUT
# "STATE PID" ("-" without one) and when it saw it (Unix ms).  Started
# before what makes the service start, it sees a state that lasts a
# deadline however busy the machine: no process starts in between.
first_seen() {
	python3 - "$SOCK" "$@" <<'PY' &
import json, os, socket, sys, time
path, svc, out = sys.argv[1:4]
t = time.monotonic()
while time.monotonic() - t < 60:	# from the first answer
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(20)
    s.connect(path)
    s.send(b'{"op":"status"}')
    reply = json.loads(s.recv(65536))
    s.close()
    if not os.path.exists(out + ".ready"):
        open(out + ".ready", "w").close()
        t = time.monotonic()
    for m in reply["services"]:
        if m["service"] == svc and (m["pid"] is not None or
                                    m["state"] not in ("sleeping",
                                                       "starting")):
            with open(out + ".tmp", "w") as f:
                f.write("%s %s\n%d\n" % (m["state"], m["pid"] or "-",
                                          time.time() * 1000))
            os.rename(out + ".tmp", out)
            sys.exit(0)
    time.sleep(0.02)
PY
	_pids="$_pids $!"
}

# Two services added by apply: fn/slow, never ready, whose start lasts its
# startup deadline (5 s from the apply), and fn/crash, a command that exits
# at once.  fn/slow is looked at first, while its deadline runs; the
# checks of fn/crash's backoffs then run while it lasts.
first_seen fn/slow "$T/slow"
wait_for 5 test -e "$T/slow.ready"
t0=$(date +%s%3N)
run hk apply "$T/app2.toml"
like "$out" 'fn/crash	revision 1	created' "two services are added by apply"

# Never ready: starting, with a process, until the deadline, which fails
# the start and kills it.  The deadline is the behaviour: the state is
# seen within it, by a client that was waiting for it.
wait_for 5 test -s "$T/slow"
like "$(sed -n 1p "$T/slow")" '^starting [0-9]+$' \
    "the never-ready service is starting, with its pid (seen within its 5 s deadline)"
[ -s "$T/slow" ] &&
    diag "seen $(($(sed -n 2p "$T/slow") - t0)) ms after the apply began"
pid=$(sed -n 1p "$T/slow" | sed 's/^starting //')

# A command that exits at once.
wait_for 5 seen "$T/sub.out" '"op":"failed".*"service":"fn/crash"'
is "$(grep '"service":"fn/crash"' "$T/sub.out" | head -1)" \
    '{"op":"failed","reason":"exit status 1: boom: no config","retry_after":1,"revision":1,"service":"fn/crash"}' \
    "a command exiting 1 fails with its status and last line"
is "$(status_of fn/crash state)" failed "its state is failed"
is "$(instance fn/crash)" "failed  0" "its row in the store says failed, with no process"
run hk ps
like "$out" '^fn	crash	failed	1	' "hk ps shows it failed"
# wake_in_backoff SERVICE RETRY OUT: a client, in the background, that
# subscribes (then makes OUT.ready) and, the moment a failed of SERVICE
# with retry_after RETRY comes (a backoff begins), sends a wake of it on a
# connection of its own; it writes to OUT the milliseconds from that
# failed to the wake's reply, then the next message about SERVICE.  A
# wake within the backoff, however busy the machine: no process starts
# between the failed and the wake.
wake_in_backoff() {
	python3 - "$SOCK" "$@" <<'PY' &
import json, os, socket, sys, time
path, svc, retry, out = sys.argv[1:5]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(60)
    s.connect(path)
    return s
def about(sub):
    while True:
        m = json.loads(sub.recv(65536))
        if m.get("service") == svc:
            return m
sub = conn()
sub.send(b'{"op":"subscribe"}')
sub.recv(65536)
open(out + ".ready", "w").close()
while True:
    m = about(sub)
    if m.get("op") == "failed" and m.get("retry_after") == int(retry):
        break
t = time.monotonic()
w = conn()
w.send(json.dumps({"op": "wake", "service": svc}).encode())
w.recv(65536)
ms = int((time.monotonic() - t) * 1000)
m = about(sub)
with open(out + ".tmp", "w") as f:
    f.write("%d\n%s\n" % (ms, json.dumps(m, sort_keys=True,
                                          separators=(",", ":"))))
os.rename(out + ".tmp", out)
PY
	_pids="$_pids $!"
}

starts=$(count "$T/scale.log" 'service=fn/crash: started pid')
wake_in_backoff fn/crash 2 "$T/again"
wait_for 5 test -e "$T/again.ready"
woken() {
	ctl '{"op":"wake","service":"fn/crash"}' >/dev/null
	more_than "$starts" "$T/scale.log" 'service=fn/crash: started pid'
}
wait_t 3 woken
ok $? "after the backoff a wake starts it again"
wait_for 5 seen "$T/sub.out" '"retry_after":2,"revision":1,"service":"fn/crash"'
ok $? "and the backoff doubles when it fails again"
# At once, within that backoff of 2 s (the wake sent by a client that was
# waiting for it): failed again, no start.
wait_for 5 test -s "$T/again"
again=$(sed -n 2p "$T/again")
like "$again" '^\{"op":"failed",.*"service":"fn/crash"\}$' \
    "a wake during the 2 s backoff (sent as it begins) gets failed again at once"
is "$(count "$T/scale.log" 'service=fn/crash: started pid')" "$((starts + 1))" \
    "and nothing is started"
like "$again" '"retry_after":[12],' "the repeated failed has retry_after"
[ -s "$T/again" ] &&
    diag "that wake was answered $(sed -n 1p "$T/again") ms into the backoff"

# fn/slow's deadline.
wait_for 8 seen "$T/sub.out" '"op":"failed".*"service":"fn/slow"'
like "$(grep '"service":"fn/slow"' "$T/sub.out")" '"reason":"not ready within 5 s"' \
    "missing startup_timeout_seconds fails the start"
case $pid in
''|*[!0-9]*) false ;;	# not seen starting
*) wait_for 5 dead "$pid" ;;
esac
ok $? "and its process group is killed"

# Services left out of the file are removed: stopped, down (removed).
run hk apply "$T/app.toml"
like "$out" 'fn/crash	removed' "apply removes two services"
wait_for 5 seen "$T/sub.out" '"op":"down","reason":"removed","service":"fn/crash"'
ok $? "down (removed) is broadcast"
is "$(ctl '{"op":"wake","service":"fn/crash"}')" \
    '{"error":"unknown service","ok":false}' "a removed service is unknown"

# SIGHUP: RELOADING=1, then READY=1 again; a broken config is not taken.
kill -HUP "$scale_pid"
wait_for 5 more_than 1 "$T/sd.out" '^READY=1$'
ok $? "SIGHUP: READY=1 again after the reload"
grep -Eq '^RELOADING=1 MONOTONIC_USEC=[0-9]+$' "$T/sd.out"
ok $? "preceded by RELOADING=1 with MONOTONIC_USEC"
cp "$T/hakopod.toml" "$T/good.toml"
echo 'max_concurrent_starts = "many"' >>"$T/hakopod.toml"
kill -HUP "$scale_pid"
wait_for 5 grep -q 'hk-scale: warning: reload: the configuration is kept as it was' \
    "$T/scale.log"
ok $? "SIGHUP with a broken configuration keeps the old one"
is "$(status_of fn/http state)" running "and hk-scale goes on"
cp "$T/good.toml" "$T/hakopod.toml"

stop_pid "$scale_pid"
wait_for 5 grep -q '^STOPPING=1$' "$T/sd.out"
ok $? "STOPPING=1 is sent on SIGTERM"
done_testing
