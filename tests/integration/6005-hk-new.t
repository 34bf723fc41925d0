#!/bin/sh
# hk new: each starter (python, node, python --framework fastapi, node
# --framework express) is written whole, passes hk validate, is taken by
# hk apply as it is and answers its first request through the gateway,
# on SQLite and PostgreSQL.  Run alone, each one answers a keep-alive
# request without a delayed-ACK stall, and on SIGTERM answers the request
# in flight, closes its idle connection and exits 0.  hk new refuses a bad
# name (64) and an existing file (73), and then writes nothing.
#
# The test runs in a network namespace of its own (as 1011), so that the
# kernel's DelayedACKs counter (delayed ACKs sent when their timer fired)
# counts its traffic alone: a starter that sent head and body apart would
# have the client's timer fire once a request, not once or twice in all.
if [ -z "${HK_NETNS:-}" ]; then
	HK_NETNS=1 exec unshare --net "$0" "$@"
fi
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

ip link set lo up
ok $? "a network namespace of its own, loopback up"

# fifty PORT: 50 GETs on one keep-alive connection; how many were 200
fifty() {
	python3 - "$1" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
ok = 0
for i in range(50):
    c.request("GET", "/k")
    r = c.getresponse()
    r.read()
    ok += r.status == 200
print(ok)
PY
}

# kind:app name:its file:what runs it:the hk new arguments (commas for
# spaces)
KINDS="python:py:handler.py:python3:python node:js:handler.js:node:node
fastapi:fa:app.py:python3:--framework,fastapi,python
express:ex:app.js:node:--framework,express,node"

# The tools a starter needs, as its instance (nobody) finds them on PATH:
# a missing one fails the test.
py=$(runuser -u nobody -- sh -c 'command -v python3')
runuser -u nobody -- "${py:-python3}" -c 'import fastapi, uvicorn' \
    >/dev/null 2>&1
ok $? "python3 ($py) has FastAPI and uvicorn (python3-fastapi, python3-uvicorn)"
NM=$HK_TOP/tests/npm/node_modules
[ -f "$NM/express/package.json" ] && command -v node >/dev/null
ok $? "node and Express in tests/npm (scripts/deps) are there"

# new_kind LINE DIR: hk new for one line of KINDS, into DIR; an express
# starter gets the tree's node_modules, as "npm install" there would.
new_kind() {
	_args=$(echo "$1" | cut -d: -f5 | tr , ' ')
	_name=$(echo "$1" | cut -d: -f2)
	# shellcheck disable=SC2086
	hk new $_args "$_name" "$2" >/dev/null 2>"$T/new.err" || return 1
	case $1 in
	express:*) cp -R "$NM" "$2/node_modules" ;;
	esac
}

# Refusals first: they need no daemon.
cd "$T" || exit 1
run hk new python Bad_Name
is "$rc" 64 "a bad name is refused with 64"
like "$err" '^hk: error: Bad_Name: invalid name' "saying why"
ok "$([ ! -e Bad_Name ]; echo $?)" "and nothing is written"
run hk new --framework express python x
is "$rc" 64 "a framework of another language is refused with 64"
run hk new python
is "$rc" 64 "a missing name is refused with 64"
like "$err" '^usage: hk \[-v\] new ' "with the usage"
run hk new python one
is "$rc" 0 "hk new python one"
is "$out" "one/handler.py
one/hk.toml" "lists the files it wrote"
is "$(stat -c %a one one/handler.py one/hk.toml | tr '\n' ' ')" \
    "755 644 644 " "a folder and files that an instance's user may read"
mkdir two
echo keep >two/hk.toml
run hk new python two
is "$rc" 73 "an existing file is refused with 73"
is "$err" "hk: error: two/hk.toml: exists" "naming it"
is "$(cat two/hk.toml)" keep "it is left as it was"
is "$(ls -A two)" hk.toml "and no other file is written"
cd "$HK_TOP" || exit 1
run hk --help
like "$out" 'hk \[-v\] new \[--framework fastapi \| express\] python \| node name \[directory\]' \
    "hk --help lists hk new"
run hk new --help
is "$rc.$out" "0.usage: hk [-v] new [--framework fastapi | express] python | node name [directory]" \
    "hk new --help prints its usage"

# Each starter alone: keep-alive requests without a delayed-ACK stall
# (counted, not timed), and SIGTERM finishes the work in hand.
for line in $KINDS; do
	kind=${line%%:*}
	name=$(echo "$line" | cut -d: -f2)
	file=$(echo "$line" | cut -d: -f3)
	interp=$(echo "$line" | cut -d: -f4)
	[ "$interp" = python3 ] && interp=$py
	d=$T/alone-$kind
	new_kind "$line" "$d"
	ok $? "$kind: hk new writes the starter"
	port=$(free_port)
	(cd "$d" && PORT=$port exec "$interp" "$file") 2>"$T/$kind.log" &
	pid=$!
	wait_t 20 curl -sf -o /dev/null "http://127.0.0.1:$port/"
	ok $? "$kind: run alone on PORT, it answers"
	da0=$(tcpext DelayedACKs)
	is "$(fifty "$port")" 50 "$kind: 50 requests on one keep-alive connection"
	da=$(($(tcpext DelayedACKs) - da0))
	ok "$([ "$da" -le 2 ]; echo $?)" \
	    "$kind: each answer sent whole: $da delayed ACKs for the 50, not one each"
	is "$(python3 "$GW_FN/inflight.py" "$port" "$pid")" \
	    "200 200 idle closed" \
	    "$kind: on SIGTERM it answers the request in flight and closes an idle connection"
	wait_t 5 eval "! alive $pid"
	ok $? "$kind: and exits"
	wait "$pid"
	is "$?" 0 "$kind: with 0"
	is "$(grep -c "^$name: POST /inflight 200\$" "$T/$kind.log")" 1 \
	    "$kind: one log line per request"
done

for e in $(engines); do
	new_store "$e" new || { ok 1 "$e: store"; continue; }
	GW_STATE=$STORE gw_config
	rm -f "$T"/*.log
	for line in $KINDS; do
		kind=${line%%:*}
		name=$(echo "$line" | cut -d: -f2)
		d=$T/$e-$kind
		new_kind "$line" "$d"
		ok $? "$e: $kind: hk new writes the starter"
		run hk validate "$d/hk.toml"
		ok $rc "$e: $kind: hk validate passes it"
		run hk apply "$d/hk.toml"
		ok $rc "$e: $kind: hk apply takes it as it is"
	done
	e2e_start
	ok $? "$e: hk-events, hk-scale and hk-activate are up"
	for line in $KINDS; do
		kind=${line%%:*}
		name=$(echo "$line" | cut -d: -f2)
		is "$(gw_code "$name.$name.localhost" /first)" 200 \
		    "$e: $kind: its first request through the gateway"
		is "$(cat "$T/body")" \
		    "hello from $name: GET /first, 0 bytes received" \
		    "$e: $kind: is answered by its handler"
	done
	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
done
pg_missing_is_failure
done_testing
