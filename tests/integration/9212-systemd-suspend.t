#!/bin/sh
# idle_action = "suspend" with the systemd backend, under systemd as PID 1
# in a container of its own on the unified cgroup hierarchy
# (scripts/systemd-ct start cgroup2: FreezeUnit needs the cgroup v2
# freezer, which these machines' hybrid hosts do not give systemd), on
# SQLite.  The four daemons run from the units of etc/systemd, renamed
# for this test, as root; the gateway is reached on the host's 127.0.0.1.
#
# A service is woken (200) and, idle, frozen: its unit's FreezerState is
# "frozen" (its cgroup's cgroup.events says so), hk-scale says
# "suspended", HTTPIdleSleep has action "suspend".  A request thaws it:
# 200 from the same unit and process, no new start, HTTPIdleWake with
# resumed true.  hk-scale killed with SIGKILL while it is frozen: the
# next adopts it still frozen, and the next request thaws it; so does
# one after systemd re-executed (hk-scale connected again).  hk stop of
# a frozen service ends its unit at once (StopUnit thaws it before its
# SIGTERM), not after the 10 s of TimeoutStopSec.  suspend_max_seconds
# over: stopped for real, HTTPSuspendExpired.  A clean stop of hk-scale
# while a unit is frozen leaves no unit.
# time_unit_ms = 20: idle_seconds = 50 lasts 1 s, suspend_max_seconds =
# 100 2 s.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman curl; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
UNITS="events scale activate idle"
sd_container own cgroup2 || done_testing
trap '"$HK_TOP/scripts/systemd-ct" stop "$CT"; _cleanup' EXIT

N=hkz$$
APP=sz$$
FN=$CT_TOP/tests/integration/fn
PORT=$(free_port)
journal() { ct journalctl -u "$1" -o cat --no-pager 2>/dev/null; }
logged() { journal "$N-scale" | grep -Eq -- "$1"; }
nlogged() { journal "$N-scale" | grep -Ec -- "$1"; }
hkc() { ct env "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" "PATH=$CT_BUILD/bin:/usr/bin:/bin" "$@"; }
prop() { ct systemctl show -p "$2" --value "$1"; }
units() {
	ct systemctl list-units --plain --no-legend \
	    --state=active,activating,deactivating "$1" | awk '{ print $1 }'
}
no_unit() { [ -z "$(ct systemctl list-units --all --plain --no-legend "$1")" ]; }
state() {
	hkc hk ps --json | python3 -c 'import json, sys
for s in json.load(sys.stdin):
    if s["service"] == sys.argv[1]:
        print(s["state"])' "$1"
}
state_is() { [ "$(state "$1")" = "$2" ]; }
frozen() { [ "$(prop "$1" FreezerState)" = frozen ]; }
# cg_frozen UNIT: the kernel's word, cgroup.events of its cgroup
cg_frozen() {
	ct grep -qx 'frozen 1' \
	    "/sys/fs/cgroup/system.slice/$1/cgroup.events"
}
suspended() { state_is "$1" suspended && frozen "$2"; }
code() {	# code SERVICE PATH: the status, body in $T/body
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: $1.$APP.localhost" "http://127.0.0.1:$PORT$2"
}
# event KIND SERVICE EXPR: of its last such event, python on e
event() {
	hkc hk-events list --json -n 0 --kind "$1" --service "$APP/$2" |
	    python3 -c 'import json, sys
l = json.load(sys.stdin)
e = l[-1] if l else {"detail": {}}
print(eval(sys.argv[1]))' "$3"
}
nevents() {
	hkc hk-events list --json -n 0 --kind "$1" --service "$APP/$2" |
	    python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}
events_reach() { [ "$(nevents "$2" "$3")" -ge "$1" ]; }
connected_more() { [ "$(nlogged 'systemd: connected')" -gt "$1" ]; }
scale_pid() { prop "$N-scale" MainPID; }
restarted() {
	_p=$(scale_pid)
	[ "$_p" != "$1" ] && [ "$_p" != 0 ] &&
	    [ "$(ct systemctl is-active "$N-scale")" = active ]
}

ct systemctl start systemd-journald
ct mkdir -p "/etc/$N"
ct sh -c "cat >/etc/$N/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "sqlite:///var/lib/$N/state.db"
runtime_dir = "/run/$N"
time_unit_ms = 20
CONF
echo "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" | ct sh -c "cat >/etc/$N/api.env"
sd_units "$N" root
ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.fz]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
public = true
[services.fz.environment]
SCALE_TAG = "fz"
[services.fz.serverless]
idle_seconds = 50
idle_action = "suspend"
suspend_max_seconds = 3000

[services.ex]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
public = true
[services.ex.serverless]
idle_seconds = 50
idle_action = "suspend"
suspend_max_seconds = 100
APP
run hkc hk validate "/etc/$N/app.toml"
is "$rc" 0 "hk validate accepts idle_action = \"suspend\" with backend \"systemd\""
ct systemctl daemon-reload
# shellcheck disable=SC2046
run ct systemctl start $(for u in $UNITS; do echo "$N-$u"; done)
is "$rc" 0 "the four units start" || {
	diag "$err"
	for u in $UNITS; do
		ct journalctl -u "$N-$u" -n 12 --no-pager 2>&1 | sed 's/^/#   /'
	done
}
run hkc hk apply "/etc/$N/app.toml"
is "$rc" 0 "applied"

# Woken, then frozen when idle.
is "$(code fz /one)" 200 "a request to fn/fz is answered"
pid=$(sed -n 's/^fz pid=//p' "$T/body")
unit=$(units "hk-svc-$APP.fz-*")
is "$(prop "$unit" MainPID)" "$pid" "by its unit $unit, pid $pid"
wait_t 10 suspended fz "$unit"
ok $? "idle: hk-scale says suspended, its unit's FreezerState is frozen"
cg_frozen "$unit"
ok $? "its cgroup is frozen (cgroup.events)"
is "$(prop "$unit" ActiveState) $(prop "$unit" MainPID)" "active $pid" \
    "the unit stays active, its process there"
wait_t 5 events_reach 1 HTTPIdleSleep fz
is "$(event HTTPIdleSleep fz 'e["detail"].get("action")')" suspend \
    "HTTPIdleSleep says action suspend"
logged "service=$APP/fz: freezing unit $unit"
ok $? "hk-scale logs the freeze"

# A request thaws it: the same unit and process, no start.
starts=$(nlogged "service=$APP/fz: started unit")
is "$(code fz /two)" 200 "a request to the frozen service is answered"
is "$(cat "$T/body")" "fz pid=$pid" "by the same process"
is "$(units "hk-svc-$APP.fz-*")" "$unit" "of the same unit"
is "$(nlogged "service=$APP/fz: started unit")" "$starts" "with no new start"
wait_t 5 events_reach 1 HTTPIdleWake fz
is "$(event HTTPIdleWake fz 'e["detail"].get("resumed")')" True \
    "HTTPIdleWake says resumed"
diag "thawed: readiness_ms $(event HTTPIdleWake fz 'e["detail"].get("readiness_ms")')"
logged "service=$APP/fz: thawed unit $unit after [0-9]+ ms frozen"
ok $? "hk-scale logs the thaw"

# hk-scale killed while it is frozen: adopted frozen, thawed by a request.
wait_t 10 suspended fz "$unit"
ok $? "idle again: frozen again"
old=$(scale_pid)
sd_kill_prog "$N-scale"
wait_t 10 restarted "$old"
ok $? "hk-scale killed with SIGKILL; systemd restarts it"
wait_t 5 logged "service=$APP/fz: adopted unit $unit, frozen, at "
ok $? "the new hk-scale adopts the unit, frozen"
is "$(state fz) $(prop "$unit" FreezerState)" "suspended frozen" \
    "suspended still, and still frozen"
is "$(code fz /three)" 200 "the next request is answered"
is "$(cat "$T/body") $(units "hk-svc-$APP.fz-*")" "fz pid=$pid $unit" \
    "by the same process and unit: thawed"

# systemd re-executed while it is frozen (every D-Bus client dropped):
# hk-scale connects again, the unit is frozen still, a request thaws it.
wait_t 10 suspended fz "$unit"
ok $? "idle: frozen again"
n=$(nlogged 'systemd: connected')
ct systemctl daemon-reexec
wait_t 10 connected_more "$n"
ok $? "systemd re-executed: hk-scale connects again"
is "$(state fz) $(prop "$unit" FreezerState)" "suspended frozen" \
    "suspended still, and still frozen"
is "$(code fz /four)" 200 "the next request is answered"
is "$(cat "$T/body") $(units "hk-svc-$APP.fz-*")" "fz pid=$pid $unit" \
    "by the same process and unit: thawed"

# hk stop of a frozen service: its unit ends at once.
wait_t 10 suspended fz "$unit"
ok $? "idle: frozen again"
t0=$(date +%s%3N)
run hkc hk stop "$APP/fz"
is "$rc" 0 "hk stop of the frozen service"
wait_t 10 no_unit "$unit"
ok $? "its unit ends"
ms=$(($(date +%s%3N) - t0))
ok "$([ "$ms" -lt 5000 ]; echo $?)" \
    "promptly ($ms ms; TimeoutStopSec is 10 s)"
diag "hk stop of a frozen unit: $ms ms"
like "$(journal "$unit")" "Stopped $unit" "stopped by systemd's stop job"
is "$(state fz)" stopped "hk ps says stopped"

# suspend_max_seconds over (100 s, 2 s here): stopped for real.  That it
# was frozen meanwhile is read after the fact, from hk-scale's log and
# the event, not in a window of 2 s that a busy machine may miss.
is "$(code ex /)" 200 "fn/ex is answered"
exunit=$(units "hk-svc-$APP.ex-*")
wait_t 10 logged "service=$APP/ex: suspended for 100 s: stopping"
ok $? "idle: fn/ex frozen, then stopped after suspend_max_seconds"
wait_t 10 no_unit "$exunit"
ok $? "after suspend_max_seconds its unit is stopped"
wait_t 5 state_is ex sleeping
ok $? "and it sleeps"
wait_t 5 events_reach 1 HTTPSuspendExpired ex
ok $? "HTTPSuspendExpired recorded"
sms=$(event HTTPSuspendExpired ex 'e["detail"].get("suspended_ms")')
ok "$([ "${sms:-0}" -ge 2000 ] 2>/dev/null; echo $?)" \
    "after it was frozen for suspend_max_seconds: $sms ms, 2000 or more"

# A clean stop while a unit is frozen leaves no unit.
run hkc hk start "$APP/fz"
is "$rc" 0 "hk start of fn/fz"
is "$(code fz /five)" 200 "it is answered"
unit=$(units "hk-svc-$APP.fz-*")
wait_t 10 suspended fz "$unit"
ok $? "idle: frozen"
for u in idle activate scale events; do
	ct systemctl stop "$N-$u"
done
is "$(prop "$N-scale" Result)" success "hk-scale stops cleanly"
is "$(journal "$N-scale" | grep -Ec 'Sanitizer|runtime error')" 0 \
    "hk-scale logged no sanitizer report"
is "$(units "hk-svc-$APP.*")" "" "and leaves no unit behind"
done_testing
