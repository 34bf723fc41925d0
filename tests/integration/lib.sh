# lib.sh - shared by the integration tests (sourced; POSIX sh + TAP).
#
# Runs from the repository root under prove.  HK_BUILD names the build
# directory (make check sets it; default build/rel).  Each test gets a
# private temporary directory $T, removed on exit, and its processes are
# stopped by pid.  Every wait is bounded.

set -u
HK_TOP=${HK_TOP:-$(pwd)}
HK_BUILD=${HK_BUILD:-$HK_TOP/build/rel}
# The build's programs first, then Debian's: the python3, node and tools
# that scripts/deps installs, not another interpreter a PATH may name first
# (a pyenv shim costs seconds a call on a busy machine, and has none of
# Debian's python3 modules).
PATH=$HK_BUILD/bin:/usr/bin:/bin:/usr/sbin:/sbin:$PATH
export PATH HK_TOP HK_BUILD
unset HAKOPOD_CONFIG HAKOPOD_STATE HAKOPOD_RUNTIME_DIR HAKOPOD_BASE_DOMAIN \
    HAKOPOD_SERVERLESS_ADDRESS HAKOPOD_SERVERLESS_LISTEN HAKOPOD_SERVICE_USER \
    HAKOPOD_SECRET_KEY_FILE

T=$(mktemp -d "${TMPDIR:-/tmp}/hk-test.XXXXXX")
# hk-scale runs instances as nobody (or a service's own user): the
# commands, directories and files a test gives them live in $T, which
# they may read; what they write goes in $W, open to every user as /tmp.
chmod 755 "$T"
W=$T/w
mkdir -m 1777 "$W"
_tap_n=0
_tap_failed=0
_pids=
_pg_dbs=

# _failed_logs: after a failed check, the end of each daemon's log (the
# $T/NAME.log of daemon, and any other log a test keeps in $T), so that a
# failed run says what the programs saw.
_failed_logs() {
	[ "$_tap_failed" -gt 0 ] || return 0
	for _f in "$T"/*.log; do
		[ -s "$_f" ] || continue
		diag "the end of ${_f#"$T"/}:"
		tail -n 20 "$_f" | sed 's/^/#   /'
	done >&2
}

# prove reads a test's stdout until every process holding it has closed
# it: one left running would hold the whole suite (a CI run ended by its
# time limit, with no word of which test).  So every test has a deadline
# (HK_TEST_TIMEOUT seconds, 1200 unless set; a watchdog says what was
# still running and stops the test), and at its end whatever still holds
# its stdout is given a minute to go (an hk-scale stops its containers
# as it ends), then named and killed.
HK_TEST_TIMEOUT=${HK_TEST_TIMEOUT:-1200}
_tap_pipe=$(readlink "/proc/$$/fd/1" 2>/dev/null)
case $_tap_pipe in
pipe:*) ;;
*) _tap_pipe= ;;
esac
_wd_pid=

# _tree: the test's descendants, one line each (pid, state, what it
# waits in, command), for the reader of a test that overran.
_tree() {
	ps -e -o pid=,ppid=,stat=,etime=,wchan:24=,args= | awk -v top=$$ '
	{ pid[NR] = $1; ppid[NR] = $2; line[NR] = $0 }
	END {
		keep[top] = 1
		do {
			more = 0
			for (i = 1; i <= NR; i++)
				if (keep[ppid[i]] && !keep[pid[i]]) {
					keep[pid[i]] = 1
					more = 1
				}
		} while (more)
		for (i = 1; i <= NR; i++)
			if (keep[pid[i]])
				print substr(line[i], 1, 160)
	}'
}

# _pipe_holders: the pids other than the test's shell, its reader and
# the watchdog that hold the test's stdout.
_pipe_holders() {
	[ -n "$_tap_pipe" ] || return 0
	_pat=$(printf '%s' "$_tap_pipe" | sed 's/[][*?]/\\&/g')
	find /proc/[0-9]*/fd -maxdepth 1 -lname "$_pat" 2>/dev/null |
	    cut -d/ -f3 | sort -u |
	    awk -v me=$$ -v up="$PPID" -v wd="${_wd_pid:-0}" \
		'$1 != me && $1 != up && $1 != wd'
}

_watchdog() {
	trap 'kill "$_wd_sleep" 2>/dev/null; exit 0' TERM
	sleep "$HK_TEST_TIMEOUT" </dev/null >/dev/null 2>&1 &
	_wd_sleep=$!
	wait "$_wd_sleep" || exit 0
	echo "not ok - the test still ran after $HK_TEST_TIMEOUT s (HK_TEST_TIMEOUT): stopped"
	{
		echo "what it was running:"
		_tree
	} | sed 's/^/# /'
	read -r _me _ </proc/self/stat
	for _p in $(ps -o pid= --ppid $$); do
		[ "$_p" = "$_me" ] || kill -TERM "$_p" 2>/dev/null
	done
	kill -TERM $$
	exit 0
}
if [ "$HK_TEST_TIMEOUT" -gt 0 ]; then
	_watchdog &
	_wd_pid=$!
fi

# _stop_leftovers: after the test's own were told to stop.
_stop_leftovers() {
	_i=0
	while _left=$(_pipe_holders) && [ -n "$_left" ]; do
		_i=$((_i + 1))
		[ "$_i" -lt 70 ] || break
		# most are daemons that end on their SIGTERM at once; a
		# search of every fd of every process costs tens of ms
		if [ "$_i" -le 10 ]; then sleep 0.1; else sleep 1; fi
	done
	for _p in $_left; do
		echo "# left running after the test, killed: pid $_p:" \
		    "$(tr '\0' ' ' <"/proc/$_p/cmdline" 2>/dev/null)" >&2
		_task_states "$_p" >&2
		kill -KILL "$_p" 2>/dev/null
	done
}

# _task_states PID: each thread of PID, with its state and where it
# waits, as comments: why a process did not end.
_task_states() {
	for _t in /proc/$1/task/*; do
		[ -r "$_t/stat" ] || continue
		echo "#   task ${_t##*/}: $(sed 's/^[0-9]* (\(.*\)) \([A-Za-z]\) \([0-9]*\).*/\1 state \2 ppid \3/' \
		    "$_t/stat" 2>/dev/null), syscall $(cut -d" " -f1 "$_t/syscall" 2>/dev/null)," \
		    "$(grep -E '^(TracerPid|SigBlk|SigIgn):' "$_t/status" 2>/dev/null | tr '\n\t' '  ')"
	done
}

_cleanup() {
	[ -z "$_wd_pid" ] || kill "$_wd_pid" 2>/dev/null
	_failed_logs
	for p in $_pids; do
		kill "$p" 2>/dev/null
		kill -CONT "$p" 2>/dev/null	# one a test held with SIGSTOP
	done
	_stop_leftovers
	for db in $_pg_dbs; do
		psql "$HK_TEST_PG" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" \
		    >/dev/null 2>&1
	done
	rm -rf "$T"
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

# Instances run as nobody: the tree must be open to it, and a checkout
# under a home of mode 0700 is not.
if [ "$(id -u)" = 0 ] &&
    ! runuser -u nobody -- test -r "$HK_TOP/tests/integration/fn/scale-http.py"
then
	echo "Bail out! nobody cannot read $HK_TOP: instances run as nobody"
	exit 1
fi

_tap_planned=
plan() { echo "1..$1"; _tap_planned=$1; }
# diag TEXT: a TAP comment; each line of a text of several is one, so that
# prove shows what a failed check got whole.
diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

# ok, is and like return the check's result, so that a failed check can
# say more of what it saw: ok $? NAME || diag "...".
ok() {
	# ok STATUS NAME: STATUS is a command's exit status (0 = pass)
	_tap_n=$((_tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $_tap_n - $2"
		return 0
	fi
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $2"
	return 1
}

# is GOT WANT NAME
is() {
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
		return 0
	fi
	ok 1 "$3"
	diag "     got: '$1'"
	diag "expected: '$2'"
	return 1
}

# like GOT PATTERN NAME (grep -E pattern)
like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		ok 0 "$3"
		return 0
	fi
	ok 1 "$3"
	diag "     got: '$1'"
	diag "expected to match: '$2'"
	return 1
}

# diff_ok FILE EXPECTED NAME: output diffed with an expected file (s6 style)
diff_ok() {
	if diff -u "$2" "$1" >"$T/diff.out" 2>&1; then
		ok 0 "$3"
	else
		ok 1 "$3"
		sed 's/^/# /' "$T/diff.out"
	fi
}

# done_testing: ends the test; prints the plan if plan was not called
done_testing() {
	[ -n "$_tap_planned" ] || echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
	exit $?
}

# run CMD...: sets $out (stdout), $err (stderr) and $rc
run() {
	"$@" >"$T/run.out" 2>"$T/run.err"
	rc=$?
	out=$(cat "$T/run.out")
	err=$(cat "$T/run.err")
}

# bg CMD...: starts CMD in the background and remembers its pid for cleanup
bg() {
	"$@" &
	_pids="$_pids $!"
	last_pid=$!
}

# Waits.  A wait's SECONDS is what the condition may take on an idle
# machine; the wait allows WAIT_SCALE times that (3, or HK_TEST_WAIT_SCALE)
# for a machine that is doing something else, and returns as soon as the
# condition holds, so a passing run is no slower for it.  A time that is
# itself the behaviour under test (a grace period, a deadline) is not a
# wait: the test measures it, or uses within, which does not scale, and
# the check's name gives the bound.
WAIT_SCALE=${HK_TEST_WAIT_SCALE:-3}

# wait_for SECONDS CMD...: wait_t at a pace of 20 ms, whatever WAIT_PAUSE
# says.  (It counted turns once: around a command that itself takes a
# second on a busy machine, a count is no deadline.)
wait_for() {
	_w_pause=$WAIT_PAUSE
	WAIT_PAUSE=0.02
	wait_t "$@"
	_w_rc=$?
	WAIT_PAUSE=$_w_pause
	return $_w_rc
}

# wait_t SECONDS CMD...: polls CMD every WAIT_PAUSE seconds (0.02 unless
# the test sets it) until it succeeds, for at most SECONDS * WAIT_SCALE of
# wall time.  The tests that poll through podman exec set 0.1:
# each exec costs a tenth of a second of CPU, which a faster pace takes
# from the container under test.
WAIT_PAUSE=0.02
wait_t() {
	_w_s=$1
	shift
	within $((_w_s * WAIT_SCALE)) "$@"
}

# within SECONDS CMD...: as wait_t, but SECONDS of wall time exactly: for
# a bound that is the behaviour under test.  A wait that gives up says
# what it waited for, and how long, for the reader of a failed run (on
# stderr: a wait may run inside a command substitution).
within() {
	_w_end=$(($(date +%s%3N) + $1 * 1000))
	_w_s=$1
	shift
	while ! "$@" 2>/dev/null; do
		if [ "$(date +%s%3N)" -ge "$_w_end" ]; then
			diag "gave up after $_w_s s waiting for: $*" >&2
			return 1
		fi
		sleep "$WAIT_PAUSE"
	done
	return 0
}

# The checkout and the build as a container of scripts/systemd-ct sees
# them: at fixed paths, out of the /tmp and /home that a unit's
# PrivateTmp= and ProtectHome= hide.  What a test hands the container (a
# unit's ExecStart=, a function's command or directory) names these; what
# the test reads itself names HK_TOP and HK_BUILD.
CT_TOP=/opt/hk
case $HK_BUILD in
"$HK_TOP"/*) CT_BUILD=$CT_TOP/${HK_BUILD#"$HK_TOP"/} ;;
*) CT_BUILD=/opt/hk-build ;;
esac

# The stores to run a store-dependent test against: "sqlite", plus
# "postgres" when a server was given (scripts/pg sets HK_TEST_PG).  Under
# CI a missing server is a failure, reported by the caller through
# pg_missing_is_failure.
engines() {
	echo sqlite
	[ -n "${HK_TEST_PG:-}" ] && echo postgres
	return 0
}

pg_missing_is_failure() {
	if [ -z "${HK_TEST_PG:-}" ]; then
		if [ "${CI:-}" = true ]; then
			ok 1 "PostgreSQL server available under CI"
		else
			diag "no PostgreSQL server (HK_TEST_PG unset): postgres half skipped"
		fi
	fi
}

# new_store ENGINE NAME: sets $STORE to a fresh, empty store of that engine
# (not a command substitution: the database must be dropped at exit).
new_store() {
	case $1 in
	sqlite)
		STORE="sqlite://$T/$2.db"
		;;
	postgres)
		_db="hk_t$$_$2"
		psql "$HK_TEST_PG" -qAtc "CREATE DATABASE $_db" >/dev/null ||
		    return 1
		_pg_dbs="$_pg_dbs $_db"
		STORE=$(echo "$HK_TEST_PG" | sed "s|:///postgres?|:///$_db?|")
		;;
	esac
}

# daemon NAME CMD...: starts CMD in the background with "-d 3" and fd 3 on
# a fifo, and waits (10 s at most) for its readiness newline.  Its pid is
# in ${NAME}_pid, its stderr in $T/NAME.log.  Returns non-zero if the
# daemon died or did not become ready.
daemon() {
	_dname=$1
	shift
	rm -f "$T/$_dname.ready"
	mkfifo "$T/$_dname.ready"
	"$@" -d 3 3>"$T/$_dname.ready" 2>>"$T/$_dname.log" &
	_pids="$_pids $!"
	eval "${_dname}_pid=$!"
	_got=$(timeout 10 head -c 1 "$T/$_dname.ready" | od -An -c | tr -d ' ')
	[ "$_got" = '\n' ] && return 0
	# Why, for the reader of a failed run (CI prints only the output).
	diag "$1 not ready within 10 s; the end of its log:"
	tail -n 15 "$T/$_dname.log" 2>/dev/null | sed 's/^/#   /'
	return 1
}

# stop_pid PID [SECONDS]: SIGTERM, then wait for the process to go (5 s,
# or SECONDS), then KILL.  An hk-scale that stops its containers as it
# ends is given longer: a busy engine takes seconds for each one.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || return 0
	_i=0
	while alive "$1"; do
		_i=$((_i + 1))
		if [ "$_i" -ge $((${2:-5} * 50)) ]; then
			kill -KILL "$1" 2>/dev/null
			break
		fi
		sleep 0.02
	done
	wait "$1" 2>/dev/null
	return 0
}

# alive PID: the process exists and is not a zombie (MACHINE-NOTES: PID 1
# reaps orphans late, so kill -0 alone can lie).
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	_st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$_st" ] || return 1	# gone between the two looks
	[ "$_st" != Z ]
}

# free_port: a TCP port on 127.0.0.1 that nothing uses right now, drawn
# at random below the kernel's ephemeral range: a port the kernel handed
# out (bind to 0) is soon the local port of some test's outgoing
# connection, and a daemon told to listen there fails with "Address
# already in use" (seen in CI).
free_port() {
	python3 -c '
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
top = lo - 1 if lo > 12000 else 65535
base = 10000 if lo > 12000 else 61000
for _ in range(200):
    p = random.randint(base, top)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("free_port: no free port found")
'
}

# outlog [RUNDIR]: every service's own log (what "hk logs" reads, under
# RUNDIR/logs, default $T/run) in the shape hk-scale's stderr gave those
# lines before they moved there, "hk-scale: info: service=APP/SVC: line",
# into $T/out.log; prints that path.
outlog() {
	_od=${1:-$T/run}/logs
	: >"$T/out.log"
	for _d in "$_od"/*/*; do
		[ -d "$_d" ] || continue
		_id=${_d#"$_od"/}
		cat "$_d"/@*.s "$_d"/current 2>/dev/null | sed \
		    "s|^[^ ]* rev=[^ ]* inst=[^ ]* |hk-scale: info: service=$_id: |" \
		    >>"$T/out.log"
	done
	echo "$T/out.log"
}

# out_grep PATTERN [RUNDIR]: a service's line matches (grep; wait_for)
out_grep() {
	grep -q -- "$1" "$(outlog "${2:-}")"
}
