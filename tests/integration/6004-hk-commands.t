#!/bin/sh
# hk's commands: hk --help names every one, and "hk events" alone lists the
# events as "hk events list" does, with or without the hk-events daemon
# running; it never starts the daemon (bare hk-events is the daemon).
. tests/integration/lib.sh

mkdir -p "$T/run"
cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "sqlite://$T/state.db"
runtime_dir = "$T/run"
CONF
export HAKOPOD_CONFIG="$T/hakopod.toml"

run hk --help
for cmd in validate apply ps routes status stop start events; do
	like "$out" "^(usage:)? +hk \[-v\] \[-f config\] $cmd( |\$)" \
	    "hk --help names $cmd"
done
run hk events --help
is "$rc:$err" "0:" "hk events --help exits 0, nothing on stderr"
like "$out" '^usage: hk-events ' "and prints the usage of hk-events"
run hk events list --help
is "$rc:$err" "0:" "hk events list --help exits 0, nothing on stderr"
like "$out" '^usage: hk-events \[-v\] \[-f config\] list ' \
    "and prints the usage of the list query"

run hk apply "$HK_TOP/etc/examples/http-functions.toml"
is "$rc" 0 "the example is applied: Applied events are recorded"
run hk events list
is "$rc" 0 "hk events list exits 0"
is "$(printf '%s\n' "$out" | grep -c '	Applied	')" 3 \
    "and lists the three Applied events"
list=$out

# Bounded: before the fix, this was the daemon, running until killed.
run timeout 10 hk events
is "$rc" 0 "hk events alone exits 0 with no daemon running"
is "$out" "$list" "and prints what hk events list prints"
test ! -e "$T/run/events.sock"
ok $? "and starts no daemon: there is no events.sock"

daemon events hk-events
ok $? "the hk-events daemon runs"
run timeout 10 hk events
is "$rc:$err" "0:" "hk events alone exits 0 beside the daemon, nothing on stderr"
is "$out" "$list" "and lists the events"

unset HAKOPOD_CONFIG
run timeout 10 hk -f "$T/hakopod.toml" events
is "$rc" 0 "hk -f config events: exits 0"
is "$out" "$list" "and lists the events of that configuration"

stop_pid "$events_pid"
done_testing
