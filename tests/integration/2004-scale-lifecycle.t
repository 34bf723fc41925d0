#!/bin/sh
# hk-scale lifecycles, on SQLite and PostgreSQL: always-on services (no
# [serverless], or min_replicas = 1) started at start-up and restarted
# after a crash; a manual stop and start; a revision applied during a cold
# start (which goes on; the new revision replaces it); a hk-scale killed
# with SIGKILL whose successor adopts what still runs (and forgets what
# does not), then stops it all on SIGTERM.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

# life/cold, once $T/cold.hold exists, starts only once $T/cold.go does
# too (fn/held): a cold start that lasts until the test releases it.
write_app() {	# write_app FILE TAG-OF-COLD
	{
		printf 'schema_version = 1\nname = "life"\n'
		fn_service db
		fn_service warm '[services.warm.serverless]
min_replicas = 1'
		fn_service web '[services.web.serverless]'
		cat <<APP

[services.cold]
command = ["sh", "$FN/held", "$T/cold", "python3", "$FN/scale-http.py"]
public = true
[services.cold.environment]
SCALE_TAG = "$2"
[services.cold.serverless]
APP
	} >"$1"
}

# state_pid SERVICE: sets $sp to "STATE PID" of the service in one status
# ("STATE -" without a pid), which a failed check shows.
state_pid() {
	sp=$(ctl '{"op":"status"}' | grep -o "{[^{}]*\"service\":\"$1\"[^{}]*}" |
	    sed 's/.*"pid":\([0-9a-z]*\).*"state":"\([a-z]*\)".*/\2 \1/;s/ null$/ -/')
}
starting_with_pid() {	# starting_with_pid SERVICE (for wait_t)
	state_pid "$1"
	case $sp in
	"starting "[0-9]*) return 0 ;;
	esac
	return 1
}

ready_of() {	# ready_of FILE SERVICE: the last ready line of that service
	grep "\"op\":\"ready\".*\"service\":\"$2\"" "$1" | tail -1
}

for engine in $(engines); do
	rm -f "$T/cold.hold" "$T/cold.go"
	new_store "$engine" life
	scale_operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	write_app "$T/app.toml" v1
	hk apply "$T/app.toml" >/dev/null
	rm -f "$T/scale.log" "$T/scale2.log"
	daemon scale hk-scale -g 2
	ok $? "$engine: hk-scale starts"
	subscribe "$T/sub.out"
	for s in db warm web cold; do
		wait_for 10 seen "$T/sub.out" "\"op\":\"ready\".*\"service\":\"life/$s\""
	done
	is "$(count "$T/sub.out" '"op":"ready"')" 4 \
	    "$engine: ordinary, min_replicas = 1 and new services start at start-up"
	run hk ps
	like "$out" '^life	db	running	1	' "$engine: hk ps shows the ordinary service running"

	# A crash of an always-on service: down, then a restart.
	for s in db warm; do
		pid=$(status_of life/$s pid)
		kill -KILL "$pid"
		wait_for 5 seen "$T/sub.out" "\"op\":\"down\",\"reason\":\"exited\",\"service\":\"life/$s\""
		ok $? "$engine: life/$s: a killed instance is reported down (exited)"
		wait_for 10 more_than 1 "$T/sub.out" "\"op\":\"ready\".*\"service\":\"life/$s\""
		ok $? "$engine: life/$s: and restarted"
		new=$(status_of life/$s pid)
		alive "$new" && [ "$new" != "$pid" ]
		ok $? "$engine: life/$s: by a new process"
	done
	is "$(ctl '{"op":"sleep","service":"life/warm"}')" \
	    '{"error":"min_replicas is 1","ok":false}' \
	    "$engine: a min_replicas = 1 service does not sleep"
	is "$(ctl '{"op":"wake","service":"life/db"}')" \
	    '{"error":"not serverless","ok":false}' \
	    "$engine: an ordinary service is not woken"

	# A manual stop: the instance goes, wakes are refused until hk start.
	pid=$(status_of life/web pid)
	run hk stop life/web
	is "$out" "life/web	stopped" "$engine: hk stop"
	wait_for 5 dead "$pid"
	ok $? "$engine: stops the instance"
	wait_for 5 seen "$T/sub.out" '"op":"down","reason":"stopped","service":"life/web"'
	ok $? "$engine: down (stopped) is broadcast"
	is "$(ctl '{"op":"wake","service":"life/web"}')" \
	    '{"error":"stopped","ok":false}' "$engine: a wake is refused: stopped"
	is "$(status_of life/web state)" stopped "$engine: status says stopped"
	run hk start life/web
	wait_t 5 state_is life/web sleeping
	ok $? "$engine: hk start: the service sleeps (it passed its gate)"
	ctl '{"op":"wake","service":"life/web"}' >/dev/null
	wait_for 10 more_than 1 "$T/sub.out" '"op":"ready".*"service":"life/web"'
	ok $? "$engine: and wakes again"

	# A revision applied during a cold start of the revision that passed
	# its gate: that start goes on and serves the wake (a revision that
	# never passed is never what a wake starts: hk-scale(8) "Releases"),
	# then revision 2 passes its gate behind it and replaces it.  The
	# cold start (fn/held) lasts until revision 2 is applied; then it is
	# released.
	ctl '{"op":"sleep","service":"life/cold"}' >/dev/null
	touch "$T/cold.hold"
	ctl '{"op":"wake","service":"life/cold"}' >/dev/null
	wait_t 5 starting_with_pid life/cold
	r=$?
	ok $r "$engine: a cold start is under way (held)"
	[ $r -eq 0 ] || diag "status says '$sp'"
	old=${sp#starting }
	write_app "$T/app.toml" v2
	run hk apply "$T/app.toml"
	like "$out" 'life/cold	revision 2	updated' "$engine: revision 2 is applied"
	wait_for 5 grep -q 'service=life/cold: revision 1 serves until revision 2 passes its readiness gate' \
	    "$T/scale.log"
	ok $? "$engine: revision 1 serves until revision 2 passes its gate"
	touch "$T/cold.go"
	wait_for 10 more_than 1 "$T/sub.out" '"op":"ready","revision":1,"service":"life/cold"'
	ok $? "$engine: the start of revision 1 goes on and serves the wake"
	wait_for 10 seen "$T/sub.out" '"op":"ready","revision":2,"service":"life/cold"'
	ok $? "$engine: then revision 2 becomes ready"
	wait_for 10 dead "$old"
	ok $? "$engine: and revision 1's process is stopped"
	ep=$(ready_of "$T/sub.out" life/cold | sed 's/.*"endpoint":"\([^"]*\)".*/\1/')
	like "$(get "http://$ep/")" '^v2 pid=' "$engine: the endpoint serves revision 2"

	# SIGKILL: the instances outlive hk-scale; the next one adopts them.
	for s in db warm web cold; do
		eval "pid_$s=\$(status_of life/$s pid)"
	done
	kill -KILL "$scale_pid"
	wait_for 5 dead "$scale_pid"
	kill "$sub_pid" 2>/dev/null
	alive "$pid_db" && alive "$pid_warm" && alive "$pid_cold"
	ok $? "$engine: instances are still running after SIGKILL of hk-scale"
	kill -KILL "$pid_web"
	wait_for 5 dead "$pid_web"
	daemon scale2 hk-scale -g 2
	ok $? "$engine: a new hk-scale starts"
	subscribe "$T/sub2.out"
	# The ready messages that begin a subscription follow its reply.
	wait_for 5 seen "$T/sub2.out" '"op":"ready".*"service":"life/cold"'
	for s in db warm cold; do
		eval "p=\$pid_$s"
		state_pid life/$s
		is "$sp" "running $p" "$engine: life/$s is adopted, same pid"
	done
	is "$(ready_of "$T/sub2.out" life/cold)" "$(ready_of "$T/sub.out" life/cold)" \
	    "$engine: a new subscriber gets ready for the adopted instance"
	like "$(get "http://$ep/")" '^v2 pid=' "$engine: which still serves"
	grep -q "service=life/web: pid $pid_web of an earlier run is gone" "$T/scale2.log"
	ok $? "$engine: a dead instance's row is forgotten"
	is "$(status_of life/web state) $(instance life/web)" "sleeping none" \
	    "$engine: and its service sleeps"
	kill -TERM "$scale2_pid"
	wait_for 10 dead "$scale2_pid"
	wait "$scale2_pid"
	is "$?" 0 "$engine: SIGTERM: exit 0"
	dead "$pid_db" && dead "$pid_warm" && dead "$pid_cold"
	ok $? "$engine: the adopted instances are stopped too"
	is "$(instance life/cold)" none "$engine: and their rows deleted"
	kill "$sub_pid" 2>/dev/null
done
pg_missing_is_failure
done_testing
