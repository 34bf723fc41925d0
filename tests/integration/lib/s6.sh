# lib/s6.sh - sourced by the tests of the s6 backend after lib.sh: a real
# s6-svscan of the test's own on a scan directory in $T, stopped by its
# pid.  A missing s6 program (or setpriv, or env) fails the test.

# s6_require: every program the backend and the test run is there.
s6_require() {
	for _tool in s6-svscan s6-svscanctl s6-supervise s6-svc s6-svwait \
	    s6-svlink s6-svunlink s6-svstat s6-svlisten1 s6-ftrigrd setpriv \
	    env; do
		if ! command -v "$_tool" >/dev/null; then
			ok 1 "$_tool is installed (scripts/deps installs s6)"
			done_testing
		fi
	done
}

# s6_scan_start DIR: an s6-svscan on DIR (pid in $svscan_pid), once it
# answers s6-svscanctl.
s6_scan_start() {
	mkdir -p "$1"
	s6-svscan "$1" >>"$T/svscan.log" 2>&1 &
	svscan_pid=$!
	_pids="$_pids $svscan_pid"
	wait_for 10 s6-svscanctl -a "$1"
}

# s6_scan_stop DIR: s6-svscanctl -t, which brings every service down, then
# the s6-svscan is gone.
s6_scan_stop() {
	s6-svscanctl -t "$1" 2>/dev/null
	wait_for 20 dead "$svscan_pid"
	_rc=$?
	wait "$svscan_pid" 2>/dev/null
	return $_rc
}

# s6_field SERVICEDIR FIELD: one field of s6-svstat -o (up, ready, pid...)
s6_field() {
	s6-svstat -o "$2" "$1" 2>/dev/null
}

# s6_is SERVICEDIR FIELD VALUE (for wait_for)
s6_is() {
	[ "$(s6_field "$1" "$2")" = "$3" ]
}

# proc_field PID NAME: a field of /proc/PID/status, blanks squeezed
proc_field() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null |
	    tr -s '\t ' ' ' | sed 's/ $//'
}

# creds_of PID: "UIDS NONEWPRIVS" from one read of its status (uids as
# proc_field gives them); fails when the process is gone.
creds_of() {
	_st=$(cat "/proc/$1/status" 2>/dev/null) || return 1
	_uid=$(printf '%s\n' "$_st" | sed -n 's/^Uid:[[:space:]]*//p' |
	    tr -s '\t ' ' ' | sed 's/ $//')
	_nnp=$(printf '%s\n' "$_st" | sed -n 's/^NoNewPrivs:[[:space:]]*//p')
	[ -n "$_uid" ] && [ -n "$_nnp" ] || return 1
	echo "$_uid $_nnp"
}

# dead PID: the process is gone (or a zombie)
dead() {
	! alive "$1"
}
