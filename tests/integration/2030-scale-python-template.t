#!/bin/sh
# start_from = "python-template", on SQLite and PostgreSQL, exec backend
# with a cgroup freezer: the first wake of a function made by
# "hk new python" starts hk-scale's Python template (its log says ready)
# and the next wake is forked from it: the instance's command line is
# the template's (no exec), its parent is hk-scale, it leads its own
# session, runs as nobody in a cgroup of its own, not the template's.
# A function of the fixture tmpl-fn.py says how it started: http.server
# was imported before its first line ran, with its user, directory,
# argv, environment and its secret's CREDENTIALS_DIRECTORY file.  A stop
# ends it; a suspend freezes its cgroup and the next request thaws the
# same pid; a start that is never ready is killed at its deadline.  The
# template killed with SIGKILL is restarted, and the next wake is forked
# from the new one.  Its memory is a metric.  hk-scale killed and started
# again: the old template ends, one template runs.  hk validate refuses the key with another
# backend and with a command the template cannot run.
. tests/integration/lib.sh
. tests/integration/lib/gw.sh

TFN=$HK_TOP/tests/integration/fn/tmpl-fn.py
nobody_uid=$(id -u nobody)

write_app() {
	cat >"$T/tf.toml" <<APP
schema_version = 1
name = "tf"

[services.fn]
command = ["python3", "$TFN", "one", "two"]
public = true
readiness = "socket"
secrets = ["DB_PASSWORD"]
[services.fn.environment]
GREETING = "hello-template"
[services.fn.serverless]
start_from = "python-template"
startup_timeout_seconds = 20

[services.sus]
command = ["python3", "$TFN"]
public = true
readiness = "socket"
[services.sus.environment]
REVISION = "${1:-1}"
[services.sus.serverless]
start_from = "python-template"
idle_action = "suspend"
suspend_max_seconds = 604800

[services.never]
command = ["python3", "$TFN", "never"]
public = true
readiness = "http:/"
[services.never.serverless]
start_from = "python-template"
startup_timeout_seconds = 5
APP
}

# ps_pid SERVICE: its instance's pid (hk ps), 0 if none
ps_pid() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        print(s["instance"]["pid"] if s["instance"] else 0)' "$1"
}

# field KEY: of the JSON in $T/body
field() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	    "$T/body" "$1"
}

# tmpl_ready: the pid of the newest template hk-scale said ready
tmpl_ready() {
	sed -n 's/.*python template python3 for [a-z]*: pid \([0-9]*\) ready.*/\1/p' \
	    "$T/scale.log" | tail -1
}

# ready_count: how many times a template was said ready
ready_count() {
	count 'python template python3 for [a-z]*: pid [0-9]* ready' "$T/scale.log"
}

more_ready() {
	[ "$(ready_count)" -gt "$1" ]
}

dead() {
	! alive "$1"
}

cmdline() {
	tr '\0' ' ' <"/proc/$1/cmdline"
}

ppid_of() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f2
}

sid_of() {
	sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f4
}

# freezer_cg PID: its cgroup2 (freezer = "cgroup2")
freezer_cg() {
	sed -n 's/^0:://p' "/proc/$1/cgroup"
}

# from_template PID TPID: PID is a fork of template TPID, reparented to
# hk-scale, in a session and cgroup of its own
from_template() {
	[ "$(cmdline "$1")" = "$(cmdline "$2")" ] &&
	    [ "$(ppid_of "$1")" = "$scale_pid" ] &&
	    [ "$(sid_of "$1")" = "$1" ] &&
	    case $(freezer_cg "$1") in */hk.*) true ;; *) false ;; esac &&
	    [ "$(freezer_cg "$1")" != "$(freezer_cg "$2")" ]
}

answers() {	# answers HOST: 200 with JSON in $T/body
	[ "$(gw_code "$1" /)" = 200 ]
}

# suspend SERVICE: fence, sleep (idle_action = "suspend"), wait for it
suspend() {
	wait_t 20 state_is "$1" running &&
	    [ "$(gw_ctl "{\"op\":\"fence\",\"service\":\"$1\",\"idle_seconds\":0}")" = '{"ok":true}' ] &&
	    [ "$(scale_ctl "{\"op\":\"sleep\",\"service\":\"$1\"}")" = '{"ok":true}' ] &&
	    wait_t 5 scale_is "$1" suspended
}

scale_is() {
	[ "$(scale_ctl '{"op":"status"}' "services.$1.state" 2>/dev/null)" = "$2" ]
}

never_forked() {	# the pid of tf/never's first start from the template
	_n=$(sed -n 's/.*service=tf\/never: started pid \([0-9]*\) .*from the python template$/\1/p' "$T/scale.log" | head -1)
	[ -n "$_n" ] && echo "$_n"
}

# never_woken: tf/never was started from the template, or a request
# (answered when its start fails) is sent to start it
never_woken() {
	never_forked >/dev/null && return 0
	curl -sS -o /dev/null --max-time 10 -H 'Host: never.tf.localhost' \
	    "$GW_URL/" 2>/dev/null
	false
}

more_in_gw() {	# more_in_gw N: the gateway subscribed more than N times
	[ "$(count 'scale.sock: subscribed' "$T/gw.log")" -gt "$1" ]
}

cg_frozen() {	# cg_frozen PID: its cgroup says so
	_d=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)$(freezer_cg "$1")
	grep -qx 'frozen 1' "$_d/cgroup.events"
}

# templates: processes running the template's program that lead their
# session (not a spare fork, which waits in the template's), are no
# instance of hk ps, and are this installation's: in a cgroup hk-scale
# names hk.INSTALLATION.PID.N (the suite runs other tests' templates
# beside this one's); "no installation" until hk-scale has said it
templates() {
	_mine=$(sed -n 's/^hk-scale: info: installation //p' "$T/scale.log" |
	    tail -n 1)
	[ -n "$_mine" ] || { echo "no installation"; return; }
	_inst=" $(hk ps --json | python3 -c '
import json, sys
print(" ".join(str(s["instance"]["pid"]) for s in json.load(sys.stdin)
               if s["instance"]))') "
	for _p in $(pgrep -f "$HK_BUILD/bin/hk-python-template\$"); do
		[ "$(sid_of "$_p" 2>/dev/null)" = "$_p" ] || continue
		grep -q "/hk\.$_mine\.[0-9]*\.[0-9]*\$" "/proc/$_p/cgroup" \
		    2>/dev/null || continue
		case $_inst in *" $_p "*) ;; *) echo "$_p" ;; esac
	done | wc -l
}

pg_missing_is_failure

for e in $(engines); do
	new_store "$e" tf || { ok 1 "$e: store"; continue; }
	rm -f "$T"/*.log
	GW_STATE=$STORE
	mport=$(free_port)
	gw_config "secret_key_file = \"$T/$e.key\"" 'freezer = "cgroup2"' \
	    '[metrics]' "scale = \"127.0.0.1:$mport\""
	V=$(python3 -c 'import secrets; print("hk-tmpl-" + secrets.token_hex(16))')
	printf '%s' "$V" | hk secret set tf DB_PASSWORD >/dev/null 2>&1
	ok $? "$e: hk secret set"
	hk new python tp "$T/$e-tp" >/dev/null
	ok $? "$e: hk new python tp"
	grep -q '^start_from = "python-template"$' "$T/$e-tp/hk.toml"
	ok $? "$e: the starter opts in (start_from = \"python-template\")"
	write_app
	run hk apply "$T/$e-tp/hk.toml"
	is "$rc" 0 "$e: hk apply of the starter"
	run hk apply "$T/tf.toml"
	is "$rc" 0 "$e: hk apply of tf"
	e2e_start
	ok $? "$e: hk-events, hk-scale and hk-activate are up"

	# The first starts (readiness gates) start the template, and run
	# their commands meanwhile.
	wait_t 20 answers tp.tp.localhost
	ok $? "$e: the starter answers"
	wait_t 30 more_ready 0
	ok $? "$e: hk-scale says the python template is ready"
	tpid=$(tmpl_ready)
	is "$(sed -n 's/^Uid:\t\([0-9]*\).*/\1/p' "/proc/$tpid/status")" \
	    "$nobody_uid" "$e: the template runs as nobody, not root"
	like "$(cmdline "$tpid")" "python3 .*/hk-python-template $" \
	    "$e: the template is hk-python-template"
	like "$(curl -sS --max-time 10 "http://127.0.0.1:$mport/metrics")" \
	    "hk_template_memory_bytes\\{runtime=\"python3\",user=\"nobody\",pid=\"$tpid\"\\} [1-9][0-9]{6,}" \
	    "$e: its resident memory is a metric (hk_template_memory_bytes)"
	put_to_sleep tp/tp && put_to_sleep tf/fn
	ok $? "$e: the gate's instances put to sleep"
	# tf/sus's gate instance was suspended, not stopped: a new revision
	# replaces it, started from the template.
	write_app 2
	run hk apply "$T/tf.toml"
	is "$rc" 0 "$e: a new revision of tf/sus"
	wait_t 20 answers tp.tp.localhost
	ok $? "$e: woken again through the gateway"
	like "$(cat "$T/body")" "^hello from tp: GET /" "$e: the starter's answer"
	pid=$(ps_pid tp/tp)
	from_template "$pid" "$tpid"
	ok $? "$e: pid $pid is a fork of template $tpid: its command line, hk-scale its parent, its own session and cgroup"
	grep -q "service=tp/tp: started pid $pid revision .* from the python template" "$T/scale.log"
	ok $? "$e: hk-scale says it started it from the template"

	# What a bare start gives, a fork gives too.
	wait_t 20 answers fn.tf.localhost
	ok $? "$e: tf/fn answers"
	is "$(field preloaded)" True "$e: http.server was imported before its first line ran"
	fpid=$(field pid)
	is "$fpid" "$(ps_pid tf/fn)" "$e: the pid that answers is the instance's"
	from_template "$fpid" "$tpid"
	ok $? "$e: forked from the template too (same user and interpreter)"
	is "$(field uid)" "$nobody_uid" "$e: runs as nobody"
	is "$(field greeting)" hello-template "$e: its environment table"
	is "$(field argv)" "['$TFN', 'one', 'two']" "$e: its argv, as python3 gives it"
	is "$(field cwd)" "$T" "$e: its directory"
	is "$(field secret)" "$(printf '%s' "$V" | sha256sum | cut -d' ' -f1)" \
	    "$e: its secret's file under CREDENTIALS_DIRECTORY"
	is "$(field listen_pid)" "$fpid" "$e: LISTEN_PID is its own pid"
	put_to_sleep tf/fn
	ok $? "$e: stopped"
	wait_t 10 dead "$fpid"
	ok $? "$e: pid $fpid is gone"

	# Suspend: its cgroup frozen, the same pid thawed by a request.
	wait_t 20 grep -q 'service=tf/sus: started pid [0-9]* revision 2 .*from the python template$' "$T/scale.log"
	ok $? "$e: revision 2 of tf/sus started from the template"
	wait_t 20 answers sus.tf.localhost
	ok $? "$e: tf/sus answers"
	spid=$(field pid)
	from_template "$spid" "$tpid"
	ok $? "$e: pid $spid is a fork of the template"
	suspend tf/sus
	ok $? "$e: tf/sus suspended"
	cg_frozen "$spid"
	ok $? "$e: its cgroup is frozen"
	wait_t 20 answers sus.tf.localhost
	ok $? "$e: a request thaws it"
	is "$(field pid)" "$spid" "$e: answered by the same pid"

	# Deadline: never ready, killed after startup_timeout_seconds (its
	# gate's start failed: requests start it again, one from the
	# template once hk-scale is past the gate's).
	wait_t 30 never_woken
	npid=$(never_forked)
	ok $? "$e: tf/never, never ready, is started from the template (pid $npid)"
	wait_t 20 dead "$npid"
	ok $? "$e: and killed at its deadline"
	grep -q "service=tf/never: stopping pid $npid\$" "$T/scale.log" &&
	    wait_t 10 grep -q 'service=tf/never: unable to start revision 1: not ready within 5 s' "$T/scale.log"
	ok $? "$e: hk-scale says: not ready within 5 s"

	# The template killed: restarted, and the next wake uses the new one.
	n=$(ready_count)
	kill -KILL "$tpid"
	wait_t 30 more_ready "$n"
	ok $? "$e: the template killed with SIGKILL is restarted"
	tpid2=$(tmpl_ready)
	[ "$tpid2" != "$tpid" ] && dead "$tpid"
	ok $? "$e: a new pid ($tpid2), the old one gone"
	put_to_sleep tp/tp
	wait_t 20 answers tp.tp.localhost
	ok $? "$e: the next wake answers"
	from_template "$(ps_pid tp/tp)" "$tpid2"
	ok $? "$e: forked from the new template"

	# hk-scale killed and started again: one template.
	n=$(ready_count)
	subs=$(count 'scale.sock: subscribed' "$T/gw.log")
	kill -KILL "$scale_pid"
	wait "$scale_pid" 2>/dev/null
	wait_t 10 dead "$tpid2"
	ok $? "$e: hk-scale killed: its template ends (EOF on its socket)"
	daemon scale hk-scale -v -g 2
	ok $? "$e: hk-scale started again"
	wait_t 10 more_in_gw "$subs"
	put_to_sleep tp/tp
	wait_t 20 answers tp.tp.localhost
	ok $? "$e: the starter wakes"
	wait_t 30 more_ready "$n"
	n=$(ready_count)
	put_to_sleep tp/tp
	wait_t 20 answers tp.tp.localhost
	ok $? "$e: and wakes again"
	is "$(templates)" 1 "$e: one template runs"

	stop_pid "$gw_pid"
	stop_pid "$scale_pid"
	stop_pid "$events_pid"
	wait_t 10 test "$(templates)" = 0
	ok $? "$e: hk-scale stopped: no template is left"
done

# The key is refused where it cannot do what it says.
sed 's|^readiness = "socket"$|backend = "container"\nimage = "x:1"|' \
    "$T/tf.toml" >"$T/bad.toml"
run hk validate "$T/bad.toml"
like "$err" 'services\.fn\.serverless\.start_from: "python-template" needs backend "exec", not "container"' \
    "hk validate: start_from with another backend is refused"
sed 's|"python3", "'"$TFN"'", "one", "two"|"sh", "-c", "exit 0"|' \
    "$T/tf.toml" >"$T/bad2.toml"
run hk validate "$T/bad2.toml"
like "$err" 'services\.fn\.serverless\.start_from: "python-template" needs a command python3' \
    "hk validate: a command the template cannot run is refused"
done_testing
