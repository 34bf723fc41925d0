#!/bin/sh
# hk-lease's exclusion when a holder loses its lease while it still runs,
# on SQLite and PostgreSQL.  Holder A's lock is cut from under it just
# after a renewal (PostgreSQL: pg_terminate_backend on its connection;
# SQLite: its lock file removed), so that A finds out only at its next
# renewal, while holder B tries again and again to take the lease.  B gets
# the lock at once but must not start its prog before A's has stopped:
# each prog records when it was started (forked) and when it stops, and
# the two runs must not overlap.  B's prog starts within the TTL plus the
# grace period of the cut.
#
# Then a renewal that hangs in the store (a preloaded shim blocks poll(2),
# which libpq waits in, and stat(2), which the SQLite lock check calls,
# while a file exists): prog still gets SIGTERM when the TTL runs out and
# SIGKILL a grace period later, while hk-lease is still stuck, and
# hk-lease, once unstuck, counts the lease as lost and exits 75.
#
# Every time is read where it happens, on one clock (CLOCK_BOOTTIME, in
# ms): prog's start from /proc (when hk-lease forked it, not when its
# interpreter got going), its SIGTERM in its handler, its SIGKILL by a
# watcher blocked on a pidfd, the stuck renewal's start by the shim, a cut
# by the test right after it; so a busy machine adds to a measured time
# only the lateness of hk-lease's own timers, which the margins cover.
. tests/integration/lib.sh

# A renews every TTL/3 = 1 s: B, trying all along, is well started by
# the time A finds out, were it not made to wait.
TTL=3
GRACE=1

# now_ms: sets $now to CLOCK_BOOTTIME in ms, read from /proc/uptime (10 ms
# steps) without a fork.
now_ms() {
	read -r _up _ </proc/uptime
	now=${_up%.*}${_up#*.}0
}

# prog.py LOG WHO [ignore]: appends "start WHO EPOCH HK-LEASE-PID PID MS"
# to LOG, MS when hk-lease forked it (its start time in /proc, 10 ms
# steps, rounded down); on SIGTERM "stop ..." as its last act before
# exiting, or with "ignore" "term ..." and goes on, MS then the time of
# the signal.  MS on CLOCK_BOOTTIME.
cat >"$T/prog.py" <<'PROG'
import os, signal, sys, time
log, who = sys.argv[1], sys.argv[2]
def stamp(what, ms):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, ("%s %s %s %d %d %d\n" % (what, who,
        os.environ["HAKOPOD_LEASE_EPOCH"], os.getppid(), os.getpid(),
        ms)).encode())
    os.close(fd)
def now():
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 1000000
def forked():
    st = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    return int(st[19]) * 1000 // os.sysconf("SC_CLK_TCK")
def term(sig, frame):
    t = now()
    if sys.argv[3:] == ["ignore"]:
        stamp("term", t)
        return
    stamp("stop", t)
    os._exit(0)
signal.signal(signal.SIGTERM, term)
stamp("start", forked())
while True:
    signal.pause()
PROG

# gone.py PID OUT: writes OUT.ready, then, once PID has exited (a zombie
# counts), the time it did into OUT (ms, CLOCK_BOOTTIME): a pidfd wakes
# it, no poll interval.
cat >"$T/gone.py" <<'GONE'
import os, select, sys, time
pid, out = int(sys.argv[1]), sys.argv[2]
def dead():
    try:
        st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        return True
    return st[0] in ("Z", "X")
try:
    fd = os.pidfd_open(pid)
except (AttributeError, OSError):
    fd = None
open(out + ".ready", "w").close()
if fd is not None:
    p = select.poll()
    p.register(fd, select.POLLIN)
    p.poll()
else:
    while not dead():
        time.sleep(0.005)
t = time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 1000000
with open(out + ".tmp", "w") as f:
    f.write("%d\n" % t)
os.replace(out + ".tmp", out)
GONE

# The shim: in hk-lease only, poll() and stat() wait while $HK_TEST_STALL
# exists, as on a dead socket or a hung file system; the first call that
# waits writes its time (ms, CLOCK_BOOTTIME) to $HK_TEST_STALL.at: the
# start of the stuck renewal, within the renewal's first store call.
cat >"$T/stall.c" <<'SHIM'
#define _GNU_SOURCE
#include <sys/stat.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
note(const char *f)
{
	struct timespec ts;
	char path[4096], buf[32];
	int fd, n;

	(void)clock_gettime(CLOCK_BOOTTIME, &ts);
	n = snprintf(buf, sizeof(buf), "%lld\n",
	    (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	(void)snprintf(path, sizeof(path), "%s.at", f);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) != -1) {
		(void)write(fd, buf, (size_t)n);
		(void)close(fd);
	}
}

static void
stall(void)
{
	static int noted;
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	const char *f = getenv("HK_TEST_STALL");
	int e = errno;

	if (strcmp(program_invocation_short_name, "hk-lease") != 0)
		return;
	if (f != NULL && !noted && access(f, F_OK) == 0) {
		noted = 1;
		note(f);
	}
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
	cut_lock
	now_ms
	cut=$now
	wait_for 6 grep -q '^start B' "$T/overlap.log"
	ok $? "$E: holder B takes the lease over and runs its prog"
	reap "$apid"
	is "$?" 75 "$E: holder A exits 75"
	a_stop=$(field stop A 6)
	b_start=$(field start B 6)
	gap=$(( ${b_start:-0} - ${a_stop:-0} ))
	[ -n "$a_stop" ] && [ -n "$b_start" ] && [ "$a_stop" -lt "$b_start" ]
	ok $? "$E: B's prog starts after A's has stopped ($gap ms after)"
	# B's wait is bounded by A's lease: A's row ends TTL + grace after
	# A's last renewal, which began before the cut.  The 1 s more covers
	# B's acquisition and the lateness of its timer, not the whole TTL
	# (3 s) more that a wait past A's lease would take: that would come
	# at least TTL + grace + TTL - TTL/3 = 6 s after the cut.
	ms=$(( ${b_start:-0} - cut ))
	[ -n "$b_start" ] && [ "$ms" -lt $(( (TTL + GRACE) * 1000 + 1000 )) ]
	ok $? "$E: within TTL + grace, $((TTL + GRACE)) s, of the cut, + 1 s ($ms ms)"
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
	rm -f "$T/stall" "$T/stall.at" "$T/killed" "$T/killed.ready"
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
	python3 "$T/gone.py" "$ppid" "$T/killed" </dev/null &
	_pids="$_pids $!"
	wait_for 5 test -f "$T/killed.ready"
	# Right after a renewal, the next one (TTL/3 later) is the stuck one.
	n=$(renewals)
	wait_for 3 renewed_after "$n"
	: >"$T/stall"
	wait_for 5 grep -q '^term S' "$T/overlap.log"
	ok $? "$E: stuck: prog still gets SIGTERM"
	# The deadlines count from the start of the last renewal that
	# succeeded, the stuck one's start less TTL/3 (its timer): SIGTERM
	# is due TTL - TTL/3 after the stuck renewal began, SIGKILL a grace
	# period later.  The margin, either way, is hk-lease's timers being
	# late (the stuck renewal's, which moves the reference, and the
	# watchdog's) and prog's handler: a deadline counted from the stuck
	# renewal itself would be TTL/3 = 1 s late, a SIGKILL with SIGTERM or
	# a grace period late 1 s off.
	at=$(cat "$T/stall.at" 2>/dev/null)
	term=$(field term S 6)
	due=$(( TTL * 1000 - TTL * 1000 / 3 ))
	ms=$(( ${term:-0} - ${at:-0} ))
	[ -n "$at" ] && [ -n "$term" ] && [ "$ms" -ge $((due - 500)) ] &&
	    [ "$ms" -le $((due + 500)) ]
	ok $? "$E: stuck: SIGTERM when the TTL of $TTL s runs out, $due ms after the stuck renewal began, +-500 ms ($ms ms)"
	wait_for 5 test -s "$T/killed"
	killed=$(cat "$T/killed" 2>/dev/null)
	due=$(( due + GRACE * 1000 ))
	ms=$(( ${killed:-0} - ${at:-0} ))
	[ -n "$at" ] && [ -n "$killed" ] && [ "$ms" -ge $((due - 500)) ] &&
	    [ "$ms" -le $((due + 500)) ]
	ok $? "$E: stuck: and SIGKILL the grace period of $GRACE s later, $due ms after the stuck renewal began, +-500 ms ($ms ms, $(( ${killed:-0} - ${term:-0} )) ms after SIGTERM)"
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
