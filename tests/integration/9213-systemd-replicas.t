#!/bin/sh
# replicas = 2 of an ordinary service with the systemd backend, under
# systemd as PID 1 in a container (scripts/systemd-ct), on SQLite and on
# PostgreSQL (the suite's server, its socket bound into the container).
# hk-events and hk-scale run from the units of etc/systemd, renamed for
# this test, as root.  fn/wk has port 0: each replica is a transient
# unit of its own (replica 1's named ...STARTED.1.service) on a port of
# its own, and answers there from its unit's main process.  A replica's
# unit killed is replaced by a new one, the other untouched.  hk-scale
# killed with SIGKILL (systemd starts it again) adopts both units, same
# processes.  replicas = 1 stops replica 1's unit and restarts nothing.
# A clean stop leaves no unit.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman curl; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
# hk-activate holds the lease that hk-scale joins (hk-lease -j).
UNITS="events scale activate"
sd_container || done_testing
REP_TAG=r
REP_SVC=wk
. tests/integration/lib/sdrep.sh
one_unit() { [ "$(nunits "hk-svc-$APP.wk-*")" = 1 ]; }
# answers N: replica N answers on its endpoint with its pid
answers() {
	_ep=$(rep endpoint | tr ' ' '\n' | sed -n "s/^$1://p")
	_pid=$(pid_of "$1")
	[ -n "$_ep" ] && [ "$(curl -sS --max-time 10 "http://$_ep/")" = \
	    "wk pid=$_pid" ]
}


# app R: fn/wk with replicas = R, applied
app() {
	ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.wk]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
replicas = $1
[services.wk.environment]
SCALE_TAG = "wk"
APP
	hkc hk apply "/etc/$N/app.toml" >"$T/apply.out" 2>&1
}

for e in $(engines); do
	stack "$e" || { ok 1 "$e: a store"; continue; }
	ct systemctl daemon-reload
	# shellcheck disable=SC2046
	run ct systemctl start $(for u in $UNITS; do echo "$N-$u"; done)
	is "$rc" 0 "$e: hk-events and hk-scale start" || diag "$err"
	app 2
	is "$?" 0 "$e: hk apply of replicas = 2 with backend systemd"
	wait_t 30 replicas_are 2/2
	ok $? "$e: hk ps shows 2/2"
	is "$(nunits "hk-svc-$APP.wk-*")" 2 "$e: two units"
	u1=$(units "hk-svc-$APP.wk-*.1.service")
	like "$u1" "^hk-svc-$APP\\.wk-1-[0-9a-f]+\\.1\\.service\$" \
	    "$e: replica 1's unit is named after it"
	is "$(prop "$u1" MainPID)" "$(pid_of 1)" "$e: ... its main pid is replica 1's"
	wait_t 10 answers 0
	ok $? "$e: replica 0 answers on its port"
	wait_t 10 answers 1
	ok $? "$e: replica 1 answers on a port of its own"
	ok $([ "$(rep endpoint | tr ' ' '\n' | cut -d: -f3 | sort -u | wc -l)" = 2 ]; echo $?) \
	    "$e: two ports"

	# replica 1's unit killed: a new unit replaces it.
	p0=$(pid_of 0)
	p1=$(pid_of 1)
	ct systemctl kill -s KILL "$u1"
	wait_t 30 replaced 1 "$p1" 2/2
	ok $? "$e: replica 1's unit killed: a new one runs (2/2)"
	is "$(pid_of 0)" "$p0" "$e: ... replica 0 untouched"
	is "$(units "$u1")" "" "$e: ... the killed unit is gone"
	wait_t 10 answers 1
	ok $? "$e: the new replica 1 answers"

	# hk-scale killed: both units adopted, same processes.
	p1=$(pid_of 1)
	old=$(scale_pid)
	sd_kill_prog "$N-scale"
	wait_t 10 restarted "$old"
	ok $? "$e: hk-scale killed, started again by systemd"
	wait_t 30 logged 'service=[^ ]*/wk: replica 1: adopted'
	ok $? "$e: it adopts replica 1's unit"
	wait_t 30 replicas_are 2/2
	is "$(pid_of 0) $(pid_of 1)" "$p0 $p1" "$e: the same two processes"
	is "$(nunits "hk-svc-$APP.wk-*")" 2 "$e: still two units"

	# replicas = 1: replica 1's unit goes, replica 0 runs on.
	app 1
	is "$?" 0 "$e: hk apply of replicas = 1"
	wait_t 30 replicas_are 1/1
	ok $? "$e: hk ps shows 1/1"
	wait_t 30 one_unit
	ok $? "$e: one unit left"
	is "$(pid_of 0)" "$p0" "$e: replica 0 not restarted"

	ct systemctl stop "$N-scale"
	is "$(nunits "hk-svc-$APP.*")" 0 "$e: a clean stop of hk-scale leaves no unit"
	ct_stop
done
pg_missing_is_failure
done_testing
