#!/bin/sh
# The benches' hk candidate, bench/bench-gateway, starts and serves what
# the benches send: in proxy mode a request with "Host: 127.0.0.1" and
# with "Host: localhost" reaches the bench's backend through the gateway;
# in cold mode the first request wakes the sleeping function and is
# answered by it.  make bench is not part of make check, so a change to
# the gateway's rules that breaks the candidate is caught here.
. tests/integration/lib.sh

IFN=$HK_TOP/tests/integration/fn
B=$T/bench
mkdir -p "$B"

# The bench's backend: Python's http.server on a free port, as nginx
# serves the benches' GET /.
echo hello >"$B/index.html"
BP=$(free_port)
python3 -m http.server "$BP" --bind 127.0.0.1 --directory "$B" \
    >"$T/backend.log" 2>&1 &
_pids="$_pids $!"
up() { curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$1/"; }
wait_t 30 up "$BP"
ok $? "the backend answers on 127.0.0.1:$BP"

# gateway MODE PORT ARGS...: bench-gateway in a process group of its own,
# as the benches run it; its pid (the group's) in $gw.
gateway() {
	_m=$1 _p=$2
	shift 2
	HK_BUILD=$HK_BUILD setsid "$HK_TOP/bench/bench-gateway" "$_m" "$_p" \
	    "$@" >"$T/gw-$_m.out" 2>&1 &
	gw=$!
	_groups="$_groups $gw"
}
# Each group is stopped at exit whatever happened: the daemons write to
# files, not to the test's output, where the cleanup of lib.sh looks.
_groups=
trap 'for _g in $_groups; do env kill -s KILL -- "-$_g" 2>/dev/null; done; _cleanup' EXIT
stop_group() {
	env kill -s TERM -- "-$1" 2>/dev/null
	wait_t 30 ended "$1" || env kill -s KILL -- "-$1" 2>/dev/null
}
ended() { ! alive "$1"; }

GP=$(free_port)
gateway proxy "$GP" "$BP" "$B"
wait_t 60 up "$GP"
ok $? "bench-gateway proxy: the gateway answers on 127.0.0.1:$GP" ||
    sed 's/^/# /' "$T/gw-proxy.out"
for h in 127.0.0.1 localhost; do
	is "$(curl -s --max-time 10 -H "Host: $h" "http://127.0.0.1:$GP/")" \
	    hello "Host: $h reaches the backend through the gateway"
done
stop_group "$gw"
ok $? "... and stops with its process group"

CP=$(free_port)
FP=$(free_port)
gateway cold "$CP" "$FP" "$B" python3 "$IFN/scale-http.py"
# listening PORT: in LISTEN, seen without a connection (one would wake)
listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }
wait_t 60 listening "$CP"
ok $? "bench-gateway cold: the gateway listens on $CP"
code=$(curl -s -o "$T/cold.body" -w '%{http_code}' --max-time 60 \
    -H 'Host: 127.0.0.1' "http://127.0.0.1:$CP/")
is "$code" 200 "bench-gateway cold: the first request wakes the function" ||
    sed 's/^/# /' "$T/gw-cold.out"
stop_group "$gw"
done_testing
