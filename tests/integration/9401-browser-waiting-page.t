#!/bin/sh
# A real browser and the waiting page: headless Chromium (Debian's, driven
# by python3-selenium through chromedriver, fn/browser-wait.py) loads the
# URL of a service that sleeps and takes 4 s to start, sees the waiting
# page, and ends on the service's own answer without a click.  The
# screenshots of both pages are this test's output: they stay in
# $HK_TEST_OUT/9401-browser-waiting-page (default: under the build
# directory), named in TAP comments.  Chromium reaches 127.0.0.1 only.
# A missing browser, driver or Selenium fails the test: it does not skip.
#
# The whole test runs in a network namespace of its own, with loopback as
# its only interface: besides Chromium's flags (fn/browser-wait.py), that
# makes sure no byte of it can leave 127.0.0.0/8.
if [ -z "${HK_9401_NETNS:-}" ]; then
	HK_9401_NETNS=1 exec unshare --net -- sh -c \
	    'ip link set lo up && exec "$0"' "$0"
	echo "Bail out! unable to enter a network namespace (unshare --net)"
	exit 1
fi
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

OUT=${HK_TEST_OUT:-$HK_BUILD/test-output}/9401-browser-waiting-page
PY=/usr/bin/python3	# Debian's, which has python3-selenium
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] &&
    "$PY" -c 'import selenium' 2>/dev/null
ok $? "chromium, chromium-driver and python3-selenium are installed"
[ "$_tap_failed" -eq 0 ] || done_testing
rm -rf "$OUT"
mkdir -p "$OUT"

gw_config "waiting_page = \"$HK_TOP/etc/activate/waiting.html\""
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.slow]
command = ["sh", "-c", "sleep 4; exec python3 $GW_FN/gw-backend.py"]
public = true
[services.slow.environment]
GW_LOG = "$W/slow.inv"
[services.slow.serverless]
startup_timeout_seconds = 20
waiting_page_after_ms = 1000
APP
hk apply "$T/app.toml" >/dev/null
ok $? "hk apply: a service that takes 4 s to start, page after 1 s"
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"
put_to_sleep fn/slow
ok $? "fn/slow passed its readiness gate and sleeps"

# By its Host (Chromium maps *.localhost to 127.0.0.1 itself, and the
# helper's resolver rules say so too).
run "$PY" "$GW_FN/browser-wait.py" \
    "http://slow.fn.localhost:$GW_PORT/" "GET / bytes=0" "$OUT" 40
is "$rc" 0 "Chromium ends on the service's answer without a click"
[ "$rc" = 0 ] || diag "$err"
printf '%s\n' "$out" | sed 's/^/# /'
like "$out" '^waiting Starting up$' "it saw the waiting page first"
like "$out" '^final GET / bytes=0$' "and ended on the service's own page"
for f in waiting final; do
	[ -s "$OUT/$f.png" ] &&
	    [ "$(head -c 8 "$OUT/$f.png" | od -An -tx1 | tr -d ' \n')" = \
	    89504e470d0a1a0a ]
	ok $? "screenshot of the $f page: $OUT/$f.png"
done
pages=$(gw_ctl '{"op":"status"}' services.fn/slow.waiting_pages)
[ "$pages" -ge 1 ]
ok $? "the gateway sent the page ($pages times) while the service woke"
is "$(count 'invocation GET /$' "$W/slow.inv")" 1 \
    "the service saw the page's URL once: the load that it answered"
is "$(count 'service=fn/slow: wake sent' "$T/gw.log")" 1 \
    "one wake: the page's reloads joined it"
is "$(ip -o link | cut -d: -f2 | tr -d ' \n')/$(ip -4 route | wc -l)" lo/0 \
    "all of it in a network namespace with loopback only, no route"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"
done_testing
