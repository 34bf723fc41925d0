#!/bin/sh
# Every daemon signals readiness both ways (a newline on the -d fd for s6,
# READY=1 on NOTIFY_SOCKET for systemd), announces RELOADING=1 then
# READY=1 around SIGHUP, says STOPPING=1 on SIGTERM and exits 0.  The
# NOTIFY_SOCKET listener is this test's own datagram socket, as systemd's
# would be.
. tests/integration/lib.sh

mkdir -p "$T/run"
PORT=$(free_port)
cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "sqlite://$T/state.db"
runtime_dir = "$T/run"
CONF
HAKOPOD_CONFIG=$T/hakopod.toml
export HAKOPOD_CONFIG
printf 'schema_version = 1\nname = "r"\n' >"$T/app.toml"
hk apply "$T/app.toml" >/dev/null
ok $? "an empty app is applied"

# notify_listen NAME: a datagram socket at $T/NAME.notify whose messages go,
# one per line (newlines inside shown as '|'), to $T/NAME.msgs.  The
# listener is another process: a message reaches the file some time after
# the daemon sent it, even after the daemon has exited, so every check of
# the file waits for it.  A pause before each write makes that time long
# enough that a check that does not wait fails every run, not once in a
# while on a busy machine.
notify_listen() {
	python3 - "$T/$1.notify" "$T/$1.msgs" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "a") as out:
    out.write("listening\n"); out.flush()
    while True:
        try:
            m = s.recv(4096)
        except socket.timeout:
            break
        time.sleep(0.1)
        out.write(m.decode().replace("\n", "|") + "\n"); out.flush()
PY
	_pids="$_pids $!"
	wait_for 10 grep -q listening "$T/$1.msgs"
}

has() { grep -q "$2" "$T/$1.msgs"; }

for prog in hk-scale hk-activate hk-idle hk-events hk-jobs; do
	n=${prog#hk-}
	notify_listen "$n"
	NOTIFY_SOCKET=$T/$n.notify daemon "$n" "$prog"
	ok $? "$prog: a newline on the -d fd when ready"
	wait_for 10 has "$n" '^READY=1'
	ok $? "$prog: READY=1 on NOTIFY_SOCKET"
	eval "pid=\$${n}_pid"
	kill -HUP "$pid"
	wait_for 10 has "$n" '^RELOADING=1|MONOTONIC_USEC=[0-9]*$'
	ok $? "$prog: SIGHUP announces RELOADING=1 with MONOTONIC_USEC"
	ready_again() { [ "$(grep -c '^READY=1' "$T/$n.msgs")" -ge 2 ]; }
	wait_for 10 ready_again
	ok $? "$prog: and READY=1 again after the reload"
	kill -TERM "$pid"
	wait "$pid"
	is "$?" 0 "$prog: SIGTERM stops it with exit status 0"
	wait_for 10 has "$n" '^STOPPING=1'
	ok $? "$prog: after STOPPING=1"
done

done_testing
