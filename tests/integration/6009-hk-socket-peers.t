#!/bin/sh
# Who may use an installation.  The SQLite store, even when root makes
# it, belongs to its directory's owner, mode 0640 (-wal and -shm too).
# Who may talk to the daemons (hk(7), ipc.h): root, the daemons' own
# user, and the members of their group, by its primary group or a
# supplementary one, on every control socket and on events.sock; anyone
# else is refused and logged, even when the socket's mode lets it
# connect.  The daemons run as a uid and gid of the test's own (setpriv,
# numeric: no account is made), the clients as root, as that uid, and as
# another uid with and without the group.
. tests/integration/lib.sh

command -v setpriv >/dev/null || { ok 1 "setpriv is installed"; done_testing; }

U=61731		# the daemons' user and group
O=61732		# another user
# as UID GID GROUPS: the setpriv that runs a program so ("-": no groups)
as() {
	if [ "$3" = - ]; then
		echo "setpriv --reuid $1 --regid $2 --clear-groups"
	else
		echo "setpriv --reuid $1 --regid $2 --groups $3"
	fi
}

RUN=$T/run
mkdir -p "$RUN" "$T/db"
chown "$U:$U" "$RUN" "$T/db"
PORT=$(free_port)
cat >"$T/hakopod.toml" <<CONF
[server]
serverless_address = "127.0.0.1:$PORT"
state = "sqlite://$T/db/state.db"
runtime_dir = "$RUN"
CONF
chmod 644 "$T/hakopod.toml"
export HAKOPOD_CONFIG=$T/hakopod.toml

# The store, made by root's first hk apply (with umask 0): 0640, its
# directory's owner and group; the daemons then run on it as that user.
printf 'schema_version = 1\nname = "fn"\n\n[services.w]\ncommand = ["true"]\n' \
    >"$T/app.toml"
(umask 0 && hk apply "$T/app.toml" >/dev/null)
ok $? "root applies an app first, making the store"
files() {	# the store's files: mode and owner of each
	for _f in state.db state.db-wal state.db-shm; do
		[ -e "$T/db/$_f" ] && printf '%s ' "$_f=$(stat -c '%a:%u:%g' \
		    "$T/db/$_f")"
	done
}
like "$(files)" "^state.db=640:$U:$U " \
    "state.db: mode 0640, the directory's owner and group, not root's"

# shellcheck disable=SC2046
daemon events $(as $U $U -) hk-events -v &&
    daemon scale $(as $U $U -) hk-scale -v &&
    daemon gw $(as $U $U -) hk-activate -v &&
    daemon idle $(as $U $U -) hk-idle -v &&
    daemon jobs $(as $U $U -) hk-jobs -v
ok $? "the five daemons run as uid and gid $U"
is "$(files)" "state.db=640:$U:$U state.db-wal=640:$U:$U state.db-shm=640:$U:$U " \
    "and so are its -wal and -shm, once the daemons have it open"

# status.py SOCK: "answered" if a status request gets its reply, else
# "refused" (the connection closed at once, or no reply).
cat >"$T/status.py" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
    s.send(b'{"op":"status"}')
    r = s.recv(1 << 20)
    print("answered" if r and "op" not in json.loads(r) else "refused")
except (OSError, ValueError):
    print("refused")
PY
chmod 644 "$T/status.py"
socks="scale.sock activate.sock idle.sock jobs.sock"
seen() {	# seen UID GID GROUPS: each socket's answer to that client
	for _s in $socks; do
		# shellcheck disable=SC2046
		printf '%s ' "$_s=$($(as "$@") python3 "$T/status.py" \
		    "$RUN/$_s")"
	done
}
all() { echo "scale.sock=$1 activate.sock=$1 idle.sock=$1 jobs.sock=$1 "; }

for s in $socks; do
	chmod 666 "$RUN/$s"
done
is "$(seen 0 0 0)" "$(all answered)" "root is answered"
is "$(seen $U $U -)" "$(all answered)" "the daemons' own user is answered"
is "$(seen $O $O -)" "$(all refused)" \
    "another user is refused, though every socket is 0666"
is "$(seen $O $O $U)" "$(all answered)" \
    "another user in the daemons' group (a supplementary one) is answered"
is "$(seen $O $U -)" "$(all answered)" \
    "another user whose primary group is theirs is answered"
is "$(seen $O $O 61733,61734)" "$(all refused)" \
    "another user in other groups is refused"
for d in scale gw idle jobs; do
	wait_t 5 grep -q \
	    ': peer refused: not root, our uid or a member of our group$' \
	    "$T/$d.log"
	ok $? "$d: each refusal is logged, saying who may"
done

# events.sock takes datagrams: a record from a member is kept, one from
# anyone else dropped, and counted as refused.
chmod 666 "$RUN/events.sock"
send() {	# send UID GID GROUPS SERVICE: one HTTPIdleWake record for it
	# shellcheck disable=SC2046
	$(as "$1" "$2" "$3") python3 "$HK_TOP/tests/integration/fn/ev-send.py" \
	    "$RUN/events.sock" event HTTPIdleWake "$4" >/dev/null
}
send $O $O $U fn/member
send $O $O - fn/stranger
send 0 0 0 fn/root
kept() {	# kept SERVICE: its HTTPIdleWake records in the store
	hk-events list --json -n 0 --kind HTTPIdleWake --service "$1" |
	    python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}
root_kept() { [ "$(kept fn/root)" = 1 ]; }
wait_t 10 root_kept
is "$(kept fn/member)/$(kept fn/stranger)" 1/0 \
    "events.sock keeps a member's record and drops a stranger's"
stop_pid "$events_pid"
like "$(cat "$T/events.log")" 'stopped: .* [1-9][0-9]* refused' \
    "and counts the stranger's as refused"

for p in $jobs_pid $idle_pid $gw_pid $scale_pid; do
	stop_pid "$p"
done
done_testing
