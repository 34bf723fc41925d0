#!/bin/sh
# hk-scale killed with SIGKILL beside its containers, on SQLite and
# PostgreSQL: while a container service is starting (its row says
# starting, its container is being created or starts slowly), while
# another runs, and at once after a wake.  Each restart finds the
# installation's containers by label: the running one is adopted (the
# same container, still answering), the starting one is stopped and
# removed, and nothing is left that no instance claims; no service ever
# has two containers once it settles, and SIGTERM leaves none.
# fn/slow's start lasts until the test releases it: its command waits
# for /tmp/go in its container, which the test makes by the engine's exec
# once it has seen what it looks at (as fn/held does on the host).  Against
# podman's API service; 2115 runs it against Docker's engine
# (CT_ENGINE=docker, lib/ct.sh).
. tests/integration/lib.sh
. tests/integration/lib/scale.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
# Each wait polls the engine: a tenth of a second between polls leaves the
# CPU to the containers.
WAIT_PAUSE=0.1


# svc_ids SERVICE: the IDs of fn/SERVICE's containers in $INST
svc_ids() {
	ct_cli ps -aq --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=$1" 2>/dev/null | sort
}
svc_count_is() {
	[ "$(svc_ids "$2" | grep -c .)" -eq "$1" ]
}
# release_slow: each of fn/slow's containers that runs, and that the
# test has not released yet, goes on (an exec makes its /tmp/go).
released=
release_slow() {
	for _id in $(ct_cli ps -q --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=slow" --filter status=running 2>/dev/null); do
		case " $released " in *" $_id "*) continue ;; esac
		ct_cli exec "$_id" /usr/bin/python3 -c 'open("/tmp/go", "w")' \
		    >/dev/null 2>&1 && released="$released $_id"
	done
	return 0
}
# settled: every container of the installation is one hk-scale knows: the
# running instances of warm and slow, and nothing else.
settled() {
	[ "$(ct_count "$INST")" -eq "$(ct_count "$INST" running)" ] &&
	    svc_count_is 1 warm && svc_count_is 1 slow &&
	    state_is fn/warm running && state_is fn/slow running
}
released_settled() {
	release_slow
	settled
}

for engine in $(engines); do
	new_store "$engine" ctrestart || { ok 1 "$engine: store"; continue; }
	scale_operator "$T/hakopod.toml" "$STORE" "container_engine = \"$U\"
container_network = \"$CT_NETWORK\""
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.warm]
image = "$IMAGE"
port = $CT_PORT
public = true
[services.warm.serverless]
min_replicas = 1

[services.slow]
image = "$IMAGE"
command = [$CT_HELD]
port = $CT_PORT
public = true
[services.slow.environment]
GREETING = "one"
[services.slow.serverless]
min_replicas = 1
startup_timeout_seconds = 120
APP
	hk apply "$T/app.toml" >/dev/null
	ok $? "$engine: applied"
	rm -f "$T/scale.log"
	daemon scale hk-scale -v -g 2
	ok $? "$engine: hk-scale starts"
	INST=$(ct_install "$STORE")
	wait_t 30 state_is fn/warm running
	ok $? "$engine: warm runs"
	WARM=$(svc_ids warm)
	wep=$(status_of fn/warm endpoint)
	is "$(get "http://$wep/a" | cut -d' ' -f1)" hello "$engine: and answers at $wep"
	wait_t 20 svc_count_is 1 slow
	SLOW=$(svc_ids slow)
	is "$(status_of fn/slow state)" starting "$engine: slow is starting (held), its container there"
	like "$(instance fn/slow)" '^starting ' "$engine: its row says starting"

	# SIGKILL while slow starts and warm runs.
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	is "$(ct_inspect "$WARM" '{{.State.Running}}')" true \
	    "$engine: killed: warm's container runs on"
	is "$(get "http://$wep/b" | cut -d' ' -f1)" hello "$engine: and answers"
	daemon scale hk-scale -v -g 2
	ok $? "$engine: hk-scale starts again"
	wait_t 10 grep -q "service=fn/warm: adopted container $(echo "$WARM" | cut -c1-12) at $wep, revision 1" \
	    "$T/scale.log"
	ok $? "$engine: warm's container is adopted, at its endpoint"
	wait_t 10 grep -q "service=fn/slow: stopping container $(echo "$SLOW" | cut -c1-12), left starting by an earlier run" \
	    "$T/scale.log"
	ok $? "$engine: slow's, left starting, is stopped"
	# The next start of slow, held as well, is released once it runs.
	wait_t 40 released_settled
	ok $? "$engine: then each service has one container, running, and nothing else is left"
	is "$(svc_ids warm)" "$WARM" "$engine: warm's is the same container"
	ct_exists "$SLOW"
	ok $((!$?)) "$engine: slow's first one is removed"
	is "$(get "http://$wep/c" | cut -d' ' -f1)" hello "$engine: warm still answers"
	wait_t 10 out_grep "service=fn/warm: ct-fn: GET /c 200"
	ok $? "$engine: and its output is followed again"

	# SIGKILL at once after a new revision of slow is asked for: its row
	# says starting, its container may not be created yet (and if it is,
	# it is held).
	sed 's/GREETING = "one"/GREETING = "two"/' "$T/app.toml" >"$T/app2.toml"
	hk apply "$T/app2.toml" >/dev/null
	ctl '{"op":"reload"}' >/dev/null
	wait_t 10 grep -q "service=fn/slow: revision 1 -> 2" "$T/scale.log"
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	daemon scale hk-scale -v -g 2
	ok $? "$engine: killed during a new revision's start, hk-scale starts again"
	wait_t 40 released_settled
	ok $? "$engine: settled: one container a service, nothing left over"
	is "$(ct_inspect "$(svc_ids slow)" '{{index .Config.Labels "hk.revision"}}')" 2 \
	    "$engine: slow runs its new revision"
	stays() {
		_end=$(($(date +%s%3N) + $1))
		while [ "$(date +%s%3N)" -lt "$_end" ]; do
			settled || return 1
			sleep 0.2
		done
	}
	stays 2000
	ok $? "$engine: and stays so (no late container turns up)"

	stop_pid "$scale_pid" 120
	wait_t 10 ct_count_is 0 "$INST"
	ok $? "$engine: SIGTERM: no container is left"
	grep -Eq 'Sanitizer|runtime error' "$T/scale.log"
	ok $((!$?)) "$engine: no sanitizer report" ||
	    grep -E -A40 'Sanitizer|runtime error' "$T/scale.log" | sed 's/^/#   /'
	ct_count_is 0 "$INST" || tail -n 20 "$T/scale.log" | sed 's/^/#   /' 
done
pg_missing_is_failure
done_testing
