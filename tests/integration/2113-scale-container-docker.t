#!/bin/sh
# The container backend against a real Docker engine (Debian's docker.io,
# make check's scripts/docker-engine, or one of the test's own), on SQLite
# and PostgreSQL, as 2101 runs it against podman: seed 000's example
# validates, applies, passes its readiness gate and sleeps; a request
# through the gateway wakes it and is answered by a fresh container
# (labelled, on the host's network at the port hk-scale gave it, as
# nobody, no-new-privileges, size small), whose output is in hk-scale's
# log; it sleeps again after idle_seconds (container removed,
# HTTPIdleSleep); three simultaneous POSTs while it sleeps wake it once,
# and the container's own log (docker logs) shows three handler
# invocations.  SIGTERM of hk-scale removes its containers.  Then
# container_network = "slirp4netns", podman's, on Docker: every start
# fails with Docker's reason, and a request is answered 503.
#
# The engine runs without a bridge (scripts/docker-engine: no iptables,
# nothing routed to a private range), so containers use the host's
# network, container_network = "host", and the example's "port = 8080"
# becomes "port = 0": hk-scale picks a free port on 127.0.0.1 and gives
# it as PORT (8080 on the host would be one port for every test at once).
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
CT_ENGINE=docker
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"
is "$(ct_cli image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null | cut -c1-6)" \
    sha256 "and loaded into the Docker engine"
like "$(curl -sf --unix-socket "${U#unix://}" http://localhost/v1.41/version)" \
    '"ApiVersion":"1\.41"' "the engine is Docker's own, API 1.41"
pg_missing_is_failure
S=http-functions/api
H=api.http-functions.localhost

# posts: three simultaneous POSTs through the gateway; "CODE CODE CODE".
posts() {
	for _i in 1 2 3; do
		curl -sS -o "$T/post$_i" -w '%{http_code}' --max-time 60 \
		    -H "Host: $H" --data "post-$_i" "$URL/post" \
		    >"$T/post$_i.code" &
		eval "_c$_i=\$!"
	done
	wait "$_c1" "$_c2" "$_c3"
	echo "$(cat "$T/post1.code") $(cat "$T/post2.code") $(cat "$T/post3.code")"
}

for st in $(engines); do
	rm -rf "$RUN" "$T"/*.log
	mkdir -p "$RUN"
	new_store "$st" docker
	CT_STORE=$STORE
	ct_config "time_unit_ms = 10"

	# Seed 000's example, word for word but for the image and the port.
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "http-functions"

[services.api]
image = "$IMAGE"
port = $CT_PORT
public = true
size = "small"
replicas = 1
# node_name = "worker-eu-1" # Optional placement

[services.api.serverless]
min_replicas = 0
idle_seconds = 300
startup_timeout_seconds = 60
request_timeout_seconds = 60
max_concurrency = 16
APP
	run hk validate "$T/app.toml"
	is "$rc $out" \
	    "0 $T/app.toml: app http-functions: 1 services, 1 serverless: OK" \
	    "$st: seed 000's example validates"
	run hk apply "$T/app.toml"
	is "$rc" 0 "$st: and applies"

	start_all
	ok $? "$st: hk-events, hk-scale, hk-activate and hk-idle are ready"
	INST=$(ct_install "$STORE")
	like "$INST" '^[0-9a-f]{32}$' "$st: hk-scale recorded the installation's ID"

	wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
	ok $? "$st: the new service passes its readiness gate"
	wait_t 20 ct_asleep "$S"
	ok $? "$st: then sleeps"
	wait_t 10 ct_count_is 0 "$INST"
	ok $? "$st: and its container is removed"

	# A request wakes it; hk-idle held meanwhile (as in 2101).
	kill -STOP "$idle_pid"
	is "$(get "$H" /x)" 200 "$st: a request through the gateway wakes it"
	ID=$(ct_ids "$INST" running)
	like "$ID" '^[0-9a-f]{64}$' "$st: one container runs"
	like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$(hostname)\$" \
	    "$st: and answers, from the host's network"
	is "$(ct_inspect "$ID" '{{index .Config.Labels "hk.app"}} {{index .Config.Labels "hk.service"}} {{index .Config.Labels "hk.revision"}} {{index .Config.Labels "hk.installation"}}')" \
	    "http-functions api 1 $INST" \
	    "$st: labelled with installation, app, service and revision"
	is "$(ct_inspect "$ID" '{{.Config.User}} {{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.SecurityOpt}} {{.HostConfig.NetworkMode}}')" \
	    "65534:65534 536870912 1000000000 [no-new-privileges] host" \
	    "$st: as nobody, size small, no-new-privileges, host network"
	pid=$(ct_inspect "$ID" '{{.State.Pid}}')
	is "$(grep -E '^(Uid|CapEff|NoNewPrivs):' "/proc/$pid/status" | tr -s '\t' ' ' | tr '\n' ' ')" \
	    "Uid: 65534 65534 65534 65534 CapEff: 0000000000000000 NoNewPrivs: 1 " \
	    "$st: its processes: nobody, no capability, no_new_privs"
	ep=$(ctl scale.sock '{"op":"status"}' "services.$S.endpoint")
	is "$(ct_inspect "$ID" '{{range .Config.Env}}{{println .}}{{end}}' | sed -n 's/^PORT=/127.0.0.1:/p')" \
	    "$ep" "$st: its endpoint is 127.0.0.1:PORT, the PORT it was given"
	wait_t 10 out_grep "service=$S: ct-fn: GET /x 200\$"
	ok $? "$st: its output is in hk-scale's log"
	wait_t 5 events_reach 1 HTTPIdleWake "$S"
	ok $? "$st: HTTPIdleWake recorded"

	# It sleeps after idle_seconds.
	kill -CONT "$idle_pid"
	wait_t 20 ct_asleep "$S"
	ok $? "$st: it sleeps after idle_seconds"
	wait_t 10 ct_count_is 0 "$INST"
	ok $? "$st: its container stopped and removed"
	ct_exists "$ID"
	ok $((!$?)) "$st: (that one, $(echo "$ID" | cut -c1-12), is gone)"
	wait_t 5 events_reach 1 HTTPIdleSleep "$S"
	ok $? "$st: HTTPIdleSleep recorded"

	# Three simultaneous POSTs while it sleeps: one wake, three
	# invocations.
	is "$(posts)" "200 200 200" "$st: three simultaneous POSTs are answered"
	is "$(cat "$T/post1" "$T/post2" "$T/post3")" "hello got 6 bytes
hello got 6 bytes
hello got 6 bytes" "$st: each by the handler"
	ID2=$(ct_ids "$INST")
	is "$(echo "$ID2" | grep -c .)" 1 "$st: by one container"
	ok "$([ "$ID2" != "$ID" ]; echo $?)" "$st: a fresh one: it woke again"
	is "$(ct_cli logs "$ID2" 2>/dev/null | grep '^ct-fn: POST' | sort | tr '\n' ' ')" \
	    "ct-fn: POST /post 200 body=post-1 ct-fn: POST /post 200 body=post-2 ct-fn: POST /post 200 body=post-3 " \
	    "$st: the container's own log shows three invocations, one each"
	wait_t 5 events_reach 2 HTTPIdleWake "$S"
	is "$(events_of HTTPIdleWake "$S")" 2 "$st: one more HTTPIdleWake, for the three"

	stop_pid "$idle_pid"
	stop_pid "$gw_pid"
	stop_pid "$scale_pid" 120
	wait_t 10 ct_count_is 0 "$INST"
	ok $? "$st: SIGTERM: hk-scale removes its containers before it exits"
	stop_pid "$events_pid"
	is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
	    "$st: no sanitizer report"
done

# container_network = "slirp4netns" is podman's: on Docker, every start
# fails with the engine's reason (hakopod.toml(5)), answered 503 at once.
rm -rf "$RUN" "$T"/*.log
mkdir -p "$RUN"
CT_STORE=sqlite://$T/slirp.db
CT_NETWORK=slirp4netns
ct_config
cat >"$T/slirp.toml" <<APP
schema_version = 1
name = "slirp"

[services.api]
image = "$IMAGE"
port = 8080
public = true
[services.api.serverless]
APP
run hk apply "$T/slirp.toml"
is "$rc" 0 "container_network = slirp4netns on Docker: applies"
start_events && start_scale && start_gw
ok $? "hk-events, hk-scale and hk-activate are ready"
INST=$(ct_install "$STORE")
wait_t 30 grep -q "service=slirp/api: unable to start revision 1: start: network slirp4netns:port_handler=slirp4netns not found" \
    "$T/scale.log"
ok $? "its start fails with Docker's reason"
wait_t 10 ct_count_is 0 "$(ct_install "$STORE")"
ok $? "and its container is removed"
wait_t 10 eval '[ "$(get api.slirp.localhost /)" = 503 ]'
ok $? "a request is answered 503"
like "$(cat "$T/body")" '^service failed to start: start: network slirp4netns:port_handler=slirp4netns not found' \
    "with that reason"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
stop_pid "$events_pid"
done_testing
