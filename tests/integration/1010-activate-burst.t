#!/bin/sh
# A burst that wakes a service: 60 requests at once to a sleeping Python
# http.server (ThreadingHTTPServer, listen backlog 5; max_concurrency 64).
# The gateway paces its new connections to the woken endpoint and reuses
# those that free up, so that it never overflows the backend's listen
# queue: every request is answered 200, the backend runs each exactly
# once, and the kernel counts no listen overflow meanwhile (in a network
# namespace of the test's own, so that other tests' sockets do not
# count).  Three rounds from sleep, then one to the warm service.
if [ -z "${HK_NETNS:-}" ]; then	# its own ListenOverflows counter
	HK_NETNS=1 exec unshare --net "$0" "$@"
fi
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

ip link set lo up

gw_config
cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$GW_FN/gw-backend.py"]
public = true
[services.web.environment]
GW_LOG = "$W/web.inv"
[services.web.serverless]
max_concurrency = 64
APP
hk apply "$T/app.toml" >/dev/null
e2e_start
ok $? "hk-events, hk-scale and hk-activate are up"

overflows() {
	tcpext ListenOverflows
}

# burst ROUND: 60 requests at once, each to its own path.
burst() {
	python3 - "$GW_PORT" "$1" <<'EOF'
import http.client, sys, threading
port, rnd = int(sys.argv[1]), sys.argv[2]
codes = [None] * 60
def one(i):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/slow/50/%s-%d" % (rnd, i),
                  headers={"Host": "web.fn.localhost"})
        codes[i] = c.getresponse().status
    except Exception as e:
        codes[i] = type(e).__name__
ts = [threading.Thread(target=one, args=(i,)) for i in range(60)]
for t in ts: t.start()
for t in ts: t.join()
print(" ".join(sorted(set(str(c) for c in codes))), codes.count(200))
EOF
}

invoked_once() {	# ROUND: each of its 60 paths invoked exactly once
	grep "invocation GET /slow/50/$1-" "$W/web.inv" | sort | uniq -c |
	    awk '$1 == 1 { n++ } END { print n + 0 }'
}

for round in a b c; do
	put_to_sleep fn/web
	ok $? "round $round: fn/web sleeps"
	before=$(overflows)
	is "$(burst $round)" "200 60" \
	    "round $round: 60 requests wake it, each answered 200"
	is "$(invoked_once $round)" 60 \
	    "round $round: the backend ran each exactly once"
	is "$(($(overflows) - before))" 0 \
	    "round $round: no listen overflow meanwhile"
done
before=$(overflows)
is "$(burst warm)" "200 60" "60 at once to the warm service: all 200"
is "$(invoked_once warm)" 60 "each run once"
is "$(($(overflows) - before))" 0 "no listen overflow"
is "$(count 'was not accepted' "$T/gw.log")" 0 \
    "no connection had to be retried"

stop_pid "$gw_pid"
stop_pid "$scale_pid"
stop_pid "$events_pid"

done_testing
