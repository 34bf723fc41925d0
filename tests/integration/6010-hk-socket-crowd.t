#!/bin/sh
# A daemon stays reachable for its operator however many idle peers hold
# connections to its control socket (issue 32): each keeps at most 256
# (ipc.h), closing the one idle the longest for a new one, never a
# subscriber; and with no descriptor left it refuses a connection rather
# than spin on its listener.  The daemons run with a soft limit of 1024
# descriptors, as systemd gives them; 1100 idle connections are held on
# each control socket in turn, then a status request on a new connection
# must be answered, four times, and the gateway must still wake a
# service through hk-scale (its subscription kept).
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

idle_setup "sqlite://$T/state.db"
idle_apply "$(fn_svc a)"
ok $? "an app with one function"
ulimit -Sn 1024
start_all && start_jobs
ok $? "the five daemons, with 1024 descriptors each"
wait_t 20 scale_is fn/a sleeping
ok $? "the function sleeps"

# crowd SOCK: 1100 idle connections held, then four status requests on
# new ones; prints each answer ("answered" or "refused") and how many of
# the idle ones the daemon closed.
cat >"$T/crowd.py" <<'PY'
import json, resource, socket, sys
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # ours, not theirs
path = sys.argv[1]
idle = []
# A blocking connect waits while the listen backlog is full, as a
# client does; one with a timeout would fail at once (EAGAIN).
for _ in range(1100):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
    except OSError:
        break
    idle.append(s)
out = []
for _ in range(4):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        s.settimeout(20)
        s.send(b'{"op":"status"}')
        r = json.loads(s.recv(1 << 20))
        out.append("answered" if r.get("ok") is not False else "refused")
    except (OSError, ValueError):
        out.append("refused")
    s.close()
closed = 0
for s in idle:
    s.setblocking(False)
    try:
        closed += s.recv(16) == b""
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print(" ".join(out), "closed>=844" if closed >= 844 else "closed=%d" % closed)
PY
for s in idle scale activate jobs; do
	is "$(timeout 120 python3 "$T/crowd.py" "$RUN/$s.sock")" \
	    "answered answered answered answered closed>=844" \
	    "$s.sock: 1100 idle peers: a new one is answered, four times; the idle ones past 256 were closed"
done
for d in idle scale gw jobs; do
	is "$(grep -c 'accept:' "$T/$d.log")" 0 "$d: never out of descriptors"
done
is "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 \
    -H 'Host: a.fn.localhost' "$URL/")" 200 \
    "the gateway still wakes the function: its subscription to hk-scale was kept"
for p in $jobs_pid $idle_pid $gw_pid $scale_pid $events_pid; do
	stop_pid "$p"
done
done_testing
