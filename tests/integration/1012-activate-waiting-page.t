#!/bin/sh
# hk-activate's waiting page (waiting_page_after_ms, hk.toml(5); the page
# file, waiting_page of hakopod.toml(5)): a browser's GET or HEAD parked
# longer than the threshold for a cold start gets the 503 page with
# Retry-After and no caching, while a script's GET (*/*, JSON) and a
# POST wait and get the service's answer; the wake goes on and the same
# browser request is then served; the page is counted in status and
# recorded; SIGHUP re-reads the page; a service without the key makes
# browsers wait too; hk validate checks the range.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

BE=$GW_FN/gw-backend.py
PAGE=$T/page.html
cp "$HK_TOP/etc/activate/waiting.html" "$PAGE"
gw_config "waiting_page = \"$PAGE\""
HTML='text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,'
HTML=$HTML'image/webp,*/*;q=0.8'	# Chromium's, shortened
svc() {	# svc NAME SLEEP [serverless lines]: sleeps SLEEP s, then listens
	cat <<APP

[services.$1]
command = ["sh", "-c", "sleep $2; exec python3 $BE"]
public = true
[services.$1.environment]
GW_LOG = "$W/$1.inv"
[services.$1.serverless]
startup_timeout_seconds = 10
${3:-}
APP
}
{
	printf 'schema_version = 1\nname = "fn"\n'
	svc slow 4 "waiting_page_after_ms = 500"
	svc plain 1.5
} >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
ok $? "hk apply takes waiting_page_after_ms"

e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
for s in slow plain; do
	put_to_sleep fn/$s
	ok $? "fn/$s passed its readiness gate and sleeps"
done

# curl_bg NAME [curl args...]: a request to fn/slow in the background;
# code and time in $T/NAME.out, body $T/NAME.body, head $T/NAME.head.
curl_bg() {
	_n=$1
	shift
	curl -sS -o "$T/$_n.body" -D "$T/$_n.head" \
	    -w '%{http_code} %{time_total}' --max-time 20 \
	    -H 'Host: slow.fn.localhost' "$@" >"$T/$_n.out" &
}
hdr() {	# hdr NAME HEADER
	tr -d '\r' <"$T/$1.head" | sed -n "s/^$2: //Ip" | tail -1
}
code() {
	cut -d' ' -f1 "$T/$1.out"
}

curl_bg script -H 'Accept: */*' "$GW_URL/script"
script=$!
curl_bg json -H 'Accept: application/json' "$GW_URL/json"
json=$!
curl_bg post -H "Accept: $HTML" -d x=1 "$GW_URL/post"
post=$!
curl_bg bare -H 'Accept:' "$GW_URL/bare"
bare=$!
req="HEAD /head HTTP/1.1\r\nHost: slow.fn.localhost\r\n"
gw_raw -t 2 "${req}Accept: $HTML\r\n\r\n" >"$T/head.raw" &
head=$!
curl_bg browser -H "Accept: $HTML" "$GW_URL/page?x=1"
browser=$!
wait "$browser"
parked4() {
	[ "$(gw_ctl '{"op":"status"}' services.fn/slow.state \
	    services.fn/slow.parked | tr '\n' ' ')" = "starting 4 " ]
}
wait_t 2 parked4
ok $? "the wake goes on; the other four wait, parked"
wait "$head"
like "$(cat "$T/browser.out")" '^503 (0\.[5-9]|[12]\.)' \
    "a browser's GET gets 503 after waiting_page_after_ms (500 ms)"
cmp -s "$T/browser.body" "$PAGE"
ok $? "with the page file as its body"
is "$(hdr browser content-type)" "text/html; charset=utf-8" "as HTML"
is "$(hdr browser retry-after)/$(hdr browser cache-control)" "1/no-store" \
    "with Retry-After: 1 and Cache-Control: no-store"
is "$(hdr browser content-length)" "$(wc -c <"$PAGE" | tr -d ' ')" \
    "and its length"
like "$(cat "$T/browser.body")" 'http-equiv="refresh"' \
    "the page refreshes itself"
tr -d '\r' <"$T/head.raw" | grep -v '^after ' >"$T/head.out"
is "$(sed -n '1p;/^Content-Type/p;/^Content-Length/p;$p' "$T/head.out")" \
    "HTTP/1.1 503 Service Unavailable
Content-Type: text/html; charset=utf-8
Content-Length: $(wc -c <"$PAGE" | tr -d ' ')
open" "a browser's HEAD: the same head, no body, the connection kept"

wait "$script" "$json" "$post" "$bare"
is "$(code script)/$(code json)/$(code post)/$(code bare)" 200/200/200/200 \
    "Accept */*, JSON, a browser's POST, no Accept: all wait for the service"
is "$(cat "$T/script.body")" "GET /script bytes=0" "and get its answer"
is "$(cat "$T/post.body")" "POST /post bytes=3" "the POST too"
like "$(cat "$T/script.out")" '^200 ([4-9]\.)' "after the 4 s start"
is "$(count 'service=fn/slow: wake sent' "$T/gw.log")" 1 \
    "one wake for the cold start"

curl_bg again -H "Accept: $HTML" "$GW_URL/page?x=1"
wait $!
is "$(code again)" 200 "the browser's next request is the service's"
is "$(cat "$T/again.body")" "GET /page bytes=0" "its own answer"
is "$(count 'invocation GET /page' "$W/slow.inv")" 1 \
    "the page's request never reached the service; the next did, once"
is "$(gw_ctl '{"op":"status"}' services.fn/slow.waiting_pages \
    services.fn/plain.waiting_pages waiting_pages)" "2
0
2" "status counts the pages, per service and in all"

# The request log has the page like any other answer.
has_page() {
	requests_json | grep -q '"outcome": "waiting_page"'
}
wait_t 5 has_page
ok $? "the page is in the request log"
requests_json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r["outcome"] == "waiting_page":
        # the loop reads its clock once a turn: a few ms early at most
        print(r["method"], r["path"], r["status"], r["wait_us"] >= 490000)
' | sort >"$T/recs.out"
is "$(cat "$T/recs.out")" "GET /page 503 True
HEAD /head 503 True" "with status 503 and the wait it had"

# SIGHUP: the page is read again.
put_to_sleep fn/slow
ok $? "fn/slow sleeps again"
sed 's/Starting up/Waking up, hold on/' "$HK_TOP/etc/activate/waiting.html" \
    >"$PAGE"
kill -HUP "$gw_pid"
wait_t 5 sh -c "[ \$(grep -c 'hk-activate: info: routes:' '$T/gw.log') -ge 2 ]"
curl_bg hup -H "Accept: $HTML" "$GW_URL/hup"
wait $!
is "$(code hup)" 503 "after SIGHUP, a browser still gets the page"
cmp -s "$T/hup.body" "$PAGE"
ok $? "the file as it is now, not as it was"
wait_t 10 state_is fn/slow running
ok $? "and the wake it started finishes"

# A service without the key: browsers wait as everyone does.
curl -sS -o "$T/plain.body" -w '%{http_code}' --max-time 20 \
    -H 'Host: plain.fn.localhost' -H "Accept: $HTML" "$GW_URL/p" \
    >"$T/plain.code"
is "$(cat "$T/plain.code")/$(cat "$T/plain.body")" "200/GET /p bytes=0" \
    "waiting_page_after_ms = 0 (the default): a browser waits"

# The page file: -n says what is wrong with it, and is not refused.
sed "s|^waiting_page = .*|waiting_page = \"$T/missing.html\"|" \
    "$T/hakopod.toml" >"$T/missing.toml"
run hk-activate -n -f "$T/missing.toml"
is "$rc" 0 "-n with a missing waiting_page: exit 0"
like "$err" "warning: waiting_page $T/missing.html: No such file or" \
    "with a warning naming it"
like "$err" "directory: the built-in page is used" \
    "and what the gateway does instead"

# The range, as hk validate checks it.
sed 's/waiting_page_after_ms = 500/waiting_page_after_ms = 300001/' \
    "$T/app.toml" >"$T/bad.toml"
run hk validate "$T/bad.toml"
is "$rc" 65 "hk validate: waiting_page_after_ms over 300000 is refused"
like "$err" 'serverless\.waiting_page_after_ms: must be between 0 and 300000' \
    "naming the key"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
events_clean
ok $? "hk-events took every record"
done_testing
