#!/bin/sh
# The systemd units for real, under systemd as PID 1 in a container
# (scripts/systemd-ct; make check shares one through HK_SYSTEMD_CT, a test
# run alone starts its own): the user hakopod made by make install's own
# recipe, the units of etc/systemd with BINDIR at this build, the operator
# config that make install ships and /etc/hakopod/api.env, started with
# systemctl.  The daemons run as hakopod (hk-scale with exactly its four
# capabilities), an applied Python function runs as nobody with
# no_new_privs, and requests through the gateway on 127.0.0.1 are answered
# 200, by Python and by Node.  The exposure systemd-analyze security gives
# each unit, in the container and offline, is printed.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman systemd-analyze curl; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
UNITS="hk-events hk-scale hk-activate hk-idle hk-jobs"
sd_container || done_testing
ct_done() {
	# shellcheck disable=SC2086
	ct systemctl stop $UNITS >/dev/null 2>&1
	[ -n "$own_ct" ] && "$HK_TOP/scripts/systemd-ct" stop "$own_ct"
}
trap 'ct_done; _cleanup' EXIT
# journal UNIT: its last lines, for the diagnostics of a failure
journal() { ct journalctl -u "$1" -n 12 --no-pager 2>&1 | sed 's/^/#   /'; }
# pst PID NAME: a field of /proc/PID/status in the container
pst() {
	ct sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' ' |
	    sed 's/ *$//'
}
four() { echo "$1 $1 $1 $1"; }
HK="env PATH=$CT_BUILD/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The user, by make install's recipe, twice: it is made once.
mk="env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s --no-print-directory"
run ct $mk -C "$CT_TOP" install-user
like "$out" '^useradd --system --user-group .* hakopod$' \
    "make install creates the user hakopod"
run ct $mk -C "$CT_TOP" install-user
is "$rc $out" "0 install: user hakopod exists" "and only once"
HKUID=$(ct id -u hakopod)
is "$(ct getent passwd hakopod | cut -d: -f6,7)" \
    "/var/lib/hakopod:/usr/sbin/nologin" "a system user without a login"

# The units, the operator config as installed, api.env, an app.
for u in $UNITS; do
	sed "s|@BINDIR@|$CT_BUILD/bin|g" "$HK_TOP/etc/systemd/$u.service" |
	    ct sh -c "cat >/etc/systemd/system/$u.service"
done
ct install -D -m 644 "$CT_TOP/etc/examples/hakopod.toml" \
    /etc/hakopod/hakopod.toml
PORT=$(free_port)
{
	sed -n '/^#/p' "$HK_TOP/etc/examples/api.env"
	echo "HAKOPOD_SERVERLESS_ADDRESS=127.0.0.1:$PORT"
} | ct sh -c 'cat >/etc/hakopod/api.env'
ct mkdir -p /srv/hk
ct sh -c 'cat >/srv/hk/fn.toml' <<APP
schema_version = 1
name = "fn"

[services.py]
command = ["python3", "functions/hello.py"]
directory = "$CT_TOP/etc/examples"
public = true
readiness = "http:/"
[services.py.serverless]

[services.js]
command = ["node", "functions/hello.js"]
directory = "$CT_TOP/etc/examples"
public = true
readiness = "http:/"
[services.js.serverless]
APP
for u in $UNITS; do
	sd_asan "$u"
done
ct systemctl daemon-reload
# shellcheck disable=SC2086
run ct systemctl start $UNITS
is "$rc" 0 "systemctl start of the five units (Type=notify: ready)"
for u in $UNITS; do
	[ "$rc" = 0 ] || journal $u
done

# Applied as root through the same api.env as the units.
run ct $HK sh -c 'set -a; . /etc/hakopod/api.env; hk apply /srv/hk/fn.toml'
is "$rc" 0 "hk apply of a Python and a Node function"
[ "$rc" = 0 ] || diag "$err"

code() {	# code HOST: the gateway's answer, body in $T/body
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: $1" "http://127.0.0.1:$PORT/"
}
is "$(code py.fn.localhost)" 200 "a request to the Python function: 200"
like "$(cat "$T/body")" '^hello from python: GET /' "answered by it"
is "$(code js.fn.localhost)" 200 \
    "a request to the Node function: 200 (no MemoryDenyWriteExecute)"
like "$(cat "$T/body")" '^hello from javascript: GET /' "answered by it"

# Who runs as whom.
for u in $UNITS; do
	p=$(ct systemctl show -p MainPID --value "$u.service")
	is "$(pst "$p" Uid)" "$(four "$HKUID")" "$u runs as hakopod"
done
# hk-activate is the child of hk-lease, the unit's main process (another
# test may run an hk-activate of its own in this systemd).
p=$(ct pgrep -x -P "$(ct systemctl show -p MainPID --value hk-activate.service)" \
    hk-activate)
is "$(pst "$p" Uid) / $(pst "$p" CapEff)" "$(four "$HKUID") / 0000000000000000" \
    "hk-activate (under hk-lease) too, without capabilities"
p=$(sd_prog hk-scale.service)
is "$(pst "$p" CapEff) $(pst "$p" CapAmb) $(pst "$p" CapBnd) $(pst "$p" NoNewPrivs)" \
    "00000000000000e1 00000000000000e1 00000000000000e1 1" \
    "hk-scale holds CAP_CHOWN, CAP_KILL, CAP_SETGID and CAP_SETUID, with no_new_privs"
p=$(ct $HK hk ps --json | python3 -c 'import json, sys
print([s for s in json.load(sys.stdin) if s["service"] == "py"][0]["instance"]["pid"])')
is "$(pst "$p" Uid) / $(pst "$p" NoNewPrivs) / $(pst "$p" CapEff) $(pst "$p" CapAmb)" \
    "$(four "$(ct id -u nobody)") / 1 / 0000000000000000 0000000000000000" \
    "the Python instance runs as nobody, no_new_privs, no capabilities"

# The exposure of each unit, as systemd-analyze security rates it.
for u in $UNITS; do
	line=$(ct systemd-analyze security --no-pager "$u.service" | tail -1)
	# On stderr, so that make check shows the figures too.
	diag "in the container: $line" >&2
	x=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
	awk -v x="$x" 'BEGIN { exit !(x != "" && x < 3.0) }'
	ok $? "$u.service: exposure $x, under 3.0"
	sed "s|@BINDIR@|$HK_BUILD/bin|g" "$HK_TOP/etc/systemd/$u.service" \
	    >"$T/$u.service"
	diag "offline on the host: $(cd "$T" && systemd-analyze security \
	    --offline=true "$u.service" 2>/dev/null | tail -1)" >&2
done

# The cgroup freezer under the unit (hakopod.toml(5) freezer): with
# Delegate=yes the unit's cgroup is hakopod's, so hk-scale, as hakopod,
# makes one for each instance in it.  A suspended instance stands still
# whole, a daemon that made a session of its own too (its ticker, in the
# unit's private /tmp, stops), a request thaws it, and hk stop kills the
# daemon with its instance and removes the cgroup.  time_unit_ms = 100:
# idle_seconds = 30 lasts 3 s.
ct sed -i -e 's/^# freezer = .*/freezer = "cgroup2"/' \
    -e 's/^# time_unit_ms = .*/time_unit_ms = 100/' /etc/hakopod/hakopod.toml
# shellcheck disable=SC2086
run ct systemctl restart $UNITS
is "$rc" 0 "the units restart with freezer = cgroup2"
[ "$rc" = 0 ] || journal hk-scale
ct journalctl -u hk-scale -o cat --no-pager | grep 'freezer:' | tail -2 \
    >"$T/fz.log"
like "$(head -1 "$T/fz.log")" \
    '^hk-scale: info: freezer: instances in cgroups of their own under /sys/fs/cgroup/.*/hk-scale\.service \(cgroup2\)$' \
    "as hakopod, in the unit's own cgroup"
# RestrictNamespaces= answers clone3 ENOSYS: a child moves in after the
# fork (hakopod.toml(5), freezer, says what that costs).
like "$(tail -1 "$T/fz.log")" \
    '^hk-scale: info: freezer: clone3 is refused here .*RestrictNamespaces.*: each instance moves into its cgroup after the fork' \
    "where clone3 is refused, it says so and what a start costs instead"
ct sh -c 'cat >/srv/hk/fz.toml' <<APP
schema_version = 1
name = "fz"

[services.sus]
command = ["python3", "$CT_TOP/tests/integration/fn/idle-fn.py"]
public = true
[services.sus.environment]
IDLE_FN_DAEMON_TICK_FILE = "/tmp/sus.dtick"
[services.sus.serverless]
idle_seconds = 30
idle_action = "suspend"
APP
run ct $HK sh -c 'set -a; . /etc/hakopod/api.env; hk apply /srv/hk/fz.toml'
is "$rc" 0 "hk apply of a function that suspends"
[ "$rc" = 0 ] || diag "$err"
is "$(code sus.fz.localhost)" 200 "a request wakes it: 200"
sus=$(sed -n 's/^idle-fn pid=//p' "$T/body")
cg=$(ct sed -n 's/^0:://p' "/proc/$sus/cgroup")
like "$cg" '/hk-scale\.service/hk\.[0-9a-f]+\.[0-9]+\.[0-9]+$' \
    "its cgroup is its own, in hk-scale's"
cgd=$(ct awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)$cg
dtick() { ct sh -c "cat /tmp/systemd-private-*-hk-scale.service-*/tmp/sus.dtick$1"; }
daemon_pid() { dtick .pid >/dev/null 2>&1; }
wait_t 10 daemon_pid
dpid=$(dtick .pid)
ct grep -qx "$dpid" "$cgd/cgroup.procs" &&
    [ "$(ct ps -o sid= -p "$dpid" | tr -d " ")" = "$dpid" ]
ok $? "its daemon ($dpid) leads a session of its own, in the same cgroup"
hkps() {
	ct $HK sh -c 'set -a; . /etc/hakopod/api.env; hk ps --json' |
	    python3 -c 'import json, sys
print([s for s in json.load(sys.stdin) if s["service"] == "sus"][0]["state"])'
}
cg_frozen() { ct grep -qx "frozen $1" "$cgd/cgroup.events"; }
suspended() { [ "$(hkps)" = suspended ] && cg_frozen 1; }
wait_t 20 suspended
ok $? "idle: hk ps says suspended, and the kernel says its cgroup is frozen"
t1=$(dtick ""); sleep 0.3; t2=$(dtick "")
[ -n "$t1" ] && [ "$t2" = "$t1" ]
ok $? "the daemon's ticker stands still ($t1, then $t2)"
# hk-idle is held (SIGSTOP) while the test looks at the thawed instance,
# which its short idle time would freeze again on a busy machine.
idlepid=$(sd_prog hk-idle.service)	# hk-idle, not its hk-lease
ct kill -STOP "$idlepid"
is "$(code sus.fz.localhost)" 200 "a request thaws it: 200"
is "$(cat "$T/body")" "idle-fn pid=$sus" "from the same process"
t1=$(dtick "")
ticks() { t2=$(dtick ""); [ -n "$t2" ] && [ "$t2" != "$t1" ]; }
wait_t 5 ticks
cg_frozen 0 && ticks
ok $? "its cgroup is thawed, and the daemon ticks again ($t1, then $t2)"
ct kill -CONT "$idlepid"
run ct $HK sh -c 'set -a; . /etc/hakopod/api.env; hk stop fz/sus'
is "$rc" 0 "hk stop fz/sus"
gone() { ! ct test -d "$cgd" && ! ct test -d "/proc/$dpid"; }
wait_t 10 gone
ok $? "its daemon is killed with it and its cgroup removed"
[ "$(ct systemctl is-active hk-scale)" = active ] || journal hk-scale

# A clean stop: every unit ends with success, the instances with it.
# shellcheck disable=SC2086
ct systemctl stop $UNITS
for u in $UNITS; do
	r=$(ct systemctl show -p Result --value "$u.service")
	is "$r" success "$u stops cleanly"
	[ "$r" = success ] || journal "$u"
done
[ -z "$(ct pgrep -u nobody)" ]
ok $? "no instance is left running"
done_testing
