#!/bin/sh
# An engine error at adoption is not a missing container (hk-scale(8),
# Instances in the store and adoption).  hk-scale, killed with SIGKILL
# beside a running container, starts again and finds the container in
# its node's list; the inspect that follows fails (a 500 from a relay in
# front of podman's API service, tests/integration/lib/engine-fault.py,
# as an engine slow under load or a dropped connection would).
#
#	- Two failures: hk-scale asks again, a second apart, and adopts the
#	  same container, which answers; nothing is started twice.
#	- More failures than it asks (CT_ADOPT_TRIES, 5): it says so, takes
#	  the container as gone, starts a new one and removes the old: one
#	  container, never two.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
WAIT_PAUSE=0.1

FAULT="$T/fault.sock"
echo 0 >"$T/fails"
: >"$T/faults.log"
python3 "$HK_TOP/tests/integration/lib/engine-fault.py" "$FAULT" \
    "${U#unix://}" "$T/fails" "$T/faults.log" 2>"$T/fault.err" &
_pids="$_pids $!"
wait_t 10 test -S "$FAULT"
ok $? "a relay that fails inspects on demand, before $U"

svc_ids() {
	ct_cli ps -aq --no-trunc --filter "label=hk.installation=$INST" \
	    --filter "label=hk.service=$1" 2>/dev/null | sort
}
one_running() {
	[ "$(svc_ids warm | grep -c .)" -eq 1 ] &&
	    [ "$(ct_count "$INST")" -eq 1 ] && state_is fn/warm running
}
faults() { grep -c . "$T/faults.log"; }

for engine in $(engines); do
	new_store "$engine" ctadopt || { ok 1 "$engine: store"; continue; }
	scale_operator "$T/hakopod.toml" "$STORE" "container_engine = \"unix://$FAULT\"
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
APP
	hk apply "$T/app.toml" >/dev/null
	ok $? "$engine: applied"
	rm -f "$T/scale.log"
	: >"$T/faults.log"
	daemon scale hk-scale -v -g 2
	ok $? "$engine: hk-scale starts, its engine behind the relay"
	INST=$(ct_install "$STORE")
	wait_t 60 one_running
	ok $? "$engine: warm runs in one container"
	WARM=$(svc_ids warm)
	wep=$(status_of fn/warm endpoint)
	is "$(get "http://$wep/a" | cut -d' ' -f1)" hello "$engine: and answers at $wep"

	# Two inspects fail: asked again, adopted.
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	echo 2 >"$T/fails"
	before=$(grep -c . "$T/scale.log")
	daemon scale hk-scale -v -g 2
	ok $? "$engine: killed, hk-scale starts again; the next 2 inspects fail"
	short=$(echo "$WARM" | cut -c1-12)
	wait_t 60 grep -q "service=fn/warm: adopted container $short at $wep, revision 1" \
	    "$T/scale.log"
	ok $? "$engine: the same container is adopted, at its endpoint" ||
	    tail -n 30 "$T/scale.log" | sed 's/^/#   /'
	is "$(faults)" 2 "$engine: after two inspects that failed"
	is "$(grep -c "service=fn/warm: unable to inspect container $short: .*: asking again" "$T/scale.log")" 2 \
	    "$engine: hk-scale says it asks again, each time"
	is "$(svc_ids warm)" "$WARM" "$engine: one container, the same"
	is "$(get "http://$wep/b" | cut -d' ' -f1)" hello "$engine: it answers"
	tail -n +$((before + 1)) "$T/scale.log" | grep -q 'service=fn/warm: started'

	ok $((!$?)) "$engine: nothing was started meanwhile"

	# More failures than it asks: taken as gone, replaced, never doubled.
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	: >"$T/faults.log"
	echo 5 >"$T/fails"
	daemon scale hk-scale -v -g 2
	ok $? "$engine: killed again; the next 5 inspects fail"
	wait_t 60 grep -q "service=fn/warm: unable to inspect container $short, which the list of node .* names: .*: taken as gone" \
	    "$T/scale.log"
	ok $? "$engine: after 5 it says the container is taken as gone"
	wait_t 90 eval 'one_running && [ "$(svc_ids warm)" != "$WARM" ]'
	ok $? "$engine: a new container runs, and the old one is removed"
	is "$(faults)" 5 "$engine: five inspects failed"
	nep=$(status_of fn/warm endpoint)
	is "$(get "http://$nep/c" | cut -d' ' -f1)" hello "$engine: the new one answers"

	stop_pid "$scale_pid" 120
	wait_t 20 ct_count_is 0 "$INST"
	ok $? "$engine: SIGTERM: no container is left"
	grep -Eq 'Sanitizer|runtime error' "$T/scale.log"
	ok $((!$?)) "$engine: no sanitizer report" ||
	    grep -E -A40 'Sanitizer|runtime error' "$T/scale.log" | sed 's/^/#   /'
done
pg_missing_is_failure
done_testing
