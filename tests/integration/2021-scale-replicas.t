#!/bin/sh
# replicas = N on an ordinary exec service (hk.toml(5)), on SQLite and
# PostgreSQL.  fn/web has a fixed port, readiness "socket" and replicas
# = 3: three processes share the one listening socket hk-scale binds
# (LISTEN_FDS).  hk ps and hk status show 3 running; three connections
# each held by the process that took it (scale-http.py's GET /hold) are
# answered by three different pids, those hk ps shows.  A replica killed
# (replica 1, then replica 0) is started again and the others go on.
# hk-scale killed with SIGKILL and started again adopts the same three
# pids, takes the socket back from them (a replica killed then is
# started again on it).  replicas = 1 stops replicas 1 and 2 and
# restarts nothing; replicas = 2 starts one more.  hk stop stops both,
# hk start starts both.  fn/wk, a worker with
# port 0 and replicas = 2, runs two processes, each on a port of its own
# and with a directory of its own holding its secret.
# hk-scale's SIGTERM stops every replica.
. tests/integration/lib.sh
. tests/integration/lib/idle.sh

# write_app N: fn/web with replicas = N, and fn/wk with 2.
write_app() {
	cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.web]
command = ["python3", "$IFN/scale-http.py"]
port = $WEB_PORT
readiness = "socket"
replicas = $1

[services.wk]
command = ["python3", "$IFN/scale-http.py"]
replicas = 2
secrets = ["TOKEN"]
APP
	hk apply "$T/app.toml" >"$T/apply.out" 2>&1
}

# ps_field SERVICE FIELD: a field of hk ps --json for fn/SERVICE:
# "pids" (of its running replicas, sorted), "replicas" (replica numbers
# of its rows), "endpoints"
ps_field() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == sys.argv[1]:
        r = s["replicas"]
        if sys.argv[2] == "pids":
            print(" ".join(str(p) for p in
                  sorted(i["pid"] for i in r if i["state"] == "running")))
        elif sys.argv[2] == "replicas":
            print(" ".join(str(i["replica"]) for i in r))
        elif sys.argv[2] == "endpoints":
            print(" ".join(sorted(i["endpoint"] for i in r)))
        elif sys.argv[2] == "pid0":
            print(s["instance"]["pid"] if s["instance"] else 0)' "$1" "$2"
}

# replica_pid SERVICE N: the pid hk ps --json has for replica N
replica_pid() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == sys.argv[1]:
        for i in s["replicas"]:
            if i["replica"] == int(sys.argv[2]):
                print(i["pid"])' "$1" "$2"
}

# ps_replicas SERVICE: the REPLICAS column of hk ps for fn/SERVICE
ps_replicas() {
	hk ps | awk -F '\t' -v s="$1" '$1 == "fn" && $2 == s { print $8 }'
}

# replicas_are SERVICE TEXT (for wait_t)
replicas_are() {
	[ "$(ps_replicas "$1")" = "$2" ]
}

# all_alive PIDS...: each is a live process
all_alive() {
	for _p in "$@"; do
		alive "$_p" || return 1
	done
}

# all_dead PIDS...
all_dead() {
	for _p in "$@"; do
		! alive "$_p" || return 1
	done
}

# running_without TEXT OLD_PID: REPLICAS says TEXT, OLD_PID not among them
running_without() {
	replicas_are web "$1" || return 1
	case " $(ps_field web pids) " in
	*" $2 "*) return 1 ;;
	esac
	return 0
}

# cred_dir PID: its CREDENTIALS_DIRECTORY
cred_dir() {
	tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^CREDENTIALS_DIRECTORY=//p'
}

# held N: the pids of N connections held at once on fn/web's port
held() {
	python3 "$IFN/hold-pids.py" "$WEB_PORT" "$1"
}

for engine in $(engines); do
	new_store "$engine" rep
	idle_setup "$STORE" "secret_key_file = \"$T/$engine.key\""
	TOKEN=$(python3 -c 'import secrets; print("hk-" + secrets.token_hex(20))')
	printf '%s' "$TOKEN" | hk secret set fn TOKEN >"$T/set.out" 2>&1
	ok $? "$engine: hk secret set fn TOKEN"
	WEB_PORT=$(free_port)
	start_events && start_scale
	ok $? "$engine: hk-events and hk-scale are ready"
	write_app 3
	is "$?" 0 "$engine: hk apply of replicas = 3 succeeds"

	wait_t 30 replicas_are web 3/3
	ok $? "$engine: hk ps shows fn/web's 3 replicas running (3/3)"
	is "$(ps_field web replicas)" "0 1 2" "$engine: one row each, replicas 0, 1 and 2"
	pids=$(ps_field web pids)
	set -- $pids
	is "$#" 3 "$engine: three pids"
	all_alive $pids
	ok $? "$engine: ... each a live process"
	is "$(held 3)" "$pids" \
	    "$engine: three held connections are answered by the three replicas"
	run hk status fn/web
	like "$out" '^replicas: +3/3 running$' "$engine: hk status: 3/3 running"
	like "$out" '^replica 1: +running revision 1 pid [0-9]+ endpoint 127\.0\.0\.1:'"$WEB_PORT"' ' \
	    "$engine: hk status: replica 1 on the shared port"
	like "$out" '^replica 2: +running revision 1 pid ' "$engine: hk status: replica 2"

	wait_t 30 replicas_are wk 2/2
	ok $? "$engine: fn/wk (port 0): 2/2 running"
	set -- $(ps_field wk endpoints)
	ok $([ "$#" = 2 ] && [ "$1" != "$2" ]; echo $?) \
	    "$engine: fn/wk: each replica on a port of its own"
	set -- $(ps_field wk pids)
	d1=$(cred_dir "$1")
	d2=$(cred_dir "$2")
	ok $([ -n "$d1" ] && [ "$d1" != "$d2" ]; echo $?) \
	    "$engine: fn/wk: each replica has a secrets directory of its own"
	ok $([ "$(cat "$d1/TOKEN")" = "$TOKEN" ] &&
	    [ "$(cat "$d2/TOKEN")" = "$TOKEN" ]; echo $?) \
	    "$engine: ... each holding the secret"

	# A replica killed is started again; the others go on.
	p1=$(replica_pid web 1)
	p0=$(replica_pid web 0)
	p2=$(replica_pid web 2)
	kill -KILL "$p1"
	wait_t 30 running_without 3/3 "$p1"
	ok $? "$engine: replica 1 killed: started again (3/3, a new pid)"
	is "$(replica_pid web 0) $(replica_pid web 2)" "$p0 $p2" \
	    "$engine: ... replicas 0 and 2 untouched"
	p1=$(replica_pid web 1)
	kill -KILL "$p0"
	wait_t 30 running_without 3/3 "$p0"
	ok $? "$engine: replica 0 killed: started again (3/3, a new pid)"
	is "$(replica_pid web 1) $(replica_pid web 2)" "$p1 $p2" \
	    "$engine: ... replicas 1 and 2 untouched"
	pids=$(ps_field web pids)
	is "$(held 3)" "$pids" "$engine: the three answer on the port again"

	# hk-scale killed and started again: the same three are adopted.
	kill -KILL "$scale_pid"
	wait_for 5 gone "$scale_pid"
	start_scale
	ok $? "$engine: hk-scale starts again"
	wait_t 30 more_in "$T/scale.log" 'service=fn/web: replica 2: adopted' 0
	ok $? "$engine: it adopts replica 2"
	wait_t 30 replicas_are web 3/3
	is "$(ps_field web pids)" "$pids" \
	    "$engine: the same three pids, none restarted"
	like "$(cat "$T/scale.log")" 'listening socket on port [0-9]+ taken back' \
	    "$engine: the shared socket is taken back from a replica"
	p2=$(replica_pid web 2)
	kill -KILL "$p2"
	wait_t 30 running_without 3/3 "$p2"
	ok $? "$engine: a replica killed after the restart starts again"
	pids=$(ps_field web pids)
	is "$(held 3)" "$pids" \
	    "$engine: ... on the same socket: the three answer on the port"

	# replicas = 1, then 2: a scale, not a release.
	p0=$(replica_pid web 0)
	p1=$(replica_pid web 1)
	p2=$(replica_pid web 2)
	write_app 1
	is "$?" 0 "$engine: hk apply of replicas = 1 succeeds"
	wait_t 30 all_dead "$p1" "$p2"
	ok $? "$engine: replicas 1 and 2 are stopped"
	wait_t 30 replicas_are web 1/1
	ok $? "$engine: hk ps shows 1/1"
	is "$(ps_field web replicas)" "0" "$engine: replica 0's row alone"
	is "$(replica_pid web 0)" "$p0" "$engine: replica 0 was not restarted"
	write_app 2
	is "$?" 0 "$engine: hk apply of replicas = 2 succeeds"
	wait_t 30 replicas_are web 2/2
	ok $? "$engine: hk ps shows 2/2"
	is "$(replica_pid web 0)" "$p0" "$engine: replica 0 still not restarted"
	pids=$(ps_field web pids)
	is "$(held 2)" "$pids" "$engine: two replicas answer on the port"

	# hk stop stops every replica; hk start starts them all again.
	run hk stop fn/web
	is "$rc" 0 "$engine: hk stop fn/web"
	wait_t 30 all_dead $pids
	ok $? "$engine: ... both replicas stopped"
	wait_t 30 replicas_are web 0/0
	ok $? "$engine: ... hk ps shows 0/0"
	run hk start fn/web
	is "$rc" 0 "$engine: hk start fn/web"
	wait_t 30 replicas_are web 2/2
	ok $? "$engine: ... 2/2 again"

	# SIGTERM: every replica stops.
	allp="$(ps_field web pids) $(ps_field wk pids)"
	stop_pid "$scale_pid"
	wait_t 10 all_dead $allp
	ok $? "$engine: hk-scale's SIGTERM stops every replica"
	is "$(ls "$RUN/cred" 2>/dev/null | wc -l)" 0 \
	    "$engine: ... and their secrets directories go with them"
	stop_pid "$events_pid"
	: >"$T/scale.log"
done
pg_missing_is_failure
done_testing
