#!/bin/sh
# readiness = "socket": hk-scale holds the service's listening socket, and
# its listen backlog fits the service's max_concurrency (the most
# connections the gateway opens to it), so that a burst of woken requests
# is never dropped by the kernel before the service accepts it.  The
# example hello.py serves the socket it is handed without listening anew.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

new_store sqlite backlog
scale_operator "$T/hakopod.toml" "$STORE"
export HAKOPOD_CONFIG="$T/hakopod.toml"
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.hello]
command = ["python3", "$HK_TOP/etc/examples/functions/hello.py"]
public = true
readiness = "socket"
[services.hello.serverless]
max_concurrency = 64
APP
run hk apply "$T/app.toml"
is "$rc" 0 "the application is applied"
daemon scale hk-scale -g 1
ok $? "hk-scale starts"
wait_for 10 state_is fn/hello running
ok $? "fn/hello is ready on the socket hk-scale handed it"
ep=$(status_of fn/hello endpoint)
backlog=$(ss -Hltn "( sport = :${ep##*:} )" | awk '{ print $3 }')
diag "listen backlog of $ep: $backlog"
ok $((backlog < 64)) "its listen backlog is at least max_concurrency (64)"
like "$(get "http://$ep/")" 'hello from python' "and it answers"
stop_pid "$scale_pid"

done_testing
