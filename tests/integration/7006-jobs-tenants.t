#!/bin/sh
# A run reaches exactly the service it names, whatever another app claims
# as a host (issue 32): hk-jobs sends every run as POST /fn/APP/SVC/ with
# the gateway's own address as Host.  No service may claim that address
# (hk apply refuses it, saying why); and one whose spec claims it anyway
# (applied while the gateway had another address, before it moved back
# with hk-activate -m) is not routed by it:
# the gateway says so, and its address routes by /fn/ path only, for runs
# and for clients.  On both stores.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# calls APP/SVC ID: how many times that service's handler saw run ID
calls() { grep -c "service=$1: jobs-fn: $2 " "$(outlog)"; }
app() {		# app NAME SERVICE [HOSTS]: a file with one function
	cat <<APP
schema_version = 1
name = "$1"

[services.$2]
command = ["python3", "$IFN/jobs-fn.py"]
public = true
${3:+hosts = $3}
[services.$2.serverless]
APP
}

one() {
	e=$1
	new_store "$e" tenants || { ok 1 "$e: store"; return; }
	rm -rf "$RUN" "$T"/*.log; mkdir -p "$RUN"
	idle_setup "$STORE"
	app alpha pub >"$T/alpha.toml"
	app gamma grab '["127.0.0.1"]' >"$T/gamma.toml"
	hk apply "$T/alpha.toml" >/dev/null
	ok $? "$e: app alpha, function pub, applied"

	run hk apply "$T/gamma.toml"
	is "$rc" 65 "$e: app gamma claiming the gateway's address: refused (65)"
	like "$err" "^$T/gamma.toml:7: services.grab.hosts: 127.0.0.1: the gateway's own address \\(serverless_address\\): it routes by /fn/ path only, for runs and for clients alike\$" \
	    "$e: ... saying why"
	# (the gateway moved there and back on purpose: hk-activate -m, 1017)
	HAKOPOD_SERVERLESS_ADDRESS=127.0.0.2:$PORT hk-activate -m 2>/dev/null &&
	    HAKOPOD_SERVERLESS_ADDRESS=127.0.0.2:$PORT hk apply \
	    "$T/gamma.toml" >/dev/null && hk-activate -m 2>/dev/null
	ok $? "$e: applied while the gateway had another address, it is stored"

	start_events && start_scale && start_gw && start_idle && start_jobs
	ok $? "$e: the daemons are ready"
	wait_t 10 grep -q "host=127.0.0.1: claimed by gamma/grab, but the gateway's own address routes by /fn/ path only" \
	    "$T/gw.log"
	ok $? "$e: the gateway says the claim is not routed"
	wait_t 10 scale_is alpha/pub sleeping && wait_t 10 scale_is gamma/grab sleeping
	ok $? "$e: both functions passed their gates and sleep"

	run hk invoke --wait --event '{"card": "4111-1111-1111-1111"}' alpha/pub
	id=$(echo "$err" | sed -n 's/^hk: run \([0-9a-f]\{16\}\)$/\1/p')
	is "$rc" 0 "$e: hk invoke --wait alpha/pub: exit 0"
	like "$out" "\"run\": \"$id\"" "$e: the answer is the run's"
	is "$(calls alpha/pub "$id")/$(calls gamma/grab "$id")" 1/0 \
	    "$e: pub saw the run once, grab never"
	is "$(grep -c 4111 "$(outlog)")" 1 "$e: the event reached pub alone"

	code=$(curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: 127.0.0.1:$PORT" -d x "$URL/fn/alpha/pub/c")
	is "$code" 200 "$e: a client naming the gateway by address reaches /fn/alpha/pub/"
	is "$(grep -c 'service=alpha/pub: jobs-fn: - POST /c x' "$(outlog)")" 1 \
	    "$e: ... pub answered it"
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 \
	    -H "Host: 127.0.0.1:$PORT" -d x "$URL/")
	is "$code" 404 "$e: and any other path of that Host is 404, not grab's"
	is "$(grep -c 'service=gamma/grab: jobs-fn:' "$(outlog)")" 0 \
	    "$e: grab was never invoked"

	for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
		stop_pid "$p"
	done
}

pg_missing_is_failure
for e in $(engines); do
	one "$e"
done
done_testing
