# lib/hosts.sh - two control hosts on one machine, for the tests of the
# control plane under its lease (hk-lease(1), Joining; hk(7), Several
# hosts); sourced after lib.sh.  Each "host" has a host name of its own
# (a UTS namespace: hosta, hostb) and a configuration of its own (its
# runtime_dir, and its gateway's serverless_listen behind the one
# serverless_address, $VIP, they advertise), and runs what the shipped
# units run: hk-lease -w gateway hk-activate, and the others under
# hk-lease -j gateway, with the test's $TTL and $GRACE.

# A host may have a network namespace of its own: HOST_NETNS_H names
# it, and HOST_ADDR_H its address there (127.0.0.1 without one); the
# programs of the host, and "as H", run in it.  HAProxy then runs in a
# namespace that reaches both (HAPROXY_NETNS), listening on
# $HOST_VIP_ADDR (127.0.0.1 without one) and connecting from
# $HOST_PROXY_ADDR (127.0.0.2), which the gateways trust.

# host_config H [LINE...]: $T/H/hakopod.toml, its gateway listening on a
# free port ($PORT_H) of its address behind the advertised $VIP, the store
# $STORE, and each LINE in [server].
host_config() {
	_h=$1
	shift
	_port=$(free_port)
	eval "_addr=\${HOST_ADDR_$_h:-127.0.0.1}"
	mkdir -p "$T/$_h/run"
	{
		cat <<CONF
[server]
serverless_address = "${HOST_VIP_ADDR:-127.0.0.1}:$VIP"
serverless_listen = "$_addr:$_port"
trusted_proxies = ["${HOST_PROXY_ADDR:-127.0.0.2}"]
state = "$STORE"
runtime_dir = "$T/$_h/run"
CONF
		for _l in "$@"; do
			echo "$_l"
		done
	} >"$T/$_h/hakopod.toml"
	eval "PORT_$_h=$_port"
}

# haproxy_start: etc/haproxy/haproxy.cfg as it ships for two gateways
# (its commented gateway-a and gateway-b, at $PORT_a and $PORT_b),
# listening on $VIP in plain HTTP, connecting from 127.0.0.2, logging to
# stderr, and checking every 200 ms rather than every second (the
# addresses those of the hosts' namespaces, if they have some).
haproxy_start() {
	_va=${HOST_VIP_ADDR:-127.0.0.1}
	_pa=${HOST_PROXY_ADDR:-127.0.0.2}
	sed -e "s|^	bind :443 ssl crt .*|	bind $_va:$VIP|" \
	    -e '/^	bind :80$/d' -e '/redirect scheme https/d' \
	    -e '/^	server gateway 127.0.0.1:8082 /d' \
	    -e "s|^	#server gateway-a HOST-A:8082 |	server gateway-a ${HOST_ADDR_a:-127.0.0.1}:$PORT_a |" \
	    -e "s|^	#server gateway-b HOST-B:8082 |	server gateway-b ${HOST_ADDR_b:-127.0.0.1}:$PORT_b |" \
	    -e 's|inter 1s|inter 200ms|' \
	    -e "s|^backend hk_gateway\$|&\\
	source $_pa|" \
	    -e 's|log /dev/log local0|log stderr format raw local0|' \
	    -e '/^	chroot /d' -e '/^	user /d' -e '/^	group /d' \
	    "$HK_TOP/etc/haproxy/haproxy.cfg" >"$T/haproxy.cfg"
	[ "$(grep -c "^	server gateway-[ab] [0-9.]*:[0-9]* " "$T/haproxy.cfg")" = 2 ] &&
	    grep -q "^	source $_pa\$" "$T/haproxy.cfg" || return 1
	${HAPROXY_NETNS:+ip netns exec "$HAPROXY_NETNS"} \
	    haproxy -db -f "$T/haproxy.cfg" 2>"$T/haproxy.log" &
	haproxy_pid=$!
	_pids="$_pids $!"
}

# via_haproxy: fn answers 200 on the advertised address, through HAProxy
via_haproxy() {
	[ "$(curl -sS -o "$T/vbody" -w '%{http_code}' --max-time 30 \
	    -H "Host: fn.fn.localhost" "http://127.0.0.1:$VIP/" 2>/dev/null)" = 200 ]
}

# in_ns H: the command prefix that runs in host H's namespace, if any
in_ns() {
	eval "_ns=\${HOST_NETNS_$1:-}"
	[ -z "$_ns" ] || echo "ip netns exec $_ns"
}

# as H CMD...: CMD with host H's configuration (in its namespace).
as() {
	_h=$1
	shift
	HAKOPOD_CONFIG=$T/$_h/hakopod.toml $(in_ns "$_h") "$@"
}

# spawn H NAME CMD...: CMD in the background with host H's
# configuration, its stderr in $T/H/NAME.log, its pid in ${H}_NAME.
spawn() {
	_h=$1
	_n=$2
	shift 2
	HAKOPOD_CONFIG=$T/$_h/hakopod.toml $(in_ns "$_h") unshare -u sh -c \
	    'hostname "$0" && exec "$@"' "host$_h" "$@" 2>>"$T/$_h/$_n.log" &
	eval "${_h}_${_n}=$!"
	_pids="$_pids $!"
}

# host_start H: the programs of host H, in the background: the gateway,
# and hk-scale, hk-idle and hk-events joined to it, and hk-jobs too when
# HOST_JOBS=1; the pid of each hk-lease in ${H}_gw, ${H}_scale, ${H}_idle,
# ${H}_events (${H}_jobs).
host_start() {
	spawn "$1" gw hk-lease -w -t $TTL -g $GRACE gateway hk-activate -v
	spawn "$1" scale hk-lease -j -t $TTL -g $GRACE gateway hk-scale -v -g 2
	spawn "$1" idle hk-lease -j -t $TTL -g $GRACE gateway hk-idle -v
	spawn "$1" events hk-lease -j -t $TTL -g $GRACE gateway hk-events -v
	[ "${HOST_JOBS:-0}" = 0 ] ||
	    spawn "$1" jobs hk-lease -j -t $TTL -g $GRACE gateway hk-jobs -v
}

# prog_of PID: the program an hk-lease runs (its one child), or nothing.
prog_of() {
	pgrep -P "$1" 2>/dev/null | head -1
}

# bg_pids H: the pids hk ps --json has for the running bg instances.
bg_pids() {
	as "$1" hk ps --json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] == "fn" and s["service"] == "bg":
        for i in s["replicas"]:
            if i["state"] == "running" and i.get("pid"):
                print(i["pid"])'
}

# parent PID: its parent's pid.
parent() {
	sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f2
}

# bg_under H: exactly one bg instance runs, a child of host H's hk-scale.
bg_under() {
	_b=$(bg_pids "$1")
	[ -n "$_b" ] && [ "$(echo "$_b" | wc -l)" -eq 1 ] && alive "$_b" ||
	    return 1
	eval "_s=\$${1}_scale"
	[ "$(parent "$_b")" = "$(prog_of "$_s")" ]
}

# epoch_of PID: HAKOPOD_LEASE_EPOCH in the environment of process PID.
epoch_of() {
	tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null |
	    sed -n 's/^HAKOPOD_LEASE_EPOCH=//p'
}

# ended PID: the process is gone, or a zombie.
ended() {
	! alive "$1"
}

# lost H NAME EPOCH: host H's hk-lease NAME logged the loss of EPOCH
# (and so exits 75).
lost() {
	grep -q "lease gateway lost (epoch $3)" "$T/$1/$2.log"
}

# pg_netns NS ADDR NET: a private PostgreSQL server in $pgdir (made by
# scripts/pg, then started again in namespace NS, listening on ADDR and
# a free port, $pgport, trusting NET.0/24), its database hk made; sets
# $LOCAL (the superuser, over its socket) and $STORE (hk's URL, over
# TCP).  What failed is in $T/pg.err.
pg_netns() {
	chmod 711 "$T"
	pgport=$(free_port)
	HK_PG_PORT=$pgport "$HK_TOP/scripts/pg" start "$pgdir" >/dev/null \
	    2>"$T/pg.err" || return 1
	for _b in "${HK_TEST_PG_BIN:-}" /usr/lib/postgresql/*/bin; do
		[ -x "$_b/pg_ctl" ] && break
	done
	runuser -u postgres -- "$_b/pg_ctl" -D "$pgdir/data" -m fast -w \
	    stop >/dev/null 2>>"$T/pg.err" &&
	    echo "host all all $3.0/24 trust" >>"$pgdir/data/pg_hba.conf" &&
	    ip netns exec "$1" runuser -u postgres -- "$_b/pg_ctl" \
	    -D "$pgdir/data" -l "$pgdir/data/server.log" -w -o "-k $pgdir/sock \
	    -p $pgport -c listen_addresses='$2' -c fsync=off" start \
	    >/dev/null 2>>"$T/pg.err" &&
	    psql "postgres:///postgres?host=$pgdir/sock&port=$pgport&user=postgres" \
	    -qAtc "CREATE DATABASE hk" >/dev/null 2>>"$T/pg.err" || return 1
	LOCAL="postgres:///hk?host=$pgdir/sock&port=$pgport&user=postgres"
	STORE="postgres://postgres@$2:$pgport/hk"
}
