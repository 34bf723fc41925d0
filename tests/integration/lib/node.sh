# lib/node.sh - sourced after lib.sh and lib/ct.sh by the tests of a
# container node on another host (issue 36, "Functions on any node"): a
# network namespace of the test's own with a veth from this host, a
# podman API service in it exposed over TLS by socat (podman has no TLS
# of its own; hk refuses a tcp:// engine without TLS), and the
# [nodes.worker] table that points hk there.
#
#	node_up_all N		the node at 10.224.0.(4N+2), this host's end
#				10.224.0.(4N+1): a /30 per test (N: 2120
#				0, 2121 1, 2140 2), routed nowhere else
#	node_conf FILE		[nodes.worker] appended to FILE
#	in_node CMD...		CMD in the node's network namespace
#	node_engine_down	the node's engine stopped (socat, then the
#				API service), the namespace left
#	node_cleanup		everything node_up_all made, by PID
#
# The node's engine shares the suite's podman storage (as in 2103): its
# containers go by ct_cleanup, through the suite's engine.  A test stops
# its daemons before node_cleanup: hk-scale removes its containers on
# the node through the node's engine, which must still be there.

# in_node CMD...: CMD in the node's network namespace alone (nsenter:
# "ip netns exec" would also give it a /sys of its own, without the
# cgroup file system the engine's runtime needs).  What runs in the
# background calls nsenter itself, so that $! is its pid (nsenter execs
# CMD), not a subshell's.
in_node() {
	nsenter --net="/run/netns/$NODE_NS" "$@"
}

# node_engine_down: socat (held first, so that it forks no child
# meanwhile), the children it forked per connection, and the node's API
# service, stopped by their pids.
node_engine_down() {
	[ -z "${node_socat_pid:-}" ] || {
		kill -STOP "$node_socat_pid"
		pkill -P "$node_socat_pid"
		kill "$node_socat_pid"
		kill -CONT "$node_socat_pid"
		wait "$node_socat_pid" 2>/dev/null
	}
	node_socat_pid=
	[ -z "${node_api_pid:-}" ] || "$HK_TOP/scripts/podman-api" stop "$node_api_pid"
	node_api_pid=
}

node_cleanup() {
	node_engine_down
	[ -z "${NODE_NS:-}" ] || ip netns del "$NODE_NS" 2>/dev/null
	[ -z "${NODE_VR:-}" ] || ip link del "$NODE_VR" 2>/dev/null
}

# _node_pki: a CA, the node's server certificate, hk-scale's client one.
# NODE_SAN, if set, is the server certificate's subjectAltName instead
# of $NODE's address (IP:A,IP:B: one certificate for several nodes).
_node_pki() {
	NODE_PKI=$T/pki
	mkdir -p "$NODE_PKI"
	{
		openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		    -nodes -days 1 -subj "/CN=hk-test ca" \
		    -keyout "$NODE_PKI/ca.key" -out "$NODE_PKI/ca.pem" \
		    -addext basicConstraints=critical,CA:TRUE \
		    -addext keyUsage=critical,keyCertSign,cRLSign &&
		for c in "server:subjectAltName=${NODE_SAN:-IP:$NODE}" \
		    client:extendedKeyUsage=clientAuth; do
			n=${c%%:*}
			openssl req -new -newkey ec \
			    -pkeyopt ec_paramgen_curve:P-256 -nodes \
			    -subj "/CN=hk-test $n" -keyout "$NODE_PKI/$n.key" \
			    -out "$NODE_PKI/$n.csr" &&
			    echo "${c#*:}" >"$NODE_PKI/$n.ext" &&
			    openssl x509 -req -in "$NODE_PKI/$n.csr" \
			    -CA "$NODE_PKI/ca.pem" -CAkey "$NODE_PKI/ca.key" \
			    -set_serial "$(date +%s%N)" -days 1 \
			    -extfile "$NODE_PKI/$n.ext" \
			    -out "$NODE_PKI/$n.pem" || exit 1
		done
	} >"$T/openssl.log" 2>&1
}

# node_answers: the node's engine answers _ping over TLS.
node_answers() {
	[ "$(curl -sS --max-time 5 --cacert "$NODE_PKI/ca.pem" \
	    --cert "$NODE_PKI/client.pem" --key "$NODE_PKI/client.key" \
	    "https://$NODE:$NODE_PORT/_ping" 2>/dev/null)" = OK ]
}

# node_engine_up: the node's podman API service, and socat in front.
node_engine_up() {
	mkdir -p "$T/node"
	nsenter --net="/run/netns/$NODE_NS" podman system service --time=0 \
	    "unix://$T/node/podman.sock" >>"$T/node/podman-api.log" 2>&1 </dev/null &
	node_api_pid=$!
	_pids="$_pids $node_api_pid"
	nsenter --net="/run/netns/$NODE_NS" socat "OPENSSL-LISTEN:$NODE_PORT,bind=$NODE,reuseaddr,fork,cert=$NODE_PKI/server.pem,key=$NODE_PKI/server.key,cafile=$NODE_PKI/ca.pem,verify=1" \
	    "UNIX-CONNECT:$T/node/podman.sock" 2>>"$T/node/socat.log" &
	node_socat_pid=$!
	wait_t 60 node_answers
}

# node_up_all N: five assertions.
node_up_all() {
	NODE_NS=hkn$1p$$
	NODE_VR=vn$1r$$
	_vn=vn$1n$$
	_here=10.224.0.$((4 * $1 + 1))
	NODE=10.224.0.$((4 * $1 + 2))
	ip netns add "$NODE_NS" && ip -n "$NODE_NS" link set lo up &&
	    ip link add "$NODE_VR" type veth peer name "$_vn" &&
	    ip link set "$_vn" netns "$NODE_NS" &&
	    ip addr add "$_here/30" dev "$NODE_VR" &&
	    ip link set "$NODE_VR" up &&
	    ip -n "$NODE_NS" addr add "$NODE/30" dev "$_vn" &&
	    ip -n "$NODE_NS" link set "$_vn" up
	ok $? "the node's namespace, $NODE, a veth from this host's $_here"
	for _t in socat openssl; do
		command -v "$_t" >/dev/null
		ok $? "$_t is installed (scripts/deps)" || done_testing
	done
	_node_pki
	ok $? "openssl: a CA, the node's server certificate, hk-scale's client one"
	NODE_PORT=$(free_port)
	node_engine_up
	ok $? "the node's podman API service answers on https://$NODE:$NODE_PORT"
}

node_conf() {
	cat >>"$1" <<CONF

[nodes.worker]
address = "$NODE"
container_engine = "tcp://$NODE:$NODE_PORT"
container_tls_ca = "$NODE_PKI/ca.pem"
container_tls_cert = "$NODE_PKI/client.pem"
container_tls_key = "$NODE_PKI/client.key"
container_network = "slirp4netns"
CONF
}
