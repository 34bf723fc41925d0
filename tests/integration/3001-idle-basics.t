#!/bin/sh
# hk-idle on its own: the command line (usage = SYNOPSIS, -n, exit codes),
# time_unit_ms in the operator config, idle.sock (status, reload, stop,
# start, errors), readiness while hk-scale is absent, and the subscription
# made once it appears.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

run hk-idle -h
is "$rc $out" "0 usage: hk-idle [-nv] [-d fd] [-f config]" \
    "-h prints the synopsis and exits 0"
run hk-idle --help
is "$rc $out" "0 usage: hk-idle [-nv] [-d fd] [-f config]" "--help too"
run hk-idle -x
is "$rc $(echo "$err" | tail -n 1)" "64 usage: hk-idle [-nv] [-d fd] [-f config]" \
    "an unknown flag exits 64 with the usage"
run hk-idle extra
is "$rc" 64 "an argument exits 64"
run hk-idle -d 99
is "$rc" 64 "-d with a closed descriptor exits 64"

idle_setup "sqlite://$T/state.db"
run hk-idle -n
is "$rc $err" "0 configuration OK" "-n checks \$HAKOPOD_CONFIG"
err=$(hk-idle -n -v 2>&1)
like "$err" '^time_unit_ms = 10 \(file\)$' "-n -v shows time_unit_ms and its source"
like "$err" '^runtime_dir = ".*/run" \(file\)$' "and every other key"
sed -i 's/^time_unit_ms = 10$/time_unit_ms = 0/' "$T/hakopod.toml"
run hk-idle -n
is "$rc" 78 "time_unit_ms = 0 exits 78"
like "$err" 'hakopod.toml:[0-9]+: server.time_unit_ms: must be between 1 and 1000' \
    "with the key and its range"
run hk-idle -n -f "$T/nonexistent.toml"
is "$rc" 66 "a named file that does not exist exits 66"
cat >"$T/nostore.toml" <<CONF
[server]
state = "sqlite:///nonexistent/dir/state.db"
runtime_dir = "$RUN"
CONF
run hk-idle -f "$T/nostore.toml"
is "$rc" 69 "a store that cannot be opened exits 69"

idle_setup "sqlite://$T/state.db"
idle_apply "$(fn_svc a)$(fn_svc b 'min_replicas = 1')
[services.db]
command = [\"sleep\", \"60\"]"
ok $? "an application with two serverless services and an ordinary one"

start_idle
ok $? "hk-idle is ready while hk-scale is absent"
like "$(cat "$T/idle.log")" 'warning: scale.sock: hk-scale unavailable, nothing sleeps until it is back' \
    "and says so"
is "$(ctl idle.sock '{"op":"status"}')" \
    '{"gateway":true,"ok":true,"services":[{"awake":false,"busy_since":null,"deadline":null,"idle_seconds":30,"min_replicas":0,"service":"fn/a","step":"wait"},{"awake":false,"busy_since":null,"deadline":null,"idle_seconds":30,"min_replicas":1,"service":"fn/b","step":"wait"}],"subscribed":false,"time_unit_ms":10}' \
    "status: every serverless service, no timer"
is "$(ctl idle.sock '{"op":"bogus"}')" '{"error":"unknown op","ok":false}' \
    "an unknown op is an error"
is "$(ctl idle.sock '{"no":"op"}')" \
    '{"error":"op: missing or not a string","ok":false}' "so is a missing op"
like "$(ctl idle.sock 'not json')" '^\{"error":"invalid JSON: .*","ok":false\}$' \
    "and a message that is not JSON"
is "$(ctl idle.sock '{"op":"stop"}')" \
    '{"error":"service: missing or not a string","ok":false}' \
    "stop needs a service"

idle_apply "$(fn_svc a '' 40)$(fn_svc c)"
is "$(ctl idle.sock '{"op":"status"}' services.0.idle_seconds services.1.service)" \
    "40
fn/c" "hk apply: hk-idle reads the new policies (reload)"
is "$(ctl idle.sock '{"op":"reload"}')" '{"ok":true}' "reload answers ok"
is "$(ctl idle.sock '{"op":"start","service":"fn/a"}')" '{"ok":true}' \
    "start answers ok"

start_events && start_scale
ok $? "hk-events and hk-scale start"
wait_t 5 more_in "$T/idle.log" 'info: scale.sock: subscribed' 0
ok $? "hk-idle subscribes within its backoff"
is "$(count_in "$T/idle.log" 'warning: scale.sock')" 1 \
    "having warned once, not per attempt"
wait_t 5 sh -c "[ \"\$(python3 '$IFN/gw-ctl.py' '$RUN/idle.sock' '{\"op\":\"status\"}' services.fn/a.awake)\" = true ]"
ok $? "the ready of fn/a makes it awake"
before=$(date +%s%3N)
dl=$(ctl idle.sock '{"op":"status"}' services.fn/a.deadline)
after=$(date +%s%3N)
ok "$([ "$dl" -ge "$before" ] && [ "$dl" -le $((after + 400)) ]; echo $?)" \
    "with a deadline at most idle_seconds (400 ms) ahead"
wait_t 5 more_in "$T/idle.log" 'warning: activate.sock: the gateway is unavailable, nothing sleeps' 0
ok $? "the gateway is absent: hk-idle says so"
is "$(ctl idle.sock '{"op":"status"}' gateway services.fn/a.step)" "false
wait" "and waits a full period more"
ok "$(alive "$(scale_pid fn/a)"; echo $?)" "fn/a is still awake"

kill -HUP "$idle_pid"
wait_t 5 more_in "$T/idle.log" 'info: reloading' 0
ok $? "SIGHUP reloads"
kill -TERM "$idle_pid"
wait_t 5 gone "$idle_pid"
wait "$idle_pid"
is "$?" 0 "SIGTERM: exit 0"
ok "$([ ! -e "$RUN/idle.sock" ]; echo $?)" "idle.sock is removed"
is "$(grep -Ec 'Sanitizer|runtime error' "$T/idle.log")" 0 \
    "no sanitizer report from hk-idle"
stop_pid "$scale_pid"
stop_pid "$events_pid"
done_testing
