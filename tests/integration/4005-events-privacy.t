#!/bin/sh
# The request log never holds query strings, Authorization, Cookie or
# Proxy-Authorization values, or bodies, on SQLite and PostgreSQL: secrets
# sent through the real gateway (hk-activate, hk-scale, a Python function
# and hk-events, all real processes), on a cold start, a warm request, an
# unknown host and a refused request, are found nowhere in the store (a
# full dump) nor in any log; the requests themselves are recorded.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

EX=$HK_TOP/etc/examples/functions
Q=SECRETquery7731 A=SECRETauth5521 C=SECRETcookie9043 P=SECRETproxy1180
B=SECRETbody4467

# secret_request HOST: every secret at once.
secret_request() {
	gw_code "$1" "/hello?token=$Q&x=1" \
	    -H "Authorization: Bearer $A" -H "Cookie: session=$C" \
	    -H "Proxy-Authorization: Basic $P" -d "payload=$B"
}

# dump ENGINE: the whole store as text.
dump() {
	case $1 in
	sqlite)
		sqlite3 "$T/state.db" .dump
		cat "$T"/state.db* | tr -c '[:print:]\n' ' '
		;;
	postgres)
		pg_dump --data-only "$STORE"
		;;
	esac
}

for engine in $(engines); do
	rm -rf "$T/run" "$T"/*.log "$T"/state.db*
	if [ "$engine" = sqlite ]; then
		GW_STATE=sqlite://$T/state.db
	else
		new_store postgres privacy
		GW_STATE=$STORE
	fi
	gw_config
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.py]
command = ["python3", "$EX/hello.py"]
public = true
readiness = "http:/"
[services.py.serverless]
startup_timeout_seconds = 20
APP
	hk apply "$T/app.toml" >/dev/null
	daemon events hk-events -v && daemon scale hk-scale -v -g 2 &&
	    gw_start && wait_for 5 grep -q 'scale.sock: subscribed' "$T/gw.log"
	ok $? "$engine: hk-events, hk-scale and hk-activate are up"
	put_to_sleep fn/py
	ok $? "$engine: fn/py passed its gate and sleeps"

	is "$(secret_request py.fn.localhost)" 200 \
	    "$engine: a cold request with every secret is answered"
	is "$(secret_request py.fn.localhost)" 200 \
	    "$engine: and a warm one"
	is "$(secret_request nowhere.example)" 404 "$engine: an unknown host"
	hk stop fn/py >/dev/null
	is "$(secret_request py.fn.localhost)" 503 "$engine: a stopped service"
	export HAKOPOD_CONFIG
	wait_t 10 sh -c '[ "$(hk-events requests | wc -l)" -ge 4 ]'
	ok $? "$engine: the four requests are recorded"
	run hk-events requests
	like "$(echo "$out" | head -1)" \
	    '	fn/py	POST	py\.fn\.localhost	/hello	200	[0-9]+	[1-9][0-9]*	[1-9][0-9]*	[0-9]+	[0-9]+	ok	127\.0\.0\.1$' \
	    "$engine: the cold one, with its path, its wait, its wake and its client"
	like "$out" '	-	POST	nowhere\.example	/hello	404	' \
	    "$engine: the unknown host"
	like "$out" '	fn/py	POST	py\.fn\.localhost	/hello	503	' \
	    "$engine: the refused one"

	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	dump "$engine" >"$T/dump.txt"
	like "$(grep -c 'INSERT INTO\|COPY' "$T/dump.txt")" '^[1-9]' \
	    "$engine: the store dump has rows"
	grep -q '/hello' "$T/dump.txt"
	ok $? "$engine: and the requests' path"
	for s in "$Q" "$A" "$C" "$P" "$B"; do
		found=$(grep -l "$s" "$T/dump.txt" "$T"/*.log 2>/dev/null)
		is "$found" "" "$engine: ${s%%[0-9]*} found nowhere"
	done
done
pg_missing_is_failure
done_testing
