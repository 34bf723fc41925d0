#!/bin/sh
# make demo, as a new user runs it (scripts/demo, HK_DEMO_ONESHOT=1 so
# that it stops after its tour): the stack under s6, the example app's
# cold and warm requests, then a function of one's own made by hk new,
# applied with its source as a read-only copy named by its hash, an edit
# that changes nothing until the next apply, and the new revision
# answering once it is ready.
. tests/integration/lib.sh

for tool in s6-svscan curl python3 node; do
	command -v $tool >/dev/null
	ok $? "$tool is installed"
done
PORT=$(free_port)
HK_DEMO_ONESHOT=1 HK_DEMO_PORT=$PORT HK_BUILD=$HK_BUILD \
    "$HK_TOP/scripts/demo" >"$T/demo.out" 2>&1
is "$?" 0 "the demo runs to its end"
out=$(cat "$T/demo.out")
like "$out" "gateway on 127.0.0.1:$PORT" "on the port asked for"
# What curl printed in the tour, each answer and its status as one line.
answers=$(awk '/^  \(/ { print prev " " $0 } { prev = $0 }' "$T/demo.out")
like "$answers" '^hello from python: GET /, 0 bytes received   \(200 in ' \
    "the example's cold start answers"
is "$(sed -n '/^\$ hk new /,/^$/p' "$T/demo.out" | sed -n 's|^/.*/greet/||p' |
    tr '\n' ' ')" "handler.py hk.toml " "hk new writes the starter and lists its files"
like "$out" 'greet/greet	revision 1	created	code [0-9a-f]{12}' \
    "hk apply takes it as it is, with its code hash"
is "$(printf '%s\n' "$answers" | grep -E '^(hello|hi) from greet' |
    sed 's/:.*(/ (/')" "hello from greet (200)
hello from greet (200)
hi from greet (200)" \
    "it answers; an edit of its handler changes nothing until the next apply"
like "$out" 'greet/greet	revision 2	updated	code [0-9a-f]{12}' \
    "the next apply makes a new revision of a new hash, which answers once ready"
like "$out" 'code: +[0-9a-f]{12} \(source, SHA-256\)' "hk status shows the hash"
ok "$(! ps -eo args | grep -v grep | grep -q '/tmp/hk-demo\.'; echo $?)" \
    "and it leaves nothing running"
done_testing
