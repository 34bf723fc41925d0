#!/bin/sh
# The systemd backend under systemd as PID 1 in a container
# (scripts/systemd-ct; make check shares one through HK_SYSTEMD_CT, a test
# run alone starts its own), on SQLite and on PostgreSQL (the suite's
# server, its socket bound into the container).  The four daemons run
# from the units of etc/systemd, renamed for this test, hk-scale as root
# (to manage units: hk-scale(8)); the gateway is reached on the
# host's 127.0.0.1.  Each instance is a transient unit hk-scale makes over
# D-Bus.
#
# A real Python function is woken through the gateway (200), runs as a
# dynamic user with no_new_privs, no capabilities and a read-only system
# (/proc of its main process), goes to sleep when idle (its unit gone),
# and three simultaneous POSTs while it sleeps wake it once and are
# handled three times (its journal shows them).  A service of a named
# user runs as that user; a Type=notify one is ready when it says so; a
# command that cannot run fails the start with systemd's reason.  A
# service with a source runs from its read-only copy, runtime_dir/src/HASH,
# its unit's WorkingDirectory, readable by its dynamic user.  Where
# systemd has no cgroup v2 freezer, a service with idle_action =
# "suspend" is stopped when idle instead (9212 has the freezer).
# SIGKILL of hk-scale (systemd restarts it) while a service runs: the
# unit is adopted, still answers from the same process, and still goes
# to sleep; while one starts (held by the test: fn/held): the unit left
# starting is stopped, and the parked request is answered by a new one.
# A unit of this installation that no row describes is stopped at the
# restart, another installation's is not.  A clean stop leaves no unit.
# Then hk-scale as a user of its own, on the system bus: refused by
# systemd until a polkit rule grants that user manage-units, then at work.
# time_unit_ms = 20 makes idle_seconds = 200 last 4 s: while the test
# looks at an awake instance, hk-idle is held (hold_idle), so that a busy
# machine's slowness does not put it to sleep meanwhile.
. tests/integration/lib.sh
. tests/integration/lib/systemd.sh

for tool in podman curl; do
	command -v $tool >/dev/null || { ok 1 "$tool is installed"; done_testing; }
done
UNITS="events scale activate idle"
sd_container || done_testing
N=
ct_stop() {	# the daemons of this run, and whatever they left
	[ -n "$N" ] || return 0
	release_idle
	for u in $UNITS; do
		ct systemctl stop "$N-$u" >/dev/null 2>&1
	done
	ct systemctl stop "hk-svc-$APP.*" >/dev/null 2>&1
	ct systemctl reset-failed "$N-*" >/dev/null 2>&1
	ct sh -c "rm -rf /etc/systemd/system/$N-* /etc/$N \
	    /etc/systemd/system/hk-svc-$APP.py-.service.d" >/dev/null 2>&1
}
ct_done() {
	ct_stop
	if [ -n "${PU:-}" ]; then
		ct rm -f "/etc/polkit-1/rules.d/50-$PU.rules"
		ct userdel "$PU" >/dev/null 2>&1
	fi
	[ -n "$own_ct" ] && "$HK_TOP/scripts/systemd-ct" stop "$own_ct"
}
trap 'ct_done; _cleanup' EXIT
# The units' output goes to the journal.
ct systemctl start systemd-journald
ok $? "the container's journal runs"

# journal UNIT...: the lines of those units (globs allowed), as text
journal() {
	_a=
	for _u in "$@"; do
		_a="$_a -u $_u"
	done
	# shellcheck disable=SC2086
	ct journalctl $_a -o cat --no-pager 2>/dev/null
}
# nlines PATTERN UNIT...: how many journal lines of those units match
nlines() {
	_p=$1
	shift
	journal "$@" | grep -c -- "$_p"
}
# pst PID FIELD: a field of /proc/PID/status in the container
pst() {
	ct sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' ' |
	    sed 's/ *$//'
}
four() { echo "$1 $1 $1 $1"; }
# snap UNIT: in one look (the instance may go to sleep meanwhile) its
# properties, its main process's credentials, its root mount and its
# exposure, as KEY=value lines for sv
snap() {
	ct sh -c 'u=$1
	systemctl show -p MainPID,Type,DynamicUser,NoNewPrivileges,PrivateTmp \
	    -p ProtectSystem,Description,User,MemoryMax,CPUQuotaPerSecUSec "$u"
	p=$(systemctl show -p MainPID --value "$u")
	for f in Uid NoNewPrivs CapEff CapBnd CapAmb; do
		printf "%s=%s\n" $f "$(sed -n "s/^$f:[[:space:]]*//p" \
		    /proc/$p/status | tr "\t" " ")"
	done
	printf "root=%s\n" "$(awk "\$5 == \"/\" { print \$6 }" \
	    /proc/$p/mountinfo | tail -1)"
	printf "security=%s\n" "$(systemd-analyze security --no-pager "$u" |
	    tail -1)"' sh "$1" >"$T/snap"
}
sv() { sed -n "s/^$1=//p" "$T/snap"; }
# units PATTERN: the active (or starting, or stopping) units matching
units() {
	ct systemctl list-units --plain --no-legend --state=active,activating,deactivating \
	    "$1" | awk '{ print $1 }'
}
nunits() { units "$1" | grep -c .; }
prop() { ct systemctl show -p "$2" --value "$1"; }
# logged PATTERN: a line of this run's hk-scale matches (grep -E)
logged() { journal "$N-scale" | grep -Eq -- "$1"; }
# nlogged PATTERN: how many
nlogged() { journal "$N-scale" | grep -Ec -- "$1"; }
# saw PATTERN: diag of this run's hk-scale's lines that match, or its last
saw() {
	diag "hk-scale's lines matching '$1' (else its last):"
	{ journal "$N-scale" | grep -E -- "$1" || journal "$N-scale"; } |
	    tail -n 8 | sed 's/^/#   /'
}
# jhas UNIT PATTERN: a journal line of UNIT matches (grep -E)
jhas() { journal "$1" | grep -Eq -- "$2"; }
# more PATTERN UNIT N: at least N lines of UNIT match (grep)
more() { [ "$(nlines "$1" "$2")" -ge "$3" ]; }
has_unit() { [ -n "$(units "$1")" ]; }
no_unit() { [ -z "$(ct systemctl list-units --all --plain --no-legend "$1")" ]; }
hkc() { ct env "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" "PATH=$CT_BUILD/bin:/usr/bin:/bin" "$@"; }
# field SERVICE EXPR: of "hk ps --json", python on s (its entry)
field() {
	hkc hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["service"] == sys.argv[1]:
        i = s["instance"] or {}
        print(eval(sys.argv[2]))' "$1" "$2"
}
state_is() { [ "$(field "$1" 's["state"]')" = "$2" ]; }
pid_of() { field "$1" 'i.get("pid", 0)'; }
code() {	# code SERVICE PATH [curl args]: the status, body in $T/body
	_s=$1
	_p=$2
	shift 2
	curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: $_s.$APP.localhost" "$@" "http://127.0.0.1:$PORT$_p"
}
# hk-scale killed with SIGKILL; systemd starts it again (Restart=).
scale_pid() { prop "$N-scale" MainPID; }
restarted() {	# restarted OLDPID: a new hk-scale is ready
	_p=$(scale_pid)
	[ "$_p" != "$1" ] && [ "$_p" != 0 ] &&
	    [ "$(ct systemctl is-active "$N-scale")" = active ]
}
kill_scale() {
	_old=$(scale_pid)
	sd_kill_prog "$N-scale"
	wait_t 10 restarted "$_old"
}
# hold_idle: hk-idle stopped (SIGSTOP) while the test looks at an awake
# instance, which its idle time of 4 s would otherwise put to sleep on a
# busy machine before the look is over (9200 does the same); released
# (release_idle, SIGCONT) before a wait for a sleep.  Held only while the
# services the test then wakes are asleep: then no fence of theirs is
# under way, which a held hk-idle would leave their requests parked
# behind.  Its subscription, lost if hk-scale restarts meanwhile, is made
# again once released (hk-idle(8)).
idle_pid=
idle_state() { ct sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
idle_held() { [ "$(idle_state "$idle_pid")" = T ]; }
hold_idle() {
	# hk-idle itself, not the hk-lease -j that is the unit's main process
	idle_pid=$(sd_prog "$N-idle")
	[ -n "$idle_pid" ] && ct kill -STOP "$idle_pid" || idle_pid=""
	[ -n "$idle_pid" ] && wait_t 5 idle_held && return 0
	diag "hk-idle (pid $idle_pid) not held: state $(idle_state "$idle_pid")"
	return 1
}
release_idle() {
	[ -n "$idle_pid" ] || return 0
	ct kill -CONT "$idle_pid"
	idle_pid=
}

FN=$CT_TOP/tests/integration/fn
EX=$CT_TOP/etc/examples

# stack TAG USER ENGINE: N (the units' prefix), APP and PORT of a run, its
# operator config on ENGINE, and the shipped units under names of the run,
# as USER, with directories of the run.
stack() {
	N=hkt$$$1
	APP=sd$$$1
	case $3 in
	sqlite)
		CSTORE="sqlite:///var/lib/$N/state.db"
		;;
	postgres)
		new_store postgres "sd$1" || return 1
		# the server's socket is at /run/hk-pg in the container
		CSTORE=$(printf '%s\n' "$STORE" |
		    sed "s|host=[^&]*|host=/run/hk-pg|")
		;;
	esac
	PORT=$(free_port)
	ct mkdir -p "/etc/$N"
	ct sh -c "cat >/etc/$N/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "$CSTORE"
runtime_dir = "/run/$N"
time_unit_ms = 20
secret_key_file = "/etc/$N/secret.key"
CONF
	echo "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" |
	    ct sh -c "cat >/etc/$N/api.env"
	sd_units "$N" "$2"
}

# stack_start E: the four units, ready (Type=notify)
stack_start() {
	ct systemctl daemon-reload
	# shellcheck disable=SC2046
	run ct systemctl start $(for u in $UNITS; do echo "$N-$u"; done)
	is "$rc" 0 "$1: the four units start (Type=notify: ready)"
	[ "$rc" = 0 ] && return 0
	printf '%s\n' "$err" | sed 's/^/# /'
	# Each unit's own journal: why one that failed did (its program's
	# last words, and systemd's).
	for u in $UNITS; do
		diag "the end of $N-$u's journal ($(ct systemctl is-active "$N-$u")):"
		ct journalctl -u "$N-$u" -o short-monotonic --no-pager 2>/dev/null |
		    tail -n 15 | sed 's/^/#   /'
	done
	return 1
}

run_engine() {
	e=$1
	# As root: hk-scale must be, or have polkit's leave, to manage
	# units; the others here because the user hakopod is 9200's to
	# create.
	stack "${e%"${e#?}"}" root "$e" || { ok 1 "$e: store"; return; }
	ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.py]
command = ["python3", "functions/hello.py"]
directory = "$EX"
backend = "systemd"
public = true
readiness = "http:/"
[services.py.serverless]
idle_seconds = 200
startup_timeout_seconds = 20

[services.as]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
user = "daemon"
size = "medium"
public = true
[services.as.serverless]
min_replicas = 1

[services.nt]
command = ["sh", "$FN/held", "/run/$N/slow", "python3", "$FN/scale-http.py"]
backend = "systemd"
public = true
readiness = "notify"
[services.nt.environment]
SCALE_DELAY = "1"
SCALE_TAG = "notified"
[services.nt.serverless]
idle_seconds = 200
startup_timeout_seconds = 60

[services.bad]
command = ["/nonexistent/program"]
backend = "systemd"
public = true
[services.bad.serverless]

[services.sr]
source = "code"
command = ["python3", "app.py"]
backend = "systemd"
public = true
[services.sr.serverless]
idle_seconds = 200

[services.su]
command = ["python3", "$FN/scale-http.py"]
backend = "systemd"
public = true
[services.su.serverless]
idle_seconds = 50
idle_action = "suspend"

[services.sc]
command = ["python3", "$FN/secret-http.py"]
backend = "systemd"
public = true
secrets = ["DB_PASSWORD"]
[services.sc.serverless]
idle_seconds = 200
APP
	ct mkdir -p "/etc/$N/code"
	ct sh -c "cat >/etc/$N/code/app.py" \
	    <"$HK_TOP/tests/integration/fn/src-app.py"
	echo "src-one" | ct sh -c "cat >/etc/$N/code/body.txt"
	# An operator's drop-in for one service's units
	ct mkdir -p "/etc/systemd/system/hk-svc-$APP.py-.service.d"
	printf '[Service]\nMemoryMax=200M\n' | ct sh -c \
	    "cat >/etc/systemd/system/hk-svc-$APP.py-.service.d/limit.conf"
	stack_start "$e" || return
	V=$(python3 -c 'import secrets; print("hk-sd-" + secrets.token_hex(20))')
	printf '%s' "$V" | hkc hk secret set "$APP" DB_PASSWORD >/dev/null 2>&1
	ok $? "$e: hk secret set (the value on standard input)"
	run hkc hk apply "/etc/$N/app.toml"
	is "$rc" 0 "$e: hk apply of seven services with backend = \"systemd\""
	[ "$rc" = 0 ] || diag "$err"

	# The readiness gate: each passes it once, then sleeps.
	wait_t 20 logged "service=$APP/py: draining -> sleeping"
	ok $? "$e: fn/py passed its readiness gate in a unit, and sleeps"
	like "$(journal "$N-scale")" \
	    "service=$APP/py: started unit hk-svc-$APP\\.py-1-[0-9a-f]+\\.service revision 1 at 127\\.0\\.0\\.1:[0-9]+ as a dynamic user" \
	    "$e: hk-scale started it as a transient unit"
	is "$(nunits "hk-svc-$APP.py-*")" 0 "$e: its unit is gone"
	like "$(journal "$N-scale")" 'systemd: connected \(/run/systemd/private\)' \
	    "$e: hk-scale, as root, talks to systemd on its own socket"

	# Woken through the gateway, and looked at with hk-idle held.
	hold_idle
	is "$(code py /hello)" 200 "$e: a request wakes the Python function"
	is "$(cat "$T/body")" "hello from python: GET /hello, 0 bytes received" \
	    "$e: and is answered by it"
	unit=$(units "hk-svc-$APP.py-*")
	like "$unit" "^hk-svc-$APP\\.py-1-[0-9a-f]+\\.service\$" \
	    "$e: one unit runs it"
	snap "$unit"
	is "$(sv Description)" "hk $APP/py revision 1 (/run/$N)" \
	    "$e: described as hk's, of this installation"
	is "$(sv MainPID)" "$(pid_of py)" "$e: hk ps shows its main process"
	uid=$(sv Uid | cut -d' ' -f1)
	is "$(sv Uid)" "$(four "$uid")" "$e: it runs as one user"
	ok "$([ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] && echo 0 || echo 1)" \
	    "$e: a dynamic one (uid $uid)"
	is "$(sv NoNewPrivs) $(sv CapEff) $(sv CapBnd) $(sv CapAmb)" \
	    "1 0000000000000000 0000000000000000 0000000000000000" \
	    "$e: with no_new_privs and no capabilities"
	like "$(sv root)" '^ro,' \
	    "$e: its system is read-only (ProtectSystem=strict)"
	is "$(sv Type) $(sv DynamicUser) $(sv NoNewPrivileges) $(sv PrivateTmp) $(sv ProtectSystem)" \
	    "exec yes yes yes strict" "$e: as the unit says"
	is "$(sv MemoryMax)" 209715200 "$e: the operator's drop-in applies"
	is "$(sv CPUQuotaPerSecUSec)" 1s "$e: one CPU, its size's (small)"
	x=$(sv security | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
	diag "$e: systemd-analyze security of $unit: $x" >&2
	awk -v x="$x" 'BEGIN { exit !(x != "" && x < 3.0) }'
	ok $? "$e: its exposure ($x) is under 3.0"

	# Idle: asleep, the unit stopped and collected.
	release_idle
	wait_t 10 state_is py sleeping
	ok $? "$e: idle, fn/py goes to sleep"
	wait_t 5 no_unit "$unit"
	ok $? "$e: its unit stopped and collected"
	wait_t 5 jhas "$unit" "^Stopped $unit"
	ok $? "$e: stopped by systemd" || journal "$unit" | tail -n 5 | sed 's/^/#   /'

	# idle_action = "suspend" where systemd has no freezer (cgroup v1 or
	# hybrid, as these machines boot): stopped instead.  9212 has one.
	if [ "$(ct stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
		is "$(code su /)" 200 "$e: a service with idle_action = \"suspend\" wakes"
		wait_t 20 logged "service=$APP/su: unable to freeze unit .*does not support freezing.*; stopping it instead"
		ok $? "$e: idle, systemd refuses to freeze it (no cgroup v2), and hk-scale says so"
		wait_t 10 state_is su sleeping
		ok $? "$e: it is stopped instead, and sleeps"
	fi

	# Three POSTs while it sleeps: one start, three invocations.
	starts=$(nlines "service=$APP/py: started unit" "$N-scale")
	for i in 1 2 3; do
		code py /three -d "n=$i" >"$T/p$i.code" &
		eval "p$i=\$!"
	done
	# shellcheck disable=SC2154
	wait "$p1" "$p2" "$p3"
	is "$(cat "$T/p1.code" "$T/p2.code" "$T/p3.code" | tr -d '\n')" \
	    200200200 "$e: three simultaneous POSTs to the sleeping function: 200"
	# The journal's lines, once they are in (journald reads them late
	# on a busy machine); the instance may be asleep by then.
	wait_t 5 more 'POST /three 200' "hk-svc-$APP.py-*" 3
	wait_t 5 more "service=$APP/py: started unit" "$N-scale" $((starts + 1))
	is "$(($(nlines "service=$APP/py: started unit" "$N-scale") - starts))" 1 \
	    "$e: one start"
	is "$(nlines 'POST /three 200' "hk-svc-$APP.py-*")" 3 \
	    "$e: its journal shows exactly three handler invocations"
	is "$(hkc hk logs -n all "$APP/py" | grep -c 'POST /three 200')" 3 \
	    "$e: hk logs shows them, from the journal"

	# A source: run from its copy, which the dynamic user reads.  Then
	# secrets.  Both looked at with hk-idle held, from their sleep (their
	# gates passed).
	wait_t 20 state_is sr sleeping
	wait_t 20 state_is sc sleeping
	hold_idle
	hash=$(field sr 's["code_hash"]')
	is "$(code sr /)" 200 "$e: a service with a source wakes"
	like "$(cat "$T/body")" "^src-one cwd=/run/$N/src/$hash write=(EROFS|EACCES)\$" \
	    "$e: and answers from runtime_dir/src/HASH, which it cannot write"
	is "$(prop "$(units "hk-svc-$APP.sr-*")" WorkingDirectory)" \
	    "/run/$N/src/$hash" "$e: its unit's WorkingDirectory"
	echo "src-edited" | ct sh -c "cat >/etc/$N/code/body.txt"
	is "$(code sr /) $(cut -d' ' -f1 "$T/body")" "200 src-one" \
	    "$e: an edit of the working copy changes nothing"

	# Secrets: systemd's own credentials (LoadCredential= of hk-scale's
	# files), read by the dynamic user; no value in the unit or the
	# journal.
	D=$(printf '%s' "$V" | sha256sum | cut -d' ' -f1)
	is "$(code sc /file) $(cat "$T/body")" "200 $D" \
	    "$e: a service with a secret wakes and answers its digest"
	unit=$(units "hk-svc-$APP.sc-*")
	p=$(prop "$unit" MainPID)
	is "$(ct sh -c "tr '\\0' '\\n' </proc/$p/environ" |
	    sed -n 's/^CREDENTIALS_DIRECTORY=//p')" "/run/credentials/$unit" \
	    "$e: its CREDENTIALS_DIRECTORY is systemd's"
	# systemctl show (252) prints no LoadCredential: its transient file
	cdir=$(ct sed -n 's/^LoadCredential=DB_PASSWORD:\(.*\)\/DB_PASSWORD$/\1/p' \
	    "/run/systemd/transient/$unit")
	like "$cdir" "^/run/$N/cred/$APP\\.sc\\.[0-9]+\$" \
	    "$e: LoadCredential= names hk-scale's file"
	is "$(ct stat -c '%a %U' "$cdir" "$cdir/DB_PASSWORD" | tr '\n' ' ')" \
	    "500 root 400 root " "$e: hk-scale's own files (systemd reads them as root)"
	ct systemctl show "$unit" >"$T/show" 2>&1
	ok $? "$e: systemctl show of its unit"
	journal "$unit" "$N-scale" >"$T/journal"
	ct sh -c 'cat /run/systemd/transient/*' >"$T/transient" 2>&1
	grep -qaF -- "$V" "$T/show" "$T/journal" "$T/transient"
	ok $((! $?)) "$e: the value is not in systemctl show, the journal, /run/systemd/transient"
	release_idle
	wait_t 10 state_is sc sleeping
	ok $? "$e: idle, it sleeps"
	wait_t 5 ct test ! -e "$cdir"
	ok $? "$e: and hk-scale's directory is removed"

	# A named user; a notify service; a command that cannot run.
	wait_t 20 state_is as running
	ok $? "$e: fn/as (min_replicas = 1) runs"
	p=$(pid_of as)
	is "$(pst "$p" Uid) / $(pst "$p" NoNewPrivs) $(pst "$p" CapEff)" \
	    "$(four "$(ct id -u daemon)") / 1 0000000000000000" \
	    "$e: as its user, daemon, with no_new_privs"
	is "$(prop "$(units "hk-svc-$APP.as-*")" User)" daemon "$e: User=daemon"
	is "$(prop "$(units "hk-svc-$APP.as-*")" MemoryMax) $(prop "$(units "hk-svc-$APP.as-*")" CPUQuotaPerSecUSec)" \
	    "2147483648 2s" "$e: size medium: 2 GiB and two CPUs"
	# Its gate: a start (1 s before it says ready), then 4 s idle; the
	# suite's other container tests may slow both down.
	wait_t 40 logged "service=$APP/nt: draining -> sleeping"
	r=$?
	ok $r "$e: fn/nt passed its gate (notify) and sleeps"
	[ "$r" = 0 ] || journal "$N-scale" | grep "service=$APP/nt" |
	    tail -n 8 | sed 's/^/#   /'
	hold_idle
	is "$(code nt /)" 200 "$e: a notify service wakes"
	like "$(cat "$T/body")" '^notified pid=[0-9]+$' "$e: and answers"
	is "$(prop "$(units "hk-svc-$APP.nt-*")" Type)" notify \
	    "$e: a Type=notify unit, ready on its READY=1"
	release_idle
	is "$(code bad /)" 503 "$e: a command that cannot run: 503"
	bad_re="service=$APP/bad: unable to start revision 1: exit status 203: systemd could not set up EXEC for it \\(journalctl -u hk-svc-$APP\\.bad-1-[0-9a-f]+\\.service\\)"
	wait_t 5 logged "$bad_re"
	ok $? "$e: with systemd's reason, and where its output is" || saw "service=$APP/bad"
	is "$(field bad 's["state"]')" failed "$e: hk ps says failed"

	# SIGKILL while fn/py runs: adopted.  A unit named as this
	# installation's that no row describes is stopped; another
	# installation's is left alone.  hk-idle held from fn/py's sleep to
	# the look at what runs after the restart.
	wait_t 10 state_is py sleeping
	hold_idle
	is "$(code py /again)" 200 "$e: fn/py woken again"
	unit=$(units "hk-svc-$APP.py-*")
	pid=$(prop "$unit" MainPID)
	# Running in the store too: its row is written after the ready that
	# answered the request (SCALE_RECORD_MS and a commit later), and a
	# row that still says starting is stopped at a restart, not adopted.
	wait_t 5 state_is py running
	asunit=$(units "hk-svc-$APP.as-*")
	ct systemd-run -q --unit="hk-svc-$APP.ghost-1-abc" \
	    --description="hk $APP/ghost revision 1 (/run/$N)" sleep 300
	ct systemd-run -q --unit="hk-svc-$APP.other-1-abc" \
	    --description="hk $APP/other revision 1 (/run/elsewhere)" sleep 300
	kill_scale
	ok $? "$e: hk-scale killed with SIGKILL while fn/py runs; systemd restarts it"
	wait_t 5 logged "service=$APP/py: adopted unit $unit at "
	ok $? "$e: the new hk-scale adopts its unit" || saw "service=$APP/py"
	is "$(code py /after)" 200 "$e: the request after it is answered"
	is "$(units "hk-svc-$APP.py-*") $(prop "$unit" MainPID)" "$unit $pid" \
	    "$e: by the same unit and process, and no second unit"
	wait_t 5 logged "service=$APP/as: adopted unit $asunit at "
	ok $? "$e: fn/as, always on, is adopted too"
	is "$(units "hk-svc-$APP.as-*")" "$asunit" \
	    "$e: not started again beside its unit"
	wait_t 5 no_unit "hk-svc-$APP.ghost-*"
	ok $? "$e: the unit no row describes is stopped"
	is "$(nunits "hk-svc-$APP.other-*")" 1 "$e: another installation's is not"
	ct systemctl stop "hk-svc-$APP.other-1-abc"
	release_idle
	wait_t 10 state_is py sleeping
	ok $? "$e: the adopted fn/py still goes to sleep"
	wait_t 5 no_unit "$unit"
	ok $? "$e: and its unit goes"

	# SIGKILL while fn/nt starts: its unit is stopped, and the parked
	# request is answered by a new one.  Its starts are held (fn/held)
	# until the unit left starting is gone, and hk-idle until the new
	# one is looked at.
	wait_t 10 state_is nt sleeping
	ok $? "$e: fn/nt asleep again"
	hold_idle
	ct touch "/run/$N/slow.hold"
	code nt /parked --max-time 120 >"$T/nt.code" &
	ntc=$!
	wait_t 10 has_unit "hk-svc-$APP.nt-*"
	first=$(units "hk-svc-$APP.nt-*")
	like "$first" "^hk-svc-$APP\\.nt-1-[0-9a-f]+\\.service\$" \
	    "$e: fn/nt starting in $first"
	is "$(prop "$first" ActiveState)" activating "$e: not ready yet (notify)"
	kill_scale
	ok $? "$e: hk-scale killed with SIGKILL while fn/nt starts; systemd restarts it"
	wait_t 10 logged "service=$APP/nt: stopping unit $first, left starting by an earlier run"
	ok $? "$e: the unit left starting is stopped" || saw "service=$APP/nt"
	wait_t 5 no_unit "$first"
	ok $? "$e: and is gone"
	ct touch "/run/$N/slow.go"
	wait "$ntc"
	is "$(cat "$T/nt.code")" 200 "$e: the parked request is answered"
	second=$(units "hk-svc-$APP.nt-*")
	ok "$([ -n "$second" ] && [ "$second" != "$first" ] && echo 0 || echo 1)" \
	    "$e: a new unit answered ($second)"
	is "$(pid_of nt)" "$(prop "$second" MainPID)" "$e: the one hk ps shows"
	release_idle

	# A clean stop: the instances' units go with hk-scale.
	for u in idle activate scale events; do
		ct systemctl stop "$N-$u"
	done
	is "$(prop "$N-scale" Result)" success "$e: hk-scale stops cleanly"
	is "$(units "hk-svc-$APP.*")" "" "$e: and leaves no unit behind"
	ct_stop
}

# Without root: hk-scale as a user of its own, in the system bus's
# hands.  Refused until a polkit rule grants that user manage-units, then
# at work.
run_polkit() {
	PU=hkt$$u
	ct useradd --system --no-create-home --shell /usr/sbin/nologin "$PU"
	ct systemctl start dbus.socket polkit
	ok $? "polkit: the system bus and polkit run"
	stack u "$PU" sqlite
	ct sh -c "cat >/etc/$N/app.toml" <<APP
schema_version = 1
name = "$APP"

[services.py]
command = ["python3", "functions/hello.py"]
directory = "$EX"
backend = "systemd"
public = true
readiness = "http:/"
[services.py.serverless]
idle_seconds = 200
APP
	stack_start polkit || return
	is "$(pst "$(scale_pid)" Uid)" "$(four "$(ct id -u "$PU")")" \
	    "polkit: hk-scale runs as $PU"
	run hkc hk apply "/etc/$N/app.toml"
	is "$rc" 0 "polkit: applied"
	wait_t 10 logged "service=$APP/py: unable to start revision 1: systemd: unable to start unit hk-svc-$APP\\.py-1-[0-9a-f]+\\.service: "
	ok $? "polkit: without a rule, systemd refuses the start, and hk-scale says so"
	like "$(journal "$N-scale")" 'systemd: connected \(system bus\)' \
	    "polkit: on the system bus"
	is "$(code py /)" 503 "polkit: the request gets 503"
	printf '%s\n' 'polkit.addRule(function(action, subject) {' \
	    "	if (action.id == \"org.freedesktop.systemd1.manage-units\" &&" \
	    "	    subject.user == \"$PU\")" \
	    '		return polkit.Result.YES;' '});' |
	    ct sh -c "cat >/etc/polkit-1/rules.d/50-$PU.rules"
	wait_t 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' \
	    -H 'Host: py.$APP.localhost' http://127.0.0.1:$PORT/)\" = 200 ]"
	ok $? "polkit: with a rule granting $PU manage-units, it wakes (200)"
	unit=$(units "hk-svc-$APP.py-*")
	is "$(prop "$unit" DynamicUser)" yes "polkit: in a unit of its own"
	ct systemctl stop "$N-idle" "$N-activate" "$N-scale" "$N-events"
	is "$(prop "$N-scale" Result) $(units "hk-svc-$APP.*")" "success " \
	    "polkit: a clean stop leaves no unit"
	ct_stop
}

for engine in $(engines); do
	run_engine "$engine"
done
run_polkit
pg_missing_is_failure
done_testing
