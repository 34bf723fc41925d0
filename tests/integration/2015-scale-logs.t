#!/bin/sh
# Each service's output goes to a log of its own that hk-scale keeps
# (service_log_dir/APP/SERVICE/current and rotated @TIME.s files), and "hk
# logs" shows it with the time, revision and instance of each line: -n,
# --since, and -f across a sleep and a new wake.  The log is bounded
# (service_log_size x service_log_files), and hk-scale's stderr has only
# hk-scale's own messages.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

plan 22

new_store sqlite logs
mkdir -m 755 "$T/logs"
scale_operator "$T/hakopod.toml" "$STORE" "service_log_size = 4096
service_log_files = 3
service_log_dir = \"$T/logs\""
export HAKOPOD_CONFIG="$T/hakopod.toml"
{
	printf 'schema_version = 1\nname = "l"\n'
	fn_service web '[services.web.serverless]'
	cat <<'APP'

[services.chatty]
command = ["sh", "-c", 'i=0; while [ $i -lt 300 ]; do echo "chatty line $i padded to be a little longer"; i=$((i + 1)); done; echo done; exec sleep 1000']
readiness = "socket"
APP
} >"$T/app.toml"
run hk apply "$T/app.toml"
is "$rc" 0 "the application is applied"
daemon scale hk-scale -g 1
ok $? "hk-scale starts"
D=$T/logs	# service_log_dir, not the runtime_dir's logs

ctl '{"op":"wake","service":"l/web"}' >/dev/null
wait_for 10 state_is l/web running
ok $? "l/web is woken"
pid1=$(status_of l/web pid)
ep=$(status_of l/web endpoint)
get "http://$ep/one" >/dev/null
wait_for 5 grep -q 'GET /one' "$D/l/web/current"
ok $? "the function's line is in its log"
test ! -e "$T/run/logs/l/web"
ok $? "... under service_log_dir, not under runtime_dir"
run hk logs l/web
like "$out" "^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z rev=1 inst=pid:$pid1 .*request \"GET /one HTTP/1\.1\" 200" \
    "hk logs shows it with time, revision and instance"
ok $(grep -c 'GET /one' "$T/scale.log") "hk-scale's stderr does not have it"
like "$(cat "$T/scale.log")" 'service=l/web: ready at' "hk-scale's own messages stay there"
is "$(stat -c %a "$D/l/web") $(stat -c %a "$D/l/web/current")" "750 640" \
    "the directory is 0750, the file 0640"

get "http://$ep/two" >/dev/null
wait_for 5 grep -q 'GET /two' "$D/l/web/current"
run hk logs -n 1 l/web
is "$(echo "$out" | wc -l)" 1 "-n 1: one line"
like "$out" 'GET /two' "... the last one"
run hk logs --since 10m l/web
like "$out" 'GET /one' "--since 10m has the lines"
run hk logs --since 2999-01-01T00:00:00Z l/web
is "$out" "" "--since a future time: none"
run hk logs --since yesterday l/web
is "$rc" 64 "--since a word: usage error"

: >"$T/follow.out"
bg hk logs -f -n 0 l/web >"$T/follow.out"
fpid=$last_pid
ctl '{"op":"sleep","service":"l/web"}' >/dev/null
wait_for 10 state_is l/web sleeping
ok $? "l/web sleeps"
ctl '{"op":"wake","service":"l/web"}' >/dev/null
wait_for 10 state_is l/web running
pid2=$(status_of l/web pid)
get "http://$(status_of l/web endpoint)/three" >/dev/null
wait_for 5 grep -q 'GET /three' "$T/follow.out"
ok $? "-f shows a line printed after a sleep and a new wake"
like "$(grep 'GET /three' "$T/follow.out")" "rev=1 inst=pid:$pid2 " \
    "... from the new instance"
ok $(grep -c 'GET /one' "$T/follow.out") "-f -n 0 shows no earlier line"
stop_pid "$fpid"

wait_for 10 grep -q 'done' "$D/l/chatty/current"
ok $? "the chatty service printed all of its lines"
n=$(ls "$D/l/chatty" | wc -l)
big=$(find "$D/l/chatty" -type f -size +4096c | wc -l)
is "$n:$big" "3:0" "rotation keeps 3 files of at most 4096 bytes"
run hk logs -n all l/chatty
like "$(echo "$out" | tail -2 | head -1)" 'chatty line 299 ' \
    "the newest lines are kept, in order"
like "$(echo "$out" | head -1)" 'chatty line [1-9][0-9]{2} ' \
    "the oldest are gone"
stop_pid "$scale_pid"
done_testing
