#!/bin/sh
# replicas = N on an ordinary s6 service (hk.toml(5), hk-backends(7)),
# under a real s6-svscan, on SQLite and PostgreSQL.  fn/web has port 0
# (a port each: s6 hands no shared socket) and replicas = 3: three s6
# service directories, hk.fn.web.1, hk.fn.web.1.1 and hk.fn.web.1.2, each
# supervising one process of its own; hk ps shows 3/3 and each endpoint
# is answered by the pid hk ps and s6-svstat give for that replica.  A
# replica killed is started again alone.  hk-scale killed with SIGKILL
# and started again adopts the same three pids.  replicas = 1 stops
# replicas 1 and 2 and removes their directories without restarting
# replica 0; replicas = 2 starts one more, and a restart of hk-scale
# after that scale still adopts replica 0 in its first directory.  hk
# stop stops both (their directories stay, down), hk start starts both.
# hk validate refuses a fixed port with replicas on s6 unless readiness
# is "notify".  hk-scale's
# SIGTERM stops every replica.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh
. tests/integration/lib/s6.sh

s6_require

# write_app N: fn/web on s6 with replicas = N, port 0.
write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$IFN/scale-http.py"]
backend = "s6"
replicas = $1
[services.web.environment]
SCALE_TAG = "rep"
APP
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

# ps_field FIELD: of hk ps --json for fn/web: "pids" (of its running
# replicas, sorted), "replicas" (replica numbers of its rows)
ps_field() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == "web":
        r = s["replicas"]
        if sys.argv[1] == "pids":
            print(" ".join(str(p) for p in
                  sorted(i["pid"] for i in r if i["state"] == "running")))
        elif sys.argv[1] == "replicas":
            print(" ".join(str(i["replica"]) for i in r))' "$1"
}

# replica_of N FIELD: "pid" or "endpoint" of replica N in hk ps --json
replica_of() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == "web":
        for i in s["replicas"]:
            if i["replica"] == int(sys.argv[1]):
                print(i[sys.argv[2]])' "$1" "$2"
}

# replicas_are TEXT: the REPLICAS column of hk ps for fn/web (for wait_t)
replicas_are() {
	[ "$(hk ps | awk -F '\t' '$1 == "fn" && $2 == "web" { print $8 }')" = "$1" ]
}

# all_alive PIDS... / all_dead PIDS...
all_alive() {
	for _p in "$@"; do
		alive "$_p" || return 1
	done
}
all_dead() {
	for _p in "$@"; do
		! alive "$_p" || return 1
	done
}

# running_without OLD_PID: 3/3, OLD_PID not among them
running_without() {
	replicas_are 3/3 || return 1
	case " $(ps_field pids) " in
	*" $1 "*) return 1 ;;
	esac
	return 0
}

# answers N: the body of GET / at replica N's endpoint
answers() {
	curl -sS --max-time 30 "http://$(replica_of "$1" endpoint)/"
}

# svdir N: the scan directory's entry of replica N of revision 1
svdir() {
	if [ "$1" = 0 ]; then echo "$SCAN/hk.fn.web.1"; else echo "$SCAN/hk.fn.web.1.$1"; fi
}

# no_dir NAME: neither the link nor the directory in .hk is left
no_dir() {
	[ ! -e "$SCAN/$1" ] && [ ! -e "$SCAN/.hk/$1" ]
}

for engine in $(engines); do
	new_store "$engine" s6rep
	SCAN=$T/scan-$engine
	idle_setup "$STORE" "s6_scandir = \"$SCAN\""
	s6_scan_start "$SCAN"
	ok $? "$engine: an s6-svscan runs on the scan directory"
	start_events && start_scale
	ok $? "$engine: hk-events and hk-scale are ready"
	write_app 3
	is "$?" 0 "$engine: hk apply of replicas = 3 on s6 succeeds"

	wait_t 30 replicas_are 3/3
	ok $? "$engine: hk ps shows fn/web's 3 replicas running (3/3)"
	is "$(ps_field replicas)" "0 1 2" "$engine: one row each, replicas 0, 1 and 2"
	pids=$(ps_field pids)
	set -- $pids
	is "$#" 3 "$engine: three pids"
	all_alive $pids
	ok $? "$engine: ... each a live process"
	for r in 0 1 2; do
		p=$(replica_of $r pid)
		is "$(s6_field "$(svdir $r)" pid)" "$p" \
		    "$engine: replica $r is s6's $(basename "$(svdir $r)") (pid $p)"
		is "$(answers $r)" "rep pid=$p" \
		    "$engine: ... and answers at its own endpoint"
	done
	set -- $(hk ps --json | python3 -c 'import json, sys
for s in json.load(sys.stdin):
    if s["service"] == "web":
        print(" ".join(sorted(set(i["endpoint"] for i in s["replicas"]))))')
	is "$#" 3 "$engine: three endpoints, a port each"
	run hk status fn/web
	like "$out" '^replicas: +3/3 running$' "$engine: hk status: 3/3 running"

	# A replica killed is started again, alone.
	p0=$(replica_of 0 pid)
	p1=$(replica_of 1 pid)
	p2=$(replica_of 2 pid)
	kill -KILL "$p1"
	wait_t 30 running_without "$p1"
	ok $? "$engine: replica 1 killed: started again (3/3, a new pid)"
	is "$(replica_of 0 pid) $(replica_of 2 pid)" "$p0 $p2" \
	    "$engine: ... replicas 0 and 2 untouched"
	p1=$(replica_of 1 pid)
	is "$(s6_field "$(svdir 1)" pid)" "$p1" "$engine: ... under s6 again"
	is "$(answers 1)" "rep pid=$p1" "$engine: ... and it answers"

	# hk-scale killed and started again: the same three are adopted.
	pids=$(ps_field pids)
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	start_scale
	ok $? "$engine: hk-scale starts again"
	wait_t 30 more_in "$T/scale.log" 'service=fn/web: replica 2: adopted' 0
	ok $? "$engine: it adopts replica 2"
	wait_t 30 replicas_are 3/3
	is "$(ps_field pids)" "$pids" \
	    "$engine: the same three pids, none restarted"
	all_alive $pids
	ok $? "$engine: ... all alive"

	# replicas = 1, then 2: a scale, not a release.
	p0=$(replica_of 0 pid)
	p1=$(replica_of 1 pid)
	p2=$(replica_of 2 pid)
	write_app 1
	is "$?" 0 "$engine: hk apply of replicas = 1 succeeds"
	wait_t 30 all_dead "$p1" "$p2"
	ok $? "$engine: replicas 1 and 2 are stopped"
	wait_t 30 replicas_are 1/1
	ok $? "$engine: hk ps shows 1/1"
	is "$(ps_field replicas)" "0" "$engine: replica 0's row alone"
	is "$(replica_of 0 pid)" "$p0" "$engine: replica 0 was not restarted"
	wait_t 30 no_dir hk.fn.web.1.1
	ok $? "$engine: replica 1's s6 directory is removed"
	wait_t 30 no_dir hk.fn.web.1.2
	ok $? "$engine: replica 2's s6 directory is removed"
	write_app 2
	is "$?" 0 "$engine: hk apply of replicas = 2 succeeds"
	wait_t 30 replicas_are 2/2
	ok $? "$engine: hk ps shows 2/2"
	is "$(replica_of 0 pid)" "$p0" "$engine: replica 0 still not restarted"
	p1=$(replica_of 1 pid)
	is "$(s6_field "$SCAN/hk.fn.web.3.1" pid)" "$p1" \
	    "$engine: the new replica 1 is s6's hk.fn.web.3.1 (revision 3)"
	is "$(answers 1)" "rep pid=$p1" "$engine: ... and it answers"

	# A restart after the scale: replica 0 runs in hk.fn.web.1 but its
	# row says revision 3; it is adopted, not restarted.
	pids=$(ps_field pids)
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	: >"$T/scale.log"
	start_scale
	ok $? "$engine: hk-scale starts again after the scale"
	wait_t 30 more_in "$T/scale.log" 'service=fn/web: replica 1: adopted' 0
	ok $? "$engine: it adopts replica 1"
	wait_t 30 replicas_are 2/2
	is "$(ps_field pids)" "$pids" "$engine: the same two pids, none restarted"
	all_alive $pids
	ok $? "$engine: ... both alive"

	# hk stop stops every replica; hk start starts them all again.
	run hk stop fn/web
	is "$rc" 0 "$engine: hk stop fn/web"
	wait_t 30 all_dead $pids
	ok $? "$engine: ... both replicas stopped"
	wait_t 30 replicas_are 0/0
	ok $? "$engine: ... hk ps shows 0/0"
	is "$(s6_field "$SCAN/hk.fn.web.3.1" up)" false \
	    "$engine: ... replica 1's directory stays, down"
	run hk start fn/web
	is "$rc" 0 "$engine: hk start fn/web"
	wait_t 30 replicas_are 2/2
	ok $? "$engine: ... 2/2 again"
	is "$(s6_field "$SCAN/hk.fn.web.3" pid)" "$(replica_of 0 pid)" \
	    "$engine: ... replica 0 now runs in hk.fn.web.3, of its revision"
	wait_t 30 no_dir hk.fn.web.1
	ok $? "$engine: ... and its old directory, hk.fn.web.1, is removed"
	pids=$(ps_field pids)
	for r in 0 1; do
		is "$(answers $r)" "rep pid=$(replica_of $r pid)" \
		    "$engine: ... replica $r answers"
	done

	# A fixed port with replicas on s6 needs readiness "notify": a
	# probe of the shared port cannot tell one replica from another
	# (2025-scale-s6-shared-port.t runs them).
	cat >"$T/fixed.toml" <<APP
schema_version = 1
name = "fx"

[services.web]
command = ["python3", "$IFN/scale-http.py"]
backend = "s6"
port = $(free_port)
replicas = 2
APP
	run hk validate "$T/fixed.toml"
	ok $([ "$rc" != 0 ]; echo $?) "$engine: hk validate refuses a fixed port with replicas on s6 and readiness tcp"
	like "$out $err" 'set readiness = "notify", or port = 0' \
	    "$engine: ... and says why"

	# SIGTERM: every replica stops.
	stop_pid "$scale_pid"
	wait_t 10 all_dead $pids
	ok $? "$engine: hk-scale's SIGTERM stops every replica"
	stop_pid "$events_pid"
	s6_scan_stop "$SCAN"
	ok $? "$engine: the s6-svscan stops"
	: >"$T/scale.log"
done
pg_missing_is_failure
done_testing
