#!/bin/sh
# Placement on nodes: two nodes on one machine, each a podman API service
# of its own (the suite's, and one of this test's) whose containers
# publish on 127.0.0.2 and 127.0.0.3.  A service pinned to each, both
# woken through one gateway, each answers from its own node: its
# container made by that node's engine, published on that node's address,
# its endpoint there, "hk ps" and "hk status" naming the node.  A service
# without node_name runs on the default node (this host, 127.0.0.1).
# Each node's hk-scale sees only its own containers, though both podman
# services share one storage and one events log.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
U3=$(ct_engine_own "$T/engine3")
ok $? "a second podman API service: $U3"
[ -f "$T/engine3.pid" ] && _pids="$_pids $(cat "$T/engine3.pid")"
for a in 127.0.0.2 127.0.0.3; do
	python3 -c 'import socket, sys; socket.socket().bind((sys.argv[1], 0))' \
	    "$a"
	ok $? "$a is an address of this host (127.0.0.0/8)"
done

ct_config
cat >>"$T/hakopod.toml" <<CONF

[nodes.node-2]
address = "127.0.0.2"
container_engine = "$U"
container_network = "slirp4netns"

[nodes.node-3]
address = "127.0.0.3"
container_engine = "$U3"
container_network = "slirp4netns"

[nodes.bare]
address = "127.0.0.4"
CONF
run hk-scale -n
is "$rc $err" "0 configuration OK" "the operator configuration with three nodes"

svc() {	# svc NAME NODE: a sleeping service on NODE ("" for none)
	cat <<APP

[services.$1]
image = "$IMAGE"
port = 8080
public = true
${2:+node_name = \"$2\"}
[services.$1.environment]
GREETING = "$1 on ${2:-the default node}"
[services.$1.serverless]
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc two node-2
	svc three node-3
	svc here ""
} >"$T/app.toml"

# What hk validate refuses around nodes.
{ printf 'schema_version = 1\nname = "x"\n'; svc a node-9; } >"$T/bad1.toml"
run hk validate "$T/bad1.toml"
is "$rc $err" "65 $T/bad1.toml:8: services.a.node_name: no node \"node-9\" in the operator configuration" \
    "hk validate: a node_name the operator configuration lacks"
{ printf 'schema_version = 1\nname = "x"\n'; svc a bare; } >"$T/bad2.toml"
run hk validate "$T/bad2.toml"
is "$rc $err" "65 $T/bad2.toml:8: services.a.node_name: node \"bare\" has no container_engine" \
    "hk validate: a node without a container_engine"

run hk apply "$T/app.toml"
is "$rc" 0 "a service pinned to each node, and one on the default node"
start_events && start_scale && start_gw
ok $? "hk-events, hk-scale and hk-activate are ready"
INST=$(ct_install "$STORE")
for s in two three here; do
	wait_t 60 scale_is fn/$s running
done
for s in two three here; do
	put_to_sleep() {
		[ "$(ctl activate.sock "{\"op\":\"fence\",\"service\":\"$1\",\"idle_seconds\":0}")" = '{"ok":true}' ] &&
		    [ "$(ctl scale.sock "{\"op\":\"sleep\",\"service\":\"$1\"}")" = '{"ok":true}' ]
	}
	put_to_sleep fn/$s
	ok $? "fn/$s passed its readiness gate and was put to sleep"
done
wait_t 10 ct_count_is 0 "$INST"
ok $? "no container runs"

# Both woken through the one gateway, at once.
curl -sS -o "$T/two" -w '%{http_code}' --max-time 60 -H 'Host: two.fn.localhost' \
    "$URL/" >"$T/two.code" &
c2=$!
curl -sS -o "$T/three" -w '%{http_code}' --max-time 60 \
    -H 'Host: three.fn.localhost' "$URL/" >"$T/three.code" &
c3=$!
wait "$c2" "$c3"
is "$(cat "$T/two.code") $(cat "$T/three.code")" "200 200" \
    "both woken through one gateway"
like "$(cat "$T/two")" '^two on node-2 pid=' "fn/two answers"
like "$(cat "$T/three")" '^three on node-3 pid=' "fn/three answers"

for s in two:node-2:127.0.0.2 three:node-3:127.0.0.3; do
	n=${s#*:}
	a=${n#*:}
	n=${n%%:*}
	s=${s%%:*}
	id=$(podman ps -q --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=$s")
	like "$id" '^[0-9a-f]{64}$' "fn/$s: one container"
	like "$(cat "$T/$s")" "host=$(echo "$id" | cut -c1-12)\$" \
	    "fn/$s: the answer came from it"
	is "$(ct_inspect "$id" '{{index .Config.Labels "hk.node"}}')" "$n" \
	    "fn/$s: made for $n"
	ep=$(ctl scale.sock '{"op":"status"}' "services.fn/$s.endpoint")
	is "$(ct_inspect "$id" '{{range $p, $b := .NetworkSettings.Ports}}{{range $b}}{{.HostIP}}:{{.HostPort}}{{end}}{{end}}')" \
	    "$ep" "fn/$s: published on $a, its endpoint ($ep)"
	like "$ep" "^$a:[0-9]+\$" "fn/$s: the node's address"
	is "$(curl -s --max-time 5 "http://$ep/direct" | cut -d' ' -f1-3)" \
	    "$s on $n" "fn/$s: answers there"
	like "$(hk ps | awk -v s="$s" '$2 == s')" \
	    "$(printf '^fn\t%s\trunning\t1\t%s\t' "$s" "$n")" \
	    "fn/$s: hk ps shows its node"
	run hk status "fn/$s"
	like "$out" "^placement: +node $n\$" "fn/$s: hk status: placement asked"
	like "$out" "^runs on: +$n\$" "fn/$s: hk status: where it runs"
done
grep -q "node=node-3: engine $U3, containers at 127.0.0.3 (slirp4netns)" \
    "$T/scale.log"
ok $? "node-3's containers are made by its own engine"
grep -q "service=fn/three: started container .* on node node-3 as nobody" \
    "$T/scale.log"
ok $? "hk-scale started fn/three on node-3"

is "$(get here.fn.localhost /)" 200 "a service without node_name"
like "$(ctl scale.sock '{"op":"status"}' "services.fn/here.endpoint")" \
    '^127\.0\.0\.1:[0-9]+$' "runs on the default node, at 127.0.0.1"
like "$(hk ps | awk '$2 == "here"')" "$(printf '^fn\there\trunning\t1\t%s\t' "$(hostname)")" \
    "hk ps: on this host"

# Neither node's hk-scale judges the other's containers: all three run.
is "$(ct_count "$INST" running)" 3 "three containers run, none swept"
grep -q "which no instance claims" "$T/scale.log"
ok $((!$?)) "none was taken for a stray"

stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 20 ct_count_is 0 "$INST"
ok $? "SIGTERM: every node's container is removed"
stop_pid "$events_pid"
grep -Eq 'Sanitizer|runtime error' "$T/scale.log"
ok $((!$?)) "no sanitizer report"
"$HK_TOP/scripts/podman-api" stop "$(cat "$T/engine3.pid")"
done_testing
