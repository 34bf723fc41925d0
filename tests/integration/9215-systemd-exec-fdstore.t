#!/bin/sh
# The exec backend's shared socket kept in systemd's fd store: hk-scale
# runs from the shipped unit of etc/systemd (FileDescriptorStoreMax=, its
# sandbox: no CAP_SYS_PTRACE, SystemCallFilter=@system-service, which
# refuses pidfd_getfd(2)), renamed for this test, as root, under systemd
# as PID 1 in a container (scripts/systemd-ct), on SQLite and on
# PostgreSQL.  fn/web has a fixed port, readiness "socket" and replicas
# = 3: three children of hk-scale share the one socket it binds, which it
# hands to systemd's fd store.
# With a drop-in KillMode=process (the replicas outlive hk-scale), hk-scale
# killed with SIGKILL is started again by systemd, adopts the same three
# processes and has the socket back from the store, not from a replica;
# a replica killed after that comes back on the same port (three held
# connections answered by three pids).  With the shipped KillMode=mixed
# the replicas go with hk-scale; the next one starts them again on the
# socket the store kept.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman python3; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
# hk-activate holds the lease that hk-scale joins (hk-lease -j).
UNITS="events scale activate"
sd_container || done_testing
REP_TAG=x
REP_SVC=web
. tests/integration/lib/sdrep.sh
# held N: the pids of N connections held at once on fn/web's port,
# sorted (fn/hold-pids.py, from inside the container)
held() { ct python3 "$FN/hold-pids.py" "$WEB_PORT" "$1"; }


# app: fn/web on WEB_PORT with readiness "socket" and replicas = 3 (exec)
app() {
	ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.web]
command = ["python3", "$FN/scale-http.py"]
port = $WEB_PORT
readiness = "socket"
replicas = 3
APP
	hkc hk apply "/etc/$N/app.toml" >"$T/apply.out" 2>&1
}
# kept: how many times hk-scale had the socket back from the store
kept() {
	journal "$N-scale" |
	    grep -c "service=$APP/web: listening socket on port $WEB_PORT kept by systemd"
}
kept_is() { [ "$(kept)" = "$1" ]; }
# killed_scale: hk-scale killed with SIGKILL and started again by systemd
killed_scale() {
	_old=$(scale_pid)
	sd_kill_prog "$N-scale"
	wait_t 10 restarted "$_old"
}

for e in $(engines); do
	stack "$e" || { ok 1 "$e: a store"; continue; }
	WEB_PORT=$(free_port)
	ct mkdir -p "/etc/systemd/system/$N-scale.service.d"
	printf '[Service]\nKillMode=process\n' |
	    ct sh -c "cat >/etc/systemd/system/$N-scale.service.d/keep.conf"
	ct systemctl daemon-reload
	is "$(prop "$N-scale" FileDescriptorStoreMax)" 512 \
	    "$e: the shipped unit has an fd store"
	# shellcheck disable=SC2046
	run ct systemctl start $(for u in $UNITS; do echo "$N-$u"; done)
	is "$rc" 0 "$e: hk-events and hk-scale start" || diag "$err"
	app
	is "$?" 0 "$e: hk apply of replicas = 3, port $WEB_PORT, backend exec" ||
	    diag "$(cat "$T/apply.out")"
	wait_t 30 replicas_are 3/3
	ok $? "$e: hk ps shows 3/3"
	p=$(pids)
	is "$(held 3)" "$p" \
	    "$e: three held connections are answered by the three replicas"

	# KillMode=process: the replicas outlive hk-scale, which adopts them
	# and has the socket back from the store.
	killed_scale
	ok $? "$e: hk-scale killed, started again by systemd"
	wait_t 30 logged 'service=[^ ]*/web: replica 2: adopted'
	ok $? "$e: it adopts replica 2"
	wait_t 30 replicas_are 3/3
	is "$(pids)" "$p" "$e: the same three processes"
	is "$(kept)" 1 "$e: the shared socket is had back from systemd's fd store"
	ok $(! logged 'taken back from|unable to take the listening socket'; echo $?) \
	    "$e: ... not from a replica (no ptrace needed)"
	p1=$(pid_of 1)
	ct kill -KILL "$p1"
	wait_t 30 replaced 1 "$p1" 3/3
	ok $? "$e: replica 1 killed after the restart: a new one runs (3/3)"
	is "$(held 3)" "$(pids)" "$e: ... on the same port: the three answer"
	ok $(! logged 'Address already in use'; echo $?) \
	    "$e: ... no start failed to bind the port"

	# The shipped KillMode=mixed: the replicas go with hk-scale, and
	# come back on the socket the store kept.
	ct rm -f "/etc/systemd/system/$N-scale.service.d/keep.conf"
	ct systemctl daemon-reload
	is "$(prop "$N-scale" KillMode)" mixed "$e: the shipped KillMode=mixed"
	p=$(pids)
	killed_scale
	ok $? "$e: hk-scale killed again, started again by systemd"
	# shellcheck disable=SC2086
	wait_t 30 all_dead $p
	ok $? "$e: ... its replicas went with it"
	wait_t 30 replicas_are 3/3
	ok $? "$e: ... three new ones run (3/3)" ||
	    journal "$N-scale" | tail -n 25 | sed 's/^/#   /'
	wait_t 30 kept_is 2
	ok $? "$e: ... on the socket systemd kept"
	is "$(held 3)" "$(pids)" "$e: ... the three answer on the port"

	ct_stop
done
pg_missing_is_failure
done_testing
