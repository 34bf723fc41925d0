#!/bin/sh
# replicas = 2 of an ordinary service with the container backend, against
# the suite's podman API service (its own when run alone) and the test
# image, on SQLite and PostgreSQL.  fn/wk listens on port 8080 in each
# container, each published on a host port of its own: two containers,
# labelled hk.replica 0 and 1, each answering at its endpoint with its
# own host name.  Replica 1's container killed behind hk-scale's back is
# replaced, replica 0's untouched.  hk-scale killed with SIGKILL and
# started again adopts both containers (same IDs).  replicas = 1 removes
# replica 1's container and restarts nothing.  A clean stop of hk-scale
# removes every container.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

# write_app R: fn/wk with replicas = R, applied
write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.wk]
image = "$IMAGE"
port = 8080
replicas = $1
APP
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

# rep FIELD: "N:value" of each row of fn/wk (hk ps --json)
rep() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["service"] == "wk":
        print(" ".join("%d:%s" % (i["replica"], i[sys.argv[1]])
                       for i in s["replicas"]))' "$1"
}
replicas_are() {
	[ "$(hk ps | awk -F '\t' '$2 == "wk" { print $8 }')" = "$1" ]
}
# cid N: the ID of the running container labelled hk.replica=N
cid() {
	for _c in $(ct_ids "$INST" running); do
		[ "$(ct_inspect "$_c" '{{index .Config.Labels "hk.replica"}}')" = "$1" ] &&
		    echo "$_c"
	done
}
# answers N: replica N's endpoint answers from its own container
answers() {
	_ep=$(rep endpoint | tr ' ' '\n' | sed -n "s/^$1://p")
	_id=$(cid "$1" | cut -c1-12)
	[ -n "$_ep" ] && [ -n "$_id" ] &&
	    curl -sS --max-time 10 "http://$_ep/" | grep -q "host=$_id\$"
}
# replaced N OLDID: replica N runs in another container, 2/2
replaced() {
	_c=$(cid "$1")
	[ -n "$_c" ] && [ "$_c" != "$2" ] && replicas_are 2/2
}

for engine in $(engines); do
	ct_config
	new_store "$engine" ctr
	# the store of this engine (a PostgreSQL URL holds & and |)
	_esc=$(printf '%s' "$STORE" | sed 's/[&|\\]/\\&/g')
	sed -i "s|^state = .*|state = \"$_esc\"|" "$T/hakopod.toml"
	start_events && start_scale
	ok $? "$engine: hk-events and hk-scale are ready"
	write_app 2
	is "$?" 0 "$engine: hk apply of replicas = 2 with backend container"
	wait_t 60 replicas_are 2/2
	ok $? "$engine: hk ps shows 2/2"
	INST=$(ct_install "$STORE")
	is "$(ct_count "$INST" running)" 2 "$engine: two containers run"
	c0=$(cid 0)
	c1=$(cid 1)
	ok $([ -n "$c0" ] && [ -n "$c1" ] && [ "$c0" != "$c1" ]; echo $?) \
	    "$engine: labelled hk.replica 0 and 1"
	wait_t 20 answers 0
	ok $? "$engine: replica 0 answers at its endpoint, from its container"
	wait_t 20 answers 1
	ok $? "$engine: replica 1 answers at its own, from its container"

	podman kill "$c1" >/dev/null 2>&1
	wait_t 60 replaced 1 "$c1"
	ok $? "$engine: replica 1's container killed: another replaces it"
	is "$(cid 0)" "$c0" "$engine: ... replica 0's untouched"
	c1=$(cid 1)

	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	start_scale
	ok $? "$engine: hk-scale starts again"
	wait_t 60 more_in "$T/scale.log" 'service=fn/wk: replica 1: adopted' 0
	ok $? "$engine: it adopts replica 1"
	wait_t 30 replicas_are 2/2
	is "$(cid 0) $(cid 1)" "$c0 $c1" "$engine: the same two containers"

	write_app 1
	is "$?" 0 "$engine: hk apply of replicas = 1"
	wait_t 60 ct_count_is 1 "$INST" running
	ok $? "$engine: one container runs"
	wait_t 30 replicas_are 1/1
	ok $? "$engine: hk ps shows 1/1"
	is "$(cid 0)" "$c0" "$engine: replica 0's container, not restarted"

	stop_pid "$scale_pid" 120
	wait_t 30 ct_count_is 0 "$INST"
	ok $? "$engine: a clean stop of hk-scale removes every container"
	stop_pid "$events_pid"
	: >"$T/scale.log"
done
pg_missing_is_failure
done_testing
