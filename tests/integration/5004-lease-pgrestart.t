#!/bin/sh
# hk-lease across a PostgreSQL restart: the session advisory lock dies with
# the server's sessions, so the holder loses the lease, stops prog within
# the TTL and exits 75; once the server is back, the lease can be taken
# again at a bigger epoch, its prog starting once the old row's expiry plus
# its grace period has passed (the holder did not release it).  PostgreSQL
# only: the test restarts a private server of its own (scripts/pg start, in
# $T), so that tests running in parallel on the shared one are not
# disturbed.  prog stamps its SIGTERM itself: the time pg_ctl takes to
# restart the server on a busy machine is not hk-lease's.
. tests/integration/lib.sh

# now_ms: sets $now to CLOCK_BOOTTIME in ms, read from /proc/uptime (10 ms
# steps) without a fork, as prog stamps its SIGTERM.
now_ms() {
	read -r _up _ </proc/uptime
	now=${_up%.*}${_up#*.}0
}

# prog FILE: writes "pid sleeper epoch" to FILE, then waits; on TERM it
# writes "term MS" to FILE.term (MS as now_ms) and exits 0.
cat >"$T/prog.sh" <<'PROG'
#!/bin/sh
f=$1
sleep 30 </dev/null >/dev/null 2>&1 &
s=$!
trap 'read -r up _ </proc/uptime; echo "term ${up%.*}${up#*.}0" >"$f.term"
    kill $s 2>/dev/null; exit 0' TERM
echo "$$ $s $HAKOPOD_LEASE_EPOCH" >"$f.tmp"
mv "$f.tmp" "$f"
while kill -0 $s 2>/dev/null; do
	wait $s
done
PROG
chmod +x "$T/prog.sh"

as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

try_take() {
	hk-lease -t 2 gateway sh -c 'echo $HAKOPOD_LEASE_EPOCH' \
	    >"$T/take.out" 2>/dev/null
}

if [ -n "${HK_TEST_PG:-}" ]; then
	E=postgres
	pgdir=$T/pg
	trap '_cleanup_pg; _cleanup' EXIT
	_cleanup_pg() {
		"$HK_TOP/scripts/pg" stop "$pgdir" >/dev/null 2>&1
	}
	chmod 711 "$T"		# the server runs as postgres
	url=$("$HK_TOP/scripts/pg" start "$pgdir" 2>"$T/pg.err")
	ok $? "$E: a private server starts" || sed 's/^/# /' "$T/pg.err"
	for pgbin in "${HK_TEST_PG_BIN:-}" /usr/lib/postgresql/*/bin; do
		[ -x "$pgbin/pg_ctl" ] && break
	done
	export HAKOPOD_STATE="$url" HAKOPOD_RUNTIME_DIR="$T"
	hk-lease -t 2 -g 1 gateway "$T/prog.sh" "$T/a" </dev/null >/dev/null \
	    2>"$T/a.log" &
	lpid=$!
	_pids="$_pids $lpid"
	wait_for 5 test -s "$T/a"
	ok $? "$E: the holder runs prog" || done_testing
	read -r ppid spid epoch <"$T/a"
	_pids="$_pids $ppid $spid"
	now_ms
	t0=$now
	as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/data/server.log" \
	    -m fast -w restart >/dev/null
	ok $? "$E: the server restarts"
	wait_for 3 test -s "$T/a.term"
	ok $? "$E: the restart stops prog"
	term=
	read -r _ term 2>/dev/null <"$T/a.term"
	ms=never
	[ -n "$term" ] && ms=$((term - t0))
	[ "$ms" -lt 2000 ] 2>/dev/null
	ok $? "$E: within the TTL of 2 s ($ms ms)"
	wait "$lpid"
	is "$?" 75 "$E: hk-lease exits 75"
	like "$(cat "$T/a.log")" "error: lease gateway lost \(epoch 1\)" \
	    "$E: and says the lease is lost"
	wait_for 5 try_take
	ok $? "$E: the lease can be taken once the server is back"
	is "$(cat "$T/take.out")" 2 "$E: at a bigger epoch"
fi
pg_missing_is_failure
done_testing
