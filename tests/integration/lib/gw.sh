# lib/gw.sh - shell helpers of the hk-activate tests (1*-activate-*.t and
# 9*-e2e-*.t), sourced after tests/integration/lib.sh.

WAIT_PAUSE=0.05	# the pace these tests have always polled at

GW_FN=$HK_TOP/tests/integration/fn

# gw_config [extra [server] lines...]: a fresh operator config on a free
# port, with the store $GW_STATE (default: a new SQLite file); exports
# HAKOPOD_CONFIG, sets GW_PORT and GW_URL.
gw_config() {
	GW_PORT=$(free_port)
	GW_URL=http://127.0.0.1:$GW_PORT
	mkdir -p "$T/run"
	{
		echo '[server]'
		echo "serverless_address = \"127.0.0.1:$GW_PORT\""
		echo "state = \"${GW_STATE:-sqlite://$T/state.db}\""
		echo "runtime_dir = \"$T/run\""
		for _l in "$@"; do
			echo "$_l"
		done
	} >"$T/hakopod.toml"
	HAKOPOD_CONFIG=$T/hakopod.toml
	export HAKOPOD_CONFIG
}

# gw_start [flags]: hk-activate, ready (pid in $gw_pid, log $T/gw.log).
gw_start() {
	daemon gw hk-activate -v "$@"
}

# gw_ctl JSON [FIELD...] / scale_ctl ...: one request to a control socket.
gw_ctl() {
	python3 "$GW_FN/gw-ctl.py" "$T/run/activate.sock" "$@"
}

scale_ctl() {
	python3 "$GW_FN/gw-ctl.py" "$T/run/scale.sock" "$@"
}

# gw_code HOST PATH [curl args...]: prints the status code; the body is in
# $T/body, the response head in $T/headers.
gw_code() {
	_h=$1
	_p=$2
	shift 2
	curl -sS -o "$T/body" -D "$T/headers" -w '%{http_code}' \
	    --max-time 30 -H "Host: $_h" "$@" "$GW_URL$_p"
}

# gw_header NAME: a header of the last gw_code response.
gw_header() {
	tr -d '\r' <"$T/headers" | sed -n "s/^$1: //Ip" | tail -1
}

# gw_raw [-t S] [-p S] PART...: gw-raw.py against the gateway.
gw_raw() {
	python3 "$GW_FN/gw-raw.py" "$GW_PORT" "$@"
}

# count PATTERN FILE: lines of FILE matching PATTERN (0 if none or absent).
count() {
	if [ -f "$2" ]; then
		grep -c -- "$1" "$2"
	else
		echo 0
	fi
}

# e2e_start: hk-events, hk-scale and hk-activate, all ready (pids in
# $events_pid, $scale_pid, $gw_pid; logs in $T/events.log ...).
e2e_start() {
	daemon events hk-events -v &&
	    daemon scale hk-scale -v -g 2 &&
	    gw_start &&
	    wait_for 5 grep -q 'scale.sock: subscribed' "$T/gw.log"
}

# gw_state SERVICE: the gateway's view of a service's state.
gw_state() {
	gw_ctl '{"op":"status"}' "services.$1.state" 2>/dev/null
}

state_is() {
	[ "$(gw_state "$1")" = "$2" ]
}


# put_to_sleep SERVICE: what hk-idle does: fence at the gateway, then sleep
# through hk-scale; returns once the gateway saw the down.
put_to_sleep() {
	wait_t 20 state_is "$1" running &&
	    [ "$(gw_ctl "{\"op\":\"fence\",\"service\":\"$1\",\"idle_seconds\":0}")" = '{"ok":true}' ] &&
	    [ "$(scale_ctl "{\"op\":\"sleep\",\"service\":\"$1\"}")" = '{"ok":true}' ] &&
	    wait_t 5 state_is "$1" sleeping
}

# events_of KIND SERVICE [list flags...]: how many such events
# "hk-events list --json" shows.
events_of() {
	_k=$1
	_s=$2
	shift 2
	hk-events list --json -n 0 --kind "$_k" --service "$_s" "$@" |
	    python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}

# events_reach N KIND SERVICE: at least N such events are in the store
# (for wait_t: hk-events writes its records in batches, every 50 ms).
events_reach() {
	[ "$(events_of "$2" "$3")" -ge "$1" ]
}

# requests_json: every request record, as "hk-events requests --json".
requests_json() {
	hk-events requests --json -n 0
}

# events_clean: hk-events (stopped) refused and dropped nothing it was
# sent: each record had the protocol's fields, and no others.
events_clean() {
	grep -q 'stopped: .* 0 malformed, 0 refused, 0 dropped;' \
	    "$T/events.log" && ! grep -q 'refused:' "$T/events.log"
}

# tcpext NAME: the kernel's TcpExt counter NAME (/proc/net/netstat) in this
# network namespace.
tcpext() {
	awk -v k="$1" '/^TcpExt:/ {
		if (!n) { for (i = 1; i <= NF; i++) name[i] = $i; n = 1 }
		else for (i = 1; i <= NF; i++) if (name[i] == k) print $i }' \
	    /proc/net/netstat
}
