# lib/scale.sh - sourced by the 2xxx tests after lib.sh: an operator config,
# an application file, and a real client of scale.sock.
FN=$HK_TOP/tests/integration/fn
SOCK=$T/run/scale.sock
mkdir -p "$T/run"

# scale_operator FILE STORE [extra [server] lines]
scale_operator() {
	cat >"$1" <<CONF
[server]
serverless_address = "127.0.0.1:8082"
state = "$2"
runtime_dir = "$T/run"
${3:-}
CONF
}

# fn_service NAME [extra lines]: a [services.NAME] running scale-http.py,
# public when the lines make it serverless (the gateway routes no other).
fn_service() {
	case ${2:-} in
	*"[services.$1.serverless]"*) _public='public = true' ;;
	*) _public= ;;
	esac
	cat <<SVC

[services.$1]
command = ["python3", "$FN/scale-http.py"]
$_public
${2:-}
SVC
}

# ctl JSON: one request, the reply on stdout (keys sorted)
ctl() {
	python3 "$FN/scale-client.py" "$SOCK" "$1"
}

# subscribe FILE: a subscriber appending one line per message to FILE
subscribe() {
	: >"$1"
	python3 "$FN/scale-client.py" --subscribe "$SOCK" "$1" &
	_pids="$_pids $!"
	sub_pid=$!
	wait_for 5 grep -q '"ok":true' "$1"
}

# status_of SERVICE FIELD: one field of that service in {"op":"status"}
status_of() {
	python3 "$FN/scale-client.py" --status "$SOCK" "$1" "$2"
}

# state_is SERVICE STATE (for wait_for)
state_is() {
	[ "$(status_of "$1" state)" = "$2" ]
}

# seen FILE PATTERN: a message of the subscriber matches (grep -E)
seen() {
	grep -Eq -- "$2" "$1"
}

# instance SERVICE: "state endpoint pid" of its row in the store (hk ps)
instance() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        i = s["instance"]
        print("none" if i is None else "%s %s %d" %
              (i["state"], i["endpoint"], i["pid"]))' "$1"
}

# pgrp PID: "PGRP SID" of a process (fields 5 and 6 of /proc/PID/stat)
pgrp() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f3,4
}

# get URL: the body, or nothing
get() {
	python3 -c '
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode(), end="")
except Exception as e:
    print("error: %s" % e)' "$1"
}

# dead PID: the process is gone (or a zombie)
dead() {
	! alive "$1"
}

# count FILE PATTERN: lines of FILE matching (grep -E)
count() {
	grep -Ec -- "$2" "$1" 2>/dev/null
}

# more_than N FILE PATTERN (for wait_for)
more_than() {
	[ "$(count "$2" "$3")" -gt "$1" ]
}

# events FILE: a receiver on events.sock appending one line per record
events() {
	: >"$1"
	python3 "$FN/scale-client.py" --events "$T/run/events.sock" "$1" &
	_pids="$_pids $!"
	wait_for 5 test -S "$T/run/events.sock"
}
