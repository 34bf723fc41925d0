#!/bin/sh
# A control host cut off from PostgreSQL, and its link restored (issue
# 36; hk-lease(1); hk(7), Several hosts).  Three network namespaces made
# here, joined by a bridge in the first (MACHINE-NOTES): the store's
# (a PostgreSQL server of this test's own, over TCP on 10.217.0.1), host
# a's (10.217.0.2) and host b's (10.217.0.3), each host running what the
# shipped units run (lib/hosts.sh).  Every client of the test runs inside
# a namespace; nothing leaves 10.217.0.0/24, which the root namespace
# routes nowhere.
#
#	- Host a leads: a request wakes fn there, and the always-on worker
#	  bg runs once, under a's hk-scale.  Host b waits.
#	- Host a's link is cut (its veth down): its hk-leases lose the lease
#	  within the TTL and end (75), and its hk-scale, unable to reach the
#	  store, stops its instances, so that nothing of a's runs on.
#	- Host b takes over: fn answers there, bg runs once, under a newer
#	  epoch.
#	- The link is restored and host a started again: it is b's standby,
#	  and bg still runs once, under b.
#
# PostgreSQL only: a store shared over the network.
. tests/integration/lib.sh
. tests/integration/lib/hosts.sh

IFN=$HK_TOP/tests/integration/fn
TTL=2
GRACE=1
NET=10.217.0
NS_DB=hk9db$$
HOST_NETNS_a=hk9a$$
HOST_NETNS_b=hk9b$$
HOST_ADDR_a=$NET.2
HOST_ADDR_b=$NET.3

if [ -z "${HK_TEST_PG:-}" ]; then
	pg_missing_is_failure
	done_testing
	exit
fi
for t in ip unshare; do
	command -v "$t" >/dev/null 2>&1 ||
	    { ok 1 "$t is installed"; done_testing; }
done

pgdir=$T/pg
_cleanup_net() {
	for _n in "$HOST_NETNS_a" "$HOST_NETNS_b" "$NS_DB"; do
		ip netns del "$_n" 2>/dev/null
	done
	ip route del unreachable "$NET.0/24" 2>/dev/null
}
# the server first: _cleanup removes its directory under $T
trap '"$HK_TOP/scripts/pg" stop "$pgdir" >/dev/null 2>&1; _cleanup; _cleanup_net' EXIT

# The namespaces: a bridge in the store's, a veth from it to each host.
net_setup() {
	ip route add unreachable "$NET.0/24" &&
	ip netns add "$NS_DB" && ip -n "$NS_DB" link set lo up &&
	ip -n "$NS_DB" link add br9 type bridge &&
	ip -n "$NS_DB" addr add "$NET.1/24" dev br9 &&
	ip -n "$NS_DB" link set br9 up || return 1
	for _h in a b; do
		eval "_ns=\$HOST_NETNS_$_h _ad=\$HOST_ADDR_$_h"
		ip netns add "$_ns" && ip -n "$_ns" link set lo up &&
		ip link add "v9$_h$$" type veth peer name "p9$_h$$" &&
		ip link set "v9$_h$$" netns "$_ns" &&
		ip link set "p9$_h$$" netns "$NS_DB" &&
		ip -n "$NS_DB" link set "p9$_h$$" master br9 up &&
		ip -n "$_ns" addr add "$_ad/24" dev "v9$_h$$" &&
		ip -n "$_ns" link set "v9$_h$$" up || return 1
	done
}
net_setup
ok $? "three namespaces on a bridge: the store's, host a's, host b's"

# The store: a server of our own, in its namespace, over TCP.
pg_netns "$NS_DB" "$NET.1" "$NET"
ok $? "a private PostgreSQL server listens on $NET.1:$pgport, in the store's namespace" ||
    { sed 's/^/# /' "$T/pg.err"; done_testing; }

# get H: the status code of a request to fn at host H's gateway, from
# inside host H's namespace.
get() {
	eval "_p=\$PORT_$1 _ad=\$HOST_ADDR_$1"
	$(in_ns "$1") curl -sS -o "$T/body" -w '%{http_code}' --max-time 30 \
	    -H "Host: fn.fn.localhost" "http://$_ad:$_p/" 2>/dev/null
}
answers() { [ "$(get "$1")" = 200 ]; }

all_ended() {
	for _p in "$@"; do
		alive "$_p" && return 1
	done
	return 0
}

cat >"$T/app.toml" <<APP
schema_version = 1
name = "fn"

[services.fn]
command = ["python3", "$IFN/idle-fn.py"]
public = true
[services.fn.serverless]
idle_seconds = 3600

[services.bg]
command = ["python3", "$IFN/scale-http.py"]
APP

VIP=$(free_port)	# advertised; nothing here sends to it
host_config a
host_config b
as a hk apply "$T/app.toml" >"$T/apply.out" 2>&1
ok $? "hk apply, from host a's namespace, over TCP" ||
    sed 's/^/# /' "$T/apply.out"

host_start a
wait_t 60 answers a
ok $? "host a leads: fn answers there"
wait_t 60 bg_under a
ok $? "... and bg runs once, under a's hk-scale"
a_epoch=$(epoch_of "$(prog_of $a_scale)")
a_inst=$(pgrep -P "$(prog_of $a_scale)" | tr '\n' ' ')
ok "$([ -n "$a_inst" ] && echo 0 || echo 1)" "host a's instances: $a_inst"
host_start b
wait_for 30 grep -q 'waiting for it' "$T/b/gw.log"
ok $? "host b's gateway waits for the lease"

# The cut.
ip -n "$HOST_NETNS_a" link set "v9a$$" down
ok $? "host a's link is cut"
wait_t 30 all_ended $a_gw $a_scale $a_idle $a_events
ok $? "host a's hk-leases end"
for v in gw scale idle events; do
	lost a "$v" "$a_epoch"
	ok $? "... $v's having lost the lease (its exit is 75)"
done
wait_t 30 all_ended $a_inst
ok $? "host a's instances are stopped with it"

wait_t 60 answers b
ok $? "host b takes over: fn answers there"
wait_t 60 bg_under b
ok $? "... and bg runs once, under b's hk-scale"
b_epoch=$(epoch_of "$(prog_of $b_scale)")
ok "$([ "${b_epoch:-0}" -gt "$a_epoch" ] && echo 0 || echo 1)" \
    "... under a newer epoch ($b_epoch > $a_epoch)"

# The link restored: host a again, as b's standby.
ip -n "$HOST_NETNS_a" link set "v9a$$" up
ok $? "host a's link is restored"
for f in gw scale idle events; do
	: >"$T/a/$f.log"
done
host_start a
wait_for 30 grep -q 'waiting for it' "$T/a/gw.log"
ok $? "host a started again waits, b's standby"
is "$(get a)" 000 "host a's gateway does not listen"
answers b
ok $? "host b still serves"
bg_under b
ok $? "bg still runs once, under b"

for h in a b; do
	for v in events idle scale gw; do
		eval "p=\$${h}_$v"
		stop_pid "$p" 30
	done
done
done_testing
