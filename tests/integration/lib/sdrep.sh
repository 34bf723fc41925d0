# lib/sdrep.sh - what the tests of replicas on systemd share (9213,
# 9214, 9215), sourced after lib.sh and lib/systemd.sh once sd_container
# has a container and UNITS names the units: the stack's name N, its
# cleanup at exit, and the looks at the replicas of fn/$REP_SVC (the
# service under test) through hk ps.  REP_TAG, a letter, keeps the names
# of one test's stacks apart from another's.
N=
ct_stop() {	# the daemons of this run, and whatever they left
	[ -n "$N" ] || return 0
	for u in $UNITS; do
		ct systemctl stop "$N-$u" >/dev/null 2>&1
	done
	ct systemctl stop "hk-svc-$APP.*" >/dev/null 2>&1
	ct systemctl reset-failed "$N-*" >/dev/null 2>&1
	ct sh -c "rm -rf /etc/systemd/system/$N-* /etc/$N" >/dev/null 2>&1
}
ct_done() {
	ct_stop
	[ -n "$own_ct" ] && "$HK_TOP/scripts/systemd-ct" stop "$own_ct"
}
trap 'ct_done; _cleanup' EXIT
ct systemctl start systemd-journald
ok $? "the container's journal runs"

FN=$CT_TOP/tests/integration/fn
hkc() { ct env "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" "PATH=$CT_BUILD/bin:/usr/bin:/bin" "$@"; }
prop() { ct systemctl show -p "$2" --value "$1"; }
units() {
	ct systemctl list-units --plain --no-legend \
	    --state=active,activating,deactivating "$1" | awk '{ print $1 }'
}
nunits() { units "$1" | grep -c .; }
journal() { ct journalctl -u "$1" -o cat --no-pager 2>/dev/null; }
logged() { journal "$N-scale" | grep -Eq -- "$1"; }
scale_pid() { prop "$N-scale" MainPID; }
restarted() {	# restarted OLDPID: a new hk-scale is ready
	_p=$(scale_pid)
	[ "$_p" != "$1" ] && [ "$_p" != 0 ] &&
	    [ "$(ct systemctl is-active "$N-scale")" = active ]
}
# rep FIELD: of fn/$REP_SVC's replicas in hk ps --json, "N:value" each, sorted
rep() {
	hkc hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["service"] == sys.argv[2]:
        print(" ".join("%d:%s" % (i["replica"], i[sys.argv[1]])
                       for i in s["replicas"]))' "$1" "$REP_SVC"
}
# pid_of N: replica N's pid
pid_of() { rep pid | tr ' ' '\n' | sed -n "s/^$1://p"; }
# pids: the pids of the replicas, sorted, on one line
pids() { rep pid | tr ' ' '\n' | cut -d: -f2 | sort -n | tr '\n' ' ' | sed 's/ $//'; }
replicas_are() {	# replicas_are TEXT: hk ps's REPLICAS column of fn/$REP_SVC
	[ "$(hkc hk ps | awk -F '\t' -v s="$REP_SVC" '$2 == s { print $8 }')" = "$1" ]
}
# replaced N OLDPID TEXT: replica N has a pid other than OLDPID, and the
# REPLICAS column says TEXT
replaced() {
	_p=$(pid_of "$1")
	[ -n "$_p" ] && [ "$_p" != "$2" ] && replicas_are "$3"
}
# each_sorted PIDS: as pids prints them (numbers sorted)
each_sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
all_dead() {	# all_dead PIDS...: none is a process of the container
	for _p in "$@"; do
		ct kill -0 "$_p" 2>/dev/null && return 1
	done
	return 0
}

# stack ENGINE: N, APP, the operator config on ENGINE, the units
stack() {
	N=hk${REP_TAG}$$$1
	APP=s${REP_TAG}$$$1
	case $1 in
	sqlite)
		CSTORE="sqlite:///var/lib/$N/state.db"
		;;
	postgres)
		new_store postgres "s${REP_TAG}$1" || return 1
		# the server's socket is at /run/hk-pg in the container
		CSTORE=$(printf '%s\n' "$STORE" |
		    sed "s|host=[^&]*|host=/run/hk-pg|")
		;;
	esac
	ct mkdir -p "/etc/$N"
	ct sh -c "cat >/etc/$N/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$(free_port)"
state = "$CSTORE"
runtime_dir = "/run/$N"
CONF
	echo "HAKOPOD_CONFIG=/etc/$N/hakopod.toml" |
	    ct sh -c "cat >/etc/$N/api.env"
	sd_units "$N" root
}
