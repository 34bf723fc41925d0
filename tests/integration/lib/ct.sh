# lib/ct.sh - sourced by the container backend's tests after lib.sh: an
# engine (podman's API service, or Docker's engine when the test sets
# CT_ENGINE=docker before sourcing this), the test image, and the
# containers of the test's installations, found by their hk.installation
# label and removed by ID at the end.  A machine without podman (or,
# for CT_ENGINE=docker, Debian's docker.io) fails these tests: nothing is
# skipped.
#
# The two engines differ where a test looks (ct_cli, ct_exists) and in
# their network: podman's containers run on slirp4netns, their port
# published on 127.0.0.1; Docker's (scripts/docker-engine: no bridge, no
# iptables) on the host's own network, each on a port hk-scale picks
# (CT_NETWORK, CT_PORT: a test gives "port = $CT_PORT").
CT_ENGINE=${CT_ENGINE:-podman}
# Debian's docker CLI (docker.io), not /usr/local/bin's.
CT_DOCKER=/usr/bin/docker
case $CT_ENGINE in
docker)
	CT_NETWORK=host
	CT_PORT=0 ;;
*)
	CT_NETWORK=slirp4netns
	CT_PORT=8080 ;;
esac

# ct_cli ARGS...: the engine's own command line, on the test's engine:
# podman (its store is the API service's), or docker -H $U.
ct_cli() {
	if [ "$CT_ENGINE" = docker ]; then
		"$CT_DOCKER" -H "$U" "$@"
	else
		podman "$@"
	fi
}

# ct_exists ID: the engine still has that container.
ct_exists() {
	ct_cli container inspect --format '{{.Id}}' "$1" >/dev/null 2>&1
}

# ct_rm ID: the container removed at once (docker rm -f kills; podman's
# would wait its stop timeout first).
ct_rm() {
	if [ "$CT_ENGINE" = docker ]; then
		ct_cli rm -f "$1"
	else
		podman rm -f -t 0 "$1"
	fi >/dev/null 2>&1
}

# ct_engine: sets $U to an engine's URL (make check's shared one, or a new
# one in $T/engine); fails (and says so) without one.
ct_engine() {
	if [ "$CT_ENGINE" = docker ]; then
		ct_engine_docker
		return
	fi
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

# ct_engine_docker: make check's Docker engine (HK_TEST_DOCKER), or one
# of the test's own in $T/docker, stopped at exit (ct_cleanup) before $T
# goes: its mounts are under it.
CT_DOCKER_DIR=
ct_engine_docker() {
	[ -x "$CT_DOCKER" ] || {
		ok 1 "Debian's docker.io is installed (scripts/deps)"
		return 1
	}
	U=${HK_TEST_DOCKER:-}
	if [ -z "$U" ]; then
		CT_DOCKER_DIR=$T/docker
		"$HK_TOP/scripts/docker-engine" start "$CT_DOCKER_DIR" \
		    >/dev/null && U="unix://$CT_DOCKER_DIR/docker.sock"
	fi
	[ -n "$U" ]
	ok $? "a Docker engine runs: $U"
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
# $U: the gateway on a free port ($PORT, reached at $URL), the store
# $CT_STORE if set, else a SQLite file in $T ($STORE), the runtime directory $RUN, the containers' network
# $CT_NETWORK; each LINE one more key of [server].  A test appends its
# nodes' tables to the file.  HAKOPOD_CONFIG names it.
ct_config() {
	STORE=${CT_STORE:-sqlite://$T/state.db}
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
		echo "container_network = \"$CT_NETWORK\""
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
	# ct_install runs in $(...), a subshell: it notes each one in a file
	[ -f "$T/ct.installs" ] && CT_INSTALLS="$CT_INSTALLS $(cat "$T/ct.installs")"
	for _i in $CT_INSTALLS; do
		for _id in $(ct_cli ps -aq --no-trunc \
		    --filter "label=hk.installation=$_i" 2>/dev/null); do
			ct_rm "$_id"
		done
		for _v in $(ct_cli volume ls -q \
		    --filter "label=hk.installation=$_i" 2>/dev/null); do
			ct_cli volume rm "$_v" >/dev/null 2>&1
		done
	done
	if [ -n "$CT_DOCKER_DIR" ]; then
		"$HK_TOP/scripts/docker-engine" stop "$CT_DOCKER_DIR"
		CT_DOCKER_DIR=
	fi
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
	*) [ -n "$_id" ] && CT_INSTALLS="$CT_INSTALLS $_id" &&
	    echo "$_id" >>"$T/ct.installs" ;;
	esac
	echo "$_id"
}

# ct_ids INSTALL [state]: the IDs of the installation's containers (all,
# or those the engine shows in that state: running, created, exited), sorted.
ct_ids() {
	if [ -n "${2:-}" ]; then
		ct_cli ps -aq --no-trunc --filter "label=hk.installation=$1" \
		    --filter "status=$2"
	else
		ct_cli ps -aq --no-trunc --filter "label=hk.installation=$1"
	fi 2>/dev/null | sort
}

# ct_svc_ids INSTALL SERVICE [state]: as ct_ids, of one service's.
ct_svc_ids() {
	ct_cli ps -aq --no-trunc --filter "label=hk.installation=$1" \
	    --filter "label=hk.service=$2" ${3:+--filter "status=$3"} \
	    2>/dev/null | sort
}

# ct_svc_count_is N INSTALL SERVICE [state] (for wait_t)
ct_svc_count_is() {
	_n=$1
	shift
	[ "$(ct_svc_ids "$@" | grep -c .)" -eq "$_n" ]
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

# ct_inspect ID FORMAT: the engine's inspection of a container.
ct_inspect() {
	ct_cli container inspect --format "$2" "$1" 2>/dev/null
}

# ct_asleep SERVICE: hk-scale and the gateway say it sleeps (lib/idle.sh).
ct_asleep() {
	scale_is "$1" sleeping && gw_is "$1" sleeping
}

# ct_died_with ID: the exit code of the container's last death, as the
# engine's events tell it (the container itself may be removed): podman
# names the event "died" and gives ContainerExitCode, Docker "die" with
# the code among the actor's attributes.  Docker's --until leaves out the
# events of its last second: a second later takes in one just now (the
# command then waits for that second to end).
ct_died_with() {
	if [ "$CT_ENGINE" = docker ]; then
		timeout 10 "$CT_DOCKER" -H "$U" events --since 10m \
		    --until "$(($(date +%s) + 1))" --filter "container=$1" \
		    --filter event=die \
		    --format '{{index .Actor.Attributes "exitCode"}}'
	else
		timeout 10 podman events --stream=false --since 10m \
		    --filter "container=$1" --filter event=died \
		    --format '{{.ContainerExitCode}}'
	fi 2>/dev/null | tail -n 1
}

# ct_host ID: the host name a container's function gives (ct-fn.py's
# "host="): its short ID on podman's slirp4netns, the host's own on
# Docker's host network.
ct_host() {
	if [ "$CT_NETWORK" = host ]; then
		hostname
	else
		echo "$1" | cut -c1-12
	fi
}

# ct_cgdir ID: the container's own cgroup directory on this host, as
# hk-scale finds it (ct_freezer.c): cgroup2's, else cgroup v1's freezer
# hierarchy's; its first process's (State.Pid), its path naming the ID.
ct_cgdir() {
	_pid=$(ct_inspect "$1" '{{.State.Pid}}')
	[ -n "$_pid" ] && [ "$_pid" != 0 ] || return 0
	_m=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	_p=$(awk -F: '$1 == 0 { print $3 }' "/proc/$_pid/cgroup")
	case $_p in
	*"$1"*) [ -w "$_m$_p/cgroup.freeze" ] && { echo "$_m$_p"; return 0; } ;;
	esac
	_m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)freezer(,|$)/ { print $2; exit }' \
	    /proc/self/mounts)
	_p=$(awk -F: '$2 ~ /(^|,)freezer(,|$)/ { print $3 }' "/proc/$_pid/cgroup")
	case $_p in
	*"$1"*) [ -n "$_m" ] && [ -w "$_m$_p/freezer.state" ] && echo "$_m$_p" ;;
	esac
	return 0
}

# ct_freezer ID: the state of that cgroup's freezer: 1 or 0 (cgroup2's
# cgroup.freeze), FROZEN, FREEZING or THAWED (cgroup v1's freezer.state);
# "" if none is found.
ct_freezer() {
	_d=$(ct_cgdir "$1")
	if [ -r "$_d/cgroup.freeze" ]; then
		cat "$_d/cgroup.freeze"
	elif [ -n "$_d" ]; then
		cat "$_d/freezer.state"
	fi
}

# ct_frozen ID: its cgroup is frozen here (ct_freezer), or the engine
# says it paused it.
ct_frozen() {
	case $(ct_freezer "$1") in
	FROZEN|1) return 0 ;;
	esac
	[ "$(ct_inspect "$1" '{{.State.Status}}')" = paused ]
}

# ct_thaw_behind ID: its cgroup thawed here, behind hk-scale's back.
ct_thaw_behind() {
	_d=$(ct_cgdir "$1")
	if [ -w "$_d/cgroup.freeze" ]; then
		echo 0 >"$_d/cgroup.freeze"
	else
		echo THAWED >"$_d/freezer.state"
	fi
}
