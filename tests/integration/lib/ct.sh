# lib/ct.sh - sourced by the container backend's tests after lib.sh: the
# podman API service (make check's, HK_TEST_ENGINE, or one of the test's
# own), the test image, and the containers of the test's installations,
# found by their hk.installation label and removed by ID at the end.
# A machine without podman fails these tests: nothing is skipped.

# ct_engine: sets $U to an engine's URL (make check's shared one, or a new
# one in $T/engine); fails (and says so) without one.
ct_engine() {
	command -v podman >/dev/null || {
		ok 1 "podman is installed (scripts/deps)"
		return 1
	}
	U=${HK_TEST_ENGINE:-}
	if [ -z "$U" ]; then
		_p=$("$HK_TOP/scripts/podman-api" start "$T/engine") &&
		    U="unix://$T/engine/podman.sock" && _pids="$_pids $_p"
	fi
	[ -n "$U" ]
	ok $? "a podman API service runs: $U"
	[ -n "$U" ]
}

# ct_engine_own DIR: a podman API service of the test's own in DIR; its
# URL on stdout, its pid (to stop) in $T/DIR.pid.
ct_engine_own() {
	_p=$("$HK_TOP/scripts/podman-api" start "$1") || return 1
	echo "$_p" >"$1.pid"
	echo "unix://$1/podman.sock"
}

# ct_config [LINE ...]: $T/hakopod.toml of an installation on the engine
# $U: the gateway on a free port ($PORT, reached at $URL), a SQLite store
# in $T ($STORE), the runtime directory $RUN, the containers' network
# slirp4netns; each LINE one more key of [server].  A test appends its
# nodes' tables to the file.  HAKOPOD_CONFIG names it.
ct_config() {
	STORE=sqlite://$T/state.db
	PORT=$(free_port)
	URL=http://127.0.0.1:$PORT
	{
		echo '[server]'
		echo "serverless_address = \"127.0.0.1:$PORT\""
		echo "state = \"$STORE\""
		echo "runtime_dir = \"$RUN\""
		for _l in "$@"; do
			printf '%s\n' "$_l"
		done
		echo "container_engine = \"$U\""
		echo 'container_network = "slirp4netns"'
	} >"$T/hakopod.toml"
	export HAKOPOD_CONFIG=$T/hakopod.toml
}

# CT_HELD: a command (TOML array items) that holds a container's start:
# the test image's function once /tmp/go exists in the container, which
# the test makes by podman exec when it has seen what it looks at (as
# fn/held does on the host).  A SIGTERM meanwhile is a clean exit, as the
# function's.
CT_HELD='"/usr/bin/python3", "-c", "import os, signal, sys, time\nsignal.signal(signal.SIGTERM, lambda n, f: sys.exit(0))\nwhile not os.path.exists(\"/tmp/go\"):\n    time.sleep(0.05)\nos.execv(\"/usr/bin/python3\", [\"python3\", \"/fn.py\"])"'

# The installations whose containers, then volumes, are removed at exit.
CT_INSTALLS=
ct_cleanup() {
	for _i in $CT_INSTALLS; do
		for _id in $(podman ps -aq --no-trunc \
		    --filter "label=hk.installation=$_i" 2>/dev/null); do
			podman rm -f -t 0 "$_id" >/dev/null 2>&1
		done
		for _v in $(podman volume ls -q \
		    --filter "label=hk.installation=$_i" 2>/dev/null); do
			podman volume rm "$_v" >/dev/null 2>&1
		done
	done
}
trap 'ct_cleanup; _cleanup' EXIT

# ct_install STORE_URL: the installation's ID that hk-scale recorded in
# the store (empty before its first container), remembered for cleanup.
ct_install() {
	case $1 in
	sqlite://*)
		_id=$(python3 -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT value FROM settings "
    "WHERE key = ?", ("hk-scale.installation",)).fetchone()
print(r[0] if r else "")' "${1#sqlite://}" 2>/dev/null) ;;
	*)
		_id=$(psql "$1" -qAtc "SELECT value FROM settings \
		    WHERE key = 'hk-scale.installation'" 2>/dev/null) ;;
	esac
	case " $CT_INSTALLS " in
	*" $_id "*) ;;
	*) [ -n "$_id" ] && CT_INSTALLS="$CT_INSTALLS $_id" ;;
	esac
	echo "$_id"
}

# ct_ids INSTALL [state]: the IDs of the installation's containers (all,
# or those podman shows in that state: running, created, exited), sorted.
ct_ids() {
	if [ -n "${2:-}" ]; then
		podman ps -aq --no-trunc --filter "label=hk.installation=$1" \
		    --filter "status=$2"
	else
		podman ps -aq --no-trunc --filter "label=hk.installation=$1"
	fi 2>/dev/null | sort
}

# ct_count INSTALL [state]: how many.
ct_count() {
	ct_ids "$@" | grep -c .
}

# ct_count_is N INSTALL [state] (for wait_t)
ct_count_is() {
	_n=$1
	shift
	[ "$(ct_count "$@")" -eq "$_n" ]
}

# ct_inspect ID FORMAT: podman's inspection of a container.
ct_inspect() {
	podman container inspect --format "$2" "$1" 2>/dev/null
}

# ct_asleep SERVICE: hk-scale and the gateway say it sleeps (lib/idle.sh).
ct_asleep() {
	scale_is "$1" sleeping && gw_is "$1" sleeping
}
