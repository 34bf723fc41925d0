# gw-lib.sh - shell helpers of the hk-activate tests (1*-activate-*.t and
# 9*-e2e-*.t), sourced after tests/integration/lib.sh.

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

# bg_ready NAME CMD...: a helper that prints "ready" when it is; waits
# 10 s at most.  Its pid is in ${NAME}_pid, its stderr in $T/NAME.log.
bg_ready() {
	_n=$1
	shift
	rm -f "$T/$_n.fifo"
	mkfifo "$T/$_n.fifo"
	"$@" >"$T/$_n.fifo" 2>>"$T/$_n.log" &
	_pids="$_pids $!"
	eval "${_n}_pid=$!"
	_got=$(timeout 10 head -n 1 "$T/$_n.fifo")
	[ "$_got" = ready ]
}

# count PATTERN FILE: lines of FILE matching PATTERN (0 if none or absent).
count() {
	if [ -f "$2" ]; then
		grep -c -- "$1" "$2"
	else
		echo 0
	fi
}

# e2e_start: events.sock stand-in, hk-scale and hk-activate, all ready.
e2e_start() {
	bg_ready events python3 "$GW_FN/gw-events.py" "$T/run" \
	    "$T/events.out" &&
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

# wait_t SECONDS CMD...: polls CMD every 50 ms until it succeeds, for at
# most SECONDS of wall time (wait_for counts turns, too slow a clock for
# a command that itself takes time).
wait_t() {
	_end=$(($(date +%s%3N) + $1 * 1000))
	shift
	while ! "$@" 2>/dev/null; do
		[ "$(date +%s%3N)" -ge "$_end" ] && return 1
		sleep 0.05
	done
	return 0
}

# put_to_sleep SERVICE: what hk-idle does: fence at the gateway, then sleep
# through hk-scale; returns once the gateway saw the down.
put_to_sleep() {
	wait_t 20 state_is "$1" running &&
	    [ "$(gw_ctl "{\"op\":\"fence\",\"service\":\"$1\",\"idle_seconds\":0}")" = '{"ok":true}' ] &&
	    [ "$(scale_ctl "{\"op\":\"sleep\",\"service\":\"$1\"}")" = '{"ok":true}' ] &&
	    wait_t 5 state_is "$1" sleeping
}

# events_of KIND SERVICE: how many such events hk-scale sent.
events_of() {
	grep -c "\"kind\": *\"$1\".*\"service\": *\"$2\"" "$T/events.out"
}
