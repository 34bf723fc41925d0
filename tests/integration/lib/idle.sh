# lib/idle.sh - shell helpers of the hk-idle tests (3*-idle-*.t), sourced
# after tests/integration/lib.sh.  Every daemon is real: hk-scale (exec
# backend), hk-activate, hk-idle and hk-events.  Time is shortened with
# time_unit_ms = 10: idle_seconds = 30 lasts 300 ms.

IFN=$HK_TOP/tests/integration/fn
RUN=$T/run
mkdir -p "$RUN"

# idle_setup STORE [extra [server] lines]: the operator config, exported
# as HAKOPOD_CONFIG; the gateway's port in $PORT, its URL in $URL.
idle_setup() {
	PORT=$(free_port)
	URL=http://127.0.0.1:$PORT
	cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "$1"
runtime_dir = "$RUN"
time_unit_ms = 10
${2:-}
CONF
	HAKOPOD_CONFIG=$T/hakopod.toml
	export HAKOPOD_CONFIG
}

# fn_svc NAME [serverless lines [IDLE_SECONDS]]: a service running
# idle-fn.py, idle_seconds = 30 unless given.
fn_svc() {
	cat <<SVC

[services.$1]
command = ["python3", "$IFN/idle-fn.py"]
public = true
[services.$1.serverless]
idle_seconds = ${3:-30}
${2:-}
SVC
}

# idle_apply TEXT: the application "fn" with the given services, applied.
idle_apply() {
	printf 'schema_version = 1\nname = "fn"\n%s\n' "$1" >"$T/app.toml"
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

# start_events / start_scale / start_gw / start_idle / start_jobs: ready, logs in
# $T/NAME.log, pids in ${NAME}_pid.
start_events() {
	daemon events hk-events -v
}

start_scale() {
	daemon scale hk-scale -v -g 2
}

# The gateway is up once it has subscribed to hk-scale.
start_gw() {
	_before=$(count_in "$T/gw.log" 'scale.sock: subscribed')
	daemon gw hk-activate -v || return 1
	wait_t 5 more_in "$T/gw.log" 'scale.sock: subscribed' "$_before" &&
	    return 0
	diag "hk-activate did not subscribe to hk-scale within 5 s; its log:"
	tail -n 15 "$T/gw.log" | sed 's/^/#   /'
	return 1
}

start_idle() {
	daemon idle hk-idle -v
}

# start_jobs: hk-jobs (runs through the gateway), after start_all.
start_jobs() {
	daemon jobs hk-jobs -v
}

# start_all: hk-events, hk-scale, hk-activate, hk-idle.
start_all() {
	start_events && start_scale && start_gw && start_idle
}

# count_in FILE PATTERN: lines matching (grep -E); 0 if none or absent.
count_in() {
	if [ -f "$1" ]; then
		grep -Ec -- "$2" "$1"
	else
		echo 0
	fi
}

# more_in FILE PATTERN N: more than N lines match.
more_in() {
	[ "$(count_in "$1" "$2")" -gt "$3" ]
}

# ctl SOCK JSON [FIELD...]: one request to $RUN/SOCK (gw-ctl.py).
ctl() {
	_s=$1
	shift
	python3 "$IFN/gw-ctl.py" "$RUN/$_s" "$@"
}

# scale_state / gw_state SERVICE: the state in hk-scale's or the gateway's
# status; scale_pid SERVICE: the pid of its instance ("null" if none).
scale_state() {
	ctl scale.sock '{"op":"status"}' "services.$1.state" 2>/dev/null
}

gw_state() {
	ctl activate.sock '{"op":"status"}' "services.$1.state" 2>/dev/null
}

scale_pid() {
	ctl scale.sock '{"op":"status"}' "services.$1.pid" 2>/dev/null
}

# scale_is / gw_is SERVICE STATE (for wait_t)
scale_is() {
	[ "$(scale_state "$1")" = "$2" ]
}

gw_is() {
	[ "$(gw_state "$1")" = "$2" ]
}

# ps_state NAME: the state "hk ps" prints for fn/NAME.
ps_state() {
	hk ps 2>/dev/null | awk -v n="$1" '$1 == "fn" && $2 == n { print $3 }'
}

# get HOST PATH: the status code; the body in $T/body.
get() {
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: $1" "$URL$2"
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

# gone PID: the process has exited (or is a zombie).
gone() {
	! alive "$1"
}

# asleep SERVICE PID: its instance PID is gone and it sleeps everywhere.
asleep() {
	gone "$2" && scale_is "$1" sleeping && gw_is "$1" sleeping
}


# stays_for MS STATE SERVICE PID: the instance PID stays up, and hk-scale
# says STATE, for MS milliseconds; fails as soon as it does not.
stays_for() {
	_end=$(($(date +%s%3N) + $1))
	while [ "$(date +%s%3N)" -lt "$_end" ]; do
		alive "$4" && scale_is "$3" "$2" || return 1
		sleep 0.05
	done
}
