#!/bin/sh
# [metrics]: every daemon serves GET /metrics on its own private address.
# Bad [metrics] input is refused (unknown key, bad address, the gateway's
# public listener).  With every daemon real, some traffic (a cold start,
# a 404, a run through hk-jobs, a stopped service's 503) is counted as
# sent; each scrape passes promtool check metrics; a Prometheus server
# started here scrapes all five and answers a query through its HTTP API.
# promtool and prometheus are required (Debian package prometheus): a
# missing tool fails, never skips.  One store (SQLite): what is counted
# does not depend on it.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

DAEMONS="activate scale idle events jobs"

for tool in promtool prometheus curl python3; do
	command -v "$tool" >/dev/null
	ok $? "$tool is installed"
done

# --- bad input ----------------------------------------------------------

# bad TEXT: the operator file [server] plus TEXT, checked by hk-scale -n.
bad() {
	printf '[server]\nserverless_address = "127.0.0.1:8082"\nstate = "sqlite://%s/x.db"\nruntime_dir = "%s"\n%s\n' \
	    "$T" "$RUN" "$1" >"$T/bad.toml"
	run hk-scale -n -f "$T/bad.toml"
}
bad '[metrics]
port = 9100'
is "$rc" 78 "an unknown key in [metrics]: exit 78"
like "$err" 'bad.toml:6: metrics.port: unknown key' "... with the file, line and key"
bad '[metrics]
scale = "127.0.0.1"'
like "$rc $err" '^78 .*bad.toml:6: metrics.scale: must be host:port' \
    "an address without a port is refused"
bad '[metrics]
idle = "127.0.0.1:99999"'
like "$rc $err" '^78 .*metrics.idle: port must be between 1 and 65535' \
    "a port out of range is refused"
bad '[metrics]
events = 9100'
like "$rc $err" '^78 .*metrics.events: must be a string' "a number is refused"
bad '[metrics]
activate = "127.0.0.1:8082"'
like "$rc $err" "^78 .*bad.toml:6: metrics.activate: must not be the gateway's public listener \(server.serverless_address = \"127.0.0.1:8082\"\)" \
    "the gateway's public address is refused for activate"
bad '[metrics]
activate = "0.0.0.0:8082"'
like "$rc $err" "^78 .*metrics.activate: must not be the gateway's public listener" \
    "... and so is a wildcard on its port"
run env HAKOPOD_SERVERLESS_LISTEN=127.0.0.1:9109 sh -c "printf '[server]\nstate = \"sqlite://$T/x.db\"\nruntime_dir = \"$RUN\"\n[metrics]\nactivate = \"127.0.0.1:9109\"\n' >'$T/bad.toml' && hk-activate -n -f '$T/bad.toml'"
like "$rc $err" "^78 .*metrics.activate: must not be the gateway's public listener \(server.serverless_listen" \
    "... and so is serverless_listen set from the environment"
bad '[metrics]
activate = "127.0.0.1:9101"
scale = "[::1]:9102"'
is "$rc" 0 "private addresses are accepted"
like "$(hk-scale -n -v -f "$T/bad.toml" 2>&1)" '^metrics.scale = "\[::1\]:9102" \(file\)$' \
    "-n -v shows them with their source"
like "$(hk-scale -n -v -f "$T/bad.toml" 2>&1)" '^metrics.jobs = "" \(default\)$' \
    "... and an unset one as the default"

# --- the stack ----------------------------------------------------------

STORE=sqlite://$T/state.db
idle_setup "$STORE"
MPORTS=
for d in $DAEMONS; do
	p=$(free_port)
	eval "MP_$d=$p"
	MPORTS="$MPORTS $p"
	printf '%s = "127.0.0.1:%s"\n' "$d" "$p"
done >"$T/metrics.toml"
{ echo '[metrics]'; cat "$T/metrics.toml"; } >>"$T/hakopod.toml"
idle_apply "
[services.echo]
command = [\"python3\", \"$IFN/jobs-fn.py\"]
public = true
[services.echo.serverless]
idle_seconds = 30"
ok $? "the function fn/echo is applied"
start_all && start_jobs
ok $? "hk-events, hk-scale, hk-activate, hk-idle, hk-jobs ready"
wait_t 10 scale_is fn/echo sleeping
ok $? "the function sleeps"

# scrape NAME: GET /metrics of that daemon into $T/NAME.prom (headers in
# $T/NAME.head); the status code.
scrape() {
	eval "_p=\$MP_$1"
	curl -sS -D "$T/$1.head" -o "$T/$1.prom" -w '%{http_code}' \
	    --max-time 10 "http://127.0.0.1:$_p/metrics"
}
# val NAME SERIES: the value of that series in the last scrape of NAME.
val() {
	awk -v k="$2" '$1 == k { print $2 }' "$T/$1.prom"
}
# post: one request to fn/echo through the gateway; the status code.
post() {
	curl -sS -o /dev/null -w '%{http_code}' --max-time 30 -X POST \
	    -H 'Host: echo.fn.localhost' --data '{"n": 1}' "$URL/"
}

for d in $DAEMONS; do
	is "$(scrape "$d")" 200 "$d: GET /metrics answers 200"
	like "$(cat "$T/$d.head")" 'Content-Type: text/plain; version=0.0.4; charset=utf-8' \
	    "$d: ... in the exposition format 0.0.4"
done
eval "_p=\$MP_activate"
is "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$_p/other")" 404 \
    "another path: 404"
is "$(curl -sS -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$_p/metrics")" 405 \
    "another method: 405"
like "$(curl -sS -D - -o /dev/null "http://127.0.0.1:$_p/metrics")" 'Connection: close' \
    "every answer closes the connection"
is "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: x' "$URL/metrics")" 404 \
    "the public listener has no /metrics"

# A scraper that sends nothing holds a slot, not the daemon.
python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(30)' "$_p" &
slow=$!
is "$(scrape activate)" 200 "a silent scraper does not block the next one"
kill "$slow" 2>/dev/null
wait "$slow" 2>/dev/null
# A head past 2048 bytes: 431 (or a reset, the rest unread), then closed.
big=$(python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 4000)
try:
    print(s.recv(64).split(b"\r\n")[0].decode() or "closed")
except ConnectionResetError:
    print("reset")' "$_p")
like "$big" '^(HTTP/1.1 431 Request Header Fields Too Large|reset)$' \
    "a request head over 2048 bytes is refused ($big)"
is "$(scrape activate)" 200 "... and the next scraper is served"

# traffic: three requests (the first a cold start), a 404, then the
# service sleeps again, a run through hk-jobs wakes it, a stopped
# service's 503
codes=
for i in 1 2 3; do
	codes="$codes $(post)"
done
is "$codes" " 200 200 200" "three requests to fn/echo: 200 (the first woke it)"
is "$(get nosuch.fn.localhost /)" 404 "an unknown host: 404"
wait_t 10 scale_is fn/echo sleeping
ok $? "fn/echo sleeps again (its fence granted)"
run hk invoke --wait --event '{"k": 1}' fn/echo
is "$rc" 0 "a run through hk-jobs succeeds (a second cold start)"
hk stop fn/echo >/dev/null 2>&1
wait_t 10 scale_is fn/echo stopped
ok $? "fn/echo is stopped"
is "$(post)" 503 "a stopped service: 503"

scrape activate >/dev/null
is "$(val activate 'hk_requests_total{service="fn/echo",code="2xx"}')" 4 \
    "activate: hk_requests_total 2xx of fn/echo = the 4 requests sent (3 + the run)"
is "$(val activate 'hk_requests_total{service="fn/echo",code="5xx"}')" 1 \
    "activate: ... 5xx = the one 503"
is "$(val activate 'hk_requests_total{service="",code="4xx"}')" 2 \
    "activate: the two 404s (an unknown host, /metrics on the public listener) count for no service"
is "$(val activate 'hk_gateway_answers_total{code="503"}')" 1 \
    "activate: the gateway's own 503 is counted by code"
is "$(val activate 'hk_gateway_answers_total{code="429"}')" 0 \
    "activate: ... and no 429"
is "$(val activate 'hk_wake_wait_seconds_count')" 2 \
    "activate: two waits for a cold start in the histogram"
is "$(val activate 'hk_wake_wait_seconds_bucket{le="+Inf"}')" 2 \
    "activate: ... its +Inf bucket is the count"
is "$(val activate hk_requests_in_flight) $(val activate hk_requests_parked)" \
    "0 0" "activate: nothing in flight, nothing parked"
is "$(val activate hk_request_records_dropped_total)" 0 \
    "activate: no request record dropped"
like "$(val activate 'hk_upstream_connect_failures_total{service="fn/echo"}')" \
    '^[0-9]+$' "activate: connect failures of fn/echo are shown"

scrape scale >/dev/null
is "$(val scale 'hk_starts_total{service="fn/echo"}')" 3 \
    "scale: three starts of fn/echo (its readiness gate after apply, two wakes)"
is "$(val scale 'hk_start_failures_total{service="fn/echo"}')" 0 "scale: no failure"
is "$(val scale 'hk_start_ready_seconds_count')" 3 "scale: three times to ready"
is "$(val scale 'hk_start_phase_seconds_count{phase="queue"}') $(val scale 'hk_start_phase_seconds_count{phase="spawn"}') $(val scale 'hk_start_phase_seconds_count{phase="port"}') $(val scale 'hk_start_phase_seconds_count{phase="ready"}')" \
    "2 3 3 3" "scale: the spawn, port and ready phases of each start, the queue of the two woken"
is "$(val scale 'hk_services{state="stopped"}') $(val scale 'hk_instances{state="running"}')" \
    "1 0" "scale: one service stopped, no instance running"

scrape idle >/dev/null
like "$(val idle 'hk_fences_total{result="granted"}')" '^[1-9][0-9]*$' \
    "idle: fences granted (it slept)"
like "$(val idle 'hk_fences_total{result="refused"}')" '^[0-9]+$' \
    "idle: fences refused are shown"

# hk-events writes in batches: every request reaches it
events_have() {
	scrape events >/dev/null &&
	    [ "$(val events 'hk_records_written_total{kind="request"}')" = 7 ]
}
wait_t 10 events_have
ok $? "events: hk_records_written_total request = the 7 requests"
like "$(val events 'hk_records_written_total{kind="event"}')" '^[1-9][0-9]*$' \
    "events: events written (the wakes, sleeps, stop)"
is "$(val events hk_records_dropped_total) $(val events hk_store_errors_total)" \
    "0 0" "events: nothing dropped, no store error"

scrape jobs >/dev/null
is "$(val jobs 'hk_runs_total{phase="Succeeded"}') $(val jobs 'hk_runs_total{phase="Failed"}')" \
    "1 0" "jobs: one run Succeeded, none Failed"
is "$(val jobs hk_runs_in_flight)" 0 "jobs: no run in flight"

for d in $DAEMONS; do
	promtool check metrics <"$T/$d.prom" >"$T/$d.promtool" 2>&1
	rc=$?
	ok "$rc" "$d: promtool check metrics passes"
	[ "$rc" -eq 0 ] || diag "$(cat "$T/$d.promtool")"
done
diag "activate: $(grep -c '^hk_' "$T/activate.prom") samples; promtool: $(cat "$T/activate.promtool")"

# --- a real Prometheus --------------------------------------------------

PP=$(free_port)
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n'
	printf 'scrape_configs:\n'
	for d in $DAEMONS; do
		eval "_p=\$MP_$d"
		printf '  - job_name: hk-%s\n    static_configs:\n' "$d"
		printf '      - targets: ["127.0.0.1:%s"]\n' "$_p"
	done
} >"$T/prometheus.yml"
promtool check config "$T/prometheus.yml" >"$T/promcfg.out" 2>&1
ok $? "promtool check config of the test's prometheus.yml"
prometheus --config.file="$T/prometheus.yml" \
    --storage.tsdb.path="$T/tsdb" --web.listen-address="127.0.0.1:$PP" \
    >"$T/prometheus.log" 2>&1 &
prom_pid=$!
prom_ready() { curl -sf "http://127.0.0.1:$PP/-/ready" >/dev/null; }
wait_t 30 prom_ready
ok $? "prometheus is ready on 127.0.0.1:$PP"

# query EXPR: the values of the instant vector, "job=value" sorted.
query() {
	curl -sS --max-time 5 -G "http://127.0.0.1:$PP/api/v1/query" \
	    --data-urlencode "query=$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
print(" ".join(sorted("%s=%s" % (r["metric"].get("job", r["metric"].get("service", "")), r["value"][1])
    for r in d["data"]["result"])))'
}
all_up() {
	[ "$(query 'up')" = "hk-activate=1 hk-events=1 hk-idle=1 hk-jobs=1 hk-scale=1" ]
}
wait_t 30 all_up
ok $? "prometheus scrapes all five daemons (up = 1)"
[ $? -eq 0 ] || diag "up: $(query up)"
counted() {
	[ "$(query 'hk_requests_total{service="fn/echo",code="2xx"}')" = "hk-activate=4" ]
}
wait_t 10 counted
ok $? "the API's /api/v1/query: hk_requests_total{service=\"fn/echo\",code=\"2xx\"} = 4"
[ $? -eq 0 ] ||
    diag "got: $(query 'hk_requests_total{service="fn/echo",code="2xx"}')"
diag "api/v1/query?query=hk_requests_total{service=\"fn/echo\"}: $(curl -sS -G \
    "http://127.0.0.1:$PP/api/v1/query" \
    --data-urlencode 'query=hk_requests_total{service="fn/echo"}')"
is "$(query 'sum(hk_runs_total{phase="Succeeded"})')" "=1" \
    "... and hk_runs_total of hk-jobs through it"
kill "$prom_pid"
wait "$prom_pid" 2>/dev/null

for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
	stop_pid "$p"
done
for d in scale idle events jobs; do
	eval "_p=\$MP_$d"
	curl -s --max-time 2 "http://127.0.0.1:$_p/metrics" >/dev/null
	is "$?" 7 "$d: stopped, its metrics listener is closed"
done
done_testing
