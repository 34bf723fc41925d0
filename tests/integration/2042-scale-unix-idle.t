#!/bin/sh
# listen = "unix" under hk-idle: its idle check (idle_check = "http:/PATH")
# reaches the function over the Unix socket, as the gateway does.  The
# function (scale-http.py) answers /health 503 ("busy") three times, then
# 200: hk-idle says it is busy, keeps it awake, then puts it to sleep once
# it says idle; the function logged each of those checks.  The next
# request wakes it on a new socket.  time_unit_ms = 10: idle_seconds = 30
# lasts 300 ms.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

idle_setup "sqlite://$T/state.db"
idle_apply "
[services.chk]
command = [\"python3\", \"$IFN/scale-http.py\"]
public = true
listen = \"unix\"
[services.chk.environment]
SCALE_HEALTH_AFTER = \"3\"
[services.chk.serverless]
idle_seconds = 30
idle_check = \"http:/health\""
ok $? "a unix service with an idle check is applied"
start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are up"

is "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 \
    -H 'Host: chk.fn.localhost' "$URL/")" 200 "a request wakes it"
ep=$(ctl scale.sock '{"op":"status"}' services.fn/chk.endpoint)
pid=$(ctl scale.sock '{"op":"status"}' services.fn/chk.pid)
like "$ep" "^unix:$RUN/listen/" "on a socket of runtime_dir/listen"
wait_t 30 grep -q 'service=fn/chk: idle check /health: busy (status 503)' \
    "$T/idle.log"
ok $? "hk-idle's check reached it over the socket: busy (503)"
wait_t 30 asleep fn/chk "$pid"
ok $? "once it says idle, it is put to sleep"
grep -q 'service=fn/chk: idle check /health: idle after' "$T/idle.log"
ok $? "hk-idle says it went idle after a busy while"
is "$(hk logs fn/chk 2>/dev/null | grep -c '"GET /health HTTP/1.0" 503')" 3 \
    "the function answered the three busy checks"
ok "$([ ! -e "${ep#unix:}" ]; echo $?)" "its socket is gone"
is "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 \
    -H 'Host: chk.fn.localhost' "$URL/")" 200 "the next request wakes it"
ep2=$(ctl scale.sock '{"op":"status"}' services.fn/chk.endpoint)
ok "$([ "$ep2" != "$ep" ] && [ -S "${ep2#unix:}" ]; echo $?)" \
    "on a new socket"
done_testing
