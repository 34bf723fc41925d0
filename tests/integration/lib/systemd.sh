# lib/systemd.sh - sourced by the tests of the units and of the systemd
# backend (92xx) after lib.sh: a container with systemd as PID 1
# (scripts/systemd-ct), commands run in it, and hk's units of
# etc/systemd installed into it.  The container sees the checkout at
# $CT_TOP and the build at $CT_BUILD (lib.sh).

# wait_t polls through podman exec, each poll a tenth of a second of CPU
# taken from the container under test: poll less often than elsewhere.
WAIT_PAUSE=0.1

# ct CMD...: CMD in the container, standard input passed on.
ct() { podman exec -i "$CT" "$@"; }

# sd_container [own [cgroup2]]: sets CT to the suite's container
# (HK_SYSTEMD_CT) or, when there is none or "own" is asked for, to a new
# one (on the unified hierarchy alone with cgroup2), then also in own_ct:
# the test stops it at exit.  A check says which; false without one.
sd_container() {
	own_ct=
	CT=
	if [ "${1:-}" = own ]; then
		CT=$("$HK_TOP/scripts/systemd-ct" start ${2:-})
		own_ct=$CT
		_sd_what="a container of its own runs systemd as PID 1${2:+ on $2}"
	else
		CT=${HK_SYSTEMD_CT:-}
		if [ -z "$CT" ]; then
			CT=$("$HK_TOP/scripts/systemd-ct" start)
			own_ct=$CT
		fi
		_sd_what="a container runs systemd as PID 1"
	fi
	[ -n "$CT" ]
	ok $? "$_sd_what"
	[ -n "$CT" ]
}

# sd_units NAME USER: hk's unit of each of $UNITS (events, scale,
# activate, idle, jobs), with BINDIR at this build, into the container as
# NAME-U.service, run as USER, with /etc/NAME/api.env and NAME's runtime
# and state directories, so that installations of several tests share
# one systemd without meeting.
sd_units() {
	for _u in $UNITS; do
		sed -e "s|@BINDIR@|$CT_BUILD/bin|g" \
		    -e "s|^User=hakopod|User=$2|" \
		    -e "s|^Group=hakopod|Group=$2|" \
		    -e "s|^EnvironmentFile=.*|EnvironmentFile=/etc/$1/api.env|" \
		    -e "s|^RuntimeDirectory=hakopod|RuntimeDirectory=$1|" \
		    -e "s|^StateDirectory=hakopod|StateDirectory=$1|" \
		    "$HK_TOP/etc/systemd/hk-$_u.service" |
		    ct sh -c "cat >/etc/systemd/system/$1-$_u.service"
		sd_asan "$1-$_u"
	done
}

# sd_prog UNIT: the pid of the daemon of UNIT, the child of the hk-lease
# that is its main process (etc/systemd: hk-lease -j or -w).
sd_prog() {
	_main=$(ct systemctl show -p MainPID --value "$1")
	ct pgrep -P "$_main" | head -1
}

# sd_kill_prog UNIT: SIGKILL of the daemon of UNIT; its hk-lease then
# ends, and systemd restarts the unit.
sd_kill_prog() {
	_prog=$(sd_prog "$1")
	[ -n "$_prog" ] && [ "$_prog" -gt 1 ] && ct kill -KILL "$_prog"
}

# sd_asan UNIT: under SANITIZE=1, no LeakSanitizer in UNIT: it stops the
# world with ptrace(2) at exit, which the units' system call filter
# refuses by design; the rest of the suite looks for leaks outside it.
sd_asan() {
	ldd "$HK_BUILD/bin/hk-scale" | grep -q libasan || return 0
	ct mkdir -p "/etc/systemd/system/$1.service.d"
	printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' |
	    ct sh -c "cat >/etc/systemd/system/$1.service.d/asan.conf"
}
