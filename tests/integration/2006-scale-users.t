#!/bin/sh
# Functions do not run as root: hk-scale (as root here) starts each
# instance as nobody by default, as its service's user, or as the
# operator's service_user, with no_new_privs and no capabilities, and with
# HOME, USER and LOGNAME of that user; the notify socket (READY=1 taken
# from that user only) and the handed over listener work for it.  hk
# validate and hk apply refuse an unknown user and root (unless
# allow_root_services); hk-scale checks again at each start, and its
# reason reaches the event and the gateway's 503.  An instance stays
# stoppable and adoptable across a restart of hk-scale.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

FN=$HK_TOP/tests/integration/fn
NOBODY=$(id -u nobody)
NOGROUP=$(getent group nogroup | cut -d: -f3)
DAEMON=$(id -u daemon)
DAEMON_GID=$(id -g daemon)
DAEMON_HOME=$(getent passwd daemon | cut -d: -f6)
NOBODY_HOME=$(getent passwd nobody | cut -d: -f6)
ROOT_MSG='"root" is uid 0: allowed only with server.allow_root_services = true'

# pst PID NAME: a field of /proc/PID/status, its tabs made spaces
pst() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' ' |
	    sed 's/ *$//'
}
# envof PID NAME: a variable of the process's environment
envof() {
	tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"
}
# ids PID: "uids / gids / groups / NoNewPrivs / CapPrm CapEff CapInh CapAmb"
ids() {
	echo "$(pst "$1" Uid) / $(pst "$1" Gid) / $(pst "$1" Groups) /" \
	    "$(pst "$1" NoNewPrivs) / $(pst "$1" CapPrm) $(pst "$1" CapEff)" \
	    "$(pst "$1" CapInh) $(pst "$1" CapAmb)"
}
four() { echo "$1 $1 $1 $1"; }
NOCAPS="0000000000000000 0000000000000000 0000000000000000 0000000000000000"
pid_of() { scale_ctl '{"op":"status"}' "services.$1.pid"; }
# svc NAME [lines]: a serverless service running scale-http.py
svc() {
	cat <<SVC

[services.$1]
command = ["python3", "$FN/scale-http.py"]
public = true
${2:-}
[services.$1.serverless]
SVC
}

gw_config "max_concurrent_starts = 8"
cp "$T/hakopod.toml" "$T/root-ok.toml"
echo "allow_root_services = true" >>"$T/root-ok.toml"

# hk validate and hk apply: unknown users and root are refused at once.
{ printf 'schema_version = 1\nname = "fn"\n'; svc r 'user = "root"'; } \
    >"$T/root.toml"
run hk validate "$T/root.toml"
is "$rc $err" "65 $T/root.toml:7: services.r.user: $ROOT_MSG" \
    "hk validate refuses user = \"root\" (65, file:line: key: reason)"
run hk apply "$T/root.toml"
is "$rc $err" "65 $T/root.toml:7: services.r.user: $ROOT_MSG" \
    "so does hk apply"
run hk -f "$T/root-ok.toml" validate "$T/root.toml"
is "$rc" 0 "with allow_root_services = true, root is accepted"
{ printf 'schema_version = 1\nname = "fn"\n'; svc r 'user = "hk-no-such-user"'; } \
    >"$T/nouser.toml"
run hk validate "$T/nouser.toml"
is "$rc $err" "65 $T/nouser.toml:7: services.r.user: no such user \"hk-no-such-user\"" \
    "hk validate refuses a user this host lacks"
{ printf 'schema_version = 1\nname = "fn"\n'; svc r 'user = "nobody:hk-no-such-group"'; } \
    >"$T/nogroup.toml"
run hk validate "$T/nogroup.toml"
is "$rc $err" "65 $T/nogroup.toml:7: services.r.user: no such group \"hk-no-such-group\"" \
    "and a group it lacks"
cp "$T/hakopod.toml" "$T/baduser.toml"
echo 'service_user = "hk-no-such-user"' >>"$T/baduser.toml"
run hk-scale -n -f "$T/baduser.toml"
is "$rc $err" "78 hk-scale: error: $T/baduser.toml:6: server.service_user: no such user \"hk-no-such-user\"" \
    "hk-scale -n refuses an unknown service_user with 78"
run env HAKOPOD_SERVICE_USER=daemon hk-scale -n -v
like "$err" '^service_user = "daemon" \(environment\)$' \
    "HAKOPOD_SERVICE_USER sets service_user (-n -v)"

# The application, applied where root is allowed; "gone" then names a
# user that no longer exists, as a store written elsewhere may.
mkdir -m 700 "$T/private"
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc def 'readiness = "notify"'
	svc sock 'readiness = "socket"
user = "daemon"'
	svc grp 'user = "daemon:nogroup"'
	svc root 'user = "root"'
	svc gone 'user = "daemon"'
	svc priv "directory = \"$T/private\""
	svc nn 'readiness = "notify"
environment = { SCALE_NOTIFY = "never" }'
} >"$T/app.toml"
hk -f "$T/root-ok.toml" apply "$T/app.toml" >/dev/null
ok $? "the app is applied where root services are allowed"
python3 - "$T/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("""UPDATE services SET spec = replace(spec, '"user":"daemon"',
    '"user":"hk-gone-user"') WHERE name = 'gone'""")
db.commit()
PY

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up (root, without allow_root_services)"
for s in def sock grp; do
	wait_t 20 state_is fn/$s running
	ok $? "fn/$s passed its readiness gate"
done

p=$(pid_of fn/def)
is "$(ids "$p")" "$(four "$NOBODY") / $(four "$NOGROUP") / $NOGROUP / 1 / $NOCAPS" \
    "a service without user runs as nobody, no_new_privs, no capabilities"
is "$(envof "$p" HOME) $(envof "$p" USER) $(envof "$p" LOGNAME)" \
    "$NOBODY_HOME nobody nobody" "with nobody's HOME, USER and LOGNAME"
grep -q "service=fn/def: started pid $p revision 1 at 127.0.0.1:[0-9]* as nobody" \
    "$T/scale.log"
ok $? "the log says whom it started as"
p=$(pid_of fn/sock)
is "$(ids "$p")" "$(four "$DAEMON") / $(four "$DAEMON_GID") / $DAEMON_GID / 1 / $NOCAPS" \
    "user = \"daemon\" runs as daemon, with daemon's groups"
is "$(envof "$p" HOME) $(envof "$p" USER) $(envof "$p" LOGNAME)" \
    "$DAEMON_HOME daemon daemon" "with daemon's HOME, USER and LOGNAME"
is "$(gw_code sock.fn.localhost /)" 200 \
    "the listener handed over (readiness = \"socket\") serves as daemon"
p=$(pid_of fn/grp)
is "$(ids "$p")" "$(four "$DAEMON") / $(four "$NOGROUP") / $NOGROUP / 1 / $NOCAPS" \
    "user = \"daemon:nogroup\": that group alone"

# The notify socket is open to every user: READY=1 counts only from the
# instance's user (fn/nn never sends it itself).
notify_send() {	# notify_send USER: READY=1 to the one notify socket left
	runuser -u "$1" -- python3 -c 'import glob, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b"READY=1", glob.glob(sys.argv[1] + "/scale-notify.*")[0])' "$T/run"
}
scale_state() { scale_ctl '{"op":"status"}' "services.$1.state"; }
wait_t 10 sh -c "ls '$T'/run/scale-notify.* >/dev/null 2>&1"
notify_send root
wait_t 5 grep -q 'service=fn/nn: notify: ignored a datagram of uid 0$' \
    "$T/scale.log"
ok $? "READY=1 from root is ignored"
is "$(scale_state fn/nn)" starting "fn/nn is still starting"
notify_send nobody
wait_t 5 sh -c "[ \"\$(python3 '$GW_FN/gw-ctl.py' '$T/run/scale.sock' \
    '{\"op\":\"status\"}' services.fn/nn.state)\" = running ]"
ok $? "READY=1 from nobody, its user, makes it ready"

# Refused at start: the reason reaches the event and the gateway's 503.
start_failed() {	# start_failed SERVICE REASON
	hk-events list --json -n 0 --kind StartFailed --service "$1" |
	    python3 -c 'import json, sys
sys.exit(0 if any(e["detail"]["reason"] == sys.argv[1]
                  for e in json.load(sys.stdin)) else 1)' "$2"
}
for c in "root|user: $ROOT_MSG" \
    'gone|user: no such user "hk-gone-user"' \
    "priv|exit status 127: chdir $T/private: Permission denied"; do
	s=${c%%|*}
	why=${c#*|}
	wait_t 10 start_failed fn/$s "$why"
	ok $? "fn/$s: StartFailed with \"$why\""
	is "$(gw_code $s.fn.localhost /)" 503 "fn/$s: a request is answered 503"
	grep -qF -- "service failed to start: $why" "$T/body"
	ok $? "fn/$s: with the reason"
done

# The operator's service_user and allow_root_services apply at SIGHUP.
echo 'service_user = "daemon"' >>"$T/hakopod.toml"
echo 'allow_root_services = true' >>"$T/hakopod.toml"
kill -HUP "$scale_pid"
wait_t 5 grep -q 'hk-scale: info: reloading' "$T/scale.log"
put_to_sleep fn/def
ok $? "fn/def sleeps"
is "$(gw_code def.fn.localhost /)" 200 "a request wakes it again"
p=$(pid_of fn/def)
is "$(pst "$p" Uid)" "$(four "$DAEMON")" "now as the operator's service_user"
wait_t 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: root.fn.localhost' '$GW_URL/')\" = 200 ]"
ok $? "with allow_root_services, user = \"root\" starts"
p=$(pid_of fn/root)
is "$(pst "$p" Uid) / $(pst "$p" NoNewPrivs)" "$(four 0) / 1" \
    "as root, still with no_new_privs"

# Adoption: a killed hk-scale's instance is taken over, then stopped.
p=$(pid_of fn/sock)
kill -KILL "$scale_pid"
wait_for 5 sh -c "! kill -0 $scale_pid"
daemon scale2 hk-scale -v -g 2
ok $? "a new hk-scale is ready"
grep -q "service=fn/sock: adopted pid $p" "$T/scale2.log"
ok $? "it adopts the instance running as daemon"
is "$(scale_ctl '{"op":"sleep","service":"fn/sock"}')" '{"ok":true}' \
    "and puts it to sleep"
gone() { ! alive "$1"; }
wait_for 5 gone "$p"
ok $? "the process is gone"
stop_pid "$scale2_pid"
stop_pid "$gw_pid"
stop_pid "$events_pid"
done_testing
