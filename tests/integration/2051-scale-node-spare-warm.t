#!/bin/sh
# The Node spare warms Node's module loader before it says ready (a
# throwaway package tree of its own, libexec/hk-node-spare.js), and the
# function it becomes sees nothing of it: a function whose packages have
# the names the warm-up uses (p0 by "module-sync", p1 by "exports", p2
# by "main") gets its own; its require.cache holds only its own files;
# the warm-up's directory is gone once the spare is ready; the service's
# log holds the function's lines only.  That the warm-up ran: Node's ES
# module loader is loaded before the function's first line.  The tree of
# a spare killed in its warm-up is removed by the next spare of its user;
# one of another user is left alone.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

pkg() {	# pkg NAME PACKAGE.JSON FILE CONTENT
	mkdir -p "$T/wf/node_modules/$1"
	printf '%s\n' "$2" >"$T/wf/node_modules/$1/package.json"
	printf '%s\n' "$4" >"$T/wf/node_modules/$1/$3"
}

field() {	# field KEY: of the JSON in $T/body
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	    "$T/body" "$1"
}

ready_count() {
	count 'node spare node for nobody: pid [0-9]* ready' "$T/scale.log"
}

more_ready() {
	[ "$(ready_count)" -gt "$1" ]
}

spare_ready() {
	sed -n 's/.*node spare node for nobody: pid \([0-9]*\) ready.*/\1/p' \
	    "$T/scale.log" | tail -1
}

answers() {	# answers HOST: 200 with JSON in $T/body
	[ "$(gw_code "$1" /)" = 200 ]
}

leftovers() {	# the spare PID's warm-up directories still there
	find /tmp -maxdepth 1 -name "hk-node-spare.$1.*" | wc -l
}

# Trees of a spare gone (its pid dead): nobody's, and root's.
dead=$(sh -c 'echo $$')
stale=/tmp/hk-node-spare.$dead.$(head -c 64 /dev/urandom | tr -dc A-Za-z0-9 | head -c 6)
other=/tmp/hk-node-spare.$dead.$(head -c 64 /dev/urandom | tr -dc A-Za-z0-9 | head -c 6)
mkdir -p "$stale/node_modules/p0" "$other/node_modules/p0"
echo x >"$stale/node_modules/p0/index.js"
echo x >"$other/node_modules/p0/index.js"
chown -R nobody "$stale"
chmod 700 "$stale" "$other"

mkdir -p "$T/wf"
cp "$HK_TOP/tests/integration/fn/warm-fn.js" "$T/wf/app.js"
pkg p0 '{"name":"p0","exports":{".":[{"module-sync":"./index.mjs","default":"./index.js"},"./index.js"]}}' \
    index.mjs "export default 'service-p0';"
printf '%s\n' "module.exports = 'not the module-sync one';" \
    >"$T/wf/node_modules/p0/index.js"
pkg p1 '{"name":"p1","exports":{".":"./lib/x.js"}}' lib.js ''
mkdir -p "$T/wf/node_modules/p1/lib"
printf '%s\n' "exports.who = 'service-p1';" >"$T/wf/node_modules/p1/lib/x.js"
pkg p2 '{"name":"p2","main":"./main.js"}' main.js "exports.who = 'service-p2';"
chmod -R a+rX "$T/wf"

cat >"$T/wf.toml" <<APP
schema_version = 1
name = "wf"

[services.fn]
command = ["node", "$T/wf/app.js"]
directory = "$T/wf"
public = true
readiness = "socket"
[services.fn.serverless]
start_from = "node-spare"
startup_timeout_seconds = 20
APP

new_store sqlite wf
GW_STATE=$STORE
gw_config 'freezer = "cgroup2"' "service_log_dir = \"$T/logs\""
run hk apply "$T/wf.toml"
is "$rc" 0 "hk apply"
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"

# The gate's first start made ready; the next wake is the spare's.
wait_t 30 more_ready 0
ok $? "hk-scale says a node spare is ready"
wait_t 20 answers fn.wf.localhost
ok $? "wf/fn answers"
put_to_sleep wf/fn
ok $? "put to sleep"
n=$(ready_count)
wait_t 30 more_ready "$((n - 1))"
spid=$(spare_ready)
is "$(leftovers "$spid")" 0 "the spare ($spid) left no warm-up directory behind"
test ! -e "$stale"
ok $? "the tree of a spare gone, of the same user, is removed"
test -f "$other/node_modules/p0/index.js"
ok $? "another user's is left alone"
rm -rf "$other"
wait_t 20 answers fn.wf.localhost
ok $? "woken through the gateway"
is "$(field pid)" "$spid" "answered by the spare"
is "$(field warmed)" True "Node's ES module loader was loaded before the function ran"
is "$(field who)" "service-p0 service-p1 service-p2" \
    "its own packages, by module-sync, exports and main"
is "$(field foreign)" "" "its require.cache holds only its own files"
wait_t 10 grep -q "warm-fn: GET / from pid $spid" "$T/logs/wf/fn/current"
ok $? "its output is in the service's log"
is "$(grep -vc 'warm-fn: GET / from pid' "$T/logs/wf/fn/current")" 0 \
    "and nothing else"

last=$(spare_ready)
stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
wait_t 10 eval '! alive "$last"'
ok $? "hk-scale stopped: its spare is gone"
done_testing
