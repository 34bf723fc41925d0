#!/bin/sh
# make demo, as a new user runs it (scripts/demo, HK_DEMO_ONESHOT=1 so
# that it stops after its tour): the stack under s6, the example app's
# cold and warm requests, then a function of one's own made by hk new,
# applied with its source as a read-only copy named by its hash, an edit
# that changes nothing until the next apply, and the new revision
# answering once it is ready; a secret set from stdin, named in hk.toml
# and read by the handler from $CREDENTIALS_DIRECTORY, whose value is in
# neither the demo's output nor its directory (store, logs, runtime).
. tests/integration/lib.sh

for tool in s6-svscan curl python3 node; do
	command -v $tool >/dev/null
	ok $? "$tool is installed"
done
PORT=$(free_port)
# The secret's value, known here to be looked for; TAP lines never show it.
VALUE=demo-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
HK_DEMO_ONESHOT=1 HK_DEMO_KEEP=1 HK_DEMO_PORT=$PORT HK_BUILD=$HK_BUILD \
    HK_DEMO_SECRET=$VALUE "$HK_TOP/scripts/demo" >"$T/demo.out" 2>&1
is "$?" 0 "the demo runs to its end"
out=$(cat "$T/demo.out")
DEMO_DIR=$(sed -n 's/^hk demo in //p' "$T/demo.out")
case $DEMO_DIR in /tmp/hk-demo.*) ;; *) DEMO_DIR= ;; esac
like "$out" "gateway on 127.0.0.1:$PORT" "on the port asked for"
# What curl printed in the tour, each answer and its status as one line.
answers=$(awk '/^  \(/ { print prev " " $0 } { prev = $0 }' "$T/demo.out")
like "$answers" '^hello from python: GET /, 0 bytes received   \(200 in ' \
    "the example's cold start answers"
is "$(sed -n '/^\$ hk new /,/^$/p' "$T/demo.out" | sed -n 's|^/.*/greet/||p' |
    tr '\n' ' ')" "handler.py hk.toml " "hk new writes the starter and lists its files"
like "$out" 'greet/greet	code [0-9a-f]{12}	skipped: the gate is off' \
    "hk vet shows the code vetting gate off by default"
like "$out" 'with \[vet\] in' "... and says how to turn it on"
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
like "$out" 'greet/GREETING	set	digest [0-9a-f]{12}' \
    "hk secret set takes the value from stdin and prints a digest"
like "$out" 'GREETING	[0-9a-f]{12}	20[0-9-]+T' "hk secret list shows it"
like "$out" 'greet/greet revision 3 ready' \
    "hk apply --wait returns once the revision with the secret is ready"
sum=$(printf '%s' "$VALUE" | sha256sum | cut -c1-12)
is "$(printf '%s\n' "$answers" | grep '^secret GREETING')" \
    "secret GREETING: sha256 $sum   (200)" \
    "the handler reads the value set from CREDENTIALS_DIRECTORY"
like "$out" 'rev=3 inst=pid:[0-9]+ greet: GET / 200' \
    "hk logs shows the handler's lines with revision and instance"
grep -q -F -e "$VALUE" "$T/demo.out"
is "$?" 1 "the value is not in the demo's output"
test -n "$DEMO_DIR" && test -f "$DEMO_DIR/db/state.db"
ok $? "the demo's directory is left in place (HK_DEMO_KEEP=1)"
is "$(grep -r -l -F -e "$VALUE" "$DEMO_DIR" 2>&1)" "" \
    "nor in its store, logs or runtime directory (instance files removed)"
test -n "$DEMO_DIR" && rm -rf "$DEMO_DIR"
ok "$(! ps -eo args | grep -v grep | grep -q '/tmp/hk-demo\.'; echo $?)" \
    "and it leaves nothing running"
done_testing
