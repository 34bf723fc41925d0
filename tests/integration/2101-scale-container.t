#!/bin/sh
# The container backend, end to end, against the suite's podman API service
# (its own when run alone; 2118 runs this against Docker's engine, on the
# host's network: lib/ct.sh) and the test image: seed 000's example as it is
# written, with the locally built image, validates, applies, passes its
# readiness gate and sleeps; a request through the gateway wakes it and
# is answered by a fresh container (labelled, published on 127.0.0.1
# through slirp4netns, or on the host's network, as nobody, no-new-privileges, 512 MiB), whose
# output is in hk-scale's log; it sleeps again after idle_seconds (the
# container stopped and removed, HTTPIdleSleep); three simultaneous POSTs
# while it sleeps wake it once, and the container's own log shows three
# handler invocations.  An image that cannot be pulled is the start's
# reason, and the gateway answers 503 at once; readiness = healthcheck
# waits for the image's HEALTHCHECK; a container killed behind hk-scale's
# back is seen from the events stream; hk stop removes it; a new revision
# replaces the old container once it is ready.
# time_unit_ms = 10: idle_seconds = 300 lasts 3 s.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/ct.sh

ct_engine || done_testing
IMAGE=$("$HK_TOP/scripts/test-image")
ok $? "the test image is there: $IMAGE"

ct_config "time_unit_ms = 10"

# release_health: each running container of health that the test has not
# released yet goes on (an exec makes its /tmp/go: CT_HELD, lib/ct.sh).
released=
release_health() {
	for _id in $(ct_svc_ids "$INST" health running); do
		case " $released " in *" $_id "*) continue ;; esac
		ct_cli exec "$_id" /usr/bin/python3 -c 'open("/tmp/go", "w")' \
		    >/dev/null 2>&1 && released="$released $_id"
	done
	return 0
}
health_up() {
	release_health
	scale_is http-functions/health running
}

# Seed 000's example, word for word but for the image (and on Docker's
# host network the port: hk-scale picks one, lib/ct.sh).
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
is "$rc $out" "0 $T/app.toml: app http-functions: 1 services, 1 serverless: OK" \
    "seed 000's example validates"
run hk apply "$T/app.toml"
is "$rc" 0 "and applies"
run hk status http-functions/api
like "$out" '^backend: +container$' "hk status: the container backend"

start_all
ok $? "hk-events, hk-scale, hk-activate and hk-idle are ready"
INST=$(ct_install "$STORE")
like "$INST" '^[0-9a-f]{32}$' "hk-scale recorded the installation's ID"
S=http-functions/api
H=api.http-functions.localhost

# The readiness gate: started once, then put to sleep.
wait_t 60 grep -q "service=$S: ready at 127.0.0.1:" "$T/scale.log"
ok $? "the new service passes its readiness gate"
wait_t 20 ct_asleep "$S"
ok $? "then sleeps"
wait_t 10 ct_count_is 0 "$INST"
ok $? "and its container is removed"

# A request wakes it.  hk-idle is held (SIGSTOP) while the test looks at
# the container, which idle_seconds (3 s here) would otherwise end on a
# busy machine; it goes on below, where the sleep is the point.
kill -STOP "$idle_pid"
is "$(get "$H" /x)" 200 "a request through the gateway wakes it"
ID=$(ct_ids "$INST" running)
like "$ID" '^[0-9a-f]{64}$' "one container runs"
like "$(cat "$T/body")" "^hello pid=[0-9]+ host=$(ct_host "$ID")\$" \
    "and answers"
is "$(ct_inspect "$ID" '{{index .Config.Labels "hk.app"}} {{index .Config.Labels "hk.service"}} {{index .Config.Labels "hk.revision"}} {{index .Config.Labels "hk.installation"}}')" \
    "http-functions api 1 $INST" \
    "labelled with installation, app, service and revision"
is "$(ct_inspect "$ID" '{{.Config.User}} {{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.SecurityOpt}}')" \
    "65534:65534 536870912 1000000000 [no-new-privileges]" \
    "as nobody, size small (512 MiB, 1 CPU), no-new-privileges"
pid=$(ct_inspect "$ID" '{{.State.Pid}}')
is "$(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs):' "/proc/$pid/status" | tr -s '\t' ' ' | tr '\n' ' ')" \
    "Uid: 65534 65534 65534 65534 CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 " \
    "its processes: nobody, no capability, no_new_privs"
like "$(ct_inspect "$ID" '{{range .Config.Env}}{{println .}}{{end}}')" \
    "^PORT=$([ "$CT_PORT" = 0 ] && echo '[0-9]+' || echo "$CT_PORT")\$" \
    "with PORT"
run hk ps
like "$out" "$(printf '^http-functions\tapi\trunning\t1\t%s\t' "$(hostname)")" \
    "hk ps: running on this node"
ep=$(python3 "$IFN/gw-ctl.py" "$RUN/scale.sock" '{"op":"status"}' \
    "services.$S.endpoint")
if [ "$CT_NETWORK" = host ]; then
	is "$(ct_inspect "$ID" '{{range .Config.Env}}{{println .}}{{end}}' | sed -n 's/^PORT=/127.0.0.1:/p')" \
	    "$ep" "its endpoint is 127.0.0.1:PORT, on the host's network ($ep)"
else
	is "$(ct_inspect "$ID" '{{range $p, $b := .NetworkSettings.Ports}}{{range $b}}{{.HostIP}}:{{.HostPort}}{{end}}{{end}}')" \
	    "$ep" "its endpoint is the port published on 127.0.0.1 ($ep)"
fi
wait_t 10 out_grep "service=$S: ct-fn: GET /x 200\$"
ok $? "its output is in hk-scale's log, as an exec instance's"
out_grep "service=$S: ct-fn: stderr works\$"
ok $? "stderr too"
run hk logs http-functions/api
like "$out" "rev=1 inst=container:$(echo "$ID" | cut -c1-12) ct-fn: GET /x 200\$" \
    "hk logs shows them, with revision and container"
wait_t 5 events_reach 1 HTTPIdleWake "$S"
ok $? "HTTPIdleWake recorded"

# It sleeps after idle_seconds.
kill -CONT "$idle_pid"
wait_t 20 ct_asleep "$S"
ok $? "it sleeps after idle_seconds"
wait_t 10 ct_count_is 0 "$INST"
ok $? "its container stopped and removed"
ct_exists "$ID"
ok $((!$?)) "(that one, $(echo "$ID" | cut -c1-12), is gone)"
wait_t 5 events_reach 2 HTTPIdleSleep "$S"
ok $? "HTTPIdleSleep recorded"
is "$(hk ps | awk '$2 == "api" { print $3 }')" sleeping "hk ps says sleeping"

# Three simultaneous POSTs while it sleeps: one wake, three invocations.
for i in 1 2 3; do
	curl -sS -o "$T/post$i" -w '%{http_code}' --max-time 30 \
	    -H "Host: $H" --data "post-$i" "$URL/post" >"$T/post$i.code" &
	eval "c$i=\$!"
done
wait "$c1" "$c2" "$c3"
is "$(cat "$T/post1.code") $(cat "$T/post2.code") $(cat "$T/post3.code")" \
    "200 200 200" "three simultaneous POSTs are answered"
is "$(cat "$T/post1" "$T/post2" "$T/post3")" "hello got 6 bytes
hello got 6 bytes
hello got 6 bytes" "each by the handler"
ID2=$(ct_ids "$INST")
is "$(echo "$ID2" | grep -c .)" 1 "by one container"
ok "$([ "$ID2" != "$ID" ]; echo $?)" "a fresh one: it woke again"
is "$(ct_cli logs "$ID2" 2>/dev/null | grep -c '^ct-fn: POST /post 200 body=post-[123]$')" 3 \
    "the container's own log shows three handler invocations"
is "$(ct_cli logs "$ID2" 2>/dev/null | grep '^ct-fn: POST' | sort | tr '\n' ' ')" \
    "ct-fn: POST /post 200 body=post-1 ct-fn: POST /post 200 body=post-2 ct-fn: POST /post 200 body=post-3 " \
    "one for each request"
wait_t 5 events_reach 2 HTTPIdleWake "$S"
is "$(events_of HTTPIdleWake "$S")" 2 "one more HTTPIdleWake, for the three"

# An image that is not there and cannot be pulled (given by digest: hk
# apply would refuse a tag it cannot pin); readiness by the image's
# HEALTHCHECK; a service kept up, then stopped.
cat >>"$T/app.toml" <<APP

[services.nopull]
image = "127.0.0.1:9/hk-missing@sha256:0000000000000000000000000000000000000000000000000000000000000000"
public = true
[services.nopull.serverless]

[services.health]
image = "$IMAGE"
command = [$CT_HELD]
public = true
readiness = "healthcheck"
[services.health.environment]
GREETING = "hello"
[services.health.serverless]
min_replicas = 1
APP
run hk apply "$T/app.toml"
is "$rc" 0 "a service with a missing image and one on healthcheck applied"
wait_t 30 grep -q "service=http-functions/nopull: unable to start revision 1: pull 127.0.0.1:9/hk-missing@sha256:0000000000000000000000000000000000000000000000000000000000000000: " \
    "$T/scale.log"
ok $? "the missing image: its pull fails, the start's reason"
# Past the backoff of that failure (1 s), a request parks and wakes it.
t0=$(($(date +%s%3N) + 1500))
while [ "$(date +%s%3N)" -lt "$t0" ]; do sleep 0.1; done
is "$(get nopull.http-functions.localhost /)" 503 \
    "a request that wakes it gets 503 when the pull fails"
t1=$(date +%s%3N)
ok "$([ $((t1 - t0)) -lt 30000 ]; echo $?)" \
    "as soon as it fails ($((t1 - t0)) ms; startup_timeout_seconds is 60)"
like "$(cat "$T/body")" '^service failed to start: pull 127\.0\.0\.1:9/hk-missing@sha256:0{64}: .*connection refused' \
    "with the pull's reason"
t0=$(date +%s%3N)
is "$(get nopull.http-functions.localhost /)" 503 "the next one, in the backoff"
t1=$(date +%s%3N)
ok "$([ $((t1 - t0)) -lt 1000 ]; echo $?)" "is answered at once ($((t1 - t0)) ms)"

# Its function is held (CT_HELD) until its HEALTHCHECK has failed.
wait_t 60 grep -q 'service=http-functions/health: health check: exit status 1' "$T/scale.log"
ok $? "its HEALTHCHECK fails while the function is held"
is "$(scale_state http-functions/health)" starting "and it is not ready"
wait_t 30 health_up
ok $? "the healthcheck service is running, once released"
hc=$(grep -n 'service=http-functions/health: health check passed' "$T/scale.log" | head -1 | cut -d: -f1)
rd=$(grep -n 'service=http-functions/health: ready at' "$T/scale.log" | head -1 | cut -d: -f1)
ok "$([ "${hc:-0}" -gt 0 ] && [ "${rd:-0}" -gt "$hc" ]; echo $?)" \
    "ready once the image's HEALTHCHECK passed, run by hk-scale"
is "$(get health.http-functions.localhost /h)" 200 "and it answers"
# Its own: api's may not have gone to sleep yet.
HID=$(ct_svc_ids "$INST" health running)

# A container that dies behind hk-scale's back: the events stream says so.
ct_cli kill --signal KILL "$HID" >/dev/null 2>&1
wait_t 5 grep -q "service=http-functions/health: container $(echo "$HID" | cut -c1-12) killed by signal 9" \
    "$T/scale.log"
ok $? "a container killed with SIGKILL: seen, as killed by signal 9"
wait_t 30 ct_svc_count_is 1 "$INST" health running
HID2=$(ct_svc_ids "$INST" health running)
ok "$([ -n "$HID2" ] && [ "$HID2" != "$HID" ]; echo $?)" \
    "min_replicas = 1: a fresh container replaces it"
ct_exists "$HID"
ok $((!$?)) "the dead one is removed"
wait_t 30 health_up
HID=$HID2
run hk stop http-functions/health
wait_t 20 scale_is http-functions/health stopped
ok $? "hk stop stops it"
wait_t 10 ct_count_is 0 "$INST"
ok $? "and removes its container"
ct_exists "$HID"
ok $((!$?)) "(that one)"
run hk start http-functions/health
wait_t 30 health_up
ok $? "hk start starts it again"

# A new revision: its container starts beside the running one, which is
# removed once the new one is ready.
HID=$(ct_svc_ids "$INST" health running)
sed 's/^GREETING = "hello"$/GREETING = "revision two"/' \
    "$T/app.toml" >"$T/app2.toml"
run hk apply "$T/app2.toml"
is "$rc" 0 "a new revision of the healthcheck service is applied"
wait_t 30 eval 'release_health; grep -q "service=http-functions/health: revision 2 replaces 1" \
    "$T/scale.log"'
ok $? "it replaces the running one once ready"
wait_t 10 ct_count_is 1 "$INST"
ok $? "one container is left"
ct_exists "$HID"
ok $((!$?)) "the old revision's is removed"
is "$(get health.http-functions.localhost /r2 && cut -d' ' -f1-2 "$T/body")" \
    "200revision two" "the new one answers"

stop_pid "$idle_pid"
stop_pid "$gw_pid"
stop_pid "$scale_pid" 120
wait_t 10 ct_count_is 0 "$INST"
ok $? "SIGTERM: hk-scale removes its containers before it exits"
stop_pid "$events_pid"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/scale.log")" 0 \
    "no sanitizer report"
done_testing
