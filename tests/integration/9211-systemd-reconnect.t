#!/bin/sh
# The systemd backend across a lost connection: systemd re-executed
# (daemon-reexec) drops every D-Bus client.  hk-scale connects again a
# second later and goes on watching its units: a sleep still sees its
# unit end; a unit stopped while it was away (held by the test with
# SIGSTOP, so that it cannot connect again before the stop is over,
# however slow the stop) is found gone.  A container of its own
# (scripts/systemd-ct start): a re-executing systemd would disturb the
# tests that share one.  hk-scale runs as a transient unit
# itself, without a system call filter, so that under SANITIZE=1
# LeakSanitizer looks at it too: it must stop with success.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
sd_container own || done_testing
trap '"$HK_TOP/scripts/systemd-ct" stop "$CT"; _cleanup' EXIT

B=$CT_BUILD/bin
FN=$CT_TOP/tests/integration/fn
journal() { ct journalctl -u hk-rc-scale -o cat --no-pager 2>/dev/null; }
logged() { journal | grep -Eq -- "$1"; }
nlogged() { journal | grep -Ec -- "$1"; }
ctl() {
	ct python3 "$FN/scale-client.py" /run/hk-rc/scale.sock "$1"
}
state() {
	ct env HAKOPOD_CONFIG=/etc/hk-rc/hakopod.toml "$B/hk" ps --json |
	    python3 -c 'import json, sys
print(json.load(sys.stdin)[0]["state"])'
}
state_is() { [ "$(state)" = "$1" ]; }
units() {
	ct systemctl list-units --plain --no-legend \
	    --state=active,activating,deactivating 'hk-svc-rc.*' |
	    awk '{ print $1 }'
}
connected_n() { [ "$(nlogged 'systemd: connected')" -ge "$1" ]; }
# saw PATTERN: diag of hk-scale's lines that match, or its last
saw() {
	diag "hk-scale's lines matching '$1' (else its last):"
	{ journal | grep -E -- "$1" || journal; } | tail -n 8 | sed 's/^/#   /'
}
pstate() { ct sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
held() { [ "$(pstate "$1")" = T ]; }

ct systemctl start systemd-journald
ct mkdir -p /etc/hk-rc /var/lib/hk-rc
ct sh -c 'cat >/etc/hk-rc/hakopod.toml' <<CONF
[server]
serverless_address = "127.0.0.1:$(free_port)"
state = "sqlite:///var/lib/hk-rc/state.db"
runtime_dir = "/run/hk-rc"
CONF
ct sh -c 'cat >/etc/hk-rc/app.toml' <<APP
schema_version = 1
name = "rc"

[services.py]
command = ["python3", "functions/hello.py"]
directory = "$CT_TOP/etc/examples"
backend = "systemd"
public = true
readiness = "http:/"
[services.py.serverless]
APP
run ct env HAKOPOD_CONFIG=/etc/hk-rc/hakopod.toml "$B/hk" apply \
    /etc/hk-rc/app.toml
is "$rc" 0 "applied"
run ct systemd-run -q --unit=hk-rc-scale -p Type=notify \
    -p Environment=HAKOPOD_CONFIG=/etc/hk-rc/hakopod.toml "$B/hk-scale" -v
is "$rc" 0 "hk-scale runs, ready"
wait_t 20 state_is running
ok $? "rc/py runs (its readiness gate)"
unit=$(units)

ct systemctl daemon-reexec
wait_t 10 connected_n 2
ok $? "systemd re-executed: hk-scale connects again"
like "$(journal)" 'systemd: connection lost: .*: connecting again in 1000 ms' \
    "after saying it lost the connection"
is "$(ctl '{"op":"sleep","service":"rc/py"}')" '{"ok":true}' \
    "a sleep is answered once the unit has ended: its signals still come"
is "$(units)" "" "no unit left"
wait_t 5 logged "service=rc/py: stopping unit $unit\$"
ok $? "the unit it had before" || saw "service=rc/py"

is "$(ctl '{"op":"wake","service":"rc/py"}')" '{"ok":true}' "woken again"
wait_t 20 state_is running
ok $? "running"
unit=$(units)
scale=$(ct systemctl show -p MainPID --value hk-rc-scale)
ct kill -STOP "$scale" && wait_t 5 held "$scale"
ct sh -c "systemctl daemon-reexec && systemctl stop '$unit'"
ct kill -CONT "$scale"
wait_t 10 state_is sleeping
ok $? "its unit stopped while hk-scale was away: sleeping"
wait_t 5 logged "service=rc/py: unit $unit exited: its unit ended while hk-scale was not connected to systemd"
ok $? "found gone once connected again, and said so" || saw "service=rc/py|systemd:"

# A unit that ends well is collected (its Result then reads success); one
# that fails, LeakSanitizer's exit 23 included, stays with its Result.
ct systemctl stop hk-rc-scale
is "$(ct systemctl show -p Result --value hk-rc-scale)" success \
    "hk-scale stops with success (under SANITIZE=1: no leak)"
done_testing
