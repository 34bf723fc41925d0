#!/bin/sh
# hk-scale as its units run it: an unprivileged user (daemon here) with
# exactly CAP_SETUID, CAP_SETGID and CAP_KILL, ambient, started by
# setpriv.  It starts an instance as nobody (notify readiness through its
# socket, and a handed-over listener), without any of those capabilities,
# stops it, and adopts and stops it after a restart.  Without the
# capabilities, instances run as hk-scale's own user and a service naming
# another user fails to start, saying why.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

for tool in setpriv runuser; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done

NOBODY=$(id -u nobody)
NOGROUP=$(getent group nogroup | cut -d: -f3)
DAEMON=$(id -u daemon)
DAEMON_GID=$(id -g daemon)
DROP="setpriv --reuid daemon --regid daemon --init-groups"
CAPS="--inh-caps +setuid,+setgid,+kill --ambient-caps +setuid,+setgid,+kill
    --bounding-set -all,+setuid,+setgid,+kill"
NOCAPS="0000000000000000 0000000000000000 0000000000000000 0000000000000000"
pst() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' ' |
	    sed 's/ *$//'
}
caps() {	# caps PID: CapPrm CapEff CapInh CapAmb
	echo "$(pst "$1" CapPrm) $(pst "$1" CapEff) $(pst "$1" CapInh)" \
	    "$(pst "$1" CapAmb)"
}
four() { echo "$1 $1 $1 $1"; }
gone() { ! alive "$1"; }

# The store and runtime directory belong to hk-scale's user.
mkdir -p "$T/db"
scale_operator "$T/hakopod.toml" "sqlite://$T/db/state.db" 'freezer = "auto"'
export HAKOPOD_CONFIG="$T/hakopod.toml"
{
	printf 'schema_version = 1\nname = "fn"\n'
	fn_service def 'readiness = "notify"
[services.def.serverless]'
	fn_service nob 'readiness = "socket"
user = "nobody"
[services.nob.serverless]'
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
ok $? "the app is applied"
chown -R daemon:daemon "$T/db" "$T/run"

# shellcheck disable=SC2086
daemon scale $DROP $CAPS hk-scale -v -g 2
ok $? "hk-scale starts as daemon with three ambient capabilities"
is "$(pst "$scale_pid" Uid) / $(caps "$scale_pid")" \
    "$(four "$DAEMON") / $(four 00000000000000e0)" \
    "it runs as daemon with CAP_KILL, CAP_SETGID and CAP_SETUID"
! grep -q 'instances run as our own user\|no CAP_KILL' "$T/scale.log"
ok $? "and says nothing of missing capabilities"
like "$(grep 'freezer:' "$T/scale.log")" \
    'freezer: no cgroup freezer \(cgroup2: mkdir .*: Permission denied; cgroup1: mkdir .*: Permission denied\): a suspend stops the process group with SIGSTOP' \
    "freezer = \"auto\": it may make no cgroup, freezes with signals, and says why"
subscribe "$T/sub.out"
for s in def nob; do
	wait_for 10 seen "$T/sub.out" "\"op\":\"ready\".*\"service\":\"fn/$s\""
	ok $? "fn/$s is ready (readiness gate)"
done
p=$(status_of fn/def pid)
is "$(pst "$p" Uid) / $(pst "$p" Gid) / $(pst "$p" Groups) / $(pst "$p" NoNewPrivs)" \
    "$(four "$NOBODY") / $(four "$NOGROUP") / $NOGROUP / 1" \
    "fn/def runs as nobody with no_new_privs (notify socket usable)"
is "$(caps "$p")" "$NOCAPS" "without any of hk-scale's capabilities"
is "$(pst "$p" CapBnd)" 00000000000000e0 "within its bounding set"
q=$(status_of fn/nob pid)
like "$(get "http://$(status_of fn/nob endpoint)/")" "^hello pid=$q" \
    "fn/nob answers on the listener handed over to nobody"

is "$(ctl '{"op":"sleep","service":"fn/def"}')" '{"ok":true}' \
    "sleep of an instance of another user answers ok"
wait_for 5 gone "$p"
ok $? "and it is gone (CAP_KILL)"

# Adoption across a restart of hk-scale.
ctl '{"op":"wake","service":"fn/def","reason":"request"}' >/dev/null
wait_for 10 state_is fn/def running
p=$(status_of fn/def pid)
kill -KILL "$scale_pid"
wait_for 5 gone "$scale_pid"
alive "$p"
ok $? "the instance outlives a killed hk-scale"
# shellcheck disable=SC2086
daemon scale2 $DROP $CAPS hk-scale -v -g 2
ok $? "a new hk-scale starts"
grep -q "service=fn/def: adopted pid $p" "$T/scale2.log"
ok $? "and adopts the instance of nobody"
is "$(ctl '{"op":"sleep","service":"fn/def"}')" '{"ok":true}' \
    "its sleep answers ok"
wait_for 5 gone "$p"
ok $? "and the adopted instance is gone"
q=$(status_of fn/nob pid)
kill -TERM "$scale2_pid"
wait_for 10 gone "$scale2_pid"
wait "$scale2_pid"
is "$?" 0 "SIGTERM: hk-scale exits 0"
gone "$q"
ok $? "having stopped the other instance too"

# Without the capabilities: our own user, and no other.
# shellcheck disable=SC2086
daemon scale3 $DROP hk-scale -v -g 2
ok $? "hk-scale starts as daemon without capabilities"
grep -q 'hk-scale: info: neither root nor CAP_SETUID and CAP_SETGID: instances run as our own user' \
    "$T/scale3.log"
ok $? "it says instances run as its own user"
ctl '{"op":"wake","service":"fn/def","reason":"request"}' >/dev/null
wait_for 10 state_is fn/def running
p=$(status_of fn/def pid)
is "$(pst "$p" Uid) / $(pst "$p" Groups) / $(pst "$p" NoNewPrivs)" \
    "$(four "$DAEMON") / $DAEMON_GID / 1" \
    "fn/def runs as daemon, hk-scale's user, with no_new_privs"
ctl '{"op":"wake","service":"fn/nob","reason":"request"}' >/dev/null
wait_for 10 state_is fn/nob failed
ok $? "fn/nob, which names nobody, fails"
grep -q 'service=fn/nob: unable to start revision 1: user: unable to run as "nobody": hk-scale has neither root nor CAP_SETUID and CAP_SETGID' \
    "$T/scale3.log"
ok $? "saying why"
stop_pid "$scale3_pid"
done_testing
