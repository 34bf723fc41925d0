#!/bin/sh
# replicas = 3 of an ordinary service with a fixed port and the systemd
# backend, under systemd as PID 1 in a container (scripts/systemd-ct), on
# SQLite and on PostgreSQL: the three replicas are units of their own that
# share the one listening socket hk-scale binds, handed to each as its
# standard input and moved to fd 3 (LISTEN_FDS) before the command runs.
# hk-events and hk-scale run from the units of etc/systemd, renamed for
# this test, as root; hk-scale's unit keeps the socket in its fd store.
# Three connections held at once (scale-http.py's GET /hold) are
# answered by three different pids, those hk ps shows.  A replica killed
# comes back on the port.  hk-scale killed with SIGKILL (systemd starts it
# again) adopts the three units, has the socket back from its fd store,
# and a replica killed after that comes back on the same port.
# replicas = 1 stops two units, replicas = 2 starts one; hk stop stops
# both, hk start starts both on the port.  A clean stop leaves no unit.
# fn/sh, a command of sh -c whose script names "$0": its arguments reach
# it as given, not expanded by systemd (as exec would run them).
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman curl python3; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
# hk-activate holds the lease that hk-scale joins (hk-lease -j).
UNITS="events scale activate"
sd_container || done_testing
REP_TAG=p
REP_SVC=web
. tests/integration/lib/sdrep.sh
# held N: the pids of N connections held at once on fn/web's port,
# sorted (fn/hold-pids.py, from inside the container)
held() { ct python3 "$FN/hold-pids.py" "$WEB_PORT" "$1"; }
# sh_answers: fn/sh answers on its endpoint (inside the container)
sh_answers() {
	_ep=$(hkc hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["service"] == "sh" and s["instance"]:
        print(s["instance"]["endpoint"])')
	[ -n "$_ep" ] &&
	    ct curl -sS --max-time 10 "http://$_ep/" | grep -q '^dollar pid='
}


# app R: fn/web on WEB_PORT with readiness "socket" and replicas = R
app() {
	ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.web]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
port = $WEB_PORT
readiness = "socket"
replicas = $1

[services.sh]
command = ["sh", "-c", "SCALE_TAG=dollar exec python3 \\"\$0\\"", "$FN/scale-http.py"]
backend = "systemd"
APP
	hkc hk apply "/etc/$N/app.toml" >"$T/apply.out" 2>&1
}

for e in $(engines); do
	stack "$e" || { ok 1 "$e: a store"; continue; }
	WEB_PORT=$(free_port)
	ct systemctl daemon-reload
	# shellcheck disable=SC2046
	run ct systemctl start $(for u in $UNITS; do echo "$N-$u"; done)
	is "$rc" 0 "$e: hk-events and hk-scale start" || diag "$err"
	app 3
	is "$?" 0 "$e: hk apply of replicas = 3, port $WEB_PORT, backend systemd" ||
	    diag "$(cat "$T/apply.out")"
	wait_t 30 replicas_are 3/3
	ok $? "$e: hk ps shows 3/3"
	is "$(nunits "hk-svc-$APP.web-*")" 3 "$e: three units"
	is "$(rep endpoint)" "0:127.0.0.1:$WEB_PORT 1:127.0.0.1:$WEB_PORT 2:127.0.0.1:$WEB_PORT" \
	    "$e: each on the one port"
	u1=$(units "hk-svc-$APP.web-*.1.service")
	is "$(prop "$u1" MainPID)" "$(pid_of 1)" \
	    "$e: replica 1's unit's main pid is the command's"
	p=$(pids)
	is "$(held 3)" "$p" \
	    "$e: three held connections are answered by the three replicas"
	wait_t 30 sh_answers
	ok $? "$e: fn/sh, whose sh -c script names \$0, runs and answers"

	# replica 1 killed: a new unit takes its place, on the port.
	p0=$(pid_of 0)
	p1=$(pid_of 1)
	p2=$(pid_of 2)
	ct kill -KILL "$p1"
	wait_t 30 replaced 1 "$p1" 3/3
	ok $? "$e: replica 1 killed: a new one runs (3/3)"
	is "$(pid_of 0) $(pid_of 2)" "$p0 $p2" "$e: ... replicas 0 and 2 untouched"
	is "$(held 3)" "$(pids)" "$e: ... the three answer on the port"

	# hk-scale killed: the units adopted, the socket had back from the
	# fd store, and a replica killed then comes back on it.
	p=$(pids)
	old=$(scale_pid)
	sd_kill_prog "$N-scale"
	wait_t 10 restarted "$old"
	ok $? "$e: hk-scale killed, started again by systemd"
	wait_t 30 logged 'service=[^ ]*/web: replica 2: adopted'
	ok $? "$e: it adopts replica 2's unit"
	wait_t 30 replicas_are 3/3
	is "$(pids)" "$p" "$e: the same three processes"
	ok $(logged "service=$APP/web: listening socket on port $WEB_PORT kept by systemd"; echo $?) \
	    "$e: the shared socket is had back from systemd's fd store"
	ok $(! logged 'taken back from'; echo $?) "$e: ... not taken from a replica"
	p2=$(pid_of 2)
	ct kill -KILL "$p2"
	wait_t 30 replaced 2 "$p2" 3/3
	ok $? "$e: replica 2 killed after the restart: a new one runs (3/3)"
	is "$(held 3)" "$(pids)" "$e: ... on the same port: the three answer"

	# replicas = 1, then 2: a scale, not a release.
	p0=$(pid_of 0)
	p1=$(pid_of 1)
	p2=$(pid_of 2)
	app 1
	is "$?" 0 "$e: hk apply of replicas = 1"
	wait_t 30 replicas_are 1/1
	ok $? "$e: hk ps shows 1/1"
	wait_t 30 all_dead "$p1" "$p2"
	ok $? "$e: replicas 1 and 2 stopped"
	is "$(nunits "hk-svc-$APP.web-*")" 1 "$e: one unit left"
	is "$(pid_of 0)" "$p0" "$e: replica 0 not restarted"
	app 2
	is "$?" 0 "$e: hk apply of replicas = 2"
	wait_t 30 replicas_are 2/2
	ok $? "$e: hk ps shows 2/2"
	is "$(pid_of 0)" "$p0" "$e: replica 0 still not restarted"
	is "$(held 2)" "$(pids)" "$e: two replicas answer on the port"

	# hk stop, hk start.
	p=$(pids)
	run hkc hk stop "$APP/web"
	is "$rc" 0 "$e: hk stop"
	wait_t 30 replicas_are 0/0
	ok $? "$e: ... hk ps shows 0/0"
	# shellcheck disable=SC2086
	wait_t 30 all_dead $p
	ok $? "$e: ... both processes gone"
	is "$(nunits "hk-svc-$APP.web-*")" 0 "$e: ... no unit left"
	run hkc hk start "$APP/web"
	is "$rc" 0 "$e: hk start"
	wait_t 30 replicas_are 2/2
	ok $? "$e: ... 2/2 again" ||
	    journal "$N-scale" | tail -n 25 | sed 's/^/#   /'
	is "$(held 2)" "$(pids)" "$e: ... both answer on the port"

	ct systemctl stop "$N-scale"
	is "$(nunits "hk-svc-$APP.*")" 0 "$e: a clean stop of hk-scale leaves no unit"
	ct_stop
done
pg_missing_is_failure
done_testing
