#!/bin/sh
# replicas = 3 of an ordinary s6 service with a fixed port (hk.toml(5)
# replicas, hk-backends(7), hk-scale(8) The listen helper), under a real
# s6-svscan, on SQLite and PostgreSQL.  hk-scale binds the port once and
# serves the socket on a Unix socket of its runtime_dir; each replica's
# run script execs hk-listen, which receives it as fd 3 (LISTEN_FDS) and
# execs the command.  Three processes, each s6's, share one socket (the
# same socket inode at fd 3 of each), and three connections held at once
# on the port are answered by the three of them.  s6's notification-fd
# is 4 there, and s6 sees each ready.  The Unix socket is the service
# user's alone (mode 0600, in a directory of mode 0700); root, which the
# modes let connect, is refused by hk-scale's SO_PEERCRED.  A replica
# killed: the other two go on answering, and it is started again under
# s6 onto the same socket.  hk-scale killed with SIGKILL and started
# again: the three are adopted, still served, and a replica killed after
# that gets the same socket back (taken from a running replica).
# hk-scale killed again and the service scaled to 1 meanwhile: the
# restarted hk-scale removes the Unix socket no replica shares.  An
# ordinary service is reached at its own port, not through the gateway
# (hk-activate(8)): the connections go to the port.  hk-listen's command
# line: --help, a missing command, no one serving.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/s6.sh

s6_require

# write_app [N]: fn/web on s6 with replicas = N (3) on WEB_PORT, readiness
# notify.
write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$IFN/scale-http.py"]
backend = "s6"
port = $WEB_PORT
readiness = "notify"
replicas = ${1:-3}
[services.web.environment]
SCALE_TAG = "shared"
SCALE_NOTIFY_FD = "4"
APP
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

# pid_of N: the pid of replica N in hk ps --json
pid_of() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == "web":
        for i in s["replicas"]:
            if i["replica"] == int(sys.argv[1]):
                print(i["pid"])' "$1"
}

# pids: of the running replicas, sorted, on one line
pids() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == "web":
        print(" ".join(str(p) for p in
              sorted(i["pid"] for i in s["replicas"] if i["state"] == "running")))'
}

# replicas_are TEXT: the REPLICAS column of hk ps for fn/web (for wait_t)
replicas_are() {
	[ "$(hk ps | awk -F '\t' '$1 == "fn" && $2 == "web" { print $8 }')" = "$1" ]
}

# replaced N OLD_PID: 3/3 with replica N running, not as OLD_PID
replaced() {
	replicas_are 3/3 || return 1
	_p=$(pid_of "$1")
	[ -n "$_p" ] && [ "$_p" != "$2" ]
}

# inode_of PID: what fd 3 of PID is, "socket:[INODE]"
inode_of() {
	readlink "/proc/$1/fd/3"
}

# inodes PIDS...: the distinct fd 3 of each, one line
inodes() {
	for _p in "$@"; do
		inode_of "$_p"
		echo
	done | sort -u | grep . | tr '\n' ' ' | sed 's/ $//'
}

# held N: the pids of N connections held at once on the port, sorted
held() {
	python3 "$IFN/hold-pids.py" "$WEB_PORT" "$1"
}

# answered_by_others DEAD: two connections held at once are answered by
# two pids, neither DEAD
answered_by_others() {
	_h=$(held 2) || return 1
	set -- $_h
	[ "$#" = 2 ] && [ "$1" != "$DEAD" ] && [ "$2" != "$DEAD" ]
}

# all_gone PIDS...: none is alive
all_gone() {
	for _p in "$@"; do
		! alive "$_p" || return 1
	done
}

# svdir N: the scan directory's entry of replica N of revision 1
svdir() {
	if [ "$1" = 0 ]; then echo "$SCAN/hk.fn.web.1"; else echo "$SCAN/hk.fn.web.1.$1"; fi
}

# hk-listen's command line (hk-listen(8)).
run "$HK_BUILD/bin/hk-listen" --help
is "$rc:$out:$err" "0:usage: hk-listen socket command [argument ...]:" \
    "hk-listen --help prints its usage on standard output, exits 0"
run "$HK_BUILD/bin/hk-listen" "$T/none"
is "$rc:$err" "64:hk-listen: error: no command
usage: hk-listen socket command [argument ...]" \
    "hk-listen without a command exits 64, says why, then its usage on standard error"
run "$HK_BUILD/bin/hk-listen" "$T/none" true
is "$rc" 69 "hk-listen with no one serving the socket exits 69"
like "$err" "^hk-listen: error: connect $T/none: No such file or directory" \
    "... and says why"

for engine in $(engines); do
	new_store "$engine" s6shared
	SCAN=$T/scan-$engine
	WEB_PORT=$(free_port)
	idle_setup "$STORE" "s6_scandir = \"$SCAN\""
	RUNDIR=$RUN
	s6_scan_start "$SCAN"
	ok $? "$engine: an s6-svscan runs on the scan directory"
	start_events && start_scale
	ok $? "$engine: hk-events and hk-scale are ready"
	write_app
	is "$?" 0 "$engine: hk apply of replicas = 3 on port $WEB_PORT, s6" ||
	    diag "$(cat "$T/apply.out")"
	wait_t 30 replicas_are 3/3
	ok $? "$engine: hk ps shows 3/3" ||
	    tail -n 20 "$T/scale.log" | sed 's/^/#   /'
	p=$(pids)
	set -- $p
	is "$#" 3 "$engine: three processes"
	for r in 0 1 2; do
		is "$(s6_field "$(svdir $r)" pid)" "$(pid_of $r)" \
		    "$engine: replica $r is s6's $(basename "$(svdir $r)")"
		is "$(s6_field "$(svdir $r)" ready)" true \
		    "$engine: ... and s6 saw it ready"
		is "$(cat "$(svdir $r)/notification-fd")" 4 \
		    "$engine: ... on notification-fd 4"
	done
	# shellcheck disable=SC2086
	sock=$(inodes $p)
	like "$sock" '^socket:\[[0-9]+\]$' \
	    "$engine: fd 3 of the three is one socket ($sock)"
	is "$(held 3)" "$p" \
	    "$engine: three connections held at once on the port are answered by the three"
	srv=$RUNDIR/scale-listen.$WEB_PORT
	is "$(stat -c '%a %U' "$srv")" "700 nobody" \
	    "$engine: hk-scale's Unix socket is in a directory of the service's user, mode 0700"
	is "$(stat -c '%a %U %F' "$srv/socket")" "600 nobody socket" \
	    "$engine: ... the socket itself mode 0600"
	run setpriv --reuid=daemon --regid=daemon --clear-groups \
	    "$HK_BUILD/bin/hk-listen" "$srv/socket" true
	is "$rc" 69 "$engine: another user cannot have the socket (hk-listen exits 69)"
	like "$err" "^hk-listen: error: connect $srv/socket: Permission denied" \
	    "$engine: ... and says why"
	# root passes the directory's mode, but not hk-scale's SO_PEERCRED
	run "$HK_BUILD/bin/hk-listen" "$srv/socket" true
	is "$rc" 69 "$engine: nor can root, which the modes let connect (SO_PEERCRED)"
	like "$err" "^hk-listen: error: $srv/socket: no socket received" \
	    "$engine: ... hk-listen says it received none"
	wait_t 10 more_in "$T/scale.log" "service=fn/web: $srv/socket: pid [0-9]+ of uid 0 refused: not the service's user \\(uid 65534\\)" 0
	ok $? "$engine: ... and hk-scale's log says whom it refused"

	# A replica killed: the other two go on answering, and it comes back
	# under s6 onto the same socket.
	p0=$(pid_of 0)
	p1=$(pid_of 1)
	p2=$(pid_of 2)
	DEAD=$p1
	kill -KILL "$p1"
	wait_t 30 answered_by_others
	ok $? "$engine: replica 1 killed: the other two answer on the port"
	wait_t 30 replaced 1 "$p1"
	ok $? "$engine: ... and it is started again (3/3, a new pid)"
	is "$(pid_of 0) $(pid_of 2)" "$p0 $p2" "$engine: ... replicas 0 and 2 untouched"
	p1=$(pid_of 1)
	is "$(s6_field "$(svdir 1)" pid)" "$p1" "$engine: ... under s6"
	is "$(inode_of "$p1")" "$sock" "$engine: ... with the same socket at fd 3"
	is "$(held 3)" "$(pids)" "$engine: ... and the three answer"

	# hk-scale killed and started again: adopted, still served; a replica
	# killed after that gets the same socket.
	p=$(pids)
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	: >"$T/scale.log"
	start_scale
	ok $? "$engine: hk-scale killed with SIGKILL starts again"
	wait_t 30 more_in "$T/scale.log" 'service=fn/web: replica 2: adopted' 0
	ok $? "$engine: it adopts replica 2"
	wait_t 30 replicas_are 3/3
	is "$(pids)" "$p" "$engine: the same three processes"
	is "$(held 3)" "$p" "$engine: ... which answer on the port"
	ok $(grep -q "service=fn/web: listening socket on port $WEB_PORT taken back from" \
	    "$T/scale.log"; echo $?) "$engine: the socket is taken back from a replica"
	p2=$(pid_of 2)
	kill -KILL "$p2"
	wait_t 30 replaced 2 "$p2"
	ok $? "$engine: replica 2 killed after the restart: started again (3/3)"
	is "$(inode_of "$(pid_of 2)")" "$sock" \
	    "$engine: ... with the same socket at fd 3"
	is "$(held 3)" "$(pids)" "$engine: ... and the three answer"

	# hk-scale killed again, and the service scaled to 1 meanwhile: the
	# restarted hk-scale removes the Unix socket nobody shares any more.
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	: >"$T/scale.log"
	write_app 1
	is "$?" 0 "$engine: hk apply of replicas = 1 while hk-scale is down" ||
	    diag "$(cat "$T/apply.out")"
	start_scale
	ok $? "$engine: hk-scale starts again"
	wait_t 30 more_in "$T/scale.log" "removed $srv: no replica shares port $WEB_PORT any more" 0
	ok $? "$engine: it removes the Unix socket of the port, shared no more"
	ok $([ ! -e "$srv" ]; echo $?) "$engine: ... which is gone"
	wait_t 30 replicas_are 1/1
	ok $? "$engine: ... and hk ps shows 1/1"

	# SIGTERM: every replica stops, and the Unix socket goes.
	p=$(pids)
	stop_pid "$scale_pid"
	# shellcheck disable=SC2086
	wait_t 10 all_gone $p
	ok $? "$engine: hk-scale's SIGTERM stops every replica"
	ok $([ ! -e "$srv" ]; echo $?) "$engine: ... and removes its Unix socket"
	stop_pid "$events_pid"
	s6_scan_stop "$SCAN"
	ok $? "$engine: the s6-svscan stops"
	: >"$T/scale.log"
done
pg_missing_is_failure
done_testing
