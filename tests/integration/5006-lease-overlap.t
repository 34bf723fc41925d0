#!/bin/sh
# hk-lease's exclusion when a holder loses its lease while it still runs,
# on SQLite and PostgreSQL.  Holder A's lock is cut from under it just
# after a renewal (PostgreSQL: pg_terminate_backend on its connection;
# SQLite: its lock file removed), so that A finds out only at its next
# renewal, while holder B tries again and again to take the lease.  B gets
# the lock at once but must not start its prog before A's has stopped:
# each prog records when it starts and stops on the monotonic clock, and
# the two runs must not overlap.  B's prog starts within the TTL plus the
# grace period.
#
# Then a renewal that hangs in the store (a preloaded shim blocks poll(2),
# which libpq waits in, and stat(2), which the SQLite lock check calls,
# while a file exists): prog still gets SIGTERM when the TTL runs out and
# SIGKILL a grace period later, while hk-lease is still stuck, and
# hk-lease, once unstuck, counts the lease as lost and exits 75.
. tests/integration/lib.sh

# A renews every TTL/3 = 1 s: B, trying all along, is well started by
# the time A finds out, were it not made to wait.
TTL=3
GRACE=1

# prog.py LOG WHO [ignore]: appends "start WHO EPOCH HK-LEASE-PID PID NS"
# to LOG, NS on CLOCK_MONOTONIC; on SIGTERM "stop ..." as its last act
# before exiting, or with "ignore" "term ..." and goes on.
cat >"$T/prog.py" <<'PROG'
import os, signal, sys, time
log, who = sys.argv[1], sys.argv[2]
def stamp(what):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, ("%s %s %s %d %d %d\n" % (what, who,
        os.environ["HAKOPOD_LEASE_EPOCH"], os.getppid(), os.getpid(),
        time.clock_gettime_ns(time.CLOCK_MONOTONIC))).encode())
    os.close(fd)
def term(sig, frame):
    if sys.argv[3:] == ["ignore"]:
        stamp("term")
        return
    stamp("stop")
    os._exit(0)
signal.signal(signal.SIGTERM, term)
stamp("start")
while True:
    signal.pause()
PROG

# The shim: in hk-lease only, poll() and stat() wait while $HK_TEST_STALL
# exists, as on a dead socket or a hung file system.
cat >"$T/stall.c" <<'SHIM'
#define _GNU_SOURCE
#include <sys/stat.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
stall(void)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	const char *f = getenv("HK_TEST_STALL");
	int e = errno;

	if (strcmp(program_invocation_short_name, "hk-lease") != 0)
		return;
	while (f != NULL && access(f, F_OK) == 0)
		(void)nanosleep(&tick, NULL);
	errno = e;
}

int
poll(struct pollfd *fds, nfds_t n, int ms)
{
	int (*real)(struct pollfd *, nfds_t, int) = dlsym(RTLD_NEXT, "poll");

	stall();
	return real(fds, n, ms);
}

int
stat(const char *path, struct stat *st)
{
	int (*real)(const char *, struct stat *) = dlsym(RTLD_NEXT, "stat");

	stall();
	return real(path, st);
}
SHIM
shim=
if cc -shared -fPIC -o "$T/stall.so" "$T/stall.c" -ldl 2>"$T/cc.err"; then
	shim=$T/stall.so
else
	diag "no shim ($(head -1 "$T/cc.err")): the stuck renewal part skips"
fi

mono() {
	python3 -c 'import time
print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))'
}

# field WHAT WHO N: field N of the first "WHAT WHO" line of the log.
field() {
	awk -v w="$1" -v who="$2" -v n="$3" \
	    '$1 == w && $2 == who { print $n; exit }' "$T/overlap.log"
}

renewals() {
	grep -c 'lease gateway renewed' "$T/a.log"
}

renewed_after() {
	[ "$(renewals)" -gt "$1" ]
}

gone() {
	! alive "$1"
}

# reap PID: its exit status, waiting 10 s at most (then SIGKILL).
reap() {
	wait_for 10 gone "$1" || kill -KILL "$1" 2>/dev/null
	wait "$1"
}

# contend WHO: takes the lease again and again while it is refused (75),
# 10 s at most; prog.py runs as WHO once it is taken.
contend() {
	_n=0
	while [ "$_n" -lt 500 ]; do
		hk-lease -t "$TTL" -g "$GRACE" gateway python3 "$T/prog.py" \
		    "$T/overlap.log" "$1" </dev/null >/dev/null 2>>"$T/$1.log"
		[ $? -eq 75 ] || return 0
		_n=$((_n + 1))
		sleep 0.02
	done
}

# cut_lock: holder A's lock goes from under it.
cut_lock() {
	if [ "$engine" = sqlite ]; then
		rm -f "$T/overlap.db.lease-gateway.lock"
	else
		db=$(echo "$STORE" | sed 's|^postgres:///\([^?]*\)?.*|\1|')
		# The backend that holds the lease's lock (one-bigint form),
		# not B's attempts, which are named hk-lease:gateway too.
		psql "$HK_TEST_PG" -qAtc "SELECT pg_terminate_backend(l.pid)
		    FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		    WHERE d.datname = '$db' AND l.locktype = 'advisory'
		    AND l.objsubid = 1 AND l.granted" >/dev/null
	fi
}

for engine in $(engines); do
	E=$engine
	new_store "$engine" overlap
	printf '[server]\nstate = "%s"\nruntime_dir = "%s/run"\n' "$STORE" \
	    "$T" >"$T/hakopod.toml"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	: >"$T/overlap.log"
	: >"$T/B.log"

	hk-lease -v -t "$TTL" -g "$GRACE" gateway python3 "$T/prog.py" \
	    "$T/overlap.log" A </dev/null >/dev/null 2>"$T/a.log" &
	apid=$!
	_pids="$_pids $apid"
	wait_for 5 grep -q '^start A' "$T/overlap.log"
	ok $? "$E: holder A runs its prog"
	contend B &
	bl=$!
	_pids="$_pids $bl"
	n=$(renewals)
	wait_for 3 renewed_after "$n"
	t0=$(mono)
	cut_lock
	wait_for 6 grep -q '^start B' "$T/overlap.log"
	ok $? "$E: holder B takes the lease over and runs its prog"
	reap "$apid"
	is "$?" 75 "$E: holder A exits 75"
	a_stop=$(field stop A 6)
	b_start=$(field start B 6)
	gap=$(( (${b_start:-0} - ${a_stop:-0}) / 1000000 ))
	[ -n "$a_stop" ] && [ -n "$b_start" ] && [ "$a_stop" -lt "$b_start" ]
	ok $? "$E: B's prog starts after A's has stopped ($gap ms after)"
	ms=$(( (${b_start:-0} - t0) / 1000000 ))
	# B's wait is bounded by A's lease (TTL + grace): the check is that
	# it is no longer.  2 s more is the slack of a loaded 2-core machine,
	# under the whole TTL (3 s) more that a wait past A's lease would take.
	[ "$ms" -lt $(( (TTL + GRACE) * 1000 + 2000 )) ]
	ok $? "$E: within TTL + grace, $((TTL + GRACE)) s, + 2 s ($ms ms)"
	[ "$(field start B 3)" -gt "$(field start A 3)" ]
	ok $? "$E: at a bigger epoch"
	like "$(cat "$T/B.log")" \
	    'lease gateway was not released: prog starts in [0-9]+ ms' \
	    "$E: B says why its prog waits"
	b_lease=$(field start B 4)
	kill -TERM "$b_lease"
	reap "$bl"
	grep -q '^stop B' "$T/overlap.log"
	ok $? "$E: B's prog stops when B is told to"

	# A renewal stuck in the store.
	[ -n "$shim" ] || continue
	rm -f "$T/stall"
	: >"$T/overlap.log"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    HK_TEST_STALL="$T/stall" LD_PRELOAD="$shim" \
	    hk-lease -v -t "$TTL" -g "$GRACE" gateway python3 "$T/prog.py" \
	    "$T/overlap.log" S ignore </dev/null >/dev/null 2>"$T/a.log" &
	spid=$!
	_pids="$_pids $spid"
	wait_for 8 grep -q '^start S' "$T/overlap.log"
	ok $? "$E: stuck: the holder runs its prog (ignoring SIGTERM)"
	ppid=$(field start S 5)
	_pids="$_pids $ppid"
	n=$(renewals)
	wait_for 3 renewed_after "$n"
	t0=$(mono)
	: >"$T/stall"
	wait_for 5 grep -q '^term S' "$T/overlap.log"
	ok $? "$E: stuck: prog still gets SIGTERM"
	term=$(field term S 6)
	ms=$(( (${term:-0} - t0) / 1000000 ))
	[ -n "$term" ] && [ "$ms" -lt $(( TTL * 1000 + 300 )) ]
	ok $? "$E: stuck: when the TTL of $TTL s runs out ($ms ms)"
	wait_for 5 gone "$ppid"
	ms=$(( ($(mono) - t0) / 1000000 ))
	[ "$ms" -lt $(( (TTL + GRACE) * 1000 + 500 )) ]
	ok $? "$E: stuck: and SIGKILL after the grace period ($ms ms)"
	test -f "$T/stall" && alive "$spid" && ! grep -q 'lost' "$T/a.log"
	ok $? "$E: stuck: while hk-lease is still stuck in the renewal"
	rm -f "$T/stall"
	reap "$spid"
	is "$?" 75 "$E: stuck: hk-lease exits 75 once unstuck"
	kill -KILL "$ppid" 2>/dev/null
	like "$(cat "$T/a.log")" \
	    "error: lease gateway lost \(epoch [0-9]+\): " \
	    "$E: stuck: the lease counts as lost"
done
pg_missing_is_failure
done_testing
