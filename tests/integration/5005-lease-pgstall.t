#!/bin/sh
# hk-lease when PostgreSQL stops answering without closing the connection
# (a stalled server or proxy, or a network partition): each statement on
# the lease's connection waits a quarter of the TTL at most, so the holder
# stops prog and exits 75 within the TTL instead of hanging in a renewal.
# The stall is a socat relay in front of the server, stopped with SIGSTOP.
# PostgreSQL only.
. tests/integration/lib.sh

cat >"$T/prog.sh" <<'PROG'
#!/bin/sh
f=$1
sleep 30 </dev/null >/dev/null 2>&1 &
s=$!
trap 'echo term >"$f.term"; kill $s 2>/dev/null; exit 0' TERM
echo "$$ $s $HAKOPOD_LEASE_EPOCH" >"$f.tmp"
mv "$f.tmp" "$f"
while kill -0 $s 2>/dev/null; do
	wait $s
done
PROG
chmod +x "$T/prog.sh"

# The server's socket directory and port, from the URL (scripts/pg's form).
sockdir=$(echo "${HK_TEST_PG:-}" | sed -n 's/.*[?&]host=\([^&]*\).*/\1/p')
port=$(echo "${HK_TEST_PG:-}" | sed -n 's/.*[?&]port=\([0-9]*\).*/\1/p')
if [ -n "${HK_TEST_PG:-}" ] && ! [ -S "$sockdir/.s.PGSQL.$port" ]; then
	diag "HK_TEST_PG is not on a Unix socket: the stall test skips"
elif [ -n "${HK_TEST_PG:-}" ]; then
	E=postgres
	new_store postgres stall
	mkdir -p "$T/relay"
	# One connection, relayed to the server's socket.
	socat UNIX-LISTEN:"$T/relay/.s.PGSQL.$port" \
	    UNIX-CONNECT:"$sockdir/.s.PGSQL.$port" \
	    </dev/null >/dev/null 2>&1 &
	relay=$!
	_pids="$_pids $relay"
	wait_for 5 test -S "$T/relay/.s.PGSQL.$port"
	HAKOPOD_STATE=$(echo "$STORE" | sed "s|host=[^&]*|host=$T/relay|")
	export HAKOPOD_STATE HAKOPOD_RUNTIME_DIR="$T"
	hk-lease -t 4 gateway "$T/prog.sh" "$T/a" </dev/null >/dev/null \
	    2>"$T/a.log" &
	lpid=$!
	_pids="$_pids $lpid"
	wait_for 5 test -s "$T/a"
	ok $? "$E: the holder runs prog through the relay"
	read -r ppid spid epoch <"$T/a"
	_pids="$_pids $ppid $spid"
	kill -STOP "$relay"
	t0=$(date +%s%N)
	wait_for 5 test -f "$T/a.term"
	ok $? "$E: a stalled server stops prog"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ "$ms" -lt 4000 ]
	ok $? "$E: within the TTL of 4 s ($ms ms)"
	wait "$lpid"
	is "$?" 75 "$E: hk-lease exits 75"
	like "$(cat "$T/a.log")" \
	    "lease gateway lost \(epoch 1\): .*no answer within 1000 ms" \
	    "$E: and says the server did not answer in time"
	kill -CONT "$relay"
	kill "$relay" 2>/dev/null
fi
pg_missing_is_failure
done_testing
