# lib/ev.sh - helpers of the 4xxx tests (hk-events), sourced after lib.sh.
EV_FN=$HK_TOP/tests/integration/fn
mkdir -p "$T/run"

# ev_config STORE [extra [server] lines...]: $T/hakopod.toml, exported.
ev_config() {
	_store=$1
	shift
	{
		echo '[server]'
		echo "state = \"$_store\""
		echo "runtime_dir = \"$T/run\""
		for _l in "$@"; do
			echo "$_l"
		done
	} >"$T/hakopod.toml"
	HAKOPOD_CONFIG=$T/hakopod.toml
	export HAKOPOD_CONFIG
}

# ev_start: hk-events, ready (pid in $events_pid, stderr in $T/events.log).
ev_start() {
	daemon events hk-events "$@"
}

# ev_send MODE ARGS...: ev-send.py to our events.sock.
ev_send() {
	python3 "$EV_FN/ev-send.py" "$T/run/events.sock" "$@"
}

# jcount: the length of the JSON array on stdin.
jcount() {
	python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}

# nrows events|requests [query flags...]: rows the query modes see (one
# TSV line each: no field holds a newline).
nrows() {
	_what=$1
	shift
	if [ "$_what" = events ]; then
		hk-events list -n 0 "$@" | wc -l | tr -d ' '
	else
		hk-events requests -n 0 "$@" | wc -l | tr -d ' '
	fi
}

# rows_are N events|requests [flags...] (for wait_for)
rows_are() {
	_want=$1
	shift
	[ "$(nrows "$@")" = "$_want" ]
}
