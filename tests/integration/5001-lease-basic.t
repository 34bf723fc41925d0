#!/bin/sh
# hk-lease on SQLite and PostgreSQL: the first holder runs prog with its
# epoch; a second holder of the same name is refused at once with 75 and
# told who holds it; another name is not refused; prog's exit status comes
# back (execline's mapping: 3, 137, 128, 126, 127); the lease is free again
# afterwards with a bigger epoch; signals reach prog; unknown fds pass
# through (readiness on -d 3 included) and none of hk-lease's own does;
# LeaseAcquired reaches events.sock.
. tests/integration/lib.sh

# prog FILE: writes "pid sleeper epoch name" to FILE, then waits; on USR1
# it writes FILE.usr1, on TERM FILE.term and exits 0.
cat >"$T/prog.sh" <<'PROG'
#!/bin/sh
f=$1
sleep 30 </dev/null >/dev/null 2>&1 &
s=$!
trap 'echo term >"$f.term"; kill $s 2>/dev/null; exit 0' TERM
trap 'echo usr1 >"$f.usr1"' USR1
echo "$$ $s $HAKOPOD_LEASE_EPOCH $HAKOPOD_LEASE_NAME" >"$f.tmp"
mv "$f.tmp" "$f"
while kill -0 $s 2>/dev/null; do
	wait $s
done
PROG
chmod +x "$T/prog.sh"
# ready.sh -d FD: an s6-style daemon that says it is ready on FD.
cat >"$T/ready.sh" <<'PROG'
#!/bin/sh
[ "$1" = -d ] && echo >&"$2"
exec sleep 30 </dev/null >/dev/null
PROG
chmod +x "$T/ready.sh"
printf 'not a program\n' >"$T/noexec"
chmod 644 "$T/noexec"

# The command line.
usage='usage: hk-lease [-v] [-j | -w] [-f config] [-t ttl] [-g grace] name prog'
run hk-lease -h
is "$rc $out" "0 $usage [argument ...]" "-h prints the synopsis and exits 0"
run hk-lease gateway
is "$rc" 64 "a name without prog exits 64"
run hk-lease ../x true
is "$rc" 64 "a lease name that is not a word exits 64"
run hk-lease -t 0 gateway true
is "$rc" 64 "a TTL of 0 s exits 64"
run hk-lease -f "$T/missing.toml" gateway true
is "$rc" 66 "a missing config file exits 66"
HAKOPOD_STATE="postgres:///x?host=$T/nowhere&port=1" run hk-lease gateway true
is "$rc" 75 "an unreachable PostgreSQL server exits 75 (try later)"
HAKOPOD_STATE="sqlite://$T/no/such/dir/state.db" run hk-lease gateway true
is "$rc" 69 "a store that cannot be opened exits 69"
printf '[server]\nstate = "mysql://x"\n' >"$T/bad.toml"
run hk-lease -f "$T/bad.toml" gateway true
is "$rc" 78 "a store URL of an unknown scheme exits 78"

# events.sock: a datagram socket that records what it receives.
mkdir -p "$T/run"
socat -u UNIX-RECV:"$T/run/events.sock" OPEN:"$T/events.out",creat,append \
    </dev/null >/dev/null 2>&1 &
_pids="$_pids $!"
wait_for 5 test -S "$T/run/events.sock"

for engine in $(engines); do
	E=$engine
	new_store "$engine" basic
	printf '[server]\nstate = "%s"\nruntime_dir = "%s/run"\n' "$STORE" \
	    "$T" >"$T/hakopod.toml"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	rm -f "$T"/a "$T"/a.term "$T"/a.usr1 "$T"/*.log
	: >"$T/events.out"

	hk-lease -t 2 gateway "$T/prog.sh" "$T/a" </dev/null \
	    >"$T/a.out" 2>"$T/a.log" &
	lpid=$!
	_pids="$_pids $lpid"
	wait_for 5 test -s "$T/a"
	ok $? "$E: the first holder runs prog"
	read -r ppid spid epoch name <"$T/a"
	_pids="$_pids $spid"
	is "$epoch $name" "1 gateway" \
	    "$E: prog gets HAKOPOD_LEASE_EPOCH=1 and HAKOPOD_LEASE_NAME"
	like "$(cat "$T/a.log")" "^hk-lease: info: lease gateway acquired \
by host=.* pid=$lpid \(epoch 1\)$" "$E: the acquisition is logged at info level"
	wait_for 5 grep -q LeaseAcquired "$T/events.out"
	ok $? "$E: LeaseAcquired goes to events.sock"
	like "$(cat "$T/events.out")" \
	    '"kind":"LeaseAcquired".*"name":"gateway"' \
	    "$E: the event names the lease"

	t0=$(date +%s%N)
	run hk-lease -t 2 gateway true
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	is "$rc" 75 "$E: a second holder is refused with 75"
	since='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
	like "$err" "^hk-lease: fatal: lease gateway is held by \
host=$(hostname) pid=$lpid since $since \(epoch 1\)$" \
	    "$E: the refusal names the holder's host, pid, since and epoch"
	[ "$ms" -lt 1000 ]
	ok $? "$E: the refusal comes at once ($ms ms)"

	run hk-lease -t 2 other sh -c 'echo "$HAKOPOD_LEASE_NAME"'
	is "$rc $out" "0 other" "$E: another name is not refused"

	# Signals sent to hk-lease reach prog.
	kill -USR1 "$lpid"
	wait_for 5 test -f "$T/a.usr1"
	ok $? "$E: SIGUSR1 to hk-lease reaches prog"
	kill -TERM "$lpid"
	wait_for 5 test -f "$T/a.term"
	ok $? "$E: SIGTERM to hk-lease reaches prog"
	wait "$lpid"
	is "$?" 0 "$E: hk-lease exits with prog's status after it"

	run hk-lease -t 2 gateway sh -c 'echo $HAKOPOD_LEASE_EPOCH; exit 3'
	is "$rc $out" "3 2" "$E: prog's exit 3 is hk-lease's, at epoch 2"
	run hk-lease -t 2 gateway sh -c 'echo $HAKOPOD_LEASE_EPOCH'
	is "$rc $out" "0 3" "$E: the lease is free again, at a bigger epoch"
	like "$err" 'info: lease gateway released \(epoch 3\): exit 0$' \
	    "$E: the release is logged"
	run hk-lease gateway sh -c 'kill -KILL $$'
	is "$rc" 137 "$E: prog killed by SIGKILL: 137"
	run hk-lease gateway sh -c 'exit 200'
	is "$rc" 128 "$E: prog's own 128+ status becomes 128"
	run hk-lease gateway "$T/nonexistent"
	is "$rc" 127 "$E: prog not found: 127"
	like "$err" "unable to find $T/nonexistent: No such file or directory" \
	    "$E: and says so"
	like "$err" "lease gateway acquired" \
	    "$E: an exec failure is reported after the acquisition"
	run hk-lease gateway "$T/noexec"
	is "$rc" 126 "$E: prog not executable: 126"

	# Fds: an unknown one passes through, none of hk-lease's does.
	run hk-lease gateway sh -c 'echo through >&7' 7>"$T/fd7"
	is "$rc $(cat "$T/fd7")" "0 through" "$E: prog can write to fd 7"
	want=$(sh -c 'ls /proc/$$/fd' | tr '\n' ' ')
	run hk-lease gateway sh -c 'ls /proc/$$/fd'
	is "$(echo "$out" | tr '\n' ' ')" "$want" \
	    "$E: prog gets exactly the fds hk-lease was given"
	rm -f "$T/ready.log"
	daemon ready hk-lease gateway "$T/ready.sh"
	ok $? "$E: prog's readiness on an inherited fd (-d 3) passes through"
	stop_pid "$ready_pid"
	run sh -c 'echo in | hk-lease gateway sh -c "cat; echo err >&2"'
	printf '%s\n' "$err" | grep -qx err
	is "$out $?" "in 0" "$E: stdin, stdout and stderr pass through"
done
pg_missing_is_failure
done_testing
