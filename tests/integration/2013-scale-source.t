#!/bin/sh
# source = PATH, on SQLite and PostgreSQL, exec backend: hk apply hashes
# the tree and stores it; hk-scale writes it out read-only under
# runtime_dir/src/HASH and runs the instance there; an edit of the working
# copy changes nothing; a new hash whose start fails never replaces the
# healthy revision, which keeps answering with its old body; the fixed
# code then replaces it, and unused trees go; the store keeps the code
# of the kept revisions (keep_revisions).  Bad sources are refused with
# PATH: reason, exit 65, nothing applied.
. tests/integration/lib.sh
. tests/integration/lib/scale.sh

write_src() {	# write_src DIR BODY: a handler answering BODY
	mkdir -p "$1/lib"
	cat >"$1/app.py" <<PY
import os, sys
sys.path.insert(0, "lib")
from body import BODY
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        b = BODY.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
PY
	printf 'BODY = "%s"\n' "$2" >"$1/lib/body.py"
}

write_app() {	# write_app FILE
	cat >"$1" <<TOML
schema_version = 1
name = "src"

[services.fn]
source = "code"
command = ["python3", "app.py"]
public = true

[services.fn.serverless]
TOML
}

hash_of() {	# hash_of SERVICE: its spec's code_hash
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        print(s["code_hash"])' "$1"
}

revision_of() {
	hk ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["app"] + "/" + s["service"] == sys.argv[1]:
        print(s["revision"])' "$1"
}

code_rows() {	# the hashes of the store's code table, sorted
	case $STORE in
	sqlite://*)
		sqlite3 "${STORE#sqlite://}" "SELECT hash FROM code ORDER BY hash" ;;
	*)
		psql "$STORE" -qAtc "SELECT hash FROM code ORDER BY hash" ;;
	esac
}

plan $(( $(engines | wc -l) * 24 + 14 ))
pg_missing_is_failure

for engine in $(engines); do
	new_store "$engine" src
	scale_operator "$T/hakopod.toml" "$STORE"
	export HAKOPOD_CONFIG="$T/hakopod.toml"
	rm -rf "$T/app" "$T/run/src" "$T/scale.log"
	mkdir -p "$T/app"
	write_src "$T/app/code" v1
	write_app "$T/app/hk.toml"
	run hk apply "$T/app/hk.toml"
	is "$rc" 0 "$engine: hk apply of a source"
	h1=$(hash_of src/fn)
	like "$h1" '^[0-9a-f]{64}$' "$engine: hk ps --json shows its code_hash"
	run hk apply "$T/app/hk.toml"
	like "$out" 'unchanged' "$engine: the same tree again is no new revision"
	rm -f "$T/run/events.sock"
	events "$T/ev.out"
	ev_pid=$!
	daemon scale hk-scale -g 2
	ok $? "$engine: hk-scale starts"
	subscribe "$T/sub.out"
	ctl '{"op":"wake","service":"src/fn"}' >/dev/null
	wait_for 10 state_is src/fn running
	ok $? "$engine: woken"
	ep=$(status_of src/fn endpoint)
	is "$(get "http://$ep/")" v1 "$engine: answers from its source"
	pid=$(status_of src/fn pid)
	is "$(readlink "/proc/$pid/cwd")" "$T/run/src/$h1" \
	    "$engine: runs in runtime_dir/src/HASH"
	is "$(stat -c %a "$T/run/src/$h1" "$T/run/src/$h1/lib" \
	    "$T/run/src/$h1/app.py" | tr '\n' ' ')" "555 555 444 " \
	    "$engine: the copy is read-only (dirs 0555, files 0444)"
	runuser -u nobody -- sh -c "echo x >>$T/run/src/$h1/app.py" 2>/dev/null
	ok $((! $?)) "$engine: the instance's user cannot write it"

	# The working copy edited: nothing changes until hk apply.
	write_src "$T/app/code" edited
	is "$(cat "$T/run/src/$h1/lib/body.py")" 'BODY = "v1"' \
	    "$engine: an edit of the working copy does not reach the copy"

	# Broken code: its start fails; the old revision keeps answering.
	printf 'import sys\nsys.exit(3)\n' >"$T/app/code/app.py"
	run hk apply "$T/app/hk.toml"
	like "$out" 'revision 2	updated' "$engine: a changed tree is a new revision"
	h2=$(hash_of src/fn)
	[ "$h2" != "$h1" ]
	ok $? "$engine: with a new hash"
	wait_for 15 seen "$T/ev.out" "\"code_hash\":\"$h2\".*\"kind\":\"StartFailed\""
	ok $? "$engine: the broken revision fails to start (event with its hash)"
	is "$(get "http://$ep/")" v1 "$engine: the old instance keeps answering v1"
	is "$(status_of src/fn pid)" "$pid" "$engine: the same old instance"
	alive "$pid"
	ok $? "$engine: which still runs"

	# Fixed code replaces it; trees nothing uses go.
	write_src "$T/app/code" v3
	run hk apply "$T/app/hk.toml"
	like "$out" 'revision 3	updated' "$engine: fixed code is revision 3"
	h3=$(hash_of src/fn)
	wait_for 15 seen "$T/sub.out" '"op":"ready".*"revision":3'
	ok $? "$engine: revision 3 gets ready"
	ep=$(status_of src/fn endpoint)
	is "$(get "http://$ep/")" v3 "$engine: and answers v3"
	wait_for 10 dead "$pid"
	ok $? "$engine: the old instance is stopped"
	wait_for 10 test ! -e "$T/run/src/$h1" -a ! -e "$T/run/src/$h2"
	ok $? "$engine: the trees of revisions 1 and 2 are removed"
	test -d "$T/run/src/$h3"
	ok $? "$engine: the current one stays"
	is "$(code_rows)" "$(printf '%s\n' "$h1" "$h2" "$h3" | sort)" \
	    "$engine: the store keeps the code its kept revisions name"
	ctl '{"op":"sleep","service":"src/fn"}' >/dev/null
	wait_for 10 state_is src/fn sleeping
	ctl '{"op":"wake","service":"src/fn"}' >/dev/null
	wait_for 10 seen "$T/ev.out" "\"code_hash\":\"$h3\".*\"kind\":\"HTTPIdleWake\""
	ok $? "$engine: a wake's event names the revision's hash"
	stop_pid "$scale_pid"
	kill "$sub_pid" "$ev_pid" 2>/dev/null
done

# Bad sources, on SQLite: PATH: reason, exit 65, nothing applied.
new_store sqlite bad
scale_operator "$T/hakopod.toml" "$STORE"
export HAKOPOD_CONFIG="$T/hakopod.toml"
rm -rf "$T/app"
mkdir -p "$T/app"
write_src "$T/app/code" v1
write_app "$T/app/hk.toml"
hk apply "$T/app/hk.toml" >/dev/null
good=$(hash_of src/fn)

refused() {	# refused NAME PATTERN: hk apply exits 65 with PATTERN
	run hk apply "$T/app/hk.toml"
	[ "$rc" = 65 ] && echo "$err" | grep -Eq -- "$2" &&
	    [ "$(revision_of src/fn)" = 1 ] && [ "$(hash_of src/fn)" = "$good" ]
	ok $? "refused, nothing applied: $1"
	[ "$rc" = 65 ] || diag "rc $rc: $err"
}

key="$T/app/hk.toml:5: services.fn.source"
ln -s /etc/passwd "$T/app/code/out"
refused "a symbolic link leaving the tree" \
    "^$key: $T/app/code/out: a symbolic link \\("
rm "$T/app/code/out"
ln -s app.py "$T/app/code/in"
refused "a symbolic link inside it" "^$key: $T/app/code/in: a symbolic link"
rm "$T/app/code/in"
mkfifo "$T/app/code/fifo"
refused "a fifo" "^$key: $T/app/code/fifo: a fifo"
rm "$T/app/code/fifo"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
    "$T/app/code/sock"
refused "a socket" "^$key: $T/app/code/sock: a socket"
rm "$T/app/code/sock"
sed -i 's|^source = .*|source = "/dev/null"|' "$T/app/hk.toml"
refused "a device" "^$key: /dev/null: a device"
sed -i 's|^source = .*|source = "code"|' "$T/app/hk.toml"
truncate -s 17M "$T/app/code/big"
refused "over 16 MiB" "^$key: $T/app/code/big: the source is larger than 16 MiB"
rm "$T/app/code/big"
mkdir "$T/app/code/many"
( cd "$T/app/code/many" && seq 1 4100 | xargs touch )
refused "over 4096 files" "^$key: $T/app/code: more than 4096 files"
rm -rf "$T/app/code/many"
# Long paths: the diagnostic keeps the path and the reason whole.
deep=$(python3 -c 'print("/".join(["d" * 50] * 4))')	# 203 bytes
mkdir -p "$T/app/code/$deep"
ln -s app.py "$T/app/code/$deep/link-at-230-bytes-from-the-root"
refused "a symbolic link 230 bytes deep, named whole with its reason" \
    "^$key: $T/app/code/$deep/link-at-230-bytes-from-the-root: a symbolic link \\(a source holds only files and directories\\)\$"
rm -rf "$T/app/code/d$(printf '%049d' 0 | tr 0 d)"
deep=$(python3 -c 'print("/".join(["e" * 200] * 5))')	# 1004 bytes
mkdir -p "$T/app/code/$deep"
: >"$T/app/code/$deep/a-file-past-1024-bytes-of-path"
refused "a path over 1024 bytes, named whole with its reason" \
    "^$key: $T/app/code/$deep/a-file-past-1024-bytes-of-path: path longer than 1024 bytes\$"
rm -rf "$T/app/code/$(printf '%0200d' 0 | tr 0 e)"
sed -i 's|^source = .*|source = "nothere"|' "$T/app/hk.toml"
refused "a missing source" "^$key: $T/app/nothere: No such file or directory"
sed -i 's|^source = .*|source = "code"|' "$T/app/hk.toml"

# Unreadable: only another user than root is refused a file of mode 0.
chmod 0 "$T/app/code/lib/body.py"
chmod 755 "$T/app" "$T/app/code"
chmod 644 "$T/app/hk.toml"
run runuser -u nobody -- env HAKOPOD_CONFIG= hk validate "$T/app/hk.toml"
[ "$rc" = 65 ] && echo "$err" | grep -q \
    "^$key: $T/app/code/lib/body.py: Permission denied"
ok $? "an unreadable file: refused (hk validate as nobody)"
[ "$rc" = 65 ] || diag "rc $rc: $err"
chmod 644 "$T/app/code/lib/body.py"

# A file that changes while it is read: appended to all the time.
dd if=/dev/zero of="$T/app/code/grow" bs=1M count=8 status=none
sh -c "while :; do printf x >>'$T/app/code/grow'; done" &
writer=$!
_pids="$_pids $writer"
# Not before the writer runs: on a loaded machine its start can come
# after the whole read, and the tree is then rightly taken.
grown() { [ "$(stat -c %s "$T/app/code/grow")" -gt $((8 * 1048576 + 1000)) ]; }
wait_for 10 grown
refused "a file changing while it is read" \
    "^$key: $T/app/code/grow: changed while it was read"
kill "$writer"
wait "$writer" 2>/dev/null
rm "$T/app/code/grow"

run hk validate "$T/app/hk.toml"
is "$rc" 0 "the same tree, repaired, validates"
chmod +x "$T/app/code/app.py"
run hk apply "$T/app/hk.toml"
[ "$(hash_of src/fn)" != "$good" ]
ok $? "an execute bit changes the hash"
done_testing
