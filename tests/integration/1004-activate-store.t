#!/bin/sh
# hk-activate reads its routes and the desired state from the store, on
# SQLite and PostgreSQL: hosts and paths of public serverless services,
# hk stop / hk start, a reload over activate.sock, and a store that cannot
# be opened (exit 69).
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

for engine in $(engines); do
	new_store "$engine" gw
	GW_STATE=$STORE gw_config
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "shop"

[services.api]
command = ["python3", "api.py"]
port = 9
public = true
hosts = ["api.shop.test", "www.shop.test"]
[services.api.serverless]
startup_timeout_seconds = 5

[services.db]
command = ["sleep", "1000"]
APP
	hk apply "$T/app.toml" >/dev/null
	rm -f "$T/gw.log"
	gw_start
	ok $? "$engine: hk-activate starts"
	is "$(gw_code api.shop.test /)" 503 "$engine: first host routed"
	is "$(gw_code WWW.shop.test:80 /)" 503 "$engine: second host routed"
	is "$(gw_code x /fn/shop/api/)" 503 "$engine: path routed"
	is "$(gw_code db.shop.localhost /)" 404 "$engine: ordinary service not routed"
	hk stop shop/api >/dev/null 2>&1
	gw_code api.shop.test / >/dev/null
	is "$(cat "$T/body")" "service stopped" "$engine: hk stop reaches the gateway"
	hk start shop/api >/dev/null 2>&1
	gw_code api.shop.test / >/dev/null
	is "$(cat "$T/body")" "activation unavailable" "$engine: and hk start"
	is "$(gw_ctl '{"op":"reload"}')" '{"ok":true}' "$engine: reload"
	is "$(gw_ctl '{"op":"status","service":"shop/api"}' services.0.service \
	    requests_in_flight)" "shop/api
0" "$engine: status of one service"
	is "$(gw_ctl '{"op":"stop","service":"shop/nope"}')" \
	    '{"error":"unknown service","ok":false}' "$engine: stop of an unknown service"
	stop_pid "$gw_pid"
	like "$(cat "$T/gw.log")" 'routes: 2 hosts' "$engine: two hosts loaded"
done
pg_missing_is_failure

GW_STATE=sqlite:///nonexistent/dir/state.db gw_config
run hk-activate
is "$rc" 69 "a store that cannot be opened exits 69"
like "$err" 'unable to open store' "and says so"

done_testing
